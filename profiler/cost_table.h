// CostTable: measured per-node durations averaged over traced runs (the levels the cpf
// scheduler should use, SessionOptions::node_costs, and the profiler's report).
#pragma once

#include <span>
#include <vector>

#include "engine/plan.h"
#include "engine/trace.h"

namespace graphi::profiler {

struct CostTable {
  std::vector<double> node_us;  // mean duration per Plan node over `runs` runs (microseconds)
  int runs = 0;
};

// Mean of each node's span over `traces` (each a run of `plan`). A node missing from a trace
// does not count towards its mean; a node in no trace gets 0.
CostTable cost_table_from_traces(const engine::Plan& plan,
                                 std::span<const engine::RunTrace> traces);

}  // namespace graphi::profiler
