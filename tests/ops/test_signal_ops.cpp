// The signal ops (ops/signal_ops.cpp: DFT, STFT, MelWeightMatrix) and their FFT (ops/fft.h)
// against references written here from the definitions: a direct O(n^2) DFT in long double, a
// frame-by-frame STFT on it, and ONNX's mel filter bank loop. Lengths that are powers of two,
// primes (small ones as direct radices, larger ones through Bluestein) and composites; batch
// axes before and after the transformed one; real and complex input; one-sided spectra and
// their inverse; dft_length padding and truncation; inverse round trips; teams of 1 and 3
// threads; and every refusal's message.
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "ops/fft.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

using LComplex = std::complex<long double>;

// sum_t x[t] e^{-+2 pi i k t / n}, the definition (no 1/n); the n roots of unity computed once.
std::vector<LComplex> naive_dft(const std::vector<LComplex>& x, bool inverse) {
  const size_t n = x.size();
  std::vector<LComplex> roots(n), y(n);
  const long double sign = inverse ? 1.0L : -1.0L;
  for (size_t j = 0; j < n; ++j) {
    const long double a = sign * 2.0L * std::numbers::pi_v<long double> *
                          static_cast<long double>(j) / static_cast<long double>(n);
    roots[j] = LComplex(std::cos(a), std::sin(a));
  }
  for (size_t k = 0; k < n; ++k) {
    LComplex s = 0;
    for (size_t t = 0; t < n; ++t) s += x[t] * roots[(k * t) % n];
    y[k] = s;
  }
  return y;
}

Tensor i64(int64_t v) {
  Tensor t(TensorDesc{DType::kI64, {}});
  *t.data_as<int64_t>() = v;
  return t;
}

graph::Attributes dft_attrs(int64_t axis, bool inverse, bool onesided) {
  graph::Attributes a;
  a.set("axis", axis);
  a.set("inverse", int64_t{inverse});
  a.set("onesided", int64_t{onesided});
  return a;
}

// DFT along `axis` of x [..., c] by the definition, with ONNX's options; the output as a flat
// float vector in the op's layout, and its shape.
struct RefOut {
  Shape shape;
  std::vector<float> v;
};

RefOut dft_ref(const Tensor& x, int64_t axis, bool inverse, bool onesided, int64_t dft_length) {
  const Shape& s = x.shape();
  const int64_t r = static_cast<int64_t>(s.size()), c = s.back();
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < r - 1; ++d) inner *= s[static_cast<size_t>(d)];
  const int64_t len = s[static_cast<size_t>(axis)];
  const bool irfft = inverse && onesided;
  const int64_t n = dft_length ? dft_length : (irfft ? 2 * (len - 1) : len);
  const int64_t out_len = irfft ? n : (onesided ? n / 2 + 1 : n), out_c = irfft ? 1 : 2;
  RefOut o;
  o.shape = s;
  o.shape[static_cast<size_t>(axis)] = out_len;
  o.shape.back() = out_c;
  o.v.assign(static_cast<size_t>(outer * out_len * inner * out_c), 0.0f);
  const float* xp = x.data_as<float>();
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t t) {
        const float* p = xp + ((a * len + t) * inner + i) * c;
        return LComplex(p[0], c == 2 ? p[1] : 0.0f);
      };
      std::vector<LComplex> sig(static_cast<size_t>(n), 0);
      if (irfft) {  // the Hermitian spectrum of a real signal from its bins 0..n/2
        for (int64_t k = 0; k <= n / 2 && k < len; ++k) sig[static_cast<size_t>(k)] = at(k);
        for (int64_t k = n / 2 + 1; k < n; ++k)
          sig[static_cast<size_t>(k)] = std::conj(sig[static_cast<size_t>(n - k)]);
        if (n % 2 == 0 && n / 2 < len)  // numpy's irfft reads the Nyquist bin's real part only
          sig[static_cast<size_t>(n / 2)] = sig[static_cast<size_t>(n / 2)].real();
        sig[0] = sig[0].real();
      } else {
        for (int64_t t = 0; t < std::min(n, len); ++t) sig[static_cast<size_t>(t)] = at(t);
      }
      std::vector<LComplex> y = naive_dft(sig, inverse);
      for (int64_t k = 0; k < out_len; ++k) {
        LComplex v = y[static_cast<size_t>(k)];
        if (inverse) v /= static_cast<long double>(n);
        float* dst = o.v.data() + ((a * out_len + k) * inner + i) * out_c;
        dst[0] = static_cast<float>(v.real());
        if (out_c == 2) dst[1] = static_cast<float>(v.imag());
      }
    }
  return o;
}

