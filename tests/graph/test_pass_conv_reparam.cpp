// conv_reparam: summed convolutions of one input, the input itself and per-channel constants
// become one Conv (RepVGG / MobileOne / ACNet in their training form). Every rewritten graph is
// checked against the sum of the branches computed by the naive reference convolution
// (conv2d_ref) and a plain loop for the identity and constants, through the pass alone and
// through the whole pipeline.
#include <catch2/catch.hpp>

#include "graph/passes/conv_reparam.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"
#include "tests/support/reference_gemm_conv.h"

using namespace graphi;

namespace {

struct Branch {
  int64_t kh = 3, kw = 3;
  std::array<int64_t, 4> pads{1, 1, 1, 1};  // top, left, bottom, right
  bool bias = true;
  bool scaled = false;  // through a per-channel Mul (an unfolded BatchNormalization)
};

struct Block {
  std::string name;
  int64_t c = 8, m = 8, group = 1, h = 9, w = 9, stride = 1;
  std::vector<Branch> convs{};
  bool identity = false;     // + x * s + t (a BatchNormalization of the input)
  bool constant = false;     // + a per-channel constant [m, 1, 1]
  bool other_input = false;  // + z, a second graph input (stays an Add)
  bool relu = true;
  int want_merged = 1, want_branches = 0;  // the pass's verdict
};

Tensor per_channel_tensor(int64_t m, uint64_t seed) {
  return test::random_tensor(TensorDesc{DType::kF32, {m, 1, 1}}, seed, 0.5, 1.5);
}

// The block as PyTorch exports it and its reference output.
void check_block(const Block& k, uint64_t seed) {
  INFO(k.name);
  graph::GraphBuilder b("<conv reparam>");
  b.add_input("x", TensorDesc{DType::kF32, {1, k.c, k.h, k.w}});
  const int64_t ho = (k.h + 2 * 1 - 3) / k.stride + 1, wo = (k.w + 2 * 1 - 3) / k.stride + 1;
  if (k.other_input) b.add_input("z", TensorDesc{DType::kF32, {1, k.m, ho, wo}});
  std::vector<std::string> parts;
  std::vector<Tensor> ws, bs, ss;
  for (size_t i = 0; i < k.convs.size(); ++i) {
    const Branch& br = k.convs[i];
    const std::string id = std::to_string(i);
    ws.push_back(test::random_tensor(TensorDesc{DType::kF32, {k.m, k.c / k.group, br.kh, br.kw}},
                                     seed + 10 * i, -0.5, 0.5));
    bs.push_back(test::random_tensor(TensorDesc{DType::kF32, {k.m}}, seed + 10 * i + 1));
    ss.push_back(per_channel_tensor(k.m, seed + 10 * i + 2));
    b.add_constant("w" + id, ws.back());
    graph::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{br.kh, br.kw});
    a.set("strides", std::vector<int64_t>{k.stride, k.stride});
    a.set("pads", std::vector<int64_t>(br.pads.begin(), br.pads.end()));
    a.set("group", k.group);
    std::vector<std::string> ins{"x", "w" + id};
    if (br.bias) {
      b.add_constant("b" + id, bs.back());
      ins.push_back("b" + id);
    }
    b.add_node("Conv", "conv" + id, ins, {"y" + id}, a);
    if (br.scaled) {
      b.add_constant("s" + id, ss.back());
      b.add_node("Mul", "scale" + id, {"y" + id, "s" + id}, {"ys" + id});
      parts.push_back("ys" + id);
    } else {
      parts.push_back("y" + id);
    }
  }
  const Tensor is = per_channel_tensor(k.c, seed + 500), it = per_channel_tensor(k.c, seed + 501);
  if (k.identity) {
    b.add_constant("is", is);
    b.add_constant("it", it);
    b.add_node("Mul", "bn_scale", {"x", "is"}, {"xs"});
    b.add_node("Add", "bn_shift", {"xs", "it"}, {"xb"});
    parts.push_back("xb");
  }
  const Tensor cst = per_channel_tensor(k.m, seed + 502);
  if (k.constant) {
    b.add_constant("cst", cst);
    parts.push_back("cst");
  }
  if (k.other_input) parts.push_back("z");
  std::string acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string out = "sum" + std::to_string(i);
    b.add_node("Add", "add" + std::to_string(i), {acc, parts[i]}, {out});
    acc = out;
  }
  if (k.relu) {
    b.add_node("Relu", "act", {acc}, {"out"});
    acc = "out";
  }
  b.add_output(acc);
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

  // Reference: each branch by conv2d_ref, the identity and constants by loops.
  const engine::NamedTensors in = test::random_inputs(g, seed + 3);
  const Tensor& x = in[0].second;
  Tensor ref(TensorDesc{DType::kF32, {1, k.m, ho, wo}});
  float* r = ref.data_as<float>();
  const int64_t plane = ho * wo;
  for (size_t i = 0; i < k.convs.size(); ++i) {
    test::Window2d win;
    win.strides = {k.stride, k.stride};
    win.pads = k.convs[i].pads;
    const Tensor y = test::conv2d_ref(x, ws[i], k.convs[i].bias ? &bs[i] : nullptr, win, k.group);
    REQUIRE(y.shape() == ref.shape());
    for (int64_t e = 0; e < ref.numel(); ++e)
      r[e] += y.data_as<float>()[e] * (k.convs[i].scaled ? ss[i].data_as<float>()[e / plane] : 1);
  }
  for (int64_t e = 0; e < ref.numel(); ++e) {
    const int64_t ch = e / plane;
    if (k.identity)
      r[e] += x.data_as<float>()[e] * is.data_as<float>()[ch] + it.data_as<float>()[ch];
    if (k.constant) r[e] += cst.data_as<float>()[ch];
    if (k.other_input) r[e] += in[1].second.data_as<float>()[e];
    if (k.relu) r[e] = std::max(r[e], 0.0f);
  }

  auto p = value_or_throw(graph::passes::reparameterize_conv_branches(g, ops::Registry::get()));
  CHECK(p.merged == k.want_merged);
  CHECK(p.branches == k.want_branches);
  if (k.want_merged > 0) {
    CHECK(test::count_op(p.graph, "Conv") == 1);
    CHECK(test::count_op(p.graph, "Add") == (k.other_input ? 1u : 0u));
    CHECK(test::count_op(p.graph, "Mul") == 0);
  }
  CHECK(test::max_rel_error(test::run_graph(p.graph, in, 2)[0].second, ref) < 1e-5);
  auto full = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(full.conv_reparams == k.want_merged);
  CHECK(test::max_rel_error(test::run_graph(full.graph, in, 2)[0].second, ref) < 1e-5);
  CHECK(test::max_rel_error(test::run_graph(g, in, 1)[0].second, ref) < 1e-5);
}

