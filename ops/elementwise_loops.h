// Internal to ops/: the elementwise inner loops, written once and compiled per ISA. Include it
// only from ops/elementwise.cpp and ops/elementwise_<isa>.cpp, after every other header and
// after switching the target on. Everything is in an anonymous namespace and uses no std::
// templates, so each TU gets its own copy for its ISA and no AVX code can reach a baseline caller
// through a shared (COMDAT) symbol; see ops/vec_math.h for the same rule.
#pragma once

#include "ops/broadcast_walk.h"
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

// A run against a periodic operand (BroadcastPlan::periodic): dst[i] = full[i] op v(i) (or
// v(i) op full[i]), v(i) = vec[(phase + i) % period]; the period divides 16, so one 16-lane
// register of the vector serves every 16 outputs.
template <BinaryKind K, bool VecSecond>
inline void periodic_run(float* dst, const float* full, const float* vec, int64_t n, int64_t period,
                         int64_t phase) {
  float pv[16];
  for (int t = 0; t < 16; ++t) pv[t] = vec[(phase + t) % period];
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int t = 0; t < 16; ++t)
      dst[i + t] =
          VecSecond ? apply_binary<K>(full[i + t], pv[t]) : apply_binary<K>(pv[t], full[i + t]);
  for (int t = 0; i < n; ++i, ++t)
    dst[i] = VecSecond ? apply_binary<K>(full[i], pv[t]) : apply_binary<K>(pv[t], full[i]);
}

// Outputs [begin, end) of the plan, one binary_run per stretch of the innermost merged dim
// (for_each_broadcast_run, ops/broadcast_walk.h).
template <BinaryKind K>
void binary_range(const BroadcastPlan& p, const float* a, const float* b, float* dst, int64_t begin,
                  int64_t end) {
  if (p.periodic >= 0) {
    // Runs lie along the merged inner dim, whose length is a multiple of the period.
    for_each_broadcast_run(p, begin, end, [&](int64_t pos, const int64_t* off, int64_t n) {
      if (p.periodic == 1)
        periodic_run<K, true>(dst + pos, a + off[0], b + off[1], n, p.period, pos % p.period);
      else
        periodic_run<K, false>(dst + pos, b + off[1], a + off[0], n, p.period, pos % p.period);
    });
    return;
  }
  const int64_t sa = p.inner_stride(0), sb = p.inner_stride(1);
  for_each_broadcast_run(p, begin, end, [&](int64_t pos, const int64_t* off, int64_t n) {
    binary_run<K>(dst + pos, a + off[0], b + off[1], n, sa, sb);
  });
}

// x < 0 ? 0 : x keeps NaN (as numpy.maximum(x, 0) does) and vectorizes to a compare + blend.
void relu_loop(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] < 0.0f ? 0.0f : src[i];
}

// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer, ties to
// even (the default rounding mode), as QuantizeLinear's round does; x / s is bounded first, one
// step past [qlo, qhi] (the result saturates there anyway), so it stays exact, and a NaN x gives
// qlo (max / min pass the bound).
void quantize_dequantize_loop(const float* x, float* y, int64_t n, float s, float qlo, float qhi) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  const float lo = qlo - 1.0f, hi = qhi + 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / s;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    float r = (v + kMagic) - kMagic;
    r = r > qlo ? r : qlo;
    r = r < qhi ? r : qhi;
    y[i] = r * s;
  }
}

constexpr EltwiseLoops make_eltwise_loops(SimdIsa isa) {
  return EltwiseLoops{isa,
                      {binary_range<BinaryKind::kAdd>, binary_range<BinaryKind::kSub>,
                       binary_range<BinaryKind::kMul>, binary_range<BinaryKind::kDiv>},
                      relu_loop,
                      quantize_dequantize_loop};
}

}  // namespace
}  // namespace graphi::ops