// Max |got - want| / max(1, max |want|).
double scaled_error(const Tensor& got, const std::vector<float>& want) {
  double worst = 0, scale = 1;
  for (float w : want) scale = std::max(scale, double(std::abs(w)));
  for (size_t k = 0; k < want.size(); ++k)
    worst = std::max(worst, std::abs(double(got.data_as<float>()[k]) - want[k]));
  return worst / scale;
}

void check_dft(const Tensor& x, int64_t axis, bool inverse, bool onesided, int64_t dft_length = 0) {
  const RefOut want = dft_ref(x, axis, inverse, onesided, dft_length);
  for (int threads : {1, 3}) {
    INFO("x " << shape_to_string(x.shape()) << " axis " << axis << " inverse " << inverse
              << " onesided " << onesided << " dft_length " << dft_length << ", " << threads
              << " threads");
    std::vector<Tensor> ins{x};
    if (dft_length) ins.push_back(i64(dft_length));
    auto r =
        run_single_op("DFT", dft_attrs(axis, inverse, onesided), ins, 1, threads, {false, true});
    if (!r.is_ok()) FAIL(r.status().message());
    REQUIRE(r->outputs[0].shape() == want.shape);
    CHECK(scaled_error(r->outputs[0], want.v) < 2e-6);
  }
}

}  // namespace

TEST_CASE("FftPlan matches the definition for powers of two, primes and composites",
          "[ops][signal][fft]") {
  for (int64_t n :
       {1,  2,  3,  4,  5,   6,   7,   8,   9,   12,  16,  17,  25,  29,   31,   32,   37,
        49, 60, 64, 97, 100, 127, 128, 210, 256, 257, 400, 512, 961, 1000, 1009, 1024, 2 * 1009}) {
    ops::FftPlan plan(n);
    CHECK(plan.bluestein() ==
          (n % 37 == 0 || n % 97 == 0 || n % 127 == 0 || n % 257 == 0 || n % 1009 == 0));
    std::vector<ops::Complex> x(static_cast<size_t>(n)), scratch(plan.scratch_elems());
    std::vector<LComplex> lx(x.size());
    for (int64_t t = 0; t < n; ++t) {
      x[static_cast<size_t>(t)] = {std::sin(0.37 * double(t) + 1.0),
                                   std::cos(1.3 * double(t * t % 17))};
      lx[static_cast<size_t>(t)] =
          LComplex(x[static_cast<size_t>(t)].real(), x[static_cast<size_t>(t)].imag());
    }
    for (bool inverse : {false, true}) {
      std::vector<ops::Complex> y = x;
      plan.transform(y.data(), inverse, scratch.data());
      const std::vector<LComplex> want = naive_dft(lx, inverse);
      long double worst = 0, scale = 1;
      for (int64_t k = 0; k < n; ++k) {
        const LComplex got(y[static_cast<size_t>(k)].real(), y[static_cast<size_t>(k)].imag());
        worst = std::max(worst, std::abs(got - want[static_cast<size_t>(k)]));
        scale = std::max(scale, std::abs(want[static_cast<size_t>(k)]));
      }
      INFO("n " << n << " inverse " << inverse << (plan.bluestein() ? " (Bluestein)" : ""));
      CHECK(double(worst / scale) < 1e-12);
    }
  }
}

TEST_CASE("DFT matches the definition: axes, batch dims, real and complex, lengths",
          "[ops][signal]") {
  uint64_t seed = 100;
  for (int64_t len : {1, 2, 7, 8, 12, 16, 37, 60, 64, 97, 128}) {
    const Tensor real = test::random_tensor({DType::kF32, {2, len, 1}}, seed++);
    const Tensor cplx = test::random_tensor({DType::kF32, {2, len, 2}}, seed++);
    check_dft(real, 1, false, false);
    check_dft(cplx, 1, false, false);
    check_dft(cplx, -2, true, false);
    check_dft(real, 1, false, true);
    check_dft(real, 1, true, false);
  }
  // Batch axes before and after the transformed one; every signal axis.
  const Tensor x = test::random_tensor({DType::kF32, {3, 5, 4, 6, 2}}, seed++);
  for (int64_t axis : {0, 1, 2, 3, -2, -3, -5}) {
    check_dft(x, axis, false, false);
    check_dft(x, axis, true, false);
  }
  const Tensor xr = test::random_tensor({DType::kF32, {3, 10, 4, 1}}, seed++);
  for (int64_t axis : {0, 1, 2}) check_dft(xr, axis, false, true);
}