Branch conv1x1(bool bias = true) {
  Branch br;
  br.kh = br.kw = 1;
  br.pads = {0, 0, 0, 0};
  br.bias = bias;
  return br;
}

}  // namespace

TEST_CASE("conv_reparam: training-form RepVGG / MobileOne / ACNet blocks become one Conv",
          "[passes][conv]") {
  std::vector<Block> cases;
  {
    // RepVGG: 3x3 + 1x1 + BatchNormalization(x), then ReLU.
    Block k{"RepVGG block"};
    k.convs = std::vector<Branch>{Branch{}, conv1x1()};
    k.identity = true;
    k.want_branches = 3;
    cases.push_back(k);
  }
  {
    // RepVGG's down-sampling block: stride 2, no identity.
    Block k{"RepVGG stride 2, 8 -> 16 channels"};
    k.m = 16;
    k.stride = 2;
    k.convs = std::vector<Branch>{Branch{}, conv1x1()};
    k.want_branches = 2;
    cases.push_back(k);
  }
  {
    // MobileOne-S0's depthwise block: four 3x3 depthwise convs, a 1x1 one, BN of the input and
    // the exporter's "+ 0".
    Block k{"MobileOne depthwise"};
    k.group = 8;
    k.convs = std::vector<Branch>{Branch{}, Branch{}, Branch{}, Branch{}, conv1x1()};
    k.identity = true;
    k.constant = true;
    k.want_branches = 6;
    cases.push_back(k);
  }
  {
    // MobileOne's pointwise block with the BN after each conv left unfolded (a Mul + an Add of
    // per-channel constants, the Adds' constants summed into the bias).
    Block k{"MobileOne pointwise, unfolded BN"};
    Branch a = conv1x1(false), c = conv1x1(false);
    a.scaled = c.scaled = true;
    k.convs = std::vector<Branch>{a, c, conv1x1()};
    k.constant = true;
    k.identity = true;
    k.want_branches = 4;
    cases.push_back(k);
  }
  {
    // ACNet: 3x3 + 1x3 + 3x1, grouped.
    Block k{"ACNet asymmetric kernels, group 2"};
    k.group = 2;
    Branch row, col;
    row.kh = 1;
    row.pads = {0, 1, 0, 1};
    col.kw = 1;
    col.pads = {1, 0, 1, 0};
    k.convs = std::vector<Branch>{Branch{}, row, col};
    k.want_branches = 3;
    cases.push_back(k);
  }
  {
    // A summand that is not a branch of x stays an Add after the merged conv.
    Block k{"another input in the sum"};
    k.convs = std::vector<Branch>{Branch{}, conv1x1()};
    k.other_input = true;
    k.relu = false;
    k.want_branches = 2;
    cases.push_back(k);
  }
  uint64_t seed = 10;
  for (const Block& k : cases) check_block(k, seed += 1000);
}

