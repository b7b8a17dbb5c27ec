// The row loops of ops/norm_rows.h (every ISA path this CPU runs) against double-precision loops:
// lengths around the vector width and the partial-sum block (1 .. 70,000), rows with a large
// common offset (catastrophic cancellation if the variance were taken as E[x^2] - E[x]^2), the
// affine step with per-element and scalar scale / bias, in place, and the tail lanes of y left
// alone. Then LayerNormalization / InstanceNormalization on long rows through the op.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "ops/norm_rows.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::ops;

namespace {

void require_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  for (int64_t k = 0; k < want.numel(); ++k) {
    const double g = got.data_as<float>()[k], w = want.data_as<float>()[k];
    INFO("element " << k);
    REQUIRE(std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)));
  }
}

}  // namespace

TEST_CASE("norm rows: sums, centred squares and the affine step on every ISA path", "[norm_rows]") {
  std::mt19937 gen(7);
  for (SimdIsa isa : {SimdIsa::kScalar, SimdIsa::kAvx2, SimdIsa::kAvx512}) {
    const NormRowFns f = norm_row_fns_for(isa);
    if (!f.sum) continue;
    for (int64_t n : {1, 5, 15, 16, 17, 63, 64, 65, 96, 255, 256, 257, 768, 1023, 5000, 70000}) {
      for (double offset : {0.0, 1000.0}) {
        INFO("isa " << int(isa) << " n " << n << " offset " << offset);
        std::uniform_real_distribution<float> d(-1.0f, 1.0f);
        std::vector<float> x(n + 16), scale(n), bias(n);
        for (float& v : x) v = static_cast<float>(offset) + d(gen);
        for (float& v : scale) v = 0.5f + 0.5f * d(gen);
        for (float& v : bias) v = d(gen);
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += x[k];
        const double mean = sum / double(n);
        const auto mf = static_cast<float>(mean);
        double sq = 0;
        for (int64_t k = 0; k < n; ++k) sq += (double(x[k]) - mf) * (double(x[k]) - mf);
        // Float partial sums of <= 16 elements per lane: relative error ~1e-7 of the magnitude.
        const double mag = std::abs(offset) + 1.0;
        CHECK(std::abs(f.sum(x.data(), n) - sum) <= 2e-6 * mag * double(n));
        CHECK(std::abs(f.sq_dev(x.data(), n, mf) - sq) <=
              1e-5 * sq + 1e-6 * double(n) * mag * 1e-3);
        const double inv = 1.0 / std::sqrt(sq / double(n) + 1e-5);
        for (int mode = 0; mode < 4; ++mode) {
          const bool vs = mode & 1, vb = mode & 2;
          std::vector<float> y(n + 16, -7.0f);
          f.affine(x.data(), y.data(), n, mf, float(inv), vs ? scale.data() : nullptr, 1.25f,
                   vb ? bias.data() : nullptr, -0.5f);
          for (int64_t k = 0; k < n; ++k) {
            const double want =
                (double(x[k]) - mf) * inv * (vs ? scale[k] : 1.25) + (vb ? bias[k] : -0.5);
            REQUIRE(std::abs(y[k] - want) <= 1e-5 * (1.0 + std::abs(want)));
          }
          for (int64_t k = n; k < n + 16; ++k) REQUIRE(y[k] == -7.0f);
        }
        // In place.
        std::vector<float> z(x.begin(), x.begin() + n);
        f.affine(z.data(), z.data(), n, mf, float(inv), scale.data(), 0, bias.data(), 0);
        for (int64_t k = 0; k < n; k += 97)
          REQUIRE(std::abs(z[k] - ((double(x[k]) - mf) * inv * scale[k] + bias[k])) <=
                  1e-5 * (1.0 + std::abs(z[k])));
      }
    }
  }
}

TEST_CASE("LayerNormalization and InstanceNormalization on long rows with an offset",
          "[ops][norm]") {
  // [2, 4096] rows around 300 (LayerNorm over the last axis) and [1, 2, 64, 64] planes around
  // -50 (InstanceNorm), against the double-precision definition.
  uint64_t seed = 5;
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 4096}}, seed++, 299, 301);
  Tensor s = test::random_tensor(TensorDesc{DType::kF32, {4096}}, seed++, 0.5, 1.5);
  Tensor b = test::random_tensor(TensorDesc{DType::kF32, {4096}}, seed++, -1, 1);
  Tensor want(x.desc());
  const float* xs = x.data_as<float>();
  for (int64_t r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < 4096; ++k) mean += xs[r * 4096 + k];
    mean /= 4096;
    for (int64_t k = 0; k < 4096; ++k) var += std::pow(xs[r * 4096 + k] - mean, 2);
    var /= 4096;
    for (int64_t k = 0; k < 4096; ++k)
      want.data_as<float>()[r * 4096 + k] = static_cast<float>(
          (xs[r * 4096 + k] - mean) / std::sqrt(var + 1e-5) * s.data_as<float>()[k] +
          b.data_as<float>()[k]);
  }
  // The mean is a float (as ONNX Runtime's): around 300 it is off by up to half an ulp (1.5e-5),
  // which the normalization multiplies by inv (~1.7) and the scale (<= 1.5).
  for (int threads : {1, 2}) {
    auto r = test::run_single_op("LayerNormalization", {}, {x, s, b}, 1, threads);
    REQUIRE(r.is_ok());
    require_close(r->outputs[0], want, 5e-5);
  }
  Tensor xi = test::random_tensor(TensorDesc{DType::kF32, {1, 2, 64, 64}}, seed++, -51, -49);
  Tensor si = test::random_tensor(TensorDesc{DType::kF32, {2}}, seed++, 0.5, 1.5);
  Tensor bi = test::random_tensor(TensorDesc{DType::kF32, {2}}, seed++, -1, 1);
  Tensor wi(xi.desc());
  for (int64_t p = 0; p < 2; ++p) {
    const float* xp = xi.data_as<float>() + p * 4096;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < 4096; ++k) mean += xp[k];
    mean /= 4096;
    for (int64_t k = 0; k < 4096; ++k) var += std::pow(xp[k] - mean, 2);
    var /= 4096;
    for (int64_t k = 0; k < 4096; ++k)
      wi.data_as<float>()[p * 4096 + k] = static_cast<float>(
          (xp[k] - mean) / std::sqrt(var + 1e-5) * si.data_as<float>()[p] + bi.data_as<float>()[p]);
  }
  auto r = test::run_single_op("InstanceNormalization", {}, {xi, si, bi}, 1, 2);
  REQUIRE(r.is_ok());
  require_close(r->outputs[0], wi, 2e-5);  // around -50 the float mean is off by <= 2e-6
}
