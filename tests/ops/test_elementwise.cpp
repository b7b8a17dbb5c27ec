// Add/Sub/Mul/Div (numpy broadcasting), Sigmoid, Tanh, Relu against the naive references in
// tests/support/reference_basic, on teams of 1, 2 and 3 threads, plus every shape-rule error.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "ops/elementwise_simd.h"
#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_basic.h"
#include "tests/support/reference_gemm_conv.h"  // run_every_kernel
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

constexpr double kTol = 1e-6;

Tensor f32(Shape shape, std::vector<float> values) {
  Tensor t(TensorDesc{DType::kF32, std::move(shape)});
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

// A random broadcast pair: the output shape, then each operand takes a suffix of it (rank
// difference) with some dims replaced by 1. Sometimes one operand is a scalar [].
std::pair<Shape, Shape> random_broadcast_pair(std::mt19937& rng) {
  std::uniform_int_distribution<int> rank_d(0, 4), dim_d(1, 7), coin(0, 3);
  Shape out(static_cast<size_t>(rank_d(rng)));
  for (int64_t& d : out) d = dim_d(rng);
  auto operand = [&]() {
    std::uniform_int_distribution<size_t> drop(0, out.size());
    Shape s(out.begin() + static_cast<long>(coin(rng) == 0 ? drop(rng) : 0), out.end());
    for (int64_t& d : s)
      if (coin(rng) == 0) d = 1;
    return s;
  };
  Shape a = operand(), b = operand();
  if (coin(rng) == 0) b.clear();  // scalar
  if (coin(rng) == 0) std::swap(a, b);
  return {a, b};
}

std::string where_of(const std::string& op) { return "node 'node' (" + op + ")"; }

constexpr const char* kBinaryOps[] = {"Add", "Sub", "Mul", "Div"};  // BinaryKind order

// Operands of a binary-op case: A in [-2, 2], B in [0.5, 2] (a well-conditioned divisor); the
// seed advances by two.
std::pair<Tensor, Tensor> binary_operands(const Shape& sa, const Shape& sb, uint64_t& seed) {
  Tensor a = test::random_tensor({DType::kF32, sa}, seed++, -2, 2);
  Tensor b = test::random_tensor({DType::kF32, sb}, seed++, 0.5, 2);
  return {std::move(a), std::move(b)};
}

// The broadcast plan of an output of shape `out` from operand shapes sa and sb.
ops::BroadcastPlan plan_of(const Shape& out, const Shape& sa, const Shape& sb) {
  auto plan = ops::make_broadcast_plan("test", out, sa, sb);
  REQUIRE(plan.is_ok());
  return *plan;
}

// loops->binary[k] over `plan` in three pieces cut at random points (runs then start and stop
// mid-row, the odometer starts anywhere), compared with `want`.
void check_cut_ranges(const ops::EltwiseLoops& loops, int k, const ops::BroadcastPlan& plan,
                      const Tensor& a, const Tensor& b, const Tensor& want, std::mt19937& rng) {
  Tensor got(want.desc());
  const int64_t n = want.numel();
  int64_t c1 = std::uniform_int_distribution<int64_t>(0, n)(rng);
  int64_t c2 = std::uniform_int_distribution<int64_t>(0, n)(rng);
  if (c1 > c2) std::swap(c1, c2);
  for (auto [lo, hi] : {std::pair{int64_t{0}, c1}, std::pair{c1, c2}, std::pair{c2, n}})
    loops.binary[k](plan, a.data_as<float>(), b.data_as<float>(), got.data_as<float>(), lo, hi);
  INFO(ops::simd_isa_name(loops.isa) << ", cuts " << c1 << ", " << c2);
  CHECK(test::max_rel_error(got, want) <= kTol);
}

}  // namespace

