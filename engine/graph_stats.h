// Graph statistics printed by `graphi info`: op counts, parameters, FLOPs, how much inter-op
// parallelism the graph offers (ops per depth level, critical path, width) and memory with and
// without buffer reuse. Computed from the Graph and the op registry's cost hints; no kernels.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::engine {

class Plan;

struct GraphStats {
  std::string source;
  size_t num_nodes = 0;
  size_t num_values = 0;
  size_t num_inputs = 0, num_outputs = 0, num_constants = 0;
  std::map<std::string, size_t> op_counts;      // op type -> number of nodes
  std::map<std::string, size_t> kernel_counts;  // kernel name -> nodes (only when a Plan is given)

  int64_t parameters = 0;      // elements of the float constants (weights)
  size_t parameter_bytes = 0;  // bytes of the float constants
  size_t constant_bytes = 0;   // bytes of all constants (weights plus integer shapes/indices)
  // Float constants of the model as stored, when the stats describe the graph after the passes
  // (-1: not given). They differ when a pass adds constants: a fused LSTM/GRU op holds ONNX's
  // separate recurrent bias, zeros where the unrolled cells had one bias per gate.
  int64_t parameters_as_stored = -1;
  size_t input_bytes = 0, output_bytes = 0;

  double flops = 0;           // per run: sum of cost hints
  double bytes_accessed = 0;  // per run: sum of cost hints' bytes read + written

  // Depth of a node: the longest path, counted in ops, from a node that reads only graph
  // inputs/constants (depth 0). ops_per_depth[d] = number of nodes at depth d: the inter-op
  // parallelism the graph offers level by level.
  std::vector<size_t> ops_per_depth;
  size_t critical_path_ops = 0;    // ops on the longest path (= ops_per_depth.size())
  double critical_path_flops = 0;  // FLOPs on the most expensive path
  size_t max_width = 0;            // largest ops_per_depth entry
  double average_parallelism = 0;  // num_nodes / critical_path_ops

  // Arena of intermediates (graph outputs included; graph inputs and constants excluded).
  size_t peak_bytes = 0;  // with dependency-safe reuse (what the engine allocates)
  // With reuse valid for the node order only: the arena of a Session on the sequential scheduler.
  size_t peak_bytes_sequential = 0;
  size_t total_bytes = 0;  // without reuse
  // Reshape/Identity outputs that share their input's bytes (no copy at run time; memory_plan.h).
  size_t aliased_values = 0;
  // Concat inputs their producers write inside the Concat's output (memory_plan.h).
  size_t concat_inputs_in_place = 0;
  // Element-wise outputs written over an input that dies at them (memory_plan.h).
  size_t in_place_outputs = 0;
};

// Errors (kUnsupported) only if the graph has an op type the registry does not know, naming
// the node. With `plan`, kernel_counts tells which kernels compile() selected.
Result<GraphStats> compute_graph_stats(const graph::Graph& g, const Plan* plan = nullptr);

// Elements of the float constants (weights): GraphStats::parameters of `g`.
int64_t count_parameters(const graph::Graph& g);

// {"source":..., "nodes":..., "op_counts":{...}, "parameters":..., "flops":...,
//  "ops_per_depth":[...], "critical_path":{"ops":..,"flops":..}, "memory":{...}, ...}
nlohmann::json to_json(const GraphStats& s);

// A human-readable multi-line summary (what `graphi info` prints without --json).
std::string to_text(const GraphStats& s);

}  // namespace graphi::engine
