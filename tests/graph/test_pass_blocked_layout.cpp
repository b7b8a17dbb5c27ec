// blocked_layout: conv chains in nChw16c / nChw8c give the same outputs as the plain NCHW path
// (within 1e-5) on every CNN of the ONNX zoo and on an inception block and a PathNet stack,
// teams of 1 and 2; the reorders sit at the layout boundaries only.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine/model_loader.h"
#include "graph/passes/blocked_layout.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"
#include "tests/support/reference_gemm_conv.h"

using namespace graphi;

namespace {

const std::string kZoo = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_zoo/";

// The default pipeline with and without the blocked layout.
std::pair<graph::Graph, graph::passes::PipelineResult> plain_and_blocked(const graph::Graph& g) {
  graph::passes::PipelineOptions off;
  off.blocked_layout = false;
  auto plain = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), off));
  auto blocked = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  graph::Graph p = plain.changed() ? std::move(plain.graph) : g;
  if (!blocked.changed()) blocked.graph = g;
  return {std::move(p), std::move(blocked)};
}

struct CnnBuilder {
  graph::GraphBuilder b{"<blocked layout test>"};
  uint64_t seed = 100;
  void conv(const std::string& name, const std::string& in, int64_t cin, int64_t cout, int64_t k) {
    b.add_constant(name + ".w", test::random_tensor(TensorDesc{DType::kF32, {cout, cin, k, k}},
                                                    seed++, -0.3, 0.3));
    b.add_constant(name + ".b", test::random_tensor(TensorDesc{DType::kF32, {cout}}, seed++));
    graph::Attributes a = test::conv_window(k, 1, k / 2);
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    b.add_node("Conv", name + ".conv", {in, name + ".w", name + ".b"}, {name + ".c"}, a);
    b.add_node("Relu", name, {name + ".c"}, {name});
  }
  graph::Graph finish() { return value_or_throw(b.finish(ops::Registry::get())); }
};

// GoogleNet's inception: 1x1 | 1x1 -> 3x3 | 1x1 -> 5x5 | 3x3 max-pool -> 1x1, concatenated,
// twice in a row (the second reads the first's blocked output).
graph::Graph inception_graph(int64_t batch) {
  CnnBuilder c;
  c.b.add_input("x", TensorDesc{DType::kF32, {batch, 32, 12, 12}});
  std::string in = "x";
  int64_t cin = 32;
  for (int blk = 0; blk < 2; ++blk) {
    const std::string p = "i" + std::to_string(blk);
    c.conv(p + "b1", in, cin, 16, 1);
    c.conv(p + "b2a", in, cin, 16, 1);
    c.conv(p + "b2", p + "b2a", 16, 32, 3);
    c.conv(p + "b3a", in, cin, 16, 1);
    c.conv(p + "b3", p + "b3a", 16, 16, 5);
    c.b.add_node("MaxPool", p + "pool", {in}, {p + "pool"}, test::conv_window(3, 1, 1));
    c.conv(p + "b4", p + "pool", cin, 16, 1);
    graph::Attributes cat;
    cat.set("axis", int64_t{1});
    c.b.add_node("Concat", p + "cat", {p + "b1", p + "b2", p + "b3", p + "b4"}, {p + "cat"}, cat);
    in = p + "cat";
    cin = 80;
  }
  c.b.add_output(in);
  return c.finish();
}

// Seed 002's PathNet: 3 layers of 4 modules (3x3 conv + ReLU + 2x2 max-pool), summed; a
// Reshape + Gemm read-out.
graph::Graph pathnet_graph(int64_t batch) {
  CnnBuilder c;
  c.b.add_input("x", TensorDesc{DType::kF32, {batch, 3, 16, 16}});
  std::string in = "x";
  int64_t cin = 3;
  for (int l = 0; l < 3; ++l) {
    std::vector<std::string> mods;
    for (int m = 0; m < 4; ++m) {
      const std::string p = "l" + std::to_string(l) + "m" + std::to_string(m);
      c.conv(p, in, cin, 16, 3);
      c.b.add_node("MaxPool", p + ".pool", {p}, {p + ".pool"}, test::conv_window(2, 2, 0));
      mods.push_back(p + ".pool");
    }
    std::string acc = mods[0];
    for (int m = 1; m < 4; ++m) {
      const std::string s = "l" + std::to_string(l) + "sum" + std::to_string(m);
      c.b.add_node("Add", s, {acc, mods[m]}, {s});
      acc = s;
    }
    in = acc;
    cin = 16;
  }
  Tensor shape(TensorDesc{DType::kI64, {2}});
  shape.data_as<int64_t>()[0] = batch;
  shape.data_as<int64_t>()[1] = 16 * 2 * 2;
  c.b.add_constant("flat.shape", shape);
  c.b.add_node("Reshape", "flat", {in, "flat.shape"}, {"flat"});
  c.b.add_constant("fc.w", test::random_tensor(TensorDesc{DType::kF32, {10, 16 * 2 * 2}}, 7));
  graph::Attributes gemm;
  gemm.set("transB", int64_t{1});
  c.b.add_node("Gemm", "fc", {"flat", "fc.w"}, {"y"}, gemm);
  c.b.add_output("y");
  return c.finish();
}

// A MobileNet-style stack: a stride-2 stem conv on the image, hard-swish (HardSigmoid, Mul), a
// dilated 3x3 depthwise conv + Relu, Clip(0, 6), a 1x1 conv, then Sigmoid, Sub, Div and Tanh
// of same-shape values; and beside it a grouped (not depthwise) conv, which oneDNN has no
// blocked kernel for and stays a plain Conv, and a depthwise conv on 12 channels (one padded
// block of 16).
graph::Graph mobilenet_graph(int64_t batch) {
  graph::GraphBuilder b("<mobilenet block>");
  uint64_t seed = 300;
  auto weight = [&](const std::string& name, Shape shape) {
    b.add_constant(
        name, test::random_tensor(TensorDesc{DType::kF32, std::move(shape)}, seed++, -0.4, 0.4));
  };
  auto conv = [&](const std::string& name, const std::string& in, int64_t cin, int64_t cout,
                  int64_t k, int64_t group, int64_t stride, int64_t dilation) {
    weight(name + ".w", {cout, cin / group, k, k});
    weight(name + ".b", {cout});
    const int64_t pad = dilation * (k / 2);
    graph::Attributes a = test::conv_window(k, stride, pad);
    a.set("group", group);
    a.set("dilations", std::vector<int64_t>{dilation, dilation});
    b.add_node("Conv", name, {in, name + ".w", name + ".b"}, {name}, a);
  };
  b.add_input("x", TensorDesc{DType::kF32, {batch, 3, 16, 16}});
  conv("stem", "x", 3, 16, 3, 1, 2, 1);
  graph::Attributes hs;
  hs.set("alpha", 1.0f / 6.0f);
  b.add_node("HardSigmoid", "hsig", {"stem"}, {"hsig"}, hs);
  b.add_node("Mul", "hswish", {"stem", "hsig"}, {"hswish"});
  conv("dw", "hswish", 16, 16, 3, 16, 1, 2);
  b.add_node("Relu", "dw.relu", {"dw"}, {"dw.relu"});
  Tensor lo(TensorDesc{DType::kF32, {}}), hi(TensorDesc{DType::kF32, {}});
  *lo.data_as<float>() = 0.0f;
  *hi.data_as<float>() = 6.0f;
  b.add_constant("lo", std::move(lo));
  b.add_constant("hi", std::move(hi));
  b.add_node("Clip", "relu6", {"dw.relu", "lo", "hi"}, {"relu6"});
  conv("pw", "relu6", 16, 32, 1, 1, 1, 1);
  b.add_node("Sigmoid", "gate", {"pw"}, {"gate"});
  b.add_node("Sub", "centered", {"pw", "gate"}, {"centered"});
  b.add_node("Div", "ratio", {"centered", "gate"}, {"ratio"});
  b.add_node("Tanh", "y", {"ratio"}, {"y"});
  b.add_output("y");
  // Stays plain: groups of 2 channels. Blocked with 4 padding lanes: the 12-channel depthwise.
  conv("grouped", "hswish", 16, 16, 3, 8, 1, 1);
  b.add_input("x12", TensorDesc{DType::kF32, {batch, 12, 8, 8}});
  conv("dw12", "x12", 12, 12, 3, 12, 1, 1);
  b.add_output("grouped");
  b.add_output("dw12");
  return value_or_throw(b.finish(ops::Registry::get()));
}

