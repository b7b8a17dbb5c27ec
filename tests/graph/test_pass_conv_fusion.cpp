// conv_fusion: Conv + activation -> FusedConv where the Conv's output feeds only that activation
// (or the y * gate(y) pair) and is not a graph output; per-channel constant Mul / Add / Sub after
// a conv folded into its weights first; everything else untouched. The fused graphs' outputs
// equal the naive reference (conv2d_ref, then the activation written out) and the unfused graph's.
#include <catch2/catch.hpp>
#include <cmath>
#include <tuple>

#include "graph/passes/conv_fusion.h"
#include "graph/passes/pipeline.h"
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
  // 1e-5: a plain conv may run staged (measured per shape and team size) on one side only.
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);

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

namespace {

// The activation written out (not ops/conv_activation.h's): the reference the fused graph must
// match.
float activate(const std::string& act, float x) {
  const double v = x;
  if (act == "Relu") return static_cast<float>(v > 0 ? v : 0);
  if (act == "Relu6") return static_cast<float>(std::min(std::max(v, 0.0), 6.0));
  if (act == "ClipLow") return static_cast<float>(std::max(v, -0.25));
  if (act == "LeakyRelu") return static_cast<float>(v >= 0 ? v : 0.1 * v);
  if (act == "Sigmoid") return static_cast<float>(1 / (1 + std::exp(-v)));
  if (act == "Tanh") return static_cast<float>(std::tanh(v));
  if (act == "HardSigmoid") return static_cast<float>(std::min(1.0, std::max(0.0, 0.3 * v + 0.4)));
  if (act == "Swish" || act == "SwishSwapped") return static_cast<float>(v / (1 + std::exp(-v)));
  // HardSwish: Mul(y, HardSigmoid(y, 1/6, 1/2)), as the importer writes ONNX's HardSwish.
  return static_cast<float>(v * std::min(1.0, std::max(0.0, v / 6 + 0.5)));
}

}  // namespace

TEST_CASE("conv_fusion: every activation pattern becomes FusedConv and matches the reference",
          "[passes][conv]") {
  struct Case {
    std::string name, fused_as;
  };
  const std::vector<Case> cases = {
      {"Relu", "Relu"},
      {"Relu6", "Clip"},
      {"ClipLow", "Clip"},
      {"LeakyRelu", "LeakyRelu"},
      {"Sigmoid", "Sigmoid"},
      {"Tanh", "Tanh"},
      {"HardSigmoid", "HardSigmoid"},
      {"Swish", "Swish"},
      {"SwishSwapped", "Swish"},
      {"HardSwishMul", "HardSwish"},
  };
  // 16 channels so the default pipeline also runs the fused conv blocked (nChw16c).
  const Tensor w = test::random_tensor(TensorDesc{DType::kF32, {16, 16, 3, 3}}, 21, -0.4, 0.4);
  const Tensor bias = test::random_tensor(TensorDesc{DType::kF32, {16}}, 22);
  for (const Case& c : cases) {
    INFO(c.name);
    graph::GraphBuilder b("<conv activation " + c.name + ">");
    b.add_input("x", TensorDesc{DType::kF32, {2, 16, 7, 7}});
    b.add_constant("w", w);
    b.add_constant("b", bias);
    b.add_node("Conv", "conv", {"x", "w", "b"}, {"y"}, pads1());
    graph::Attributes a;
    if (c.name == "Relu6") {
      Tensor lo(TensorDesc{DType::kF32, {}}), hi(TensorDesc{DType::kF32, {}});
      lo.data_as<float>()[0] = 0.0f;
      hi.data_as<float>()[0] = 6.0f;
      b.add_constant("lo", lo);
      b.add_constant("hi", hi);
      b.add_node("Clip", "act", {"y", "lo", "hi"}, {"out"});
    } else if (c.name == "ClipLow") {  // opset 6: attributes, no max
      a.set("min", -0.25);
      b.add_node("Clip", "act", {"y"}, {"out"}, a);
    } else if (c.name == "LeakyRelu") {
      a.set("alpha", 0.1);
      b.add_node("LeakyRelu", "act", {"y"}, {"out"}, a);
    } else if (c.name == "HardSigmoid") {
      a.set("alpha", 0.3);
      a.set("beta", 0.4);
      b.add_node("HardSigmoid", "act", {"y"}, {"out"}, a);
    } else if (c.name == "Swish" || c.name == "SwishSwapped") {
      b.add_node("Sigmoid", "gate", {"y"}, {"s"});
      if (c.name == "Swish")
        b.add_node("Mul", "act", {"y", "s"}, {"out"});
      else
        b.add_node("Mul", "act", {"s", "y"}, {"out"});
    } else if (c.name == "HardSwishMul") {
      a.set("alpha", 1.0 / 6.0);
      a.set("beta", 0.5);
      b.add_node("HardSigmoid", "gate", {"y"}, {"s"}, a);
      b.add_node("Mul", "act", {"y", "s"}, {"out"});
    } else {
      b.add_node(c.name, "act", {"y"}, {"out"});
    }
    b.add_output("out");
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
    auto r = value_or_throw(graph::passes::fuse_conv_activations(g, ops::Registry::get()));
    REQUIRE(r.fused == 1);
    REQUIRE(r.graph.num_nodes() == 1);
    CHECK(std::get<std::string>(*r.graph.node(0).attrs.find("activation")) == c.fused_as);

    const engine::NamedTensors in = test::random_inputs(g, 31);
    test::Window2d win;
    win.pads = {1, 1, 1, 1};
    Tensor ref = test::conv2d_ref(in[0].second, w, &bias, win, 1);
    for (int64_t i = 0; i < ref.numel(); ++i)
      ref.data_as<float>()[i] = activate(c.name, ref.data_as<float>()[i]);
    auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
    CHECK(test::count_op(p.graph, "BlockedConv") == 1);
    for (int threads : {1, 2}) {
      CHECK(test::max_rel_error(test::run_graph(r.graph, in, threads)[0].second, ref) < 1e-5);
      CHECK(test::max_rel_error(test::run_graph(p.graph, in, threads)[0].second, ref) < 1e-5);
    }
  }
}

