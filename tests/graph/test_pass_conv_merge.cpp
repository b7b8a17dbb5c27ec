// conv_merge: convolutions sharing an input (same attributes and kernel, group 1, constant
// weights, at most 32 output channels) become one wide convolution + a channel Split, with the
// identical channel-wise ops after them merged too; the outputs equal the original graph's
// (within 1e-5) on its own and in the default pipeline (FusedConv, blocked layout: the Split
// then runs on whole channel blocks), batch 1 and 3, teams of 1 and 2.
#include <catch2/catch.hpp>

#include "graph/passes/conv_merge.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

namespace {

// Group A: four 3x3 16-filter convs of x, each + Relu + 2x2 max-pool, summed (PathNet's layer):
// merged with the Relu and the pool, the Split + Adds one SplitSum. With `tree`, the sum is
// (a0 + a1) + (a2 + a3) and a1's pool is also a graph output (so the parts stay a Split + Adds).
// Group B: two 1x1 16-filter convs of x (one without a bias) followed by different ops
// (Sigmoid, Tanh): merged, nothing after them. Not merged: a stride-2 3x3 conv of x, a
// 48-filter 3x3 conv of x, a 3x3 conv of another input.
graph::Graph siblings_graph(int64_t batch, bool tree = false, bool part_out = false) {
  graph::GraphBuilder b("<conv merge test>");
  uint64_t seed = 500;
  auto conv = [&](const std::string& name, const std::string& in, int64_t cin, int64_t cout,
                  int64_t k, int64_t stride, bool bias) {
    b.add_constant(name + ".w", test::random_tensor(TensorDesc{DType::kF32, {cout, cin, k, k}},
                                                    seed++, -0.3, 0.3));
    std::vector<std::string> ins = {in, name + ".w"};
    if (bias) {
      b.add_constant(name + ".b", test::random_tensor(TensorDesc{DType::kF32, {cout}}, seed++));
      ins.push_back(name + ".b");
    }
    b.add_node("Conv", name, ins, {name}, test::conv_window(k, stride, k / 2));
  };
  b.add_input("x", TensorDesc{DType::kF32, {batch, 16, 12, 12}});
  b.add_input("x2", TensorDesc{DType::kF32, {batch, 16, 12, 12}});
  std::vector<std::string> pools;
  for (int m = 0; m < 4; ++m) {
    const std::string p = "a" + std::to_string(m);
    conv(p, "x", 16, 16, 3, 1, true);
    b.add_node("Relu", p + ".relu", {p}, {p + ".relu"});
    b.add_node("MaxPool", p + ".pool", {p + ".relu"}, {p + ".pool"}, test::conv_window(2, 2, 0));
    pools.push_back(p + ".pool");
  }
  if (tree) {
    b.add_node("Add", "s01", {pools[0], pools[1]}, {"s01"});
    b.add_node("Add", "s23", {pools[3], pools[2]}, {"s23"});
    b.add_node("Add", "sum", {"s01", "s23"}, {"sum"});
  } else {
    std::string acc = pools[0];
    for (int m = 1; m < 4; ++m) {
      const std::string s = m == 3 ? "sum" : "s" + std::to_string(m);
      b.add_node("Add", s, {acc, pools[m]}, {s});
      acc = s;
    }
  }
  b.add_output("sum");
  if (part_out) b.add_output(pools[1]);
  conv("b0", "x", 16, 16, 1, 1, true);
  conv("b1", "x", 16, 16, 1, 1, false);
  b.add_node("Sigmoid", "b0.sig", {"b0"}, {"b0.sig"});
  b.add_node("Tanh", "b1.tanh", {"b1"}, {"b1.tanh"});
  b.add_output("b0.sig");
  b.add_output("b1.tanh");
  conv("c0", "x", 16, 16, 3, 2, true);
  conv("c1", "x", 16, 48, 3, 1, true);
  conv("c2", "x2", 16, 16, 3, 1, true);
  for (const char* o : {"c0", "c1", "c2"}) b.add_output(o);
  return value_or_throw(b.finish(ops::Registry::get()));
}

}  // namespace

