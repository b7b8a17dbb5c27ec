// The .graphi reader and writer: lossless round trips, the byte layout of graph/FORMAT.md
// (checked by an independent Python reader), one test per reader error, and corruption sweeps
// (every truncation, hundreds of random byte flips) that must end in an error or a valid graph.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "engine/session.h"
#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/graph_file.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/graph/toy_shapes.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::graph;
using ojson = nlohmann::ordered_json;
using Bytes = std::vector<std::byte>;

namespace {

const test::ToyShapes kToy;

template <typename T>
Tensor tensor_of(DType dt, Shape shape, std::vector<T> vals) {
  Tensor t(TensorDesc{dt, std::move(shape)});
  REQUIRE(t.bytes() == vals.size() * sizeof(T));
  std::memcpy(t.data(), vals.data(), t.bytes());
  return t;
}

float f32_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A graph that uses every dtype, every attribute type (with NaN, infinities, -0.0, denormals,
// int64 extremes and non-ASCII strings), an absent optional input and metadata.
Graph sample_graph(const std::string& source = "sample") {
  GraphBuilder b(source);
  b.add_input("x", TensorDesc{DType::kF32, {2, 3}});
  b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 7));
  b.add_input("idx", TensorDesc{DType::kI64, {4}});
  b.add_constant("b", tensor_of<int32_t>(DType::kI32, {3},
                                         {-1, std::numeric_limits<int32_t>::min(), 2147483647}));
  b.add_constant("k", tensor_of<int64_t>(DType::kI64, {2},
                                         {std::numeric_limits<int64_t>::min(),
                                          std::numeric_limits<int64_t>::max()}));
  // Bit patterns that must survive untouched: a NaN with a payload, -0, inf, a denormal.
  b.add_constant(
      "odd", tensor_of<float>(DType::kF32, {5},
                              {f32_bits(0x7fc12345u), -0.0f, std::numeric_limits<float>::infinity(),
                               f32_bits(0x00000001u), 1.0f / 3.0f}));
  Attributes a;
  a.set("outputs", int64_t{1});
  a.set("big", std::numeric_limits<int64_t>::min());
  a.set("big2", std::numeric_limits<int64_t>::max());
  a.set("nan", std::numeric_limits<double>::quiet_NaN());
  a.set("third", 1.0 / 3.0);
  a.set("floats",
        std::vector<double>{-0.0, std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(), 4.9e-324, 0.1, 1e308});
  a.set("ints", std::vector<int64_t>{});
  a.set("ints2", std::vector<int64_t>{-3, 0, 1LL << 40});
  a.set("text", std::string("h\xc3\xa9llo \xe2\x9c\x93 \"quoted\"\n\ttab"));
  a.set("empty", std::string());
  b.add_node("Same", "gates", {"x", "w"}, {"y"}, a);
  b.add_node("Pick", "pick", {"", "y"}, {"z"});
  Attributes f;
  f.set("dtype", std::string("int64"));
  f.set("shape", std::vector<int64_t>{4});
  b.add_node("Free", "free", {}, {"f"}, f);
  b.add_node("Same", "idx_copy", {"idx", "f"}, {"g"});
  b.add_output("z");
  b.add_output("y");
  b.add_output("g");
  b.set_metadata("producer", "graphi tests");
  b.set_metadata("description", "line 1\nline 2 \"q\" \xe2\x82\xac");
  b.set_metadata("", "empty key");
  return value_or_throw(b.finish(kToy));
}

bool same_bits(double x, double y) {
  if (std::isnan(x) || std::isnan(y))
    return std::isnan(x) && std::isnan(y);  // payloads are not kept
  return std::memcmp(&x, &y, sizeof x) == 0;
}

bool same_attribute(const Attribute& x, const Attribute& y) {
  if (x.index() != y.index()) return false;
  if (auto* d = std::get_if<double>(&x)) return same_bits(*d, std::get<double>(y));
  if (auto* l = std::get_if<std::vector<double>>(&x)) {
    const auto& m = std::get<std::vector<double>>(y);
    if (l->size() != m.size()) return false;
    for (size_t i = 0; i < l->size(); ++i)
      if (!same_bits((*l)[i], m[i])) return false;
    return true;
  }
  return x == y;
}

// Everything but the source, compared field by field; weights bit for bit. Values are matched
// by name: the format does not store value ids, and a reader numbers graph inputs before
// constants, so a graph whose builder interleaved them gets other ids (FORMAT.md says so).
void require_same_graph(const Graph& g, const Graph& h) {
  REQUIRE(h.num_values() == g.num_values());
  REQUIRE(h.num_nodes() == g.num_nodes());
  auto name_of = [](const Graph& x, ValueId v) {
    return v == kNoId ? std::string("<absent>") : x.value(v).name;
  };
  auto names = [&](const Graph& x, std::span<const ValueId> ids) {
    std::vector<std::string> out;
    for (ValueId v : ids) out.push_back(name_of(x, v));
    return out;
  };
  for (const Value& a : g.values()) {
    INFO("value " << a.name);
    std::optional<ValueId> id = h.find_value(a.name);
    REQUIRE(id.has_value());
    const Value& b = h.value(*id);
    CHECK(b.desc == a.desc);
    CHECK(b.kind == a.kind);
    CHECK(b.producer == a.producer);  // nodes keep their order, so node ids match
    CHECK(b.is_output == a.is_output);
    REQUIRE((a.data == nullptr) == (b.data == nullptr));
    if (a.data) {
      REQUIRE(b.data->bytes() == a.data->bytes());
      CHECK(std::memcmp(b.data->data(), a.data->data(), a.data->bytes()) == 0);
    }
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& a = g.node(n);
    const Node& b = h.node(n);
    INFO("node " << a.name);
    CHECK(b.name == a.name);
    CHECK(b.op == a.op);
    CHECK(names(h, b.inputs) == names(g, a.inputs));
    CHECK(names(h, b.outputs) == names(g, a.outputs));
    REQUIRE(b.attrs.all().size() == a.attrs.all().size());
    for (const auto& [k, v] : a.attrs.all()) {
      INFO("attribute " << k);
      REQUIRE(b.attrs.has(k));
      CHECK(same_attribute(v, *b.attrs.find(k)));
    }
  }
  CHECK(names(h, h.inputs()) == names(g, g.inputs()));
  CHECK(names(h, h.outputs()) == names(g, g.outputs()));
  for (ValueId v = 0; v < g.num_values(); ++v) {
    INFO("consumers of " << g.value(v).name);
    std::vector<NodeId> a(g.consumers(v).begin(), g.consumers(v).end());
    std::vector<NodeId> b(h.consumers(*h.find_value(g.value(v).name)).begin(),
                          h.consumers(*h.find_value(g.value(v).name)).end());
    CHECK(a == b);
  }
  CHECK(h.metadata() == g.metadata());
}

