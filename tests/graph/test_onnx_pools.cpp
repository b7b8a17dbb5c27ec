// ONNX import of the pooling ops of session 26 (graph/onnx/import_conv_pool.cpp): MaxPool's
// Indices output (read: MaxPoolWithIndices; unread: dropped, the MaxPool op), MaxUnpool with
// and without output_shape, LpPool (auto_pad, ceil_mode, dilations) and GlobalLpPool, AveragePool
// with dilations in 1-D; models built byte by byte, outputs against values worked out here.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine/session.h"
#include "graph/onnx/onnx_import.h"
#include "ops/registry.h"
#include "tests/support/proto_writer.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::test::onnx_pb;
using Pw = graphi::test::ProtoWriter;

namespace {

Result<graph::Graph> import_model(const std::string& bytes) {
  return graph::import_onnx_bytes({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()},
                                  "pools.onnx", ops::Registry::get());
}

std::vector<Tensor> run(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  engine::SessionOptions opts;
  opts.pin = false;
  auto s = engine::Session::create(std::make_shared<const graph::Graph>(g), opts);
  REQUIRE(s.is_ok());
  engine::NamedTensors feed;
  for (size_t k = 0; k < inputs.size(); ++k)
    feed.emplace_back(g.value(g.inputs()[k]).name, inputs[k]);
  auto out = (*s)->run(feed);
  if (!out.is_ok()) FAIL(out.status().message());
  std::vector<Tensor> r;
  for (auto& [name, t] : *out) r.push_back(std::move(t));
  return r;
}

std::vector<std::string> op_types(const graph::Graph& g) {
  std::vector<std::string> ops;
  for (const graph::Node& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

Tensor iota(const Shape& s) {
  Tensor t(TensorDesc{DType::kF32, s});
  for (int64_t i = 0; i < static_cast<int64_t>(t.numel()); ++i)
    t.data_as<float>()[i] = static_cast<float>(i + 1);
  return t;
}

std::vector<float> values(const Tensor& t) {
  return {t.data_as<float>(), t.data_as<float>() + t.numel()};
}

}  // namespace

TEST_CASE("onnx pools: MaxPool's Indices read become MaxPoolWithIndices, unread are dropped",
          "[onnx][pool]") {
  for (const Shape& xs : {Shape{2, 3, 9}, Shape{2, 3, 7, 6}, Shape{1, 2, 5, 4, 6}}) {
    const size_t k = xs.size() - 2;
    INFO("X " << shape_to_string(xs));
    const std::vector<int64_t> kernel(k, 2), strides(k, 2), pads(2 * k, 1);
    Shape ys{xs[0], xs[1]};
    for (size_t a = 0; a < k; ++a) ys.push_back((xs[2 + a] + 2 - 2) / 2 + 1);
    const std::vector<Pw> attrs = {ints_attr("kernel_shape", kernel), ints_attr("strides", strides),
                                   ints_attr("pads", pads)};
    Pw g;
    g.m(1, node("MaxPool", {"x"}, {"y", "i"}, "pool", attrs)).s(2, "g");
    g.m(11, value_info("x", 1, xs));
    g.m(12, value_info("y", 1, ys)).m(12, value_info("i", 7, ys));
    auto r = import_model(model(g, 13));
    if (!r.is_ok()) FAIL(r.status().message());
    CHECK(op_types(*r) == std::vector<std::string>{"MaxPoolWithIndices"});
    // Every index points at its maximum, in the window: X's values are all distinct.
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, xs}, 3);
    const std::vector<Tensor> out = run(*r, {x});
    REQUIRE(out.size() == 2);
    REQUIRE(out[1].desc() == TensorDesc{DType::kI64, ys});
    for (int64_t o = 0; o < static_cast<int64_t>(out[0].numel()); ++o) {
      const int64_t at = out[1].data_as<int64_t>()[o];
      REQUIRE(at >= 0);
      REQUIRE(at < static_cast<int64_t>(x.numel()));
      CHECK(x.data_as<float>()[at] == out[0].data_as<float>()[o]);
    }
    // Indices unread: the MaxPool op (oneDNN), Y alone.
    Pw g1;
    g1.m(1, node("MaxPool", {"x"}, {"y", "i"}, "pool", attrs)).s(2, "g");
    g1.m(11, value_info("x", 1, xs)).m(12, value_info("y", 1, ys));
    auto r1 = import_model(model(g1, 13));
    if (!r1.is_ok()) FAIL(r1.status().message());
    for (const std::string& op : op_types(*r1)) CHECK(op != "MaxPoolWithIndices");
    CHECK(values(run(*r1, {x})[0]) == values(out[0]));
  }
}

