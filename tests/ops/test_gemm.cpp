// MatMul and Gemm: every kernel of each op's list (xsmm, oneDNN, ref) against the naive
// references in tests/support/reference_gemm_conv, on seeded random and edge shapes, teams of 1
// and 2, constant and non-constant weights; kernel selection; two threads sharing one kernel;
// one test per error message.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <set>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_gemm_conv.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::check_every_kernel;

namespace {

Tensor rnd(Shape s, uint64_t seed) {
  return test::random_tensor(TensorDesc{DType::kF32, std::move(s)}, seed);
}

// Float accumulation over K terms of magnitude <= 1 drifts like sqrt(K) ulps of the sum.
double tolerance(int64_t k) {
  return 4e-6 * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
}

std::string selected(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<Tensor>& inputs, const std::vector<bool>& constant,
                     int threads = 1) {
  auto r = test::run_single_op(op, attrs, inputs, 1, threads, constant);
  REQUIRE(r.is_ok());
  return r->kernel;
}

std::string error_of(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<Tensor>& inputs) {
  auto r = test::run_single_op(op, attrs, inputs);
  REQUIRE_FALSE(r.is_ok());
  return r.status().message();
}

graph::Attributes gemm_attrs(double alpha, double beta, int64_t ta, int64_t tb) {
  graph::Attributes a;
  a.set("alpha", alpha);
  a.set("beta", beta);
  a.set("transA", ta);
  a.set("transB", tb);
  return a;
}

}  // namespace

TEST_CASE("MatMul matches numpy matmul on random shapes with batch broadcasting", "[ops][gemm]") {
  std::mt19937 rng(1234);
  const int64_t sizes[] = {1, 2, 3, 5, 8, 17, 33};
  auto pick = [&] { return sizes[rng() % 7]; };
  std::set<std::string> used;
  for (int c = 0; c < 24; ++c) {
    const int64_t m = pick(), n = pick(), k = pick();
    // Batch dims: A and B get up to 2 leading dims, each either the shared size or 1.
    const int rank_a = static_cast<int>(rng() % 3), rank_b = static_cast<int>(rng() % 3);
    Shape batch = {static_cast<int64_t>(rng() % 3 + 1), static_cast<int64_t>(rng() % 2 + 2)};
    Shape as, bs;
    for (int i = 2 - rank_a; i < 2; ++i) as.push_back(rng() % 3 == 0 ? 1 : batch[i]);
    for (int i = 2 - rank_b; i < 2; ++i) bs.push_back(rng() % 3 == 0 ? 1 : batch[i]);
    as.insert(as.end(), {m, k});
    bs.insert(bs.end(), {k, n});
    Tensor a = rnd(as, 100 + c), b = rnd(bs, 200 + c);
    const bool b_const = c % 2 == 1;
    INFO("A " << a.desc().to_string() << " B " << b.desc().to_string() << " const B " << b_const);
    for (const std::string& name : check_every_kernel("MatMul", {}, {a, b}, {false, b_const},
                                                      test::matmul_ref(a, b), tolerance(k)))
      used.insert(name);
  }
  // The random shapes exercised every kernel of the list.
  CHECK(used == std::set<std::string>{"matmul_xsmm", "matmul_onednn", "matmul_ref"});
}

TEST_CASE("MatMul edge shapes: M, N, K of 1 and 1-D operands", "[ops][gemm]") {
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {
      {{1, 7}, {7, 9}},           // M = 1
      {{6, 7}, {7, 1}},           // N = 1
      {{6, 1}, {1, 9}},           // K = 1 (outer product)
      {{1, 1}, {1, 1}},           // everything 1
      {{5}, {5}},                 // 1-D x 1-D: a scalar
      {{5}, {5, 3}},              // 1-D A: [3]
      {{4, 5}, {5}},              // 1-D B: [4]
      {{2, 4, 5}, {5}},           // batched A, 1-D B: [2, 4]
      {{5}, {3, 5, 2}},           // 1-D A, batched B: [3, 2]
      {{3, 1, 4, 5}, {2, 5, 6}},  // [3, 2, 4, 6]
      {{1, 4, 5}, {3, 5, 6}},     // A broadcast over B's batch
  };
  int seed = 0;
  for (const Case& c : cases) {
    Tensor a = rnd(c.a, 300 + seed), b = rnd(c.b, 400 + seed);
    ++seed;
    INFO("A " << a.desc().to_string() << " B " << b.desc().to_string());
    const int64_t k = c.a.back();
    for (bool b_const : {false, true})
      check_every_kernel("MatMul", {}, {a, b}, {false, b_const}, test::matmul_ref(a, b),
                         tolerance(k));
  }
  // The scalar result really is rank 0.
  auto r = test::run_single_op("MatMul", {}, {rnd({5}, 1), rnd({5}, 2)});
  REQUIRE(r.is_ok());
  CHECK(r->outputs[0].shape().empty());
}