Bytes to_bytes(const Graph& g) { return value_or_throw(write_graphi_bytes(g)); }

// Independent of format.cpp: the layout as FORMAT.md states it.
uint64_t le(const Bytes& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = v << 8 | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
  return v;
}
struct Parts {
  ojson header;
  Bytes weights;
  uint64_t weights_offset;
};
Parts split(const Bytes& file) {
  const uint64_t hlen = le(file, 16, 8), wlen = le(file, 24, 8);
  const uint64_t woff = (32 + hlen + 63) / 64 * 64;
  REQUIRE(file.size() == woff + wlen);
  std::string text(reinterpret_cast<const char*>(file.data()) + 32, hlen);
  return {ojson::parse(text), Bytes(file.begin() + static_cast<long>(woff), file.end()), woff};
}
// Builds a file from parts; the lengths in the preamble follow the parts unless overridden.
Bytes assemble(const std::string& header_text, const Bytes& weights, uint32_t version = 1,
               uint32_t flags = 0) {
  const uint64_t woff = (32 + header_text.size() + 63) / 64 * 64;
  Bytes out(woff, std::byte{0});
  const char magic[] = "\x89GRAPHI\n";
  std::memcpy(out.data(), magic, 8);
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      out[at + static_cast<size_t>(i)] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(8, version, 4);
  put(12, flags, 4);
  put(16, header_text.size(), 8);
  put(24, weights.size(), 8);
  std::memcpy(out.data() + 32, header_text.data(), header_text.size());
  out.insert(out.end(), weights.begin(), weights.end());
  return out;
}
Bytes assemble(const ojson& header, const Bytes& weights) {
  return assemble(header.dump(), weights);
}

Status read_error(const Bytes& file, const std::string& source = "m.graphi") {
  Result<Graph> r = read_graphi_bytes(file, source, kToy);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  return r.status();
}

// The sample file with its header edited by `edit`.
template <typename F>
Status header_error(F edit) {
  Parts p = split(to_bytes(sample_graph()));
  edit(p.header);
  return read_error(assemble(p.header, p.weights));
}

ojson& node_named(ojson& h, const std::string& name) {
  for (ojson& n : h["nodes"])
    if (n["name"] == name) return n;
  FAIL("no node " << name);
  throw;
}

void write_file(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Round trips and layout.

TEST_CASE("format: a round trip through bytes is lossless") {
  Graph g = sample_graph();
  Bytes bytes = to_bytes(g);
  Result<Graph> r = read_graphi_bytes(bytes, "mem.graphi", kToy);
  REQUIRE(r.is_ok());
  require_same_graph(g, *r);
  CHECK(r->source() == "mem.graphi");
  // And writing the read graph gives the same bytes: the writer is deterministic.
  CHECK(to_bytes(*r) == bytes);
}

TEST_CASE("format: a round trip through a file is lossless and leaves no temporary file") {
  auto dir = test::scratch_dir("format_file_round_trip");
  const std::string path = (dir / "m.graphi").string();
  Graph g = sample_graph();
  REQUIRE(write_graphi(g, path).is_ok());
  Result<Graph> r = read_graphi(path, kToy);
  REQUIRE(r.is_ok());
  require_same_graph(g, *r);
  CHECK(r->source() == path);
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 1);
  // Overwriting an existing file works too.
  REQUIRE(write_graphi(*r, path).is_ok());
  CHECK(read_graphi(path, kToy).is_ok());
}

TEST_CASE("format: the byte layout is the one FORMAT.md specifies") {
  Graph g = sample_graph();
  Bytes f = to_bytes(g);
  const char magic[] = "\x89GRAPHI\n";
  CHECK(std::memcmp(f.data(), magic, 8) == 0);
  CHECK(le(f, 8, 4) == 1);   // version
  CHECK(le(f, 12, 4) == 0);  // flags
  Parts p = split(f);
  CHECK(p.weights_offset % 64 == 0);
  for (uint64_t i = 32 + le(f, 16, 8); i < p.weights_offset; ++i) CHECK(f[i] == std::byte{0});
  const ojson& h = p.header;
  REQUIRE(h["inputs"].size() == 2);
  CHECK(h["inputs"][0] == ojson::parse(R"({"name":"x","dtype":"float32","shape":[2,3]})"));
  REQUIRE(h["constants"].size() == 4);
  uint64_t end = 0;
  for (const ojson& c : h["constants"]) {
    CHECK(c["offset"].get<uint64_t>() % 64 == 0);
    CHECK(c["offset"].get<uint64_t>() >= end);  // in order, not overlapping
    end = c["offset"].get<uint64_t>() + c["byte_length"].get<uint64_t>();
  }
  CHECK(end == p.weights.size());
  CHECK(h["constants"][1]["name"] == "b");
  CHECK(h["constants"][1]["dtype"] == "int32");
  CHECK(h["constants"][1]["byte_length"] == 12);
  const ojson& gates = h["nodes"][0];
  CHECK(gates["name"] == "gates");
  CHECK(gates["attributes"]["nan"] == ojson::parse(R"({"type":"float","value":"nan"})"));
  CHECK(gates["attributes"]["floats"]["value"][1] == "inf");
  CHECK(gates["attributes"]["big"]["type"] == "int");
  CHECK(gates["attributes"]["ints"] == ojson::parse(R"({"type":"ints","value":[]})"));
  CHECK(h["nodes"][1]["inputs"] == ojson::parse(R"(["", "y"])"));
  CHECK(h["outputs"] == ojson::parse(R"(["z", "y", "g"])"));
  CHECK(h["value_info"].size() == 4);  // every intermediate: y, z, f, g
  CHECK(h["metadata"]["producer"] == "graphi tests");
}

