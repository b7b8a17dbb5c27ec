// The unary ops of ops/unary_ops.cpp against references written from the ONNX definitions (in
// double), on random shapes and teams of 1, 2 and 3 threads; Clip with attribute bounds (opset <
// 11) and with scalar input bounds (opset >= 11), plus errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

Tensor apply_ref(const Tensor& x, const std::function<double(double)>& f) {
  Tensor y(x.desc());
  for (int64_t i = 0; i < x.desc().numel(); ++i)
    y.data_as<float>()[i] = static_cast<float>(f(x.data_as<float>()[i]));
  return y;
}

Tensor scalar(float v) {
  Tensor t(TensorDesc{DType::kF32, {}});
  t.data_as<float>()[0] = v;
  return t;
}

struct Case {
  const char* op;
  double lo, hi;  // input range where the op is defined
  graph::Attributes attrs;
  std::function<double(double)> ref;
};

std::vector<Case> cases() {
  graph::Attributes leaky, elu, hs, clip;
  leaky.set("alpha", 0.3);
  elu.set("alpha", 0.7);
  hs.set("alpha", 0.25);
  hs.set("beta", 0.4);
  clip.set("min", -0.5);
  clip.set("max", 1.5);
  return {
      {"Exp", -5, 5, {}, [](double x) { return std::exp(x); }},
      {"Log", 0.01, 10, {}, [](double x) { return std::log(x); }},
      {"Sqrt", 0, 10, {}, [](double x) { return std::sqrt(x); }},
      {"Neg", -5, 5, {}, [](double x) { return -x; }},
      {"Abs", -5, 5, {}, [](double x) { return std::fabs(x); }},
      {"Reciprocal", 0.1, 5, {}, [](double x) { return 1 / x; }},
      {"Erf", -3, 3, {}, [](double x) { return std::erf(x); }},
      {"Softplus", -30, 30, {}, [](double x) { return std::log(1 + std::exp(x)); }},
      {"LeakyRelu", -5, 5, {}, [](double x) { return x < 0 ? 0.01 * x : x; }},
      {"LeakyRelu", -5, 5, leaky, [](double x) { return x < 0 ? 0.3 * x : x; }},
      {"Elu", -5, 5, {}, [](double x) { return x < 0 ? std::exp(x) - 1 : x; }},
      {"Elu", -5, 5, elu, [](double x) { return x < 0 ? 0.7 * (std::exp(x) - 1) : x; }},
      {"HardSigmoid", -5, 5, {}, [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }},
      {"HardSigmoid", -5, 5, hs, [](double x) { return std::clamp(0.25 * x + 0.4, 0.0, 1.0); }},
      {"Clip", -5, 5, {}, [](double x) { return x; }},
      {"Clip", -5, 5, clip, [](double x) { return std::clamp(x, -0.5, 1.5); }},
      {"Floor", -5, 5, {}, [](double x) { return std::floor(x); }},
      {"Ceil", -5, 5, {}, [](double x) { return std::ceil(x); }},
      {"Sin", -7, 7, {}, [](double x) { return std::sin(x); }},
      {"Cos", -7, 7, {}, [](double x) { return std::cos(x); }},
      {"Softsign", -5, 5, {}, [](double x) { return x / (1 + std::fabs(x)); }},
      {"Selu",
       -5,
       5,
       {},
       [](double x) {
         return 1.0507009873554804934193349852946 *
                (x <= 0 ? 1.6732632423543772848170429916717 * (std::exp(x) - 1) : x);
       }},
  };
}

}  // namespace

TEST_CASE("Unary ops match their definitions on random shapes", "[ops][unary]") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> rank_d(0, 4), dim_d(1, 9);
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    for (int trial = 0; trial < 6; ++trial) {
      Shape s(static_cast<size_t>(rank_d(rng)));
      for (int64_t& d : s) d = dim_d(rng);
      if (trial == 5) s = {3, 333};  // several cache lines per thread
      Tensor x = test::random_tensor({DType::kF32, s}, seed++, c.lo, c.hi);
      Tensor want = apply_ref(x, c.ref);
      for (int threads : {1, 2, 3}) {
        INFO(c.op << " " << shape_to_string(s) << ", " << threads << " threads");
        auto r = run_single_op(c.op, c.attrs, {x}, 1, threads);
        REQUIRE(r.is_ok());
        CHECK(test::max_rel_error(r->outputs[0], want) <= 1e-6);
      }
    }
  }
}

TEST_CASE("Clip takes its bounds from scalar inputs (opset 11+), constant or not", "[ops][unary]") {
  Tensor x = test::random_tensor({DType::kF32, {4, 37}}, 9, -3, 3);
  auto ref = [](double lo, double hi) {
    return [lo, hi](double v) { return std::min(std::max(v, lo), hi); };
  };
  for (int threads : {1, 2, 3}) {
    for (bool constant : {false, true}) {
      auto r = run_single_op("Clip", {}, {x, scalar(-1.25f), scalar(0.5f)}, 1, threads,
                             {false, constant, constant});
      REQUIRE(r.is_ok());
      CHECK(test::max_rel_error(r->outputs[0], apply_ref(x, ref(-1.25, 0.5))) == 0);
    }
    // Only a min (max absent).
    auto lo_only = run_single_op("Clip", {}, {x, scalar(0.25f)}, 1, threads);
    REQUIRE(lo_only.is_ok());
    CHECK(test::max_rel_error(lo_only->outputs[0], apply_ref(x, ref(0.25, HUGE_VAL))) == 0);
  }
}

TEST_CASE("Unary ops keep NaN and handle extremes", "[ops][unary]") {
  Tensor x(TensorDesc{DType::kF32, {4}});
  const float v[] = {NAN, 100.0f, -100.0f, 0.0f};
  std::copy(v, v + 4, x.data_as<float>());
  auto sp = run_single_op("Softplus", {}, {x});
  REQUIRE(sp.is_ok());
  const float* y = sp->outputs[0].data_as<float>();
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == 100.0f);  // no overflow of exp(100)
  CHECK(y[2] >= 0.0f);
  CHECK(y[3] == Approx(std::log(2.0)));
  auto clip = run_single_op("Clip", {}, {x, scalar(-1), scalar(1)});
  REQUIRE(clip.is_ok());
  CHECK(std::isnan(clip->outputs[0].data_as<float>()[0]));
  CHECK(clip->outputs[0].data_as<float>()[1] == 1.0f);
}

TEST_CASE("Unary ops refuse bad inputs with the node in the error", "[ops][unary]") {
  Tensor x = test::random_tensor({DType::kF32, {2, 3}}, 1);
  Tensor xi = test::random_tensor({DType::kI64, {2, 3}}, 1, 0, 5);
  auto r = run_single_op("Exp", {}, {xi});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("Exp") != std::string::npos);
  auto two = run_single_op("Log", {}, {x, x});
  REQUIRE_FALSE(two.is_ok());
  auto bad_bound = run_single_op("Clip", {}, {x, test::random_tensor({DType::kF32, {2}}, 2)});
  REQUIRE_FALSE(bad_bound.is_ok());
  CHECK(bad_bound.status().message().find("scalar") != std::string::npos);
  graph::Attributes wrong;
  wrong.set("alpha", std::string("big"));
  auto bad_attr = run_single_op("LeakyRelu", wrong, {x});
  REQUIRE_FALSE(bad_attr.is_ok());
  CHECK(bad_attr.status().message().find("alpha") != std::string::npos);
}