// A stride-1, "same"-padded Conv with random weights and bias named NAME.w / NAME.b.
void add_conv(graph::GraphBuilder& b, uint64_t& seed, const std::string& name,
              const std::string& in, int64_t cin, int64_t cout, int64_t k, int64_t group) {
  b.add_constant(
      name + ".w",
      test::random_tensor(TensorDesc{DType::kF32, {cout, cin / group, k, k}}, seed++, -0.3, 0.3));
  b.add_constant(name + ".b", test::random_tensor(TensorDesc{DType::kF32, {cout}}, seed++));
  graph::Attributes a = test::conv_window(k, 1, k / 2);
  a.set("group", group);
  b.add_node("Conv", name, {in, name + ".w", name + ".b"}, {name}, a);
}

}  // namespace

TEST_CASE("blocked_layout: depthwise convs and element-wise chains stay blocked and equal NCHW",
          "[passes][conv][layout]") {
  for (int64_t batch : {1, 3}) {
    INFO("batch " << batch);
    const graph::Graph g = mobilenet_graph(batch);
    auto [plain, blocked] = plain_and_blocked(g);
    // stem, the dilated depthwise conv, the 1x1 and dw12 run blocked; grouped does not.
    CHECK(test::count_op(blocked.graph, "BlockedConv") == 4);
    CHECK(test::count_op(blocked.graph, "Conv") + test::count_op(blocked.graph, "FusedConv") == 1);
    // Every element-wise op between them reads and writes blocked tensors: the image is read
    // directly, y goes back once; hswish is also read plain by the grouped conv (one more);
    // x12 in and dw12 out, its 4 padding lanes dropped (channels = 12).
    CHECK(test::count_op(blocked.graph, "ToBlocked") == 1);
    CHECK(test::count_op(blocked.graph, "FromBlocked") == 3);
    for (const graph::Node& n : blocked.graph.nodes())
      if (n.op == "FromBlocked" && blocked.graph.value(n.outputs[0]).name == "dw12") {
        INFO(n.name);
        CHECK(std::get<int64_t>(*n.attrs.find("channels")) == 12);
      }
    for (const graph::Node& n : blocked.graph.nodes())
      if (n.op == "HardSigmoid" || n.op == "Mul" || n.op == "Clip" || n.op == "Sigmoid" ||
          n.op == "Sub" || n.op == "Div" || n.op == "Tanh") {
        INFO(n.name);
        CHECK(blocked.graph.value(n.outputs[0]).desc.rank() == 5);
      }
    for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
  }
}

TEST_CASE("blocked_layout: group convs of whole channel blocks stay blocked (RegNet, ResNeXt)",
          "[passes][conv][layout]") {
  // 64 channels: group 2 (32 per group), then group 4 (16 per group, stride 2): whole
  // 16-channel blocks in and out, so both run blocked; beside them a group-8 conv (8 per group)
  // stays a plain Conv at block 16.
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<group convs>");
    uint64_t seed = 900;
    b.add_input("x", TensorDesc{DType::kF32, {batch, 64, 10, 10}});
    const Tensor w1 =
        test::random_tensor(TensorDesc{DType::kF32, {64, 32, 3, 3}}, seed++, -0.2, 0.2);
    const Tensor b1 = test::random_tensor(TensorDesc{DType::kF32, {64}}, seed++);
    const Tensor w2 =
        test::random_tensor(TensorDesc{DType::kF32, {64, 16, 3, 3}}, seed++, -0.2, 0.2);
    const Tensor b2 = test::random_tensor(TensorDesc{DType::kF32, {64}}, seed++);
    const Tensor w3 =
        test::random_tensor(TensorDesc{DType::kF32, {64, 8, 3, 3}}, seed++, -0.2, 0.2);
    b.add_constant("w1", w1);
    b.add_constant("b1", b1);
    b.add_constant("w2", w2);
    b.add_constant("b2", b2);
    b.add_constant("w3", w3);
    graph::Attributes g2 = test::conv_window(3, 1, 1);
    g2.set("group", int64_t{2});
    b.add_node("Conv", "g2", {"x", "w1", "b1"}, {"g2"}, g2);
    b.add_node("Relu", "r", {"g2"}, {"r"});
    graph::Attributes g4 = test::conv_window(3, 2, 1);
    g4.set("group", int64_t{4});
    b.add_node("Conv", "g4", {"r", "w2", "b2"}, {"y"}, g4);
    graph::Attributes g8 = test::conv_window(3, 1, 1);
    g8.set("group", int64_t{8});
    b.add_node("Conv", "g8", {"r", "w3"}, {"y8"}, g8);
    b.add_output("y");
    b.add_output("y8");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto [plain, blocked] = plain_and_blocked(g);
    CHECK(test::count_op(blocked.graph, "BlockedConv") == 2);
    CHECK(test::count_op(blocked.graph, "Conv") == 1);

    // Against the definition: conv, ReLU, conv (group 4, stride 2); conv (group 8).
    const engine::NamedTensors in = test::random_inputs(g, 5);
    const engine::NamedTensors out = test::run_graph(blocked.graph, in, 2);
    test::Window2d same;
    same.pads = {1, 1, 1, 1};
    Tensor r = test::conv2d_ref(in[0].second, w1, &b1, same, 2);
    for (int64_t i = 0; i < r.numel(); ++i)
      r.data_as<float>()[i] = std::max(r.data_as<float>()[i], 0.0f);
    test::Window2d down = same;
    down.strides = {2, 2};
    CHECK(test::max_rel_error(out[0].second, test::conv2d_ref(r, w2, &b2, down, 4)) < 1e-5);
    CHECK(test::max_rel_error(out[1].second, test::conv2d_ref(r, w3, nullptr, same, 8)) < 1e-5);
  }
}