TEST_CASE("format: an independent Python reader written from FORMAT.md reads the weights") {
  auto dir = test::scratch_dir("format_python_reader");
  const std::string path = (dir / "m.graphi").string();
  Graph g = sample_graph();
  REQUIRE(write_graphi(g, path).is_ok());
  const std::string script = dir.string() + "/read.py";
  {
    std::ofstream py(script);
    py << R"PY(
import json, struct, sys
import numpy as np
data = open(sys.argv[1], 'rb').read()
magic, version, flags, hlen, wlen = struct.unpack('<8sIIQQ', data[:32])
assert magic == b'\x89GRAPHI\n' and version == 1 and flags == 0
header = json.loads(data[32:32 + hlen].decode('utf-8'))
woff = (32 + hlen + 63) // 64 * 64
assert len(data) == woff + wlen
for c in header['constants']:
    dt = {'float32': '<f4', 'int32': '<i4', 'int64': '<i8'}[c['dtype']]
    raw = data[woff + c['offset']: woff + c['offset'] + c['byte_length']]
    a = np.frombuffer(raw, dtype=dt).reshape(c['shape'])
    print(c['name'], a.dtype.name, list(a.shape), a.tobytes().hex())
)PY";
  }
  std::string cmd = "/usr/bin/python3 " + script + " " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  // Expected lines from the in-memory graph: name, dtype, shape, raw bytes in hex.
  std::string expect;
  for (const Value& v : g.values()) {
    if (v.kind != ValueKind::kConstant) continue;
    std::string shape = "[";
    for (size_t i = 0; i < v.desc.shape.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(v.desc.shape[i]);
    expect += v.name + " " + dtype_name(v.desc.dtype) + " " + shape + "] ";
    const auto* d = static_cast<const unsigned char*>(v.data->data());
    for (size_t i = 0; i < v.data->bytes(); ++i) {
      char h[3];
      std::snprintf(h, sizeof h, "%02x", d[i]);
      expect += h;
    }
    expect += "\n";
  }
  CHECK(out == expect);
}

TEST_CASE("format: a graph without constants has an empty weight section") {
  GraphBuilder b("m");
  b.add_input("x", TensorDesc{DType::kF32, {1}});
  b.add_output("x");
  Graph g = value_or_throw(b.finish(kToy));
  Bytes f = to_bytes(g);
  CHECK(le(f, 24, 8) == 0);
  CHECK(f.size() % 64 == 0);
  Result<Graph> r = read_graphi_bytes(f, "m", kToy);
  REQUIRE(r.is_ok());
  require_same_graph(g, *r);
}

TEST_CASE("format: files written by hand with optional fields omitted are read") {
  const std::string header = R"({"inputs":[{"name":"x","dtype":"f32","shape":[3]}],"constants":[],
    "nodes":[{"name":"n","op":"Same","inputs":["x"],"outputs":["y"]}],"outputs":["y"]})";
  Result<Graph> r = read_graphi_bytes(assemble(header, {}), "hand.graphi", kToy);
  REQUIRE(r.is_ok());
  CHECK(r->num_nodes() == 1);
  CHECK(r->metadata().empty());
}

// ------------------------------------------------------------------------------------------
// Preamble and weight-section errors.

TEST_CASE("format error: wrong magic says what was found and what is expected") {
  Bytes f = to_bytes(sample_graph());
  const char elf[] =
      "\x7f"
      "ELF";
  std::memcpy(f.data(), elf, 4);
  Status s = read_error(f);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  CHECK_THAT(s.message(),
             Catch::StartsWith("m.graphi: not a .graphi file: the first 8 bytes are 7f 45 4c 46"));
  CHECK_THAT(s.message(), Catch::Contains("expected 89 47 52 41 50 48 49 0a"));
}

TEST_CASE("format error: an unsupported version names the version found and the supported one") {
  Parts p = split(to_bytes(sample_graph()));
  for (uint32_t v : {0u, 2u, 0xffffffffu}) {
    Status s = read_error(assemble(p.header.dump(), p.weights, v));
    CHECK(s.code() == StatusCode::kUnsupported);
    CHECK(s.message() == "m.graphi: unsupported .graphi format version " + std::to_string(v) +
                             " (this build of graphi reads version 1)");
  }
}

TEST_CASE("format error: non-zero preamble flags") {
  Parts p = split(to_bytes(sample_graph()));
  CHECK_THAT(read_error(assemble(p.header.dump(), p.weights, 1, 4)).message(),
             Catch::Contains("preamble flags are 4; format version 1 requires 0"));
}

TEST_CASE("format error: a file shorter than the preamble") {
  CHECK(read_error({}).message() ==
        "m.graphi: file is 0 bytes, shorter than the 32-byte .graphi preamble (truncated?)");
  Bytes f = to_bytes(sample_graph());
  f.resize(20);
  CHECK_THAT(read_error(f).message(), Catch::Contains("file is 20 bytes"));
}