TEST_CASE("Add, Sub, Mul and Div match the reference on random broadcast shapes",
          "[ops][elementwise]") {
  std::mt19937 rng(20240611);
  uint64_t seed = 1;
  for (int trial = 0; trial < 60; ++trial) {
    auto [sa, sb] = random_broadcast_pair(rng);
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      Tensor a = test::random_tensor({DType::kF32, sa}, seed++, -2, 2);
      // Div: keep |B| in [0.5, 2] so the quotient is well conditioned.
      Tensor b = test::random_tensor({DType::kF32, sb}, seed++, 0.5, 2);
      if (std::string(op) != "Div")
        for (int64_t i = 0; i < b.numel(); ++i) b.data_as<float>()[i] *= (i % 2 ? -1.0f : 1.0f);
      Tensor want = test::binary_ref(op, a, b);
      for (int threads : {1, 2, 3}) {
        INFO(op << " " << shape_to_string(sa) << " with " << shape_to_string(sb) << ", " << threads
                << " threads");
        auto r = run_single_op(op, {}, {a, b}, 1, threads);
        REQUIRE(r.is_ok());
        REQUIRE(r->outputs[0].shape() == want.shape());
        CHECK(test::max_rel_error(r->outputs[0], want) <= kTol);
      }
    }
  }
}

TEST_CASE("binary ops cover the LSTM shapes and long rows split across the team",
          "[ops][elementwise]") {
  // [B,H] + [H] (bias), [B,H] * [B,H] (gates), [1] * [B,H], [B,1] - [1,H], and a [B,H] + [B,1]
  // column broadcast; H not a multiple of the 16-float block so chunks straddle rows.
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5, 257}, {257}},    {{5, 257}, {5, 257}},
      {{1}, {5, 257}},      {{7, 1}, {1, 131}},
      {{4, 100}, {4, 1}},   {{1, 257}, {257}},
      {{3, 2, 50}, {2, 1}}, {{2, 3, 4, 5}, {3, 1, 5}},
      {{33}, {}},           {{}, {}},
      {{1, 1}, {1}}};
  uint64_t seed = 100;
  for (const auto& [sa, sb] : cases) {
    for (const char* op : {"Add", "Mul", "Sub", "Div"}) {
      Tensor a = test::random_tensor({DType::kF32, sa}, seed++, -3, 3);
      Tensor b = test::random_tensor({DType::kF32, sb}, seed++, 0.25, 3);
      Tensor want = test::binary_ref(op, a, b);
      for (int threads : {1, 2, 3}) {
        INFO(op << " " << shape_to_string(sa) << " with " << shape_to_string(sb) << ", " << threads
                << " threads");
        auto r = run_single_op(op, {}, {a, b}, 1, threads);
        REQUIRE(r.is_ok());
        CHECK(test::max_rel_error(r->outputs[0], want) <= kTol);
      }
    }
  }
}

TEST_CASE("every ISA path of the binary loops matches the reference on arbitrary ranges",
          "[ops][elementwise]") {
  // The kernels call these loops on 16-float blocks; here the cut points are arbitrary, so runs
  // start and stop mid-row and the odometer starts from any position.
  std::mt19937 rng(99);
  uint64_t seed = 900;
  for (ops::SimdIsa isa : {ops::SimdIsa::kScalar, ops::SimdIsa::kAvx2, ops::SimdIsa::kAvx512}) {
    const ops::EltwiseLoops* loops = ops::eltwise_loops(isa);
    if (!loops) continue;  // this CPU cannot run it
    for (int trial = 0; trial < 40; ++trial) {
      auto [sa, sb] = random_broadcast_pair(rng);
      if (trial == 0) sa = {9, 67}, sb = {67};
      const auto [a, b] = binary_operands(sa, sb, seed);
      for (int k = 0; k < 4; ++k) {
        Tensor want = test::binary_ref(kBinaryOps[k], a, b);
        INFO(kBinaryOps[k] << " " << shape_to_string(sa) << " with " << shape_to_string(sb));
        check_cut_ranges(*loops, k, plan_of(want.shape(), sa, sb), a, b, want, rng);
      }
    }
    Tensor x = test::random_tensor({DType::kF32, {1003}}, seed++, -5, 5);
    Tensor y(x.desc());
    loops->relu(x.data_as<float>(), y.data_as<float>(), x.numel());
    CHECK(test::max_rel_error(y, test::unary_ref("Relu", x)) == 0);
    // QuantizeDequantize's pass (uint8, zero point 128): the scalar definition, bit for bit, with
    // ties, saturation and NaN among random values, on an odd length.
    const float s = 0.037f, zp = 128.0f;
    float* xv = x.data_as<float>();
    xv[0] = 2.5f * s, xv[1] = -3.5f * s, xv[2] = 1e9f, xv[3] = -1e9f;
    xv[4] = std::numeric_limits<float>::quiet_NaN();
    loops->quantize_dequantize(xv, y.data_as<float>(), x.numel(), s, -zp, 255.0f - zp);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float v = xv[i] / s;
      const float q = std::isnan(v) ? -zp : std::clamp(std::nearbyint(v), -zp, 255.0f - zp);
      INFO("isa " << static_cast<int>(isa) << " x " << xv[i]);
      CHECK(y.data_as<float>()[i] == q * s);
    }
  }
}

