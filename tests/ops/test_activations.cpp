// SIMD sigmoid/tanh: every available ISA path against double-precision references.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ops/activations.h"

using graphi::ops::ActivationKernels;
using graphi::ops::SimdIsa;

namespace {

double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<const ActivationKernels*> available_paths() {
  std::vector<const ActivationKernels*> out;
  for (SimdIsa isa : {SimdIsa::kScalar, SimdIsa::kAvx2, SimdIsa::kAvx512})
    if (const ActivationKernels* k = graphi::ops::activation_kernels(isa)) out.push_back(k);
  return out;
}

// Dense sweep of [-30, 30], random points, and the edge values named in the issue.
std::vector<float> sample_inputs() {
  std::vector<float> x;
  for (int i = -300000; i <= 300000; i += 7) x.push_back(static_cast<float>(i * 1e-4));
  std::mt19937 gen(1234);
  std::uniform_real_distribution<float> wide(-30.0f, 30.0f), narrow(-1.0f, 1.0f);
  for (int i = 0; i < 50000; ++i) x.push_back(wide(gen));
  for (int i = 0; i < 50000; ++i) x.push_back(narrow(gen));
  for (float v :
       {1e-8f,   -1e-8f,      0.0f, -0.0f, 100.0f, -100.0f, 1e-30f, -1e-30f, 1e-40f, 0.625f,
        -0.625f, 0.62499994f, 9.1f, -9.1f, 17.5f,  -17.5f,  87.0f,  -87.0f,  -88.0f, 88.5f})
    x.push_back(v);
  return x;
}

}  // namespace

TEST_CASE("activations: the scalar path is always available and the active path is supported") {
  REQUIRE(graphi::ops::activation_kernels(SimdIsa::kScalar) != nullptr);
  REQUIRE(graphi::ops::simd_isa_supported(graphi::ops::active_simd_isa()));
  INFO("active path: " << graphi::ops::simd_isa_name(graphi::ops::active_simd_isa()));
  for (const ActivationKernels* k : available_paths())
    CHECK(graphi::ops::simd_isa_supported(k->isa));
}

TEST_CASE("activations: max absolute error <= 1e-6 on [-30, 30] on every path") {
  const std::vector<float> x = sample_inputs();
  for (const ActivationKernels* k : available_paths()) {
    INFO("path " << graphi::ops::simd_isa_name(k->isa));
    std::vector<float> s(x.size()), t(x.size());
    k->sigmoid(x.data(), s.data(), static_cast<int64_t>(x.size()));
    k->tanh(x.data(), t.data(), static_cast<int64_t>(x.size()));
    double err_s = 0, err_t = 0, rel_t_small = 0;
    int out_of_range = 0;
    float worst_s = 0, worst_t = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi = x[i];
      const double es = std::fabs(s[i] - ref_sigmoid(xi));
      const double et = std::fabs(t[i] - std::tanh(xi));
      if (es > err_s) err_s = es, worst_s = x[i];
      if (et > err_t) err_t = et, worst_t = x[i];
      // Near 0 tanh must keep relative precision too (absolute error alone would allow 0).
      if (xi != 0 && std::fabs(xi) < 1 && std::fabs(xi) > 1e-37)
        rel_t_small = std::max(rel_t_small, et / std::fabs(std::tanh(xi)));
      // Sigmoid in [0, 1], tanh in [-1, 1]: never outside the range.
      if (!(s[i] >= 0.0f && s[i] <= 1.0f && std::fabs(t[i]) <= 1.0f)) ++out_of_range;
    }
    CHECK(out_of_range == 0);
    INFO("worst sigmoid at " << worst_s << ", worst tanh at " << worst_t);
    CHECK(err_s <= 1e-6);
    CHECK(err_t <= 1e-6);
    CHECK(rel_t_small <= 1e-6);
  }
}

TEST_CASE("activations: saturation, signed zero and NaN on every path") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {inf, -inf, 100.0f, -100.0f, 1e30f, -1e30f, nan, -nan, 0.0f, -0.0f};
  for (const ActivationKernels* k : available_paths()) {
    INFO("path " << graphi::ops::simd_isa_name(k->isa));
    std::vector<float> s(x.size()), t(x.size());
    k->sigmoid(x.data(), s.data(), static_cast<int64_t>(x.size()));
    k->tanh(x.data(), t.data(), static_cast<int64_t>(x.size()));
    CHECK(s[0] == 1.0f);
    CHECK(s[1] == 0.0f);
    CHECK(s[2] == 1.0f);
    CHECK(s[3] == 0.0f);
    CHECK(s[4] == 1.0f);
    CHECK(s[5] == 0.0f);
    CHECK(t[0] == 1.0f);
    CHECK(t[1] == -1.0f);
    CHECK(t[2] == 1.0f);
    CHECK(t[3] == -1.0f);
    CHECK(t[4] == 1.0f);
    CHECK(t[5] == -1.0f);
    CHECK(std::isnan(s[6]));
    CHECK(std::isnan(s[7]));
    CHECK(std::isnan(t[6]));
    CHECK(std::isnan(t[7]));
    CHECK(s[8] == 0.5f);
    CHECK(s[9] == 0.5f);
    CHECK(t[8] == 0.0f);
    CHECK_FALSE(std::signbit(t[8]));
    CHECK(t[9] == 0.0f);
    CHECK(std::signbit(t[9]));  // tanh(-0) = -0
  }
}