TEST_CASE("format error: a header length past the end of the file, including absurd ones") {
  Bytes f = to_bytes(sample_graph());
  for (uint64_t len : {uint64_t{f.size()}, uint64_t{1} << 40, ~uint64_t{0}}) {
    for (int i = 0; i < 8; ++i)
      f[16 + static_cast<size_t>(i)] = std::byte(static_cast<uint8_t>(len >> (8 * i)));
    Status s = read_error(f);
    CHECK_THAT(s.message(), Catch::Contains("-byte header but only " +
                                            std::to_string(f.size() - 32) + " bytes follow"));
  }
}

TEST_CASE("format error: an absurd weight-section length") {
  Bytes f = to_bytes(sample_graph());
  for (int i = 0; i < 8; ++i) f[24 + static_cast<size_t>(i)] = std::byte{0xff};
  CHECK_THAT(read_error(f).message(), Catch::Contains("which cannot be right"));
}

TEST_CASE("format error: truncated weights name the tensor that is cut off") {
  Bytes f = to_bytes(sample_graph());
  Parts p = split(f);
  // Cut inside 'k' (the third constant): its data starts at weight offset 128.
  const uint64_t k_off = p.header["constants"][2]["offset"].get<uint64_t>();
  f.resize(static_cast<size_t>(p.weights_offset + k_off + 5));
  Status s = read_error(f);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  CHECK_THAT(
      s.message(),
      Catch::StartsWith(
          "m.graphi: constant 'k': weight data is truncated: its 16 bytes start at file offset"));
  CHECK_THAT(s.message(), Catch::Contains("but the file ends at " + std::to_string(f.size())));
}

TEST_CASE("format error: a byte_length longer or shorter than the shape needs names the tensor") {
  Status s = header_error([](ojson& h) { h["constants"][0]["byte_length"] = 28; });
  CHECK(s.message() ==
        "m.graphi: constant 'w': field 'byte_length' is 28 but float32[2, 3] needs 24 bytes "
        "(weight data longer than its declared shape)");
  s = header_error([](ojson& h) { h["constants"][0]["byte_length"] = 20; });
  CHECK_THAT(s.message(), Catch::Contains("shorter than its declared shape"));
}

TEST_CASE("format error: a shape that does not match the stored bytes names the tensor") {
  Status s = header_error([](ojson& h) { h["constants"][0]["shape"] = {2, 4}; });
  CHECK(s.message() ==
        "m.graphi: constant 'w': field 'byte_length' is 24 but float32[2, 4] needs 32 bytes "
        "(weight data shorter than its declared shape)");
}

TEST_CASE("format error: a weight offset outside the weight section names the tensor") {
  Status s = header_error([](ojson& h) { h["constants"][3]["offset"] = 4096; });
  CHECK_THAT(s.message(),
             Catch::StartsWith(
                 "m.graphi: constant 'odd': weight bytes [4096, 4096 + 20) lie outside the"));
  s = header_error([](ojson& h) { h["constants"][3]["offset"] = uint64_t{1} << 62; });
  CHECK_THAT(s.message(), Catch::Contains("constant 'odd': weight bytes"));
  s = header_error(
      [](ojson& h) { h["constants"][3]["offset"] = std::numeric_limits<int64_t>::max() - 63; });
  CHECK_THAT(s.message(), Catch::Contains("constant 'odd'"));
}

TEST_CASE("format error: constants whose weight bytes overlap") {
  // Overlaps would let a small file ask for many copies of its size in weight memory.
  Status s = header_error([](ojson& h) { h["constants"][2]["offset"] = 64; });
  CHECK(s.message() ==
        "m.graphi: constant 'k': weight bytes [64, 80) overlap those of constant 'b' [64, 76)");
  s = header_error([](ojson& h) {
    h["constants"][1]["shape"] = {20};
    h["constants"][1]["byte_length"] = 80;
  });
  CHECK(s.message() ==
        "m.graphi: constant 'k': weight bytes [128, 144) overlap those of constant 'b' [64, 144)");
}

TEST_CASE("format error: a weight offset that is not 64-byte aligned") {
  Status s = header_error([](ojson& h) { h["constants"][1]["offset"] = 65; });
  CHECK(s.message() == "m.graphi: constant 'b': field 'offset' is 65; it must be a multiple of 64");
}

TEST_CASE("format error: weights longer than the constants describe") {
  Parts p = split(to_bytes(sample_graph()));
  p.weights.resize(p.weights.size() + 100, std::byte{1});
  Status s = read_error(assemble(p.header, p.weights));
  CHECK_THAT(s.message(),
             Catch::Contains("100 bytes of weights are not described by any constant"));
}

TEST_CASE("format error: bytes after the end of the weight section") {
  Bytes f = to_bytes(sample_graph());
  f.push_back(std::byte{0});
  f.push_back(std::byte{0});
  CHECK_THAT(read_error(f).message(),
             Catch::Contains("file has 2 unexpected bytes after the end of the weight section"));
}

TEST_CASE("format error: non-zero padding between header and weights") {
  Bytes f = to_bytes(sample_graph());
  const uint64_t pad_start = 32 + le(f, 16, 8);
  REQUIRE(pad_start % 64 != 0);  // the sample's header length leaves padding
  f[pad_start] = std::byte{' '};
  CHECK_THAT(read_error(f).message(),
             Catch::Contains("padding byte at file offset " + std::to_string(pad_start)));
}

// ------------------------------------------------------------------------------------------
// Header JSON errors.

