// The plan cache: what `graphi profile` found (the configuration, the per-op cost table and the
// levels computed from it), saved as JSON so that a later `graphi run`, C/C++ API or Python
// Session of the same graph on the same machine starts with it instead of guessing.
//
// Key: a hash of the graph's content (every node's op, name and attributes, every value's dtype,
// shape and kind, the weights' bytes, inputs and outputs), the machine's topology signature
// (engine::Topology::summary(): packages, tiles, cores, threads, allowed cpuset) and graphi's
// version. One file per key, plans/plan-<hash>.json in the directory of the RNN schedule cache
// (ops/rnn/rnn_schedule.h: $GRAPHI_CACHE_DIR, else $XDG_CACHE_HOME/graphi, else
// $HOME/.cache/graphi). The key fields are stored in the file too and compared on load: a stale
// plan (other graph, machine or version, a config that no longer fits) is never used; a corrupt
// file is ignored with a warning naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/topology.h"
#include "graph/graph.h"
#include "profiler/config_space.h"

namespace graphi::profiler {

// graphi's version (the CMake project version), part of every cache key.
const char* graphi_version();

// 16 hex digits over the graph's content (see above). Deterministic across processes.
std::string graph_content_hash(const graph::Graph& g);
// The machine's signature in cache keys.
std::string topology_signature(const engine::Topology& topo);

struct SavedPlan {
  // Key.
  std::string graph_hash, topology, version;
  // Content.
  Config config;
  std::vector<double> node_us;  // measured per-op cost table (microseconds), one per node
  std::vector<double> levels;   // compute_levels(plan, node_us)
  int cost_runs = 0;            // traced runs averaged into node_us
  double makespan_ms = 0;       // the chosen config's calibrated median
  std::string model;            // informational: the file it was profiled from
  std::string created;          // informational: UTC time of profiling
  nlohmann::json configs = nlohmann::json::array();  // informational: the calibration table
};

nlohmann::json plan_to_json(const SavedPlan& p);
// Errors (kInvalidArgument) say which field is missing or malformed.
Result<SavedPlan> plan_from_json(const nlohmann::json& j);
// Read / write one plan file. Reading: kIoError if unreadable, kInvalidArgument naming the file
// if it is not a plan. Writing goes through a temporary file and a rename.
Result<SavedPlan> read_plan_file(const std::string& path);
Status write_plan_file(const std::string& path, const SavedPlan& p);

// The cache directory (the RNN schedule cache's) and the file of one key; "" when no cache
// directory can be determined (no HOME).
std::string plan_cache_dir();
std::string plan_cache_file(const std::string& graph_hash, const std::string& topology);

// The cached plan for this graph on this machine, or nullopt: missing, stale (its key fields
// differ from the arguments, its cost table has not `num_nodes` entries) or corrupt (a warning
// naming the file on stderr). `file` receives the path looked at.
std::optional<SavedPlan> load_cached_plan(const std::string& graph_hash,
                                          const std::string& topology, size_t num_nodes,
                                          std::string* file = nullptr);
// Writes p into the cache (p's key fields choose the file); returns the path.
Result<std::string> store_cached_plan(const SavedPlan& p);

}  // namespace graphi::profiler