TEST_CASE("MatMul LSTM shapes on every kernel, teams of 1 and 2", "[ops][gemm]") {
  for (auto [k, n] : {std::pair<int64_t, int64_t>{256, 1024}, {64, 256}}) {
    for (int64_t m : {1, 4}) {
      Tensor a = rnd({m, k}, 7), b = rnd({k, n}, 8);
      const Tensor ref = test::matmul_ref(a, b);
      for (bool b_const : {false, true}) {
        INFO("[" << m << "," << k << "]x[" << k << "," << n << "] const B " << b_const);
        auto names = check_every_kernel("MatMul", {}, {a, b}, {false, b_const}, ref, tolerance(k));
        // All three kernels take a plain small product, except that LIBXSMM leaves products
        // above 64^3 and a constant B that fills the L2 (1 MiB) to oneDNN; a constant B of
        // >= 256 KiB with <= 4 rows goes to the packed GEMV first.
        std::vector<std::string> expect =
            m * n * k > 64 * 64 * 64 || (b_const && k * n * 4 > 512 * 1024)
                ? std::vector<std::string>{"matmul_onednn", "matmul_ref"}
                : std::vector<std::string>{"matmul_xsmm", "matmul_onednn", "matmul_ref"};
        if (b_const && k * n * 4 >= 256 * 1024) expect.insert(expect.begin(), "matmul_gemv");
        CHECK(names == expect);
      }
    }
  }
}

TEST_CASE("MatMul kernel selection follows the measured xsmm/oneDNN boundary", "[ops][gemm]") {
  // Small: LIBXSMM, whatever B is.
  CHECK(selected("MatMul", {}, {rnd({1, 64}, 1), rnd({64, 256}, 2)}, {false, false}) ==
        "matmul_xsmm");
  CHECK(selected("MatMul", {}, {rnd({1, 64}, 1), rnd({64, 256}, 2)}, {false, true}) ==
        "matmul_xsmm");
  CHECK(selected("MatMul", {}, {rnd({1, 64}, 1), rnd({64, 256}, 2)}, {false, true}, 2) ==
        "matmul_xsmm");
  // [1,256]x[256,1024]: a constant B of 1 MiB streams fastest through the packed GEMV (oneDNN
  // with packed B next); a changing B is LIBXSMM's.
  CHECK(selected("MatMul", {}, {rnd({1, 256}, 1), rnd({256, 1024}, 2)}, {false, true}) ==
        "matmul_gemv");
  CHECK(selected("MatMul", {}, {rnd({5, 256}, 1), rnd({256, 1024}, 2)}, {false, true}) ==
        "matmul_onednn");
  CHECK(selected("MatMul", {}, {rnd({1, 256}, 1), rnd({256, 1024}, 2)}, {false, false}) ==
        "matmul_xsmm");
  // Large or batched: oneDNN.
  CHECK(selected("MatMul", {}, {rnd({96, 128}, 1), rnd({128, 96}, 2)}, {false, false}) ==
        "matmul_onednn");
  CHECK(selected("MatMul", {}, {rnd({2, 3, 4}, 1), rnd({4, 5}, 2)}, {false, false}) ==
        "matmul_onednn");
}

