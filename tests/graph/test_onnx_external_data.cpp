// ONNX external data (graph/onnx/onnx_external_data.h): a model exported by PyTorch and converted
// to external data by onnx's own converter (tests/data/onnx_external, make_external.py) loads and
// matches PyTorch's output; hand-built hostile models (path traversal, absolute paths, symlinks
// out of the model's directory, lengths and offsets past the side file, a size that disagrees
// with the dims, a budget too small) are refused with an error naming the model file, the tensor
// and the field.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/session.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_import.h"
#include "ops/registry.h"
#include "tests/support/proto_writer.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::graph;
namespace fs = std::filesystem;
using test::ProtoWriter;

namespace {

const std::string kFixture = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_external/";

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// TensorProto of FLOAT `dims` whose data is external: data_location = EXTERNAL (field 14) and
// the given external_data entries (field 13, StringStringEntryProto {key = 1, value = 2}).
ProtoWriter external_tensor(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<std::pair<std::string, std::string>>& entries) {
  ProtoWriter t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, 1).s(8, name);
  for (const auto& [k, v] : entries) {
    ProtoWriter e;
    e.s(1, k).s(2, v);
    t.m(13, e);
  }
  t.i(14, 1);
  return t;
}

// y = x (float32[1, 2]) @ W (float32[2, N], external).
std::string matmul_model(const std::vector<std::pair<std::string, std::string>>& entries,
                         int64_t n = 2) {
  using namespace test::onnx_pb;
  ProtoWriter g;
  g.m(1, node("MatMul", {"x", "W"}, {"y"}, "mm"));
  g.s(2, "ext");
  g.m(5, external_tensor("W", {2, n}, entries));
  g.m(11, value_info("x", 1, {1, 2}));
  g.m(12, value_info("y", 1, {1, n}));
  return model(g);
}

// Four floats 1, 2, 3, 4 (little-endian), as the side file's W.
std::string four_floats() {
  const float v[4] = {1, 2, 3, 4};
  return std::string(reinterpret_cast<const char*>(v), sizeof v);
}

struct Dirs {
  fs::path root, model_dir, model;
};

// root/outside.bin (a file outside the model's directory), root/m/w.bin (W's 16 bytes after 8
// bytes of padding) and root/m/model.onnx with the given external_data entries.
Dirs setup(const std::string& test, const std::vector<std::pair<std::string, std::string>>& e) {
  Dirs d;
  d.root = test::scratch_dir(test);
  d.model_dir = d.root / "m";
  fs::create_directories(d.model_dir);
  write_file(d.root / "outside.bin", four_floats());
  write_file(d.model_dir / "w.bin", std::string(8, '\0') + four_floats());
  d.model = d.model_dir / "model.onnx";
  write_file(d.model, matmul_model(e));
  return d;
}

Status load_error(const fs::path& model, const ImportOptions& o = {}) {
  Result<Graph> g = import_onnx_file(model.string(), ops::Registry::get(), o);
  if (g.is_ok()) return Status::ok();
  return g.status();
}

// The error names the model file, the tensor and each of `words` (the field, the side file).
void check_refused(const Dirs& d, const std::vector<std::string>& words) {
  const Status s = load_error(d.model);
  INFO(s.message());
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.message().find(d.model.string()) != std::string::npos);
  CHECK(s.message().find("initializer[0] 'W'") != std::string::npos);
  for (const std::string& w : words) CHECK(s.message().find(w) != std::string::npos);
}

}  // namespace

TEST_CASE("external data: a PyTorch export converted by onnx loads and matches PyTorch",
          "[onnx][external]") {
  auto g = import_onnx_file(kFixture + "lstm_classifier.onnx", ops::Registry::get());
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto shared = std::make_shared<const Graph>(std::move(*g));
  auto s = engine::Session::create(shared);
  REQUIRE(s.is_ok());
  auto x = read_npy(kFixture + "input.npy");
  auto want = read_npy(kFixture + "expected.npy");
  REQUIRE(x.is_ok());
  REQUIRE(want.is_ok());
  auto out = (*s)->run({{"x", *x}});
  INFO(out.status().message());
  REQUIRE(out.is_ok());
  REQUIRE(out->size() == 1);
  CHECK(test::compare_to_reference((*out)[0].second, *want) == "");
}

TEST_CASE("external data: offsets, lengths, subdirectories and symlinks inside the directory",
          "[onnx][external]") {
  Dirs d = setup("external_ok", {{"location", "w.bin"}, {"offset", "8"}, {"length", "16"}});
  auto check_w = [&](const fs::path& model) {
    auto g = import_onnx_file(model.string(), ops::Registry::get());
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    auto w = g->find_value("W");
    REQUIRE(w);
    const float* p = g->value(*w).data->data_as<float>();
    CHECK((p[0] == 1 && p[1] == 2 && p[2] == 3 && p[3] == 4));
  };
  check_w(d.model);
  // No length: the rest of the file; no offset: 0.
  write_file(d.model_dir / "w0.bin", four_floats());
  write_file(d.model, matmul_model({{"location", "w0.bin"}}));
  check_w(d.model);
  // A subdirectory and a symlink that stays inside the model's directory are fine.
  fs::create_directories(d.model_dir / "data");
  write_file(d.model_dir / "data" / "w.bin", four_floats());
  write_file(d.model, matmul_model({{"location", "data/w.bin"}, {"length", "16"}}));
  check_w(d.model);
  fs::create_symlink("data/w.bin", d.model_dir / "link.bin");
  write_file(d.model, matmul_model({{"location", "link.bin"}}));
  check_w(d.model);
}

