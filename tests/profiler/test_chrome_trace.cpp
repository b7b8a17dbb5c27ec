// Chrome Trace Event JSON (profiler/chrome_trace.h) of real LSTM runs: it parses, has the
// fields Perfetto and chrome://tracing need, one track per executor plus scheduler and
// bootstrap, and args that match the graph (shapes, bytes, kernel, level, successors).
#include <catch2/catch.hpp>

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/plan.h"
#include "engine/session.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "profiler/chrome_trace.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;
using nlohmann::json;

namespace {

std::shared_ptr<const graph::Graph> lstm_graph() {
  models::RnnSpec spec;
  spec.input = 8;
  spec.hidden = 16;
  spec.layers = 2;
  spec.batch = 1;
  spec.seq = 5;
  spec.seed = 3;
  return std::make_shared<const graph::Graph>(value_or_throw(models::build_lstm(spec, ops::Registry::get())));
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

json shape_of(const graph::Graph& g, graph::ValueId v) {
  json s = json::array();
  for (int64_t d : g.value(v).desc.shape) s.push_back(d);
  return s;
}

}  // namespace

TEST_CASE("chrome trace: an LSTM run exports valid Trace Event JSON with the required fields", "[profiler][chrome]") {
  auto g = lstm_graph();
  NamedTensors in = test::random_inputs(*g, 5);
  for (const char* policy : {"cpf", "shared-queue", "sequential"}) {
    SessionOptions o;
    o.scheduler = policy;
    o.executors = std::string(policy) == "sequential" ? 1 : 2;
    o.pin = o.executors <= usable_cores();
    o.trace = true;
    INFO(policy);
    auto s = value_or_throw(Session::create(g, o));
    (void)value_or_throw(s->run(in));
    RunTrace t = s->last_trace();
    const Plan& plan = s->plan();
    json doc = json::parse(profiler::chrome_trace_json(plan, t));  // throws on invalid JSON
    REQUIRE(doc.contains("traceEvents"));
    REQUIRE(doc["traceEvents"].is_array());

    // Tracks: thread_name metadata, one per executor plus scheduler and bootstrap, distinct tids.
    std::map<int, std::string> track_names;
    for (const json& ev : doc["traceEvents"])
      if (ev["ph"] == "M" && ev["name"] == "thread_name") {
        CHECK(ev["pid"] == 1);
        track_names[ev["tid"].get<int>()] = ev["args"]["name"].get<std::string>();
      }
    int executor_tracks = 0, scheduler_tracks = 0, bootstrap_tracks = 0;
    for (auto& [tid, name] : track_names) {
      executor_tracks += name.rfind("executor ", 0) == 0;
      scheduler_tracks += name.rfind("scheduler", 0) == 0;
      bootstrap_tracks += name == "bootstrap";
    }
    CHECK(executor_tracks == o.executors);
    CHECK(scheduler_tracks == 1);
    CHECK(bootstrap_tracks == 1);

    // Op events: every node once, on a named track, args that match the graph.
    std::set<uint32_t> nodes;
    std::map<int, std::vector<std::pair<double, double>>> per_track;
    for (const json& ev : doc["traceEvents"]) {
      if (ev["ph"] != "X") continue;
      for (const char* f : {"pid", "tid", "name", "ts", "dur", "cat"}) REQUIRE(ev.contains(f));
      CHECK(ev["pid"] == 1);
      const int tid = ev["tid"].get<int>();
      CHECK(track_names.count(tid) == 1);
      CHECK(ev["dur"].get<double>() >= 0);
      CHECK(ev["ts"].get<double>() >= 0);
      if (ev["cat"] != "op") {
        CHECK(ev["cat"] == "scheduler");
        CHECK(track_names[tid].rfind("scheduler", 0) == 0);
        continue;
      }
      const json& a = ev["args"];
      const uint32_t id = a["node_id"].get<uint32_t>();
      REQUIRE(id < plan.num_nodes());
      CHECK(nodes.insert(id).second);
      const graph::Node& node = g->node(id);
      CHECK(ev["name"] == node.op);
      CHECK(a["op"] == node.op);
      CHECK(a["node"] == node.name);
      CHECK(a["kernel"] == plan.kernel_name(id));
      CHECK(a["level"].get<double>() == Approx(plan.level(id)));
      CHECK(a["team"].get<int>() >= 1);
      // Shapes and bytes from the graph's value descriptors (f32 and i64: numel x size).
      uint64_t in_bytes = 0, out_bytes = 0;
      REQUIRE(a["inputs"].size() == node.inputs.size());
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        if (node.inputs[k] == graph::kNoId) {
          CHECK(a["inputs"][k].is_null());
          continue;
        }
        const TensorDesc& d = g->value(node.inputs[k]).desc;
        CHECK(a["inputs"][k]["shape"] == shape_of(*g, node.inputs[k]));
        const uint64_t b = static_cast<uint64_t>(d.numel()) * (d.dtype == DType::kF32 ? 4 : d.dtype == DType::kI64 ? 8 : 4);
        CHECK(a["inputs"][k]["bytes"].get<uint64_t>() == b);
        in_bytes += b;
      }
      REQUIRE(a["outputs"].size() == node.outputs.size());
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        CHECK(a["outputs"][k]["shape"] == shape_of(*g, node.outputs[k]));
        CHECK(a["outputs"][k]["name"] == g->value(node.outputs[k]).name);
        out_bytes += a["outputs"][k]["bytes"].get<uint64_t>();
      }
      CHECK(a["bytes_in"].get<uint64_t>() == in_bytes);
      CHECK(a["bytes_out"].get<uint64_t>() == out_bytes);
      // Successors: the nodes that read one of this node's outputs.
      std::set<uint32_t> succ;
      for (graph::ValueId v : node.outputs)
        for (graph::NodeId c : g->consumers(v)) succ.insert(c);
      CHECK(a["successors"].get<std::set<uint32_t>>() == succ);
      per_track[tid].push_back({ev["ts"].get<double>(), ev["dur"].get<double>()});
    }
    CHECK(nodes.size() == plan.num_nodes());
    // Monotonic and non-overlapping per track (1 ns of rounding slack: times are in us).
    for (auto& [tid, spans] : per_track) {
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first + 1e-3 >= spans[i - 1].first + spans[i - 1].second);
    }
    // Executor tracks hold the ops the trace says ran there.
    std::map<int32_t, int> ran;
    for (const OpSpan& sp : t.ops) ++ran[sp.executor];
    for (int e = 0; e < o.executors; ++e) {
      const int tid = e + 1;
      CHECK(track_names[tid].rfind("executor " + std::to_string(e), 0) == 0);
      CHECK(per_track[tid].size() == static_cast<size_t>(ran[e]));
    }
    CHECK(doc["otherData"]["makespan_us"].get<double>() ==
          Approx(static_cast<double>(t.run_end_ns - t.run_start_ns) * 1e-3));
  }
}

TEST_CASE("chrome trace: write_chrome_trace writes the file, errors name it", "[profiler][chrome]") {
  auto g = lstm_graph();
  SessionOptions o;
  o.trace = true;
  auto s = value_or_throw(Session::create(g, o));
  const std::filesystem::path dir = test::scratch_dir("chrome_trace_write");
  // Before any run there is no trace to write.
  Status none = profiler::write_chrome_trace((dir / "none.json").string(), s->plan(), s->last_trace());
  CHECK(!none.is_ok());
  (void)value_or_throw(s->run(test::random_inputs(*g, 1)));
  const std::string path = (dir / "trace.json").string();
  REQUIRE(profiler::write_chrome_trace(path, s->plan(), s->last_trace()).is_ok());
  std::ifstream f(path);
  json doc = json::parse(f);
  CHECK(doc["traceEvents"].size() > s->plan().num_nodes());
  Status bad = profiler::write_chrome_trace((dir / "no/such/dir/t.json").string(), s->plan(), s->last_trace());
  REQUIRE(!bad.is_ok());
  CHECK_THAT(bad.message(), Catch::Contains("no/such/dir/t.json"));
}