TEST_CASE("conv_fusion: a gate read elsewhere or a Clip bound computed at run time stays unfused",
          "[passes][conv]") {
  graph::GraphBuilder b("<conv activation negatives>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 4, 6, 6}});
  b.add_input("hi", TensorDesc{DType::kF32, {}});
  b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {4, 4, 3, 3}}, 41));
  b.add_node("Conv", "c1", {"x", "w"}, {"y1"}, pads1());
  b.add_node("Sigmoid", "gate", {"y1"}, {"s"});
  b.add_node("Mul", "swish", {"y1", "s"}, {"o1"});
  b.add_output("s");  // the gate is also an output: Swish would lose it
  b.add_output("o1");
  b.add_node("Conv", "c2", {"x", "w"}, {"y2"}, pads1());
  b.add_node("Clip", "clip", {"y2", "", "hi"}, {"o2"});  // max is a graph input
  b.add_output("o2");
  b.add_node("Conv", "c3", {"x", "w"}, {"y3"}, pads1());
  b.add_node("Mul", "sq", {"y3", "y3"}, {"o3"});  // y * y: no activation
  b.add_output("o3");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::fuse_conv_activations(g, ops::Registry::get()));
  CHECK(r.fused == 0);
  CHECK(test::count_op(r.graph, "Conv") == 3);
}

TEST_CASE("FusedConv refuses an unknown activation or a wrong parameter count by name",
          "[passes][conv]") {
  for (const auto& [act, params, want] :
       std::vector<std::tuple<std::string, std::vector<double>, std::string>>{
           {"Softplus", {}, "'activation' = 'Softplus' is not supported"},
           {"Clip", {0.0}, "activation Clip takes 2 'activation_params', got 1"},
           {"Clip", {6.0, 0.0}, "min <= max"}}) {
    graph::GraphBuilder b("<fused conv bad>");
    b.add_input("x", TensorDesc{DType::kF32, {1, 4, 6, 6}});
    b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {4, 4, 3, 3}}, 43));
    graph::Attributes a = pads1();
    a.set("activation", act);
    a.set("activation_params", params);
    b.add_node("FusedConv", "fc", {"x", "w"}, {"y"}, a);
    b.add_output("y");
    auto g = b.finish(ops::Registry::get());
    REQUIRE_FALSE(g.is_ok());
    CHECK_THAT(g.status().message(), Catch::Contains("'fc'") && Catch::Contains(want));
  }
}

