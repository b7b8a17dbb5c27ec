// The ONNX importer (graph/onnx/onnx_import.h): PyTorch exports (tests/data/onnx, made by
// gen_onnx_fixtures.py) run through Session and match PyTorch's outputs; ONNX's own backend node
// tests (package libonnx-testdata) run where graphi supports the ops and fail cleanly otherwise;
// hand-built models check each error; truncations and byte flips never crash the reader.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "engine/session.h"
#include "graph/format.h"
#include "graph/graph_file.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_fold.h"
#include "graph/onnx/onnx_import.h"
#include "graph/onnx/onnx_proto.h"
#include "graph/onnx/protobuf_reader.h"
#include "ops/registry.h"
#include "tests/support/proto_writer.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::graph;
namespace fs = std::filesystem;
using graphi::test::onnx_pb::int_attr;
using graphi::test::onnx_pb::ints_attr;
using graphi::test::onnx_pb::str_attr;

namespace {

const std::string kFixtures = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx/";
const char* kNodeTests = "/usr/share/libonnx-testdata/data/node";
const std::string kNodeTests23 =
    std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_node_opset23_28";

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

Result<engine::NamedTensors> run_graph(const Graph& g, const std::vector<Tensor>& inputs) {
  engine::SessionOptions opts;
  opts.pin = false;
  GRAPHI_ASSIGN_OR_RETURN(auto s, engine::Session::create(std::make_shared<const Graph>(g), opts));
  engine::NamedTensors feed;
  for (size_t k = 0; k < inputs.size() && k < g.inputs().size(); ++k)
    feed.emplace_back(g.value(g.inputs()[k]).name, inputs[k]);
  return s->run(feed);
}

// The protobuf writer of tests/support (independent of the reader under test).
using Pw = test::ProtoWriter;

// ValueInfoProto of a tensor; a dim is a number or a symbolic name; {} leaves the shape out.
Pw value_info(const std::string& name, int elem, const std::vector<std::string>& dims) {
  Pw shape;
  for (const std::string& d : dims) {
    Pw dim;
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
      dim.i(1, std::stoll(d));
    else if (!d.empty())
      dim.s(2, d);
    shape.m(1, dim);
  }
  Pw tensor;
  tensor.i(1, elem);
  if (!dims.empty()) tensor.m(2, shape);  // no dims: no shape (unknown), not a scalar
  Pw type;
  type.m(1, tensor);
  Pw v;
  v.s(1, name).m(2, type);
  return v;
}

Pw node(const std::string& op, const std::vector<std::string>& in,
        const std::vector<std::string>& out, const std::string& name,
        const std::vector<Pw>& attrs = {}, const std::string& domain = "") {
  Pw n;
  for (const auto& x : in) n.s(1, x);
  for (const auto& x : out) n.s(2, x);
  n.s(3, name).s(4, op);
  for (const Pw& a : attrs) n.m(5, a);
  if (!domain.empty()) n.s(7, domain);
  return n;
}

Pw float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& v) {
  Pw t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, 1);
  std::string raw(v.size() * 4, '\0');
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());  // empty: data() may be null
  t.s(8, name).s(9, raw);
  return t;
}

std::string model(const Pw& graph, int64_t opset = 14, int64_t ir = 7) {
  Pw op;
  op.s(1, "").i(2, opset);
  Pw m;
  m.i(1, ir).s(2, "graphi-test").m(7, graph).m(8, op);
  return m.b;
}

std::span<const std::byte> span_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

Result<Graph> import_str(const std::string& bytes, const ImportOptions& o = {}) {
  return import_onnx_bytes(span_of(bytes), "t.onnx", ops::Registry::get(), o);
}

// x [2, 3] -> Relu -> y: the smallest valid model, the base of the error tests.
Pw relu_graph(const std::string& op = "Relu", const std::string& domain = "") {
  Pw g;
  g.m(1, node(op, {"x"}, {"y"}, "act", {}, domain)).s(2, "g");
  g.m(11, value_info("x", 1, {"2", "3"})).m(12, value_info("y", 1, {"2", "3"}));
  return g;
}

struct Fixture {
  std::string name;
  size_t outputs;
  ImportOptions options;
};

// ImportOptions with only the symbolic dims set (an aggregate initializer would leave the other
// members to -Wmissing-field-initializers).
ImportOptions with_dims(std::map<std::string, int64_t> dims) {
  ImportOptions o;
  o.dims = std::move(dims);
  return o;
}

}  // namespace

TEST_CASE("onnx: PyTorch exports run and match PyTorch's outputs") {
  std::vector<Fixture> fixtures = {{"lstm_2layer_bidir", 3, {}},
                                   {"gru_dynamic_batch", 2, with_dims({{"batch", 4}})},
                                   {"lstm_cell_unrolled", 2, {}},
                                   {"lstm_cell_unrolled_opset11", 2, {}},
                                   {"mlp", 1, {}},
                                   {"cnn", 1, {}},
                                   {"cnn_dynamic_batch", 1, with_dims({{"n", 3}})},
                                   {"cnn_bn_gap", 1, {}},
                                   {"embed_lstm", 1, {}},
                                   {"rnn_batch_first", 2, {}},
                                   {"layernorm_gelu_mlp", 1, {}}};
  for (const Fixture& f : fixtures) {
    INFO(f.name);
    Result<Graph> g =
        read_graph_file(kFixtures + f.name + ".onnx", ops::Registry::get(), f.options);
    REQUIRE(g.is_ok());
    CHECK(g->metadata().at("format") == "onnx");
    CHECK_THAT(g->metadata().at("producer"), Catch::StartsWith("pytorch"));
    Tensor x = value_or_throw(read_npy(kFixtures + f.name + ".in0.npy"));
    Result<engine::NamedTensors> out = run_graph(*g, {x});
    REQUIRE(out.is_ok());
    REQUIRE(out->size() == f.outputs);
    for (size_t k = 0; k < f.outputs; ++k) {
      Tensor want =
          value_or_throw(read_npy(kFixtures + f.name + ".out" + std::to_string(k) + ".npy"));
      INFO("output " << k << " " << (*out)[k].first);
      CHECK(test::max_rel_error((*out)[k].second, want) <= 1e-4);
    }
  }
}

TEST_CASE("onnx: LayerNorm and GELU as torch exports them at opset 14 run as graphi ops") {
  // The match against PyTorch is in the fixture test above; here: what runs.
  Graph g =
      value_or_throw(read_graph_file(kFixtures + "layernorm_gelu_mlp.onnx", ops::Registry::get()));
  std::map<std::string, int> ops;
  for (const Node& n : g.nodes()) ++ops[n.op];
  CHECK(ops["ReduceMean"] == 2);
  CHECK(ops["Pow"] == 1);
  CHECK(ops["Sqrt"] == 1);
  CHECK(ops["Erf"] == 1);
}

TEST_CASE("onnx: nn.Embedding runs graphi's Gather and a bad token id fails the run") {
  Graph g = value_or_throw(read_graph_file(kFixtures + "embed_lstm.onnx", ops::Registry::get()));
  int gathers = 0;
  for (const Node& n : g.nodes()) gathers += n.op == "Gather";
  CHECK(gathers == 1);  // the embedding; the other three Gathers were shape bookkeeping
  Tensor ids = value_or_throw(read_npy(kFixtures + "embed_lstm.in0.npy"));
  REQUIRE(ids.dtype() == DType::kI64);
  ids.data_as<int64_t>()[3] = 20;  // the vocabulary has 20 entries
  Result<engine::NamedTensors> out = run_graph(g, {ids});
  REQUIRE_FALSE(out.is_ok());
  CHECK_THAT(out.status().message(),
             Catch::Contains("index 20 is out of range for axis 0 of size 20"));
  CHECK(out.status().code() == StatusCode::kInvalidArgument);  // the caller's data, not graphi
}

TEST_CASE("onnx: a file named .onnx that is not a model says so before the decoder's reason") {
  const fs::path dir = test::scratch_dir("onnx_not_a_model");
  auto load = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    Result<Graph> g = read_graph_file((dir / name).string(), ops::Registry::get());
    REQUIRE_FALSE(g.is_ok());
    CHECK(g.status().code() == StatusCode::kInvalidGraph);
    return g.status().message();
  };
  const std::string text = load("notes.onnx", "hello, this is a README\nsecond line\n");
  CHECK_THAT(text, Catch::StartsWith((dir / "notes.onnx").string() + ": not an ONNX model (") &&
                       Catch::Contains("the file is text, starting \"hello, this is a README\"") &&
                       Catch::Contains("); model: field 13 at byte 2 uses protobuf groups"));
  CHECK_THAT(load("empty.onnx", ""), Catch::EndsWith("empty.onnx: not an ONNX model (empty file)"));
  // A .graphi model renamed .onnx.
  Graph mlp = value_or_throw(read_graph_file(kFixtures + "mlp.onnx", ops::Registry::get()));
  std::vector<std::byte> graphi_bytes = value_or_throw(write_graphi_bytes(mlp));
  CHECK_THAT(load("mlp.onnx", std::string(reinterpret_cast<const char*>(graphi_bytes.data()),
                                          graphi_bytes.size())),
             Catch::Contains("mlp.onnx: not an ONNX model (a .graphi file: name it .graphi)"));
  const std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10", 20);
  CHECK_THAT(load("image.onnx", png),
             Catch::Contains("image.onnx: not an ONNX model (a PNG image)"));
  // Binary that is no known file type and whose first key no ModelProto has.
  CHECK_THAT(load("noise.onnx", std::string("\x0b\x01\x02\x03", 4)),
             Catch::Contains("not an ONNX model (it starts with protobuf field 1, wire type 3;"));
  // A real model still loads.
  CHECK(read_graph_file(kFixtures + "mlp.onnx", ops::Registry::get()).is_ok());
}

TEST_CASE("onnx: the load reports parse, import and validate progress through the callback") {
  std::vector<std::tuple<std::string, size_t, size_t>> seen;
  ImportOptions o;
  o.progress = [&](const LoadProgress& p) { seen.emplace_back(p.stage, p.done, p.total); };
  const std::string path = kFixtures + "lstm_2layer_bidir.onnx";
  Graph g = value_or_throw(read_graph_file(path, ops::Registry::get(), o));
  const size_t bytes = fs::file_size(path);
  // 50 ONNX nodes: one report at 0, one at the end.
  const std::vector<std::tuple<std::string, size_t, size_t>> want = {
      {"parse", 0, bytes}, {"parse", bytes, bytes}, {"import", 0, 50},
      {"import", 50, 50},  {"validate", 0, 1},      {"validate", 1, 1}};
  CHECK(seen == want);
  // A .graphi load reports its one stage.
  const fs::path dir = test::scratch_dir("onnx_progress");
  REQUIRE(write_graphi(g, (dir / "m.graphi").string()).is_ok());
  seen.clear();
  REQUIRE(read_graph_file((dir / "m.graphi").string(), ops::Registry::get(), o).is_ok());
  CHECK(seen ==
        std::vector<std::tuple<std::string, size_t, size_t>>{{"parse", 0, 1}, {"parse", 1, 1}});
}

TEST_CASE("onnx: read_graph_file recognizes ONNX content without the extension") {
  const fs::path dir = test::scratch_dir("onnx_dispatch");
  fs::copy_file(kFixtures + "mlp.onnx", dir / "model.bin");
  Result<Graph> g = read_graph_file((dir / "model.bin").string(), ops::Registry::get());
  REQUIRE(g.is_ok());
  CHECK(g->metadata().at("format") == "onnx");
  std::ofstream(dir / "notes.txt") << "plain text, not a model";
  g = read_graph_file((dir / "notes.txt").string(), ops::Registry::get());
  REQUIRE_FALSE(g.is_ok());
  CHECK_THAT(g.status().message(), Catch::Contains("neither a .graphi file nor an ONNX model"));
}