TEST_CASE("a periodic operand (blocked tensor x per-channel vector) on every ISA path",
          "[ops][elementwise]") {
  // [N, C/B, H, W, B] with [N, C/B, 1, 1, B] (squeeze-excitation in nChw16c / nChw8c) and
  // shorter periods, the vector on either side (Sub and Div are not commutative), cut at
  // arbitrary points so runs start mid-vector; the kernel (merge_periodic_inner in init) on
  // teams of 1-3 too.
  const std::vector<std::pair<Shape, Shape>> cases = {{{2, 3, 5, 7, 8}, {2, 3, 1, 1, 8}},
                                                      {{1, 3, 1, 1, 16}, {1, 3, 4, 4, 16}},
                                                      {{3, 5, 4}, {3, 1, 4}},
                                                      {{2, 9, 2}, {2, 1, 2}},
                                                      {{4, 1}, {4, 33}},
                                                      {{1, 2, 1, 1, 16}, {2, 2, 3, 3, 16}}};
  std::mt19937 rng(7);
  uint64_t seed = 3000;
  for (const auto& [sa, sb] : cases) {
    const auto [a, b] = binary_operands(sa, sb, seed);
    for (int k = 0; k < 4; ++k) {
      Tensor want = test::binary_ref(kBinaryOps[k], a, b);
      ops::BroadcastPlan plan = plan_of(want.shape(), sa, sb);
      const bool merged = ops::merge_periodic_inner(plan);
      INFO(kBinaryOps[k] << " " << shape_to_string(sa) << " with " << shape_to_string(sb));
      // Every case but [4, 1] with [4, 33] (a vector of 33: no period dividing 16).
      CHECK(merged == (sb != Shape{4, 33}));
      for (ops::SimdIsa isa : {ops::SimdIsa::kScalar, ops::SimdIsa::kAvx2, ops::SimdIsa::kAvx512}) {
        const ops::EltwiseLoops* loops = ops::eltwise_loops(isa);
        if (!loops) continue;
        for (int trial = 0; trial < 5; ++trial) check_cut_ranges(*loops, k, plan, a, b, want, rng);
      }
      for (int threads : {1, 2, 3}) {
        auto r = run_single_op(kBinaryOps[k], {}, {a, b}, 1, threads);
        REQUIRE(r.is_ok());
        CHECK(test::max_rel_error(r->outputs[0], want) <= kTol);
      }
    }
  }
}

TEST_CASE("binary ops follow IEEE semantics for special values", "[ops][elementwise]") {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = f32({6}, {1.0f, -1.0f, 0.0f, inf, nan, 3.0f});
  Tensor b = f32({6}, {0.0f, 0.0f, 0.0f, inf, 1.0f, 2.0f});
  auto r = run_single_op("Div", {}, {a, b}, 1, 2);
  REQUIRE(r.is_ok());
  const float* y = r->outputs[0].data_as<float>();
  CHECK(y[0] == inf);
  CHECK(y[1] == -inf);
  CHECK(std::isnan(y[2]));
  CHECK(std::isnan(y[3]));
  CHECK(std::isnan(y[4]));
  CHECK(y[5] == 1.5f);
}

