// pad_fold: all-zero Pads dropped; a zero Pad of the spatial dims read only by a Conv or an
// AveragePool becomes part of that node's pads; everything else untouched. The folded graphs'
// outputs equal the naive reference on the explicitly zero-padded input (conv2d_ref /
// avgpool2d_ref without padding: the definition of Pad then the op) and the original graph's.
#include <catch2/catch.hpp>

#include "graph/passes/pad_fold.h"
#include "graph/passes/pass_util.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"
#include "tests/support/reference_gemm_conv.h"

using namespace graphi;

namespace {

// x [N, C, H, W] with `top` / `left` / `bottom` / `right` rows and columns of zeros around it.
Tensor zero_pad(const Tensor& x, int64_t top, int64_t left, int64_t bottom, int64_t right) {
  const Shape& s = x.desc().shape;
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3], oh = h + top + bottom,
                ow = w + left + right;
  Tensor y(TensorDesc{DType::kF32, {n, c, oh, ow}});
  float* out = y.data_as<float>();
  std::fill(out, out + y.numel(), 0.0f);
  const float* in = x.data_as<float>();
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        out[(p * oh + i + top) * ow + j + left] = in[(p * h + i) * w + j];
  return y;
}

// A Pad of x [N, C, H, W] in opset-11 form: pads as an i64 input, optional fill value input.
std::string add_pad(graph::GraphBuilder& b, const std::string& name, const std::string& x,
                    std::vector<int64_t> pads, float fill = 0.0f, const std::string& mode = "") {
  b.add_constant(name + "/pads", graph::passes::i64_tensor(pads));
  std::vector<std::string> in = {x, name + "/pads"};
  if (fill != 0.0f) {
    Tensor v(TensorDesc{DType::kF32, {}});
    v.data_as<float>()[0] = fill;
    b.add_constant(name + "/value", v);
    in.push_back(name + "/value");
  }
  graph::Attributes a;
  if (!mode.empty()) a.set("mode", mode);
  b.add_node("Pad", name, in, {name}, a);
  return name;
}

}  // namespace

TEST_CASE("pad_fold: zero Pads before Conv and AveragePool become their pads", "[passes][conv]") {
  graph::GraphBuilder b("<pad fold>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 16, 9, 9}});
  const Tensor w = test::random_tensor(TensorDesc{DType::kF32, {16, 16, 3, 3}}, 1, -0.4, 0.4);
  const Tensor bias = test::random_tensor(TensorDesc{DType::kF32, {16}}, 2);
  b.add_constant("w", w);
  b.add_constant("b", bias);
  // Asymmetric (tf2onnx's SAME with stride 2): top 0, left 0, bottom 1, right 1.
  add_pad(b, "p1", "x", {0, 0, 0, 0, 0, 0, 1, 1});
  graph::Attributes conv = test::conv_window(3, 2, 0);
  conv.set("pads", std::vector<int64_t>{1, 0, 0, 0});  // its own padding adds up with the Pad's
  b.add_node("Conv", "c", {"p1", "w", "b"}, {"c"}, conv);
  // PyTorch's AvgPool2d(2, padding=1) export: Pad + AveragePool without pads.
  add_pad(b, "p2", "c", {0, 0, 1, 1, 0, 0, 1, 1});
  graph::Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2});
  pool.set("strides", std::vector<int64_t>{2, 2});
  b.add_node("AveragePool", "a", {"p2"}, {"a"}, pool);
  b.add_output("a");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

  auto r = value_or_throw(graph::passes::fold_pads(g, ops::Registry::get()));
  CHECK(r.folded == 2);
  CHECK(r.removed == 0);
  CHECK(test::count_op(r.graph, "Pad") == 0);
  for (const graph::Node& n : r.graph.nodes()) {
    if (n.op == "Conv")
      CHECK(*graph::attr_ints(n.attrs, "", "pads") == std::vector<int64_t>{1, 0, 1, 1});
    if (n.op == "AveragePool") {
      CHECK(*graph::attr_ints(n.attrs, "", "pads") == std::vector<int64_t>{1, 1, 1, 1});
      CHECK(*graph::attr_int(n.attrs, "", "count_include_pad") == 1);
    }
  }
  test::check_same_outputs(g, r.graph, 1, 1e-5);

  // Against the definition: pad with zeros, then conv and pool without padding of their own.
  const engine::NamedTensors in = test::random_inputs(g, 5);
  const engine::NamedTensors out = test::run_graph(r.graph, in, 2);
  test::Window2d cw;
  cw.strides = {2, 2};
  const Tensor c = test::conv2d_ref(zero_pad(in[0].second, 1, 0, 1, 1), w, &bias, cw, 1);
  test::Window2d pw;
  pw.kernel = {2, 2};
  pw.strides = {2, 2};
  const Tensor ref = test::avgpool2d_ref(zero_pad(c, 1, 1, 1, 1), pw, false);
  CHECK(test::max_rel_error(out[0].second, ref) < 1e-5);

  // Through the whole pipeline (blocked layout after the fold): same numbers.
  auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(p.pads_folded == 2);
  CHECK(test::count_op(p.graph, "Pad") == 0);
  const engine::NamedTensors piped = test::run_graph(p.graph, in, 2);
  CHECK(test::max_rel_error(piped[0].second, ref) < 1e-5);
}

