// Plan cache files (see plan_cache.h).
#include "profiler/plan_cache.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ops/choice_cache.h"  // write_json_file
#include "ops/rnn/rnn_schedule.h"

#ifndef GRAPHI_VERSION
#error "GRAPHI_VERSION is set by CMake (the project version)"
#endif

namespace graphi::profiler {

namespace fs = std::filesystem;

const char* graphi_version() { return GRAPHI_VERSION; }

namespace {

// 64-bit multiply-xorshift hash, 8 bytes at a time (weights dominate: they are hashed at memory
// speed, not byte by byte).
class Hasher {
 public:
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      mix(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    mix(tail ^ (static_cast<uint64_t>(n) << 56));
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  void u64(uint64_t v) { mix(v); }
  void f64(double v) {
    uint64_t w;
    std::memcpy(&w, &v, 8);
    mix(w);
  }
  std::string hex() const {
    uint64_t h = h_ ^ (h_ >> 29);
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }

 private:
  void mix(uint64_t w) {
    h_ ^= w * 0x9E3779B97F4A7C15ull;
    h_ = (h_ << 27 | h_ >> 37) * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull;
  }
  uint64_t h_ = 0x243F6A8885A308D3ull;
};

void hash_attribute(Hasher& h, const graph::Attribute& a) {
  h.u64(a.index());
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          h.u64(static_cast<uint64_t>(v));
        else if constexpr (std::is_same_v<T, double>)
          h.f64(v);
        else if constexpr (std::is_same_v<T, std::string>)
          h.str(v);
        else {
          h.u64(v.size());
          h.bytes(v.data(), v.size() * sizeof(v[0]));
        }
      },
      a);
}

void warn_corrupt(const std::string& path, const std::string& why) {
  std::fprintf(stderr, "graphi: warning: plan cache %s: %s (ignored)\n", path.c_str(), why.c_str());
}

}  // namespace

std::string graph_content_hash(const graph::Graph& g) {
  Hasher h;
  h.u64(g.num_values());
  for (const graph::Value& v : g.values()) {
    h.str(v.name);
    h.u64(static_cast<uint64_t>(v.kind) | (v.is_output ? 0x100u : 0u));
    h.u64(static_cast<uint64_t>(v.desc.dtype));
    h.u64(v.desc.shape.size());
    for (int64_t d : v.desc.shape) h.u64(static_cast<uint64_t>(d));
    if (v.data) h.bytes(v.data->data(), v.data->bytes());
  }
  h.u64(g.num_nodes());
  for (const graph::Node& n : g.nodes()) {
    h.str(n.op);
    h.str(n.name);
    h.u64(n.attrs.all().size());
    for (const auto& [name, a] : n.attrs.all()) {
      h.str(name);
      hash_attribute(h, a);
    }
    h.u64(n.inputs.size());
    for (graph::ValueId v : n.inputs) h.u64(v);
    h.u64(n.outputs.size());
    for (graph::ValueId v : n.outputs) h.u64(v);
  }
  for (graph::ValueId v : g.inputs()) h.u64(v);
  for (graph::ValueId v : g.outputs()) h.u64(v);
  return h.hex();
}

std::string topology_signature(const engine::Topology& topo) { return topo.summary(); }

nlohmann::json plan_to_json(const SavedPlan& p) {
  return nlohmann::json{
      {"format", "graphi-plan"},
      {"format_version", 1},
      {"key", {{"graph_hash", p.graph_hash}, {"topology", p.topology}, {"version", p.version}}},
      {"config",
       {{"executors", p.config.executors},
        {"threads", p.config.threads},
        {"scheduler", p.config.scheduler}}},
      {"makespan_ms", p.makespan_ms},
      {"cost_runs", p.cost_runs},
      {"node_us", p.node_us},
      {"levels", p.levels},
      {"model", p.model},
      {"created", p.created},
      {"configs", p.configs},
  };
}

