// FftPlan (ops/fft.h): mixed-radix Stockham autosort FFT (decimation in frequency, natural order
// in and out, ping-pong between the data and one work buffer) and Bluestein's chirp-z transform
// for lengths with a prime factor above kMaxRadix.
#include "ops/fft.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace graphi::ops {
namespace {

// std::complex's operator* checks for NaN/inf operands and calls __muldc3 (no -ffast-math
// here): several times slower in the butterflies. Plain formula; NaN still propagates.
inline Complex mul(Complex a, Complex b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

// e^{-2 pi i num / den}, with num reduced mod den first so large products keep their precision.
Complex root(int64_t num, int64_t den) {
  const double a =
      -2.0 * std::numbers::pi * static_cast<double>(num % den) / static_cast<double>(den);
  return {std::cos(a), std::sin(a)};
}

// The radices of n: 4s first, then 2, then its odd prime factors in increasing order.
std::vector<int64_t> radices_of(int64_t n) {
  std::vector<int64_t> r;
  while (n % 4 == 0) {
    r.push_back(4);
    n /= 4;
  }
  while (n % 2 == 0) {
    r.push_back(2);
    n /= 2;
  }
  for (int64_t p = 3; p * p <= n; p += 2)
    while (n % p == 0) {
      r.push_back(p);
      n /= p;
    }
  if (n > 1) r.push_back(n);
  return r;
}

}  // namespace

FftPlan::FftPlan(int64_t n) : n_(n) {
  const std::vector<int64_t> radices = radices_of(n);
  if (std::any_of(radices.begin(), radices.end(), [](int64_t p) { return p > kMaxRadix; })) {
    int64_t m = 1;
    while (m < 2 * n - 1) m *= 2;
    inner_ = std::make_unique<FftPlan>(m);
    chirp_.resize(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) chirp_[static_cast<size_t>(t)] = root(t * t, 2 * n);
    // b[j] = conj(c[|j|]) for |j| < n, wrapped to length m; its transform divided by m.
    std::vector<Complex> b(static_cast<size_t>(m)), scratch(inner_->scratch_elems());
    for (int64_t j = 0; j < n; ++j) {
      b[static_cast<size_t>(j)] = std::conj(chirp_[static_cast<size_t>(j)]);
      if (j > 0) b[static_cast<size_t>(m - j)] = b[static_cast<size_t>(j)];
    }
    inner_->transform(b.data(), false, scratch.data());
    for (Complex& v : b) v /= static_cast<double>(m);
    chirp_fft_ = std::move(b);
    return;
  }
  int64_t cur = n, s = 1;
  for (int64_t radix : radices) {
    const int p = static_cast<int>(radix);
    Stage st;
    st.p = p;
    st.m = cur / p;
    st.s = s;
    st.twiddles.resize(static_cast<size_t>(st.m * (p - 1)));
    for (int64_t j = 0; j < st.m; ++j)
      for (int k = 1; k < p; ++k)
        st.twiddles[static_cast<size_t>(j * (p - 1) + k - 1)] = root(j * k, cur);
    if (p != 2 && p != 3 && p != 4) {
      st.roots.resize(static_cast<size_t>(p * p));
      for (int r = 0; r < p; ++r)
        for (int k = 0; k < p; ++k) st.roots[static_cast<size_t>(r * p + k)] = root(r * k, p);
    }
    stages_.push_back(std::move(st));
    s *= p;
    cur /= p;
  }
}

FftPlan::~FftPlan() = default;

size_t FftPlan::scratch_elems() const {
  if (inner_) return static_cast<size_t>(inner_->size()) + inner_->scratch_elems();
  return static_cast<size_t>(n_);
}

void FftPlan::transform(Complex* data, bool inverse, Complex* scratch) const noexcept {
  // The inverse transform is the forward one of the conjugate, conjugated.
  if (inverse)
    for (int64_t t = 0; t < n_; ++t) data[t] = std::conj(data[t]);
  if (inner_)
    forward_bluestein(data, scratch);
  else
    forward_stockham(data, scratch);
  if (inverse)
    for (int64_t t = 0; t < n_; ++t) data[t] = std::conj(data[t]);
}

// Stage with radix p on a length cur = p * m sub-transform at stride s: for each j < m and
// q < s, the p inputs x[q + s (j + m r)] (r < p) go through a p-point DFT, output k times
// e^{-2 pi i j k / cur} lands at y[q + s (p j + k)]. After the last stage the result is in
// natural order (Stockham autosort: no bit reversal).
void FftPlan::forward_stockham(Complex* data, Complex* work) const noexcept {
  Complex* x = data;
  Complex* y = work;
  for (const Stage& st : stages_) {
    const int p = st.p;
    const int64_t m = st.m, s = st.s, in_stride = s * m;
    for (int64_t j = 0; j < m; ++j) {
      const Complex* tw = st.twiddles.data() + j * (p - 1);
      for (int64_t q = 0; q < s; ++q) {
        const Complex* a = x + q + s * j;
        Complex* out = y + q + s * p * j;
        if (p == 4) {
          const Complex a0 = a[0], a1 = a[in_stride], a2 = a[2 * in_stride], a3 = a[3 * in_stride];
          const Complex b0 = a0 + a2, b1 = a0 - a2, b2 = a1 + a3, d = a1 - a3;
          const Complex b3{d.imag(), -d.real()};  // (a1 - a3) * -i
          out[0] = b0 + b2;
          out[s] = mul(b1 + b3, tw[0]);
          out[2 * s] = mul(b0 - b2, tw[1]);
          out[3 * s] = mul(b1 - b3, tw[2]);
        } else if (p == 2) {
          const Complex a0 = a[0], a1 = a[in_stride];
          out[0] = a0 + a1;
          out[s] = mul(a0 - a1, tw[0]);
        } else if (p == 3) {
          constexpr double kSin = 0.86602540378443864676;  // sin(pi / 3)
          const Complex a0 = a[0], a1 = a[in_stride], a2 = a[2 * in_stride];
          const Complex sum = a1 + a2, d = a1 - a2;
          const Complex base = a0 - 0.5 * sum;
          const Complex rot{kSin * d.imag(), -kSin * d.real()};  // -i sin(pi/3) (a1 - a2)
          out[0] = a0 + sum;
          out[s] = mul(base + rot, tw[0]);
          out[2 * s] = mul(base - rot, tw[1]);
        } else {
          Complex in[kMaxRadix];
          for (int r = 0; r < p; ++r) in[r] = a[r * in_stride];
          for (int k = 0; k < p; ++k) {
            Complex t{0, 0};
            for (int r = 0; r < p; ++r) t += mul(in[r], st.roots[static_cast<size_t>(r * p + k)]);
            out[k * s] = k == 0 ? t : mul(t, tw[k - 1]);
          }
        }
      }
    }
    std::swap(x, y);
  }
  if (x != data) std::copy(x, x + n_, data);
}

// Bluestein: X[k] = c[k] sum_t (x[t] c[t]) conj(c[k - t]) with c[t] = e^{-pi i t^2 / n}, since
// 2 k t = k^2 + t^2 - (k - t)^2; the sum is a linear convolution, done as a circular one of the
// power-of-two length m >= 2n - 1 through the inner plan.
void FftPlan::forward_bluestein(Complex* data, Complex* scratch) const noexcept {
  const int64_t m = inner_->size();
  Complex* a = scratch;
  Complex* inner_scratch = scratch + m;
  for (int64_t t = 0; t < n_; ++t) a[t] = mul(data[t], chirp_[static_cast<size_t>(t)]);
  std::fill(a + n_, a + m, Complex{0, 0});
  inner_->transform(a, false, inner_scratch);
  for (int64_t k = 0; k < m; ++k) a[k] = mul(a[k], chirp_fft_[static_cast<size_t>(k)]);
  inner_->transform(a, true, inner_scratch);
  for (int64_t k = 0; k < n_; ++k) data[k] = mul(a[k], chirp_[static_cast<size_t>(k)]);
}

}  // namespace graphi::ops