TEST_CASE("pad_fold: an all-zero Pad is dropped whatever reads it", "[passes]") {
  graph::GraphBuilder b("<zero pad>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 3, 4, 5}});
  add_pad(b, "p", "x", {0, 0, 0, 0, 0, 0, 0, 0}, 0.0f, "reflect");
  b.add_node("Relu", "r", {"p"}, {"r"});
  b.add_node("Add", "s", {"p", "r"}, {"s"});
  b.add_output("s");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::fold_pads(g, ops::Registry::get()));
  CHECK(r.removed == 1);
  CHECK(test::count_op(r.graph, "Pad") == 0);
  test::check_same_outputs(g, r.graph);
}

TEST_CASE("pad_fold: Pads that are not plain zero padding of a Conv / AveragePool stay",
          "[passes]") {
  struct Case {
    std::string name;
    std::vector<int64_t> pads;
    float fill = 0.0f;
    std::string mode, reader = "Conv";
    graph::Attributes pool;  // AveragePool's own attributes beyond its window
  };
  graph::Attributes own_pads_excluded;
  own_pads_excluded.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  graph::Attributes ceil;
  ceil.set("ceil_mode", int64_t{1});
  const std::vector<Case> cases = {
      {"fill value 1", {0, 0, 1, 1, 0, 0, 1, 1}, 1.0f, "", "Conv", {}},
      {"reflect mode", {0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, "reflect", "Conv", {}},
      {"channel padding", {0, 1, 0, 0, 0, 0, 0, 0}, 0.0f, "", "AveragePool", {}},
      {"negative pads (a crop)", {0, 0, -1, 0, 0, 0, 1, 0}, 0.0f, "", "Conv", {}},
      {"MaxPool reads it", {0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, "", "MaxPool", {}},
      {"AveragePool with its own pads outside the divisor",
       {0, 0, 1, 1, 0, 0, 1, 1},
       0.0f,
       "",
       "AveragePool",
       own_pads_excluded},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    graph::GraphBuilder b("<pad kept: " + c.name + ">");
    b.add_input("x", TensorDesc{DType::kF32, {1, 4, 6, 6}});
    b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {4, 4, 3, 3}}, 3));
    add_pad(b, "p", "x", c.pads, c.fill, c.mode);
    if (c.reader == "Conv") {
      b.add_node("Conv", "y", {"p", "w"}, {"y"}, test::conv_window(3, 1, 0));
    } else {
      graph::Attributes a = c.pool;
      a.set("kernel_shape", std::vector<int64_t>{2, 2});
      b.add_node(c.reader, "y", {"p"}, {"y"}, a);
    }
    b.add_output("y");
    auto g = b.finish(ops::Registry::get());
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    auto r = value_or_throw(graph::passes::fold_pads(*g, ops::Registry::get()));
    CHECK(r.folded + r.removed == 0);
    CHECK(test::count_op(r.graph, "Pad") == 1);
  }
  // Read by two nodes: the padded tensor is needed anyway.
  graph::GraphBuilder b("<pad read twice>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 4, 6, 6}});
  b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {4, 4, 3, 3}}, 3));
  add_pad(b, "p", "x", {0, 0, 1, 1, 0, 0, 1, 1});
  b.add_node("Conv", "y", {"p", "w"}, {"y"}, test::conv_window(3, 1, 0));
  b.add_node("Relu", "r", {"p"}, {"r"});
  b.add_output("y");
  b.add_output("r");
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = value_or_throw(graph::passes::fold_pads(g, ops::Registry::get()));
  CHECK(r.folded == 0);
}