TEST_CASE("conv_reparam: sums that are not branches of one input stay", "[passes][conv]") {
  {
    // One conv plus the input: a ResNet-style residual is conv_sum's (a post-op), nothing to
    // merge here unless the identity joins a conv of the same input: it does (stride 1).
    Block k{"conv + identity merges"};
    k.convs = std::vector<Branch>{Branch{}};
    k.identity = true;
    k.want_branches = 2;
    check_block(k, 1);
  }
  {
    // A single conv plus a constant: conv_fusion folds that; this pass leaves it.
    Block k{"conv + constant"};
    k.convs = std::vector<Branch>{Branch{}};
    k.constant = true;
    k.want_merged = 0;
    check_block(k, 2);
  }
  {
    // A 1x5 and a 5x1 would merge into 25 taps for 10: too much growth.
    Block k{"1x5 + 5x1"};
    Branch row, col;
    row.kh = 1;
    row.kw = 5;
    row.pads = {0, 1, 0, 3};
    col.kh = 5;
    col.kw = 1;
    col.pads = {1, 0, 3, 0};
    k.convs = std::vector<Branch>{row, col};
    k.want_merged = 0;
    check_block(k, 3);
  }
  {
    // One conv of x and a value that is not x: nothing to merge.
    Block k{"stride 2 conv + another input"};
    k.stride = 2;
    k.h = k.w = 9;
    k.convs = std::vector<Branch>{Branch{}};
    k.other_input = true;
    k.want_merged = 0;
    check_block(k, 4);
  }
  {
    // A conv whose output something else reads too.
    graph::GraphBuilder b("<conv reparam shared>");
    b.add_input("x", TensorDesc{DType::kF32, {1, 4, 6, 6}});
    b.add_constant("w0", test::random_tensor(TensorDesc{DType::kF32, {4, 4, 3, 3}}, 5));
    b.add_constant("w1", test::random_tensor(TensorDesc{DType::kF32, {4, 4, 1, 1}}, 6));
    b.add_node("Conv", "c0", {"x", "w0"}, {"y0"}, test::conv_window(3, 1, 1));
    b.add_node("Conv", "c1", {"x", "w1"}, {"y1"}, test::conv_window(1, 1, 0));
    b.add_node("Add", "s", {"y0", "y1"}, {"sum"});
    b.add_node("Relu", "r", {"y0"}, {"side"});
    b.add_output("sum");
    b.add_output("side");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto p = value_or_throw(graph::passes::reparameterize_conv_branches(g, ops::Registry::get()));
    CHECK(p.merged == 0);
  }
}