TEST_CASE("Gemm matches the ONNX definition: alpha, beta, transposes, C broadcasts",
          "[ops][gemm]") {
  std::mt19937 rng(99);
  const int64_t sizes[] = {1, 3, 4, 16, 19};
  auto pick = [&] { return sizes[rng() % 5]; };
  const double alphas[] = {1.0, 0.5, -2.0};
  const double betas[] = {1.0, 0.0, 0.25, -1.5};
  int seed = 0;
  std::set<std::string> used;
  for (int c = 0; c < 40; ++c) {
    const int64_t m = pick(), n = pick(), k = pick();
    const bool ta = rng() % 2, tb = rng() % 2;
    const double alpha = alphas[rng() % 3], beta = betas[rng() % 4];
    // C: absent, scalar, [1], [N], [1,N], [M,1], [1,1], [M,N].
    const int c_kind = static_cast<int>(rng() % 8);
    const Shape c_shapes[] = {{}, {}, {1}, {n}, {1, n}, {m, 1}, {1, 1}, {m, n}};
    Tensor a = rnd(ta ? Shape{k, m} : Shape{m, k}, 500 + seed);
    Tensor b = rnd(tb ? Shape{n, k} : Shape{k, n}, 600 + seed);
    Tensor cc = rnd(c_shapes[c_kind], 700 + seed);
    ++seed;
    std::vector<Tensor> inputs = {a, b};
    if (c_kind != 0) inputs.push_back(cc);
    const bool b_const = rng() % 2, c_const = rng() % 2;
    const Tensor ref = test::gemm_ref(a, b, c_kind ? &cc : nullptr, alpha, beta, ta, tb);
    INFO("M " << m << " N " << n << " K " << k << " transA " << ta << " transB " << tb << " alpha "
              << alpha << " beta " << beta << " C " << (c_kind ? cc.desc().to_string() : "none")
              << " const B " << b_const << " const C " << c_const);
    for (const std::string& name :
         check_every_kernel("Gemm", gemm_attrs(alpha, beta, ta, tb), inputs,
                            {false, b_const, c_const}, ref, tolerance(k)))
      used.insert(name);
  }
  CHECK(used == std::set<std::string>{"gemm_xsmm", "gemm_onednn", "gemm_ref"});
}

TEST_CASE("Few rows times a large constant B: the packed GEMV kernel against the definition",
          "[ops][gemm]") {
  // M = 1..4 rows, B of >= 256 KiB; N not a multiple of the 64-column panels, odd K; Gemm's
  // alpha (folded into the packed B), beta with every C broadcast, transB, transA at M = 1.
  std::mt19937 rng(7);
  const double alphas[] = {1.0, 0.5, -2.0};
  const double betas[] = {1.0, 0.0, 0.25};
  int seed = 0;
  for (int64_t m : {1, 2, 3, 4}) {
    for (auto [k, n] : {std::pair<int64_t, int64_t>{257, 300}, {1024, 1000}, {128, 577}}) {
      // MatMul.
      Tensor a = rnd({m, k}, 900 + seed), b = rnd({k, n}, 950 + seed);
      ++seed;
      auto names = check_every_kernel("MatMul", {}, {a, b}, {false, true}, test::matmul_ref(a, b),
                                      tolerance(k));
      CHECK(names.front() == "matmul_gemv");
      // Gemm.
      const bool ta = m == 1 && rng() % 2, tb = rng() % 2;
      const double alpha = alphas[rng() % 3], beta = betas[rng() % 3];
      const int c_kind = static_cast<int>(rng() % 6);
      const Shape c_shapes[] = {{}, {n}, {1, n}, {m, 1}, {1, 1}, {m, n}};
      Tensor ga = rnd(ta ? Shape{k, m} : Shape{m, k}, 1000 + seed);
      Tensor gb = rnd(tb ? Shape{n, k} : Shape{k, n}, 1100 + seed);
      Tensor gc = rnd(c_shapes[c_kind], 1200 + seed);
      std::vector<Tensor> inputs = {ga, gb};
      if (c_kind != 0) inputs.push_back(gc);
      INFO("M " << m << " N " << n << " K " << k << " transA " << ta << " transB " << tb
                << " alpha " << alpha << " beta " << beta << " C "
                << (c_kind ? gc.desc().to_string() : "none"));
      auto gnames = check_every_kernel(
          "Gemm", gemm_attrs(alpha, beta, ta, tb), inputs, {false, true, rng() % 2 == 0},
          test::gemm_ref(ga, gb, c_kind ? &gc : nullptr, alpha, beta, ta, tb), tolerance(k));
      CHECK(gnames.front() == "gemm_gemv");
    }
  }
  // Declined: a B that changes every run, more than 4 rows, transA with 2 rows.
  Tensor a = rnd({1, 512}, 1), b = rnd({512, 512}, 2);
  CHECK(selected("MatMul", {}, {a, b}, {false, false}) != "matmul_gemv");
  CHECK(selected("MatMul", {}, {rnd({5, 512}, 3), b}, {false, true}) != "matmul_gemv");
  CHECK(selected("Gemm", gemm_attrs(1, 1, 1, 0), {rnd({512, 2}, 4), b}, {false, true}) !=
        "gemm_gemv");
}

