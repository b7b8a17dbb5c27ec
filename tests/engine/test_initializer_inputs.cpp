// Graph inputs that are also initializers (torch.onnx.export(keep_initializers_as_inputs=True),
// IR < 4 files; graph/onnx/ONNX.md "Initializers listed as inputs"): a constant by default; a
// run-time input with the initializer as its default when the caller names it
// (ImportOptions::override_initializers, SessionOptions::override_initializers, the C API's
// graphi_options.override_initializers, the CLI's --input); a value bound with constant_inputs
// replaces it at import. Outputs are checked against y = x @ w + b computed here.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "graph/npy.h"
#include "graph/onnx/onnx_import.h"
#include "graphi/graphi.h"
#include "graphi/graphi.hpp"
#include "ops/registry.h"
#include "tests/support/proto_writer.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::test::onnx_pb;
using Catch::Matchers::Contains;
using Pw = graphi::test::ProtoWriter;

namespace {

const std::vector<float> kW = {1, 2, 3, 4, 5, 6};   // w [3, 2], the initializer
const std::vector<float> kB = {10, 20};             // b [2], an initializer only
const std::vector<float> kX = {1, 0, -1, 2, 1, 0};  // x [2, 3]

Pw float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& v) {
  Pw t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, 1);
  std::string raw(v.size() * 4, '\0');
  std::memcpy(raw.data(), v.data(), raw.size());
  t.s(8, name).s(9, raw);
  return t;
}

// y = MatMul(x, w) + b; w is an initializer and a graph input, b an initializer only.
std::string model_bytes() {
  Pw g;
  g.m(1, node("MatMul", {"x", "w"}, {"m"}, "mm")).m(1, node("Add", {"m", "b"}, {"y"}, "add"));
  g.s(2, "g");
  g.m(5, float_tensor("w", {3, 2}, kW)).m(5, float_tensor("b", {2}, kB));
  g.m(11, value_info("x", 1, {2, 3})).m(11, value_info("w", 1, {3, 2}));
  g.m(12, value_info("y", 1, {2, 2}));
  return model(g, 13, 7);
}

// A directory per caller: ctest runs the test cases as parallel processes, and scratch_dir empties
// the directory it returns (one test case had deleted the other's model mid-run).
std::string model_file(const std::string& tag) {
  const auto path = graphi::test::scratch_dir("initializer_inputs_" + tag) / "init_input.onnx";
  std::ofstream(path, std::ios::binary) << model_bytes();
  return path.string();
}

std::vector<float> expected(const std::vector<float>& w) {
  std::vector<float> y(4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float acc = kB[size_t(j)];
      for (int k = 0; k < 3; ++k) acc += kX[size_t(i * 3 + k)] * w[size_t(k * 2 + j)];
      y[size_t(i * 2 + j)] = acc;
    }
  return y;
}

Result<graph::Graph> import(const graph::ImportOptions& o) {
  const std::string b = model_bytes();
  return graph::import_onnx_bytes({reinterpret_cast<const std::byte*>(b.data()), b.size()},
                                  "t.onnx", ops::Registry::get(), o);
}

std::vector<std::string> input_names(const graph::Graph& g) {
  std::vector<std::string> names;
  for (graph::ValueId v : g.inputs()) names.push_back(g.value(v).name);
  return names;
}

const std::vector<float> kW2 = {0, 1, 1, 0, -1, 2};

}  // namespace

TEST_CASE("onnx: an initializer listed as an input is a constant unless named",
          "[onnx][initializer_inputs]") {
  Result<graph::Graph> plain = import({});
  REQUIRE(plain.is_ok());
  CHECK(input_names(*plain) == std::vector<std::string>{"x"});  // w folded in as a weight

  graph::ImportOptions named;
  std::map<std::string, Tensor> defaults;
  named.override_initializers = {"w", "x", "not_a_value"};  // x and unknown names: ignored
  named.initializer_defaults = &defaults;
  Result<graph::Graph> g = import(named);
  REQUIRE(g.is_ok());
  CHECK(input_names(*g) == std::vector<std::string>{"x", "w"});
  REQUIRE(defaults.count("w") == 1);
  CHECK(defaults.at("w").desc() == TensorDesc{DType::kF32, {3, 2}});
  CHECK(std::memcmp(defaults.at("w").data(), kW.data(), 24) == 0);

  // b is an initializer only: ONNX makes it a constant, which nobody may override.
  graph::ImportOptions bad;
  bad.override_initializers = {"b"};
  Result<graph::Graph> r = import(bad);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Contains("t.onnx: initializer 'b' is not a graph input: ONNX makes it a constant"));

  // constant_inputs replaces the initializer at import (it stays a constant).
  graph::ImportOptions bound;
  Tensor w2(TensorDesc{DType::kF32, {3, 2}});
  std::memcpy(w2.data(), kW2.data(), 24);
  bound.constant_inputs.emplace("w", w2);
  Result<graph::Graph> c = import(bound);
  REQUIRE(c.is_ok());
  CHECK(input_names(*c) == std::vector<std::string>{"x"});
  Tensor wi(TensorDesc{DType::kI64, {3, 2}});
  graph::ImportOptions wrong;
  wrong.constant_inputs.emplace("w", wi);
  r = import(wrong);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Contains("is an initializer FLOAT[3, 2]; the value bound to "
                                            "it is int64[3, 2]"));
}