TEST_CASE("blocked_layout: convs over padded channel blocks (8 or 12 of 16) equal the definition",
          "[passes][conv][layout]") {
  // oneDNN has only its reference code for these on a padded nChw16c input; the kernel runs them
  // over the whole block with zero weights for the padding channels (ops/conv_pool.cpp).
  for (int64_t batch : {1, 3}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<padded convs>");
    uint64_t seed = 950;
    b.add_input("x", TensorDesc{DType::kF32, {batch, 8, 20, 20}});
    const Tensor w1 = test::random_tensor(TensorDesc{DType::kF32, {8, 8, 5, 5}}, seed++, -0.2, 0.2);
    const Tensor b1 = test::random_tensor(TensorDesc{DType::kF32, {8}}, seed++);
    const Tensor w2 =
        test::random_tensor(TensorDesc{DType::kF32, {12, 8, 3, 3}}, seed++, -0.2, 0.2);
    const Tensor w3 =
        test::random_tensor(TensorDesc{DType::kF32, {12, 12, 5, 5}}, seed++, -0.2, 0.2);
    const Tensor b3 = test::random_tensor(TensorDesc{DType::kF32, {12}}, seed++);
    b.add_constant("w1", w1);
    b.add_constant("b1", b1);
    b.add_constant("w2", w2);
    b.add_constant("w3", w3);
    b.add_constant("b3", b3);
    b.add_node("Conv", "c1", {"x", "w1", "b1"}, {"c1"}, test::conv_window(5, 1, 2));
    b.add_node("Relu", "r1", {"c1"}, {"r1"});
    b.add_node("Conv", "c2", {"r1", "w2"}, {"c2"}, test::conv_window(3, 2, 1));
    b.add_node("Conv", "c3", {"c2", "w3", "b3"}, {"y"}, test::conv_window(5, 2, 2));
    b.add_output("y");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto [plain, blocked] = plain_and_blocked(g);
    CHECK(test::count_op(blocked.graph, "BlockedConv") == 3);

    const engine::NamedTensors in = test::random_inputs(g, 6);
    const engine::NamedTensors out = test::run_graph(blocked.graph, in, 2);
    test::Window2d pad2, down1, down2;
    pad2.pads = {2, 2, 2, 2};
    down1.pads = {1, 1, 1, 1};
    down1.strides = {2, 2};
    down2.pads = {2, 2, 2, 2};
    down2.strides = {2, 2};
    Tensor r = test::conv2d_ref(in[0].second, w1, &b1, pad2, 1);
    for (int64_t i = 0; i < r.numel(); ++i)
      r.data_as<float>()[i] = std::max(r.data_as<float>()[i], 0.0f);
    const Tensor c2 = test::conv2d_ref(r, w2, nullptr, down1, 1);
    CHECK(test::max_rel_error(out[0].second, test::conv2d_ref(c2, w3, &b3, down2, 1)) < 1e-5);
  }
}

TEST_CASE("blocked_layout: depthwise convs oneDNN has no jit kernel for equal the definition",
          "[passes][conv][layout]") {
  // A Conformer's 1-D depthwise conv (1x31 over one row, 24 channels: padded blocks), which
  // oneDNN runs only in its reference code, goes to graphi's direct kernel
  // (ops/conv_depthwise_direct.h); a 9x9 stride-2 one and a 7x7 stride-2 dilated one on 24
  // channels stay on oneDNN's jit_dw. Each is followed by a Sigmoid the conv takes as its
  // activation: bias, activation and zero padding lanes included.
  struct Case {
    int64_t c, h, w, kh, kw, stride, dil, pad_h, pad_w;
  };
  for (const Case& k : {Case{24, 1, 49, 1, 31, 1, 1, 0, 15}, Case{16, 9, 9, 9, 9, 2, 1, 4, 4},
                        Case{24, 15, 13, 7, 7, 2, 2, 3, 3}}) {
    INFO("channels " << k.c << " kernel " << k.kh << "x" << k.kw);
    graph::GraphBuilder b("<depthwise>");
    uint64_t seed = 970;
    b.add_input("x", TensorDesc{DType::kF32, {2, k.c, k.h, k.w}});
    const Tensor w1 =
        test::random_tensor(TensorDesc{DType::kF32, {k.c, 1, k.kh, k.kw}}, seed++, -0.3, 0.3);
    const Tensor b1 = test::random_tensor(TensorDesc{DType::kF32, {k.c}}, seed++);
    b.add_constant("w1", w1);
    b.add_constant("b1", b1);
    // A 1x1 conv first, so the depthwise conv reads a blocked value.
    const Tensor w_in =
        test::random_tensor(TensorDesc{DType::kF32, {k.c, k.c, 1, 1}}, seed++, -0.3, 0.3);
    b.add_constant("w_in", w_in);
    b.add_node("Conv", "pw", {"x", "w_in"}, {"p"}, test::conv_window(1, 1, 0));
    graph::Attributes dw;
    dw.set("kernel_shape", std::vector<int64_t>{k.kh, k.kw});
    dw.set("strides", std::vector<int64_t>{k.stride, k.stride});
    dw.set("dilations", std::vector<int64_t>{k.dil, k.dil});
    dw.set("pads", std::vector<int64_t>{k.pad_h, k.pad_w, k.pad_h, k.pad_w});
    dw.set("group", k.c);
    b.add_node("Conv", "dw", {"p", "w1", "b1"}, {"d"}, dw);
    b.add_node("Sigmoid", "s", {"d"}, {"y"});
    b.add_output("y");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto [plain, blocked] = plain_and_blocked(g);
    CHECK(test::count_op(blocked.graph, "BlockedConv") == 2);

    const engine::NamedTensors in = test::random_inputs(g, 8);
    const engine::NamedTensors out = test::run_graph(blocked.graph, in, 2);
    const Tensor p = test::conv2d_ref(in[0].second, w_in, nullptr, test::Window2d{}, 1);
    test::Window2d win;
    win.strides = {k.stride, k.stride};
    win.dilations = {k.dil, k.dil};
    win.pads = {k.pad_h, k.pad_w, k.pad_h, k.pad_w};
    Tensor want = test::conv2d_ref(p, w1, &b1, win, k.c);
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data_as<float>()[i] = 1.0f / (1.0f + std::exp(-want.data_as<float>()[i]));
    CHECK(test::max_rel_error(out[0].second, want) < 1e-5);
  }
}

TEST_CASE("blocked_layout: inception blocks and a PathNet stack equal the NCHW path",
          "[passes][conv][layout]") {
  for (int64_t batch : {1, 3}) {
    for (const auto& [name, g] : {std::pair{"inception", inception_graph(batch)},
                                  std::pair{"pathnet", pathnet_graph(batch)}}) {
      INFO(name << " batch " << batch);
      auto [plain, blocked] = plain_and_blocked(g);
      CHECK(test::count_op(blocked.graph, "BlockedConv") ==
            test::count_op(plain, "FusedConv") + test::count_op(plain, "Conv"));
      CHECK(test::count_op(blocked.graph, "Conv") == 0);
      // Reorders at the boundaries only: inception converts x once (its first max-pool reads
      // the converted x, which the 1x1 convs read too) and its output back once; PathNet reads
      // the 3-channel image directly and converts the last sum back once, for the read-out.
      const size_t to = test::count_op(blocked.graph, "ToBlocked");
      const size_t from = test::count_op(blocked.graph, "FromBlocked");
      CHECK(to == (std::string(name) == "inception" ? 1 : 0));
      CHECK(test::count_op(blocked.graph, "BlockedMaxPool") == test::count_op(plain, "MaxPool"));
      CHECK(test::count_op(blocked.graph, "MaxPool") == 0);
      CHECK(from == 1);
      for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
    }
  }
}