TEST_CASE("conv_fusion: per-channel constant Mul / Add / Sub after a conv fold into its weights",
          "[passes][conv]") {
  // An unfolded inference BatchNormalization (the importer's Mul + Add) between a conv and its
  // Relu, on a conv with bias, a depthwise one without, and a scalar Sub; then a Mul by a
  // graph input, which must stay.
  graph::GraphBuilder b("<conv affine fold>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 8, 6, 6}});
  b.add_input("s", TensorDesc{DType::kF32, {1, 8, 1, 1}});
  b.add_constant("w1", test::random_tensor(TensorDesc{DType::kF32, {8, 8, 3, 3}}, 51, -0.4, 0.4));
  b.add_constant("b1", test::random_tensor(TensorDesc{DType::kF32, {8}}, 52));
  b.add_constant("scale", test::random_tensor(TensorDesc{DType::kF32, {8, 1, 1}}, 53, 0.5, 1.5));
  b.add_constant("shift", test::random_tensor(TensorDesc{DType::kF32, {1, 8, 1, 1}}, 54));
  b.add_node("Conv", "c1", {"x", "w1", "b1"}, {"y1"}, pads1());
  b.add_node("Mul", "bn.mul", {"scale", "y1"}, {"y1s"});
  b.add_node("Add", "bn.add", {"y1s", "shift"}, {"y1b"});
  b.add_node("Relu", "r1", {"y1b"}, {"r1"});
  graph::Attributes dw = pads1();
  dw.set("group", int64_t{8});
  b.add_constant("w2", test::random_tensor(TensorDesc{DType::kF32, {8, 1, 3, 3}}, 55, -0.4, 0.4));
  b.add_node("Conv", "c2", {"r1", "w2"}, {"y2"}, dw);
  Tensor half(TensorDesc{DType::kF32, {}});
  half.data_as<float>()[0] = 0.5f;
  b.add_constant("half", half);
  b.add_node("Sub", "sub", {"y2", "half"}, {"y2s"});
  b.add_node("Mul", "gate", {"y2s", "s"}, {"out"});  // s is a graph input: not folded
  b.add_output("out");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::fuse_conv_activations(g, ops::Registry::get()));
  CHECK(r.affine_folded == 2);
  CHECK(r.fused == 1);  // c1 with its Relu, once the Mul and Add are gone
  CHECK(test::count_op(r.graph, "Add") == 0);
  CHECK(test::count_op(r.graph, "Sub") == 0);
  CHECK(test::count_op(r.graph, "Mul") == 1);
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);
}

TEST_CASE("conv_fusion: a Conv3D folds its batch norm and takes a ReLU-like activation, not Tanh",
          "[passes][conv]") {
  // nn.Conv3d + BatchNorm3d + ReLU as the importer writes them ([C, 1, 1, 1] and
  // [1, C, 1, 1, 1] constants), then a Conv3D + Clip (ReLU6) and a Conv3D + Tanh, which stays.
  graph::GraphBuilder b("<conv3d fusion>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 3, 4, 6, 5}});
  graph::Attributes p1;
  p1.set("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1});
  b.add_constant("w1",
                 test::random_tensor(TensorDesc{DType::kF32, {8, 3, 3, 3, 3}}, 61, -0.4, 0.4));
  b.add_constant("b1", test::random_tensor(TensorDesc{DType::kF32, {8}}, 62));
  b.add_constant("scale", test::random_tensor(TensorDesc{DType::kF32, {8, 1, 1, 1}}, 63, 0.5, 1.5));
  b.add_constant("shift", test::random_tensor(TensorDesc{DType::kF32, {1, 8, 1, 1, 1}}, 64));
  b.add_node("Conv3D", "c1", {"x", "w1", "b1"}, {"y1"}, p1);
  b.add_node("Mul", "bn.mul", {"y1", "scale"}, {"y1s"});
  b.add_node("Add", "bn.add", {"y1s", "shift"}, {"y1b"});
  b.add_node("Relu", "r1", {"y1b"}, {"r1"});
  b.add_constant("w2",
                 test::random_tensor(TensorDesc{DType::kF32, {4, 8, 1, 3, 3}}, 65, -0.4, 0.4));
  Tensor lo(TensorDesc{DType::kF32, {}}), hi(TensorDesc{DType::kF32, {}});
  lo.data_as<float>()[0] = 0.0f;
  hi.data_as<float>()[0] = 0.5f;
  b.add_constant("lo", lo);
  b.add_constant("hi", hi);
  b.add_node("Conv3D", "c2", {"r1", "w2"}, {"y2"});
  b.add_node("Clip", "clip", {"y2", "lo", "hi"}, {"r2"});
  b.add_node("Conv3D", "c3", {"r1", "w2"}, {"y3"});
  b.add_node("Tanh", "t3", {"y3"}, {"r3"});
  b.add_output("r2");
  b.add_output("r3");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::fuse_conv_activations(g, ops::Registry::get()));
  CHECK(r.affine_folded == 1);
  CHECK(r.fused == 2);  // c1 with its Relu, c2 with its Clip; c3's Tanh stays
  CHECK(test::count_op(r.graph, "Conv3D") == 3);
  CHECK(test::count_op(r.graph, "FusedConv") == 0);
  CHECK(test::count_op(r.graph, "Mul") == 0);
  CHECK(test::count_op(r.graph, "Relu") == 0);
  CHECK(test::count_op(r.graph, "Clip") == 0);
  CHECK(test::count_op(r.graph, "Tanh") == 1);
  for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-5);
}