TEST_CASE("DFT: dft_length pads and truncates, one-sided spectra and their inverse (irfft)",
          "[ops][signal]") {
  const Tensor real = test::random_tensor({DType::kF32, {2, 12, 3, 1}}, 7);
  const Tensor cplx = test::random_tensor({DType::kF32, {2, 12, 3, 2}}, 8);
  for (int64_t n : {5, 12, 13, 16, 31, 41}) {
    check_dft(real, 1, false, false, n);
    check_dft(real, 1, false, true, n);
    check_dft(cplx, 1, false, false, n);
    check_dft(cplx, 1, true, false, n);
  }
  // Inverse of a one-sided spectrum of 12 bins: default length 22, longer and shorter ones.
  check_dft(cplx, 1, true, true);
  for (int64_t n : {22, 23, 30, 9, 2, 1}) check_dft(cplx, 1, true, true, n);
}

TEST_CASE("DFT round trips: inverse(forward(x)) = x, irfft(rfft(x)) = x", "[ops][signal]") {
  for (int64_t len : {8, 11, 30, 37, 256, 1009}) {
    INFO("length " << len);
    const Tensor x = test::random_tensor({DType::kF32, {2, len, 2}}, uint64_t(len));
    auto f = run_single_op("DFT", dft_attrs(1, false, false), {x}, 1, 2);
    REQUIRE(f.is_ok());
    auto b = run_single_op("DFT", dft_attrs(1, true, false), {f->outputs[0]}, 1, 2);
    REQUIRE(b.is_ok());
    std::vector<float> want(x.data_as<float>(), x.data_as<float>() + x.numel());
    CHECK(scaled_error(b->outputs[0], want) < 1e-6);
    const Tensor xr = test::random_tensor({DType::kF32, {3, len, 1}}, uint64_t(len) + 1);
    auto rf = run_single_op("DFT", dft_attrs(1, false, true), {xr}, 1, 1);
    REQUIRE(rf.is_ok());
    auto ri = run_single_op("DFT", dft_attrs(1, true, true), {rf->outputs[0], i64(len)}, 1, 3,
                            {false, true});
    REQUIRE(ri.is_ok());
    REQUIRE(ri->outputs[0].shape() == xr.shape());
    std::vector<float> want_r(xr.data_as<float>(), xr.data_as<float>() + xr.numel());
    CHECK(scaled_error(ri->outputs[0], want_r) < 1e-6);
  }
}

namespace {

// STFT by frames: each frame_length slice every step times the window, through naive_dft.
RefOut stft_ref(const Tensor& sig, int64_t step, const float* window, int64_t frame,
                bool onesided) {
  const Shape& s = sig.shape();
  const int64_t batch = s[0], len = s[1], c = s.size() == 3 ? s[2] : 1;
  const int64_t frames = 1 + (len - frame) / step, bins = onesided ? frame / 2 + 1 : frame;
  RefOut o;
  o.shape = {batch, frames, bins, 2};
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      std::vector<LComplex> x(static_cast<size_t>(frame));
      for (int64_t t = 0; t < frame; ++t) {
        const float* p = sig.data_as<float>() + (b * len + f * step + t) * c;
        const long double w = window ? window[t] : 1.0L;
        x[static_cast<size_t>(t)] = LComplex(w * p[0], c == 2 ? w * p[1] : 0.0L);
      }
      const std::vector<LComplex> y = naive_dft(x, false);
      for (int64_t k = 0; k < bins; ++k) {
        o.v.push_back(static_cast<float>(y[static_cast<size_t>(k)].real()));
        o.v.push_back(static_cast<float>(y[static_cast<size_t>(k)].imag()));
      }
    }
  return o;
}

graph::Attributes onesided_attr(bool onesided) {
  graph::Attributes a;
  a.set("onesided", int64_t{onesided});
  return a;
}

}  // namespace