TEST_CASE("blocked_layout: a dilated AveragePool stays NCHW, an undilated one goes blocked",
          "[passes][conv][layout]") {
  // oneDNN runs the blocked pools alone and has only its reference code for dilated windows:
  // the dilated pool keeps graphi's NCHW loop (ops/conv_pool.cpp).
  CnnBuilder c;
  c.b.add_input("x", TensorDesc{DType::kF32, {2, 32, 12, 12}});
  c.conv("a", "x", 32, 32, 3);
  graph::Attributes avg = test::conv_window(3, 1, 2);
  avg.set("kernel_shape", std::vector<int64_t>{3, 3});
  avg.set("dilations", std::vector<int64_t>{2, 2});
  c.b.add_node("AveragePool", "dilated", {"a"}, {"dilated"}, avg);
  graph::Attributes plain_avg = test::conv_window(3, 1, 1);
  plain_avg.set("kernel_shape", std::vector<int64_t>{3, 3});
  c.b.add_node("AveragePool", "dense", {"a"}, {"dense"}, plain_avg);
  c.conv("b", "dilated", 32, 16, 1);
  c.conv("d", "dense", 32, 16, 1);
  c.b.add_node("Add", "sum", {"b", "d"}, {"y"});
  c.b.add_output("y");
  const graph::Graph g = c.finish();
  auto [plain, blocked] = plain_and_blocked(g);
  CHECK(test::count_op(blocked.graph, "BlockedAveragePool") == 1);
  CHECK(test::count_op(blocked.graph, "AveragePool") == 1);
  for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
}

TEST_CASE("blocked_layout: every CNN of the ONNX zoo equals the NCHW path within 1e-5",
          "[passes][conv][layout]") {
  int models = 0, blocked_models = 0;
  for (const test::ManifestEntry& m : test::read_manifest(kZoo + "MANIFEST")) {
    graph::ImportOptions opts;
    opts.dims = m.dims;
    auto g = engine::load_model(kZoo + m.name + ".onnx", opts);
    REQUIRE(g.is_ok());
    bool cnn = false;
    for (const graph::Node& n : (*g)->nodes()) cnn = cnn || n.op == "Conv";
    if (!cnn) continue;
    ++models;
    INFO(m.name);
    auto [plain, blocked] = plain_and_blocked(**g);
    blocked_models += blocked.blocked_ops > 0;
    for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
  }
  CHECK(models >= 10);  // mobilenetish, super_resolution, autoencoder2d, text_cnn, ...
  CHECK(blocked_models >= 3);
}

TEST_CASE("blocked_layout: a conv whose weights change every run (training) stays plain",
          "[passes][conv][layout]") {
  // Weights as a graph input: a training step's forward conv. Its gradient ops read NCHW, so
  // blocking it only moves the reorders (measured slower); the pass leaves it and the pool
  // after it alone.
  graph::GraphBuilder b{"<training conv>"};
  b.add_input("x", TensorDesc{DType::kF32, {2, 16, 8, 8}});
  b.add_input("w", TensorDesc{DType::kF32, {32, 16, 3, 3}});
  graph::Attributes a = test::conv_window(3, 1, 1);
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  b.add_node("Conv", "conv", {"x", "w"}, {"c"}, a);
  b.add_node("Relu", "relu", {"c"}, {"r"});
  b.add_node("MaxPool", "pool", {"r"}, {"y"}, test::conv_window(2, 2, 0));
  b.add_output("y");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto [plain, blocked] = plain_and_blocked(g);
  CHECK(test::count_op(blocked.graph, "BlockedConv") == 0);
  CHECK(test::count_op(blocked.graph, "ToBlocked") == 0);
  CHECK(test::count_op(blocked.graph, "FromBlocked") == 0);
  CHECK(test::count_op(blocked.graph, "FusedConv") + test::count_op(blocked.graph, "Conv") == 1);
  for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
}

TEST_CASE(
    "blocked_layout: a chain through 24- and 36-channel layers runs in padded nChw16c, and a "
    "squeeze-excitation gate multiplies blocked",
    "[passes][conv][layout]") {
  // MobileNetV2's 32 -> 24 -> 144 (ReLU6) -> depthwise 144, then an EfficientNet-style
  // squeeze-excitation (global pool, 144 -> 36 -> 144, sigmoid, channel-wise Mul) and 144 -> 24.
  // 24 and 36 channels are padded to whole blocks of 16 (oneDNN's jit kernels take padded
  // nChw16c), so the whole chain, squeeze convs included, runs blocked: x in, p2 out.
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<mbv2 chain>");
    uint64_t seed = 700;
    auto conv = [&](const std::string& name, const std::string& in, int64_t cin, int64_t cout,
                    int64_t k, int64_t group) { add_conv(b, seed, name, in, cin, cout, k, group); };
    b.add_input("x", TensorDesc{DType::kF32, {batch, 32, 10, 10}});
    conv("p1", "x", 32, 24, 1, 1);
    conv("e", "p1", 24, 144, 1, 1);
    Tensor lo(TensorDesc{DType::kF32, {}}), hi(TensorDesc{DType::kF32, {}});
    *lo.data_as<float>() = 0.0f;
    *hi.data_as<float>() = 6.0f;
    b.add_constant("lo", std::move(lo));
    b.add_constant("hi", std::move(hi));
    b.add_node("Clip", "e6", {"e", "lo", "hi"}, {"e6"});
    conv("dw", "e6", 144, 144, 3, 144);
    graph::Attributes gap;
    gap.set("kernel_shape", std::vector<int64_t>{10, 10});
    b.add_node("AveragePool", "sq", {"dw"}, {"sq"}, gap);
    conv("s1", "sq", 144, 36, 1, 1);
    b.add_node("Relu", "s1r", {"s1"}, {"s1r"});
    conv("s2", "s1r", 36, 144, 1, 1);
    b.add_node("Sigmoid", "gate", {"s2"}, {"gate"});
    b.add_node("Mul", "excited", {"dw", "gate"}, {"excited"});
    conv("p2", "excited", 144, 24, 1, 1);
    b.add_output("p2");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto [plain, blocked] = plain_and_blocked(g);
    // p1, e, dw, s1, s2, p2 (e and dw as one BlockedConvDw: graph/passes/conv_fusion.h)
    CHECK(test::count_op(blocked.graph, "BlockedConv") == 4);
    CHECK(test::count_op(blocked.graph, "BlockedConvDw") == 1);
    for (const graph::Node& n : blocked.graph.nodes()) {
      INFO(n.name << " (" << n.op << ")");
      if (n.op == "BlockedConv" || n.op == "BlockedConvDw" || n.op == "ToBlocked" ||
          n.op == "FromBlocked")
        CHECK(std::get<int64_t>(*n.attrs.find("block")) == 16);
      if (n.op == "Mul" || n.op == "Relu" || n.op == "Sigmoid")
        CHECK(blocked.graph.value(n.outputs[0]).desc.rank() == 5);
      if (n.op == "FromBlocked") CHECK(std::get<int64_t>(*n.attrs.find("channels")) == 24);
    }
    CHECK(test::count_op(blocked.graph, "ToBlocked") == 1);
    CHECK(test::count_op(blocked.graph, "FromBlocked") == 1);
    for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
  }
}