namespace {

// The BlockedConv nodes of g that take a 4th input Z.
size_t convs_with_sum(const graph::Graph& g) {
  size_t n = 0;
  for (graph::NodeId id = 0; id < g.num_nodes(); ++id)
    n += g.node(id).op == "BlockedConv" && g.node(id).inputs.size() == 4;
  return n;
}

}  // namespace

TEST_CASE("conv_sum: residual Adds (and the Relu after them) fuse into the blocked conv before",
          "[passes][conv]") {
  // A ResNet basic block with identity shortcut, one with a 1x1 stride-2 shortcut conv (both
  // operands of the Add are convs: one takes the other as Z), and three that must stay: a conv
  // read twice, a per-channel (broadcast) operand, a conv that already has an activation.
  graph::GraphBuilder b("<conv sum fusion>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 16, 8, 8}});
  b.add_input("s", TensorDesc{DType::kF32, {1, 32, 1, 1}});
  int seed = 60;
  auto weights = [&](const std::string& name, Shape shape, bool bias) {
    const int64_t m = shape[0];
    b.add_constant(
        name, test::random_tensor(TensorDesc{DType::kF32, std::move(shape)}, ++seed, -0.3, 0.3));
    if (bias)
      b.add_constant(name + ".b", test::random_tensor(TensorDesc{DType::kF32, {m}}, ++seed));
  };
  weights("w1", {16, 16, 3, 3}, true);
  weights("w2", {16, 16, 3, 3}, false);
  weights("w3", {32, 16, 3, 3}, true);
  weights("wd", {32, 16, 1, 1}, true);
  weights("w4", {32, 32, 3, 3}, true);
  weights("w5", {32, 32, 3, 3}, true);
  b.add_node("Conv", "c1", {"x", "w1", "w1.b"}, {"y1"}, test::conv_window(3, 1, 1));
  b.add_node("Relu", "r1", {"y1"}, {"r1"});
  b.add_node("Conv", "c2", {"r1", "w2"}, {"y2"}, test::conv_window(3, 1, 1));  // no bias
  b.add_node("Add", "add1", {"x", "y2"}, {"s1"});                              // Z first
  b.add_node("Relu", "r2", {"s1"}, {"r2"});
  b.add_node("Conv", "c3", {"r2", "w3", "w3.b"}, {"y3"}, test::conv_window(3, 2, 1));
  b.add_node("Conv", "down", {"r2", "wd", "wd.b"}, {"yd"}, test::conv_window(1, 2, 0));
  b.add_node("Add", "add2", {"y3", "yd"}, {"s2"});  // a graph output, no activation after
  b.add_node("Conv", "c4", {"s2", "w4", "w4.b"}, {"y4"}, test::conv_window(3, 1, 1));
  b.add_node("Add", "add3", {"y4", "s2"}, {"s3"});
  b.add_node("Sub", "twice", {"y4", "s3"}, {"s4"});  // y4 read twice: add3 stays
  b.add_node("Add", "bcast", {"s4", "s"}, {"s5"});   // s4 is no conv; s broadcasts anyway
  b.add_node("Conv", "c5", {"s5", "w5", "w5.b"}, {"y5"}, test::conv_window(3, 1, 1));
  b.add_node("Relu", "r5", {"y5"}, {"r5"});          // c5 becomes FusedConv(Relu) first, then takes
  b.add_node("Add", "add4", {"r5", "s2"}, {"out"});  // s2 after its Relu (sum_after_activation)
  b.add_output("s2");
  b.add_output("out");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

  // c3 and down both read r2: conv_reparam would make them one conv; this test is conv_sum's.
  graph::passes::PipelineOptions with_sum;
  with_sum.conv_reparam = false;
  graph::passes::PipelineOptions no_sum = with_sum;
  no_sum.conv_sum = false;
  auto before = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), no_sum));
  auto after = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), with_sum));
  CHECK(convs_with_sum(before.graph) == 0);
  CHECK(after.conv_sums == 3);  // add1 (+ r2), add2, add4 (after c5's Relu)
  CHECK(convs_with_sum(after.graph) == 3);
  CHECK(test::count_op(after.graph, "Add") == test::count_op(before.graph, "Add") - 3);
  CHECK(test::count_op(after.graph, "Relu") == test::count_op(before.graph, "Relu") - 1);
  CHECK(after.summary().find("fused 3 residual Adds into the conv before it (1 with the "
                             "activation after) (1 after the conv's activation)") !=
        std::string::npos);
  // Against the same pipeline without conv_sum, and against the graph without any pass (plain
  // NCHW convs, separate Adds). A 3x3 conv may run Winograd on one side and direct on the other
  // (measured per shape, team size and fused sum: a conv with Z is timed on its own, so even on
  // 1 thread the two pipelines' verdicts can differ; 1e-5 relative per conv, more through the
  // chain: a fresh-clone CI saw 1.17e-5): 1e-4. A wrong or missing Z would be off by O(1).
  for (int threads : {1, 2}) {
    test::check_same_outputs(before.graph, after.graph, threads, 1e-4);
    test::check_same_outputs(g, after.graph, threads, 1e-4);
  }
}

