// Complex fast Fourier transforms of any length, for the signal ops (ops/signal_ops.cpp: DFT,
// STFT). A plan is made once per length at kernel init (twiddles and, for Bluestein, the chirp
// and its transform precomputed) and is read-only afterwards: run it from any number of threads,
// each with its own scratch. Computes in double; knows nothing of tensors or graphs.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace graphi::ops {

using Complex = std::complex<double>;

class FftPlan {
 public:
  // A plan for length n >= 1. Lengths whose prime factors are all <= kMaxRadix run a mixed-radix
  // Stockham FFT (radix 4, 2, 3 butterflies, other primes as direct p-point DFTs: O(n * sum of
  // factors)); a length with a larger prime factor runs Bluestein's chirp-z transform through a
  // power-of-two plan of length >= 2n - 1 (O(n log n) for primes too).
  explicit FftPlan(int64_t n);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  static constexpr int kMaxRadix = 31;

  int64_t size() const { return n_; }
  bool bluestein() const { return inner_ != nullptr; }
  // Complex elements of scratch that transform() needs (besides the data itself).
  size_t scratch_elems() const;
  // In place: data[k] <- sum_t data[t] e^{-2 pi i k t / n} (inverse: e^{+2 pi i k t / n}, not
  // divided by n). `scratch` holds scratch_elems() elements, not shared with another thread.
  void transform(Complex* data, bool inverse, Complex* scratch) const noexcept;

 private:
  struct Stage {
    int p = 2;                      // radix
    int64_t m = 1;                  // length of the sub-transforms after this stage (n_cur / p)
    int64_t s = 1;                  // stride (product of the earlier radices)
    std::vector<Complex> twiddles;  // [j * (p - 1) + k - 1] = e^{-2 pi i j k / (p * m)}
    std::vector<Complex> roots;     // generic radix only: [r * p + k] = e^{-2 pi i r k / p}
  };
  void forward_stockham(Complex* data, Complex* work) const noexcept;
  void forward_bluestein(Complex* data, Complex* scratch) const noexcept;

  int64_t n_ = 1;
  std::vector<Stage> stages_;
  // Bluestein: chirp c[t] = e^{-pi i t^2 / n}, the power-of-two plan and the transform of the
  // conjugate chirp wrapped to its length (divided by that length, for the inverse).
  std::vector<Complex> chirp_, chirp_fft_;
  std::unique_ptr<FftPlan> inner_;
};

}  // namespace graphi::ops
