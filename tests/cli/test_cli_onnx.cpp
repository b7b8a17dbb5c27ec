// `graphi run` and `graphi info` on .onnx models exported from PyTorch (tests/data/onnx):
// outputs written with --output-dir match PyTorch's, --dim sets symbolic dims, errors name the
// file and the flag.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graph/npy.h"
#include "tests/support/proto_writer.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

const std::string kFixtures = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx/";

struct Run {
  int rc = -1;
  std::string out, err;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Run run_cli(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = quoted(test::cli_path());
  for (const std::string& a : args) cmd += " " + quoted(a);
  cmd += " >" + quoted((dir / "out.txt").string()) + " 2>" + quoted((dir / "err.txt").string());
  const int status = std::system(cmd.c_str());
  Run r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(dir / "out.txt");
  r.err = read_text(dir / "err.txt");
  return r;
}

}  // namespace

TEST_CASE("cli onnx: graphi run model.onnx --input matches PyTorch") {
  const fs::path dir = test::scratch_dir("cli_onnx_run");
  Run r = run_cli(dir, {"run", kFixtures + "lstm_2layer_bidir.onnx", "--input",
                        "x=" + kFixtures + "lstm_2layer_bidir.in0.npy", "--iterations", "2",
                        "--output-dir", (dir / "out").string(), "--json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.dump().find("lstm_2layer_bidir.onnx") != std::string::npos);
  const char* names[] = {"y", "h", "c"};
  for (int k = 0; k < 3; ++k) {
    INFO(names[k]);
    Tensor got =
        value_or_throw(graph::read_npy((dir / "out" / (std::string(names[k]) + ".npy")).string()));
    Tensor want = value_or_throw(
        graph::read_npy(kFixtures + "lstm_2layer_bidir.out" + std::to_string(k) + ".npy"));
    CHECK(test::max_rel_error(got, want) <= 1e-4);
  }
}

TEST_CASE("cli onnx: --dim sets symbolic dims for run and info") {
  const fs::path dir = test::scratch_dir("cli_onnx_dim");
  const std::string model = kFixtures + "gru_dynamic_batch.onnx";
  Run r = run_cli(dir, {"run", model});
  CHECK(r.rc == 2);  // a --dim missing from the command line, no file to take it from: usage
  CHECK(r.err.find(model + ": graph input 0 'x': dim 1 is symbolic ('batch')") !=
        std::string::npos);
  CHECK(r.err.find("--dim batch=N") != std::string::npos);

  // Given by --dim, or taken from the --input file's shape (x.npy is [5, 4, 8]: batch 4).
  for (bool flag : {true, false}) {
    std::vector<std::string> cmd = {
        "run",          model, "--input",      "x=" + kFixtures + "gru_dynamic_batch.in0.npy",
        "--iterations", "1",   "--output-dir", (dir / "out").string()};
    if (flag) cmd.insert(cmd.end(), {"--dim", "batch=4"});
    r = run_cli(dir, cmd);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    for (int k = 0; k < 2; ++k) {
      Tensor got =
          value_or_throw(graph::read_npy((dir / "out" / (k == 0 ? "y.npy" : "h.npy")).string()));
      Tensor want = value_or_throw(
          graph::read_npy(kFixtures + "gru_dynamic_batch.out" + std::to_string(k) + ".npy"));
      CHECK(test::max_rel_error(got, want) <= 1e-4);
    }
    fs::remove_all(dir / "out");
  }
  // --dim wins over the file; the file then does not fit the model.
  r = run_cli(dir, {"run", model, "--dim", "batch=3", "--input",
                    "x=" + kFixtures + "gru_dynamic_batch.in0.npy"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("holds float32[5, 4, 8], the model expects float32[5, 3, 8]") !=
        std::string::npos);

  r = run_cli(dir, {"info", kFixtures + "cnn_dynamic_batch.onnx", "--dim", "n=3", "--json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out).dump().find("cnn_dynamic_batch.onnx") != std::string::npos);

  r = run_cli(dir, {"info", model, "--dim", "batch"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--dim expects NAME=VALUE") != std::string::npos);
  r = run_cli(dir, {"info", model, "--dim", "batch=4", "--dim", "other=2"});
  CHECK(r.rc == 2);  // like an unknown --input
  CHECK(r.err.find("--dim other names no symbolic dim of the model's inputs (it has: batch)") !=
        std::string::npos);
}

TEST_CASE("cli onnx: a --dim far beyond memory is one clear error and no crash") {
  const fs::path dir = test::scratch_dir("cli_onnx_huge_dim");
  // 2e9 images of 1x8x8 float32 = 477 GiB: more than this machine has. (Far larger shapes are
  // refused by the importer already.)
  Run r = run_cli(dir, {"run", kFixtures + "cnn_dynamic_batch.onnx", "--dim", "n=2000000000",
                        "--iterations", "1", "--warmup", "0"});
  INFO(r.err);
  CHECK(r.rc == 1);
  CHECK(r.err.find("input 'image'") != std::string::npos);
  // Refused when the graph is validated (a value larger than physical memory), or when the
  // random input is allocated on a machine with more memory than that.
  CHECK((r.err.find("more than this machine's memory") != std::string::npos ||
         r.err.find("cannot allocate") != std::string::npos));
  CHECK(r.err.find("bad_alloc") == std::string::npos);
}

TEST_CASE("cli onnx: --progress shows a long load with a time per stage, short loads stay silent") {
  const fs::path dir = test::scratch_dir("cli_onnx_progress");
  const std::string model = kFixtures + "lstm_2layer_bidir.onnx";
  // Without a terminal and without --progress: nothing about the load on stderr.
  Run r = run_cli(dir, {"info", model});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("graphi: load") == std::string::npos);
  // This load is short: --progress alone stays silent (the threshold is 1 s).
  r = run_cli(dir, {"info", model, "--progress"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("graphi: load") == std::string::npos);
  // With the threshold at 0 every stage is shown, then the breakdown.
  setenv("GRAPHI_PROGRESS_AFTER_MS", "0", 1);
  r = run_cli(dir, {"run", model, "--progress", "--iterations", "1", "--warmup", "0"});
  unsetenv("GRAPHI_PROGRESS_AFTER_MS");
  REQUIRE(r.rc == 0);
  for (const char* stage : {"parse", "import", "validate", "passes", "compile"})
    CHECK(r.err.find(std::string("graphi: loading ") + model + ": " + stage) != std::string::npos);
  CHECK(r.err.find(": import 0/50 nodes") != std::string::npos);
  const size_t done = r.err.find("graphi: loaded " + model + " in ");
  REQUIRE(done != std::string::npos);
  const std::string line = r.err.substr(done, r.err.find('\n', done) - done);
  CHECK_THAT(line, Catch::Matches(".* \\(parse [0-9.]+ s, import [0-9.]+ s, validate [0-9.]+ s, "
                                  "passes [0-9.]+ s, compile [0-9.]+ s\\)"));
}

TEST_CASE("cli onnx: output names that map to one file name get _2, nothing is overwritten") {
  // x -> Relu -> 'a/b', x -> Neg -> 'a:b': both are a_b as file names.
  namespace pb = test::onnx_pb;
  test::ProtoWriter g;
  g.m(1, pb::node("Relu", {"x"}, {"a/b"}, "relu")).m(1, pb::node("Neg", {"x"}, {"a:b"}, "neg"));
  g.s(2, "g").m(11, pb::value_info("x", 1, {3}));
  g.m(12, pb::value_info("a/b", 1, {3})).m(12, pb::value_info("a:b", 1, {3}));
  const fs::path dir = test::scratch_dir("cli_onnx_stems");
  {
    std::ofstream f(dir / "m.onnx", std::ios::binary);
    f << pb::model(g);
  }
  Tensor x(TensorDesc{DType::kF32, {3}});
  const float xv[] = {-1.0f, 2.0f, 0.5f};
  std::memcpy(x.data(), xv, sizeof xv);
  REQUIRE(graph::write_npy((dir / "x.npy").string(), x).is_ok());
  Run r =
      run_cli(dir, {"run", (dir / "m.onnx").string(), "--input", "x=" + (dir / "x.npy").string(),
                    "--iterations", "1", "--output-dir", (dir / "out").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  Tensor relu = value_or_throw(graph::read_npy((dir / "out" / "a_b.npy").string()));
  Tensor neg = value_or_throw(graph::read_npy((dir / "out" / "a_b_2.npy").string()));
  for (int k = 0; k < 3; ++k) {
    CHECK(relu.data_as<float>()[k] == std::max(xv[k], 0.0f));
    CHECK(neg.data_as<float>()[k] == -xv[k]);
  }
}

TEST_CASE("cli onnx: a BOOL input takes a numpy bool file, BOOL outputs are written as bool") {
  // y = Where(mask, x, -x); keep = Not(mask) (a BOOL output). ONNX BOOL is elem type 9.
  namespace pb = test::onnx_pb;
  test::ProtoWriter g;
  g.m(1, pb::node("Neg", {"x"}, {"nx"}, "neg"))
      .m(1, pb::node("Where", {"mask", "x", "nx"}, {"y"}, "where"))
      .m(1, pb::node("Not", {"mask"}, {"keep"}, "not"));
  g.s(2, "g").m(11, pb::value_info("x", 1, {4})).m(11, pb::value_info("mask", 9, {4}));
  g.m(12, pb::value_info("y", 1, {4})).m(12, pb::value_info("keep", 9, {4}));
  const fs::path dir = test::scratch_dir("cli_onnx_bool");
  {
    std::ofstream f(dir / "m.onnx", std::ios::binary);
    f << pb::model(g);
  }
  Tensor x(TensorDesc{DType::kF32, {4}}), mask(TensorDesc{DType::kF32, {4}});
  const float xv[] = {1.5f, -2.0f, 3.0f, -4.0f}, mv[] = {1, 0, 0, 1};
  std::memcpy(x.data(), xv, sizeof xv);
  std::memcpy(mask.data(), mv, sizeof mv);
  REQUIRE(graph::write_npy((dir / "x.npy").string(), x).is_ok());
  REQUIRE(graph::write_npy((dir / "mask.npy").string(), mask, /*as_bool=*/true).is_ok());
  Run r =
      run_cli(dir, {"run", (dir / "m.onnx").string(), "--input", "x=" + (dir / "x.npy").string(),
                    "--input", "mask=" + (dir / "mask.npy").string(), "--iterations", "1",
                    "--output-dir", (dir / "out").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  Tensor y = value_or_throw(graph::read_npy((dir / "out" / "y.npy").string()));
  bool was_bool = false;
  Tensor keep =
      value_or_throw(graph::read_npy((dir / "out" / "keep.npy").string(), true, &was_bool));
  CHECK(was_bool);
  for (int k = 0; k < 4; ++k) {
    CHECK(y.data_as<float>()[k] == (mv[k] != 0 ? xv[k] : -xv[k]));
    CHECK(keep.data_as<float>()[k] == (mv[k] != 0 ? 0.0f : 1.0f));
  }
  // A bool file for a float input names both.
  r = run_cli(dir, {"run", (dir / "m.onnx").string(), "--input", "x=" + (dir / "mask.npy").string(),
                    "--iterations", "1"});
  CHECK(r.rc != 0);
  CHECK_THAT(r.err, Catch::Contains("holds bool[4], the model expects float32[4]"));
  // A generated BOOL input is shown as bool.
  r = run_cli(dir, {"run", (dir / "m.onnx").string(), "--input", "x=" + (dir / "x.npy").string(),
                    "--iterations", "1"});
  CHECK(r.rc == 0);
  CHECK_THAT(r.err, Catch::Contains("input 'mask' not given: using seeded random bool[4]"));
}

TEST_CASE("cli onnx: a FLOAT16 model takes and writes numpy float16, a Cast to FLOAT16 rounds") {
  // y = x * w (x, w, y FLOAT16, elem type 10); r = Cast(Cast(z, to FLOAT16), to FLOAT).
  namespace pb = test::onnx_pb;
  auto to_attr = [](int64_t t) { return pb::int_attr("to", t); };
  test::ProtoWriter w;
  const uint16_t wh[4] = {0x4000, 0x3800, 0xc400, 0x3d00};  // 2, 0.5, -4, 1.25 as binary16
  w.i(1, 4).i(2, 10).s(8, "w").s(9, std::string(reinterpret_cast<const char*>(wh), sizeof wh));
  test::ProtoWriter g;
  g.m(1, pb::node("Mul", {"x", "w"}, {"y"}, "mul"))
      .m(1, pb::node("Cast", {"z"}, {"zh"}, "to_half", {to_attr(10)}))
      .m(1, pb::node("Cast", {"zh"}, {"r"}, "to_float", {to_attr(1)}));
  g.s(2, "g").m(5, w).m(11, pb::value_info("x", 10, {4})).m(11, pb::value_info("z", 1, {4}));
  g.m(12, pb::value_info("y", 10, {4})).m(12, pb::value_info("r", 1, {4}));
  const fs::path dir = test::scratch_dir("cli_onnx_float16");
  {
    std::ofstream f(dir / "m.onnx", std::ios::binary);
    f << pb::model(g);
  }
  Tensor x(TensorDesc{DType::kF32, {4}}), z(TensorDesc{DType::kF32, {4}});
  const float xv[] = {1.5f, -2.25f, 0.125f, 3.0f}, zv[] = {1.0f / 3, 65519.0f, 65520.0f, 1e-8f};
  std::memcpy(x.data(), xv, sizeof xv);
  std::memcpy(z.data(), zv, sizeof zv);
  REQUIRE(graph::write_npy((dir / "x.npy").string(), x, false, /*as_half=*/true).is_ok());
  REQUIRE(graph::write_npy((dir / "z.npy").string(), z).is_ok());
  Run r = run_cli(dir, {"run", (dir / "m.onnx").string(), "--input",
                        "x=" + (dir / "x.npy").string(), "--input", "z=" + (dir / "z.npy").string(),
                        "--iterations", "1", "--output-dir", (dir / "out").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("float16[4]"));
  bool was_bool = false, was_half = false;
  Tensor y = value_or_throw(
      graph::read_npy((dir / "out" / "y.npy").string(), false, &was_bool, &was_half));
  CHECK(was_half);
  const float want_y[] = {3.0f, -1.125f, -0.5f, 3.75f};
  for (int k = 0; k < 4; ++k) CHECK(y.data_as<float>()[k] == want_y[k]);
  Tensor rr = value_or_throw(graph::read_npy((dir / "out" / "r.npy").string()));
  // binary16: 1/3 -> 0x3555 = 0.333251953125; 65519 -> 65504 (the largest); 65520 -> inf (the
  // tie rounds to even, past the largest); 1e-8 is below half the smallest subnormal -> 0.
  CHECK(rr.data_as<float>()[0] == 0.333251953125f);
  CHECK(rr.data_as<float>()[1] == 65504.0f);
  CHECK(std::isinf(rr.data_as<float>()[2]));
  CHECK(rr.data_as<float>()[3] == 0.0f);
  // A float16 file for the FLOAT input names both.
  r = run_cli(dir, {"run", (dir / "m.onnx").string(), "--input", "x=" + (dir / "x.npy").string(),
                    "--input", "z=" + (dir / "x.npy").string(), "--iterations", "1"});
  CHECK(r.rc != 0);
  CHECK_THAT(r.err, Catch::Contains("holds float16[4], the model expects float32[4]"));
}