namespace {

// Clip(0, 6) (ReLU6) of every element, in place.
void relu6(Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data_as<float>()[i] = std::min(std::max(t.data_as<float>()[i], 0.0f), 6.0f);
}

}  // namespace

TEST_CASE("conv_dw: a 1x1 conv and the 3x3 depthwise conv reading it become one BlockedConvDw",
          "[passes][conv]") {
  // MobileNetV2's expansion: 1x1 (+ ReLU6) -> depthwise 3x3 (+ ReLU6), at stride 2 and 1: 40
  // expanded channels (two blocks of 16 and a padded one) on an odd 9x9 image, and 48 on 80x80
  // (where oneDNN 2.6 on AVX-512 runs its jit 1x1 kernel with the depthwise rows fused; on the
  // small one it runs the two kernels in turn, the intermediate in its scratchpad); then pairs
  // that must stay apart: a 1x1 conv read twice, one whose activation (Sigmoid) graphi applies
  // after the primitive, and a depthwise conv without padding.
  struct Case {
    int64_t m, hw;
  };
  for (auto [m, hw] : {Case{40, 9}, Case{48, 80}})
    for (int64_t stride : {2, 1}) {
      INFO("depthwise stride " << stride << ", " << m << " channels, " << hw << "x" << hw);
      graph::GraphBuilder b("<conv depthwise fusion>");
      b.add_input("x", TensorDesc{DType::kF32, {2, 16, hw, hw}});
      int seed = 90;
      auto constant = [&](const std::string& name, Shape shape) {
        Tensor t =
            test::random_tensor(TensorDesc{DType::kF32, std::move(shape)}, ++seed, -0.5, 0.5);
        b.add_constant(name, t);
        return t;
      };
      const Tensor w1 = constant("w1", {m, 16, 1, 1}), b1 = constant("b1", {m});
      const Tensor wd = constant("wd", {m, 1, 3, 3}), bd = constant("bd", {m});
      constant("w2", {16, m, 1, 1});
      constant("w3", {32, 16, 1, 1});
      constant("w4", {32, 32, 1, 1});
      constant("wd3", {32, 1, 3, 3});
      graph::Attributes dw = test::conv_window(3, stride, 1);
      dw.set("group", m);
      graph::Attributes dw32 = test::conv_window(3, 1, 1), dw32_nopad = test::conv_window(3, 1, 0);
      dw32.set("group", int64_t{32});
      dw32_nopad.set("group", int64_t{32});
      b.add_node("Conv", "expand", {"x", "w1", "b1"}, {"e"});
      b.add_node("Clip", "e6", {"e"}, {"e6"}, [] {
        graph::Attributes a;
        a.set("min", 0.0);
        a.set("max", 6.0);
        return a;
      }());
      b.add_node("Conv", "dw", {"e6", "wd", "bd"}, {"d"}, dw);
      b.add_node("Clip", "d6", {"d"}, {"d6"}, [] {
        graph::Attributes a;
        a.set("min", 0.0);
        a.set("max", 6.0);
        return a;
      }());
      b.add_node("Conv", "project", {"d6", "w2"}, {"p"});  // the block's output, 16 channels
      // Not fused: `twice` is read by a depthwise conv and a Relu.
      b.add_node("Conv", "twice", {"p", "w3"}, {"t"});
      b.add_node("Conv", "dw_twice", {"t", "wd3"}, {"t1"}, dw32);
      b.add_node("Relu", "also", {"t"}, {"t2"});
      b.add_node("Add", "sum_twice", {"t1", "t2"}, {"t3"});
      // Not fused: Sigmoid on the 1x1 conv; no padding on the depthwise conv.
      b.add_node("Conv", "gated", {"t3", "w4"}, {"g"});
      b.add_node("Sigmoid", "gate", {"g"}, {"gs"});
      b.add_node("Conv", "dw_gated", {"gs", "wd3"}, {"g1"}, dw32);
      b.add_node("Conv", "nopad", {"g1", "w4"}, {"n"});
      b.add_node("Conv", "dw_nopad", {"n", "wd3"}, {"out"}, dw32_nopad);
      b.add_output("d6");
      b.add_output("out");
      const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

      graph::passes::PipelineOptions no_dw;
      no_dw.conv_dw = false;
      auto before = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), no_dw));
      auto after = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
      REQUIRE(test::count_op(before.graph, "BlockedConv") == 9);
      CHECK(after.conv_dws == 1);
      CHECK(test::count_op(after.graph, "BlockedConvDw") == 1);
      CHECK(test::count_op(after.graph, "BlockedConv") == 7);
      CHECK(after.summary().find("fused 1 1x1 + depthwise conv pair into BlockedConvDw") !=
            std::string::npos);
      // The same oneDNN kernels on both sides (the fused primitive runs the 1x1 and depthwise
      // ones, with or without the intermediate rows in between going through memory).
      for (int threads : {1, 2}) test::check_same_outputs(before.graph, after.graph, threads, 1e-5);

      // d6 against the naive reference.
      const engine::NamedTensors in = test::random_inputs(g, 12);
      const engine::NamedTensors out = test::run_graph(after.graph, in, 2);
      test::Window2d pw_win, dw_win;
      dw_win.strides = {stride, stride};
      dw_win.pads = {1, 1, 1, 1};
      Tensor e = test::conv2d_ref(in[0].second, w1, &b1, pw_win, 1);
      relu6(e);
      Tensor ref = test::conv2d_ref(e, wd, &bd, dw_win, m);
      relu6(ref);
      REQUIRE(out[0].first == "d6");
      CHECK(out[0].second.desc().shape == ref.desc().shape);
      CHECK(test::max_rel_error(out[0].second, ref) < 1e-5);
    }
}