TEST_CASE("onnx pools: MaxUnpool takes positions in output_shape's layout, as ONNX Runtime does",
          "[onnx][pool]") {
  // ONNX's test_maxunpool_export_with_output_shape (the backend harness lists it as contested):
  // xT [5, 6; 7, 8] to positions 5, 7, 13, 15 of a 5 x 5 output. ONNX Runtime 1.32 and PyTorch's
  // max_unpool2d (output_size (5, 5)) put them at rows 1, 1, 2, 3 and columns 0, 2, 3, 0; the
  // case's expected output puts them where they would be in the default 4 x 4 layout.
  const Pw xi = int64_tensor("xI", {5, 7, 13, 15});
  // xI: int64_tensor writes a 1-D tensor; the op needs X's shape, so reshape it in the graph.
  Pw g2;
  g2.m(1, node("Reshape", {"xI", "ishape"}, {"xI4"}, "r"))
      .m(1, node("MaxUnpool", {"xT", "xI4", "shape"}, {"y"}, "unpool",
                 {ints_attr("kernel_shape", {2, 2}), ints_attr("strides", {2, 2})}))
      .s(2, "g");
  g2.m(5, int64_tensor("shape", {1, 1, 5, 5})).m(5, xi).m(5, int64_tensor("ishape", {1, 1, 2, 2}));
  g2.m(11, value_info("xT", 1, {1, 1, 2, 2})).m(12, value_info("y", 1, {1, 1, 5, 5}));
  auto r = import_model(model(g2, 11));
  if (!r.is_ok()) FAIL(r.status().message());
  Tensor x = iota({1, 1, 2, 2});
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = static_cast<float>(5 + i);
  std::vector<float> want(25, 0.0f);
  want[5] = 5, want[7] = 6, want[13] = 7, want[15] = 8;
  CHECK(values(run(*r, {x})[0]) == want);

  // Without output_shape: (in - 1) * stride + kernel - pads = 4 x 4.
  Pw g3;
  g3.m(1, node("Reshape", {"xI", "ishape"}, {"xI4"}, "r"))
      .m(1, node("MaxUnpool", {"xT", "xI4"}, {"y"}, "unpool",
                 {ints_attr("kernel_shape", {2, 2}), ints_attr("strides", {2, 2})}))
      .s(2, "g");
  g3.m(5, xi).m(5, int64_tensor("ishape", {1, 1, 2, 2}));
  g3.m(11, value_info("xT", 1, {1, 1, 2, 2})).m(12, value_info("y", 1, {1, 1, 4, 4}));
  auto r3 = import_model(model(g3, 9));
  if (!r3.is_ok()) FAIL(r3.status().message());
  std::vector<float> want4(16, 0.0f);
  want4[5] = 5, want4[7] = 6, want4[13] = 7, want4[15] = 8;
  CHECK(values(run(*r3, {x})[0]) == want4);

  // output_shape computed at run time: refused, naming the input.
  Pw g4;
  g4.m(1, node("MaxUnpool", {"xT", "xI", "shape"}, {"y"}, "unpool",
               {ints_attr("kernel_shape", {2, 2})}))
      .s(2, "g");
  g4.m(11, value_info("xT", 1, {1, 1, 2, 2}))
      .m(11, value_info("xI", 7, {1, 1, 2, 2}))
      .m(11, value_info("shape", 7, {4}));
  g4.m(12, value_info("y", 1, {1, 1, 4, 4}));
  auto r4 = import_model(model(g4, 11));
  REQUIRE_FALSE(r4.is_ok());
  CHECK(r4.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(r4.status().message(),
             Catch::StartsWith("pools.onnx") &&
                 Catch::Contains("input 2 (output_shape) must be a constant (static shapes only)"));
}

TEST_CASE("onnx pools: LpPool with auto_pad, ceil_mode and dilations, and GlobalLpPool",
          "[onnx][pool]") {
  // LpPool-18, p = 1, kernel 2, stride 2, ceil_mode: windows [1, 2], [3, 4], [5].
  Pw g;
  g.m(1, node("LpPool", {"x"}, {"y"}, "lp",
              {ints_attr("kernel_shape", {2}), ints_attr("strides", {2}), int_attr("p", 1),
               int_attr("ceil_mode", 1)}))
      .s(2, "g");
  g.m(11, value_info("x", 1, {1, 1, 5})).m(12, value_info("y", 1, {1, 1, 3}));
  auto r = import_model(model(g, 18));
  if (!r.is_ok()) FAIL(r.status().message());
  CHECK(values(run(*r, {iota({1, 1, 5})})[0]) == std::vector<float>{3, 7, 5});

  // p = 2, dilations 2, SAME_UPPER on [1, 1, 1, 5]: out 5, total pad (5-1) + 3 - 5 = 2, one each
  // side; output i takes x[i - 1] and x[i + 1].
  Pw g2;
  g2.m(1, node("LpPool", {"x"}, {"y"}, "lp",
               {ints_attr("kernel_shape", {1, 2}), ints_attr("dilations", {1, 2}),
                str_attr("auto_pad", "SAME_UPPER")}))
      .s(2, "g");
  g2.m(11, value_info("x", 1, {1, 1, 1, 5})).m(12, value_info("y", 1, {1, 1, 1, 5}));
  auto r2 = import_model(model(g2, 18));
  if (!r2.is_ok()) FAIL(r2.status().message());
  const std::vector<float> y2 = values(run(*r2, {iota({1, 1, 1, 5})})[0]);
  const std::vector<double> want2 = {2, std::sqrt(1.0 + 9), std::sqrt(4.0 + 16),
                                     std::sqrt(9.0 + 25), 4};
  REQUIRE(y2.size() == 5);
  for (size_t i = 0; i < 5; ++i) CHECK(y2[i] == Approx(want2[i]).epsilon(1e-6));

  // GlobalLpPool (p = 3) on 1-D and 3-D inputs: an LpPool over every spatial dim.
  for (const Shape& xs : {Shape{2, 3, 4}, Shape{1, 2, 2, 3, 2}}) {
    Shape ys(xs.size(), 1);
    ys[0] = xs[0];
    ys[1] = xs[1];
    Pw g3;
    g3.m(1, node("GlobalLpPool", {"x"}, {"y"}, "glp", {int_attr("p", 3)})).s(2, "g");
    g3.m(11, value_info("x", 1, xs)).m(12, value_info("y", 1, ys));
    auto r3 = import_model(model(g3, 13));
    if (!r3.is_ok()) FAIL(r3.status().message());
    CHECK(op_types(*r3) == std::vector<std::string>{"LpPool"});
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, xs}, 5);
    const std::vector<float> y = values(run(*r3, {x})[0]);
    const int64_t planes = xs[0] * xs[1], per = static_cast<int64_t>(x.numel()) / planes;
    REQUIRE(static_cast<int64_t>(y.size()) == planes);
    for (int64_t p = 0; p < planes; ++p) {
      double sum = 0;
      for (int64_t i = 0; i < per; ++i)
        sum += std::pow(std::abs(x.data_as<float>()[p * per + i]), 3);
      CHECK(y[static_cast<size_t>(p)] == Approx(std::cbrt(sum)).epsilon(1e-5));
    }
  }
}

TEST_CASE("onnx pools: AveragePool-19 with dilations, 1-D through the 2-D op", "[onnx][pool]") {
  // kernel 2, dilation 3 on 1..7: windows (1, 4), (2, 5), (3, 6), (4, 7).
  Pw g;
  g.m(1, node("AveragePool", {"x"}, {"y"}, "avg",
              {ints_attr("kernel_shape", {2}), ints_attr("dilations", {3})}))
      .s(2, "g");
  g.m(11, value_info("x", 1, {1, 1, 7})).m(12, value_info("y", 1, {1, 1, 4}));
  auto r = import_model(model(g, 19));
  if (!r.is_ok()) FAIL(r.status().message());
  CHECK(values(run(*r, {iota({1, 1, 7})})[0]) == std::vector<float>{2.5f, 3.5f, 4.5f, 5.5f});
}
