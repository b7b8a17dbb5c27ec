// conv1d_lift: the ops between 1-D convs (as the importer writes them: Reshape to [N, C, 1, L],
// a 2-D Conv, Reshape back) run on the 4-D form, without the Reshape pairs; values other ops
// read in 3-D get one Reshape back. Outputs equal the graph as written (graphi's plain
// reference executor, 1 thread) through the pass alone and through the whole pipeline, where
// the chain then stays in nChw16c.
#include <catch2/catch.hpp>

#include "graph/passes/conv1d_lift.h"
#include "graph/passes/pass_util.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

namespace {

struct Conv1dNet {
  graph::GraphBuilder b{"<conv1d lift>"};
  uint64_t seed = 300;
  int64_t n = 2, length = 40;

  // The importer's 1-D Conv: x [N, cin, L] -> Reshape -> Conv (1 x k, dilation d, `left` /
  // `right` pads) -> Reshape -> y [N, cout, L'].
  std::string conv1d(const std::string& name, const std::string& x, int64_t cin, int64_t cout,
                     int64_t k, int64_t dilation, int64_t left, int64_t right, int64_t len) {
    b.add_constant(name + "/xshape", graph::passes::i64_tensor({n, cin, 1, len}));
    b.add_node("Reshape", name + "/x2d", {x, name + "/xshape"}, {name + "/x2d"});
    b.add_constant(name + "/w", test::random_tensor(TensorDesc{DType::kF32, {cout, cin, 1, k}},
                                                    seed++, -0.4, 0.4));
    b.add_constant(name + "/b", test::random_tensor(TensorDesc{DType::kF32, {cout}}, seed++));
    graph::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{1, k});
    a.set("dilations", std::vector<int64_t>{1, dilation});
    a.set("pads", std::vector<int64_t>{0, left, 0, right});
    b.add_node("Conv", name + "/2d", {name + "/x2d", name + "/w", name + "/b"}, {name + "/y2d"}, a);
    const int64_t out = len + left + right - dilation * (k - 1);
    b.add_constant(name + "/yshape", graph::passes::i64_tensor({n, cout, out}));
    b.add_node("Reshape", name, {name + "/y2d", name + "/yshape"}, {name});
    return name;
  }
};

// A WaveNet-style stack: a causal dilated conv, a gated activation (chunk into tanh and sigmoid
// halves), a 1x1 conv, a residual Add, a per-channel bias Add, a causal Pad for the next conv;
// the softmax over channels reads one value in 3-D, the last conv's output is the graph's.
graph::Graph wavenet_like(int64_t channels) {
  Conv1dNet net;
  const int64_t c = channels, len = net.length;
  net.b.add_input("x", TensorDesc{DType::kF32, {net.n, 4, len}});
  std::string h = net.conv1d("in", "x", 4, c, 1, 1, 0, 0, len);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "l" + std::to_string(layer);
    const int64_t d = int64_t{1} << (layer + 1);
    const std::string f = net.conv1d(p + "/f", h, c, 2 * c, 2, d, d, 0, len);
    graph::Attributes split;
    split.set("axis", int64_t{1});
    split.set("num_outputs", int64_t{2});
    net.b.add_node("Split", p + "/chunk", {f}, {p + "/a", p + "/g"}, split);
    net.b.add_node("Tanh", p + "/tanh", {p + "/a"}, {p + "/ta"});
    net.b.add_node("Sigmoid", p + "/sigmoid", {p + "/g"}, {p + "/sg"});
    net.b.add_node("Mul", p + "/gate", {p + "/ta", p + "/sg"}, {p + "/z"});
    const std::string r = net.conv1d(p + "/r", p + "/z", c, c, 1, 1, 0, 0, len);
    net.b.add_node("Add", p + "/res", {h, r}, {p + "/h"});
    h = p + "/h";
  }
  net.b.add_constant("bias", test::random_tensor(TensorDesc{DType::kF32, {c, 1}}, 77));
  net.b.add_node("Add", "biased", {h, "bias"}, {"biased"});
  net.b.add_constant("pads", graph::passes::i64_tensor({0, 0, 3, 0, 0, 0}));
  net.b.add_node("Pad", "causal", {"biased", "pads"}, {"padded"});
  graph::Attributes axis1;
  axis1.set("axis", int64_t{1});
  net.b.add_node("Softmax", "probs", {"biased"}, {"probs"}, axis1);
  const std::string out = net.conv1d("out", "padded", c, 8, 4, 1, 0, 0, len + 3);
  net.b.add_output(out);
  net.b.add_output("probs");
  return value_or_throw(net.b.finish(ops::Registry::get()));
}

}  // namespace

