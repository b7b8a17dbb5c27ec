// ONNX DynamicQuantizeLinear's arithmetic (uint8, one scale and zero point for a whole tensor),
// shared by the ops that run ONNX Runtime's quantize_dynamic chains (Int8MatMul,
// DynamicQuantizeDequantize):
//   scale = (max(0, max x) - min(0, min x)) / 255 (1 when that is 0 or not finite),
//   zero_point = round(saturate(-min(0, min x) / scale)), q = saturate(round(x / scale) + zp)
// with the division and rounding half to even (the default rounding mode) of its definition.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/kernel.h"

namespace graphi::ops {

struct DynamicQuant {
  float scale = 1.0f, zero_point = 0.0f;
};

// lo / hi: min(0, min x) and max(0, max x).
inline DynamicQuant dynamic_quant_params(float lo, float hi) {
  DynamicQuant q;
  q.scale = (hi - lo) / 255.0f;
  if (!(q.scale > 0.0f) || !std::isfinite(q.scale)) q.scale = 1.0f;
  q.zero_point = std::nearbyint(std::clamp(-lo / q.scale, 0.0f, 255.0f));
  return q;
}

// min(0, min x[i0..i1)) and max(0, max ...) folded into lo / hi (NaNs skipped).
inline void dynamic_quant_range(const float* x, int64_t i0, int64_t i1, float& lo, float& hi) {
  float l = lo, h = hi;
#pragma omp simd reduction(min : l) reduction(max : h)
  for (int64_t i = i0; i < i1; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  lo = l;
  hi = h;
}

// The scale and zero point of x[0, n), called by every thread of an OpenMP parallel region: each
// takes the range of its share, the shares meet in lo / hi (shared, both 0 before the region),
// and after the barrier every thread has the same answer.
inline DynamicQuant dynamic_quant_of_team(const float* x, int64_t n, float& lo, float& hi) {
  auto [i0, i1] = team_range(n, omp_get_thread_num(), omp_get_num_threads());
  float l = 0.0f, h = 0.0f;
  dynamic_quant_range(x, i0, i1, l, h);
#pragma omp critical(graphi_dynamic_quant_range)
  {
    lo = std::min(lo, l);
    hi = std::max(hi, h);
  }
#pragma omp barrier
  return dynamic_quant_params(lo, hi);
}

}  // namespace graphi::ops