Result<SavedPlan> plan_from_json(const nlohmann::json& j) {
  auto bad = [](const std::string& what) { return Status::invalid_argument(what); };
  if (!j.is_object() || j.value("format", "") != "graphi-plan")
    return bad("not a graphi plan (no \"format\": \"graphi-plan\")");
  if (!j.contains("format_version") || j["format_version"] != 1)
    return bad("unsupported \"format_version\" (expected 1)");
  SavedPlan p;
  const nlohmann::json* key = j.contains("key") ? &j["key"] : nullptr;
  if (!key || !key->is_object()) return bad("missing \"key\" object");
  for (const char* f : {"graph_hash", "topology", "version"})
    if (!key->contains(f) || !(*key)[f].is_string())
      return bad(std::string("key.") + f + " must be a string");
  p.graph_hash = (*key)["graph_hash"];
  p.topology = (*key)["topology"];
  p.version = (*key)["version"];
  if (!j.contains("config") || !j["config"].is_object()) return bad("missing \"config\" object");
  const nlohmann::json& c = j["config"];
  for (const char* f : {"executors", "threads"})
    if (!c.contains(f) || !c[f].is_number_integer() || c[f].get<int64_t>() < 1 ||
        c[f].get<int64_t>() > 4096)
      return bad(std::string("config.") + f + " must be an integer in [1, 4096]");
  p.config.executors = c["executors"];
  p.config.threads = c["threads"];
  p.config.scheduler = c.value("scheduler", default_scheduler(p.config.executors));
  if (p.config.scheduler != "sequential" && p.config.scheduler != "cpf" &&
      p.config.scheduler != "fifo" && p.config.scheduler != "shared-queue")
    return bad("config.scheduler '" + p.config.scheduler + "' is not a scheduler");
  if (p.config.scheduler == "sequential" && p.config.executors != 1)
    return bad("config: the sequential scheduler runs one executor");
  for (const char* f : {"node_us", "levels"}) {
    if (!j.contains(f) || !j[f].is_array())
      return bad(std::string("\"") + f + "\" must be an array of numbers");
    for (const auto& v : j[f])
      if (!v.is_number() || v.get<double>() < 0)
        return bad(std::string("\"") + f + "\" must hold numbers >= 0");
  }
  p.node_us = j["node_us"].get<std::vector<double>>();
  p.levels = j["levels"].get<std::vector<double>>();
  if (p.levels.size() != p.node_us.size())
    return bad("\"levels\" and \"node_us\" differ in length");
  p.cost_runs = j.value("cost_runs", 0);
  p.makespan_ms = j.value("makespan_ms", 0.0);
  p.model = j.value("model", "");
  p.created = j.value("created", "");
  if (j.contains("configs")) p.configs = j["configs"];
  return p;
}

Result<SavedPlan> read_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error(path + ": cannot open the plan file");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::invalid_argument(path + ": not a plan file (bad JSON)");
  Result<SavedPlan> p = plan_from_json(j);
  if (!p.is_ok()) return p.status().with_context(path);
  return p;
}

Status write_plan_file(const std::string& path, const SavedPlan& p) {
  return ops::write_json_file(path, plan_to_json(p), 1);
}

std::string plan_cache_dir() {
  // The RNN schedules' cache file decides where graphi caches live; plans go beside it.
  const std::string rnn = ops::rnn_schedule_cache_path();
  if (rnn.empty()) return "";
  return fs::path(rnn).parent_path().string();
}

std::string plan_cache_file(const std::string& graph_hash, const std::string& topology) {
  const std::string dir = plan_cache_dir();
  if (dir.empty()) return "";
  Hasher h;
  h.str(graph_hash);
  h.str(topology);
  h.str(graphi_version());
  return (fs::path(dir) / "plans" / ("plan-" + h.hex() + ".json")).string();
}

std::optional<SavedPlan> load_cached_plan(const std::string& graph_hash,
                                          const std::string& topology, size_t num_nodes,
                                          std::string* file) {
  const std::string path = plan_cache_file(graph_hash, topology);
  if (file) *file = path;
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return std::nullopt;
  Result<SavedPlan> p = read_plan_file(path);
  if (!p.is_ok()) {
    std::string why = p.status().message();
    if (why.rfind(path + ": ", 0) == 0) why = why.substr(path.size() + 2);
    warn_corrupt(path, why);
    return std::nullopt;
  }
  // Stale: a hash collision of the file name, another machine or version. Never used.
  if (p->graph_hash != graph_hash || p->topology != topology || p->version != graphi_version())
    return std::nullopt;
  if (p->node_us.size() != num_nodes) {
    warn_corrupt(path, "cost table has " + std::to_string(p->node_us.size()) +
                           " entries, the graph " + std::to_string(num_nodes) + " nodes");
    return std::nullopt;
  }
  return std::move(p).value();
}

Result<std::string> store_cached_plan(const SavedPlan& p) {
  const std::string path = plan_cache_file(p.graph_hash, p.topology);
  if (path.empty()) return Status::io_error("no cache directory (set GRAPHI_CACHE_DIR or HOME)");
  GRAPHI_RETURN_IF_ERROR(write_plan_file(path, p));
  return path;
}

}  // namespace graphi::profiler
