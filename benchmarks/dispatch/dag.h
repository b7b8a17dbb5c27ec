// The DAG shapes of the dispatch benchmark, as plain CSR arrays every competitor builds its own
// graph from (graphi nodes, oneTBB flow_graph nodes, task_group counters).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graphi::bench {

struct Dag {
  std::string name;  // "chain", "fan", "layered", "lstm"
  uint32_t n = 0;
  // CSR predecessor / successor lists; node ids are in topological order.
  std::vector<uint32_t> pred_offsets, preds;
  std::vector<uint32_t> succ_offsets, succs;
  // depth[i]: nodes on the longest path from a source to i, i included (sources: 1). Every
  // competitor's op computes value[i] = 1 + max(value of preds), so value[i] == depth[i] checks
  // that the run respected every dependency on the paths to the checked nodes.
  std::vector<uint32_t> depth;
  uint32_t critical_path = 0;  // max depth: ops on the longest path
  std::vector<uint32_t> sources;
  // The deepest sinks: graphi's graph outputs (the other sinks' values are left unused).
  std::vector<uint32_t> outputs;

  uint32_t num_preds(uint32_t i) const { return pred_offsets[i + 1] - pred_offsets[i]; }
  const uint32_t* preds_of(uint32_t i) const { return preds.data() + pred_offsets[i]; }
  const uint32_t* succs_begin(uint32_t i) const { return succs.data() + succ_offsets[i]; }
  const uint32_t* succs_end(uint32_t i) const { return succs.data() + succ_offsets[i + 1]; }
};

// n ops, op i depends on op i - 1.
Dag make_chain(uint32_t n);
// n ops: one source, n - 2 ops that depend on it, one sink that depends on all of them.
Dag make_fan(uint32_t n);
// layers x width ops; each op of layer l > 0 depends on 1-3 distinct random ops of layer l - 1
// (std::mt19937 with `seed`, so every run and every competitor sees the same graph).
Dag make_layered(uint32_t layers, uint32_t width, uint32_t seed);
// An unrolled stacked RNN's dependency shape: cell (l, t) depends on (l, t - 1) and (l - 1, t).
Dag make_rnn_shape(uint32_t layers, uint32_t steps);

// "chain" -> make_chain(10000), "fan" -> make_fan(10000), "layered" -> 100 x 100 (seed 42),
// "lstm" -> make_rnn_shape(4, 100). Empty name on an unknown shape.
Dag make_shape(const std::string& name);
inline constexpr const char* kShapeNames = "chain, fan, layered, lstm";

}  // namespace graphi::bench