TEST_CASE("STFT matches framing plus the definition: windows, frame lengths, complex signals",
          "[ops][signal]") {
  uint64_t seed = 300;
  for (const Shape& s : {Shape{1, 128, 1}, Shape{2, 100, 1}, Shape{3, 64, 2}, Shape{2, 90}})
    for (int64_t frame : {16, 25, 31, 37})
      for (int64_t step : {1, 8, 10})
        for (bool onesided : {true, false}) {
          const Tensor sig = test::random_tensor({DType::kF32, s}, seed++);
          const Tensor win = test::random_tensor({DType::kF32, {frame}}, seed++, 0, 1);
          for (int mode = 0; mode < 3; ++mode) {  // window; frame_length; both
            INFO("signal " << shape_to_string(s) << " frame " << frame << " step " << step
                           << " onesided " << onesided << " mode " << mode);
            const RefOut want =
                stft_ref(sig, step, mode == 1 ? nullptr : win.data_as<float>(), frame, onesided);
            std::vector<Tensor> ins{sig, i64(step)};
            std::vector<bool> consts{false, true, false, true};
            if (mode == 1) {
              ins.emplace_back();
              consts[2] = false;
            } else {
              ins.push_back(win);
            }
            if (mode >= 1) ins.push_back(i64(frame));
            for (int threads : {1, 3}) {
              auto r = run_single_op("STFT", onesided_attr(onesided), ins, 1, threads, consts);
              if (!r.is_ok()) FAIL(r.status().message());
              REQUIRE(r->outputs[0].shape() == want.shape);
              CHECK(scaled_error(r->outputs[0], want.v) < 2e-6);
            }
          }
        }
}

namespace {

// ONNX's MelWeightMatrix loop (onnx/reference/ops/op_mel_weight_matrix.py), in double.
std::vector<float> mel_ref(int64_t mels, int64_t n, int64_t rate, double lo, double hi) {
  const int64_t bins = n / 2 + 1;
  std::vector<int64_t> pts;
  const double lo_mel = 2595 * std::log10(1 + lo / 700), hi_mel = 2595 * std::log10(1 + hi / 700);
  for (int64_t k = 0; k < mels + 2; ++k) {
    const double mel = double(k) * (hi_mel - lo_mel) / double(mels + 2) + lo_mel;
    pts.push_back(
        int64_t(std::floor(double(n + 1) * 700 * (std::pow(10.0, mel / 2595) - 1) / double(rate))));
  }
  std::vector<float> out(static_cast<size_t>(bins * mels), 0.0f);
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = pts[size_t(i)], c = pts[size_t(i + 1)], h = pts[size_t(i + 2)];
    if (c == l)
      out[size_t(c * mels + i)] = 1;
    else
      for (int64_t j = l; j <= c; ++j)
        out[size_t(j * mels + i)] = float(double(j - l) / double(c - l));
    for (int64_t j = c; j < h; ++j)
      out[size_t(j * mels + i)] = float(double(h - j) / double(h - c));
  }
  return out;
}

std::vector<Tensor> mel_inputs(int64_t mels, int64_t n, int64_t rate, float lo, float hi) {
  Tensor l(TensorDesc{DType::kF32, {}}), h(TensorDesc{DType::kF32, {}});
  *l.data_as<float>() = lo;
  *h.data_as<float>() = hi;
  return {i64(mels), i64(n), i64(rate), l, h};
}

}  // namespace

TEST_CASE("MelWeightMatrix with run-time hertz matches ONNX's filter bank", "[ops][signal]") {
  struct Case {
    int64_t mels, n, rate;
    float lo, hi;
  };
  for (const Case& c :
       {Case{8, 16, 8192, 0, 4096}, Case{10, 64, 16000, 20, 8000}, Case{40, 400, 16000, 0, 7999},
        Case{80, 512, 22050, 30, 11000}, Case{3, 9, 100, 5, 40}}) {
    INFO(c.mels << " mels, dft_length " << c.n << ", rate " << c.rate);
    for (bool hz_const : {false, true}) {
      auto r = run_single_op("MelWeightMatrix", {}, mel_inputs(c.mels, c.n, c.rate, c.lo, c.hi), 1,
                             2, {true, true, true, hz_const, hz_const});
      if (!r.is_ok()) FAIL(r.status().message());
      REQUIRE(r->outputs[0].shape() == Shape{c.n / 2 + 1, c.mels});
      CHECK(scaled_error(r->outputs[0], mel_ref(c.mels, c.n, c.rate, c.lo, c.hi)) < 1e-6);
    }
  }
}

