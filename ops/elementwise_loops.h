// Internal to ops/: the elementwise inner loops, written once and compiled per ISA. Include it
// only from ops/elementwise.cpp and ops/elementwise_<isa>.cpp, after every other header and
// after switching the target on. Everything is in an anonymous namespace and uses no std::
// templates, so each TU gets its own copy for its ISA and no AVX code can reach a baseline caller
// through a shared (COMDAT) symbol; see ops/vec_math.h for the same rule.
#pragma once

#include "ops/elementwise_simd.h"

namespace graphi::ops {
namespace {

template <BinaryKind K>
inline float apply_binary(float x, float y) {
  if constexpr (K == BinaryKind::kAdd) return x + y;
  if constexpr (K == BinaryKind::kSub) return x - y;
  if constexpr (K == BinaryKind::kMul) return x * y;
  if constexpr (K == BinaryKind::kDiv) return x / y;
}

// One run of n outputs; each operand's step is 1 (walks) or 0 (held). The four shapes of the
// loop are separate so each vectorizes with unit-stride loads or a broadcast register.
template <BinaryKind K>
inline void binary_run(float* dst, const float* a, const float* b, int64_t n, int64_t sa,
                       int64_t sb) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = apply_binary<K>(a[i], b[i]);
  } else if (sa == 1) {
    const float y = b[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = apply_binary<K>(a[i], y);
  } else if (sb == 1) {
    const float x = a[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = apply_binary<K>(x, b[i]);
  } else {
    const float v = apply_binary<K>(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  }
}

// Walks output positions [begin, end) of the plan: one run per stretch of the innermost merged
// dim, an odometer over the outer dims in between. A [B,H] + [H] add is B runs of length H.
template <BinaryKind K>
void binary_range(const BroadcastPlan& p, const float* a, const float* b, float* dst, int64_t begin,
                  int64_t end) {
  if (begin >= end) return;
  const int r = p.rank;
  const int64_t row = p.dims[r - 1], sa = p.a_strides[r - 1], sb = p.b_strides[r - 1];
  if (r == 1) {  // same shape, or a scalar operand: one flat loop
    binary_run<K>(dst + begin, a + begin * sa, b + begin * sb, end - begin, sa, sb);
    return;
  }
  int64_t idx[BroadcastPlan::kMaxRank];
  int64_t off_a = 0, off_b = 0, rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    off_a += idx[d] * p.a_strides[d];
    off_b += idx[d] * p.b_strides[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    const int64_t left_in_row = row - idx[r - 1];
    const int64_t n = left_in_row < end - pos ? left_in_row : end - pos;
    binary_run<K>(dst + pos, a + off_a, b + off_b, n, sa, sb);
    pos += n;
    if (pos >= end) break;
    // The run ended at a row boundary (idx + n == row): rewind the inner dim, carry outward.
    off_a -= idx[r - 1] * sa;
    off_b -= idx[r - 1] * sb;
    idx[r - 1] = 0;
    for (int d = r - 2; d >= 0; --d) {
      off_a += p.a_strides[d];
      off_b += p.b_strides[d];
      if (++idx[d] < p.dims[d]) break;
      off_a -= idx[d] * p.a_strides[d];
      off_b -= idx[d] * p.b_strides[d];
      idx[d] = 0;
    }
  }
}

// x < 0 ? 0 : x keeps NaN (as numpy.maximum(x, 0) does) and vectorizes to a compare + blend.
void relu_loop(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] < 0.0f ? 0.0f : src[i];
}

constexpr EltwiseLoops make_eltwise_loops(SimdIsa isa) {
  return EltwiseLoops{isa,
                      {binary_range<BinaryKind::kAdd>, binary_range<BinaryKind::kSub>,
                       binary_range<BinaryKind::kMul>, binary_range<BinaryKind::kDiv>},
                      relu_loop};
}

}  // namespace
}  // namespace graphi::ops
