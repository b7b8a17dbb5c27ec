// matmul_epilogue: MatMul by a constant + bias Add (+ a column scale Mul, + Relu / Gelu) ->
// MatMulBias, only where every fused value has that one reader and the constants broadcast over
// the last dim; outputs against the unfused graph and a naive reference (double sums, then the
// bias, the scale and the activation written out).
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/passes/matmul_epilogue.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

TEST_CASE("matmul_epilogue: Linear layers on 3-D inputs become MatMulBias, others stay",
          "[passes][matmul]") {
  // x [2, 40, 64] -> fc1 (64 -> 96) + bias, * gamma, exact Gelu -> fc2 (96 -> 64) + bias, Relu;
  // then what must stay: a bias varying along dim 1 ([40, 1]), a product read twice, one of
  // 4 rows (graphi's GEMV), a bias Add that is a graph output but whose MatMul is not.
  graph::GraphBuilder b("<matmul epilogue>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 40, 64}});
  b.add_input("v", TensorDesc{DType::kF32, {4, 64}});
  uint64_t seed = 30;
  auto constant = [&](const std::string& name, Shape shape) {
    Tensor t = test::random_tensor(TensorDesc{DType::kF32, std::move(shape)}, ++seed, -0.5, 0.5);
    b.add_constant(name, t);
    return t;
  };
  const Tensor w1 = constant("w1", {64, 96}), b1 = constant("b1", {96});
  const Tensor gamma = constant("gamma", {1, 1, 96});
  const Tensor w2 = constant("w2", {96, 64}), b2 = constant("b2", {1, 64});
  constant("w3", {64, 64});
  constant("rowbias", {40, 1});
  b.add_node("MatMul", "fc1", {"x", "w1"}, {"h"});
  b.add_node("Add", "fc1_bias", {"b1", "h"}, {"hb"});  // bias first
  b.add_node("Mul", "scale", {"hb", "gamma"}, {"hs"});
  b.add_node("Gelu", "act", {"hs"}, {"g"});
  b.add_node("MatMul", "fc2", {"g", "w2"}, {"y"});
  b.add_node("Add", "fc2_bias", {"y", "b2"}, {"yb"});
  b.add_node("Relu", "relu", {"yb"}, {"out1"});
  b.add_node("MatMul", "rows", {"out1", "w3"}, {"r"});
  b.add_node("Add", "row_bias", {"r", "rowbias"}, {"out2"});  // not over the last dim
  b.add_node("MatMul", "twice", {"out1", "w3"}, {"t"});
  b.add_node("Add", "t_bias", {"t", "b2"}, {"tb"});
  b.add_node("Mul", "t_sq", {"tb", "t"}, {"out3"});  // t read twice
  b.add_node("MatMul", "gemv", {"v", "w3"}, {"u"});
  b.add_node("Add", "u_bias", {"u", "b2"}, {"out4"});  // 4 rows
  b.add_output("out1");
  b.add_output("out2");
  b.add_output("out3");
  b.add_output("out4");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

  auto r = value_or_throw(graph::passes::fuse_matmul_epilogues(g, ops::Registry::get()));
  CHECK(r.fused == 2);
  CHECK(r.scales == 1);
  CHECK(r.activations == 2);
  CHECK(test::count_op(r.graph, "MatMulBias") == 2);
  CHECK(test::count_op(r.graph, "MatMul") == 3);
  CHECK(test::count_op(r.graph, "Gelu") == 0);
  CHECK(test::count_op(r.graph, "Relu") == 0);
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);

  // out1 against the naive reference.
  const engine::NamedTensors in = test::random_inputs(g, 5);
  const engine::NamedTensors out = test::run_graph(r.graph, in, 2);
  const float* x = in[0].second.data_as<float>();
  std::vector<double> h(2 * 40 * 96);
  for (int64_t i = 0; i < 80; ++i)
    for (int64_t j = 0; j < 96; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < 64; ++k)
        acc += double{x[i * 64 + k]} * w1.data_as<float>()[k * 96 + j];
      const double v = (acc + b1.data_as<float>()[j]) * gamma.data_as<float>()[j];
      h[static_cast<size_t>(i * 96 + j)] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    }
  double max_err = 0, max_ref = 0;
  REQUIRE(out[0].first == "out1");
  for (int64_t i = 0; i < 80; ++i)
    for (int64_t j = 0; j < 64; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < 96; ++k)
        acc += h[static_cast<size_t>(i * 96 + k)] * w2.data_as<float>()[k * 64 + j];
      const double ref = std::max(0.0, acc + b2.data_as<float>()[j]);
      max_err = std::max(max_err, std::abs(out[0].second.data_as<float>()[i * 64 + j] - ref));
      max_ref = std::max(max_ref, std::abs(ref));
    }
  CHECK(max_err <= 1e-5 * max_ref);

  // In the default pipeline, and switched off there.
  auto on = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(on.matmul_epilogues == 2);
  CHECK(on.summary().find("fused 2 MatMul + bias Adds into MatMulBias (1 with a column scale, 2 "
                          "with the activation after)") != std::string::npos);
  graph::passes::PipelineOptions off;
  off.matmul_epilogue = false;
  auto no = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), off));
  CHECK(test::count_op(no.graph, "MatMulBias") == 0);
}