TEST_CASE("conv1d_lift: a WaveNet-style stack runs 4-D between its convs", "[passes][conv]") {
  const graph::Graph g = wavenet_like(32);
  auto r = value_or_throw(graph::passes::lift_conv1d_chains(g, ops::Registry::get()));
  // Per layer: Split, Tanh, Sigmoid, Mul, Add; then the bias Add and the Pad.
  CHECK(r.lifted == 12);
  // 11 Reshapes before (2 per conv but the input conv's x, 1 for x); after: x's, the two
  // the graph outputs / Softmax need (out's y, biased for Softmax).
  CHECK(test::count_op(g, "Reshape") == 12);
  CHECK(test::count_op(r.graph, "Reshape") == 3);
  CHECK(r.removed == 9);
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);

  // Through the pipeline: the chain stays blocked from the first conv's output to the end.
  auto piped = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(test::count_op(piped.graph, "BlockedConv") == 6);
  CHECK(test::count_op(piped.graph, "ToBlocked") == 0);
  // Back to NCHW for the Softmax over channels and for the graph output.
  CHECK(test::count_op(piped.graph, "FromBlocked") == 2);
  for (int threads : {1, 2}) test::check_same_outputs(g, piped.graph, threads, 1e-5);

  // Without the pass, every conv sat between reorders.
  graph::passes::PipelineOptions off;
  off.conv1d_lift = false;
  auto before = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), off));
  CHECK(test::count_op(before.graph, "ToBlocked") + test::count_op(before.graph, "FromBlocked") >
        8);
}

TEST_CASE("conv1d_lift: padded channel counts and 3-D readers keep their values",
          "[passes][conv]") {
  // 20 channels: padded to 32 lanes in nChw16c, so Sigmoid (0 -> 0.5) goes back to NCHW there;
  // the lifted graph still computes the same.
  const graph::Graph g = wavenet_like(20);
  auto r = value_or_throw(graph::passes::lift_conv1d_chains(g, ops::Registry::get()));
  CHECK(r.lifted == 12);
  test::check_same_outputs(g, r.graph, 2, 1e-5);
  auto piped = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  for (int threads : {1, 2}) test::check_same_outputs(g, piped.graph, threads, 1e-5);
}

TEST_CASE("conv1d_lift: Slices (chunk as two channel ranges, a TCN's chomp) are lifted",
          "[passes][conv]") {
  // Bai et al.'s TCN block: a conv padded on both sides, the right padding's outputs cut off by
  // a Slice on the last axis (x[:, :, :-p]), then chunk(2, 1) as TorchScript writes it: two
  // Slices along the channels (axes given as -2 on one, 1 on the other).
  Conv1dNet net;
  const int64_t len = net.length, c = 32;
  net.b.add_input("x", TensorDesc{DType::kF32, {net.n, c, len}});
  const std::string f = net.conv1d("f", "x", c, 2 * c, 3, 2, 4, 4, len);  // 4 + 4 - 4: len + 4
  auto slice = [&](const std::string& name, const std::string& in, int64_t start, int64_t end,
                   int64_t axis) {
    net.b.add_constant(name + "/s", graph::passes::i64_tensor({start}));
    net.b.add_constant(name + "/e", graph::passes::i64_tensor({end}));
    net.b.add_constant(name + "/a", graph::passes::i64_tensor({axis}));
    net.b.add_node("Slice", name, {in, name + "/s", name + "/e", name + "/a"}, {name});
    return name;
  };
  const std::string chomped = slice("chomp", f, 0, -4, -1);
  const std::string a = slice("a", chomped, 0, c, 1), gate = slice("g", chomped, c, 2 * c, -2);
  net.b.add_node("Tanh", "tanh", {a}, {"ta"});
  net.b.add_node("Sigmoid", "sigmoid", {gate}, {"sg"});
  net.b.add_node("Mul", "z", {"ta", "sg"}, {"z"});
  const std::string y = net.conv1d("r", "z", c, c, 1, 1, 0, 0, len);
  net.b.add_node("Add", "res", {"x", y}, {"y"});
  net.b.add_output("y");
  const graph::Graph g = value_or_throw(net.b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::lift_conv1d_chains(g, ops::Registry::get()));
  CHECK(r.lifted == 6);  // 3 Slices, Tanh, Sigmoid, Mul (the Add reads x, which is not lifted)
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);
  auto piped = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  for (int threads : {1, 2}) test::check_same_outputs(g, piped.graph, threads, 1e-5);
}