TEST_CASE("activations: tails, unaligned pointers, in place, and nothing written past n") {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  for (const ActivationKernels* k : available_paths()) {
    INFO("path " << graphi::ops::simd_isa_name(k->isa));
    for (int n = 0; n <= 40; ++n) {
      for (int offset : {0, 1, 3}) {
        INFO("n=" << n << " offset=" << offset);
        std::vector<float> src(n + offset + 4), dst(n + offset + 4, 42.0f);
        for (float& v : src) v = dist(gen);
        const float* in = src.data() + offset;
        float* out = dst.data() + offset;
        k->tanh(in, out, n);
        for (int i = 0; i < n; ++i) CHECK(std::fabs(out[i] - std::tanh(double(in[i]))) <= 1e-6);
        for (int i = n; i < n + 4; ++i) CHECK(out[i] == 42.0f);
        for (int i = 0; i < offset; ++i) CHECK(dst[i] == 42.0f);
        // In place must give the same bits as out of place.
        std::vector<float> inplace(src);
        k->tanh(inplace.data() + offset, inplace.data() + offset, n);
        for (int i = 0; i < n; ++i) CHECK(inplace[offset + i] == out[i]);
        k->sigmoid(in, out, n);
        for (int i = 0; i < n; ++i) CHECK(std::fabs(out[i] - ref_sigmoid(in[i])) <= 1e-6);
        for (int i = n; i < n + 4; ++i) CHECK(out[i] == 42.0f);
        inplace = src;
        k->sigmoid(inplace.data() + offset, inplace.data() + offset, n);
        for (int i = 0; i < n; ++i) CHECK(inplace[offset + i] == out[i]);
      }
    }
  }
}

TEST_CASE("activations: the dispatching entry points match the active path") {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -12.0f + 0.024f * static_cast<float>(i);
  const ActivationKernels* k = graphi::ops::activation_kernels(graphi::ops::active_simd_isa());
  REQUIRE(k != nullptr);
  std::vector<float> a(x.size()), b(x.size());
  graphi::ops::sigmoid_f32(x.data(), a.data(), static_cast<int64_t>(x.size()));
  k->sigmoid(x.data(), b.data(), static_cast<int64_t>(x.size()));
  CHECK(a == b);
  graphi::ops::tanh_f32(x.data(), a.data(), static_cast<int64_t>(x.size()));
  k->tanh(x.data(), b.data(), static_cast<int64_t>(x.size()));
  CHECK(a == b);
  std::vector<float> c(x);
  graphi::ops::tanh_f32_inplace(c.data(), static_cast<int64_t>(c.size()));
  CHECK(c == b);
  graphi::ops::sigmoid_f32(x.data(), a.data(), 0);  // n = 0 is a no-op
}

TEST_CASE("activations: swish = x sigmoid(x) within 1e-6 max(1, |x|) on every path, edges exact") {
  std::vector<float> x = sample_inputs();
  for (float v : {200.0f, -200.0f, 1e30f, -1e30f, std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max()})
    x.push_back(v);
  for (const ActivationKernels* k : available_paths()) {
    INFO("path " << graphi::ops::simd_isa_name(k->isa));
    std::vector<float> y(x.size());
    k->swish(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    float at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi = x[i];
      const double want = xi * ref_sigmoid(xi);  // exp(-x) -> 0 or inf: x or -0
      const double err = std::abs(y[i] - want) / std::max(1.0, std::abs(want));
      if (err > worst) worst = err, at = x[i];
    }
    INFO("worst at x = " << at);
    CHECK(worst <= 1e-6);
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> e = {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f};
    std::vector<float> r(e.size());
    k->swish(e.data(), r.data(), static_cast<int64_t>(e.size()));
    CHECK(r[0] == inf);
    CHECK(r[1] == 0.0f);
    CHECK(std::isnan(r[2]));
    CHECK(r[3] == 0.0f);
    CHECK(r[4] == 0.0f);
    // In place, and every tail length of the masked remainder.
    for (int n = 1; n <= 33; ++n) {
      std::vector<float> a(x.begin(), x.begin() + n), b(static_cast<size_t>(n));
      k->swish(a.data(), b.data(), n);
      k->swish(a.data(), a.data(), n);
      CHECK(a == b);
    }
  }
}

