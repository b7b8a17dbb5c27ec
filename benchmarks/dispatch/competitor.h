// A competitor of the dispatch benchmark: one engine in one configuration, holding its graph
// (built once from a Dag) and its threads; run() executes every op once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/dispatch/dag.h"
#include "benchmarks/dispatch/spin.h"
#include "graph/base.h"

namespace graphi::bench {

class Competitor {
 public:
  virtual ~Competitor() = default;
  virtual std::string name() const = 0;    // "graphi cpf", "tbb flow_graph"
  virtual std::string config() const = 0;  // "2x1 pinned", "2 threads"
  // Runs the graph once. An engine error is returned, not thrown.
  virtual Status run() = 0;
  // After a run: every checked op value equals its depth in the Dag (see Dag::depth).
  virtual Status check() const = 0;
};

// The op every competitor runs, on a shared array of values: busy work, then
// values[i] = 1 + max(values of i's predecessors) (1 for a source). Used by the oneTBB
// competitors; graphi's BenchSpin kernel does the same on its own buffers.
inline void run_op(const Dag& d, float* values, uint32_t i, uint64_t spin) {
  spin_iterations(spin);
  float m = 0;
  const uint32_t* p = d.preds_of(i);
  for (uint32_t k = 0, np = d.num_preds(i); k < np; ++k) m = std::max(m, values[p[k]]);
  values[i] = m + 1;
}

// Compares values (indexed by node) with the Dag's depths on every node.
Status check_values(const Dag& d, const std::vector<float>& values, const std::string& who);

// graphi (graphi.cpp): policy cpf | fifo | shared-queue | sequential, executors x threads,
// pinned, scheduler -> executor rings of `ring_capacity`; `trace`: every run records a RunTrace
// (SessionOptions::trace; config gets " traced"). Registers the BenchSpin op on first use.
Result<std::unique_ptr<Competitor>> make_graphi(const Dag& d, int64_t work_ns, const std::string& policy,
                                                int executors, int threads, int ring_capacity = 1,
                                                bool trace = false);
// oneTBB flow_graph (tbb_flow_graph.cpp): one continue_node per op, an edge per dependency, in a
// task_arena of `threads`; `lightweight` uses the lightweight node policy (bodies run inline in
// the thread that completed the predecessor).
std::unique_ptr<Competitor> make_tbb_flow_graph(const Dag& d, int64_t work_ns, int threads, bool lightweight);
// oneTBB task_group (tbb_task_group.cpp): per-op atomic counters; an op that finishes spawns the
// successors it made ready and runs the last of them itself; in a task_arena of `threads`.
std::unique_ptr<Competitor> make_tbb_task_group(const Dag& d, int64_t work_ns, int threads);

}  // namespace graphi::bench