TEST_CASE("conv_scale: a squeeze-excitation's channel-scale Mul folds into the 1x1 conv after it",
          "[passes][conv]") {
  // EfficientNet's block tail: X = Relu(conv(x)) (40 channels: two blocks of 16 and a padded
  // one), S = Sigmoid(conv(Relu(conv(GlobalAveragePool(X))))), project(X * S). The projection
  // becomes BlockedConvScaled (at batch 2 with weights per image); X * S read by a 3x3 conv,
  // or read twice, stays. Outputs against the unfused pipeline and a naive reference.
  const int64_t hw = 16, c = 40, m = 24;
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    graph::GraphBuilder b("<conv input scale>");
    b.add_input("x", TensorDesc{DType::kF32, {batch, 16, hw, hw}});
    int seed = 120;
    auto constant = [&](const std::string& name, Shape shape) {
      Tensor t = test::random_tensor(TensorDesc{DType::kF32, std::move(shape)}, ++seed, -0.5, 0.5);
      b.add_constant(name, t);
      return t;
    };
    const Tensor w0 = constant("w0", {c, 16, 1, 1});
    const Tensor ws1 = constant("ws1", {10, c, 1, 1}), bs1 = constant("bs1", {10});
    const Tensor ws2 = constant("ws2", {c, 10, 1, 1}), bs2 = constant("bs2", {c});
    const Tensor w2 = constant("w2", {m, c, 1, 1}), b2 = constant("b2", {m});
    constant("w3", {m, c, 3, 3});
    b.add_node("Conv", "c0", {"x", "w0"}, {"x0"});
    b.add_node("Relu", "r0", {"x0"}, {"a"});
    graph::Attributes gap;  // the importer's GlobalAveragePool
    gap.set("kernel_shape", std::vector<int64_t>{hw, hw});
    b.add_node("AveragePool", "gap", {"a"}, {"p"}, gap);
    b.add_node("Conv", "se1", {"p", "ws1", "bs1"}, {"q"});
    b.add_node("Relu", "se1r", {"q"}, {"qr"});
    b.add_node("Conv", "se2", {"qr", "ws2", "bs2"}, {"g"});
    b.add_node("Sigmoid", "gate", {"g"}, {"s"});
    b.add_node("Mul", "scale", {"a", "s"}, {"ms"});
    b.add_node("Conv", "project", {"ms", "w2", "b2"}, {"y"});
    // Not folded: a 3x3 conv after the Mul; a product read twice.
    b.add_node("Mul", "scale3", {"s", "a"}, {"m3"});
    b.add_node("Conv", "conv3", {"m3", "w3"}, {"y3"}, test::conv_window(3, 1, 1));
    b.add_node("Mul", "scale_twice", {"a", "s"}, {"mt"});
    b.add_node("Conv", "project_twice", {"mt", "w2"}, {"y4"});
    b.add_node("Relu", "also", {"mt"}, {"y5"});
    for (const char* out : {"y", "y3", "y4", "y5"}) b.add_output(out);
    const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

    graph::passes::PipelineOptions no_scale;
    no_scale.conv_scale = false;
    auto before = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), no_scale));
    auto after = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
    CHECK(test::count_op(before.graph, "BlockedConvScaled") == 0);
    CHECK(after.conv_scales == 1);
    CHECK(test::count_op(after.graph, "BlockedConvScaled") == 1);
    CHECK(after.summary().find("folded 1 channel-scale Mul into the 1x1 conv after it") !=
          std::string::npos);
    for (int threads : {1, 2}) test::check_same_outputs(before.graph, after.graph, threads, 1e-5);

    // y against the naive reference.
    const engine::NamedTensors in = test::random_inputs(g, 13);
    const engine::NamedTensors out = test::run_graph(after.graph, in, 2);
    Tensor a = test::conv2d_ref(in[0].second, w0, nullptr, test::Window2d{}, 1);
    for (int64_t i = 0; i < a.numel(); ++i)
      a.data_as<float>()[i] = std::max(a.data_as<float>()[i], 0.0f);
    Tensor p(TensorDesc{DType::kF32, {batch, c, 1, 1}});
    for (int64_t i = 0; i < batch * c; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < hw * hw; ++k) sum += a.data_as<float>()[i * hw * hw + k];
      p.data_as<float>()[i] = static_cast<float>(sum / double(hw * hw));
    }
    Tensor q = test::conv2d_ref(p, ws1, &bs1, test::Window2d{}, 1);
    for (int64_t i = 0; i < q.numel(); ++i)
      q.data_as<float>()[i] = std::max(q.data_as<float>()[i], 0.0f);
    Tensor s = test::conv2d_ref(q, ws2, &bs2, test::Window2d{}, 1);
    for (int64_t i = 0; i < s.numel(); ++i)
      s.data_as<float>()[i] = 1.0f / (1.0f + std::exp(-s.data_as<float>()[i]));
    for (int64_t i = 0; i < a.numel(); ++i)
      a.data_as<float>()[i] *= s.data_as<float>()[i / (hw * hw)];
    const Tensor ref = test::conv2d_ref(a, w2, &b2, test::Window2d{}, 1);
    REQUIRE(out[0].first == "y");
    CHECK(out[0].second.desc().shape == ref.desc().shape);
    CHECK(test::max_rel_error(out[0].second, ref) < 1e-5);
  }
}

