// Plan: a Graph compiled for execution. Everything that can fail or allocate happens in
// compile() (kernel selection, weight packing, memory plan); executors then walk flat arrays.
// One Plan serves every executor and scheduler (the sequential Session here, issue 3's
// parallel executors later): it is immutable once compiled except for set_levels().
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/memory_plan.h"
#include "graph/graph.h"
#include "ops/kernel.h"
#include "ops/registry.h"

namespace graphi::engine {

using graph::NodeId;
using graph::ValueId;

class Plan;

// Compiles `graph` for teams of `team_size` threads: for every node builds a KernelContext,
// selects a kernel through ops::Registry (kernels may pack weights here), records cost hints,
// small flags and value ids, builds successor lists and pending counts, plans memory with
// `reuse` and computes levels from default_node_costs(). Errors name the node:
// "<source>: node 'x' (Op): ...". The Plan keeps `graph` alive.
// The default reuse mode is dependency-safe: the memory plan stays correct for ANY execution
// order that respects dependencies, so parallel executors may share this Plan (memory_plan.h).
// kSequential gives a smaller arena but is only valid for the sequential order. A dependency-
// safe Plan also carries the sequential one (sequential_memory()), which a Session on the
// sequential scheduler uses: it runs the nodes one at a time in order().
Result<Plan> compile(std::shared_ptr<const graph::Graph> graph, int team_size,
                     ReuseMode reuse = ReuseMode::kDependencySafe);

// An op too small for a team (Plan::narrow): splitting it over threads saves less than the
// fork/join of the team costs (~0.5 us per op on an idle 2-core machine: a 20-op attention
// block ran 7 us on 1 thread, 16 us on a team of 2), and on a loaded machine a descheduled team
// member stalls the op for a scheduler time slice. Under 64 KiB of data and 200 K FLOPs an op
// takes a few microseconds on one core. A hint of 0 / 0 (a custom op that gave none) is
// unknown, not small.
bool tiny_for_team(const ops::CostHint& cost);

// Arrays are indexed by NodeId unless noted. The Graph stores nodes in a topological order
// (NodeId = position), so order[] is 0..n-1 today; schedulers should still iterate order[] so
// a later reordering pass stays possible.
class Plan {
 public:
  Plan() = default;
  Plan(Plan&&) noexcept = default;
  Plan& operator=(Plan&&) noexcept = default;

  const graph::Graph& graph() const { return *graph_; }
  const std::shared_ptr<const graph::Graph>& graph_ptr() const { return graph_; }
  size_t num_nodes() const { return kernels_.size(); }
  int team_size() const { return team_size_; }

  // Topological order of node ids.
  std::span<const NodeId> order() const { return order_; }
  // CSR successor lists: the distinct nodes that read an output of n, ascending.
  std::span<const NodeId> successors(NodeId n) const {
    return {succ_.data() + succ_offsets_[n], succ_.data() + succ_offsets_[n + 1]};
  }
  std::span<const uint32_t> succ_offsets() const { return succ_offsets_; }  // size n + 1
  std::span<const NodeId> succ_ids() const { return succ_; }
  // Number of distinct predecessor nodes: a node is ready when its count reaches 0. Copy
  // these into the per-run state; the Plan itself is never modified by a run.
  std::span<const uint32_t> initial_pending() const { return initial_pending_; }

  // Value ids read / written by n, in the node's slot order (graph::kNoId = absent optional).
  std::span<const ValueId> inputs(NodeId n) const {
    return {in_ids_.data() + in_offsets_[n], in_ids_.data() + in_offsets_[n + 1]};
  }
  std::span<const ValueId> outputs(NodeId n) const {
    return {out_ids_.data() + out_offsets_[n], out_ids_.data() + out_offsets_[n + 1]};
  }
  std::span<const uint32_t> in_offsets() const { return in_offsets_; }    // CSR, size n + 1
  std::span<const uint32_t> out_offsets() const { return out_offsets_; }  // CSR, size n + 1

  const ops::Kernel& kernel(NodeId n) const { return *kernels_[n]; }
  const char* kernel_name(NodeId n) const { return kernels_[n]->name(); }
  // Small ops (OpDef::small) run inline with nthr = 1, never on a team.
  bool small(NodeId n) const { return small_[n] != 0; }
  std::span<const uint8_t> small_flags() const { return small_; }
  // Ops whose cost hint is below a team's worth of work (tiny_for_team): their kernel is made
  // for, and runs on, one thread of the executor's team, without opening a parallel region.
  // Scheduled like any other op (unlike small ones). Always false on a team of 1.
  bool narrow(NodeId n) const { return narrow_[n] != 0; }
  // The threads node n runs on when its executor's team has `threads`.
  int node_threads(NodeId n, int threads) const { return small(n) || narrow(n) ? 1 : threads; }
  const ops::CostHint& cost(NodeId n) const { return cost_[n]; }
  std::span<const ops::CostHint> costs() const { return cost_; }

  // Level of n: the longest cost-weighted path from n to a sink, n's own cost included. The
  // critical-path-first scheduler runs the ready node with the highest level first.
  std::span<const double> levels() const { return levels_; }
  double level(NodeId n) const { return levels_[n]; }
  // Replaces the levels (e.g. with ones from measured costs: see compute_levels()). Call before
  // the Plan is shared with running executors.
  void set_levels(std::vector<double> levels);

  const MemoryPlan& memory() const { return memory_; }
  // The arena for nodes run one at a time in order() (the sequential scheduler): reuse by last
  // use in that order, often much smaller than memory()'s (GoogleNet small's training step:
  // 480 against 634 MiB). Equal to memory() when compiled with another reuse mode.
  const MemoryPlan& sequential_memory() const {
    return sequential_memory_ ? *sequential_memory_ : memory_;
  }
  // Largest Kernel::scratch_bytes() over all kernels, rounded up to 64: one buffer of this size
  // per executor serves every kernel it runs.
  size_t scratch_bytes() const { return scratch_bytes_; }

 private:
  friend Result<Plan> compile(std::shared_ptr<const graph::Graph> graph, int team_size,
                              ReuseMode reuse);

  std::shared_ptr<const graph::Graph> graph_;  // kernels point into it (descs, weights)
  int team_size_ = 1;
  std::vector<NodeId> order_;
  std::optional<MemoryPlan> sequential_memory_;  // dependency-safe Plans only
  std::vector<uint32_t> succ_offsets_;
  std::vector<NodeId> succ_;
  std::vector<uint32_t> initial_pending_;
  std::vector<uint32_t> in_offsets_, out_offsets_;
  std::vector<ValueId> in_ids_, out_ids_;
  std::vector<std::unique_ptr<ops::Kernel>> kernels_;
  std::vector<uint8_t> small_, narrow_;
  std::vector<ops::CostHint> cost_;
  std::vector<double> levels_;
  MemoryPlan memory_;
  size_t scratch_bytes_ = 0;
};

// A first guess at per-node cost before anything is measured: flops + bytes of the cost hint.
std::vector<double> default_node_costs(const Plan& plan);

// Longest cost-weighted path from each node to a sink (including the node's own cost) over the
// plan's successor lists. `node_cost` has one entry per node (e.g. measured microseconds).
std::vector<double> compute_levels(const Plan& plan, std::span<const double> node_cost);

}  // namespace graphi::engine