TEST_CASE("onnx: PyTorch shape bookkeeping is folded away") {
  // lstm_2layer_bidir.onnx has 22 Constant, 4 Shape, 4 Gather, 4 Unsqueeze, 6 Concat, 4 Expand:
  // all evaluated at import time; what is left is the real work (two Concats join the layers'
  // final states into the h and c outputs).
  Graph g =
      value_or_throw(read_graph_file(kFixtures + "lstm_2layer_bidir.onnx", ops::Registry::get()));
  std::map<std::string, int> ops;
  for (const Node& n : g.nodes()) ++ops[n.op];
  for (const auto& [op, count] : ops) UNSCOPED_INFO(op << " " << count);
  CHECK(ops ==
        std::map<std::string, int>{{"LSTM", 2}, {"Transpose", 2}, {"Reshape", 2}, {"Concat", 2}});
  // The unrolled cell: chunk() became Slices with constant bounds, x[t] a Slice + Reshape.
  Graph c =
      value_or_throw(read_graph_file(kFixtures + "lstm_cell_unrolled.onnx", ops::Registry::get()));
  for (const Node& n : c.nodes()) {
    INFO(n.name);
    CHECK((n.op == "Gemm" || n.op == "MatMul" || n.op == "Add" || n.op == "Mul" ||
           n.op == "Sigmoid" || n.op == "Tanh" || n.op == "Slice" || n.op == "Reshape" ||
           n.op == "Concat" || n.op == "Identity"));
  }
}

TEST_CASE("onnx: symbolic dims need --dim, unused --dim names are errors") {
  const std::string path = kFixtures + "gru_dynamic_batch.onnx";
  Result<Graph> r = read_graph_file(path, ops::Registry::get());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(),
             Catch::Contains(path + ": graph input 0 'x': dim 1 is symbolic ('batch')") &&
                 Catch::Contains("--dim batch=N"));
  r = read_graph_file(path, ops::Registry::get(), with_dims({{"batch", 2}, {"seq", 3}}));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("--dim seq names no symbolic dim") &&
                                       Catch::Contains("it has: batch"));
  // A misspelt name and the dim it was meant for: both said at once.
  r = read_graph_file(path, ops::Registry::get(), with_dims({{"bsz", 2}}));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("--dim batch=N") &&
                                       Catch::Contains("the model has no symbolic dim named bsz"));
  r = read_graph_file(path, ops::Registry::get(), with_dims({{"batch", 7}}));
  REQUIRE(r.is_ok());
  CHECK(r->value(r->inputs()[0]).desc.shape == Shape{5, 7, 8});
  // Hand-built: symbolic dim in a model without any folding.
  Pw g;
  g.m(1, node("Relu", {"x"}, {"y"}, "act"))
      .m(11, value_info("x", 1, {"n", "3"}))
      .m(12, value_info("y", 1, {}));
  r = import_str(model(g));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("t.onnx: graph input 0 'x': dim 0 is symbolic ('n')"));
  r = import_str(model(g), with_dims({{"n", 5}}));
  REQUIRE(r.is_ok());
  CHECK(r->value(r->outputs()[0]).desc.shape == Shape{5, 3});
}

TEST_CASE("onnx: unsupported ops name the file, node, op, domain and what is supported") {
  Result<Graph> r = import_str(model(relu_graph("NonZero")));
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(
      r.status().message(),
      Catch::Contains("t.onnx: node[0] 'act' (NonZero): op type 'NonZero' (domain 'ai.onnx', opset "
                      "14) is not supported") &&
          Catch::Contains("graphi runs these ONNX ops: Abs, ") && Catch::Contains("LSTM") &&
          Catch::Contains("import time") && Catch::Contains("ConstantOfShape"));
  r = import_str(model(relu_graph("Relu", "com.microsoft")));
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() ==
        "t.onnx: node[0] 'act' (Relu): op type 'Relu' (domain 'com.microsoft') is not supported: "
        "graphi runs the ops of ONNX's default domain (ai.onnx) only (and com.microsoft's "
        "DynamicQuantizeLSTM and DynamicQuantizeMatMul) (see graph/onnx/ONNX.md)");
  // A fold-only op on run-time data.
  r = import_str(model(relu_graph("ConstantOfShape")));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("(ConstantOfShape): op type 'ConstantOfShape'") &&
                 Catch::Contains("with inputs computed at run time (input 'x')"));
  // ... and, as a known op, without the list of every op graphi runs.
  CHECK_THAT(r.status().message(), !Catch::Contains("graphi runs these ONNX ops"));
}

TEST_CASE("onnx: malformed and unsupported files give clear errors") {
  // Truncated: the graph field claims more bytes than remain.
  const std::string good = model(relu_graph());
  REQUIRE(import_str(good).is_ok());
  Result<Graph> r = import_str(good.substr(0, good.size() - 1));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("t.onnx: model: field 8") && Catch::Contains("remain"));
  // Inside a node: a truncated attribute varint names the path.
  Pw attr;
  attr.s(1, "axis").i(20, 2);
  std::string a = attr.b + "\x18";  // field 3 (i), varint, with no value byte
  Pw bad_attr;
  bad_attr.b = a;
  Pw g;
  g.m(1, node("Relu", {"x"}, {"y"}, "act")).m(1, node("Softmax", {"y"}, {"z"}, "sm", {bad_attr}));
  g.m(11, value_info("x", 1, {"2", "3"})).m(12, value_info("z", 1, {}));
  r = import_str(model(g));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("t.onnx: graph.node[1].attribute[0]: truncated varint"));
  // Bad field: op_type as a varint.
  Pw n;
  n.s(1, "x").s(2, "y").i(4, 7);
  Pw g2;
  g2.m(1, n).m(11, value_info("x", 1, {"2"})).m(12, value_info("y", 1, {}));
  r = import_str(model(g2));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(
      r.status().message(),
      Catch::Contains("graph.node[0]: op_type has wire type varint, expected length-delimited"));
  // Versions.
  r = import_str(model(relu_graph(), 5));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("t.onnx: ONNX opset 5 is not supported"));
  r = import_str(model(relu_graph(), 14, 99));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("t.onnx: ONNX IR version 99 is not supported"));
  // Non-float input.
  Pw g3;
  g3.m(1, node("Relu", {"x"}, {"y"}, "act"))
      .m(11, value_info("x", 11, {"2"}))
      .m(12, value_info("y", 11, {}));
  r = import_str(model(g3));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("graph input 0 'x' has element type DOUBLE"));
  // External data.
  Pw ext;
  ext.i(1, 3).i(2, 1).s(8, "w").i(14, 1);
  Pw kv;
  kv.s(1, "location").s(2, "weights.bin");
  ext.m(13, kv);
  Pw g4 = relu_graph();
  g4.m(5, ext);
  r = import_str(model(g4));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("graph.initializer[0] 'w': the tensor's data is stored in an "
                             "external file ('weights.bin')"));
  // raw_data of the wrong size.
  Pw wt = float_tensor("w", {2, 3}, {1, 2, 3, 4, 5});
  Pw g5 = relu_graph();
  g5.m(5, wt);
  r = import_str(model(g5));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("'w': raw_data has 20 bytes, expected 24 for FLOAT[2, 3]"));
  // Hostile sizes: a folded ConstantOfShape of 2^40 elements, an input of 2^60 elements.
  Pw shape_attr;
  shape_attr.s(1, "value_ints").i(20, 7).i(8, 1LL << 20).i(8, 1LL << 20);
  Pw g6;
  g6.m(1, node("Constant", {}, {"s"}, "shape", {shape_attr}))
      .m(1, node("ConstantOfShape", {"s"}, {"y"}, "fill"));
  g6.m(12, value_info("y", 1, {}));
  r = import_str(model(g6));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("t.onnx: node[1] 'fill' (ConstantOfShape): the result [1048576, "
                             "1048576] has more than"));
  Pw g7;
  g7.m(1, node("Relu", {"x"}, {"y"}, "act"))
      .m(11, value_info("x", 1, {"1073741824", "1073741824"}));
  g7.m(12, value_info("y", 1, {}));
  r = import_str(model(g7));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("is too large"));
  // Not a model at all.
  r = import_str("");
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("t.onnx: not an ONNX model (empty file)"));
}

TEST_CASE("onnx: import-time folding is bounded per model, not only per tensor") {
  // A model with 2 constant elements may fold at most kMinFoldBudget (2^24) elements in all.
  auto fill_model = [](const std::vector<std::pair<int64_t, int64_t>>& shapes, bool neg) {
    Pw g;
    std::string last;
    for (size_t k = 0; k < shapes.size(); ++k) {
      const std::string s = "s" + std::to_string(k), y = "y" + std::to_string(k);
      Pw shape_attr;
      shape_attr.s(1, "value_ints").i(20, 7).i(8, shapes[k].first).i(8, shapes[k].second);
      g.m(1, node("Constant", {}, {s}, "shape" + std::to_string(k), {shape_attr}))
          .m(1, node("ConstantOfShape", {s}, {y}, "fill" + std::to_string(k)));
      last = y;
    }
    if (neg) {
      g.m(1, node("Neg", {last}, {"z"}, "negate"));
      last = "z";
    }
    g.m(1, node("Relu", {"x"}, {"out"}, "act"))
        .m(11, value_info("x", 1, {"2"}))
        .m(12, value_info("out", 1, {}));
    return model(g);
  };
  // One fold over the budget: refused before it is computed.
  Result<Graph> r = import_str(fill_model({{4096, 4097}}, false));
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(r.status().message(),
             Catch::Contains("t.onnx: node[1] 'fill0' (ConstantOfShape): the result [4096, "
                             "4097] has more than 16777216 elements, too many to evaluate at "
                             "import time"));
  // Two folds, each under the budget, together over it: the second is refused with what is left.
  r = import_str(fill_model({{4096, 2049}, {4096, 2049}}, false));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("node[3] 'fill1' (ConstantOfShape): the result [4096, 2049] has "
                             "more than 8384512 elements"));
  // A fold whose size is its input's (Neg) is counted after it ran.
  r = import_str(fill_model({{4096, 3000}}, true));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("'negate' (Neg): its results have 12288000 elements, more than "
                             "the 4489216 left of this model's import-time folding budget of "
                             "16777216 elements"));
  // Under the budget: imports (the folded constants are unused and dropped).
  r = import_str(fill_model({{1024, 1024}, {1024, 1024}}, true));
  CHECK(r.is_ok());
}