TEST_CASE("every Sigmoid, Tanh and Relu kernel matches the reference on random shapes",
          "[ops][elementwise]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> rank_d(0, 4), dim_d(1, 9);
  uint64_t seed = 500;
  for (int trial = 0; trial < 25; ++trial) {
    Shape s(static_cast<size_t>(rank_d(rng)));
    for (int64_t& d : s) d = dim_d(rng);
    if (trial == 0) s = {3, 1000};  // long enough for every thread to get several blocks
    Tensor x = test::random_tensor({DType::kF32, s}, seed++, -12, 12);
    for (const char* op : {"Sigmoid", "Tanh", "Relu"}) {
      Tensor want = test::unary_ref(op, x);
      for (int threads : {1, 2, 3}) {
        auto runs = test::run_every_kernel(op, {}, {x}, threads);
        REQUIRE(runs.is_ok());
        for (const test::KernelRun& k : *runs) {
          INFO(op << " " << shape_to_string(s) << ", kernel " << k.kernel << ", " << threads
                  << " threads");
          REQUIRE(k.accepted);
          CHECK(test::max_rel_error(k.outputs[0], want) <= kTol);
        }
      }
    }
  }
}

TEST_CASE("every Sigmoid and Tanh kernel is accurate at large |x|, infinities and NaN",
          "[ops][elementwise]") {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs = {0.0f,   -0.0f, 1e-8f,  -1e-8f, 15.0f,   -15.0f, 88.0f,
                                 -88.0f, 89.0f, -89.0f, 100.0f, -100.0f, 1e30f,  -1e30f,
                                 inf,    -inf,  nan,    3.0f,   -3.0f};
  Tensor x = f32({static_cast<int64_t>(xs.size())}, xs);
  for (const char* op : {"Sigmoid", "Tanh", "Relu"}) {
    Tensor want = test::unary_ref(op, x);
    auto runs = test::run_every_kernel(op, {}, {x}, 2);
    REQUIRE(runs.is_ok());
    for (const test::KernelRun& k : *runs) {
      INFO(op << ", kernel " << k.kernel);
      REQUIRE(k.accepted);
      CHECK(test::max_rel_error(k.outputs[0], want) <= kTol);
      // Relative error where the result is tiny (sigmoid(-15) ~ 3e-7): the formula must not lose
      // it.
      const float* y = k.outputs[0].data_as<float>();
      for (size_t i = 0; i < xs.size(); ++i) {
        const float w = want.data_as<float>()[i];
        INFO("x = " << xs[i] << ": got " << y[i] << ", want " << w);
        if (std::isfinite(w) && std::abs(w) >= std::numeric_limits<float>::min())
          CHECK(std::abs(y[i] - w) <= 1e-6 * std::abs(w));
      }
      CHECK(std::isnan(y[16]));  // NaN in, NaN out (Relu too, like numpy.maximum)
      if (std::string(op) == "Sigmoid") {
        CHECK(y[0] == 0.5f);
        CHECK(y[10] == 1.0f);  // sigmoid(100)
        CHECK(y[12] == 1.0f);  // sigmoid(1e30)
        CHECK(y[13] == 0.0f);  // sigmoid(-1e30), no inf/inf
        CHECK(y[14] == 1.0f);
        CHECK(y[15] == 0.0f);
      }
      if (std::string(op) == "Tanh") {
        CHECK(y[14] == 1.0f);
        CHECK(y[15] == -1.0f);
        CHECK(std::signbit(y[1]));  // tanh(-0) = -0
      }
    }
  }
}

