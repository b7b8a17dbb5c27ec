// CostTable: measured per-node durations averaged over traced runs (the levels the cpf
// scheduler should use, SessionOptions::node_costs, and the profiler's report).
#pragma once

#include <span>
#include <string>
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

// What makes two nodes the same work: op type, kernel, cost hint, and the dtypes and shapes of
// every input and output. The 30 steps of an unrolled LSTM layer share one signature per op.
std::string op_signature(const engine::Plan& plan, engine::NodeId n);

// Replaces each traced node's mean by the mean over all traced nodes of its signature (untraced
// nodes, 0 us, are left alone). Identical ops cost the same; what tells them apart in a trace is
// noise (a preempted run, a cold cache), and levels computed from that noise order equal ops at
// random, which costs locality (measured: +8% on the unfused 4-layer LSTM at 2x1).
void pool_identical_ops(const engine::Plan& plan, CostTable& table);

}  // namespace graphi::profiler