TEST_CASE("onnx: folded Expand matches numpy broadcasting") {
  // Naive reference: out[i] = in[index of i's coordinates with broadcast dims set to 0].
  auto reference = [](const onnx::HostTensor& x, const Shape& out) {
    std::vector<double> r(static_cast<size_t>(shape_numel(out)));
    const size_t rank = out.size(), off = rank - x.shape.size();
    for (size_t k = 0; k < r.size(); ++k) {
      size_t rest = k, src = 0, stride = 1;
      for (size_t d = rank; d-- > 0;) {
        const auto c = static_cast<int64_t>(rest % static_cast<size_t>(out[d]));
        rest /= static_cast<size_t>(out[d]);
        if (d >= off) {
          const int64_t n = x.shape[d - off];
          src += static_cast<size_t>(n == 1 ? 0 : c) * stride;
          stride *= static_cast<size_t>(n);
        }
      }
      r[k] = x.get_f(src);
    }
    return r;
  };
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{3, 1}, {2, 3, 4}},    {{1, 3, 5}, {4, 3, 5}},   {{}, {2, 2}},
      {{2, 1, 3}, {2, 4, 3}}, {{4}, {3, 1, 4}},         {{1}, {7}},
      {{2, 3}, {2, 3}},       {{3, 1, 1}, {1, 3, 2, 2}}};
  for (const auto& [in_shape, target] : cases)
    for (const int32_t type : {int32_t{onnx::kFloat}, int32_t{onnx::kInt64}}) {
      onnx::HostTensor x = onnx::HostTensor::make(type, in_shape);
      for (size_t k = 0; k < x.numel(); ++k)
        if (x.is_float())
          x.f[k] = 0.5 + static_cast<double>(k);
        else
          x.i[k] = 10 + static_cast<int64_t>(k);
      onnx::HostTensor shape = onnx::HostTensor::make(onnx::kInt64, {int64_t(target.size())});
      shape.i = target;
      onnx::Node n;
      n.op = "Expand";
      Result<std::vector<onnx::HostTensor>> r = onnx::fold_node(n, 14, {&x, &shape}, "e");
      REQUIRE(r.is_ok());
      const onnx::HostTensor& o = r->at(0);
      INFO("input " << x.desc() << " to " << o.desc());
      const Shape out_shape = o.shape;
      const std::vector<double> want = reference(x, out_shape);
      REQUIRE(o.numel() == want.size());
      for (size_t k = 0; k < want.size(); ++k) CHECK(o.get_f(k) == want[k]);
    }
}

TEST_CASE("onnx: cycles, undefined inputs and duplicate producers are named") {
  Pw g;
  g.m(1, node("Add", {"x", "c"}, {"a"}, "first")).m(1, node("Relu", {"a"}, {"b"}, "second"));
  g.m(1, node("Relu", {"b"}, {"c"}, "third"));
  g.m(11, value_info("x", 1, {"2"})).m(12, value_info("b", 1, {}));
  Result<Graph> r = import_str(model(g));
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidGraph);
  CHECK_THAT(r.status().message(), Catch::Contains("t.onnx: the graph has a cycle:") &&
                                       Catch::Contains("'first' (Add)") &&
                                       Catch::Contains("'second' (Relu)") &&
                                       Catch::Contains("'third' (Relu)"));
  Pw g2;
  g2.m(1, node("Add", {"x", "nowhere"}, {"y"}, "add"))
      .m(11, value_info("x", 1, {"2"}))
      .m(12, value_info("y", 1, {}));
  r = import_str(model(g2));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("t.onnx: node[0] 'add' (Add): input 'nowhere' is not a graph "
                             "input, an initializer or any node's output"));
  Pw g3;
  g3.m(1, node("Relu", {"x"}, {"y"}, "a")).m(1, node("Tanh", {"x"}, {"y"}, "b"));
  g3.m(11, value_info("x", 1, {"2"})).m(12, value_info("y", 1, {}));
  r = import_str(model(g3));
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("node[1] 'b' (Tanh): output 'y' is also produced by node[0] 'a'"));
}

TEST_CASE("onnx: nodes out of order, initializers as inputs, constant outputs") {
  // Out of topological order, with an initializer also listed as a graph input (IR < 4 style)
  // and a graph output that folds to a constant.
  Pw g;
  g.m(1, node("Relu", {"s"}, {"y"}, "relu")).m(1, node("Add", {"x", "w"}, {"s"}, "add"));
  g.m(1, node("Shape", {"x"}, {"shape"}, "shape"));
  g.m(5, float_tensor("w", {3}, {1.0f, -2.0f, 0.5f}));
  g.m(11, value_info("x", 1, {"2", "3"})).m(11, value_info("w", 1, {"3"}));
  g.m(12, value_info("y", 1, {"2", "3"})).m(12, value_info("shape", 7, {"2"}));
  Graph gr = value_or_throw(import_str(model(g, 11, 5)));
  REQUIRE(gr.inputs().size() == 1);
  Tensor x(TensorDesc{DType::kF32, {2, 3}});
  const float xv[] = {0.5f, 1.0f, -1.0f, 2.0f, 3.0f, -4.0f};
  std::memcpy(x.data(), xv, sizeof xv);
  engine::NamedTensors out = value_or_throw(run_graph(gr, {x}));
  REQUIRE(out.size() == 2);
  const float want[] = {1.5f, 0.0f, 0.0f, 3.0f, 1.0f, 0.0f};
  for (int k = 0; k < 6; ++k) CHECK(out[0].second.data_as<float>()[k] == want[k]);
  REQUIRE(out[1].second.desc() == TensorDesc{DType::kI64, {2}});
  CHECK(out[1].second.data_as<int64_t>()[0] == 2);
  CHECK(out[1].second.data_as<int64_t>()[1] == 3);
}

TEST_CASE("onnx: every truncation and random byte flips end in an error or a valid graph") {
  const std::vector<std::byte> bytes = read_bytes(kFixtures + "cnn.onnx");
  REQUIRE(bytes.size() > 1000);
  size_t errors = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<Graph> r =
        import_onnx_bytes(std::span(bytes.data(), n), "cut.onnx", ops::Registry::get());
    if (!r.is_ok()) {
      ++errors;
      CHECK_THAT(r.status().message(), Catch::StartsWith("cut.onnx: "));
    }
  }
  CHECK(errors >= bytes.size() - 2);  // at most a cut after the last field still loads
  std::mt19937_64 rng(42);
  // Flips in a model with folding (constants, Shape/Gather/Div/Slice chains) and in the CNN.
  const std::vector<std::byte> cell = read_bytes(kFixtures + "lstm_cell_unrolled_opset11.onnx");
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::byte> b = trial % 2 ? bytes : cell;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] ^= static_cast<std::byte>(1 + rng() % 255);
    Result<Graph> r = import_onnx_bytes(b, "flip.onnx", ops::Registry::get());
    if (!r.is_ok()) CHECK_THAT(r.status().message(), Catch::StartsWith("flip.onnx"));
  }
}

TEST_CASE("onnx: protobuf reader edge cases") {
  // Overlong varint, packed repeated fields, unknown fields skipped.
  const std::string overlong = "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f";
  Result<Graph> r = import_str(overlong);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("overlong varint"));
  Pw t;
  std::string packed;
  for (int v : {2, 300, 5}) {
    Pw p;
    p.varint(static_cast<uint64_t>(v));
    packed += p.b;
  }
  t.s(1, packed).i(2, 7).i(99, 1).s(98, "ignored");
  t.i(7, 1);  // unpacked int64_data, 3000 entries expected: error names the count
  std::string name;
  Result<onnx::HostTensor> h = onnx::decode_tensor(span_of(t.b), &name);
  REQUIRE_FALSE(h.is_ok());
  CHECK_THAT(h.status().message(),
             Catch::Contains("int64_data has 1 values, expected 3000 for INT64[2, 300, 5]"));
  Pw t2;
  t2.s(1, packed.substr(0, 1)).i(2, 7).i(7, -5).i(7, 9);
  t2.b.resize(t2.b.size());
  Pw d;
  d.i(1, 2).i(2, 7).i(7, -5).i(7, 1LL << 40);
  h = onnx::decode_tensor(span_of(d.b), &name);
  REQUIRE(h.is_ok());
  CHECK(h->shape == Shape{2});
  CHECK(h->i == std::vector<int64_t>{-5, 1LL << 40});
  const std::string group = "\x0b";  // field 1, start group
  r = import_str(group);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("groups"));
}

