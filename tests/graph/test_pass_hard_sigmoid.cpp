// hard_sigmoid_fusion: clip(x + c, 0, h) / h (Keras' hard_sigmoid, tf2onnx's Add, Clip, Mul or
// Div) becomes HardSigmoid(x; 1/h, c/h); against the formula evaluated here, and through the
// pipeline, where x * HardSigmoid(x) after a conv becomes the conv's HardSwish post-op.
#include <algorithm>
#include <catch2/catch.hpp>

#include "graph/passes/hard_sigmoid_fusion.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

TEST_CASE("hard_sigmoid_fusion: Keras' relu6(x + 3) / 6 becomes HardSigmoid", "[passes]") {
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {2, 3, 5}});
  const std::string mul = nb.node(
      "Mul",
      {nb.node("Clip", {nb.node("Add", {"x", nb.scalar(3.0f)}), nb.scalar(0.0f), nb.scalar(6.0f)}),
       nb.scalar(1.0f / 6.0f)});
  const std::string div = nb.node(
      "Div",
      {nb.node("Clip", {nb.node("Add", {nb.scalar(0.5f), "x"}), nb.scalar(0.0f), nb.scalar(2.0f)}),
       nb.scalar(2.0f)});
  // Not a hard sigmoid: the clip's lower bound is not 0, or the scale is not 1/h.
  const std::string other = nb.node(
      "Mul",
      {nb.node("Clip", {nb.node("Add", {"x", nb.scalar(3.0f)}), nb.scalar(-1.0f), nb.scalar(6.0f)}),
       nb.scalar(1.0f / 6.0f)});
  const std::string scaled = nb.node(
      "Mul",
      {nb.node("Clip", {nb.node("Add", {"x", nb.scalar(3.0f)}), nb.scalar(0.0f), nb.scalar(6.0f)}),
       nb.scalar(0.2f)});
  for (const std::string& o : {mul, div, other, scaled}) nb.b.add_output(o);
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::fuse_hard_sigmoid(g, ops::Registry::get()));
  CHECK(r.fused == 2);
  CHECK(test::count_op(r.graph, "HardSigmoid") == 2);
  CHECK(test::count_op(r.graph, "Clip") == 2);

  const engine::NamedTensors in = test::random_inputs(g, 3);
  const engine::NamedTensors out = test::run_graph(r.graph, in, 1);
  const float* x = in[0].second.data_as<float>();
  for (int64_t i = 0; i < in[0].second.numel(); ++i) {
    CHECK(out[0].second.data_as<float>()[i] ==
          Approx(std::clamp(x[i] + 3.0f, 0.0f, 6.0f) / 6.0f).margin(1e-6));
    CHECK(out[1].second.data_as<float>()[i] ==
          Approx(std::clamp(x[i] + 0.5f, 0.0f, 2.0f) / 2.0f).margin(1e-6));
  }
  test::check_same_outputs(g, r.graph, 1, 1e-6);
}

TEST_CASE("hard_sigmoid_fusion: a conv's Keras hard_swish becomes its HardSwish post-op",
          "[passes][conv]") {
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {1, 8, 6, 6}});
  const std::string y = nb.node("Conv", {"x", nb.weight({16, 8, 3, 3}, 2.0), nb.weight({16})},
                                test::conv_window(3, 1, 1));
  const std::string gate = nb.node(
      "Mul",
      {nb.node("Clip", {nb.node("Add", {y, nb.scalar(3.0f)}), nb.scalar(0.0f), nb.scalar(6.0f)}),
       nb.scalar(1.0f / 6.0f)});
  nb.b.add_output(nb.node("Mul", {y, gate}));
  const graph::Graph g = value_or_throw(nb.finish());
  auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(p.hard_sigmoids_fused == 1);
  CHECK(test::count_op(p.graph, "Mul") == 0);
  CHECK(test::count_op(p.graph, "HardSigmoid") == 0);  // in the conv's post-op
  test::check_same_outputs(g, p.graph, 2, 1e-5);
}