TEST_CASE("format error: a header that is not JSON gives the parser's position") {
  Parts p = split(to_bytes(sample_graph()));
  std::string text = p.header.dump();
  text[text.size() / 2] = '}';
  Status s = read_error(assemble(text, p.weights));
  CHECK_THAT(s.message(), Catch::StartsWith(
                              "m.graphi: header is not valid JSON: parse error at line 1, column"));
  s = read_error(assemble(std::string("{\"inputs\": [\xff]}"), {}));
  CHECK_THAT(s.message(), Catch::Contains("header is not valid JSON"));
  s = read_error(assemble(std::string(""), {}));
  CHECK_THAT(s.message(), Catch::Contains("header is not valid JSON"));
}

TEST_CASE("format error: deeply nested JSON is refused without recursion") {
  std::string deep = "{\"metadata\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK_THAT(read_error(assemble(deep, {})).message(),
             Catch::Contains("nested deeper than 32 levels"));
}

TEST_CASE("format error: a key given twice in one object") {
  Status s = read_error(assemble(std::string(R"({"inputs": [], "inputs": []})"), {}));
  CHECK(s.message() == "m.graphi: header JSON has the key 'inputs' twice in one object");
}

TEST_CASE("format error: a header that is not an object") {
  CHECK(read_error(assemble(std::string("[1, 2]"), {})).message() ==
        "m.graphi: header: must be a JSON object, got array");
}

TEST_CASE("format error: missing required fields name the object and the field") {
  CHECK(header_error([](ojson& h) { h.erase("nodes"); }).message() ==
        "m.graphi: header: field 'nodes' is missing");
  CHECK(header_error([](ojson& h) { h.erase("outputs"); }).message() ==
        "m.graphi: header: field 'outputs' is missing");
  CHECK(header_error([](ojson& h) { node_named(h, "gates").erase("op"); }).message() ==
        "m.graphi: node 'gates': field 'op' is missing");
  CHECK(header_error([](ojson& h) { h["inputs"][0].erase("dtype"); }).message() ==
        "m.graphi: input 'x': field 'dtype' is missing");
  CHECK(header_error([](ojson& h) { h["constants"][2].erase("offset"); }).message() ==
        "m.graphi: constant 'k': field 'offset' is missing");
  CHECK(header_error([](ojson& h) { h["nodes"][1].erase("name"); }).message() ==
        "m.graphi: node #1: field 'name' is missing");
  CHECK(header_error([](ojson& h) {
          node_named(h, "gates")["attributes"]["big"].erase("value");
        }).message() == "m.graphi: node 'gates': attribute 'big': field 'value' is missing");
}

TEST_CASE("format error: wrong field types name the object and the field") {
  CHECK(header_error([](ojson& h) {
          node_named(h, "gates")["inputs"] = {"x", 3};
        }).message() == "m.graphi: node 'gates': field 'inputs' must be a list of strings");
  CHECK(header_error([](ojson& h) { node_named(h, "gates")["outputs"] = "y"; }).message() ==
        "m.graphi: node 'gates': field 'outputs' must be a list of strings");
  CHECK(header_error([](ojson& h) { h["nodes"][0]["name"] = 12; }).message() ==
        "m.graphi: node #0: field 'name' must be a string, got number");
  CHECK(header_error([](ojson& h) { node_named(h, "pick")["op"] = nullptr; }).message() ==
        "m.graphi: node 'pick': field 'op' must be a string, got null");
  CHECK(header_error([](ojson& h) { h["nodes"] = ojson::object(); }).message() ==
        "m.graphi: header: field 'nodes' must be a list, got object");
  CHECK(header_error([](ojson& h) { h["nodes"][0] = "gates"; }).message() ==
        "m.graphi: node #0: must be a JSON object, got string");
  CHECK(header_error([](ojson& h) {
          h["outputs"] = {"z", true};
        }).message() == "m.graphi: header: field 'outputs' must be a list of strings");
  CHECK(header_error([](ojson& h) {
          h["inputs"][0]["shape"] = {2, 3.5};
        }).message() == "m.graphi: input 'x': field 'shape' must be a list of integers");
  CHECK(header_error([](ojson& h) { h["inputs"][0]["shape"] = "2x3"; }).message() ==
        "m.graphi: input 'x': field 'shape' must be a list of integers, got string");
  CHECK(header_error([](ojson& h) {
          h["inputs"][0]["shape"] = {2, -3};
        }).message() == "m.graphi: input 'x': field 'shape' has a negative dimension -3");
  CHECK(header_error([](ojson& h) { h["inputs"][0]["dtype"] = "float16"; }).message() ==
        "m.graphi: input 'x': field 'dtype' is 'float16'; supported: float32, int32, int64");
  CHECK(header_error([](ojson& h) { h["constants"][0]["offset"] = -64; }).message() ==
        "m.graphi: constant 'w': field 'offset' must not be negative, got -64");
  CHECK(header_error([](ojson& h) { h["constants"][0]["byte_length"] = "24"; }).message() ==
        "m.graphi: constant 'w': field 'byte_length' must be an integer, got string");
  CHECK(header_error([](ojson& h) {
          h["constants"][0]["byte_length"] = uint64_t{1} << 63;
        }).message() == "m.graphi: constant 'w': field 'byte_length' is out of the int64 range");
  CHECK(header_error([](ojson& h) {
          node_named(h, "gates")["attributes"] = {1, 2};
        }).message() == "m.graphi: node 'gates': field 'attributes' must be an object, got array");
  CHECK(header_error([](ojson& h) { h["metadata"]["producer"] = 3; }).message() ==
        "m.graphi: header: field 'metadata' entry 'producer' must be a string, got number");
  CHECK(header_error([](ojson& h) { h["metadata"] = {1}; }).message() ==
        "m.graphi: header: field 'metadata' must be an object of strings, got array");
  CHECK(header_error([](ojson& h) { h["value_info"][0]["shape"] = {true}; }).message() ==
        "m.graphi: value_info 'y': field 'shape' must be a list of integers");
}