TEST_CASE("conv_merge: sibling convolutions merge, the per-branch chain follows, outputs equal",
          "[passes][conv]") {
  for (int64_t batch : {1, 3}) {
    INFO("batch " << batch);
    const graph::Graph g = siblings_graph(batch);
    auto r = value_or_throw(graph::passes::merge_sibling_convs(g, ops::Registry::get()));
    CHECK(r.groups == 2);
    CHECK(r.members == 6);
    CHECK(r.sunk == 2);  // group A's Relu and MaxPool
    // Two merged convs plus the three that stay; one Relu, one MaxPool; a Split per group.
    CHECK(test::count_op(r.graph, "Conv") == 5);
    CHECK(test::count_op(r.graph, "Relu") == 1);
    CHECK(test::count_op(r.graph, "MaxPool") == 1);
    CHECK(r.summed == 1);  // group A's parts: one SplitSum, no Adds left
    CHECK(test::count_op(r.graph, "SplitSum") == 1);
    CHECK(test::count_op(r.graph, "Split") == 1);
    CHECK(test::count_op(r.graph, "Add") == 0);
    bool wide = false;
    for (const graph::Node& n : r.graph.nodes())
      if (n.op == "Conv") wide = wide || r.graph.value(n.outputs[0]).desc.shape[1] == 64;
    CHECK(wide);  // group A: 4 x 16 output channels
    for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);

    // The default pipeline: Conv + activation fused first (group A's members are FusedConvs with
    // Relu; group B's become FusedConvs with Sigmoid and Tanh, different attributes, so they no
    // longer merge), then merged, then blocked: the Splits cut whole 16-channel blocks.
    auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
    CHECK(p.conv_groups == 1);
    CHECK(test::count_op(p.graph, "BlockedMaxPool") == 1);
    CHECK(test::count_op(p.graph, "SplitSum") == 1);
    for (const graph::Node& n : p.graph.nodes())
      if (n.op == "Split" || n.op == "SplitSum") {
        INFO(n.name);
        CHECK(p.graph.value(n.inputs[0]).desc.rank() == 5);
      }
    for (int threads : {1, 2}) test::check_same_outputs(g, p.graph, threads, 1e-5);
  }
}

TEST_CASE("conv_merge: a sum in another association is a SplitSum, a part read elsewhere is not",
          "[passes][conv]") {
  for (int64_t batch : {1, 3}) {
    INFO("batch " << batch);
    const graph::Graph tree = siblings_graph(batch, true, false);
    auto r = value_or_throw(graph::passes::merge_sibling_convs(tree, ops::Registry::get()));
    CHECK(r.summed == 1);
    CHECK(test::count_op(r.graph, "Add") == 0);
    for (int threads : {1, 2}) test::check_same_outputs(tree, r.graph, threads, 1e-5);
    auto p = value_or_throw(graph::passes::run_passes(tree, ops::Registry::get()));
    for (int threads : {1, 2}) test::check_same_outputs(tree, p.graph, threads, 1e-5);

    const graph::Graph shared = siblings_graph(batch, false, true);
    auto q = value_or_throw(graph::passes::merge_sibling_convs(shared, ops::Registry::get()));
    CHECK(q.groups == 2);
    CHECK(q.summed == 0);
    CHECK(test::count_op(q.graph, "Split") == 2);
    CHECK(test::count_op(q.graph, "Add") == 3);
    for (int threads : {1, 2}) test::check_same_outputs(shared, q.graph, threads, 1e-5);
  }
}

TEST_CASE("conv_merge: nothing to merge leaves the graph as it is", "[passes][conv]") {
  graph::GraphBuilder b("<single conv>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 4, 6, 6}});
  b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {8, 4, 3, 3}}, 3));
  b.add_constant("w2", test::random_tensor(TensorDesc{DType::kF32, {8, 4, 1, 1}}, 4));
  b.add_node("Conv", "c", {"x", "w"}, {"y"}, test::conv_window(3, 1, 1));
  b.add_node("Conv", "c2", {"x", "w2"}, {"y2"},
             test::conv_window(1, 1, 0));  // another kernel shape
  b.add_output("y");
  b.add_output("y2");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::merge_sibling_convs(g, ops::Registry::get()));
  CHECK(r.groups == 0);
  CHECK(r.graph.num_nodes() == g.num_nodes());
}
