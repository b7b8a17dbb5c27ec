// Internal to ops/: the row loop of ops/softmax_rows.h written once over the SIMD traits of
// ops/vec_math.h. Included by ops/softmax_rows.cpp (scalar) and ops/softmax_rows_avx2.cpp /
// ops/softmax_rows_avx512.cpp after they define GRAPHI_VEC_<ISA>; compiled under vec_math.h's
// target switch, so it includes nothing else and uses no std:: templates.
#pragma once

#include "ops/vec_math.h"

namespace {

// exp(d) for d <= 0, exactly 0 below -87 (vexp_nonpos clamps there).
template <class T>
typename T::V softmax_exp(typename T::V d) {
  return T::select(T::lt(d, T::set1(-87.0f)), T::zero(), vexp_nonpos<T>(d));
}

// The row's max: whole vectors, then the tail.
template <class T>
float softmax_row_max(const float* x, int64_t n) {
  constexpr int W = T::kWidth;
  float m = x[0];
  int64_t k = 0;
  if (n >= W) {
    typename T::V vm = T::load(x);
    for (k = W; k + W <= n; k += W) vm = T::max(T::load(x + k), vm);
    m = vlanes_max<T>(vm);
  }
  for (; k < n; ++k) m = x[k] > m ? x[k] : m;
  return m;
}

// sum(exp(x[k] - m)) over the whole vectors of the row (float partial sums of at most 16
// elements per lane, added in double), storing exp(x - m) to y when kStore; *end = the first
// element left (fewer than kWidth).
template <class T, bool kStore>
double softmax_exp_sum(const float* x, float* y, int64_t n, float m, int64_t* end) {
  using V = typename T::V;
  constexpr int W = T::kWidth;
  constexpr int64_t kBlock = int64_t{W} * 16;
  const V vm = T::set1(m);
  double sum = 0;
  int64_t k = 0;
  for (int64_t b0 = 0; b0 + W <= n; b0 = k) {
    const int64_t b1 = b0 + kBlock;
    V acc = T::zero();
    for (; k + W <= n && k < b1; k += W) {
      const V e = softmax_exp<T>(T::sub(T::load(x + k), vm));
      if constexpr (kStore) T::store(y + k, e);
      acc = T::add(acc, e);
    }
    sum += vlanes_sum<T>(acc);
  }
  *end = k;
  return sum;
}

template <class T>
void softmax_row_t(const float* x, float* y, int64_t n) noexcept {
  using V = typename T::V;
  constexpr int W = T::kWidth;
  const float m = softmax_row_max<T>(x, n);
  // y = exp(x - m) and its sum.
  const V vm = T::set1(m);
  int64_t k = 0;
  double sum = softmax_exp_sum<T, true>(x, y, n, m, &k);
  if (k < n) {
    const int t = static_cast<int>(n - k);
    T::store_n(y + k, softmax_exp<T>(T::sub(T::load_n(x + k, t), vm)), t);
    for (int i = 0; i < t; ++i) sum += y[k + i];
  }
  // Normalize.
  const V inv = T::set1(static_cast<float>(1.0 / sum));
  for (k = 0; k + W <= n; k += W) T::store(y + k, T::mul(T::load(y + k), inv));
  if (k < n) {
    const int t = static_cast<int>(n - k);
    T::store_n(y + k, T::mul(T::load_n(y + k, t), inv), t);
  }
}

// log_softmax: the max, then sum(exp(x - max)) without storing it (float partial sums added
// in double), then y = (x - max) - log(sum), rounded in that order as the scalar loop did.
template <class T>
void log_softmax_row_t(const float* x, float* y, int64_t n) noexcept {
  using V = typename T::V;
  constexpr int W = T::kWidth;
  const float m = softmax_row_max<T>(x, n);
  const V vm = T::set1(m);
  int64_t k = 0;
  double sum = softmax_exp_sum<T, false>(x, nullptr, n, m, &k);
  for (; k < n; ++k) {
    const double d = static_cast<double>(x[k]) - m;
    if (d >= -87.0) sum += __builtin_exp(d);
  }
  const V lse = T::set1(static_cast<float>(__builtin_log(sum)));
  for (k = 0; k + W <= n; k += W) T::store(y + k, T::sub(T::sub(T::load(x + k), vm), lse));
  if (k < n) {
    const int t = static_cast<int>(n - k);
    T::store_n(y + k, T::sub(T::sub(T::load_n(x + k, t), vm), lse), t);
  }
}

}  // namespace