TEST_CASE("Gemm edge shapes and defaults", "[ops][gemm]") {
  // Defaults: alpha = beta = 1, no transposes.
  Tensor a = rnd({1, 5}, 1), b = rnd({5, 1}, 2), c = rnd({1}, 3);
  check_every_kernel("Gemm", {}, {a, b, c}, {}, test::gemm_ref(a, b, &c, 1, 1, false, false),
                     tolerance(5));
  // K = 1 with transposes.
  Tensor a2 = rnd({1, 6}, 4), b2 = rnd({7, 1}, 5), c2 = rnd({6, 7}, 6);
  check_every_kernel("Gemm", gemm_attrs(1, 1, 1, 1), {a2, b2, c2}, {false, true, true},
                     test::gemm_ref(a2, b2, &c2, 1, 1, true, true), tolerance(1));
  // A Linear layer as exported by PyTorch: transB = 1, bias [N], constant weights.
  Tensor x = rnd({4, 64}, 7), w = rnd({32, 64}, 8), bias = rnd({32}, 9);
  auto names = check_every_kernel("Gemm", gemm_attrs(1, 1, 0, 1), {x, w, bias}, {false, true, true},
                                  test::gemm_ref(x, w, &bias, 1, 1, false, true), tolerance(64));
  CHECK(names.front() == "gemm_xsmm");  // B transposed once at init
}

TEST_CASE("Gemm kernel selection", "[ops][gemm]") {
  Tensor a = rnd({4, 64}, 1), b = rnd({64, 256}, 2), bias = rnd({256}, 3);
  CHECK(selected("Gemm", {}, {a, b, bias}, {false, true, true}) == "gemm_xsmm");
  // LIBXSMM: alpha must be 1, and a transposed B must be constant.
  CHECK(selected("Gemm", gemm_attrs(2, 1, 0, 0), {a, b, bias}, {false, true, true}) ==
        "gemm_onednn");
  Tensor bt = rnd({256, 64}, 4);
  CHECK(selected("Gemm", gemm_attrs(1, 1, 0, 1), {a, bt, bias}, {false, false, false}) ==
        "gemm_onednn");
  CHECK(selected("Gemm", gemm_attrs(1, 1, 0, 1), {a, bt, bias}, {false, true, false}) ==
        "gemm_xsmm");
  // oneDNN needs a scaled copy of C for beta/alpha != 1, so only for a constant C.
  Tensor big_a = rnd({128, 128}, 5), big_b = rnd({128, 128}, 6), big_c = rnd({128}, 7);
  CHECK(selected("Gemm", gemm_attrs(1, 0.5, 0, 0), {big_a, big_b, big_c}, {false, false, true}) ==
        "gemm_onednn");
  CHECK(selected("Gemm", gemm_attrs(1, 0.5, 0, 0), {big_a, big_b, big_c}, {false, false, false}) ==
        "gemm_ref");
  // oneDNN has only its reference implementation for a per-row bias [M, 1]: the fallback runs.
  Tensor col = rnd({128, 1}, 8);
  CHECK(selected("Gemm", {}, {big_a, big_b, col}, {false, false, false}) == "gemm_ref");
}

TEST_CASE("One MatMul/Gemm kernel runs on two threads at once", "[ops][gemm]") {
  struct Case {
    std::string op;
    graph::Attributes attrs;
    std::vector<Tensor> in;
    std::vector<bool> konst;
  };
  Tensor a = rnd({4, 64}, 1), b = rnd({64, 256}, 2), big_b = rnd({256, 1024}, 3),
         a2 = rnd({3, 256}, 4);
  Tensor ab = rnd({2, 8, 32}, 5), bb = rnd({32, 48}, 6);
  const Case cases[] = {
      {"MatMul", {}, {a, b}, {false, true}},                     // xsmm
      {"MatMul", {}, {a2, big_b}, {false, true}},                // packed GEMV (3 rows)
      {"MatMul", {}, {rnd({8, 256}, 9), big_b}, {false, true}},  // oneDNN, packed B
      {"MatMul", {}, {ab, bb}, {false, false}},                  // oneDNN, batched
      {"Gemm",
       gemm_attrs(0.5, 0.5, 0, 0),
       {big_b, rnd({1024, 8}, 7), rnd({256, 1}, 8)},
       {false, false, false}},  // ref
  };
  const std::string expect_kernel[] = {"matmul_xsmm", "matmul_gemv", "matmul_onednn",
                                       "matmul_onednn", "gemm_ref"};
  for (int i = 0; i < 5; ++i) {
    const Case& c = cases[i];
    const Tensor ref = c.op == "MatMul"
                           ? test::matmul_ref(c.in[0], c.in[1])
                           : test::gemm_ref(c.in[0], c.in[1], &c.in[2], 0.5, 0.5, false, false);
    for (int threads : {1, 2}) {
      auto r = test::run_concurrently(c.op, c.attrs, c.in, threads, c.konst, 20);
      REQUIRE(r.is_ok());
      INFO(r->kernel << " team of " << threads);
      CHECK(r->kernel == expect_kernel[i]);
      const int64_t k = c.in[0].shape().back();
      CHECK(test::max_rel_error(r->first[0], ref) <= tolerance(k));
      CHECK(test::max_rel_error(r->second[0], ref) <= tolerance(k));
    }
  }
}