// ONNX's backend tests (node, pytorch-converted, pytorch-operator, simple): every case whose ops
// graphi supports must match ONNX's reference outputs; the others must fail with an error that
// names the file (never a crash or a wrong result).
namespace {

struct BackendStats {
  size_t cases = 0;
  int passed = 0, unsupported = 0, refused = 0;
  std::vector<std::string> wrong;
  std::vector<std::string> contested;  // kContested cases that differ, with the reason
  std::set<std::string> passed_names;
};

// Cases whose reference output ONNX's own issue tracker disputes and graphi deliberately does
// not reproduce, with the reason and the test that checks graphi's output instead. They still
// run (a refusal or a crash would count), but a difference is reported, not failed.
const std::map<std::string, std::string> kContested = {
    {"test_maxunpool_export_with_output_shape",
     "MaxUnpool positions are taken in output_shape's layout, as ONNX Runtime and PyTorch take "
     "them (onnx/onnx#2398; the case expects the default shape's layout); "
     "tests/graph/test_onnx_pools.cpp checks ONNX Runtime's output"}};

// Runs every backend test case. Integer inputs (shapes, axes, indices, split sizes) are always
// bound as constants, as graphi graphs are static (ImportOptions::constant_inputs); with
// bind_all the float inputs too, so the whole computation is evaluated at import time where
// the importer can (graph/onnx/onnx_fold.h) and the outputs check the folding against ONNX.
BackendStats run_backend_cases(bool bind_all) {
  BackendStats st;
  std::vector<fs::path> cases;
  const char* env_dirs = std::getenv("GRAPHI_ONNX_TEST_DIRS");  // more directories, ':'-separated
  // The node tests plus PyTorch-converted models and operators and a few small models, all of
  // the same package.
  const std::string root = fs::path(kNodeTests).parent_path().string();
  std::vector<std::string> dirs{kNodeTests};
  for (const char* d : {"pytorch-converted", "pytorch-operator", "simple"})
    if (fs::is_directory(root + "/" + d)) dirs.push_back(root + "/" + d);
  // Cases of opsets 18 to 22 from onnx 1.17's node tests (Debian's package stops at opset 17):
  // tests/data/onnx_node_opset18_22/README.md.
  dirs.push_back(std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_node_opset18_22");
  // And of opsets 23 to 28 from onnx 1.23's case generators: tests/data/onnx_node_opset23_28.
  dirs.push_back(kNodeTests23);
  if (env_dirs) {
    std::string all = env_dirs;
    for (size_t p = 0; p <= all.size();) {
      size_t q = all.find(':', p);
      if (q == std::string::npos) q = all.size();
      if (q > p) dirs.push_back(all.substr(p, q - p));
      p = q + 1;
    }
  }
  for (const std::string& d : dirs)
    for (const auto& e : fs::directory_iterator(d))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  int& passed = st.passed;
  int& unsupported = st.unsupported;
  int& refused = st.refused;
  std::vector<std::string>& wrong = st.wrong;
  st.cases = cases.size();
  const bool verbose = std::getenv("GRAPHI_ONNX_TEST_VERBOSE") != nullptr;  // one line per case
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    ImportOptions options;
    for (int k = 0; fs::exists(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"));
         ++k) {
      std::string in_name;
      Result<Tensor> t = read_onnx_tensor_file(
          (dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb")).string(), &in_name);
      if (t.is_ok() && (bind_all || t->dtype() != DType::kF32) && !in_name.empty())
        options.constant_inputs.emplace(in_name, std::move(*t));
    }
    Result<Graph> g =
        import_onnx_file((dir / "model.onnx").string(), ops::Registry::get(), options);
    if (!g.is_ok()) {
      if (verbose) std::printf("%s: import: %s\n", name.c_str(), g.status().message().c_str());
      if (g.status().code() == StatusCode::kUnsupported)
        ++unsupported;
      else
        ++refused;
      if (g.status().message().rfind((dir / "model.onnx").string(), 0) != 0)
        wrong.push_back(name + ": error without the file name: " + g.status().message());
      continue;
    }
    std::vector<Tensor> inputs;
    std::vector<Tensor> want;
    bool data_ok = true;
    for (int k = 0; fs::exists(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"));
         ++k) {
      std::string in_name;
      Result<Tensor> t = read_onnx_tensor_file(
          (dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb")).string(), &in_name);
      if (!t.is_ok())
        data_ok = false;
      else if (!options.constant_inputs.count(in_name))
        inputs.push_back(std::move(*t));
    }
    for (int k = 0; fs::exists(dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb"));
         ++k) {
      Result<Tensor> t = read_onnx_tensor_file(
          (dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb")).string());
      if (!t.is_ok())
        data_ok = false;
      else
        want.push_back(std::move(*t));
    }
    if (!data_ok || inputs.size() != g->inputs().size()) {
      if (verbose) std::printf("%s: test data not representable\n", name.c_str());
      ++refused;
      continue;
    }
    Result<engine::NamedTensors> out = run_graph(*g, inputs);
    if (!out.is_ok()) {
      if (verbose) std::printf("%s: run: %s\n", name.c_str(), out.status().message().c_str());
      ++refused;  // e.g. no kernel accepts the node
      continue;
    }
    bool ok = out->size() == want.size();
    for (size_t k = 0; ok && k < want.size(); ++k) {
      const double err = test::max_rel_error((*out)[k].second, want[k]);
      if (!(err <= 1e-4)) {
        ok = false;
        const std::string diff = name + ": output " + std::to_string(k) +
                                 " differs (max rel error " + std::to_string(err) + ", " +
                                 (*out)[k].second.desc().to_string() + " vs " +
                                 want[k].desc().to_string() + ")";
        if (kContested.count(name))
          st.contested.push_back(diff + ": " + kContested.at(name));
        else
          wrong.push_back(diff);
      }
    }
    if (verbose && ok) std::printf("%s: pass\n", name.c_str());
    if (verbose && !ok && kContested.count(name))
      std::printf("%s: contested: %s\n", name.c_str(), kContested.at(name).c_str());
    if (ok) {
      ++passed;
      st.passed_names.insert(name);
    } else if (out->size() != want.size())
      wrong.push_back(name + ": output count differs");
  }
  return st;
}

}  // namespace

TEST_CASE("onnx: ONNX backend tests") {
  if (!fs::is_directory(kNodeTests)) {
    WARN("no ONNX test data at " << kNodeTests << " (package libonnx-testdata): skipped");
    return;
  }
  BackendStats st = run_backend_cases(false);
  WARN("ONNX backend tests: " << st.cases << " cases, " << st.passed << " pass, " << st.unsupported
                              << " refused as unsupported (ops, types, attributes), " << st.refused
                              << " refused otherwise (no static shape, empty tensors, ...), "
                              << st.contested.size() << " contested");
  for (const std::string& c : st.contested) WARN("contested: " << c);
  for (const std::string& w : st.wrong) UNSCOPED_INFO(w);
  CHECK(st.wrong.empty());
  CHECK(st.passed > 0);
  // The opset 23-28 cases were chosen among those graphi maps: each must pass, not be refused.
  for (const auto& e : fs::directory_iterator(kNodeTests23))
    if (fs::exists(e.path() / "model.onnx")) {
      INFO(e.path().filename().string());
      CHECK(st.passed_names.count(e.path().filename().string()) == 1);
    }
}

TEST_CASE("onnx: import-time evaluation matches ONNX's backend tests") {
  if (!fs::is_directory(kNodeTests)) {
    WARN("no ONNX test data at " << kNodeTests << " (package libonnx-testdata): skipped");
    return;
  }
  BackendStats st = run_backend_cases(true);
  WARN("ONNX backend tests with every input constant: "
       << st.cases << " cases, " << st.passed << " pass, " << st.unsupported << " + " << st.refused
       << " refused, " << st.contested.size() << " contested");
  for (const std::string& w : st.wrong) UNSCOPED_INFO(w);
  CHECK(st.wrong.empty());
  CHECK(st.passed > 0);
}

namespace {

// AttributeProto of type GRAPH (If's branches).
Pw graph_attr(const std::string& name, const Pw& g) {
  Pw a;
  a.s(1, name).i(20, 5).m(6, g);
  return a;
}

Pw i64_scalar(const std::string& name, int64_t v) {
  Pw t;
  t.i(2, 7);
  std::string raw(8, '\0');
  std::memcpy(raw.data(), &v, 8);
  t.s(8, name).s(9, raw);
  return t;
}

// x [2, 3]; cond = Shape(x)[0] `compare` 1; If(cond): then relu(x) + w (w a then-branch
// initializer), else -x; z = y * y after it; outputs z and y.
std::string if_model(const std::string& compare, bool runtime_cond = false) {
  Pw then_g;
  then_g.m(1, node("Relu", {"x"}, {"t1"}, "then_relu"))
      .m(1, node("Add", {"t1", "w"}, {"tout"}, "then_add"));
  then_g.s(2, "then").m(5, float_tensor("w", {3}, {0.5f, -1.0f, 2.0f}));
  then_g.m(12, value_info("tout", 1, {"2", "3"}));
  Pw else_g;
  else_g.m(1, node("Neg", {"x"}, {"eout"}, "else_neg")).s(2, "else");
  else_g.m(12, value_info("eout", 1, {"2", "3"}));
  Pw g;
  if (runtime_cond) {
    g.m(1, node("Greater", {"a", "fzero"}, {"cond"}, "cmp"));
    g.m(5, float_tensor("fzero", {1}, {0.0f}));
  } else {
    g.m(1, node("Shape", {"x"}, {"s"}, "shape"));
    g.m(1, node("Gather", {"s", "zero"}, {"n0"}, "n0"));
    g.m(1, node(compare, {"n0", "one"}, {"cond"}, "cmp"));
  }
  g.m(1, node("If", {"cond"}, {"y"}, "branch",
              {graph_attr("then_branch", then_g), graph_attr("else_branch", else_g)}));
  g.m(1, node("Mul", {"y", "y"}, {"z"}, "square")).s(2, "g");
  g.m(5, i64_scalar("zero", 0)).m(5, i64_scalar("one", 1));
  g.m(11, value_info("x", 1, {"2", "3"}));
  if (runtime_cond) g.m(11, value_info("a", 1, {"1"}));
  g.m(12, value_info("z", 1, {"2", "3"})).m(12, value_info("y", 1, {"2", "3"}));
  return model(g);
}

}  // namespace

TEST_CASE("onnx: an If whose condition is known at import time becomes its branch's nodes") {
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 9);
  const float w[3] = {0.5f, -1.0f, 2.0f};
  for (const std::string compare : {"Greater", "Less"}) {
    INFO(compare);
    auto r = import_str(if_model(compare));
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    for (const Node& n : r->nodes()) CHECK(n.op != "If");
    auto out = run_graph(*r, {x});
    REQUIRE(out.is_ok());
    const float* z = (*out)[0].second.data_as<float>();
    const float* y = (*out)[1].second.data_as<float>();
    for (int i = 0; i < 6; ++i) {
      const float v = x.data_as<float>()[i];
      const float want = compare == "Greater" ? std::max(v, 0.0f) + w[i % 3] : -v;  // 2 > 1
      CHECK(y[i] == want);
      CHECK(z[i] == want * want);
    }
  }
  // A run-time condition (cond = a > 0): both branches are imported and a Where selects.
  auto runtime = import_str(if_model("Greater", true));
  INFO(runtime.status().message());
  REQUIRE(runtime.is_ok());
  size_t wheres = 0;
  for (const Node& n : runtime->nodes()) {
    CHECK(n.op != "If");
    wheres += n.op == "Where";
  }
  CHECK(wheres == 1);
  for (float a : {1.0f, -1.0f}) {
    INFO("a = " << a);
    Tensor at(TensorDesc{DType::kF32, {1}});
    at.data_as<float>()[0] = a;
    auto out = run_graph(*runtime, {x, at});
    REQUIRE(out.is_ok());
    const float* z = (*out)[0].second.data_as<float>();
    const float* y = (*out)[1].second.data_as<float>();
    for (int i = 0; i < 6; ++i) {
      const float v = x.data_as<float>()[i];
      const float want = a > 0 ? std::max(v, 0.0f) + w[i % 3] : -v;
      CHECK(y[i] == want);
      CHECK(z[i] == want * want);
    }
  }
}

TEST_CASE("onnx: reductions squeezed or reshaped to a scalar (PyTorch 2's x.mean(), opset 20)") {
  // x [2, 3]: s = Squeeze(ReduceMean(x)) and r = Reshape(ReduceSum(x), shape []) are scalars
  // (the shape [] is an empty int64 constant); y = s + r.
  Pw keep;
  keep.s(1, "keepdims").i(3, 1).i(20, 2);
  Pw g;
  g.m(1, node("ReduceMean", {"x"}, {"m"}, "mean", {keep}))
      .m(1, node("Squeeze", {"m"}, {"s"}, "squeeze"))
      .m(1, node("ReduceSum", {"x"}, {"t"}, "sum", {keep}))
      .m(1, node("Reshape", {"t", "scalar_shape"}, {"r"}, "to_scalar"))
      .m(1, node("Add", {"s", "r"}, {"y"}, "add"))
      .s(2, "g");
  g.m(5, test::onnx_pb::int64_tensor("scalar_shape", {}));
  g.m(11, value_info("x", 1, {"2", "3"}));
  g.m(12, value_info("y", 1, {})).m(12, value_info("s", 1, {}));
  auto r = import_str(model(g, 20, 9));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 4);
  double sum = 0;
  for (int i = 0; i < 6; ++i) sum += x.data_as<float>()[i];
  auto out = run_graph(*r, {x});
  REQUIRE(out.is_ok());
  REQUIRE((*out)[0].second.desc().shape.empty());
  REQUIRE((*out)[1].second.desc().shape.empty());
  CHECK(std::abs((*out)[0].second.data_as<float>()[0] - (sum / 6 + sum)) < 1e-5);
  CHECK(std::abs((*out)[1].second.data_as<float>()[0] - sum / 6) < 1e-6);
}

TEST_CASE("onnx: Resize with empty roi and scales tensors and sizes (as tf2onnx writes it)") {
  Pw g;
  g.m(1,
      node("Resize", {"x", "roi", "scales", "sizes"}, {"y"}, "up",
           {str_attr("mode", "nearest"), str_attr("coordinate_transformation_mode", "asymmetric"),
            str_attr("nearest_mode", "floor")}))
      .s(2, "g");
  g.m(5, float_tensor("roi", {0}, {}))
      .m(5, float_tensor("scales", {0}, {}))
      .m(5, test::onnx_pb::int64_tensor("sizes", {1, 1, 4, 6}));
  g.m(11, value_info("x", 1, {"1", "1", "2", "3"}));
  g.m(12, value_info("y", 1, {"1", "1", "4", "6"}));
  auto r = import_str(model(g, 13, 7));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 1, 2, 3}}, 6);
  auto out = run_graph(*r, {x});
  REQUIRE(out.is_ok());
  const float* y = (*out)[0].second.data_as<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) CHECK(y[i * 6 + j] == x.data_as<float>()[(i / 2) * 3 + j / 2]);
}

namespace {

// Loop(M, cond, h0 = x [2]): body(i, c, h) -> (c, 2 h + i, 2 h + i): h_{k+1} = 2 h_k + k, the
// second output stacks every h_{k+1}. `runtime_cond`: the body's condition is h[0] < 100 (a
// run-time value); `runtime_trip`: M is a graph input.
std::string loop_model(int64_t trips, bool runtime_cond = false, bool runtime_trip = false) {
  Pw to_float;
  to_float.s(1, "to").i(3, 1).i(20, 2);
  Pw body;
  body.m(1, node("Cast", {"i"}, {"fi"}, "cast", {to_float}))
      .m(1, node("Mul", {"h", "two"}, {"h2"}, "double"))
      .m(1, node("Add", {"h2", "fi"}, {"h_out"}, "add_i"));
  if (runtime_cond) {
    Pw zero;
    zero.s(1, "axis").i(3, 0).i(20, 2);
    body.m(1, node("ReduceMax", {"h_out"}, {"hmax"}, "max"))
        .m(1, node("Less", {"hmax", "hundred"}, {"c_out"}, "lt"));
    body.m(5, float_tensor("hundred", {}, {100.0f}));
  } else {
    body.m(1, node("Identity", {"c"}, {"c_out"}, "keep"));
  }
  body.m(1, node("Identity", {"h_out"}, {"scan"}, "scan_id")).s(2, "body");
  body.m(5, float_tensor("two", {1}, {2.0f}));
  body.m(11, value_info("i", 7, {})).m(11, value_info("c", 9, {})).m(11, value_info("h", 1, {}));
  body.m(12, value_info("c_out", 9, {}))
      .m(12, value_info("h_out", 1, {}))
      .m(12, value_info("scan", 1, {}));
  Pw g;
  g.m(1, node("Loop", {runtime_trip ? "m" : "trips", "go", "x"}, {"h_final", "hs"}, "loop",
              {graph_attr("body", body)}))
      .s(2, "g");
  if (!runtime_trip) g.m(5, i64_scalar("trips", trips));
  Pw go;
  go.i(2, 9).s(8, "go").s(9, std::string(1, '\1'));
  g.m(5, go);
  g.m(11, value_info("x", 1, {"2"}));
  if (runtime_trip) g.m(11, value_info("m", 7, {"1"}));
  g.m(12, value_info("h_final", 1, {"2"})).m(12, value_info("hs", 1, {"3", "2"}));
  return model(g, 13, 7);
}

}  // namespace

TEST_CASE("onnx: a Loop with a constant trip count is unrolled (tf2onnx's Keras GRU)") {
  auto r = import_str(loop_model(3));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  for (const Node& n : r->nodes()) CHECK(n.op != "Loop");
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2}}, 3);
  auto out = run_graph(*r, {x});
  REQUIRE(out.is_ok());
  const Tensor& hf = (*out)[0].second;
  const Tensor& hs = (*out)[1].second;
  REQUIRE(hs.desc().shape == Shape{3, 2});
  for (int e = 0; e < 2; ++e) {
    float h = x.data_as<float>()[e];
    for (int k = 0; k < 3; ++k) {
      h = 2 * h + static_cast<float>(k);
      CHECK(hs.data_as<float>()[k * 2 + e] == h);
    }
    CHECK(hf.data_as<float>()[e] == h);
  }
  auto rc = import_str(loop_model(3, true));
  REQUIRE_FALSE(rc.is_ok());
  CHECK_THAT(rc.status().message(), Catch::Contains("node[0] 'loop' (Loop)") &&
                                        Catch::Contains("condition is computed at run time"));
  auto rt = import_str(loop_model(3, false, true));
  REQUIRE_FALSE(rt.is_ok());
  CHECK_THAT(rt.status().message(), Catch::Contains("trip count computed at run time"));
  auto big = import_str(loop_model(int64_t{1} << 40));
  REQUIRE_FALSE(big.is_ok());
  CHECK_THAT(big.status().message(), Catch::Contains("more than graphi unrolls"));
}