TEST_CASE("elementwise ops are registered with cost hints and are not small",
          "[ops][elementwise]") {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Sigmoid", "Tanh", "Relu"}) {
    const ops::OpDef* def = ops::Registry::get().find(op);
    REQUIRE(def != nullptr);
    CHECK_FALSE(def->small);
  }
  graph::Node node{"Add", "n", {}, {}, {}};
  TensorDesc a{DType::kF32, {4, 8}}, b{DType::kF32, {8}}, y{DType::kF32, {4, 8}};
  const TensorDesc* in[] = {&a, &b};
  const TensorDesc* out[] = {&y};
  ops::CostHint c = ops::Registry::get().cost(node, in, out);
  CHECK(c.flops == 32);
  CHECK(c.bytes == (32 + 8 + 32) * 4);
  // The SIMD activations come first; the libm loops stay in the list as the fallback.
  Tensor x = test::random_tensor({DType::kF32, {4}}, 1);
  auto s = run_single_op("Sigmoid", {}, {x});
  REQUIRE(s.is_ok());
  CHECK(s->kernel == "sigmoid_simd");
  auto t = run_single_op("Tanh", {}, {x});
  REQUIRE(t.is_ok());
  CHECK(t->kernel == "tanh_simd");
}

TEST_CASE("Add rejects shapes that do not broadcast, naming both shapes",
          "[ops][elementwise][errors]") {
  Tensor a = test::random_tensor({DType::kF32, {2, 3}}, 1),
         b = test::random_tensor({DType::kF32, {4}}, 2);
  auto r = run_single_op("Add", {}, {a, b});
  REQUIRE_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  CHECK_THAT(m, Catch::Contains(where_of("Add")));
  CHECK_THAT(m, Catch::Contains("[2, 3]"));
  CHECK_THAT(m, Catch::Contains("[4]"));
  CHECK_THAT(m, Catch::Contains("broadcast"));

  Tensor c = test::random_tensor({DType::kF32, {5, 1, 3}}, 3),
         d = test::random_tensor({DType::kF32, {2, 4, 1}}, 4);
  auto r2 = run_single_op("Mul", {}, {c, d});
  REQUIRE_FALSE(r2.is_ok());
  CHECK_THAT(r2.status().message(), Catch::Contains("[5, 1, 3]") && Catch::Contains("[2, 4, 1]"));
}

TEST_CASE("elementwise ops reject a wrong number of inputs", "[ops][elementwise][errors]") {
  Tensor a = test::random_tensor({DType::kF32, {2, 3}}, 1);
  auto r1 = run_single_op("Sub", {}, {a});
  REQUIRE_FALSE(r1.is_ok());
  CHECK_THAT(r1.status().message(),
             Catch::Contains(where_of("Sub")) && Catch::Contains("expects 2 inputs, got 1"));
  auto r3 = run_single_op("Div", {}, {a, a, a});
  REQUIRE_FALSE(r3.is_ok());
  CHECK_THAT(r3.status().message(), Catch::Contains("expects 2 inputs, got 3"));
  auto r2 = run_single_op("Tanh", {}, {a, a});
  REQUIRE_FALSE(r2.is_ok());
  CHECK_THAT(r2.status().message(),
             Catch::Contains(where_of("Tanh")) && Catch::Contains("expects 1 input, got 2"));
}

TEST_CASE("elementwise ops reject non-float32 inputs", "[ops][elementwise][errors]") {
  Tensor f = test::random_tensor({DType::kF32, {2, 3}}, 1);
  Tensor i = test::random_tensor({DType::kI64, {2, 3}}, 2, 0, 10);
  auto r = run_single_op("Add", {}, {f, i});
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains(where_of("Add")) &&
                 Catch::Contains("input 1 (B) must be float32, got int64[2, 3]"));
  Tensor j = test::random_tensor({DType::kI32, {4}}, 3, 0, 10);
  auto s = run_single_op("Sigmoid", {}, {j});
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.status().message(), Catch::Contains("input 0 (X) must be float32, got int32[4]"));
}