TEST_CASE("conv1d_lift: an instance norm between convs is lifted and then fused blocked",
          "[passes][conv]") {
  // wav2vec2's feature encoder: conv, GroupNorm(C, C) (exported as InstanceNormalization + the
  // per-channel affine), GELU, the next conv.
  Conv1dNet net;
  const int64_t c = 32, len = net.length;
  net.b.add_input("x", TensorDesc{DType::kF32, {net.n, c, len}});
  const std::string h = net.conv1d("c0", "x", c, c, 5, 1, 2, 2, len);
  // Unit scale and zero bias, as PyTorch's GroupNorm export writes them.
  Tensor ones(TensorDesc{DType::kF32, {c}});
  std::fill(ones.data_as<float>(), ones.data_as<float>() + c, 1.0f);
  net.b.add_constant("ones", ones);
  net.b.add_constant("zeros", Tensor(TensorDesc{DType::kF32, {c}}));
  net.b.add_node("InstanceNormalization", "in", {h, "ones", "zeros"}, {"n"});
  net.b.add_constant("gamma", test::random_tensor(TensorDesc{DType::kF32, {c, 1}}, 31, 0.5, 1.5));
  net.b.add_constant("beta", test::random_tensor(TensorDesc{DType::kF32, {c, 1}}, 32));
  net.b.add_node("Mul", "scale", {"n", "gamma"}, {"s"});
  net.b.add_node("Add", "shift", {"s", "beta"}, {"t"});
  net.b.add_node("Gelu", "gelu", {"t"}, {"a"});
  const std::string y = net.conv1d("c1", "a", c, c, 3, 1, 1, 1, len);
  net.b.add_output(y);
  const graph::Graph g = value_or_throw(net.b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::lift_conv1d_chains(g, ops::Registry::get()));
  CHECK(r.lifted == 4);
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);
  auto piped = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(test::count_op(piped.graph, "GroupNorm") == 1);
  CHECK(test::count_op(piped.graph, "ToBlocked") == 1);  // x, a graph input of 32 channels
  CHECK(test::count_op(piped.graph, "FromBlocked") == 1);
  for (int threads : {1, 2}) test::check_same_outputs(g, piped.graph, threads, 1e-4);
}

TEST_CASE("conv1d_lift: nothing changes without a pair of Reshapes to remove", "[passes][conv]") {
  // One conv whose output goes to a graph output through an op on the last axis only.
  Conv1dNet net;
  net.b.add_input("x", TensorDesc{DType::kF32, {net.n, 4, net.length}});
  const std::string y = net.conv1d("c", "x", 4, 16, 3, 1, 1, 1, net.length);
  net.b.add_node("Relu", "relu", {y}, {"r"});
  graph::Attributes last;
  last.set("axis", int64_t{-1});
  net.b.add_node("Softmax", "sm", {"r"}, {"sm"}, last);
  net.b.add_output("sm");
  const graph::Graph g = value_or_throw(net.b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::lift_conv1d_chains(g, ops::Registry::get()));
  CHECK(r.lifted == 0);
  CHECK(r.removed == 0);
  CHECK(r.graph.num_nodes() == g.num_nodes());
}