TEST_CASE("onnx: GroupNormalization-18 (a scale and bias per group) against its definition") {
  // x [2, 6, 3, 4], 3 groups of 2 channels; scale and bias [3] (initializers), epsilon 1e-3.
  // (GroupNormalization-21, one scale and bias per channel, runs ONNX's own backend cases.)
  const std::vector<float> scale = {0.5f, -1.25f, 2.0f}, bias = {0.1f, 0.0f, -0.3f};
  Pw groups, eps;
  groups.s(1, "num_groups").i(3, 3).i(20, 2);
  eps.s(1, "epsilon").f32(2, 1e-3f).i(20, 1);
  Pw g;
  g.m(1, node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn", {groups, eps})).s(2, "g");
  g.m(5, float_tensor("scale", {3}, scale)).m(5, float_tensor("bias", {3}, bias));
  g.m(11, value_info("x", 1, {"2", "6", "3", "4"})).m(12, value_info("y", 1, {"2", "6", "3", "4"}));
  auto r = import_str(model(g, 18, 8));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 6, 3, 4}}, 9);
  auto out = run_graph(*r, {x});
  REQUIRE(out.is_ok());
  const float* y = (*out)[0].second.data_as<float>();
  double worst = 0;
  for (int n = 0; n < 2; ++n)
    for (int grp = 0; grp < 3; ++grp) {
      const float* xg = x.data_as<float>() + (n * 6 + grp * 2) * 12;
      double mean = 0, var = 0;
      for (int i = 0; i < 24; ++i) mean += xg[i];
      mean /= 24;
      for (int i = 0; i < 24; ++i) var += (xg[i] - mean) * (xg[i] - mean);
      var /= 24;
      for (int i = 0; i < 24; ++i) {
        const double want = (xg[i] - mean) / std::sqrt(var + 1e-3) * scale[grp] + bias[grp];
        worst = std::max(worst, std::abs(y[(n * 6 + grp * 2) * 12 + i] - want));
      }
    }
  CHECK(worst < 1e-5);
  // Groups that do not divide the channels, and per-channel parameters at opset 18: named.
  Pw four;
  four.s(1, "num_groups").i(3, 4).i(20, 2);
  Pw bad;
  bad.m(1, node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn", {four})).s(2, "g");
  bad.m(5, float_tensor("scale", {3}, scale)).m(5, float_tensor("bias", {3}, bias));
  bad.m(11, value_info("x", 1, {"2", "6", "3", "4"})).m(12, value_info("y", 1, {}));
  auto e = import_str(model(bad, 18, 8));
  REQUIRE_FALSE(e.is_ok());
  CHECK_THAT(e.status().message(),
             Catch::Contains("'gn' (GroupNormalization)") &&
                 Catch::Contains("attribute 'num_groups' = 4 must divide the 6 channels"));
  auto e21 = import_str(model(g, 21, 10));
  REQUIRE_FALSE(e21.is_ok());
  CHECK_THAT(e21.status().message(),
             Catch::Contains("input scale must be float32[6] (one per channel at opset 21)"));
}

TEST_CASE("onnx: integer Max, Min, Clip, Neg, Abs, Sign at run time against numpy's rules") {
  // t int64 [6] (a run-time input): what torch.clamp / maximum / abs / sign on int64 export.
  // min and max are int64 scalars (initializers); Max of three inputs chains IntBinary.
  const std::vector<int64_t> tv = {-7, -1, 0, 2, 9, std::numeric_limits<int64_t>::min()};
  Pw g;
  g.m(1, node("Clip", {"t", "lo", "hi"}, {"clipped"}, "clip"))
      .m(1, node("Clip", {"t", "", "hi"}, {"capped"}, "cap"))
      .m(1, node("Max", {"t", "lo", "hi"}, {"mx"}, "max3"))
      .m(1, node("Min", {"t", "lo"}, {"mn"}, "min2"))
      .m(1, node("Neg", {"t"}, {"neg"}, "neg"))
      .m(1, node("Abs", {"t"}, {"abs"}, "abs"))
      .m(1, node("Sign", {"t"}, {"sign"}, "sign"))
      .s(2, "g");
  g.m(5, i64_scalar("lo", -2)).m(5, i64_scalar("hi", 5));
  g.m(11, value_info("t", 7, {"6"}));
  for (const char* o : {"clipped", "capped", "mx", "mn", "neg", "abs", "sign"})
    g.m(12, value_info(o, 7, {"6"}));
  auto r = import_str(model(g, 13, 7));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  Tensor t(TensorDesc{DType::kI64, {6}});
  std::memcpy(t.data(), tv.data(), tv.size() * 8);
  engine::NamedTensors out = value_or_throw(run_graph(*r, {t}));
  REQUIRE(out.size() == 7);
  for (size_t i = 0; i < tv.size(); ++i) {
    const int64_t x = tv[i];
    const auto wrap_neg = static_cast<int64_t>(0ULL - static_cast<uint64_t>(x));  // numpy wraps
    const int64_t want[] = {std::min<int64_t>(std::max<int64_t>(x, -2), 5),
                            std::min<int64_t>(x, 5),
                            std::max<int64_t>({x, -2, 5}),
                            std::min<int64_t>(x, -2),
                            wrap_neg,
                            std::max(x, wrap_neg),
                            (x > 0) - (x < 0)};
    for (size_t k = 0; k < out.size(); ++k) {
      REQUIRE(out[k].second.dtype() == DType::kI64);
      INFO(out[k].first << " at " << i);
      CHECK(out[k].second.data_as<int64_t>()[i] == want[k]);
    }
  }
}

TEST_CASE("onnx: CastLike and Mish at run time, an output listed twice, an input as an output") {
  // ids int64 [4] -> CastLike(ids, w) (w float32: the cast's type comes from it) -> Mish -> y.
  // y is listed twice (PyTorch's `return y, y`) and the input ids is an output too.
  Pw g;
  g.m(1, node("CastLike", {"ids", "w"}, {"f"}, "cast_like"))
      .m(1, node("Mish", {"f"}, {"y"}, "mish"))
      .s(2, "g");
  g.m(5, float_tensor("w", {1}, {0.5f}));
  g.m(11, value_info("ids", 7, {"4"}));
  g.m(12, value_info("y", 1, {"4"})).m(12, value_info("y", 1, {"4"}));
  g.m(12, value_info("ids", 7, {"4"}));
  auto r = import_str(model(g, 18, 8));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  REQUIRE(r->outputs().size() == 3);
  CHECK(r->value(r->outputs()[0]).name == "y");
  CHECK(r->value(r->outputs()[1]).name == "y_1");
  CHECK(r->value(r->outputs()[2]).name == "ids");  // an input may be an output as it is
  Tensor ids(TensorDesc{DType::kI64, {4}});
  const int64_t iv[] = {-30, -1, 0, 3};
  std::memcpy(ids.data(), iv, sizeof iv);
  engine::NamedTensors out = value_or_throw(run_graph(*r, {ids}));
  REQUIRE(out.size() == 3);
  for (int k = 0; k < 4; ++k) {
    const double x = static_cast<double>(iv[k]);
    const double want = x * std::tanh(std::log1p(std::exp(x)));
    CHECK(std::abs(out[0].second.data_as<float>()[k] - want) <= 1e-6 * (1 + std::abs(want)));
    CHECK(out[1].second.data_as<float>()[k] == out[0].second.data_as<float>()[k]);
    CHECK(out[2].second.data_as<int64_t>()[k] == iv[k]);
  }
}