TEST_CASE("blocked_layout: padded values keep their padding zero, a ShuffleNet unit runs blocked",
          "[passes][conv][layout]") {
  // x (58 channels: ShuffleNetV2's chunk) -> 1x1 + Relu -> depthwise 3x3 -> 1x1 + Relu, all in
  // padded nChw16c (64 lanes); then ops that would turn the zero padding into something else
  // (Sigmoid: 0.5, Div: 0 / 0, Clip above 0) read it in NCHW, while Relu, a Clip around 0 and
  // a per-channel Mul stay blocked; a Concat with a plain value (the unit's other half) is plain.
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<padded blocks>");
    uint64_t seed = 900;
    auto conv = [&](const std::string& name, const std::string& in, int64_t cin, int64_t cout,
                    int64_t k, int64_t group) { add_conv(b, seed, name, in, cin, cout, k, group); };
    auto scalar = [&](const std::string& name, float v) {
      Tensor t(TensorDesc{DType::kF32, {}});
      *t.data_as<float>() = v;
      b.add_constant(name, std::move(t));
    };
    b.add_input("x", TensorDesc{DType::kF32, {batch, 58, 7, 9}});
    b.add_input("other", TensorDesc{DType::kF32, {batch, 58, 7, 9}});
    b.add_input("scale", TensorDesc{DType::kF32, {1, 58, 1, 1}});
    conv("c1", "x", 58, 58, 1, 1);
    b.add_node("Relu", "r1", {"c1"}, {"r1"});
    conv("dw", "r1", 58, 58, 3, 58);
    conv("c2", "dw", 58, 58, 1, 1);
    b.add_node("Relu", "r2", {"c2"}, {"r2"});
    scalar("lo", -1.0f);
    scalar("hi", 2.0f);
    scalar("one", 1.0f);
    b.add_node("Clip", "around0", {"r2", "lo", "hi"}, {"around0"});     // stays blocked
    b.add_node("Mul", "scaled", {"around0", "scale"}, {"scaled"});      // stays blocked
    b.add_node("Sigmoid", "sig", {"scaled"}, {"sig"});                  // plain
    b.add_node("Div", "ratio", {"scaled", "sig"}, {"ratio"});           // plain
    b.add_node("Clip", "above0", {"scaled", "one", "hi"}, {"above0"});  // plain
    graph::Attributes cat;
    cat.set("axis", int64_t{1});
    b.add_node("Concat", "unit", {"other", "scaled"}, {"unit"}, cat);  // plain
    b.add_output("ratio");
    b.add_output("above0");
    b.add_output("unit");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto [plain, blocked] = plain_and_blocked(g);
    // One 1x1 + depthwise pair of them as a BlockedConvDw (graph/passes/conv_fusion.h).
    CHECK(test::count_op(blocked.graph, "BlockedConv") +
              2 * test::count_op(blocked.graph, "BlockedConvDw") ==
          3);
    CHECK(test::count_op(blocked.graph, "ToBlocked") == 2);    // x, scale
    CHECK(test::count_op(blocked.graph, "FromBlocked") == 1);  // scaled, for its plain readers
    for (const graph::Node& n : blocked.graph.nodes()) {
      INFO(n.name << " (" << n.op << ")");
      const size_t rank = blocked.graph.value(n.outputs[0]).desc.rank();
      if (n.name == "r1" || n.name == "r2" || n.name == "around0" || n.name == "scaled")
        CHECK(rank == 5);
      if (n.name == "sig" || n.name == "ratio" || n.name == "above0" || n.name == "unit")
        CHECK(rank == 4);
    }
    for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
  }
}

TEST_CASE("blocked_layout: a DenseNet layer's pre-activation (per-channel constants) stays blocked",
          "[passes][conv][layout]") {
  // An imported inference BatchNormalization before a ReLU and a conv (DenseNet's pre-activation:
  // Mul and Add by [C, 1, 1] constants) on the concat of blocked values: the constants are laid
  // out blocked once, at compile time (no ToBlocked), and nothing leaves the blocked layout
  // before the output. 40 channels: the constants' padding lanes are zero.
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<dense layer>");
    uint64_t seed = 1100;
    b.add_input("x", TensorDesc{DType::kF32, {batch, 3, 10, 10}});
    add_conv(b, seed, "stem", "x", 3, 24, 3, 1);
    add_conv(b, seed, "grow", "stem", 24, 16, 3, 1);
    graph::Attributes cat;
    cat.set("axis", int64_t{1});
    b.add_node("Concat", "cat", {"stem", "grow"}, {"cat"}, cat);  // 24 + 16: padded, not blocked
    add_conv(b, seed, "wide", "x", 3, 32, 1, 1);  // 1x1: not merged with stem (conv_merge)
    add_conv(b, seed, "more", "wide", 32, 16, 1, 1);
    b.add_node("Concat", "cat2", {"wide", "more"}, {"cat2"}, cat);  // 48 channels, blocked
    b.add_constant("scale",
                   test::random_tensor(TensorDesc{DType::kF32, {48, 1, 1}}, 1201, 0.5, 1.5));
    b.add_constant("shift", test::random_tensor(TensorDesc{DType::kF32, {48, 1, 1}}, 1202));
    b.add_node("Mul", "bn.scale", {"cat2", "scale"}, {"bn1"});
    b.add_node("Add", "bn.shift", {"bn1", "shift"}, {"bn2"});
    b.add_node("Relu", "act", {"bn2"}, {"act"});
    add_conv(b, seed, "next", "act", 48, 40, 1, 1);
    b.add_constant("s40", test::random_tensor(TensorDesc{DType::kF32, {1, 40, 1, 1}}, 1203));
    b.add_node("Add", "shift40", {"next", "s40"}, {"out"});  // padded 40: Add keeps 0 + 0
    b.add_output("cat");
    b.add_output("out");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto [plain, blocked] = plain_and_blocked(g);
    for (const graph::Node& n : blocked.graph.nodes()) {
      INFO(n.name << " (" << n.op << ")");
      if (n.op == "Mul" || n.op == "Add" || n.op == "Relu")
        CHECK(blocked.graph.value(n.outputs[0]).desc.rank() == 5);
      if (n.name == "cat") CHECK(blocked.graph.value(n.outputs[0]).desc.rank() == 4);
    }
    // Only the activations' boundaries: stem and grow go back for the plain concat, out at the
    // end; the constants need no ToBlocked.
    CHECK(test::count_op(blocked.graph, "ToBlocked") == 0);
    CHECK(test::count_op(blocked.graph, "FromBlocked") == 3);
    for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
  }
}

