// `graphi profile` and the plan cache end to end: the JSON report parses and has its fields, a
// second `graphi run` reuses the cached plan (and says so) without calibrating, one changed
// weight or another topology invalidates it, a corrupt cache file is ignored with a warning
// naming it, --plan FILE and --no-plan. Every command uses its own GRAPHI_CACHE_DIR.

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

// `env... graphi <args>` with GRAPHI_CACHE_DIR=dir/cache.
test::CliRun graphi_cli(const fs::path& dir, const std::vector<std::string>& args,
                        const std::string& env = "") {
  return test::run_graphi(
      dir, args, "GRAPHI_CACHE_DIR=" + test::shell_quoted((dir / "cache").string()) + " " + env);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Two independent MatMul -> Relu branches joined by an Add; w[0] = w0.
void write_model(const fs::path& path, float w0) {
  graph::GraphBuilder b("<profile test>");
  const int64_t n = 32;
  b.add_input("x", TensorDesc{DType::kF32, {4, n}});
  for (const char* name : {"wa", "wb"}) {
    auto w = std::make_shared<Tensor>(TensorDesc{DType::kF32, {n, n}});
    for (int64_t i = 0; i < n * n; ++i) w->data_as<float>()[i] = 0.01f * static_cast<float>(i % 7);
    if (std::string(name) == "wa") w->data_as<float>()[0] = w0;
    b.add_constant(name, w);
  }
  b.add_node("MatMul", "ma", {"x", "wa"}, {"ya"});
  b.add_node("Relu", "ra", {"ya"}, {"za"});
  b.add_node("MatMul", "mb", {"x", "wb"}, {"yb"});
  b.add_node("Relu", "rb", {"yb"}, {"zb"});
  b.add_node("Add", "sum", {"za", "zb"}, {"out"});
  b.add_output("out");
  auto g = b.finish(ops::Registry::get());
  REQUIRE(g.is_ok());
  REQUIRE(graph::write_graphi(*g, path.string()).is_ok());
}

std::string cached_file_in(const std::string& err) {
  const std::string tag = "plan from cache ";
  const size_t at = err.find(tag);
  if (at == std::string::npos) return "";
  const size_t end = err.find(": ", at + tag.size());
  return err.substr(at + tag.size(), end - at - tag.size());
}

}  // namespace