TEST_CASE("onnx: Trilu of a run-time tensor (torch.tril / triu) against its definition") {
  // x float32 [2, 3, 4]: lower = Trilu(x, k = -1; upper 0), upper = Trilu(x; k absent, upper 1);
  // ids int64 [3, 3]: Trilu(ids, k = 1). A k computed at run time is refused, naming it.
  Pw lower_attr;
  lower_attr.s(1, "upper").i(3, 0).i(20, 2);
  Pw g;
  g.m(1, node("Trilu", {"x", "k"}, {"lower"}, "tril", {lower_attr}))
      .m(1, node("Trilu", {"x"}, {"upper"}, "triu"))
      .m(1, node("Trilu", {"ids", "one"}, {"ids_u"}, "triu_ids"))
      .s(2, "g");
  g.m(5, i64_scalar("k", -1)).m(5, i64_scalar("one", 1));
  g.m(11, value_info("x", 1, {"2", "3", "4"})).m(11, value_info("ids", 7, {"3", "3"}));
  g.m(12, value_info("lower", 1, {"2", "3", "4"})).m(12, value_info("upper", 1, {"2", "3", "4"}));
  g.m(12, value_info("ids_u", 7, {"3", "3"}));
  auto r = import_str(model(g, 14));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 3, 4}}, 31);
  Tensor ids(TensorDesc{DType::kI64, {3, 3}});
  for (int64_t e = 0; e < 9; ++e) ids.data_as<int64_t>()[e] = e + 1;
  engine::NamedTensors out = value_or_throw(run_graph(*r, {x, ids}));
  REQUIRE(out.size() == 3);
  for (int64_t e = 0; e < 24; ++e) {
    const int64_t i = e / 4 % 3, j = e % 4;
    const float v = x.data_as<float>()[e];
    CHECK(out[0].second.data_as<float>()[e] == (j - i <= -1 ? v : 0.0f));
    CHECK(out[1].second.data_as<float>()[e] == (j - i >= 0 ? v : 0.0f));
  }
  for (int64_t e = 0; e < 9; ++e)
    CHECK(out[2].second.data_as<int64_t>()[e] == (e % 3 - e / 3 >= 1 ? e + 1 : 0));

  Pw h;
  h.m(1, node("Trilu", {"x", "kin"}, {"y"}, "tril_rt")).s(2, "g");
  h.m(11, value_info("x", 1, {"3", "3"})).m(11, value_info("kin", 7, {"1"}));
  h.m(12, value_info("y", 1, {"3", "3"}));
  auto bad = import_str(model(h, 14));
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(),
             Catch::Contains("node[0] 'tril_rt' (Trilu): input 1 (k) computed at run time is not "
                             "supported"));
}

TEST_CASE("onnx: pads clamped by a Clip of constants fold (timm's TF-style same padding)") {
  // pads = Clip(raw, 0) with raw an int64 constant, then Pad(x, pads): the Clip is evaluated at
  // import, so the Pad's pads are constants ([0, 0, 0, 1, 0, 0, 2, 0]).
  Pw raw;
  for (int64_t d : {8}) raw.i(1, d);
  raw.i(2, 7);
  const int64_t rv[] = {0, 0, -1, 1, 0, 0, 2, -3};
  raw.s(8, "raw").s(9, std::string(reinterpret_cast<const char*>(rv), sizeof rv));
  Pw g;
  g.m(1, node("Clip", {"raw", "zero"}, {"pads"}, "clamp"))
      .m(1, node("Pad", {"x", "pads"}, {"y"}, "pad"))
      .s(2, "g");
  g.m(5, raw).m(5, i64_scalar("zero", 0));
  g.m(11, value_info("x", 1, {"1", "2", "3", "3"}));
  g.m(12, value_info("y", 1, {"1", "2", "5", "4"}));
  auto r = import_str(model(g, 13));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 2, 3, 3}}, 33);
  engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
  REQUIRE(out[0].second.desc().shape == Shape{1, 2, 5, 4});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        const bool inside = i < 3 && j >= 1;  // 2 rows added at the bottom, 1 column at the left
        const float want = inside ? x.data_as<float>()[(c * 3 + i) * 3 + (j - 1)] : 0.0f;
        CHECK(out[0].second.data_as<float>()[(c * 5 + i) * 4 + j] == want);
      }
}

TEST_CASE("onnx: a declared output shape beside a symbolic dim is not binding") {
  // torch.onnx's dynamo path declares an LSTM's sequence output [4, 'batch', 3] after an
  // export at T = 4, while the input says ['seq', 'batch', 3]: ONNX Runtime runs it at any T.
  // A fully static declaration that disagrees is still an error naming both shapes.
  Pw g;
  g.m(1, node("Relu", {"x"}, {"y"}, "act")).s(2, "g");
  g.m(11, value_info("x", 1, {"seq", "batch", "3"})).m(12, value_info("y", 1, {"4", "batch", "3"}));
  auto r = import_str(model(g), with_dims({{"seq", 9}, {"batch", 2}}));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  CHECK(r->value(r->outputs()[0]).desc == TensorDesc{DType::kF32, {9, 2, 3}});
  Pw bad;
  bad.m(1, node("Relu", {"x"}, {"y"}, "act")).s(2, "g");
  bad.m(11, value_info("x", 1, {"9", "2", "3"})).m(12, value_info("y", 1, {"4", "2", "3"}));
  auto e = import_str(model(bad));
  REQUIRE_FALSE(e.is_ok());
  CHECK_THAT(e.status().message(),
             Catch::Contains("'y' is declared as float32[4, 2, 3] but the op produces "
                             "float32[9, 2, 3]"));
}

TEST_CASE("onnx: sequences of tensors resolved at import (SplitToSequence, SequenceAt, stack)") {
  // x [3, 4] -> SplitToSequence(axis 0, keepdims 0): three [4] rows; a = rows[-1], b = rows[0];
  // SequenceConstruct(a, b) + SequenceInsert(x row 1 at 1) -> ConcatFromSequence(new_axis 1,
  // axis 0) = stack: y [3, 4] = [row 2, row 1, row 0]; SplitToSequence(x, split = 3 on axis 1):
  // [3, 3] and [3, 1], concatenated back on axis 1 -> z = x; SequenceLength -> n = 3.
  Pw g;
  g.m(1, node("SplitToSequence", {"x"}, {"rows"}, "split_rows",
              {int_attr("axis", 0), int_attr("keepdims", 0)}))
      .m(1, node("SequenceAt", {"rows", "minus_one"}, {"a"}, "at_last"))
      .m(1, node("SequenceAt", {"rows", "zero"}, {"b"}, "at_first"))
      .m(1, node("SequenceAt", {"rows", "one"}, {"r1"}, "at_one"))
      .m(1, node("SequenceConstruct", {"a", "b"}, {"ab"}, "construct"))
      .m(1, node("SequenceInsert", {"ab", "r1", "one"}, {"arb"}, "insert"))
      .m(1, node("ConcatFromSequence", {"arb"}, {"y"}, "stack",
                 {int_attr("axis", 0), int_attr("new_axis", 1)}))
      .m(1, node("SplitToSequence", {"x", "three"}, {"cols"}, "split_cols", {int_attr("axis", 1)}))
      .m(1, node("ConcatFromSequence", {"cols"}, {"z"}, "concat", {int_attr("axis", -1)}))
      .m(1, node("SequenceLength", {"rows"}, {"n"}, "length"))
      .s(2, "g");
  g.m(5, i64_scalar("minus_one", -1)).m(5, i64_scalar("zero", 0)).m(5, i64_scalar("one", 1));
  g.m(5, i64_scalar("three", 3));
  g.m(11, value_info("x", 1, {"3", "4"}));
  g.m(12, value_info("y", 1, {"3", "4"})).m(12, value_info("z", 1, {"3", "4"}));
  g.m(12, value_info("n", 7, {}));
  auto r = import_str(model(g, 18, 8));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 5);
  engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
  REQUIRE(out.size() == 3);
  const float* xv = x.data_as<float>();
  const int order[] = {2, 1, 0};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      CHECK(out[0].second.data_as<float>()[i * 4 + j] == xv[order[i] * 4 + j]);
      CHECK(out[1].second.data_as<float>()[i * 4 + j] == xv[i * 4 + j]);
    }
  CHECK(out[2].second.data_as<int64_t>()[0] == 3);

  // A sequence read by another op, a sequence output, a position computed at run time: named.
  Pw misuse;
  misuse.m(1, node("SplitToSequence", {"x"}, {"rows"}, "split_rows"))
      .m(1, node("Relu", {"rows"}, {"y"}, "act"))
      .s(2, "g");
  misuse.m(11, value_info("x", 1, {"3", "4"})).m(12, value_info("y", 1, {}));
  auto e1 = import_str(model(misuse, 18, 8));
  REQUIRE_FALSE(e1.is_ok());
  CHECK_THAT(e1.status().message(),
             Catch::Contains("'act' (Relu): input 0 'rows' is a sequence of tensors"));
  Pw seq_out;
  seq_out.m(1, node("SplitToSequence", {"x"}, {"rows"}, "split_rows")).s(2, "g");
  seq_out.m(11, value_info("x", 1, {"3", "4"})).m(12, value_info("rows", 1, {}));
  auto e2 = import_str(model(seq_out, 18, 8));
  REQUIRE_FALSE(e2.is_ok());
  CHECK_THAT(e2.status().message(),
             Catch::Contains("graph output 'rows' is a sequence of tensors"));
  Pw runtime_pos;
  runtime_pos.m(1, node("SplitToSequence", {"x"}, {"rows"}, "split_rows"))
      .m(1, node("SequenceAt", {"rows", "i"}, {"y"}, "at"))
      .s(2, "g");
  runtime_pos.m(11, value_info("x", 1, {"3", "4"})).m(11, value_info("i", 7, {"1"}));
  runtime_pos.m(12, value_info("y", 1, {}));
  auto e3 = import_str(model(runtime_pos, 18, 8));
  REQUIRE_FALSE(e3.is_ok());
  CHECK_THAT(e3.status().message(),
             Catch::Contains("'at' (SequenceAt): input 1 (position) 'i' must be a constant"));
  Pw far;
  far.m(1, node("SplitToSequence", {"x"}, {"rows"}, "split_rows"))
      .m(1, node("SequenceAt", {"rows", "three"}, {"y"}, "at"))
      .s(2, "g");
  far.m(5, i64_scalar("three", 3));
  far.m(11, value_info("x", 1, {"3", "4"})).m(12, value_info("y", 1, {}));
  auto e4 = import_str(model(far, 18, 8));
  REQUIRE_FALSE(e4.is_ok());
  CHECK_THAT(e4.status().message(),
             Catch::Contains("position 3 is out of range for a sequence of 3 tensors"));
}

TEST_CASE(
    "onnx: symbolic dims from the shapes the caller will feed (ImportOptions::input_shapes)") {
  // x ['batch', 3] + y ['batch', 3]: the shapes given for the inputs fix 'batch'; --dim wins;
  // inputs that disagree are an error naming both.
  Pw g;
  g.m(1, node("Add", {"x", "y"}, {"z"}, "add")).s(2, "g");
  g.m(11, value_info("x", 1, {"batch", "3"})).m(11, value_info("y", 1, {"batch", "3"}));
  g.m(12, value_info("z", 1, {"batch", "3"}));
  ImportOptions o;
  o.input_shapes = {{"x", {5, 3}}};
  auto r = import_str(model(g), o);
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  CHECK(r->value(r->inputs()[1]).desc == TensorDesc{DType::kF32, {5, 3}});
  o.dims = {{"batch", 2}};
  auto d = import_str(model(g), o);
  REQUIRE(d.is_ok());
  CHECK(d->value(d->inputs()[0]).desc == TensorDesc{DType::kF32, {2, 3}});
  ImportOptions clash;
  clash.input_shapes = {{"x", {5, 3}}, {"y", {4, 3}}};
  auto e = import_str(model(g), clash);
  REQUIRE_FALSE(e.is_ok());
  CHECK(e.status().message() ==
        "t.onnx: symbolic dim 'batch' is 5 in input 'x' but 4 in input 'y' as given; give its "
        "value with --dim batch=N");
}

