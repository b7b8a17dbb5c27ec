// End-to-end tests of the `graphi` executable: model -> run (--json, --input, --output-dir),
// info, a cross-check of LSTM/GRU outputs against numpy (tests/cli/lstm_numpy.py), exit codes
// and error messages.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/session.h"
#include "graph/format.h"
#include "graph/npy.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

struct CliResult {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `graphi <args>` in `dir`'s context, capturing stdout and stderr.
CliResult graphi_cli(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = quote(test::cli_path());
  for (const std::string& a : args) cmd += " " + quote(a);
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  cmd += " >" + quote(out.string()) + " 2>" + quote(err.string());
  int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool have_numpy() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

Tensor read(const fs::path& p) {
  auto t = graph::read_npy(p.string());
  if (!t.is_ok()) FAIL(t.status().to_string());
  return std::move(*t);
}

void write(const fs::path& p, const Tensor& t) { REQUIRE(graph::write_npy(p.string(), t).is_ok()); }

// Every float32 constant of the model file as DIR/<name with '/' -> '_'>.npy.
void export_weights(const fs::path& model, const fs::path& dir) {
  auto g = graph::read_graphi(model.string(), ops::Registry::get());
  REQUIRE(g.is_ok());
  fs::create_directories(dir);
  for (const graph::Value& v : g->values()) {
    if (v.kind != graph::ValueKind::kConstant || v.desc.dtype != DType::kF32) continue;
    std::string name = v.name;
    for (char& c : name)
      if (c == '/') c = '_';
    write(dir / (name + ".npy"), *v.data);
  }
}

// A file with a hand-written header (to test refusals without numpy).
void write_raw_npy(const fs::path& p, const std::string& dict, size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header + std::string(data_bytes, '\0');
  std::ofstream(p, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("graphi model writes a model and run --json reports it", "[cli]") {
  const fs::path dir = test::scratch_dir("cli_json");
  const std::string model = (dir / "lstm.graphi").string();
  auto m = graphi_cli(dir, {"model", "lstm", "--input", "5", "--hidden", "8", "--layers", "2",
                            "--batch", "3", "--seq", "4", "--seed", "7", "-o", model});
  INFO(m.err);
  REQUIRE(m.rc == 0);
  CHECK(contains(m.out, "wrote " + model));
  CHECK(contains(m.out, "992 parameters"));  // (5+8+1)*32 + (8+8+1)*32

  auto r =
      graphi_cli(dir, {"run", model, "--json", "--iterations", "3", "--warmup", "1", "--no-plan"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);  // exactly one JSON object on stdout
  REQUIRE(j.is_object());
  CHECK(j["model"] == model);
  CHECK(j["config"]["executors"] == 1);
  CHECK(j["config"]["threads"] == 1);
  CHECK(j["config"]["scheduler"] == "sequential");
  CHECK(j["iterations"] == 3);
  const auto& lat = j["latency_ms"];
  CHECK(lat["min"].get<double>() >= 0);
  CHECK(lat["min"].get<double>() <= lat["median"].get<double>());
  CHECK(lat["median"].get<double>() <= lat["p90"].get<double>());
  CHECK(j["outputs"]["y"]["shape"] == std::vector<int>{4, 3, 8});
  CHECK(j["outputs"]["y"]["dtype"] == "float32");
  CHECK(j["outputs"]["h_n"]["shape"] == std::vector<int>{2, 3, 8});
  CHECK(j["outputs"]["c_n"]["shape"] == std::vector<int>{2, 3, 8});
  CHECK(j["inputs_generated"] == std::vector<std::string>{"x", "h0", "c0"});
  CHECK(contains(r.err, "input 'x' not given"));

  auto threads = graphi_cli(dir, {"run", model, "--json", "--iterations", "1", "--threads", "2"});
  REQUIRE(threads.rc == 0);
  CHECK(nlohmann::json::parse(threads.out)["config"]["threads"] == 2);

  auto text = graphi_cli(dir, {"run", model, "--iterations", "2"});
  REQUIRE(text.rc == 0);
  CHECK(contains(text.out, "float32[4, 3, 8]"));
  CHECK(contains(text.out, "median"));
  CHECK(contains(text.out, "generated"));
}

TEST_CASE("graphi run feeds .npy inputs and writes outputs that match the engine", "[cli]") {
  const fs::path dir = test::scratch_dir("cli_io");
  const fs::path model = dir / "gru.graphi";
  REQUIRE(graphi_cli(dir, {"model", "gru", "--input", "6", "--hidden", "5", "--layers", "2",
                           "--batch", "2", "--seq", "3", "-o", model.string()})
              .rc == 0);
  Tensor x = test::random_tensor({DType::kF32, {3, 2, 6}}, 1);
  Tensor h0 = test::random_tensor({DType::kF32, {2, 2, 5}}, 2);
  write(dir / "x.npy", x);
  write(dir / "h0.npy", h0);
  auto r = graphi_cli(dir, {"run", model.string(), "--input", "x=" + (dir / "x.npy").string(),
                            "--input", "h0=" + (dir / "h0.npy").string(), "--output-dir",
                            (dir / "out").string(), "--json", "--iterations", "2"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["inputs_generated"].empty());
  CHECK_FALSE(contains(r.err, "not given"));

  // --no-fuse runs the stored graph: the CLI's I/O must not change any bit of its outputs.
  auto nf = graphi_cli(dir, {"run", model.string(), "--input", "x=" + (dir / "x.npy").string(),
                             "--input", "h0=" + (dir / "h0.npy").string(), "--output-dir",
                             (dir / "nofuse").string(), "--iterations", "1", "--no-fuse"});
  INFO(nf.err);
  REQUIRE(nf.rc == 0);

  // The same inputs through an in-process Session of the stored (unfused) graph.
  auto g = graph::read_graphi(model.string(), ops::Registry::get());
  REQUIRE(g.is_ok());
  auto session = engine::Session::create(std::make_shared<const graph::Graph>(std::move(*g)));
  REQUIRE(session.is_ok());
  auto outs = (*session)->run({{"x", x}, {"h0", h0}});
  REQUIRE(outs.is_ok());
  for (const auto& [name, t] : *outs) {
    INFO(name);
    CHECK(test::max_rel_error(read(dir / "nofuse" / (name + ".npy")), t) == 0);
    // By default the GRU cells run as fused GRU sequence ops: same values up to rounding.
    CHECK(test::max_rel_error(read(dir / "out" / (name + ".npy")), t) < 1e-5);
  }
  CHECK(contains(r.err, "6 GRU cells into 2 GRU sequence ops"));

  // The parallel engine through the CLI gives the same outputs as the reference executor.
  auto par = graphi_cli(
      dir, {"run", model.string(), "--input", "x=" + (dir / "x.npy").string(), "--input",
            "h0=" + (dir / "h0.npy").string(), "--output-dir", (dir / "par").string(),
            "--executors", "2", "--scheduler", "cpf", "--no-pin", "--json", "--iterations", "2"});
  INFO(par.err);
  REQUIRE(par.rc == 0);
  auto pj = nlohmann::json::parse(par.out);
  CHECK(pj["config"]["executors"] == 2);
  CHECK(pj["config"]["scheduler"] == "cpf");
  for (const auto& [name, t] : *outs) {
    INFO(name);
    CHECK(test::max_rel_error(read(dir / "par" / (name + ".npy")), t) < 1e-5);
  }
}

TEST_CASE("graphi run of LSTM and GRU models matches numpy", "[cli][numpy]") {
  if (!have_numpy()) {
    WARN("skipped: /usr/bin/python3 with numpy is not available");
    return;
  }
  const std::string script = std::string(GRAPHI_SOURCE_DIR) + "/tests/cli/lstm_numpy.py";
  struct Case {
    std::string cell;
    bool lbr;
    int E, H, L, B, T;
  };
  const Case cases[] = {{"lstm", false, 5, 8, 2, 3, 4},
                        {"lstm", false, 16, 12, 1, 1, 6},
                        {"gru", false, 7, 6, 2, 3, 5},
                        {"gru", true, 4, 9, 2, 2, 3}};
  int k = 0;
  for (const Case& c : cases) {
    INFO(c.cell << (c.lbr ? " linear_before_reset" : "") << " E=" << c.E << " H=" << c.H
                << " L=" << c.L << " B=" << c.B << " T=" << c.T);
    const fs::path dir = test::scratch_dir("cli_numpy_" + std::to_string(k++));
    const fs::path model = dir / "m.graphi";
    std::vector<std::string> margs = {"model",    c.cell,
                                      "--input",  std::to_string(c.E),
                                      "--hidden", std::to_string(c.H),
                                      "--layers", std::to_string(c.L),
                                      "--batch",  std::to_string(c.B),
                                      "--seq",    std::to_string(c.T),
                                      "--seed",   "3",
                                      "-o",       model.string()};
    if (c.lbr) margs.push_back("--linear-before-reset");
    REQUIRE(graphi_cli(dir, margs).rc == 0);
    export_weights(model, dir / "weights");

    std::vector<std::string> names = {"x", "h0"};
    if (c.cell == "lstm") names.push_back("c0");
    std::vector<std::string> run_args = {
        "run", model.string(), "--output-dir", (dir / "graphi").string(), "--iterations", "1"};
    std::string py = "/usr/bin/python3 " + quote(script) + " " + c.cell + " --weights " +
                     quote((dir / "weights").string()) + " --out " +
                     quote((dir / "numpy").string());
    if (c.lbr) py += " --linear-before-reset";
    uint64_t seed = 40;
    for (const std::string& n : names) {
      Shape s = n == "x" ? Shape{c.T, c.B, c.E} : Shape{c.L, c.B, c.H};
      const fs::path p = dir / (n + ".npy");
      write(p, test::random_tensor({DType::kF32, s}, seed++));
      run_args.push_back("--input");
      run_args.push_back(n + "=" + p.string());
      py += " --" + n + " " + quote(p.string());
    }
    auto r = graphi_cli(dir, run_args);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    REQUIRE(std::system(py.c_str()) == 0);
    std::vector<std::string> outs = {"y", "h_n"};
    if (c.cell == "lstm") outs.push_back("c_n");
    for (const std::string& o : outs) {
      INFO("output " << o);
      CHECK(test::max_rel_error(read(dir / "graphi" / (o + ".npy")),
                                read(dir / "numpy" / (o + ".npy"))) < 1e-5);
    }
  }
}

TEST_CASE("graphi info reports ops, FLOPs, depth levels and memory", "[cli]") {
  const fs::path dir = test::scratch_dir("cli_info");
  const std::string model = (dir / "lstm.graphi").string();
  REQUIRE(graphi_cli(dir, {"model", "lstm", "--input", "5", "--hidden", "8", "--layers", "2",
                           "--batch", "3", "--seq", "4", "-o", model})
              .rc == 0);
  auto r = graphi_cli(dir, {"info", model, "--json", "--no-fuse"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["op_counts"]["MatMul"] == 2 * 2 * 4);  // x W and h R per layer and step
  CHECK(j["op_counts"]["Sigmoid"] == 3 * 2 * 4);
  CHECK(j["parameters"].get<int64_t>() == 992);  // (5+8+1)*32 + (8+8+1)*32 weights and biases
  // MatMul FLOPs alone: per step 2*B*E_l*4H + 2*B*H*4H.
  CHECK(j["flops"].get<double>() >=
        4 * (2 * 3 * 5 * 32 + 2 * 3 * 8 * 32) + 4 * (2 * 3 * 8 * 32 * 2));
  size_t sum = 0;
  for (auto& n : j["ops_per_depth"]) sum += n.get<size_t>();
  CHECK(sum == j["nodes"].get<size_t>());
  // The recurrence chains 4 steps of at least 5 ops (MatMul, Add, Split, Sigmoid, Mul, ...).
  CHECK(j["critical_path"]["ops"].get<size_t>() >= 4 * 5);
  CHECK(j["memory"]["peak_bytes"].get<size_t>() <= j["memory"]["total_bytes"].get<size_t>());
  CHECK(j.contains("kernels_by_op"));

  auto text = graphi_cli(dir, {"info", model, "--no-fuse"});
  REQUIRE(text.rc == 0);
  CHECK(contains(text.out, "MatMul"));
  CHECK(contains(text.out, "critical path"));

  // By default the unrolled cells are fused: one LSTM op per layer, with its kernel named.
  auto fused = graphi_cli(dir, {"info", model, "--json"});
  INFO(fused.err);
  REQUIRE(fused.rc == 0);
  CHECK(contains(fused.err, "fused 8 LSTM cells into 2 LSTM sequence ops"));
  nlohmann::json fj = nlohmann::json::parse(fused.out);
  CHECK(fj["op_counts"]["LSTM"] == 2);
  CHECK_FALSE(fj["op_counts"].contains("Sigmoid"));
  REQUIRE(fj["kernels_by_op"].contains("LSTM"));
  CHECK(fj["kernels_by_op"]["LSTM"].size() == 1);
  auto ftext = graphi_cli(dir, {"info", model});
  REQUIRE(ftext.rc == 0);
  CHECK(contains(ftext.out, "LSTM"));
}

TEST_CASE("graphi run fuses LSTM cells by default and --no-fuse runs the graph as stored",
          "[cli]") {
  const fs::path dir = test::scratch_dir("cli_fuse");
  const fs::path model = dir / "lstm.graphi";
  REQUIRE(graphi_cli(dir, {"model", "lstm", "--input", "6", "--hidden", "5", "--layers", "2",
                           "--batch", "2", "--seq", "3", "-o", model.string()})
              .rc == 0);
  engine::NamedTensors in = {{"x", test::random_tensor({DType::kF32, {3, 2, 6}}, 1)},
                             {"h0", test::random_tensor({DType::kF32, {2, 2, 5}}, 2)},
                             {"c0", test::random_tensor({DType::kF32, {2, 2, 5}}, 3)}};
  std::vector<std::string> feed;
  for (const auto& [name, t] : in) {
    write(dir / (name + ".npy"), t);
    feed.push_back("--input");
    feed.push_back(name + "=" + (dir / (name + ".npy")).string());
  }
  auto run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> a = {
        "run", model.string(), "--output-dir", (dir / out).string(), "--iterations", "2"};
    a.insert(a.end(), feed.begin(), feed.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return graphi_cli(dir, a);
  };
  auto fused = run("fused", {});
  INFO(fused.err);
  REQUIRE(fused.rc == 0);
  CHECK(contains(fused.err, "fused 6 LSTM cells into 2 LSTM sequence ops"));
  auto plain = run("plain", {"--no-fuse"});
  INFO(plain.err);
  REQUIRE(plain.rc == 0);
  CHECK_FALSE(contains(plain.err, "fused"));

  // Reference: the stored (unfused) graph through an in-process Session.
  auto g = graph::read_graphi(model.string(), ops::Registry::get());
  REQUIRE(g.is_ok());
  auto session = engine::Session::create(std::make_shared<const graph::Graph>(std::move(*g)));
  REQUIRE(session.is_ok());
  auto outs = (*session)->run(in);
  REQUIRE(outs.is_ok());
  REQUIRE(outs->size() == 3);
  for (const auto& [name, t] : *outs) {
    INFO(name);
    CHECK(test::max_rel_error(read(dir / "plain" / (name + ".npy")), t) == 0);
    CHECK(test::max_rel_error(read(dir / "fused" / (name + ".npy")), t) < 1e-5);
  }
}

// `env -u ... VAR=value graphi topo`: the OpenMP spin-wait line, the environment as given.
std::string topo_spin_line(const fs::path& dir, const std::string& env) {
  const fs::path out = dir / "topo.txt";
  const std::string cmd = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u GRAPHI_OMP_SPIN " + env +
                          " " + quote(test::cli_path()) + " topo >" + quote(out.string()) +
                          " 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) return "(graphi topo failed)";
  std::istringstream in(slurp(out));
  for (std::string line; std::getline(in, line);)
    if (contains(line, "OpenMP spin-wait:")) return line;
  return "(no spin-wait line)";
}

TEST_CASE("graphi gives libgomp a short spin-wait unless the user chose one", "[cli]") {
  // cli/omp_spin_default.h: the CLI re-executes itself with GOMP_SPINCOUNT=10000 (libgomp reads
  // it before main); the user's OMP_WAIT_POLICY / GOMP_SPINCOUNT and GRAPHI_OMP_SPIN=libgomp win.
  const fs::path dir = test::scratch_dir("cli_omp_spin");
  CHECK(contains(topo_spin_line(dir, ""), "GOMP_SPINCOUNT=10000 (graphi's default"));
  CHECK(contains(topo_spin_line(dir, "GOMP_SPINCOUNT=5000"),
                 "from the environment: GOMP_SPINCOUNT=5000"));
  CHECK(contains(topo_spin_line(dir, "OMP_WAIT_POLICY=active"),
                 "from the environment: OMP_WAIT_POLICY=active"));
  CHECK(contains(topo_spin_line(dir, "GRAPHI_OMP_SPIN=libgomp"),
                 "libgomp's default (GRAPHI_OMP_SPIN=libgomp)"));
}

TEST_CASE("graphi exit codes: usage errors are 2, runtime errors 1, --help 0", "[cli]") {
  const fs::path dir = test::scratch_dir("cli_exit");
  const std::string model = (dir / "m.graphi").string();
  REQUIRE(
      graphi_cli(dir, {"model", "lstm", "--input", "3", "--hidden", "4", "--seq", "2", "-o", model})
          .rc == 0);

  for (const char* sub : {"run", "info", "model"}) {
    auto h = graphi_cli(dir, {sub, "--help"});
    CHECK(h.rc == 0);
    CHECK(contains(h.out, std::string("usage: graphi ") + sub));
  }
  CHECK(graphi_cli(dir, {"--help"}).rc == 0);
  CHECK(graphi_cli(dir, {}).rc == 2);

  auto unknown_cmd = graphi_cli(dir, {"frobnicate"});
  CHECK(unknown_cmd.rc == 2);
  CHECK(contains(unknown_cmd.err, "frobnicate"));
  auto unknown_opt = graphi_cli(dir, {"run", model, "--bogus"});
  CHECK(unknown_opt.rc == 2);
  CHECK(contains(unknown_opt.err, "--bogus"));
  CHECK(graphi_cli(dir, {"run", model, "--iterations", "0"}).rc == 2);
  CHECK(graphi_cli(dir, {"run", model, "--scheduler", "magic"}).rc == 2);
  CHECK(graphi_cli(dir, {"run", model, "--input", "x"}).rc == 2);
  CHECK(
      graphi_cli(dir, {"model", "rnn", "--input", "3", "--hidden", "4", "--seq", "2", "-o", model})
          .rc == 2);
  CHECK(
      graphi_cli(dir, {"model", "lstm", "--input", "3", "--hidden", "0", "--seq", "2", "-o", model})
          .rc == 2);
  CHECK(graphi_cli(dir, {"model", "lstm", "--input", "3", "--hidden", "4", "--seq", "2"}).rc == 2);

  auto bad_name = graphi_cli(dir, {"run", model, "--input", "nope=" + (dir / "a.npy").string()});
  CHECK(bad_name.rc == 2);
  CHECK(contains(bad_name.err, "'nope' is not an input"));
  CHECK(contains(bad_name.err, "h0 float32[1, 1, 4]"));  // names the valid inputs

  const std::string missing = (dir / "does_not_exist.graphi").string();
  for (const char* sub : {"run", "info"}) {
    auto r = graphi_cli(dir, {sub, missing});
    CHECK(r.rc == 1);
    CHECK(contains(r.err, missing));
  }
  std::ofstream(dir / "garbage.graphi") << "this is not a model";
  CHECK(graphi_cli(dir, {"run", (dir / "garbage.graphi").string()}).rc == 1);

  const fs::path fortran = dir / "fortran.npy";
  write_raw_npy(fortran, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1, 3), }", 24);
  auto f = graphi_cli(dir, {"run", model, "--input", "x=" + fortran.string()});
  CHECK(f.rc == 1);
  CHECK(contains(f.err, fortran.string()));
  CHECK(contains(f.err, "Fortran"));

  const fs::path f64 = dir / "f64.npy";
  write_raw_npy(f64, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1, 3), }", 48);
  auto d = graphi_cli(dir, {"run", model, "--input", "x=" + f64.string()});
  CHECK(d.rc == 1);
  CHECK(contains(d.err, "float64"));

  const fs::path i32 = dir / "i32.npy";
  write(i32, Tensor({DType::kI32, {2, 1, 3}}));
  auto wrong_dtype = graphi_cli(dir, {"run", model, "--input", "x=" + i32.string()});
  CHECK(wrong_dtype.rc == 1);
  CHECK(contains(wrong_dtype.err, "int32[2, 1, 3]"));
  CHECK(contains(wrong_dtype.err, "float32[2, 1, 3]"));

  const fs::path shape = dir / "shape.npy";
  write(shape, Tensor({DType::kF32, {2, 3}}));
  auto wrong_shape = graphi_cli(dir, {"run", model, "--input", "x=" + shape.string()});
  CHECK(wrong_shape.rc == 1);
  CHECK(contains(wrong_shape.err, "input 'x'"));
  CHECK(contains(wrong_shape.err, "float32[2, 3]"));
  CHECK(contains(wrong_shape.err, "float32[2, 1, 3]"));

  auto missing_npy =
      graphi_cli(dir, {"run", model, "--input", "x=" + (dir / "nothere.npy").string()});
  CHECK(missing_npy.rc == 1);
  CHECK(contains(missing_npy.err, "nothere.npy"));
}

TEST_CASE("graphi run --trace writes a Chrome trace of the last iteration", "[cli][trace]") {
  const fs::path dir = test::scratch_dir("cli_trace");
  const std::string model = (dir / "lstm.graphi").string();
  REQUIRE(graphi_cli(dir, {"model", "lstm", "--input", "4", "--hidden", "8", "--layers", "2",
                           "--batch", "1", "--seq", "3", "-o", model})
              .rc == 0);
  for (const std::vector<std::string>& config :
       {std::vector<std::string>{"--no-plan"},
        std::vector<std::string>{"--executors", "2", "--threads", "1", "--scheduler", "cpf",
                                 "--no-fuse"}}) {
    const bool seq = config.size() == 1;  // --no-plan: the sequential reference executor
    const fs::path trace = dir / (seq ? "seq.json" : "cpf.json");
    std::vector<std::string> a = {"run",    model,     "--iterations", "3",
                                  "--json", "--trace", trace.string()};
    a.insert(a.end(), config.begin(), config.end());
    auto r = graphi_cli(dir, a);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(contains(r.err, "wrote the trace of the last iteration"));
    CHECK(contains(r.err, trace.string()));
    nlohmann::json out = nlohmann::json::parse(r.out);
    CHECK(out["trace_file"] == trace.string());
    nlohmann::json doc = nlohmann::json::parse(slurp(trace));
    // One op event per node of the graph that ran (graphi info counts them independently).
    std::vector<std::string> info_args = {"info", model, "--json"};
    if (!seq) info_args.push_back("--no-fuse");
    auto info = graphi_cli(dir, info_args);
    REQUIRE(info.rc == 0);
    size_t ops = 0, executor_tracks = 0;
    for (const auto& ev : doc["traceEvents"]) {
      ops += ev["ph"] == "X" && ev["cat"] == "op";
      executor_tracks += ev["ph"] == "M" && ev["name"] == "thread_name" &&
                         ev["args"]["name"].get<std::string>().rfind("executor ", 0) == 0;
    }
    CHECK(executor_tracks == (seq ? 1u : 2u));
    CHECK(ops == nlohmann::json::parse(info.out)["nodes"].get<size_t>());
    CHECK(doc["otherData"]["scheduler"] == (seq ? "sequential" : "cpf"));
  }
  // An unwritable trace path is a runtime error naming the file.
  auto bad = graphi_cli(
      dir, {"run", model, "--iterations", "1", "--trace", (dir / "missing/t.json").string()});
  CHECK(bad.rc == 1);
  CHECK(contains(bad.err, "missing/t.json"));
}