TEST_CASE(
    "activations: erf within 2e-7 absolute and 1e-6 relative below 0.5 on every path, edges "
    "exact") {
  std::vector<float> x = sample_inputs();
  for (float v : {1e-30f, -1e-20f, 1e-5f, 0.4999f, 0.5f, 0.5001f, -0.5f, 3.9f, 4.5f, 9.5f, 30.0f,
                  -1e30f, std::numeric_limits<float>::max()})
    x.push_back(v);
  for (int i = -4000; i <= 4000; ++i) x.push_back(static_cast<float>(i) / 1000.0f);
  for (const ActivationKernels* k : available_paths()) {
    INFO("path " << graphi::ops::simd_isa_name(k->isa));
    std::vector<float> y(x.size());
    k->erf(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst_abs = 0, worst_rel = 0;
    float at_abs = 0, at_rel = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::erf(static_cast<double>(x[i]));
      const double err = std::abs(y[i] - want);
      if (err > worst_abs) worst_abs = err, at_abs = x[i];
      if (std::abs(x[i]) < 1.0f && std::abs(x[i]) > 1e-30f && err / std::abs(want) > worst_rel)
        worst_rel = err / std::abs(want), at_rel = x[i];
    }
    INFO("worst absolute at x = " << at_abs << ", relative at x = " << at_rel);
    CHECK(worst_abs <= 2e-7);
    CHECK(worst_rel <= 1e-6);
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> e = {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f};
    std::vector<float> r(e.size());
    k->erf(e.data(), r.data(), static_cast<int64_t>(e.size()));
    CHECK(r[0] == 1.0f);
    CHECK(r[1] == -1.0f);
    CHECK(std::isnan(r[2]));
    CHECK(r[3] == 0.0f);
    CHECK((r[4] == 0.0f && std::signbit(r[4])));
    for (int n = 1; n <= 33; ++n) {
      std::vector<float> a(x.begin(), x.begin() + n), b(static_cast<size_t>(n));
      k->erf(a.data(), b.data(), n);
      k->erf(a.data(), a.data(), n);
      CHECK(a == b);
    }
  }
}

namespace {

// The GELU tests' inputs: the shared samples, [-6, 6] in steps of 1e-3, and far-out values.
std::vector<float> gelu_inputs() {
  std::vector<float> x = sample_inputs();
  for (int i = -6000; i <= 6000; ++i) x.push_back(static_cast<float>(i) / 1000.0f);
  for (float v : {-30.0f, 30.0f, 1e10f, -1e10f}) x.push_back(v);
  return x;
}

}  // namespace

TEST_CASE("activations: gelu = x (1 + erf(x / sqrt 2)) / 2 within 3e-7 max(1, |y|) on every path") {
  const std::vector<float> x = gelu_inputs();
  for (const ActivationKernels* k : available_paths()) {
    INFO("path " << graphi::ops::simd_isa_name(k->isa));
    std::vector<float> y(x.size());
    k->gelu(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i], want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      worst = std::max(worst, std::abs(y[i] - want) / std::max(1.0, std::abs(want)));
    }
    CHECK(worst <= 3e-7);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> e = {nan}, r(1);
    k->gelu(e.data(), r.data(), 1);
    CHECK(std::isnan(r[0]));
  }
}

TEST_CASE(
    "activations: gelu_tanh = x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2 on every path") {
  const std::vector<float> x = gelu_inputs();
  for (const ActivationKernels* k : available_paths()) {
    INFO("path " << graphi::ops::simd_isa_name(k->isa));
    std::vector<float> y(x.size());
    k->gelu_tanh(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      const double want =
          0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
      worst = std::max(worst, std::abs(y[i] - want) / std::max(1.0, std::abs(want)));
    }
    CHECK(worst <= 1e-6);
    // Differs from the exact form (so the attribute matters): by 4.7e-4 at x = 2.7.
    float at = 2.7f, exact = 0, approx = 0;
    k->gelu(&at, &exact, 1);
    k->gelu_tanh(&at, &approx, 1);
    CHECK(std::abs(exact - approx) > 4e-4);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> e = {nan}, r(1);
    k->gelu_tanh(e.data(), r.data(), 1);
    CHECK(std::isnan(r[0]));
  }
}