TEST_CASE("signal ops refuse bad nodes naming the field", "[ops][signal]") {
  auto err = [](const Result<test::OpRun>& r) {
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  const Tensor real = test::random_tensor({DType::kF32, {2, 8, 1}}, 1);
  const Tensor cplx = test::random_tensor({DType::kF32, {2, 8, 2}}, 2);
  CHECK_THAT(err(run_single_op("DFT", dft_attrs(2, false, false), {real})),
             Catch::Contains("attribute 'axis' = 2 is not a signal axis"));
  CHECK_THAT(err(run_single_op("DFT", dft_attrs(-1, false, false), {real})),
             Catch::Contains("attribute 'axis' = -1"));
  CHECK_THAT(err(run_single_op("DFT", dft_attrs(1, false, true), {cplx})),
             Catch::Contains("onesided = 1 with inverse = 0 needs a real input"));
  CHECK_THAT(err(run_single_op("DFT", dft_attrs(1, true, true), {real})),
             Catch::Contains("onesided = 1 with inverse = 1 needs a complex"));
  CHECK_THAT(err(run_single_op("DFT", dft_attrs(1, false, false), {real, i64(8)})),
             Catch::Contains("input 1 (dft_length) must be a constant"));
  CHECK_THAT(
      err(run_single_op("DFT", dft_attrs(1, false, false), {real, i64(0)}, 1, 1, {false, true})),
      Catch::Contains("input 1 (dft_length) must be at least 1"));
  const Tensor three = test::random_tensor({DType::kF32, {2, 8, 3}}, 3);
  CHECK_THAT(err(run_single_op("DFT", dft_attrs(1, false, false), {three})),
             Catch::Contains("input 0 (input) must be [..., signal, 1] (real)"));
  graph::Attributes bad = dft_attrs(1, false, false);
  bad.set("inverse", int64_t{2});
  CHECK_THAT(err(run_single_op("DFT", bad, {real})),
             Catch::Contains("attribute 'inverse' must be 0 or 1"));

  const Tensor sig = test::random_tensor({DType::kF32, {1, 32, 1}}, 4);
  const Tensor win = test::random_tensor({DType::kF32, {16}}, 5);
  CHECK_THAT(
      err(run_single_op("STFT", {}, {sig, i64(4), win, i64(12)}, 1, 1, {false, true, false, true})),
      Catch::Contains("input 2 (window) has 16 samples but input 3 (frame_length) is 12"));
  CHECK_THAT(err(run_single_op("STFT", {}, {sig, i64(4)}, 1, 1, {false, true})),
             Catch::Contains("needs input 2 (window) or input 3 (frame_length)"));
  CHECK_THAT(err(run_single_op("STFT", {}, {sig, i64(4), Tensor(), i64(40)}, 1, 1,
                               {false, true, false, true})),
             Catch::Contains("frame length 40 is longer than the signal"));
  CHECK_THAT(err(run_single_op("STFT", {}, {sig, i64(0), win}, 1, 1, {false, true, false})),
             Catch::Contains("input 1 (frame_step) must be at least 1"));
  CHECK_THAT(err(run_single_op("STFT", {}, {sig, i64(4), win})),
             Catch::Contains("input 1 (frame_step) must be a constant"));

  CHECK_THAT(
      err(run_single_op("MelWeightMatrix", {}, mel_inputs(5, 15, 8000, 0, 4000), 1, 1,
                        {true, true, true, true, true})),
      Catch::Contains("input 4 (upper_edge_hertz) 4000") && Catch::Contains("outside the 8 bins"));
  CHECK_THAT(err(run_single_op("MelWeightMatrix", {}, mel_inputs(0, 16, 8000, 0, 4000), 1, 1,
                               {true, true, true, true, true})),
             Catch::Contains("input 0 (num_mel_bins) must be at least 1"));
  graph::Attributes dbl;
  dbl.set("output_datatype", int64_t{11});
  CHECK_THAT(err(run_single_op("MelWeightMatrix", dbl, mel_inputs(4, 16, 8000, 0, 4000), 1, 1,
                               {true, true, true, false, false})),
             Catch::Contains("'output_datatype' = 11"));
}