TEST_CASE("external data: hostile locations are refused naming file, tensor and field",
          "[onnx][external]") {
  SECTION("path traversal") {
    check_refused(setup("external_dotdot", {{"location", "../outside.bin"}}),
                  {"'location'", "'../outside.bin'", "'..'"});
    check_refused(setup("external_dotdot2", {{"location", "data/../../outside.bin"}}),
                  {"'location'", "'..'"});
  }
  SECTION("absolute path") {
    Dirs d = setup("external_abs", {{"location", "w.bin"}});
    write_file(d.model, matmul_model({{"location", (d.root / "outside.bin").string()}}));
    check_refused(d, {"'location'", "absolute path"});
    write_file(d.model, matmul_model({{"location", "/etc/passwd"}}));
    check_refused(d, {"'location'", "'/etc/passwd'", "absolute path"});
  }
  SECTION("symlink out of the directory") {
    Dirs d = setup("external_symlink", {{"location", "evil.bin"}});
    fs::create_symlink(d.root / "outside.bin", d.model_dir / "evil.bin");
    check_refused(d, {"'location'", "symbolic link", "outside the model's directory"});
    // A symlinked directory leading out is caught the same way.
    fs::create_directory_symlink(d.root, d.model_dir / "up");
    write_file(d.model, matmul_model({{"location", "up/outside.bin"}}));
    check_refused(d, {"'location'", "outside the model's directory"});
  }
  SECTION("missing side file, a directory, no location") {
    check_refused(setup("external_missing", {{"location", "nope.bin"}}),
                  {"'location'", "cannot open", "nope.bin"});
    Dirs d = setup("external_dir", {{"location", "sub"}});
    fs::create_directories(d.model_dir / "sub");
    check_refused(d, {"'location'", "not a regular file"});
    check_refused(setup("external_noloc", {{"offset", "0"}}), {"no 'location'"});
  }
}

TEST_CASE("external data: offsets and lengths are checked against the side file",
          "[onnx][external]") {
  SECTION("length past the end") {
    check_refused(setup("external_len", {{"location", "w.bin"}, {"length", "1000000"}}),
                  {"'length'", "1000000", "runs past the end", "w.bin", "24 bytes"});
  }
  SECTION("offset past the end") {
    check_refused(setup("external_off", {{"location", "w.bin"}, {"offset", "99999"}}),
                  {"'offset'", "99999", "past the end", "w.bin"});
  }
  SECTION("offset + length past the end") {
    check_refused(
        setup("external_offlen", {{"location", "w.bin"}, {"offset", "16"}, {"length", "16"}}),
        {"'length'", "runs past the end"});
  }
  SECTION("length that disagrees with the dims") {
    check_refused(setup("external_size", {{"location", "w.bin"}, {"length", "8"}}),
                  {"'length'", "8 bytes", "need 16"});
    // No length: the rest of the file (24 bytes) is not W's 16.
    check_refused(setup("external_rest", {{"location", "w.bin"}}), {"24 bytes", "need 16"});
  }
  SECTION("malformed numbers") {
    check_refused(setup("external_neg", {{"location", "w.bin"}, {"offset", "-8"}}),
                  {"'offset'", "'-8'", "non-negative decimal"});
    check_refused(setup("external_hex", {{"location", "w.bin"}, {"length", "0x10"}}),
                  {"'length'", "'0x10'"});
    check_refused(
        setup("external_huge", {{"location", "w.bin"}, {"length", "99999999999999999999999"}}),
        {"'length'"});
  }
}

TEST_CASE("external data: the memory budget bounds what is read", "[onnx][external]") {
  // W float32[2, 256]: 2 KiB of external data behind a model file of ~150 bytes.
  const fs::path dir = test::scratch_dir("external_budget");
  write_file(dir / "big.bin", std::string(2048, '\0'));
  const fs::path model = dir / "model.onnx";
  write_file(model, matmul_model({{"location", "big.bin"}}, 256));
  ImportOptions o;
  o.max_memory = 1024;
  const Status s = load_error(model, o);
  INFO(s.message());
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == StatusCode::kOutOfMemory);
  CHECK(s.message().find(model.string()) != std::string::npos);
  CHECK(s.message().find("'W'") != std::string::npos);
  CHECK(s.message().find("2048 bytes") != std::string::npos);
  CHECK(s.message().find("memory limit of 1.0 KiB") != std::string::npos);
  o.max_memory = 4096;
  CHECK(load_error(model, o).is_ok());
}

TEST_CASE("external data: bytes without a directory are refused", "[onnx][external]") {
  const std::string m = matmul_model({{"location", "w.bin"}});
  auto g = import_onnx_bytes(std::span(reinterpret_cast<const std::byte*>(m.data()), m.size()),
                             "mem.onnx", ops::Registry::get());
  REQUIRE_FALSE(g.is_ok());
  CHECK(g.status().code() == StatusCode::kUnsupported);
  CHECK(g.status().message().find("mem.onnx") != std::string::npos);
  CHECK(g.status().message().find("'W'") != std::string::npos);
  CHECK(g.status().message().find("external file ('w.bin')") != std::string::npos);
}
