// Softmax (opset 13: one axis, default -1) against the naive reference in
// tests/support/reference_basic on teams of 1, 2 and 3 threads, plus its errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "ops/registry.h"
#include "ops/softmax_rows.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_basic.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {
constexpr double kTol = 1e-6;

graph::Attributes axis_attr(int64_t axis) {
  graph::Attributes a;
  a.set("axis", axis);
  return a;
}
}  // namespace

TEST_CASE("Softmax matches the reference on every axis of random shapes", "[ops][softmax]") {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> rank_d(1, 4), dim_d(1, 7);
  uint64_t seed = 1;
  for (int trial = 0; trial < 25; ++trial) {
    Shape s(static_cast<size_t>(rank_d(rng)));
    for (int64_t& d : s) d = dim_d(rng);
    Tensor x = test::random_tensor({DType::kF32, s}, seed++, -5, 5);
    const int64_t rank = static_cast<int64_t>(s.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      Tensor want = test::softmax_ref(x, axis);
      for (int threads : {1, 2, 3}) {
        INFO(shape_to_string(s) << " axis " << axis << ", " << threads << " threads");
        auto r = run_single_op("Softmax", axis_attr(axis), {x}, 1, threads);
        REQUIRE(r.is_ok());
        CHECK(test::max_rel_error(r->outputs[0], want) <= kTol);
      }
    }
  }
}

TEST_CASE("Softmax defaults to the last axis and handles long rows", "[ops][softmax]") {
  Tensor x = test::random_tensor({DType::kF32, {5, 1000}}, 77, -10, 10);
  Tensor want = test::softmax_ref(x, -1);
  for (int threads : {1, 2, 3}) {
    auto r = run_single_op("Softmax", {}, {x}, 1, threads);
    REQUIRE(r.is_ok());
    CHECK(test::max_rel_error(r->outputs[0], want) <= kTol);
    // Rows sum to 1.
    for (int64_t row = 0; row < 5; ++row) {
      double sum = 0;
      for (int64_t k = 0; k < 1000; ++k) sum += r->outputs[0].data_as<float>()[row * 1000 + k];
      CHECK(std::abs(sum - 1.0) < 1e-5);
    }
  }
}

TEST_CASE("Softmax is numerically stable for large inputs", "[ops][softmax]") {
  // exp(1000) overflows float; subtracting the max keeps the result exact.
  Tensor x(TensorDesc{DType::kF32, {2, 4}});
  const float v[] = {1000, 1001, 1002, 1003, -1000, -1001, -1e30f, 50};
  std::copy(v, v + 8, x.data_as<float>());
  Tensor want = test::softmax_ref(x, 1);
  auto r = run_single_op("Softmax", axis_attr(1), {x}, 1, 2);
  REQUIRE(r.is_ok());
  CHECK(test::max_rel_error(r->outputs[0], want) <= kTol);
  for (int i = 0; i < 8; ++i) CHECK(std::isfinite(r->outputs[0].data_as<float>()[i]));
  CHECK(r->outputs[0].data_as<float>()[7] == 1.0f);  // exp(-1050) vanishes next to exp(0)
  Tensor big = test::random_tensor({DType::kF32, {3, 6, 4}}, 78, -300, 300);
  for (int64_t axis : {0, 1, 2}) {
    auto rb = run_single_op("Softmax", axis_attr(axis), {big}, 1, 3);
    REQUIRE(rb.is_ok());
    CHECK(test::max_rel_error(rb->outputs[0], test::softmax_ref(big, axis)) <= kTol);
  }
}

TEST_CASE("Softmax errors name the axis, the shape and the dtype", "[ops][softmax][errors]") {
  Tensor x = test::random_tensor({DType::kF32, {2, 3}}, 1);
  auto r = run_single_op("Softmax", axis_attr(2), {x});
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("node 'node' (Softmax)") &&
                 Catch::Contains("attribute 'axis' = 2 is out of range for input of shape [2, 3]"));
  auto r2 = run_single_op("Softmax", axis_attr(-3), {x});
  REQUIRE_FALSE(r2.is_ok());
  CHECK_THAT(r2.status().message(), Catch::Contains("'axis' = -3"));
  Tensor i = test::random_tensor({DType::kI32, {4}}, 2, 0, 9);
  auto r3 = run_single_op("Softmax", {}, {i});
  REQUIRE_FALSE(r3.is_ok());
  CHECK_THAT(r3.status().message(),
             Catch::Contains("input 0 (input) must be float32, got int32[4]"));
  auto r4 = run_single_op("Softmax", {}, {x, x});
  REQUIRE_FALSE(r4.is_ok());
  CHECK_THAT(r4.status().message(), Catch::Contains("expects 1 input, got 2"));
  Tensor s(TensorDesc{DType::kF32, {}});
  auto r5 = run_single_op("Softmax", {}, {s});
  REQUIRE_FALSE(r5.is_ok());
  CHECK_THAT(r5.status().message(), Catch::Contains("rank >= 1"));
  CHECK_FALSE(ops::Registry::get().find("Softmax")->small);
}