TEST_CASE("blocked_layout: a U-Net decoder's patch up-samplers and skip Concat stay blocked",
          "[passes][conv][layout]") {
  // enc (32) -> down (48) -> ConvTranspose 2x2 stride 2 back to 32 channels (with bias), Concat
  // with the skip enc, conv; then a 3x3 stride 3 up-sampler from padded 40 channels to padded 24
  // (no bias): BlockedConvTranspose both times (a 1x1 conv to kh*kw*Mp channels + a shuffle of
  // B-lane vectors), no reorder inside, equal to the NCHW path (the patch GEMM kernel, checked
  // against the gather-form definition in tests/ops/test_zoo_ops.cpp).
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<u-net decoder>");
    uint64_t seed = 1300;
    b.add_input("x", TensorDesc{DType::kF32, {batch, 3, 8, 10}});
    add_conv(b, seed, "enc", "x", 3, 32, 3, 1);
    graph::Attributes pool = test::conv_window(2, 2, 0);
    b.add_node("MaxPool", "pool", {"enc"}, {"pool"}, pool);
    add_conv(b, seed, "down", "pool", 32, 48, 3, 1);
    b.add_constant("up.w",
                   test::random_tensor(TensorDesc{DType::kF32, {48, 32, 2, 2}}, seed++, -0.3, 0.3));
    b.add_constant("up.b", test::random_tensor(TensorDesc{DType::kF32, {32}}, seed++));
    graph::Attributes up;
    up.set("strides", std::vector<int64_t>{2, 2});
    b.add_node("ConvTranspose", "up", {"down", "up.w", "up.b"}, {"up"}, up);
    graph::Attributes cat;
    cat.set("axis", int64_t{1});
    b.add_node("Concat", "cat", {"up", "enc"}, {"cat"}, cat);
    add_conv(b, seed, "dec", "cat", 64, 40, 3, 1);
    b.add_constant("up3.w",
                   test::random_tensor(TensorDesc{DType::kF32, {40, 24, 3, 3}}, seed++, -0.3, 0.3));
    graph::Attributes up3;
    up3.set("strides", std::vector<int64_t>{3, 3});
    up3.set("kernel_shape", std::vector<int64_t>{3, 3});
    b.add_node("ConvTranspose", "up3", {"dec", "up3.w"}, {"out"}, up3);
    b.add_output("out");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto [plain, blocked] = plain_and_blocked(g);
    CHECK(test::count_op(blocked.graph, "BlockedConvTranspose") == 2);
    CHECK(test::count_op(blocked.graph, "ConvTranspose") == 0);
    CHECK(test::count_op(blocked.graph, "ToBlocked") == 0);
    CHECK(test::count_op(blocked.graph, "FromBlocked") == 1);  // out
    for (const graph::Node& n : blocked.graph.nodes())
      if (n.op == "Concat") CHECK(blocked.graph.value(n.outputs[0]).desc.rank() == 5);
    // Four layers deep, the outputs reach the hundreds: compared relative to the largest |y|
    // (fp32 sums in another order differ by ~1e-4 absolute there).
    const engine::NamedTensors in = test::random_inputs(g, 7);
    const Tensor want = test::run_graph(plain, in, 1)[0].second;
    double scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      scale = std::max(scale, std::abs(double{want.data_as<float>()[i]}));
    for (int threads : {1, 2}) {
      const Tensor got = test::run_graph(blocked.graph, in, threads)[0].second;
      REQUIRE(got.desc() == want.desc());
      double diff = 0;
      for (int64_t i = 0; i < want.numel(); ++i)
        diff = std::max(diff, std::abs(double{got.data_as<float>()[i]} - want.data_as<float>()[i]));
      CHECK(diff / scale < 1e-5);
    }
  }
}

TEST_CASE("BlockedConvTranspose refuses what is not a patch up-sampler, by node and field",
          "[ops][conv_transpose][layout]") {
  graph::GraphBuilder b("<blocked deconv>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 2, 4, 4, 16}});
  b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {32, 8, 3, 3}}, 1));
  graph::Attributes a;
  a.set("block", int64_t{16});
  a.set("strides", std::vector<int64_t>{2, 2});  // kernel 3, stride 2: not a patch
  b.add_node("BlockedConvTranspose", "deconv", {"x", "w"}, {"y"}, a);
  b.add_output("y");
  auto g = b.finish(ops::Registry::get());
  REQUIRE_FALSE(g.is_ok());
  CHECK_THAT(g.status().message(), Catch::Contains("node 'deconv' (BlockedConvTranspose)"));
  CHECK_THAT(g.status().message(), Catch::Contains("patch up-sampler only"));
  graph::GraphBuilder b2("<blocked deconv channels>");
  b2.add_input("x", TensorDesc{DType::kF32, {1, 3, 4, 4, 16}});  // 48 lanes for C = 32
  b2.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {32, 8, 2, 2}}, 1));
  a.set("strides", std::vector<int64_t>{2, 2});
  b2.add_node("BlockedConvTranspose", "deconv", {"x", "w"}, {"y"}, a);
  b2.add_output("y");
  auto g2 = b2.finish(ops::Registry::get());
  REQUIRE_FALSE(g2.is_ok());
  CHECK_THAT(g2.status().message(), Catch::Contains("does not hold the C = W's dim 0 channels"));
}

namespace {

// A Conv3D (kernel k^3, pad k/2) + bias, optionally Relu; the weights constant unless `runtime_w`.
std::string add_conv3d(graph::GraphBuilder& b, uint64_t& seed, const std::string& name,
                       const std::string& in, int64_t cin, int64_t cout, int64_t k, bool relu,
                       int64_t group = 1) {
  b.add_constant(name + ".w",
                 test::random_tensor(TensorDesc{DType::kF32, {cout, cin / group, k, k, k}}, seed++,
                                     -0.3, 0.3));
  b.add_constant(name + ".b", test::random_tensor(TensorDesc{DType::kF32, {cout}}, seed++));
  graph::Attributes a;
  const int64_t p = k / 2;
  a.set("pads", std::vector<int64_t>{p, p, p, p, p, p});
  a.set("group", group);
  const std::string c = relu ? name + ".c" : name;
  b.add_node("Conv3D", name + ".conv", {in, name + ".w", name + ".b"}, {c}, a);
  if (relu) b.add_node("Relu", name, {c}, {name});
  return name;
}

graph::passes::PipelineOptions ndhwc_options(bool on) {
  graph::passes::PipelineOptions o;
  o.conv3d_channels_last = on;
  return o;
}

}  // namespace