TEST_CASE("format error: attributes of the wrong declared type name node, attribute and field") {
  auto attr = [](const char* name, const char* json_text) {
    return header_error(
        [&](ojson& h) { node_named(h, "gates")["attributes"][name] = ojson::parse(json_text); });
  };
  CHECK(attr("big", R"({"type": "int", "value": 1.5})").message() ==
        "m.graphi: node 'gates': attribute 'big': field 'value' (type int) must be an integer, got "
        "number");
  CHECK(attr("big", R"({"type": "int", "value": 9223372036854775808})").message() ==
        "m.graphi: node 'gates': attribute 'big': field 'value' (type int) is out of the int64 "
        "range");
  CHECK(attr("third", R"({"type": "float", "value": "abc"})").message() ==
        "m.graphi: node 'gates': attribute 'third': field 'value' (type float) must be a number "
        "(or \"nan\", "
        "\"inf\", \"-inf\"), got \"abc\"");
  CHECK(attr("ints2", R"({"type": "ints", "value": [1, "2"]})").message() ==
        "m.graphi: node 'gates': attribute 'ints2': field 'value' (type ints) element must be an "
        "integer, got string");
  CHECK(attr("ints2", R"({"type": "ints", "value": 3})").message() ==
        "m.graphi: node 'gates': attribute 'ints2': field 'value' (type ints) must be a list, got "
        "number");
  CHECK(attr("floats", R"({"type": "floats", "value": [1, null]})").message() ==
        "m.graphi: node 'gates': attribute 'floats': field 'value' (type floats) element must be a "
        "number (or "
        "\"nan\", \"inf\", \"-inf\"), got null");
  CHECK(attr("text", R"({"type": "string", "value": 5})").message() ==
        "m.graphi: node 'gates': attribute 'text': field 'value' (type string) must be a string, "
        "got number");
  CHECK(attr("text", R"({"type": "tensor", "value": 5})").message() ==
        "m.graphi: node 'gates': attribute 'text': field 'type' is 'tensor'; must be one of int, "
        "float, ints, "
        "floats, string");
  CHECK(attr("text", R"("hello")").message() ==
        "m.graphi: node 'gates': attribute 'text': must be a JSON object, got string");
  CHECK(attr("text", R"({"type": "string", "value": "a", "doc": "x"})").message() ==
        "m.graphi: node 'gates': attribute 'text': unknown field 'doc' (format version 1 allows: "
        "type, value)");
}

TEST_CASE("format: integers are accepted where floats are declared") {
  Parts p = split(to_bytes(sample_graph()));
  node_named(p.header, "gates")["attributes"]["third"] =
      ojson::parse(R"({"type": "float", "value": 3})");
  Result<Graph> r = read_graphi_bytes(assemble(p.header, p.weights), "m.graphi", kToy);
  REQUIRE(r.is_ok());
  CHECK(std::get<double>(*r->node(0).attrs.find("third")) == 3.0);
}

TEST_CASE("format error: an unknown field is reported with the fields the version allows") {
  CHECK(header_error([](ojson& h) { h["ouputs"] = ojson::array(); }).message() ==
        "m.graphi: header: unknown field 'ouputs' (format version 1 allows: inputs, constants, "
        "nodes, outputs, "
        "value_info, metadata)");
  CHECK(
      header_error([](ojson& h) { node_named(h, "pick")["attrs"] = ojson::object(); }).message() ==
      "m.graphi: node 'pick': unknown field 'attrs' (format version 1 allows: name, op, inputs, "
      "outputs, "
      "attributes)");
}

TEST_CASE("format error: shapes whose byte size overflows are refused before any allocation") {
  // 2^40 x 2^40 float32 elements: 2^82 bytes.
  Status s = header_error([](ojson& h) {
    h["inputs"][0]["shape"] = {int64_t{1} << 40, int64_t{1} << 40};
  });
  CHECK_THAT(
      s.message(),
      Catch::StartsWith("m.graphi: input 'x': field 'shape' [1099511627776, 1099511627776]..."));
  CHECK_THAT(s.message(), Catch::Contains("more than 2^62 bytes"));
  s = header_error([](ojson& h) {
    h["constants"][0]["shape"] = {int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31};
    h["constants"][0]["byte_length"] = int64_t{1} << 62;
  });
  CHECK_THAT(s.message(), Catch::Contains("constant 'w': field 'shape'"));
  // Large but representable: the byte_length check stops it, nothing is allocated.
  s = header_error([](ojson& h) {
    h["constants"][0]["shape"] = {int64_t{1} << 30, int64_t{1} << 20};
    h["constants"][0]["byte_length"] = int64_t{1} << 52;
  });
  CHECK_THAT(s.message(),
             Catch::Contains("constant 'w': weight bytes [0, 0 + 4503599627370496) lie outside"));
  s = header_error([](ojson& h) { h["inputs"][0]["shape"] = ojson(std::vector<int>(33, 1)); });
  CHECK(s.message() == "m.graphi: input 'x': field 'shape' has rank 33; at most 32 is supported");
}

// ------------------------------------------------------------------------------------------
// Graph-level errors found after the file is parsed still name the file.

TEST_CASE("format error: graph validation errors name the file, the node and the value") {
  Status s = header_error([](ojson& h) { node_named(h, "gates")["inputs"] = {"x", "nope"}; });
  CHECK(s.message() == "m.graphi: node 'gates' (Same): input 1 'nope' is used but never produced");
  s = header_error([](ojson& h) { node_named(h, "gates")["inputs"] = {"z", "w"}; });
  CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: the graph has a cycle through nodes "));
  CHECK_THAT(s.message(), Catch::Contains("'gates'"));
  CHECK_THAT(s.message(), Catch::Contains("'pick'"));
  s = header_error([](ojson& h) { node_named(h, "pick")["op"] = "Pik"; });
  CHECK(s.code() == StatusCode::kUnsupported);
  CHECK(s.message() == "m.graphi: node 'pick' (Pik): unknown op type 'Pik'");
  s = header_error([](ojson& h) { h["constants"][1]["name"] = "w"; });
  CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: duplicate value name 'w'"));
  s = header_error([](ojson& h) { h["nodes"][1]["name"] = "gates"; });
  CHECK(s.message() == "m.graphi: duplicate node name 'gates'");
  s = header_error([](ojson& h) { h["inputs"][0]["shape"] = {0, 3}; });
  CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: graph input 'x' has shape [0, 3]"));
  s = header_error([](ojson& h) { h["outputs"] = ojson::array(); });
  CHECK(s.message() == "m.graphi: the graph declares no outputs");
}