TEST_CASE("MatMul shape errors name both shapes", "[ops][gemm][errors]") {
  CHECK_THAT(
      error_of("MatMul", {}, {rnd({2, 3}, 1), rnd({4, 5}, 2)}),
      Catch::Contains(
          "node 'node' (MatMul): inner dimensions differ: A is float32[2, 3], B is float32[4, 5]"));
  CHECK_THAT(
      error_of("MatMul", {}, {rnd({2, 3, 4}, 1), rnd({5, 4, 6}, 2)}),
      Catch::Contains(
          "batch dimensions do not broadcast: A is float32[2, 3, 4], B is float32[5, 4, 6]"));
  CHECK_THAT(
      error_of("MatMul", {}, {rnd({}, 1), rnd({4, 5}, 2)}),
      Catch::Contains("MatMul operands must have rank >= 1: A is float32[], B is float32[4, 5]"));
  Tensor ints = test::random_tensor(TensorDesc{DType::kI32, {2, 3}}, 1, 0, 5);
  CHECK_THAT(error_of("MatMul", {}, {ints, rnd({3, 5}, 2)}),
             Catch::Contains("input A must be float32, got int32[2, 3]"));
  CHECK_THAT(error_of("MatMul", {}, {rnd({2, 3}, 1)}),
             Catch::Contains("MatMul takes exactly 2 inputs (A, B), got 1"));
}

TEST_CASE("Gemm shape and attribute errors", "[ops][gemm][errors]") {
  CHECK_THAT(
      error_of("Gemm", gemm_attrs(1, 1, 1, 0), {rnd({2, 3}, 1), rnd({3, 5}, 2)}),
      Catch::Contains(
          "inner dimensions differ: A is float32[2, 3] (transA=1), B is float32[3, 5] (transB=0)"));
  CHECK_THAT(error_of("Gemm", {}, {rnd({2, 2, 3}, 1), rnd({3, 5}, 2)}),
             Catch::Contains("input A must be 2-D, got float32[2, 2, 3]"));
  CHECK_THAT(error_of("Gemm", {}, {rnd({2, 3}, 1), rnd({3}, 2)}),
             Catch::Contains("input B must be 2-D, got float32[3]"));
  CHECK_THAT(error_of("Gemm", gemm_attrs(1, 1, 2, 0), {rnd({2, 3}, 1), rnd({3, 5}, 2)}),
             Catch::Contains("attribute 'transA' must be 0 or 1, got 2"));
  CHECK_THAT(error_of("Gemm", {}, {rnd({2, 3}, 1), rnd({3, 5}, 2), rnd({2}, 3)}),
             Catch::Contains("input C float32[2] does not broadcast to [M, N] = [2, 5]"));
  CHECK_THAT(error_of("Gemm", {}, {rnd({2, 3}, 1), rnd({3, 5}, 2), rnd({1, 2, 5}, 3)}),
             Catch::Contains(
                 "input C float32[1, 2, 5] does not broadcast to [M, N] = [2, 5] (rank above 2)"));
  graph::Attributes bad;
  bad.set("alpha", std::string("big"));
  CHECK_THAT(error_of("Gemm", bad, {rnd({2, 3}, 1), rnd({3, 5}, 2)}),
             Catch::Contains("attribute 'alpha' must be a float, got string"));
}

