// conv_fusion: Conv + Relu -> FusedConv where the Conv's output feeds only that Relu and is not
// a graph output; everything else untouched. The fused graph's outputs equal the naive
// reference (conv2d_ref then max(0, .)) and the unfused graph's.
#include <catch2/catch.hpp>

#include "graph/passes/conv_fusion.h"
#include "tests/graph/pass_test_util.h"
#include "tests/support/reference_gemm_conv.h"

using namespace graphi;

namespace {

graph::Attributes pads1() {
  graph::Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  return a;
}

}  // namespace

TEST_CASE("conv_fusion: Conv + Relu pairs become FusedConv, others stay", "[passes][conv]") {
  graph::GraphBuilder b("<conv fusion test>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 3, 8, 8}});
  Tensor w1 = test::random_tensor(TensorDesc{DType::kF32, {4, 3, 3, 3}}, 1);
  Tensor b1 = test::random_tensor(TensorDesc{DType::kF32, {4}}, 2);
  Tensor w2 = test::random_tensor(TensorDesc{DType::kF32, {4, 4, 3, 3}}, 3);
  b.add_constant("w1", w1);
  b.add_constant("b1", b1);
  b.add_constant("w2", w2);
  b.add_node("Conv", "c1", {"x", "w1", "b1"}, {"c1"}, pads1());  // fused: only Relu reads it
  b.add_node("Relu", "r1", {"c1"}, {"r1"});
  b.add_node("Conv", "c2", {"r1", "w2"}, {"c2"}, pads1());  // read twice: not fused
  b.add_node("Relu", "r2", {"c2"}, {"r2"});
  b.add_node("Add", "s", {"r2", "c2"}, {"s"});
  b.add_node("Conv", "c3", {"r1", "w2"}, {"c3"}, pads1());  // a graph output: not fused
  b.add_node("Relu", "r3", {"c3"}, {"r3"});
  b.add_output("s");
  b.add_output("c3");
  b.add_output("r3");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

  auto r = value_or_throw(graph::passes::fuse_conv_activations(g, ops::Registry::get()));
  CHECK(r.fused == 1);
  CHECK(test::count_op(r.graph, "FusedConv") == 1);
  CHECK(test::count_op(r.graph, "Conv") == 2);
  CHECK(test::count_op(r.graph, "Relu") == 2);
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-6);

  // r1 against the naive reference: a graph whose output is the fused value.
  graph::GraphBuilder b2("<conv fusion ref>");
  b2.add_input("x", TensorDesc{DType::kF32, {2, 3, 8, 8}});
  b2.add_constant("w1", w1);
  b2.add_constant("b1", b1);
  b2.add_node("Conv", "c1", {"x", "w1", "b1"}, {"c1"}, pads1());
  b2.add_node("Relu", "r1", {"c1"}, {"r1"});
  b2.add_output("r1");
  const graph::Graph g2 = value_or_throw(b2.finish(ops::Registry::get()));
  auto f2 = value_or_throw(graph::passes::fuse_conv_activations(g2, ops::Registry::get()));
  REQUIRE(f2.fused == 1);
  const engine::NamedTensors in = test::random_inputs(g2, 11);
  const engine::NamedTensors out = test::run_graph(f2.graph, in, 1);
  test::Window2d win;
  win.pads = {1, 1, 1, 1};
  Tensor ref = test::conv2d_ref(in[0].second, w1, &b1, win, 1);
  for (int64_t i = 0; i < ref.numel(); ++i)
    ref.data_as<float>()[i] = std::max(ref.data_as<float>()[i], 0.0f);
  CHECK(test::max_rel_error(out[0].second, ref) < 1e-5);
}
