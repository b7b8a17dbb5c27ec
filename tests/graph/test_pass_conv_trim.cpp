// conv_trim: kernel taps that meet only the zero padding for every output are cut from a Conv
// (pads shrink by the cut extent, one tap left = dilation 1); the trimmed graphs' outputs equal
// the naive reference of the original convolution (conv2d_ref with its dilations and pads).
#include <catch2/catch.hpp>

#include "graph/passes/conv_trim.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"
#include "tests/support/reference_gemm_conv.h"

using namespace graphi;

namespace {

struct ConvCase {
  std::string name;
  int64_t c = 8, m = 8, group = 1, h = 14, w = 14, kh = 3, kw = 3;
  std::array<int64_t, 2> strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  // Expected after the pass: kernel, pads, dilations; trimmed = false: unchanged.
  bool trimmed = false;
  int64_t out_kh = 0, out_kw = 0;
  std::array<int64_t, 4> out_pads{0, 0, 0, 0};
  std::array<int64_t, 2> out_dilations{1, 1};
};

// One Conv of x [1, c, h, w]: the pass's verdict and the numbers against conv2d_ref.
void check_case(const ConvCase& k, uint64_t seed) {
  INFO(k.name);
  graph::GraphBuilder b("<conv trim>");
  b.add_input("x", TensorDesc{DType::kF32, {1, k.c, k.h, k.w}});
  const Tensor w = test::random_tensor(TensorDesc{DType::kF32, {k.m, k.c / k.group, k.kh, k.kw}},
                                       seed, -0.5, 0.5);
  const Tensor bias = test::random_tensor(TensorDesc{DType::kF32, {k.m}}, seed + 1);
  b.add_constant("w", w);
  b.add_constant("b", bias);
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k.kh, k.kw});
  a.set("strides", std::vector<int64_t>{k.strides[0], k.strides[1]});
  a.set("dilations", std::vector<int64_t>{k.dilations[0], k.dilations[1]});
  a.set("pads", std::vector<int64_t>{k.pads[0], k.pads[1], k.pads[2], k.pads[3]});
  a.set("group", k.group);
  b.add_node("Conv", "c", {"x", "w", "b"}, {"y"}, a);
  b.add_output("y");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

  auto r = value_or_throw(graph::passes::trim_conv_taps(g, ops::Registry::get()));
  CHECK(r.trimmed == (k.trimmed ? 1 : 0));
  for (const graph::Node& n : r.graph.nodes()) {
    if (n.op != "Conv") continue;
    const Shape& ws = r.graph.value(n.inputs[1]).desc.shape;
    const int64_t want_kh = k.trimmed ? k.out_kh : k.kh, want_kw = k.trimmed ? k.out_kw : k.kw;
    CHECK(ws == Shape{k.m, k.c / k.group, want_kh, want_kw});
    const auto want_pads = k.trimmed ? k.out_pads : k.pads;
    const auto want_dil = k.trimmed ? k.out_dilations : k.dilations;
    CHECK(*graph::attr_ints(n.attrs, "", "pads") ==
          std::vector<int64_t>(want_pads.begin(), want_pads.end()));
    CHECK(*graph::attr_ints(n.attrs, "", "dilations") ==
          std::vector<int64_t>(want_dil.begin(), want_dil.end()));
    CHECK(*graph::attr_ints(n.attrs, "", "kernel_shape") == std::vector<int64_t>{want_kh, want_kw});
  }
  CHECK(r.graph.value(r.graph.outputs()[0]).desc.shape == g.value(g.outputs()[0]).desc.shape);

  // Against the definition of the original convolution, through the pass alone and through the
  // whole pipeline (blocked layout and fusions after it).
  const engine::NamedTensors in = test::random_inputs(g, seed + 2);
  test::Window2d win;
  win.strides = k.strides;
  win.dilations = k.dilations;
  win.pads = k.pads;
  const Tensor ref = test::conv2d_ref(in[0].second, w, &bias, win, k.group);
  CHECK(test::max_rel_error(test::run_graph(r.graph, in, 2)[0].second, ref) < 1e-5);
  auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(p.convs_trimmed == (k.trimmed ? 1 : 0));
  CHECK(test::max_rel_error(test::run_graph(p.graph, in, 2)[0].second, ref) < 1e-5);
}

}  // namespace