TEST_CASE("blocked_layout: 3-D conv chains run channels-last and equal the NCDHW path",
          "[passes][conv3d][layout]") {
  // A video / volumetric block: conv + Relu, max pool, conv (24 channels), a residual Add of a
  // 1x1x1 conv, a squeeze-excitation gate (ReduceMean -> Sigmoid -> Mul, one run-time value per
  // channel), a 2x up-sampling ConvTranspose3D, a skip Concat, an average pool and a read-out
  // conv of 3 channels: all channels-last with a Transpose at each boundary (x, the gate, the
  // ReduceMean's input and the output), equal to the NCDHW path.
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<volumetric block>");
    uint64_t seed = 1700;
    b.add_input("x", TensorDesc{DType::kF32, {batch, 3, 6, 10, 8}});
    add_conv3d(b, seed, "c1", "x", 3, 16, 3, true);
    graph::Attributes pool;
    pool.set("kernel_shape", std::vector<int64_t>{2, 2, 2});
    pool.set("strides", std::vector<int64_t>{2, 2, 2});
    b.add_node("MaxPool3D", "pool", {"c1"}, {"pool"}, pool);
    add_conv3d(b, seed, "c2", "pool", 16, 24, 3, false);
    add_conv3d(b, seed, "skip", "pool", 16, 24, 1, false);
    b.add_node("Add", "res", {"c2", "skip"}, {"res"});
    graph::Attributes mean;
    mean.set("axes", std::vector<int64_t>{2, 3, 4});
    b.add_node("ReduceMean", "squeeze", {"res"}, {"squeeze"}, mean);
    b.add_node("Sigmoid", "gate", {"squeeze"}, {"gate"});
    b.add_node("Mul", "excite", {"res", "gate"}, {"excite"});
    b.add_constant(
        "up.w", test::random_tensor(TensorDesc{DType::kF32, {24, 8, 2, 2, 2}}, seed++, -0.3, 0.3));
    graph::Attributes up;
    up.set("strides", std::vector<int64_t>{2, 2, 2});
    b.add_node("ConvTranspose3D", "up", {"excite", "up.w"}, {"up"}, up);
    graph::Attributes cat;
    cat.set("axis", int64_t{-4});
    b.add_node("Concat", "cat", {"up", "c1"}, {"cat"}, cat);
    graph::Attributes avg;
    avg.set("kernel_shape", std::vector<int64_t>{3, 3, 3});
    avg.set("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1});
    b.add_node("AveragePool3D", "avg", {"cat"}, {"avg"}, avg);
    // A pre-activation BatchNorm3d (per-channel constants, [1, C, 1, 1, 1] and [C, 1, 1, 1]) and
    // a scalar scale: channels-last constants, no Transpose.
    b.add_constant("bn.s", test::random_tensor(TensorDesc{DType::kF32, {1, 24, 1, 1, 1}}, seed++));
    b.add_constant("bn.t", test::random_tensor(TensorDesc{DType::kF32, {24, 1, 1, 1}}, seed++));
    b.add_constant("half", test::random_tensor(TensorDesc{DType::kF32, {1}}, seed++));
    b.add_node("Mul", "bn.mul", {"avg", "bn.s"}, {"bn.mul"});
    b.add_node("Add", "bn.add", {"bn.t", "bn.mul"}, {"bn.add"});
    b.add_node("Mul", "scaled", {"bn.add", "half"}, {"scaled"});
    add_conv3d(b, seed, "out", "scaled", 24, 3, 1, false);
    b.add_output("out");
    b.add_output("squeeze");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    graph::passes::PipelineOptions off = ndhwc_options(false);
    off.blocked_layout = false;
    const graph::Graph plain =
        value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), off)).graph;
    auto r =
        value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), ndhwc_options(true)));
    REQUIRE(r.changed());
    const graph::Graph& cl = r.graph;
    CHECK(test::count_op(cl, "Conv3DNdhwc") == 4);
    CHECK(test::count_op(cl, "Conv3D") == 0);
    CHECK(test::count_op(cl, "MaxPool3DNdhwc") == 1);
    CHECK(test::count_op(cl, "AveragePool3DNdhwc") == 1);
    CHECK(test::count_op(cl, "ConvTranspose3DNdhwc") == 1);
    // conv_sum: the residual Add is c2's (or skip's) input Z; the batch norm's Add stays.
    CHECK(test::count_op(cl, "Add") == 1);
    size_t with_z = 0;
    for (const graph::Node& n : cl.nodes()) with_z += n.op == "Conv3DNdhwc" && n.inputs.size() == 4;
    CHECK(with_z == 1);
    // x and the gate in, the ReduceMean's input and the output back.
    CHECK(test::count_op(cl, "Transpose") == 4);
    for (const char* op : {"Mul", "Add"})
      for (const graph::Node& n : cl.nodes())
        if (n.op == op) CHECK(cl.value(n.outputs[0]).desc.shape.back() == 24);
    for (const graph::Node& n : cl.nodes())
      if (n.op == "Concat") {  // on the channels, last in NDHWC
        CHECK(std::get<int64_t>(*n.attrs.find("axis")) == 4);
        CHECK(cl.value(n.outputs[0]).desc.shape.back() == 24);
      }
    for (int threads : {1, 2}) test::check_same_outputs(plain, cl, threads, 1e-5);
    // Without the option (oneDNN preferring blocked layouts for 3-D) nothing 3-D changes.
    auto off3d =
        value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), ndhwc_options(false)));
    const graph::Graph& same = off3d.changed() ? off3d.graph : g;
    CHECK(test::count_op(same, "Conv3DNdhwc") == 0);
    CHECK(test::count_op(same, "Transpose") == 0);
  }
}

TEST_CASE("blocked_layout: grouped 3-D convs and run-time weights stay NCDHW",
          "[passes][conv3d][layout]") {
  graph::GraphBuilder b("<volumetric plain>");
  uint64_t seed = 1800;
  b.add_input("x", TensorDesc{DType::kF32, {1, 8, 4, 6, 6}});
  b.add_input("w", TensorDesc{DType::kF32, {8, 8, 3, 3, 3}});
  add_conv3d(b, seed, "grouped", "x", 8, 8, 3, true, 4);
  graph::Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1});
  b.add_node("Conv3D", "trained", {"grouped", "w"}, {"y"}, a);
  b.add_output("y");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), ndhwc_options(true)));
  const graph::Graph& out = r.changed() ? r.graph : g;
  CHECK(test::count_op(out, "Conv3DNdhwc") == 0);
  CHECK(test::count_op(out, "Transpose") == 0);
}