TEST_CASE("conv_sum: the residual Add after a conv's own activation (DarkNet, YOLO)",
          "[passes][conv]") {
  // x -> conv + LeakyRelu -> + x; -> conv + SiLU (y * Sigmoid(y), applied after oneDNN's
  // primitive) -> + the previous sum; -> conv + Clip -> + it again. Each Add becomes the conv's
  // input Z with sum_after_activation: Y = act(conv) + Z, against the graph without passes.
  graph::GraphBuilder b("<darknet block>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 32, 9, 9}});
  int seed = 90;
  for (const char* w : {"w1", "w2", "w3"}) {
    b.add_constant(w,
                   test::random_tensor(TensorDesc{DType::kF32, {32, 32, 3, 3}}, ++seed, -0.2, 0.2));
    b.add_constant(std::string(w) + ".b",
                   test::random_tensor(TensorDesc{DType::kF32, {32}}, ++seed));
  }
  graph::Attributes leaky;
  leaky.set("alpha", 0.1);
  b.add_node("Conv", "c1", {"x", "w1", "w1.b"}, {"y1"}, test::conv_window(3, 1, 1));
  b.add_node("LeakyRelu", "a1", {"y1"}, {"a1"}, leaky);
  b.add_node("Add", "s1", {"a1", "x"}, {"s1"});
  b.add_node("Conv", "c2", {"s1", "w2", "w2.b"}, {"y2"}, test::conv_window(3, 1, 1));
  b.add_node("Sigmoid", "g2", {"y2"}, {"g2"});
  b.add_node("Mul", "a2", {"y2", "g2"}, {"a2"});
  b.add_node("Add", "s2", {"s1", "a2"}, {"s2"});
  b.add_node("Conv", "c3", {"s2", "w3", "w3.b"}, {"y3"}, test::conv_window(3, 1, 1));
  b.add_constant("lo", test::random_tensor(TensorDesc{DType::kF32, {}}, 1, 0.0, 0.0));
  b.add_constant("hi", test::random_tensor(TensorDesc{DType::kF32, {}}, 2, 0.5, 0.5));
  b.add_node("Clip", "a3", {"y3", "lo", "hi"}, {"a3"});
  b.add_node("Add", "s3", {"a3", "s2"}, {"out"});
  b.add_output("out");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto after = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(after.conv_sums == 3);
  CHECK(test::count_op(after.graph, "Add") == 0);
  for (const graph::Node& n : after.graph.nodes())
    if (n.op == "BlockedConv") CHECK(n.attrs.has("sum_after_activation"));
  for (int threads : {1, 2}) test::check_same_outputs(g, after.graph, threads, 1e-4);
}

TEST_CASE("conv_fusion: a conv's Gelu (erf and tanh) becomes its post-op", "[passes][conv]") {
  // FastViT's ConvMlp: conv 1x1, GELU, conv 1x1; both of ONNX's Gelu approximations.
  for (const char* approx : {"none", "tanh"}) {
    INFO("approximate " << approx);
    test::NetBuilder nb;
    nb.b.add_input("x", TensorDesc{DType::kF32, {2, 16, 6, 6}});
    graph::Attributes a;
    a.set("approximate", std::string(approx));
    const std::string h =
        nb.node("Gelu",
                {nb.node("Conv", {"x", nb.weight({32, 16, 1, 1}), nb.weight({32})},
                         test::conv_window(1, 1, 0))},
                a);
    nb.b.add_output(nb.node("Conv", {h, nb.weight({16, 32, 1, 1}), nb.weight({16})},
                            test::conv_window(1, 1, 0)));
    const graph::Graph g = value_or_throw(nb.finish());
    auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
    CHECK(test::count_op(p.graph, "Gelu") == 0);
    for (int threads : {1, 2}) test::check_same_outputs(g, p.graph, threads, 1e-5);
  }
}