TEST_CASE("format error: a declared value_info that differs from inference says both shapes") {
  Status s = header_error([](ojson& h) {
    for (ojson& v : h["value_info"])
      if (v["name"] == "y") v["shape"] = {3, 2};
  });
  CHECK(s.message() ==
        "m.graphi: node 'gates' (Same): output 'y' is declared as float32[3, 2] but the op "
        "produces float32[2, 3]");
}

// ------------------------------------------------------------------------------------------
// Files, dispatch and writer errors.

TEST_CASE("format error: missing files and directories are I/O errors naming the path") {
  auto dir = test::scratch_dir("format_io_errors");
  Result<Graph> r = read_graphi((dir / "absent.graphi").string(), kToy);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kIoError);
  CHECK(r.status().message() ==
        "cannot open '" + (dir / "absent.graphi").string() + "': No such file or directory");
  r = read_graphi(dir.string(), kToy);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kIoError);
  CHECK_THAT(r.status().message(), Catch::Contains("is a directory"));
}

TEST_CASE("format: read_graph_file dispatches on the extension, then on the content") {
  auto dir = test::scratch_dir("format_dispatch");
  Graph g = sample_graph();
  Bytes bytes = to_bytes(g);
  write_file(dir / "m.graphi", bytes);
  write_file(dir / "M.GRAPHI", bytes);
  write_file(dir / "m.bin", bytes);
  write_file(dir / "noext", bytes);
  write_file(dir / "m.onnx", Bytes(16, std::byte{8}));
  write_file(dir / "m.txt", Bytes(100, std::byte{'a'}));
  for (const char* name : {"m.graphi", "M.GRAPHI", "m.bin", "noext"}) {
    INFO(name);
    Result<Graph> r = read_graph_file((dir / name).string(), kToy);
    REQUIRE(r.is_ok());
    require_same_graph(g, *r);
  }
  Result<Graph> r = read_graph_file((dir / "m.onnx").string(), kToy);
  REQUIRE_FALSE(r.is_ok());
  // 16 bytes of 0x08 decode as ONNX ir_version fields and nothing else (graph/onnx/onnx_import.h).
  CHECK(r.status().code() == StatusCode::kInvalidGraph);
  CHECK_THAT(r.status().message(), Catch::Contains("m.onnx: the model has no graph"));
  r = read_graph_file((dir / "m.txt").string(), kToy);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(),
             Catch::Contains("m.txt: unknown model file type (extension '.txt'"));
  r = read_graph_file((dir / "absent.graphi").string(), kToy);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kIoError);
}

TEST_CASE("format: the writer refuses strings that are not UTF-8, and unwritable paths") {
  GraphBuilder b("m");
  b.add_input("x\xff", TensorDesc{DType::kF32, {1}});
  b.add_output("x\xff");
  Graph g = value_or_throw(b.finish(kToy));
  Result<Bytes> r = write_graphi_bytes(g);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("value name 'x\xff' is not valid UTF-8"));

  Status s = write_graphi(sample_graph(), "/nonexistent-dir/m.graphi");
  CHECK(s.code() == StatusCode::kIoError);
  CHECK_THAT(s.message(), Catch::StartsWith("cannot write '/nonexistent-dir/m.graphi'"));
}

// ------------------------------------------------------------------------------------------
// Corruption sweeps: nothing may crash, hang or throw.

TEST_CASE("format corruption: every truncation is an error") {
  Bytes f = to_bytes(sample_graph());
  // Every k/16 of the length, and every single length below that for good measure (the sample
  // file is a few KB, so this is a few thousand reads).
  for (size_t k = 0; k < 16; ++k) {
    Bytes t(f.begin(), f.begin() + static_cast<long>(f.size() * k / 16));
    CHECK_FALSE(read_graphi_bytes(t, "t", kToy).is_ok());
  }
  size_t errors = 0;
  for (size_t n = 0; n < f.size(); ++n) {
    Bytes t(f.begin(), f.begin() + static_cast<long>(n));
    errors += !read_graphi_bytes(t, "t", kToy).is_ok();
  }
  CHECK(errors == f.size());
}

TEST_CASE(
    "format corruption: random byte flips give an error or a valid graph, flips in weights load") {
  const Bytes f = to_bytes(sample_graph());
  const Parts p = split(f);
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<size_t> pos(0, f.size() - 1);
  std::uniform_int_distribution<int> mask(1, 255), count(1, 4);
  int errors = 0, loaded = 0, weight_only = 0;
  for (int variant = 0; variant < 600; ++variant) {
    Bytes c = f;
    bool all_in_weights = true;
    for (int k = count(rng); k > 0; --k) {
      size_t at = pos(rng);
      c[at] ^= std::byte(static_cast<uint8_t>(mask(rng)));
      all_in_weights = all_in_weights && at >= p.weights_offset;
    }
    Result<Graph> r = read_graphi_bytes(c, "flip", kToy);
    if (r.is_ok()) {
      ++loaded;
    } else {
      ++errors;
      CHECK_FALSE(r.status().message().empty());
      CHECK_THAT(r.status().message(), Catch::StartsWith("flip: "));
    }
    if (all_in_weights) {
      ++weight_only;
      INFO(r.status().message());
      REQUIRE(r.is_ok());
      // The loaded weights are exactly the flipped bytes.
      for (const Value& v : r->values()) {
        if (v.kind != ValueKind::kConstant) continue;
        ojson hc;
        for (const ojson& e : p.header["constants"])
          if (e["name"] == v.name) hc = e;
        const size_t off = static_cast<size_t>(p.weights_offset + hc["offset"].get<uint64_t>());
        CHECK(std::memcmp(v.data->data(), c.data() + off, v.data->bytes()) == 0);
      }
    }
  }
  CHECK(errors > 0);
  CHECK(weight_only > 0);
  CHECK(errors + loaded == 600);
}

