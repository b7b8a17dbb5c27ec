// transpose_sink: tf2onnx's NHWC round trips around element-wise ops (bias Add, Relu, Clip,
// per-channel Mul, a squeeze-excitation's ReduceMean, a Pad before a conv) lose their
// Transposes; the rewritten graphs' outputs equal the original graph's (the Transpose kernel and
// the ops on the transposed layout: another computation of the same values), alone and through
// the whole pipeline (which then runs the chain blocked); what must stay.
#include <catch2/catch.hpp>

#include "graph/passes/pipeline.h"
#include "graph/passes/transpose_sink.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

namespace {

graph::Attributes perm(std::vector<int64_t> p) {
  graph::Attributes a;
  a.set("perm", std::move(p));
  return a;
}

graph::Attributes reduce(std::vector<int64_t> axes) {
  graph::Attributes a;
  a.set("axes", std::move(axes));
  a.set("keepdims", int64_t{1});
  return a;
}

}  // namespace

TEST_CASE("transpose_sink: a tf2onnx NHWC block loses its Transposes", "[passes][conv]") {
  for (int64_t c : {16, 24})                 // 24: padded channel blocks through the pipeline
    for (bool axes_input : {false, true}) {  // the mean's axes as opset 18's input 1
      INFO("channels " << c << ", axes " << (axes_input ? "input" : "attribute"));
      const int64_t n = 2, h = 9, w = 7;
      test::NetBuilder nb;
      nb.b.add_input("x", TensorDesc{DType::kF32, {n, 3, h, w}});
      std::string y = nb.node("Conv", {"x", nb.weight({c, 3, 3, 3})}, test::conv_window(3, 1, 1));
      // To NHWC: bias Add ([C]), Relu, per-channel Mul ([1, 1, 1, C]), Clip, back to NCHW.
      std::string t = nb.node("Transpose", {y}, perm({0, 2, 3, 1}));
      t = nb.node("Add", {t, nb.weight({c})});
      t = nb.node("Relu", {t});
      t = nb.node("Mul", {t, nb.weight({1, 1, 1, c})});
      t = nb.node("Clip", {t, nb.scalar(-1.0f), nb.scalar(2.0f)});
      // A squeeze-excitation in NHWC: mean over H and W, both operands of the Mul held.
      graph::Attributes keep;
      keep.set("keepdims", int64_t{1});
      const std::string m = axes_input ? nb.node("ReduceMean", {t, nb.ints({2, -3})}, keep)
                                       : nb.node("ReduceMean", {t}, reduce({1, 2}));
      t = nb.node("Mul", {t, nb.node("Sigmoid", {m})});
      // Zero padding in NHWC before the next conv.
      t = nb.node("Pad", {t, nb.ints({0, 1, 2, 0, 0, 1, 0, 0})});
      y = nb.node("Transpose", {t}, perm({0, 3, 1, 2}));
      y = nb.node("Conv", {y, nb.weight({c, c, 3, 3})}, test::conv_window(3, 1, 0));
      nb.b.add_output(y);
      const graph::Graph g = value_or_throw(nb.finish());

      auto r = value_or_throw(graph::passes::sink_transposes(g, ops::Registry::get()));
      CHECK(r.transposes == 2);
      CHECK(r.removed == 2);
      CHECK(test::count_op(r.graph, "Transpose") == 0);
      test::check_same_outputs(g, r.graph, 2, 1e-6);

      // Through the pipeline: the Pad folds into the conv, the mean is a blocked pool, one
      // reorder out (at 24 channels the gate's Sigmoid runs NCHW: it would make the padding lanes
      // 0.5, graph/passes/blocked_layout.h).
      auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
      CHECK(test::count_op(p.graph, "Transpose") == 0);
      CHECK(test::count_op(p.graph, "Pad") == 0);
      CHECK(test::count_op(p.graph, "ReduceMean") == 0);
      CHECK(test::count_op(p.graph, "FromBlocked") == (c % 16 == 0 ? 1u : 2u));
      test::check_same_outputs(g, p.graph, 2, 1e-5);
    }
}

TEST_CASE("transpose_sink: leaves what does not commute and keeps graph outputs",
          "[passes][conv]") {
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {2, 4, 5, 3}});
  nb.b.add_input("z", TensorDesc{DType::kF32, {2, 5, 3, 4}});
  const std::string t = nb.node("Transpose", {"x"}, perm({0, 2, 3, 1}));
  // Held and a run-time operand of the NHWC shape: no push; a Softmax over the last axis: no
  // push; a graph output read in NHWC: made.
  const std::string added = nb.node("Add", {t, "z"});
  const std::string soft = nb.node("Softmax", {nb.node("Relu", {t})});
  nb.b.add_output(added);
  nb.b.add_output(soft);
  nb.b.add_output(nb.node("Tanh", {t}));
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::sink_transposes(g, ops::Registry::get()));
  // Pushing through Relu and Tanh would make two Transposes of one: nothing is kept.
  CHECK(r.removed == 0);
  CHECK(test::count_op(r.graph, "Transpose") == 1);
  test::check_same_outputs(g, r.graph, 1, 1e-6);

  // Two inverse Transposes in a row are nothing; a graph output that ends up untransposed is
  // still produced under its name.
  test::NetBuilder nb2;
  nb2.b.add_input("x", TensorDesc{DType::kF32, {2, 4, 5, 3}});
  const std::string a = nb2.node("Transpose", {"x"}, perm({0, 2, 3, 1}));
  const std::string back = nb2.node("Transpose", {nb2.node("Neg", {a})}, perm({0, 3, 1, 2}));
  nb2.b.add_output(back);
  const graph::Graph g2 = value_or_throw(nb2.finish());
  auto r2 = value_or_throw(graph::passes::sink_transposes(g2, ops::Registry::get()));
  CHECK(test::count_op(r2.graph, "Transpose") == 0);
  CHECK(r2.graph.value(r2.graph.outputs()[0]).name == back);
  test::check_same_outputs(g2, r2.graph, 1, 1e-6);
}

TEST_CASE("transpose_sink: a Pad with its constant_value input left empty", "[passes]") {
  // timm's EfficientViT / DaViT (TorchScript export): Transpose, then Pad(x, pads, "") with
  // the optional third input named "" (absent), then the inverse Transpose. It crashed the pass.
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {1, 8, 6, 6}});
  std::string t = nb.node("Transpose", {"x"}, perm({0, 2, 3, 1}));
  t = nb.node("Pad", {t, nb.ints({0, 1, 2, 0, 0, 1, 0, 0}), ""});
  nb.b.add_output(nb.node("Transpose", {nb.node("Relu", {t})}, perm({0, 3, 1, 2})));
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::sink_transposes(g, ops::Registry::get()));
  CHECK(r.removed == 2);
  CHECK(test::count_op(r.graph, "Transpose") == 0);
  test::check_same_outputs(g, r.graph, 1, 1e-7);  // the same values, moved
}
