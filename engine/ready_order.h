// ReadyOrder: the scheduling decisions of the parallel policies, shared by the real runtime
// (engine/parallel_runtime.cpp) and the makespan simulator (profiler/simulator.h), so a change
// to cpf's order or to the sharing rules moves both (issue 11).
//
// - Which ready op runs first: a ReadyHeap ordered by the policy's key (cpf: the level, ties by
//   the work the op unlocks, then the lower id; fifo, shared-queue, sequential: topological
//   position, i.e. the lower id first).
// - How much surplus a busy executor publishes for an idle one, whether that is worth a
//   hand-off, and how much of the central heap an idle executor claims.
// Everything here works on the Plan's successor lists (CSR), so the simulator needs no compiled
// kernels: it passes the same lists from the op registry's view of the graph.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/policy.h"
#include "engine/ready_heap.h"

namespace graphi::engine {

// The DAG as the decisions see it: CSR successor lists and each op's predecessor count
// (entries naming it in the lists).
struct DagView {
  std::span<const uint32_t> succ_offsets;  // size n + 1
  std::span<const uint32_t> succ;
  std::span<const uint32_t> initial_pending;  // size n
  size_t num_nodes() const { return initial_pending.size(); }
};

// The heap keys of a policy: for cpf `levels` (longest cost-weighted path to a sink) and, as
// tie-break, unlocked_work(); for the others -position (topological order, no tie-break).
struct ReadyOrder {
  std::vector<double> keys;
  std::vector<double> ties;  // empty: ties go to the lower id
};
ReadyOrder ready_order(Policy policy, const DagView& dag, std::span<const double> levels);
// Sets `heap`'s order to `order`'s (the one heap type both the runtime and the simulator use).
inline void reset_ready_heap(ReadyHeap& heap, const ReadyOrder& order) {
  heap.reset(order.keys, order.ties);
}

// cpf's tie-break between ops of equal level: an estimate of the work each op unlocks,
// w(n) = cost(n) + sum over successors s of w(s) / (s's predecessor count); costs come from the
// levels (cost(n) = level(n) - the highest successor level). See ready_order.cpp for why.
std::vector<double> unlocked_work(const DagView& dag, std::span<const double> levels);

// Surplus ops are published for an idle executor only when their expected time (count x the
// publisher's mean time per op) is at least this: about a hand-off on the 2-core VM (one-way
// 144 ns, a claim takes 2-4 of them).
inline constexpr double kMinShareNs = 500.0;

// How many of its `heap_size` ready ops a busy executor publishes when another is idle: the best
// half, at least one, at most half the report ring.
inline size_t surplus_to_publish(size_t heap_size, size_t report_capacity) {
  return std::max<size_t>(1, std::min((heap_size + 1) / 2, report_capacity / 2));
}
// Publishing `give` ops is worth a hand-off when they take at least kMinShareNs together.
inline bool worth_publishing(size_t give, double mean_op_ns) {
  return static_cast<double>(give) * mean_op_ns >= kMinShareNs;
}
// An idle executor running a scheduling step claims this many ops (the best) of the central
// heap: its share among the idle executors (itself included).
inline size_t central_share(size_t heap_size, size_t idle_count) {
  return std::max<size_t>(1, heap_size / std::max<size_t>(1, idle_count));
}

// Who the client thread is during a run (ParallelRuntime::create; the simulator charges its
// costs from the same rule). `spare_core`: the placement reserves a core for the scheduler.
struct ClientRole {
  bool dedicated = false;  // it plays the scheduler on the spare core
  bool drives = false;     // it plays executor 0 (teams of 1, cpf/fifo, no dedicated core)
  bool sleeps = false;     // neither: it sleeps through the run on executor 0's core
};
inline ClientRole client_role(int executors, int threads, Policy policy, bool spare_core,
                              bool local_continuation = true) {
  // One executor with a team of 1 (cpf, fifo) has nothing to schedule: the client plays it
  // even when a core is reserved ("solo").
  const bool shared = policy == Policy::kSharedQueue;
  const bool solo = executors == 1 && threads == 1 && local_continuation && !shared;
  ClientRole r;
  r.dedicated = spare_core && !solo;
  r.drives = !r.dedicated && !shared && threads == 1 && local_continuation;
  r.sleeps = !r.dedicated && !r.drives;
  return r;
}

}  // namespace graphi::engine