TEST_CASE("API: override_initializers feeds an initializer input, its default otherwise",
          "[api][initializer_inputs]") {
  const std::string path = model_file("api");
  const graphi::Array x = graphi::Array::view("x", DType::kF32, {2, 3}, kX.data());
  const graphi::Array w = graphi::Array::view("w", DType::kF32, {3, 2}, kW2.data());
  auto y_of = [](const graphi::Expected<std::vector<graphi::Array>>& out) {
    INFO(out.error().message);
    REQUIRE(out.ok());
    const float* p = (*out)[0].data_as<float>();
    return std::vector<float>(p, p + 4);
  };
  {
    auto s = graphi::Session::open(path);  // not named: a constant, feeding it is an error
    REQUIRE(s.ok());
    CHECK(s->inputs().size() == 1);
    CHECK(y_of(s->run({x})) == expected(kW));
    auto fed = s->run({x, w});
    REQUIRE_FALSE(fed.ok());
    CHECK_THAT(fed.error().message, Contains("'w' is not an input"));
  }
  graphi::SessionOptions o;
  o.override_initializers = {"w"};
  auto s = graphi::Session::open(path, o);
  INFO(s.error().message);
  REQUIRE(s.ok());
  REQUIRE(s->inputs().size() == 2);
  CHECK(s->inputs()[1].name == "w");
  CHECK(y_of(s->run({x, w})) == expected(kW2));  // the caller's value
  CHECK(y_of(s->run({x})) == expected(kW));      // the initializer
  CHECK(y_of(s->run({w, x})) == expected(kW2));

  o.override_initializers = {"v"};
  auto bad = graphi::Session::open(path, o);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message,
             Contains("override_initializers names 'v', which is not an input"));

  // The C API: the same through graphi_options.
  graphi_options co;
  graphi_options_init(&co);
  const char* names[] = {"w"};
  co.override_initializers = names;
  co.num_override_initializers = 1;
  graphi_session* cs = nullptr;
  REQUIRE(graphi_session_open(path.c_str(), &co, &cs) == GRAPHI_OK);
  CHECK(graphi_session_num_inputs(cs) == 2);
  const int64_t xs[] = {2, 3}, ws[] = {3, 2};
  const graphi_tensor in[] = {{"x", GRAPHI_F32, 2, xs, kX.data(), 24},
                              {"w", GRAPHI_F32, 2, ws, kW2.data(), 24}};
  for (size_t n : {size_t{2}, size_t{1}}) {
    graphi_outputs* out = nullptr;
    REQUIRE(graphi_session_run(cs, in, n, &out) == GRAPHI_OK);
    graphi_tensor y;
    REQUIRE(graphi_outputs_get(out, 0, &y) == GRAPHI_OK);
    const auto* p = static_cast<const float*>(y.data);
    CHECK(std::vector<float>(p, p + 4) == expected(n == 2 ? kW2 : kW));
    graphi_outputs_free(out);
  }
  graphi_session_free(cs);
  co.override_initializers = nullptr;
  CHECK(graphi_session_open(path.c_str(), &co, &cs) == GRAPHI_INVALID_ARGUMENT);
  CHECK_THAT(graphi_last_error(), Contains("override_initializers is NULL"));
}

TEST_CASE("CLI: --input NAME=FILE overrides an initializer input", "[cli][initializer_inputs]") {
  const std::string path = model_file("cli_model");
  const auto dir = graphi::test::scratch_dir("initializer_inputs_cli");
  Tensor x(TensorDesc{DType::kF32, {2, 3}}), w(TensorDesc{DType::kF32, {3, 2}});
  std::memcpy(x.data(), kX.data(), 24);
  std::memcpy(w.data(), kW2.data(), 24);
  REQUIRE(graph::write_npy((dir / "x.npy").string(), x).is_ok());
  REQUIRE(graph::write_npy((dir / "w.npy").string(), w).is_ok());
  for (bool feed_w : {false, true}) {
    std::vector<std::string> args = {
        "run",      path, "--input",      "x=" + (dir / "x.npy").string(), "--iterations", "1",
        "--warmup", "0",  "--output-dir", (dir / "out").string()};
    if (feed_w) args.insert(args.begin() + 4, {"--input", "w=" + (dir / "w.npy").string()});
    auto r = graphi::test::run_graphi(dir, args);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    Result<Tensor> y = graph::read_npy((dir / "out" / "y.npy").string());
    REQUIRE(y.is_ok());
    const float* p = y->data_as<float>();
    CHECK(std::vector<float>(p, p + 4) == expected(feed_w ? kW2 : kW));
  }
  auto r = graphi::test::run_graphi(
      dir, {"run", path, "--input", "b=" + (dir / "w.npy").string(), "--iterations", "1"});
  CHECK(r.rc != 0);
  CHECK_THAT(r.err, Contains("initializer 'b' is not a graph input"));
}
