// The plan cache: the content hash sees one changed weight, attribute or shape; the key
// includes the topology; stale and corrupt files are never used; plan files round-trip and
// malformed ones are refused naming the field.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "profiler/plan_cache.h"
#include "profiler/plan_choice.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

graph::Graph small_mlp(float w0, int64_t n = 8) {
  graph::GraphBuilder b("<mlp>");
  b.add_input("x", TensorDesc{DType::kF32, {2, n}});
  auto w = std::make_shared<Tensor>(TensorDesc{DType::kF32, {n, n}});
  for (int64_t i = 0; i < n * n; ++i) w->data_as<float>()[i] = 0.5f;
  w->data_as<float>()[0] = w0;
  b.add_constant("w", w);
  b.add_node("MatMul", "mm", {"x", "w"}, {"y"});
  b.add_node("Relu", "act", {"y"}, {"z"});
  b.add_output("z");
  auto g = b.finish(ops::Registry::get());
  REQUIRE(g.is_ok());
  return std::move(g).value();
}

// GRAPHI_CACHE_DIR for the test's duration.
struct CacheDir {
  fs::path dir;
  explicit CacheDir(const std::string& name) : dir(test::scratch_dir(name)) {
    setenv("GRAPHI_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDir() { unsetenv("GRAPHI_CACHE_DIR"); }
};

profiler::SavedPlan plan_for(const graph::Graph& g, const std::string& topology) {
  profiler::SavedPlan p;
  p.graph_hash = profiler::graph_content_hash(g);
  p.topology = topology;
  p.version = profiler::graphi_version();
  p.config.executors = 2;
  p.config.threads = 1;
  p.config.scheduler = "cpf";
  p.node_us = std::vector<double>(g.num_nodes(), 3.0);
  p.levels = std::vector<double>(g.num_nodes(), 6.0);
  return p;
}

}  // namespace

TEST_CASE("graph content hash: equal graphs agree, one weight or shape differs", "[profiler]") {
  const std::string a = profiler::graph_content_hash(small_mlp(0.5f));
  CHECK(a.size() == 16);
  CHECK(profiler::graph_content_hash(small_mlp(0.5f)) == a);
  CHECK(profiler::graph_content_hash(small_mlp(0.5000001f)) != a);  // one weight, one ulp-ish
  CHECK(profiler::graph_content_hash(small_mlp(0.5f, 16)) != a);    // shapes
}

TEST_CASE("plan cache: store, load, stale keys are not used", "[profiler]") {
  CacheDir cache("plan_cache_keys");
  const graph::Graph g = small_mlp(1.0f);
  auto phi = engine::Topology::from_synthetic("package:1 l2:34 core:2 pu:4");
  auto two = engine::Topology::from_synthetic("package:1 core:2 pu:1");
  REQUIRE(phi.is_ok());
  REQUIRE(two.is_ok());
  const std::string sig = profiler::topology_signature(*two);
  CHECK(profiler::topology_signature(*phi) != sig);

  auto stored = profiler::store_cached_plan(plan_for(g, sig));
  REQUIRE(stored.is_ok());
  CHECK(fs::path(*stored).parent_path().parent_path() == cache.dir);  // beside rnn_schedules.json
  std::string file;
  auto loaded =
      profiler::load_cached_plan(profiler::graph_content_hash(g), sig, g.num_nodes(), &file);
  REQUIRE(loaded.has_value());
  CHECK(file == *stored);
  CHECK(loaded->config.executors == 2);
  CHECK(loaded->node_us == std::vector<double>(g.num_nodes(), 3.0));

  // Another machine, another graph (one weight), another node count: nothing.
  CHECK_FALSE(profiler::load_cached_plan(profiler::graph_content_hash(g),
                                         profiler::topology_signature(*phi), g.num_nodes()));
  CHECK_FALSE(profiler::load_cached_plan(profiler::graph_content_hash(small_mlp(1.5f)), sig,
                                         g.num_nodes()));
  CHECK_FALSE(profiler::load_cached_plan(profiler::graph_content_hash(g), sig, g.num_nodes() + 1));

  // A file whose stored key differs from its name's (stale: another version wrote it) is ignored.
  profiler::SavedPlan old = plan_for(g, sig);
  old.version = "0.0.1";
  REQUIRE(profiler::write_plan_file(*stored, old).is_ok());
  CHECK_FALSE(profiler::load_cached_plan(profiler::graph_content_hash(g), sig, g.num_nodes()));

  // Corrupt: ignored (a warning on stderr names the file), never an exception.
  std::ofstream(*stored) << "{\"format\": \"graphi-plan\", \"format_version\": 1, \"key\": 7";
  CHECK_FALSE(profiler::load_cached_plan(profiler::graph_content_hash(g), sig, g.num_nodes()));
}

TEST_CASE("plan files refuse malformed fields by name", "[profiler]") {
  const graph::Graph g = small_mlp(1.0f);
  nlohmann::json j = profiler::plan_to_json(plan_for(g, "sig"));
  auto back = profiler::plan_from_json(j);
  REQUIRE(back.is_ok());
  CHECK(back->config.scheduler == "cpf");
  CHECK(back->levels.size() == g.num_nodes());

  auto refuse = [&](nlohmann::json bad, const std::string& field) {
    auto r = profiler::plan_from_json(bad);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(field) != std::string::npos);
  };
  nlohmann::json bad = j;
  bad["config"]["executors"] = 0;
  refuse(bad, "config.executors");
  bad = j;
  bad["config"]["scheduler"] = "sequential";  // 2 executors
  refuse(bad, "sequential");
  bad = j;
  bad["node_us"][0] = "x";
  refuse(bad, "node_us");
  bad = j;
  bad["levels"].erase(0);
  refuse(bad, "levels");
  bad = j;
  bad.erase("key");
  refuse(bad, "key");
  refuse(nlohmann::json::array(), "not a graphi plan");
}

TEST_CASE("choose_plan: flags, none, a plan file, a mismatching plan file", "[profiler]") {
  CacheDir cache("plan_choice");
  const graph::Graph g = small_mlp(1.0f);
  profiler::PlanRequest req;
  req.plan = "none";
  auto none = profiler::choose_plan(g, req);
  REQUIRE(none.is_ok());
  CHECK(none->options.executors == 1);
  CHECK(none->options.threads == 1);
  CHECK(none->options.scheduler == "sequential");

  req.plan = "auto";
  req.executors = 2;
  auto flags = profiler::choose_plan(g, req);
  REQUIRE(flags.is_ok());
  CHECK(flags->source == "flags");
  CHECK(flags->options.executors == 2);
  CHECK(flags->options.threads == 1);
  CHECK(flags->options.scheduler == "cpf");

  auto topo = engine::Topology::load_this_machine();
  REQUIRE(topo.is_ok());
  const fs::path file = cache.dir / "mine.plan.json";
  REQUIRE(profiler::write_plan_file(file.string(), plan_for(g, profiler::topology_signature(*topo)))
              .is_ok());
  req = {};
  req.plan = file.string();
  auto from_file = profiler::choose_plan(g, req);
  REQUIRE(from_file.is_ok());
  CHECK(from_file->source == "file");
  CHECK(from_file->options.executors == 2);
  CHECK(from_file->options.node_costs == std::vector<double>(g.num_nodes(), 3.0));

  // The same file for another graph (one weight differs): an error naming the file and the field.
  auto other = profiler::choose_plan(small_mlp(2.0f), req);
  REQUIRE_FALSE(other.is_ok());
  CHECK(other.status().message().find(file.string()) != std::string::npos);
  CHECK(other.status().message().find("graph hash") != std::string::npos);
}