TEST_CASE("conv_trim: taps that only ever meet padding are cut", "[passes][conv]") {
  std::vector<ConvCase> cases;
  {
    // DeepLabV3's ASPP at 14x14: dilation and pads 24 leave the centre tap only -> a 1x1 conv.
    ConvCase k{"ASPP dilation 24"};
    k.dilations = {24, 24};
    k.pads = {24, 24, 24, 24};
    k.trimmed = true;
    k.out_kh = k.out_kw = 1;
    cases.push_back(k);
  }
  {
    ConvCase k{"ASPP dilation 36, depthwise"};
    k.group = 8;
    k.dilations = {36, 36};
    k.pads = {36, 36, 36, 36};
    k.trimmed = true;
    k.out_kh = k.out_kw = 1;
    cases.push_back(k);
  }
  {
    // Rows only: the columns' taps all meet the input.
    ConvCase k{"dilation 20 x 1"};
    k.dilations = {20, 1};
    k.pads = {20, 1, 20, 1};
    k.trimmed = true;
    k.out_kh = 1;
    k.out_kw = 3;
    k.out_pads = {0, 1, 0, 1};
    k.out_dilations = {1, 1};
    cases.push_back(k);
  }
  {
    // 5 taps, dilation 4, pads 8 on 6 rows: the outer taps (offsets -8, +8) never land inside,
    // taps 1..3 do: a 3-tap kernel with pads 4, dilation kept.
    ConvCase k{"5-tap kernel keeps its middle three"};
    k.h = k.w = 6;
    k.kh = k.kw = 5;
    k.dilations = {4, 4};
    k.pads = {8, 8, 8, 8};
    k.trimmed = true;
    k.out_kh = k.out_kw = 3;
    k.out_pads = {4, 4, 4, 4};
    k.out_dilations = {4, 4};
    cases.push_back(k);
  }
  {
    // Stride 2 on 7x7 (outputs at 0, 2, 4, 6): offsets -8 and +8 never land inside.
    ConvCase k{"stride 2"};
    k.h = k.w = 7;
    k.strides = {2, 2};
    k.dilations = {8, 8};
    k.pads = {8, 8, 8, 8};
    k.trimmed = true;
    k.out_kh = k.out_kw = 1;
    cases.push_back(k);
  }
  uint64_t seed = 10;
  for (const ConvCase& k : cases) check_case(k, seed += 10);
}

TEST_CASE("conv_trim: convolutions whose every tap meets the input, or that cannot be cut, stay",
          "[passes][conv]") {
  std::vector<ConvCase> cases;
  cases.push_back(ConvCase{"plain 3x3, pads 1"});
  cases.back().pads = {1, 1, 1, 1};
  {
    // ASPP's dilation 12 at 14x14: the outer taps reach the first / last two rows.
    ConvCase k{"dilation 12 at 14x14"};
    k.dilations = {12, 12};
    k.pads = {12, 12, 12, 12};
    cases.push_back(k);
  }
  {
    // One output row from a 3-row input, dilation 4, pads 3: only the centre tap lands inside,
    // but cutting tap 0 would need pads of -1 (a crop): left alone.
    ConvCase k{"a cut that would need a negative pad"};
    k.h = k.w = 3;
    k.dilations = {4, 4};
    k.pads = {3, 3, 3, 3};
    cases.push_back(k);
  }
  uint64_t seed = 100;
  for (const ConvCase& k : cases) check_case(k, seed += 10);
}

TEST_CASE("conv_trim: weights given at run time are left alone", "[passes][conv]") {
  graph::GraphBuilder b("<conv trim skip>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 4, 5, 5}});
  b.add_input("w", TensorDesc{DType::kF32, {4, 4, 3, 3}});
  graph::Attributes a;
  a.set("dilations", std::vector<int64_t>{9, 9});
  a.set("pads", std::vector<int64_t>{9, 9, 9, 9});
  b.add_node("Conv", "runtime_w", {"x", "w"}, {"y"}, a);
  b.add_output("y");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::trim_conv_taps(g, ops::Registry::get()));
  CHECK(r.trimmed == 0);
}