TEST_CASE("onnx: BOOL graph inputs and outputs are float32 0/1, named in the metadata") {
  // mask BOOL [3] -> Not -> nm (BOOL output); Where(mask, x, 0) -> y (FLOAT output).
  Pw g;
  g.m(1, node("Not", {"mask"}, {"nm"}, "not"))
      .m(1, node("Where", {"mask", "x", "zero"}, {"y"}, "w"));
  g.s(2, "g").m(5, float_tensor("zero", {1}, {0.0f}));
  g.m(11, value_info("x", 1, {"3"})).m(11, value_info("mask", 9, {"3"}));
  g.m(12, value_info("nm", 9, {"3"})).m(12, value_info("y", 1, {"3"}));
  auto r = import_str(model(g, 13, 7));
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  CHECK(r->value(r->inputs()[1]).desc == TensorDesc{DType::kF32, {3}});
  REQUIRE(r->metadata().count(kBoolValuesKey));
  CHECK(r->metadata().at(kBoolValuesKey) == "mask,nm");
  Tensor x(TensorDesc{DType::kF32, {3}}), mask(TensorDesc{DType::kF32, {3}});
  const float xv[] = {1.5f, -2.0f, 3.0f}, mv[] = {1.0f, 0.0f, 1.0f};
  std::memcpy(x.data(), xv, sizeof xv);
  std::memcpy(mask.data(), mv, sizeof mv);
  engine::NamedTensors out = value_or_throw(run_graph(*r, {x, mask}));
  const float want_nm[] = {0.0f, 1.0f, 0.0f}, want_y[] = {1.5f, 0.0f, 3.0f};
  for (int k = 0; k < 3; ++k) {
    CHECK(out[0].second.data_as<float>()[k] == want_nm[k]);
    CHECK(out[1].second.data_as<float>()[k] == want_y[k]);
  }
}

namespace {

// The bilinear sample of the h x w image v at source (sy, sx), already clamped to the image.
double bilinear_at(const float* v, int h, int w, double sy, double sx) {
  const int y0 = static_cast<int>(sy), x0 = static_cast<int>(sx);
  const int y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  const double fy = sy - y0, fx = sx - x0;
  return (1 - fy) * ((1 - fx) * v[y0 * w + x0] + fx * v[y0 * w + x1]) +
         fy * ((1 - fx) * v[y1 * w + x0] + fx * v[y1 * w + x1]);
}

}  // namespace

TEST_CASE("onnx: Resize-10, 1-D ConvTranspose with output_padding, ReverseSequence, unnamed dims") {
  SECTION("Resize-10 linear: asymmetric coordinates (x / scale), not opset 11's half_pixel") {
    Pw g;
    g.m(1, node("Resize", {"x", "scales"}, {"y"}, "up", {str_attr("mode", "linear")})).s(2, "g");
    g.m(5, float_tensor("scales", {4}, {1.0f, 1.0f, 2.0f, 1.5f}));
    g.m(11, value_info("x", 1, {"1", "1", "2", "3"}))
        .m(12, value_info("y", 1, {"1", "1", "4", "4"}));
    auto r = import_str(model(g, 10, 5));
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    const float xv[] = {0.0f, 1.0f, 4.0f, 2.0f, -3.0f, 5.0f};
    Tensor x(TensorDesc{DType::kF32, {1, 1, 2, 3}});
    std::memcpy(x.data(), xv, sizeof xv);
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
    for (int oy = 0; oy < 4; ++oy)
      for (int ox = 0; ox < 4; ++ox) {
        const double want = bilinear_at(xv, 2, 3, std::min(oy / 2.0, 1.0), std::min(ox / 1.5, 2.0));
        CHECK(std::abs(out[0].second.data_as<float>()[oy * 4 + ox] - want) < 1e-5);
      }
  }
  SECTION("1-D ConvTranspose, stride 2, output_padding 1") {
    Pw g;
    g.m(1, node("ConvTranspose", {"x", "w"}, {"y"}, "up",
                {ints_attr("strides", {2}), ints_attr("output_padding", {1})}))
        .s(2, "g");
    const std::vector<float> wv = {0.5f, -1.0f, 2.0f}, xv = {1.0f, 3.0f, -2.0f};
    g.m(5, float_tensor("w", {1, 1, 3}, wv));
    g.m(11, value_info("x", 1, {"1", "1", "3"})).m(12, value_info("y", 1, {"1", "1", "8"}));
    auto r = import_str(model(g, 13, 7));
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    Tensor x(TensorDesc{DType::kF32, {1, 1, 3}});
    std::memcpy(x.data(), xv.data(), 12);
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
    REQUIRE(out[0].second.shape() == Shape{1, 1, 8});
    std::vector<float> want(8, 0.0f);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) want[static_cast<size_t>(2 * i + k)] += xv[i] * wv[k];
    for (int o = 0; o < 8; ++o)
      CHECK(std::abs(out[0].second.data_as<float>()[o] - want[static_cast<size_t>(o)]) < 1e-6);
  }
  SECTION("ReverseSequence over whole sequences; shorter lengths are refused by name") {
    auto rev = [&](const std::vector<int64_t>& lens) {
      Pw g;
      g.m(1, node("ReverseSequence", {"x", "lens"}, {"y"}, "rev")).s(2, "g");
      g.m(5, test::onnx_pb::int64_tensor("lens", lens));
      g.m(11, value_info("x", 1, {"3", "2", "2"})).m(12, value_info("y", 1, {"3", "2", "2"}));
      return import_str(model(g, 13, 7));
    };
    auto r = rev({3, 3});
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {3, 2, 2}}, 3);
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
    for (int t = 0; t < 3; ++t)
      for (int j = 0; j < 4; ++j)
        CHECK(out[0].second.data_as<float>()[t * 4 + j] == x.data_as<float>()[(2 - t) * 4 + j]);
    auto e = rev({3, 2});
    REQUIRE_FALSE(e.is_ok());
    CHECK_THAT(e.status().message(),
               Catch::Contains("'rev' (ReverseSequence): sequence_lens[1] = 2 is not supported"));
  }
  SECTION("an unnamed dim (skl2onnx's batch) from the shapes the caller will feed") {
    Pw g;
    g.m(1, node("Relu", {"x"}, {"y"}, "act")).s(2, "g");
    g.m(11, value_info("x", 1, {"", "3"})).m(12, value_info("y", 1, {"", "3"}));
    auto e = import_str(model(g));
    REQUIRE_FALSE(e.is_ok());
    CHECK_THAT(e.status().message(), Catch::Contains("dim 0 has neither a size nor a name") &&
                                         Catch::Contains("input_shapes={'x': (...)}"));
    ImportOptions o;
    o.input_shapes = {{"x", {7, 3}}};
    auto r = import_str(model(g), o);
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    CHECK(r->value(r->inputs()[0]).desc == TensorDesc{DType::kF32, {7, 3}});
  }
}

TEST_CASE(
    "onnx: ConvTranspose auto_pad/output_shape, Hardmax-11, Dropout's mask, Resize-18 policy") {
  // 1-D ConvTranspose of x [1, 1, 5] by w [1, 1, 3], stride 2, as a naive scatter into the full
  // (unpadded) output of 2 * 4 + 3 = 11, then cropped [begin, begin + len) (zeros past the end).
  const std::vector<float> wv = {0.5f, -1.0f, 2.0f}, xv = {1.0f, 3.0f, -2.0f, 0.25f, 4.0f};
  std::vector<float> full(11, 0.0f);
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 3; ++k) full[static_cast<size_t>(2 * i + k)] += xv[i] * wv[k];
  auto convt = [&](const std::vector<Pw>& attrs, const std::string& out_len) {
    Pw g;
    g.m(1, node("ConvTranspose", {"x", "w"}, {"y"}, "up", attrs)).s(2, "g");
    g.m(5, float_tensor("w", {1, 1, 3}, wv));
    g.m(11, value_info("x", 1, {"1", "1", "5"})).m(12, value_info("y", 1, {"1", "1", out_len}));
    return import_str(model(g, 13, 7));
  };
  auto check_crop = [&](Result<Graph>& r, int64_t len, int64_t begin) {
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    Tensor x(TensorDesc{DType::kF32, {1, 1, 5}});
    std::memcpy(x.data(), xv.data(), 20);
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
    REQUIRE(out[0].second.shape() == Shape{1, 1, len});
    for (int64_t o = 0; o < len; ++o) {
      const int64_t f = o + begin;
      const float want = f < 11 ? full[static_cast<size_t>(f)] : 0.0f;
      CHECK(std::abs(out[0].second.data_as<float>()[o] - want) < 1e-6);
    }
  };
  SECTION("ConvTranspose SAME_UPPER / SAME_LOWER: out = in * stride, the odd pad at end / start") {
    // total padding 11 - 10 = 1: SAME_UPPER crops it at the end, SAME_LOWER at the start.
    auto r = convt({ints_attr("strides", {2}), str_attr("auto_pad", "SAME_UPPER")}, "10");
    check_crop(r, 10, 0);
    r = convt({ints_attr("strides", {2}), str_attr("auto_pad", "SAME_LOWER")}, "10");
    check_crop(r, 10, 1);
  }
  SECTION("ConvTranspose output_shape, spatial or the whole [N, C, L]; larger than the kernel") {
    // 11 - 8 = 3 to pad: NOTSET puts the odd one at the start (ONNX's rule, ONNX Runtime's).
    auto r = convt({ints_attr("strides", {2}), ints_attr("output_shape", {8})}, "8");
    check_crop(r, 8, 2);
    r = convt({ints_attr("strides", {2}), ints_attr("output_shape", {1, 1, 8}),
               str_attr("auto_pad", "SAME_UPPER")},
              "8");
    check_crop(r, 8, 1);
    r = convt({ints_attr("strides", {2}), ints_attr("output_shape", {13})}, "13");
    check_crop(r, 13, 0);  // two more at the end, bias only
    auto e = convt({ints_attr("strides", {2}), ints_attr("output_shape", {8, 8})}, "8");
    REQUIRE_FALSE(e.is_ok());
    CHECK_THAT(e.status().message(), Catch::Contains("'up' (ConvTranspose): attribute "
                                                     "'output_shape' [8, 8] must have 1 (or 3)"));
  }
  SECTION("Hardmax-11 flattens at axis: one 1 per [2, 3] block, ties to the first") {
    Pw g;
    g.m(1, node("Hardmax", {"x"}, {"y"}, "hm", {int_attr("axis", 1)})).s(2, "g");
    g.m(11, value_info("x", 1, {"2", "2", "3"})).m(12, value_info("y", 1, {"2", "2", "3"}));
    auto r = import_str(model(g, 11, 6));
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    const float xv2[] = {1, 7, 3, 7, 0, 2, /* batch 1: all equal */ 5, 5, 5, 5, 5, 5};
    Tensor x(TensorDesc{DType::kF32, {2, 2, 3}});
    std::memcpy(x.data(), xv2, sizeof xv2);
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
    const float want[] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    for (int k = 0; k < 12; ++k) CHECK(out[0].second.data_as<float>()[k] == want[k]);
  }
  SECTION("Dropout's mask: all true in inference; training with ratio > 0 is refused by name") {
    auto dropout = [&](bool training, float ratio) {
      Pw g;
      g.m(1, node("Dropout", {"x", "r", "t"}, {"y", "m"}, "drop")).s(2, "g");
      g.m(5, float_tensor("r", {}, {ratio}));
      Pw t;
      t.i(2, 9).s(8, "t").s(9, std::string(1, training ? '\1' : '\0'));  // BOOL scalar
      g.m(5, t);
      g.m(11, value_info("x", 1, {"2", "3"}))
          .m(12, value_info("y", 1, {"2", "3"}))
          .m(12, value_info("m", 9, {"2", "3"}));
      return import_str(model(g, 13, 7));
    };
    for (auto [training, ratio] : {std::pair{false, 0.5f}, std::pair{true, 0.0f}}) {
      auto r = dropout(training, ratio);
      INFO(r.status().message());
      REQUIRE(r.is_ok());
      const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 5);
      engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
      REQUIRE(out.size() == 2);
      for (int k = 0; k < 6; ++k) {
        CHECK(out[0].second.data_as<float>()[k] == x.data_as<float>()[k]);
        CHECK(out[1].second.data_as<float>()[k] == 1.0f);
      }
    }
    auto e = dropout(true, 0.5f);
    REQUIRE_FALSE(e.is_ok());
    CHECK_THAT(e.status().message(),
               Catch::Contains("'drop' (Dropout): Dropout's mask output in training mode"));
  }
  SECTION("Resize-18 not_larger: one scale (min of size / in) drives the coordinates") {
    // x [1, 1, 3, 5] to sizes [7, 11] of axes [2, 3]: scale min(7/3, 11/5) = 2.2, out
    // [round(6.6), 11] = [7, 11]; linear, asymmetric: source = o / 2.2 on both axes (not o * 3/7
    // on the rows, which out / in would give).
    Pw g;
    g.m(1, node("Resize", {"x", "", "", "sizes"}, {"y"}, "rs",
                {ints_attr("axes", {2, 3}), str_attr("mode", "linear"),
                 str_attr("coordinate_transformation_mode", "asymmetric"),
                 str_attr("keep_aspect_ratio_policy", "not_larger")}))
        .s(2, "g");
    g.m(5, test::onnx_pb::int64_tensor("sizes", {7, 11}));
    g.m(11, value_info("x", 1, {"1", "1", "3", "5"}))
        .m(12, value_info("y", 1, {"1", "1", "7", "11"}));
    auto r = import_str(model(g, 18, 8));
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 1, 3, 5}}, 9);
    const float* xv3 = x.data_as<float>();
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x}));
    REQUIRE(out[0].second.shape() == Shape{1, 1, 7, 11});
    for (int oy = 0; oy < 7; ++oy)
      for (int ox = 0; ox < 11; ++ox) {
        const double want =
            bilinear_at(xv3, 3, 5, std::min(oy / 2.2, 2.0), std::min(ox / 2.2, 4.0));
        CHECK(std::abs(out[0].second.data_as<float>()[oy * 11 + ox] - want) < 1e-5);
      }
  }
}