TEST_CASE("graphi profile --json has the configs and the choice and the time it took",
          "[cli][profiler]") {
  const fs::path dir = test::scratch_dir("cli_profile_json");
  const fs::path model = dir / "two_branches.graphi";
  write_model(model, 0.5f);
  auto r = graphi_cli(dir, {"profile", model.string(), "--json", "--runs", "3", "--warmup", "1",
                            "--plan-out", (dir / "saved.plan.json").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["configs"].is_array());
  REQUIRE(j["configs"].size() >= 1);
  bool chosen_listed = false;
  for (const auto& c : j["configs"]) {
    CHECK(c["executors"].get<int>() >= 1);
    CHECK(c["threads"].get<int>() >= 1);
    REQUIRE(c["calibrated"].get<bool>());  // no --top-k: every config
    CHECK(c["makespan_ms"].get<double>() > 0);
    chosen_listed = chosen_listed || (c["executors"] == j["chosen"]["executors"] &&
                                      c["threads"] == j["chosen"]["threads"] &&
                                      c["scheduler"] == j["chosen"]["scheduler"]);
  }
  CHECK(chosen_listed);
  // Every split of several executors is tried with both schedulers (the default
  // --schedulers), a single executor once.
  std::map<std::pair<int, int>, std::set<std::string>> schedulers;
  for (const auto& c : j["configs"])
    schedulers[{c["executors"].get<int>(), c["threads"].get<int>()}].insert(
        c["scheduler"].get<std::string>());
  for (const auto& [split, names] : schedulers) {
    INFO(split.first << "x" << split.second);
    CHECK(names == (split.first > 1 ? std::set<std::string>{"cpf", "shared-queue"}
                                    : std::set<std::string>{"sequential"}));
  }
  // The chosen config is the fastest calibrated one (that did not stop early).
  for (const auto& c : j["configs"])
    if (!c["stopped_early"].get<bool>())
      CHECK(c["makespan_ms"].get<double>() >= j["chosen"]["makespan_ms"].get<double>());
  CHECK(j["profiling_s"].get<double>() > 0);
  CHECK(j["plan_cache"].get<std::string>().rfind((dir / "cache").string(), 0) == 0);
  CHECK(contains(r.err, "graphi profile: config 1 of "));  // progress, not --quiet
  CHECK(fs::exists(dir / "saved.plan.json"));

  auto quiet = graphi_cli(dir, {"profile", model.string(), "--json", "--runs", "2", "--warmup", "0",
                                "--quiet", "--top-k", "1", "--no-cache"});
  INFO(quiet.err);
  REQUIRE(quiet.rc == 0);
  CHECK_FALSE(contains(quiet.err, "graphi profile:"));
  int calibrated = 0;
  const nlohmann::json qj = nlohmann::json::parse(quiet.out);
  for (const auto& c : qj["configs"]) calibrated += c["calibrated"].get<bool>() ? 1 : 0;
  CHECK(calibrated == 1);  // --top-k 1

  auto cpf_only = graphi_cli(dir, {"profile", model.string(), "--json", "--runs", "1", "--warmup",
                                   "0", "--quiet", "--no-cache", "--schedulers", "cpf"});
  INFO(cpf_only.err);
  REQUIRE(cpf_only.rc == 0);
  const nlohmann::json cj = nlohmann::json::parse(cpf_only.out);
  for (const auto& c : cj["configs"])
    CHECK(c["scheduler"] == (c["executors"].get<int>() > 1 ? "cpf" : "sequential"));
  auto bad = graphi_cli(dir, {"profile", model.string(), "--schedulers", "cpf,sequential"});
  CHECK(bad.rc == 2);
  CHECK(contains(bad.err, "--schedulers: 'sequential' is not a scheduler of several executors"));
}

TEST_CASE(
    "graphi run reuses the cached plan and one weight or the topology or corruption invalidates it",
    "[cli][profiler]") {
  const fs::path dir = test::scratch_dir("cli_profile_cache");
  const fs::path model = dir / "m.graphi", changed = dir / "m_changed.graphi";
  write_model(model, 0.5f);
  write_model(changed, 0.75f);  // one weight differs

  auto before = graphi_cli(dir, {"run", model.string(), "--iterations", "1"});
  INFO(before.err);
  REQUIRE(before.rc == 0);
  CHECK(contains(before.err, "graphi: plan auto: "));  // nothing cached yet: the quick choice

  auto prof = graphi_cli(
      dir, {"profile", model.string(), "--json", "--quiet", "--runs", "2", "--warmup", "0"});
  INFO(prof.err);
  REQUIRE(prof.rc == 0);
  const nlohmann::json pj = nlohmann::json::parse(prof.out);
  const std::string file = pj["plan_cache"];
  REQUIRE(fs::exists(file));

  auto again = graphi_cli(dir, {"run", model.string(), "--iterations", "1", "--json"});
  INFO(again.err);
  REQUIRE(again.rc == 0);
  CHECK(cached_file_in(again.err) == file);
  CHECK_FALSE(contains(again.err, "graphi profile"));  // no calibration
  const nlohmann::json rj = nlohmann::json::parse(again.out);
  CHECK(rj["config"]["plan"] == "cache");
  CHECK(rj["config"]["executors"] == pj["chosen"]["executors"]);
  CHECK(rj["config"]["threads"] == pj["chosen"]["threads"]);
  CHECK(rj["config"]["scheduler"] == pj["chosen"]["scheduler"]);

  // One weight changed: another graph, no plan.
  auto other = graphi_cli(dir, {"run", changed.string(), "--iterations", "1"});
  REQUIRE(other.rc == 0);
  CHECK_FALSE(contains(other.err, "plan from cache"));
  CHECK(contains(other.err, "graphi: plan auto: "));
  // Another topology signature (hwloc loads a synthetic machine): no plan.
  auto moved = graphi_cli(dir, {"run", model.string(), "--iterations", "1", "--no-pin"},
                          "HWLOC_SYNTHETIC='package:1 core:4 pu:1'");
  INFO(moved.err);
  REQUIRE(moved.rc == 0);
  CHECK_FALSE(contains(moved.err, "plan from cache"));

  // --plan FILE (the same plan, saved elsewhere) and --no-plan.
  fs::copy_file(file, dir / "copy.plan.json");
  auto from_file = graphi_cli(dir, {"run", model.string(), "--iterations", "1", "--plan",
                                    (dir / "copy.plan.json").string()});
  INFO(from_file.err);
  REQUIRE(from_file.rc == 0);
  CHECK(contains(from_file.err, "plan from " + (dir / "copy.plan.json").string()));
  auto wrong_file = graphi_cli(dir, {"run", changed.string(), "--iterations", "1", "--plan",
                                     (dir / "copy.plan.json").string()});
  CHECK(wrong_file.rc == 1);
  CHECK(contains(wrong_file.err, "graph hash"));
  auto none = graphi_cli(dir, {"run", model.string(), "--iterations", "1", "--no-plan", "--json"});
  REQUIRE(none.rc == 0);
  CHECK(nlohmann::json::parse(none.out)["config"]["executors"] == 1);
  CHECK(nlohmann::json::parse(none.out)["config"]["threads"] == 1);
  CHECK(nlohmann::json::parse(none.out)["config"]["scheduler"] == "sequential");
  CHECK_FALSE(contains(none.err, "graphi: plan"));

  // Corrupt cache file: a warning naming it, then the quick choice.
  std::ofstream(file, std::ios::trunc) << "{\"format\": \"graphi-pl";
  auto corrupt = graphi_cli(dir, {"run", model.string(), "--iterations", "1"});
  INFO(corrupt.err);
  REQUIRE(corrupt.rc == 0);
  CHECK(contains(corrupt.err, "warning: plan cache " + file));
  CHECK(contains(corrupt.err, "graphi: plan auto: "));
}

// Index inputs: seeded random values (0..9) fall out of range of a 4-wide axis, so profiling
// needs the real ones from --input (as `graphi run` takes them); the failure without them says
// so, and names the file once.
TEST_CASE("graphi profile --input feeds index inputs, and without it the error says why",
          "[cli][profile]") {
  const fs::path dir = test::scratch_dir("profile_input");
  const fs::path model = dir / "gather.graphi";
  graph::GraphBuilder b("<profile input test>");
  b.add_input("x", TensorDesc{DType::kF32, {4, 4}});
  b.add_input("idx", TensorDesc{DType::kI64, {4, 6}});
  graph::Attributes a;
  a.set("axis", int64_t{1});
  b.add_node("GatherElements", "ge", {"x", "idx"}, {"y"}, a);
  b.add_output("y");
  auto g = b.finish(ops::Registry::get());
  REQUIRE(g.is_ok());
  REQUIRE(graph::write_graphi(*g, model.string()).is_ok());
  Tensor idx(TensorDesc{DType::kI64, {4, 6}});
  for (int64_t i = 0; i < 24; ++i) idx.data_as<int64_t>()[i] = (i * 7) % 4;
  const fs::path idx_file = dir / "idx.npy";
  REQUIRE(graph::write_npy(idx_file.string(), idx).is_ok());

  const std::vector<std::string> quick = {"--runs",     "1", "--warmup", "0",
                                          "--budget-s", "5", "--quiet",  "--no-cache"};
  std::vector<std::string> args = {"profile", model.string()};
  args.insert(args.end(), quick.begin(), quick.end());
  auto bad = graphi_cli(dir, args);
  INFO(bad.err);
  CHECK(bad.rc == 1);
  CHECK(contains(bad.err, "index"));
  CHECK(contains(bad.err, "held seeded random values; give real ones with --input"));
  const size_t first = bad.err.find(model.string());
  CHECK(bad.err.find(model.string(), first + 1) == std::string::npos);  // the path once

  args.push_back("--input");
  args.push_back("idx=" + idx_file.string());
  auto ok = graphi_cli(dir, args);
  INFO(ok.err);
  CHECK(ok.rc == 0);

  auto unknown = graphi_cli(dir, {"profile", model.string(), "--input", "z=" + idx_file.string()});
  CHECK(unknown.rc == 2);
  CHECK(contains(unknown.err, "'z' is not an input of"));
  auto wrong = graphi_cli(dir, {"profile", model.string(), "--input", "x=" + idx_file.string()});
  CHECK(wrong.rc == 1);
  CHECK(contains(wrong.err, "the model expects float32[4, 4]"));
}