namespace {

// x [1, 8, 1, 30] -> Conv (1 x 3, dilation d, pads left / right, stride s) -> Slice of the
// last axis [start, end) -> Relu (the graph's output); `twice`: the Conv's output is an output
// too.
graph::Graph conv_then_crop(int64_t left, int64_t right, int64_t d, int64_t stride, int64_t start,
                            int64_t end, int64_t axis = 3, bool twice = false) {
  graph::GraphBuilder b("<conv crop>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 8, 1, 30}});
  b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {8, 8, 1, 3}}, 5, -0.4, 0.4));
  b.add_constant("b", test::random_tensor(TensorDesc{DType::kF32, {8}}, 6));
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{1, 3});
  a.set("dilations", std::vector<int64_t>{1, d});
  a.set("strides", std::vector<int64_t>{1, stride});
  a.set("pads", std::vector<int64_t>{0, left, 0, right});
  b.add_node("Conv", "c", {"x", "w", "b"}, {"c"}, a);
  b.add_constant("s", graph::passes::i64_tensor({start}));
  b.add_constant("e", graph::passes::i64_tensor({end}));
  b.add_constant("a", graph::passes::i64_tensor({axis}));
  b.add_node("Slice", "crop", {"c", "s", "e", "a"}, {"crop"});
  b.add_node("Relu", "r", {"crop"}, {"r"});
  b.add_output("r");
  if (twice) b.add_output("c");
  return value_or_throw(b.finish(ops::Registry::get()));
}

}  // namespace

TEST_CASE("pad_fold: a crop of a Conv's padded border (a TCN's chomp) leaves its pads",
          "[passes][conv]") {
  // Bai et al.'s TCN: pads (k - 1) d on both sides, then x[:, :, :-(k - 1) d]: a causal conv.
  for (int64_t d : {1, 2, 4}) {
    const int64_t p = 2 * d;
    const graph::Graph g = conv_then_crop(p, p, d, 1, 0, -p);
    auto r = value_or_throw(graph::passes::fold_pads(g, ops::Registry::get()));
    CHECK(r.cropped == 1);
    CHECK(test::count_op(r.graph, "Slice") == 0);
    for (const graph::Node& n : r.graph.nodes())
      if (n.op == "Conv")
        CHECK(*graph::attr_ints(n.attrs, "", "pads") == std::vector<int64_t>{0, p, 0, 0});
    for (int threads : {1, 2}) test::check_same_outputs(g, r.graph, threads, 1e-6);
  }
  // Cropping both ends, within the padding on each side.
  const graph::Graph both = conv_then_crop(3, 2, 1, 1, 1, -2);
  auto r = value_or_throw(graph::passes::fold_pads(both, ops::Registry::get()));
  CHECK(r.cropped == 1);
  test::check_same_outputs(both, r.graph, 2, 1e-6);
}

TEST_CASE("pad_fold: crops that are not only a Conv's padding stay", "[passes][conv]") {
  struct Case {
    const char* what;
    graph::Graph g;
  };
  const std::vector<Case> cases = {
      {"more than the right padding", conv_then_crop(2, 2, 1, 1, 0, -3)},
      {"more than the left padding", conv_then_crop(1, 2, 1, 1, 2, 30)},
      {"stride 2", conv_then_crop(2, 2, 1, 2, 0, -1)},
      {"the channels", conv_then_crop(2, 2, 1, 1, 0, 4, 1)},
      {"the conv's output read besides", conv_then_crop(2, 2, 1, 1, 0, -2, 3, true)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto r = value_or_throw(graph::passes::fold_pads(c.g, ops::Registry::get()));
    CHECK(r.cropped == 0);
    CHECK(test::count_op(r.graph, "Slice") == 1);
  }
}
