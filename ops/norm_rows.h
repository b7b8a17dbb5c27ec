// The per-row work of LayerNormalization and InstanceNormalization (ops/norm_ops.cpp), vectorized:
// a row's sum and centred sum of squares, and the affine step y = (x - mean) * inv * s + b.
// Sums are float vector partial sums over blocks of at most 16 elements per lane, the blocks
// added in double, so long rows keep (close to) the accuracy of a double accumulation while the
// loops run at the load rate (the scalar double loop took ~140 us per LayerNorm of a [1,56,56,96]
// ConvNeXt activation on the Zen 4 VM). AVX-512 / AVX2 / scalar paths chosen at run time by
// active_simd_isa() (ops/activations.h; GRAPHI_SIMD caps it). ops/ only.
#pragma once

#include <cstdint>

#include "ops/activations.h"

namespace graphi::ops {

struct NormRowFns {
  // sum of x[0, n)
  double (*sum)(const float* x, int64_t n) noexcept = nullptr;
  // sum of (x[k] - mean)^2
  double (*sq_dev)(const float* x, int64_t n, float mean) noexcept = nullptr;
  // y[k] = (x[k] - mean) * inv * s_k + b_k with s_k = scale ? scale[k] : scale1 and
  // b_k = bias ? bias[k] : bias1 (y may be x)
  void (*affine)(const float* x, float* y, int64_t n, float mean, float inv, const float* scale,
                 float scale1, const float* bias, float bias1) noexcept = nullptr;
  // Channel-blocked data ([pixels][lanes], one channel per lane: nChw16c's blocks, GroupNorm):
  // out[l] += sum over pixels of x[p * lanes + l]
  void (*lane_sum)(const float* x, int64_t pixels, int64_t lanes, double* out) noexcept = nullptr;
  // out[l] += sum over pixels of (x[p * lanes + l] - mean[l])^2
  void (*lane_sq_dev)(const float* x, int64_t pixels, int64_t lanes, const float* mean,
                      double* out) noexcept = nullptr;
  // y[p * lanes + l] = (x[p * lanes + l] - mean[l]) * a[l] + b[l], then max(0, .) when `relu`
  // (a NaN stays NaN); y may be x
  void (*lane_affine)(const float* x, float* y, int64_t pixels, int64_t lanes, const float* mean,
                      const float* a, const float* b, bool relu) noexcept = nullptr;
};

// The active path's functions.
const NormRowFns& norm_row_fns();

// One ISA path, for tests; all nullptr when this CPU cannot run `isa`.
NormRowFns norm_row_fns_for(SimdIsa isa);

}  // namespace graphi::ops
