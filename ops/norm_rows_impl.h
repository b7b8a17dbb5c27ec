// Internal to ops/: the loops of ops/norm_rows.h written once over the SIMD traits of
// ops/vec_math.h. Included by ops/norm_rows.cpp (scalar) and ops/norm_rows_avx2.cpp /
// ops/norm_rows_avx512.cpp after they define GRAPHI_VEC_<ISA>; compiled under vec_math.h's target
// switch, so it includes nothing else and uses no std:: templates.
#pragma once

#include "ops/vec_math.h"

namespace {

// Elements per float partial sum: 4 accumulators x kWidth lanes x 16 additions each.
template <class T>
constexpr int64_t norm_block() {
  return int64_t{4} * T::kWidth * 16;
}

template <class T>
double norm_sum_t(const float* x, int64_t n) noexcept {
  using V = typename T::V;
  constexpr int64_t kStep = 4 * T::kWidth;
  const int64_t body = n - n % kStep;
  double total = 0;
  for (int64_t b0 = 0; b0 < body; b0 += norm_block<T>()) {
    const int64_t b1 = b0 + norm_block<T>() < body ? b0 + norm_block<T>() : body;
    V a0 = T::zero(), a1 = T::zero(), a2 = T::zero(), a3 = T::zero();
    for (int64_t k = b0; k < b1; k += kStep) {
      a0 = T::add(a0, T::load(x + k));
      a1 = T::add(a1, T::load(x + k + T::kWidth));
      a2 = T::add(a2, T::load(x + k + 2 * T::kWidth));
      a3 = T::add(a3, T::load(x + k + 3 * T::kWidth));
    }
    total += vlanes_sum<T>(T::add(T::add(a0, a1), T::add(a2, a3)));
  }
  // Whole vectors left (fewer than 4), then the last < kWidth elements.
  int64_t k = body;
  if (k + T::kWidth <= n) {
    V a = T::zero();
    for (; k + T::kWidth <= n; k += T::kWidth) a = T::add(a, T::load(x + k));
    total += vlanes_sum<T>(a);
  }
  for (; k < n; ++k) total += x[k];
  return total;
}

template <class T>
double norm_sq_dev_t(const float* x, int64_t n, float mean) noexcept {
  using V = typename T::V;
  constexpr int64_t kStep = 4 * T::kWidth;
  const int64_t body = n - n % kStep;
  const V m = T::set1(mean);
  double total = 0;
  for (int64_t b0 = 0; b0 < body; b0 += norm_block<T>()) {
    const int64_t b1 = b0 + norm_block<T>() < body ? b0 + norm_block<T>() : body;
    V a0 = T::zero(), a1 = T::zero(), a2 = T::zero(), a3 = T::zero();
    for (int64_t k = b0; k < b1; k += kStep) {
      const V d0 = T::sub(T::load(x + k), m);
      const V d1 = T::sub(T::load(x + k + T::kWidth), m);
      const V d2 = T::sub(T::load(x + k + 2 * T::kWidth), m);
      const V d3 = T::sub(T::load(x + k + 3 * T::kWidth), m);
      a0 = T::fmadd(d0, d0, a0);
      a1 = T::fmadd(d1, d1, a1);
      a2 = T::fmadd(d2, d2, a2);
      a3 = T::fmadd(d3, d3, a3);
    }
    total += vlanes_sum<T>(T::add(T::add(a0, a1), T::add(a2, a3)));
  }
  int64_t k = body;
  if (k + T::kWidth <= n) {
    V a = T::zero();
    for (; k + T::kWidth <= n; k += T::kWidth) {
      const V d = T::sub(T::load(x + k), m);
      a = T::fmadd(d, d, a);
    }
    total += vlanes_sum<T>(a);
  }
  for (; k < n; ++k) {
    const double d = static_cast<double>(x[k]) - mean;
    total += d * d;
  }
  return total;
}

// kVecScale / kVecBias: per-element scale / bias arrays, else the scalar values.
template <class T, bool kVecScale, bool kVecBias>
void norm_affine_loop(const float* x, float* y, int64_t n, float mean, float inv,
                      const float* scale, float scale1, const float* bias, float bias1) {
  using V = typename T::V;
  constexpr int W = T::kWidth;
  const V m = T::set1(mean), vi = T::set1(inv), s1 = T::set1(scale1 * inv), b1 = T::set1(bias1);
  int64_t k = 0;
  for (; k + W <= n; k += W) {
    const V s = kVecScale ? T::mul(T::load(scale + k), vi) : s1;
    const V b = kVecBias ? T::load(bias + k) : b1;
    T::store(y + k, T::fmadd(T::sub(T::load(x + k), m), s, b));
  }
  if (k < n) {
    const int t = static_cast<int>(n - k);
    const V s = kVecScale ? T::mul(T::load_n(scale + k, t), vi) : s1;
    const V b = kVecBias ? T::load_n(bias + k, t) : b1;
    T::store_n(y + k, T::fmadd(T::sub(T::load_n(x + k, t), m), s, b), t);
  }
}

template <class T>
void norm_affine_t(const float* x, float* y, int64_t n, float mean, float inv, const float* scale,
                   float scale1, const float* bias, float bias1) noexcept {
  if (scale && bias)
    norm_affine_loop<T, true, true>(x, y, n, mean, inv, scale, scale1, bias, bias1);
  else if (scale)
    norm_affine_loop<T, true, false>(x, y, n, mean, inv, scale, scale1, bias, bias1);
  else if (bias)
    norm_affine_loop<T, false, true>(x, y, n, mean, inv, scale, scale1, bias, bias1);
  else
    norm_affine_loop<T, false, false>(x, y, n, mean, inv, scale, scale1, bias, bias1);
}

// The lane loops: per pixel one vector of kWidth lanes (lanes a multiple of kWidth: nChw16c on
// AVX-512, nChw8c on AVX2, any on the scalar path), else a partial vector per pixel. Float
// partial sums over 16 pixels per lane, added in double, as in norm_sum_t.
template <class T, bool kDev>
void lane_sums_loop(const float* x, int64_t pixels, int64_t lanes, const float* mean,
                    double* out) noexcept {
  using V = typename T::V;
  constexpr int64_t kBlock = 16;
  for (int64_t l0 = 0; l0 < lanes; l0 += T::kWidth) {
    const int t = lanes - l0 < T::kWidth ? static_cast<int>(lanes - l0) : T::kWidth;
    const V m = kDev ? T::load_n(mean + l0, t) : T::zero();
    for (int64_t p0 = 0; p0 < pixels; p0 += kBlock) {
      const int64_t p1 = p0 + kBlock < pixels ? p0 + kBlock : pixels;
      V a0 = T::zero(), a1 = T::zero();
      int64_t p = p0;
      for (; p + 1 < p1; p += 2) {
        const V v0 = T::sub(T::load_n(x + p * lanes + l0, t), m);
        const V v1 = T::sub(T::load_n(x + (p + 1) * lanes + l0, t), m);
        a0 = kDev ? T::fmadd(v0, v0, a0) : T::add(a0, v0);
        a1 = kDev ? T::fmadd(v1, v1, a1) : T::add(a1, v1);
      }
      if (p < p1) {
        const V v0 = T::sub(T::load_n(x + p * lanes + l0, t), m);
        a0 = kDev ? T::fmadd(v0, v0, a0) : T::add(a0, v0);
      }
      float part[T::kWidth];
      T::store(part, T::add(a0, a1));
      for (int k = 0; k < t; ++k) out[l0 + k] += part[k];
    }
  }
}

template <class T>
void lane_sum_t(const float* x, int64_t pixels, int64_t lanes, double* out) noexcept {
  lane_sums_loop<T, false>(x, pixels, lanes, nullptr, out);
}

template <class T>
void lane_sq_dev_t(const float* x, int64_t pixels, int64_t lanes, const float* mean,
                   double* out) noexcept {
  lane_sums_loop<T, true>(x, pixels, lanes, mean, out);
}

template <class T>
void lane_affine_t(const float* x, float* y, int64_t pixels, int64_t lanes, const float* mean,
                   const float* a, const float* b, bool relu) noexcept {
  using V = typename T::V;
  const V zero = T::zero();
  for (int64_t l0 = 0; l0 < lanes; l0 += T::kWidth) {
    const int t = lanes - l0 < T::kWidth ? static_cast<int>(lanes - l0) : T::kWidth;
    const V m = T::load_n(mean + l0, t), av = T::load_n(a + l0, t), bv = T::load_n(b + l0, t);
    for (int64_t p = 0; p < pixels; ++p) {
      const float* xp = x + p * lanes + l0;
      float* yp = y + p * lanes + l0;
      V v = T::fmadd(T::sub(T::load_n(xp, t), m), av, bv);
      if (relu) v = T::max(zero, v);  // max(0, NaN) is NaN (the second operand)
      if (t == T::kWidth)
        T::store(yp, v);
      else
        T::store_n(yp, v, t);
    }
  }
}

}  // namespace