namespace {

// The row's max and sum(exp(x - max)) in double: the reference both row tests divide by.
std::pair<double, double> max_and_exp_sum(const float* x, int64_t n) {
  double m = -INFINITY, sum = 0;
  for (int64_t k = 0; k < n; ++k) m = std::max<double>(m, x[k]);
  for (int64_t k = 0; k < n; ++k) sum += std::exp(double(x[k]) - m);
  return {m, sum};
}

}  // namespace

TEST_CASE("Softmax rows on every ISA path match double precision, masks give exact zeros",
          "[ops][softmax]") {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> d(-20.0f, 20.0f);
  for (ops::SimdIsa isa : {ops::SimdIsa::kScalar, ops::SimdIsa::kAvx2, ops::SimdIsa::kAvx512}) {
    const ops::SoftmaxRowFn f = ops::softmax_row_fn_for(isa);
    if (!f) continue;
    for (int64_t n : {1, 3, 15, 16, 17, 31, 197, 1000, 5000}) {
      INFO("isa " << int(isa) << " n " << n);
      std::vector<float> x(static_cast<size_t>(n) + 16, 0.0f);
      for (int64_t k = 0; k < n; ++k) x[k] = d(gen);
      // Attention-style masks (never the whole row): -inf and -1e9 give exactly 0.
      if (n > 2) {
        x[1] = -INFINITY;
        x[n - 1] = -1e9f;
      }
      const auto [m, sum] = max_and_exp_sum(x.data(), n);
      std::vector<float> y(x.size(), -3.0f);
      f(x.data(), y.data(), n);
      for (int64_t k = 0; k < n; ++k) {
        const double want = std::exp(double(x[k]) - m) / sum;
        REQUIRE(std::abs(y[k] - want) <= 1e-6 * std::max(want, 1e-30) + 1e-12);
      }
      if (n > 2) CHECK((y[1] == 0.0f && y[n - 1] == 0.0f));
      for (size_t k = static_cast<size_t>(n); k < y.size(); ++k) REQUIRE(y[k] == -3.0f);
      std::vector<float> z(x);  // in place
      f(z.data(), z.data(), n);
      for (int64_t k = 0; k < n; ++k) REQUIRE(z[k] == y[k]);
    }
  }
}

TEST_CASE("LogSoftmax rows on every ISA path match double precision", "[ops][log_softmax]") {
  std::mt19937 gen(8);
  std::uniform_real_distribution<float> d(-30.0f, 30.0f);
  for (ops::SimdIsa isa : {ops::SimdIsa::kScalar, ops::SimdIsa::kAvx2, ops::SimdIsa::kAvx512}) {
    const ops::SoftmaxRowFn f = ops::log_softmax_row_fn_for(isa);
    if (!f) continue;
    for (int64_t n : {1, 3, 15, 16, 17, 31, 1000, 50257}) {
      INFO("isa " << int(isa) << " n " << n);
      std::vector<float> x(static_cast<size_t>(n) + 16, 0.0f);
      for (int64_t k = 0; k < n; ++k) x[k] = d(gen);
      if (n > 2) x[1] = -1e9f;  // a mask: a large finite negative value, not -inf
      const auto [m, sum] = max_and_exp_sum(x.data(), n);
      std::vector<float> y(x.size(), -3.0f);
      f(x.data(), y.data(), n);
      for (int64_t k = 0; k < n; ++k) {
        const double want = double(x[k]) - m - std::log(sum);
        REQUIRE(std::abs(y[k] - want) <= 1e-6 * std::max(1.0, std::abs(want)));
      }
      for (size_t k = static_cast<size_t>(n); k < y.size(); ++k) REQUIRE(y[k] == -3.0f);
      std::vector<float> z(x);  // in place
      f(z.data(), z.data(), n);
      for (int64_t k = 0; k < n; ++k) REQUIRE(z[k] == y[k]);
    }
  }
}