TEST_CASE("onnx: GridSample's mode names per opset, 5-D at opset 20 only, errors naming the node") {
  // x [1, 1, 2(, 2), 2], grid [1, 1, 1(, 1), k] -> y: one sample at the centre (grid 0), the
  // mean of the corners with (bi/tri)linear and align_corners = 0.
  auto gs_model = [&](int64_t opset, const std::string& mode, int k, int grid_last) {
    Pw g;
    std::vector<Pw> at;
    if (!mode.empty()) at.push_back(str_attr("mode", mode));
    g.m(1, node("GridSample", {"x", "grid"}, {"y"}, "gs", at)).s(2, "g");
    std::vector<std::string> xd = {"1", "1"}, gd = {"1"}, yd = {"1", "1"};
    for (int d = 0; d < k; ++d) {
      xd.push_back("2");
      gd.push_back("1");
      yd.push_back("1");
    }
    gd.push_back(std::to_string(grid_last));
    g.m(11, value_info("x", 1, xd)).m(11, value_info("grid", 1, gd));
    g.m(12, value_info("y", 1, yd));
    return model(g, opset, opset >= 20 ? 9 : 8);
  };
  auto run_centre = [&](const std::string& bytes, int k) {
    auto r = import_str(bytes);
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    const int64_t n = k == 2 ? 4 : 8;
    Tensor x(TensorDesc{DType::kF32, k == 2 ? Shape{1, 1, 2, 2} : Shape{1, 1, 2, 2, 2}});
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += (x.data_as<float>()[i] = float(i * i) - 2.5f) / n;
    Tensor grid(TensorDesc{DType::kF32, k == 2 ? Shape{1, 1, 1, 2} : Shape{1, 1, 1, 1, 3}});
    std::fill_n(grid.data_as<float>(), k, 0.0f);
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x, grid}));
    CHECK(std::abs(out[0].second.data_as<float>()[0] - mean) < 1e-6);
  };
  run_centre(gs_model(16, "bilinear", 2, 2), 2);
  run_centre(gs_model(16, "", 2, 2), 2);  // default: bilinear
  run_centre(gs_model(20, "linear", 2, 2), 2);
  run_centre(gs_model(20, "", 3, 3), 3);  // volumetric, trilinear
  auto err = [&](const std::string& bytes) {
    auto r = import_str(bytes);
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  CHECK_THAT(
      err(gs_model(16, "linear", 2, 2)),
      Catch::StartsWith("t.onnx: node[0] 'gs' (GridSample)") &&
          Catch::Contains("attribute 'mode' = 'linear' is not a GridSample mode at opset 16"));
  CHECK_THAT(err(gs_model(20, "bicubic", 2, 2)),
             Catch::Contains("attribute 'mode' = 'bicubic' is not a GridSample mode at opset 20"));
  CHECK_THAT(err(gs_model(16, "bilinear", 3, 3)),
             Catch::StartsWith("t.onnx: node[0] 'gs' (GridSample)") &&
                 Catch::Contains("input 0 (X) float32[1, 1, 2, 2, 2] must be 4-D"));
  CHECK_THAT(err(gs_model(20, "linear", 2, 3)),
             Catch::StartsWith("t.onnx: node[0] 'gs' (GridSample)") &&
                 Catch::Contains("input 1 (grid) float32[1, 1, 1, 3] must have last dim 2"));
}

TEST_CASE(
    "onnx: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss with run-time int64 targets") {
  // x float32 [3, 4, 2] (N, C, d1) and t int64 [3, 2] are run-time inputs; t holds ignore_index
  // -1 (out of [0, C): the gathers must not read it); w float32 [4] an initializer. What
  // torch.onnx.export writes for F.nll_loss / F.cross_entropy(weight, ignore_index).
  const std::vector<float> wv = {0.5f, 2.0f, 1.0f, 3.0f};
  Pw g;
  g.m(1, node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"nll"}, "nll",
              {int_attr("ignore_index", -1), str_attr("reduction", "mean")}))
      .m(1, node("SoftmaxCrossEntropyLoss", {"x", "t", "w"}, {"sce", "log_prob"}, "sce",
                 {int_attr("ignore_index", -1)}))  // reduction defaults to mean
      .m(1, node("NegativeLogLikelihoodLoss", {"x", "t"}, {"nll_none"}, "nll_none",
                 {int_attr("ignore_index", -1), str_attr("reduction", "none")}))
      .m(1, node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"sce_plain"}, "sce_plain",
                 {int_attr("ignore_index", -1)}))
      .m(1, node("SoftmaxCrossEntropyLoss", {"x", "t", "w"}, {"sce_sum"}, "sce_sum",
                 {int_attr("ignore_index", -1), str_attr("reduction", "sum")}))
      .s(2, "g");
  g.m(5, float_tensor("w", {4}, wv));
  g.m(11, value_info("x", 1, {"3", "4", "2"})).m(11, value_info("t", 7, {"3", "2"}));
  for (const char* o : {"nll", "sce", "log_prob", "nll_none", "sce_plain", "sce_sum"})
    g.m(12, value_info(o, 1, {}));
  for (const int64_t opset : {12, 13, 22}) {
    INFO("opset " << opset);
    auto r = import_str(model(g, opset, opset >= 21 ? 10 : 7));
    INFO(r.status().message());
    REQUIRE(r.is_ok());
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {3, 4, 2}}, 17);
    Tensor t(TensorDesc{DType::kI64, {3, 2}});
    const int64_t tv[3][2] = {{1, -1}, {3, 0}, {-1, 2}};
    std::memcpy(t.data(), tv, sizeof tv);
    engine::NamedTensors out = value_or_throw(run_graph(*r, {x, t}));
    REQUIRE(out.size() == 6);
    const float* xp = x.data_as<float>();
    auto at = [&](int n, int c, int d) { return static_cast<double>(xp[(n * 4 + c) * 2 + d]); };
    // The definitions, as naive loops in double.
    double lp[3][4][2];
    for (int n = 0; n < 3; ++n)
      for (int d = 0; d < 2; ++d) {
        double mx = -1e300, s = 0;
        for (int c = 0; c < 4; ++c) mx = std::max(mx, at(n, c, d));
        for (int c = 0; c < 4; ++c) s += std::exp(at(n, c, d) - mx);
        for (int c = 0; c < 4; ++c) lp[n][c][d] = at(n, c, d) - mx - std::log(s);
      }
    double nll_num = 0, nll_den = 0, sce_num = 0, sce_plain = 0, count = 0, none[3][2];
    for (int n = 0; n < 3; ++n)
      for (int d = 0; d < 2; ++d) {
        none[n][d] = 0;
        const int64_t c = tv[n][d];
        if (c == -1) continue;
        const double wc = wv[static_cast<size_t>(c)];
        none[n][d] = -at(n, static_cast<int>(c), d);
        nll_num += -at(n, static_cast<int>(c), d) * wc;
        nll_den += wc;
        sce_num += -lp[n][c][d] * wc;
        sce_plain += -lp[n][c][d];
        count += 1;
      }
    auto scalar = [&](size_t k, double want) {
      INFO(out[k].first);
      REQUIRE(out[k].second.numel() == 1);
      CHECK(out[k].second.desc().shape.empty());
      CHECK(std::abs(out[k].second.data_as<float>()[0] - want) <= 1e-5 * (1 + std::abs(want)));
    };
    scalar(0, nll_num / nll_den);
    scalar(1, sce_num / nll_den);
    scalar(4, sce_plain / count);
    scalar(5, sce_num);
    REQUIRE(out[2].second.desc().shape == Shape{3, 4, 2});
    for (int n = 0; n < 3; ++n)
      for (int c = 0; c < 4; ++c)
        for (int d = 0; d < 2; ++d)
          CHECK(std::abs(out[2].second.data_as<float>()[(n * 4 + c) * 2 + d] - lp[n][c][d]) < 1e-5);
    REQUIRE(out[3].second.desc().shape == Shape{3, 2});
    for (int n = 0; n < 3; ++n)
      for (int d = 0; d < 2; ++d) CHECK(out[3].second.data_as<float>()[n * 2 + d] == none[n][d]);
  }
  // A bad target dtype, a weight of the wrong length, a target of the wrong shape: named.
  auto err = [&](const std::vector<std::string>& ins, int t_elem, std::vector<std::string> t_dims,
                 int64_t wlen) {
    Pw b;
    b.m(1, node("NegativeLogLikelihoodLoss", ins, {"y"}, "loss")).s(2, "g");
    b.m(5, float_tensor("w", {wlen}, std::vector<float>(static_cast<size_t>(wlen), 1.0f)));
    b.m(11, value_info("x", 1, {"3", "4", "2"})).m(11, value_info("t", t_elem, t_dims));
    b.m(12, value_info("y", 1, {}));
    auto r = import_str(model(b, 13, 7));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidGraph);
    return r.status().message();
  };
  CHECK_THAT(err({"x", "t"}, 1, {"3", "2"}, 4),
             Catch::StartsWith("t.onnx: node[0] 'loss' (NegativeLogLikelihoodLoss)") &&
                 Catch::Contains("input 1 (target) is float32[3, 2]; it must be int32 or int64"));
  CHECK_THAT(err({"x", "t", "w"}, 7, {"3", "2"}, 5),
             Catch::Contains("input 2 (weight) is float32[5]; it must be [C] = [4]"));
  CHECK_THAT(err({"x", "t"}, 7, {"3"}, 4),
             Catch::Contains("input 1 (target) is int64[3]; for input 0 (input) float32[3, 4, 2] "
                             "it must be [3, 2]"));
}