TEST_CASE("blocked_layout: dilated 1-D convs with a causal TCN's pads equal the definition",
          "[passes][conv][layout]") {
  // oneDNN 2.6 has only its reference code for these paddings (dilation 8 with the left pad of
  // two taps; dilation 16 padded on both sides, Bai et al.'s TCN before its chomp); the kernel
  // runs the unpadded convolution of a zero-bordered copy (ops/conv_pool.cpp). NCHW and
  // blocked, against conv2d_ref.
  graph::GraphBuilder b("<tcn convs>");
  uint64_t seed = 970;
  b.add_input("x", TensorDesc{DType::kF32, {2, 16, 1, 50}});
  const Tensor w1 = test::random_tensor(TensorDesc{DType::kF32, {16, 16, 1, 3}}, seed++, -0.3, 0.3);
  const Tensor b1 = test::random_tensor(TensorDesc{DType::kF32, {16}}, seed++);
  const Tensor w2 = test::random_tensor(TensorDesc{DType::kF32, {16, 16, 1, 3}}, seed++, -0.3, 0.3);
  b.add_constant("w1", w1);
  b.add_constant("b1", b1);
  b.add_constant("w2", w2);
  auto dilated = [](int64_t d, std::vector<int64_t> pads) {
    graph::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{1, 3});
    a.set("dilations", std::vector<int64_t>{1, d});
    a.set("pads", std::move(pads));
    return a;
  };
  b.add_node("Conv", "c1", {"x", "w1", "b1"}, {"c1"}, dilated(8, {0, 16, 0, 0}));
  b.add_node("Relu", "r1", {"c1"}, {"r1"});
  b.add_node("Conv", "c2", {"r1", "w2"}, {"y"}, dilated(16, {0, 32, 0, 32}));
  b.add_output("y");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto [plain, blocked] = plain_and_blocked(g);
  CHECK(test::count_op(blocked.graph, "BlockedConv") == 2);

  const engine::NamedTensors in = test::random_inputs(g, 8);
  test::Window2d causal, both;
  causal.pads = {0, 16, 0, 0};
  causal.dilations = {1, 8};
  both.pads = {0, 32, 0, 32};
  both.dilations = {1, 16};
  Tensor r = test::conv2d_ref(in[0].second, w1, &b1, causal, 1);
  for (int64_t i = 0; i < r.numel(); ++i)
    r.data_as<float>()[i] = std::max(r.data_as<float>()[i], 0.0f);
  const Tensor want = test::conv2d_ref(r, w2, nullptr, both, 1);
  for (const graph::Graph* run : {&plain, &blocked.graph}) {
    const engine::NamedTensors out = test::run_graph(*run, in, 2);
    CHECK(test::max_rel_error(out[0].second, want) < 1e-5);
  }
}

TEST_CASE("blocked_layout: scalar Mul / Add between convs stay blocked, padding lanes zero",
          "[passes][conv][layout]") {
  // HGNetV2's learnable scale and bias (scalars) after its convs: y * s + t stays in nChw16c
  // for 32 channels; on 24 channels (a padded block) the Mul stays blocked and the Add of a
  // non-zero scalar goes back to NCHW (it would make the padding lanes t).
  for (int64_t c : {32, 24}) {
    INFO("channels " << c);
    test::NetBuilder nb;
    nb.b.add_input("x", TensorDesc{DType::kF32, {2, 16, 7, 7}});
    std::string y = nb.node("Conv", {"x", nb.weight({c, 16, 3, 3}), nb.weight({c})},
                            test::conv_window(3, 1, 1));
    // (the Relu keeps conv_fusion from folding the scale and shift into the conv's weights)
    y = nb.node("Add",
                {nb.node("Mul", {nb.node("Relu", {y}), nb.scalar(1.5f)}), nb.scalar(-0.25f)});
    nb.b.add_output(nb.node("Conv", {y, nb.weight({16, c, 1, 1}), nb.weight({16})},
                            test::conv_window(1, 1, 0)));
    const graph::Graph g = value_or_throw(nb.finish());
    auto [plain, blocked] = plain_and_blocked(g);
    CHECK(blocked.layout_reorders == (c == 32 ? 2 : 4));  // x in, y out (+ around the Add)
    // (1e-4: a conv may run Winograd on one side and direct on the other)
    for (int threads : {1, 2}) test::check_same_outputs(g, blocked.graph, threads, 1e-4);
  }
}

TEST_CASE("blocked_layout: a depth-multiplier conv runs as a channel repeat + depthwise conv",
          "[passes][conv][layout]") {
  // FastViT's down-sampling convs: group = C, M = 2 C (7x7 stride 2 and 3x3 stride 2, summed).
  // 16 channels (whole blocks) and 24 (a padded block). Against the unblocked graph, where
  // oneDNN runs the grouped conv in NCHW.
  for (int64_t c : {16, 24}) {
    INFO("channels " << c);
    test::NetBuilder nb;
    nb.b.add_input("x", TensorDesc{DType::kF32, {2, 8, 12, 12}});
    const std::string x =
        nb.node("Conv", {"x", nb.weight({c, 8, 3, 3}), nb.weight({c})}, test::conv_window(3, 1, 1));
    graph::Attributes big = test::conv_window(7, 2, 3), small = test::conv_window(3, 2, 1);
    big.set("group", c);
    small.set("group", c);
    const std::string a =
        nb.node("Conv", {x, nb.weight({2 * c, 1, 7, 7}), nb.weight({2 * c})}, big);
    const std::string b = nb.node("Conv", {x, nb.weight({2 * c, 1, 3, 3})}, small);
    nb.b.add_output(nb.node("Conv", {nb.node("Add", {a, b}), nb.weight({16, 2 * c, 1, 1})},
                            test::conv_window(1, 1, 0)));
    const graph::Graph g = value_or_throw(nb.finish());
    auto [plain, blocked] = plain_and_blocked(g);
    CHECK(test::count_op(blocked.graph, "ChannelGather") == 1);  // shared by both convs
    CHECK(test::count_op(blocked.graph, "Conv") == 0);
    CHECK(blocked.layout_reorders == 2);  // x in, the output
    for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-4);
  }
}

TEST_CASE("blocked_layout: a spatial ReduceMean with its axes as an input (opset 18) pools blocked",
          "[passes][conv][layout]") {
  // PyTorch's dynamo exporter writes a squeeze-excitation's adaptive_avg_pool2d(x, 1) as
  // ReduceMean(x, axes=[2, 3] as input 1, keepdims=1); before, each left the blocked layout.
  for (bool axes_input : {true, false}) {
    INFO("axes as " << (axes_input ? "input" : "attribute"));
    CnnBuilder c;
    c.b.add_input("x", TensorDesc{DType::kF32, {2, 32, 10, 10}});
    c.conv("a", "x", 32, 32, 3);
    graph::Attributes mean;
    mean.set("keepdims", int64_t{1});
    if (axes_input) {
      c.b.add_constant("axes", test::i64_tensor({-1, 2}));
      c.b.add_node("ReduceMean", "se_pool", {"a", "axes"}, {"m"}, mean);
    } else {
      mean.set("axes", std::vector<int64_t>{2, -1});
      c.b.add_node("ReduceMean", "se_pool", {"a"}, {"m"}, mean);
    }
    c.b.add_node("Sigmoid", "gate", {"m"}, {"g"});
    c.b.add_node("Mul", "scaled", {"a", "g"}, {"s"});
    c.conv("b", "s", 32, 32, 1);
    c.b.add_output("b");
    const graph::Graph g = c.finish();
    auto [plain, blocked] = plain_and_blocked(g);
    CHECK(test::count_op(blocked.graph, "BlockedAveragePool") == 1);
    CHECK(test::count_op(blocked.graph, "ReduceMean") == 0);
    CHECK(test::count_op(blocked.graph, "FromBlocked") == 1);  // the output only
    for (int threads : {1, 2}) test::check_same_outputs(plain, blocked.graph, threads, 1e-5);
  }
}