TEST_CASE("format corruption: flipped bytes inside the JSON header alone never crash") {
  // Denser sampling of the header, where most of the parsing logic is; digit and quote flips
  // create the trickiest inputs (changed lengths, offsets, shapes, names).
  const Bytes f = to_bytes(sample_graph());
  const uint64_t hlen = le(f, 16, 8);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> pos(32, 32 + hlen - 1);
  const char replacements[] = "0123456789\"[]{},:-.e \\x";
  std::uniform_int_distribution<size_t> rep(0, sizeof replacements - 2);
  int errors = 0;
  for (int variant = 0; variant < 600; ++variant) {
    Bytes c = f;
    c[pos(rng)] = std::byte(static_cast<uint8_t>(replacements[rep(rng)]));
    errors += !read_graphi_bytes(c, "flip", kToy).is_ok();
  }
  CHECK(errors > 0);
}

// ------------------------------------------------------------------------------------------
// Real models through the real op registry.

namespace {

Graph small_lstm() {
  models::RnnSpec spec;
  spec.input = 5;
  spec.hidden = 8;
  spec.layers = 2;
  spec.batch = 2;
  spec.seq = 3;
  spec.seed = 11;
  return value_or_throw(models::build_lstm(spec, ops::Registry::get()));
}

engine::NamedTensors run_graph(Graph g, uint64_t seed) {
  auto shared = std::make_shared<const Graph>(std::move(g));
  auto session = value_or_throw(engine::Session::create(shared));
  engine::NamedTensors inputs;
  uint64_t k = 0;  // seeds follow the input order, which the format keeps (value ids it does not)
  for (ValueId v : shared->inputs())
    inputs.emplace_back(shared->value(v).name,
                        test::random_tensor(shared->value(v).desc, seed + k++));
  return value_or_throw(session->run(inputs));
}

}  // namespace

TEST_CASE("format (registry): an LSTM round trips losslessly and computes the same outputs") {
  Graph g = small_lstm();
  auto dir = test::scratch_dir("format_lstm");
  const std::string path = (dir / "lstm.graphi").string();
  REQUIRE(write_graphi(g, path).is_ok());
  Result<Graph> r = read_graphi(path, ops::Registry::get());
  REQUIRE(r.is_ok());
  require_same_graph(g, *r);
  CHECK(to_bytes(*r) == to_bytes(g));
  // Same graph, same inputs: bit-identical outputs from the sequential executor.
  engine::NamedTensors a = run_graph(g, 5), b = run_graph(std::move(*r), 5);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(a[i].first == b[i].first);
    REQUIRE(a[i].second.desc() == b[i].second.desc());
    CHECK(std::memcmp(a[i].second.data(), b[i].second.data(), a[i].second.bytes()) == 0);
  }
}

TEST_CASE("format (registry): corrupted LSTM files give an error or a valid graph, never a crash") {
  const Bytes f = to_bytes(small_lstm());
  const Parts p = split(f);
  const auto& reg = ops::Registry::get();
  for (size_t k = 0; k < 16; ++k) {
    Bytes t(f.begin(), f.begin() + static_cast<long>(f.size() * k / 16));
    Result<Graph> r = read_graphi_bytes(t, "lstm.graphi", reg);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::StartsWith("lstm.graphi: "));
  }
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<size_t> header_pos(32, p.weights_offset - 1),
      any_pos(0, f.size() - 1);
  std::uniform_int_distribution<int> mask(1, 255);
  int errors = 0;
  for (int variant = 0; variant < 300; ++variant) {
    Bytes c = f;
    // Two thirds of the flips aim at the header, where they change structure.
    size_t at = variant % 3 ? header_pos(rng) : any_pos(rng);
    c[at] ^= std::byte(static_cast<uint8_t>(mask(rng)));
    Result<Graph> r = read_graphi_bytes(c, "lstm.graphi", reg);
    if (!r.is_ok()) {
      ++errors;
      CHECK_THAT(r.status().message(), Catch::StartsWith("lstm.graphi: "));
    } else if (at >= p.weights_offset) {
      CHECK(r->num_nodes() > 0);
    }
  }
  CHECK(errors > 0);
}

TEST_CASE("format (registry): the example header in FORMAT.md loads") {
  std::ifstream md(std::string(GRAPHI_SOURCE_DIR) + "/graph/FORMAT.md");
  REQUIRE(md.good());
  std::string doc((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  const size_t start = doc.find("```json\n");
  REQUIRE(start != std::string::npos);
  const size_t end = doc.find("\n```", start + 8);
  REQUIRE(end != std::string::npos);
  const std::string header = doc.substr(start + 8, end - start - 8);
  Bytes weights(76, std::byte{0});  // W: 48 bytes at 0, b: 12 bytes at 64, as the example says
  Result<Graph> r =
      read_graphi_bytes(assemble(header, weights), "example.graphi", ops::Registry::get());
  INFO(r.status().message());
  REQUIRE(r.is_ok());
  CHECK(r->num_nodes() == 4);
  CHECK(r->value(*r->find_value("hh")).desc == TensorDesc{DType::kF32, {1, 6}});
  CHECK(r->metadata().at("producer") == "example");
}