TEST_CASE("MatMul and Gemm cost hints: 2*M*N*K flops, bytes read and written", "[ops][gemm]") {
  const ops::Registry& reg = ops::Registry::get();
  TensorDesc a{DType::kF32, {2, 3, 4}}, b{DType::kF32, {4, 5}}, y{DType::kF32, {2, 3, 5}};
  graph::Node mm{"MatMul", "mm", {}, {}, {}};
  const TensorDesc* mm_in[] = {&a, &b};
  const TensorDesc* mm_out[] = {&y};
  ops::CostHint c = reg.cost(mm, mm_in, mm_out);
  CHECK(c.flops == 2.0 * 2 * 3 * 5 * 4);
  CHECK(c.bytes == 4.0 * (24 + 20 + 30));
  // Gemm with transA: K is A's first dim; the C term adds 2 flops per output.
  TensorDesc ga{DType::kF32, {7, 3}}, gb{DType::kF32, {7, 5}}, gc{DType::kF32, {5}},
      gy{DType::kF32, {3, 5}};
  graph::Node gemm{"Gemm", "g", gemm_attrs(1, 1, 1, 0), {}, {}};
  const TensorDesc* g_in[] = {&ga, &gb, &gc};
  const TensorDesc* g_out[] = {&gy};
  c = reg.cost(gemm, g_in, g_out);
  CHECK(c.flops == 2.0 * 3 * 5 * 7 + 2.0 * 15);
  CHECK(c.bytes == 4.0 * (21 + 35 + 5 + 15));
}

TEST_CASE("MatMul and Gemm match ONNX's own backend node tests", "[ops][gemm][onnx]") {
  auto cases = test::load_onnx_node_cases(
      {"test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta",
       "test_gemm_default_matrix_bias", "test_gemm_default_no_bias",
       "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
       "test_gemm_default_vector_bias", "test_gemm_default_zero_bias", "test_gemm_transposeA",
       "test_gemm_transposeB", "test_matmul_2d", "test_matmul_3d", "test_matmul_4d"});
  if (!cases.is_ok()) {
    WARN("skipped: " << cases.status().message());
    return;
  }
  for (const test::OnnxNodeCase& c : *cases) {
    INFO(c.name);
    REQUIRE(c.outputs.size() == 1);
    for (bool weights_const : {false, true})
      check_every_kernel(c.op, c.attrs, c.inputs, {false, weights_const, weights_const},
                         c.outputs[0], 1e-5);
  }
}

// MatMulBias (graph/passes/matmul_epilogue.h): act(A W + b) on both kernels (oneDNN's matmul
// with post-ops, the reference loops) against double sums and the activations written out;
// malformed nodes name what is wrong.
TEST_CASE("MatMulBias: A [..., K] x W + bias, then the activation, on every kernel",
          "[ops][gemm]") {
  const Tensor a = rnd({3, 7, 40}, 901), w = rnd({40, 24}, 902), bias = rnd({24}, 903);
  for (const char* act : {"", "Relu", "Gelu", "GeluTanh"}) {
    INFO("activation '" << act << "'");
    Tensor ref(TensorDesc{DType::kF32, {3, 7, 24}});
    for (int64_t i = 0; i < 21; ++i)
      for (int64_t j = 0; j < 24; ++j) {
        double v = bias.data_as<float>()[j];
        for (int64_t k = 0; k < 40; ++k)
          v += double{a.data_as<float>()[i * 40 + k]} * w.data_as<float>()[k * 24 + j];
        const std::string s = act;
        if (s == "Relu") v = std::max(v, 0.0);
        if (s == "Gelu") v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        if (s == "GeluTanh")
          v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        ref.data_as<float>()[i * 24 + j] = static_cast<float>(v);
      }
    graph::Attributes attrs;
    if (*act) attrs.set("activation", std::string(act));
    auto names = check_every_kernel("MatMulBias", attrs, {a, w, bias}, {false, true, true}, ref,
                                    tolerance(40));
    CHECK(names == std::vector<std::string>{"matmul_bias_onednn", "matmul_bias_ref"});
  }
  CHECK_THAT(error_of("MatMulBias", {}, {a, w}), Catch::Contains("takes exactly 3 inputs"));
  CHECK_THAT(error_of("MatMulBias", {}, {a, rnd({24, 40}, 904), bias}),
             Catch::Contains("W [K, N] and bias [N], got A float32[3, 7, 40], W float32[24, 40]"));
  CHECK_THAT(error_of("MatMulBias", {}, {a, w, rnd({1, 24}, 905)}),
             Catch::Contains("bias float32[1, 24]"));
  graph::Attributes bad;
  bad.set("activation", std::string("Softmax"));
  CHECK_THAT(error_of("MatMulBias", bad, {a, w, bias}),
             Catch::Contains("attribute 'activation' = 'Softmax' is not supported"));
}
