// Runs one node of a Plan on the calling executor's team: the single place that decides how a
// kernel meets OpenMP (DEPENDENCIES.md 1.5, STYLE.md 4.3 option (a)). Shared by the sequential
// reference executor and the parallel executors so both run kernels the same way.
#pragma once

#include <omp.h>

#include "engine/plan.h"

namespace graphi::engine {

// The per-run slot tables: buffers of every node input/output slot, laid out like
// plan.in_offsets()/out_offsets().
struct SlotTables {
  const void* const* in = nullptr;
  void* const* out = nullptr;
};

// Small and narrow ops run inline with nthr = 1; oneDNN-style kernels parallelize themselves over
// the team size (the caller set omp_set_num_threads(threads) on this thread); others get one
// parallel region per op. libgomp reuses the same OS threads for a thread's successive regions
// of the same size, so a team is created once and stays pinned.
// `failure` (may be nullptr) is where a kernel reports a run-time failure (custom ops).
inline void run_node(const Plan& plan, NodeId n, SlotTables slots, int threads, void* scratch,
                     size_t scratch_bytes, ops::KernelFailure* failure = nullptr) noexcept {
  const ops::Kernel& k = plan.kernel(n);
  const uint32_t i0 = plan.in_offsets()[n], i1 = plan.in_offsets()[n + 1];
  const uint32_t o0 = plan.out_offsets()[n], o1 = plan.out_offsets()[n + 1];
  ops::Buffers io{std::span<const void* const>(slots.in + i0, i1 - i0),
                  std::span<void* const>(slots.out + o0, o1 - o0)};
  if (plan.small(n)) {
    k.run(ops::TeamContext{0, 1, scratch, scratch_bytes, failure}, io);
  } else if (plan.narrow(n)) {
    // Too small for the team (Plan::narrow): one thread, no parallel region; a kernel that
    // opens its own (oneDNN) gets a thread count of 1 meanwhile.
    if (k.opens_own_region() && threads > 1) omp_set_num_threads(1);
    k.run(ops::TeamContext{0, 1, scratch, scratch_bytes, failure}, io);
    if (k.opens_own_region() && threads > 1) omp_set_num_threads(threads);
  } else if (k.opens_own_region() || threads == 1) {
    k.run(ops::TeamContext{0, threads, scratch, scratch_bytes, failure}, io);
  } else {
    // The runtime may give fewer threads than asked (run() called inside a parallel region):
    // nthr is what we actually got.
#pragma omp parallel num_threads(threads)
    k.run(ops::TeamContext{omp_get_thread_num(), omp_get_num_threads(), scratch, scratch_bytes,
                           failure},
          io);
  }
}

// The error of node n whose kernel reported `failure` at run time. Kernels that know their
// node start the message with its place (KernelContext::where, "<source>: node 'x' (Op)");
// other messages (a custom op's exception text) get that prefix here, never twice.
inline Status node_failure(const Plan& plan, NodeId n, const ops::KernelFailure& failure) {
  const graph::Graph& g = plan.graph();
  const std::string where = g.source() + ": " + g.node(n).where();
  const std::string& message = failure.message();
  const std::string text = message.rfind(where, 0) == 0 ? message : where + ": " + message;
  return failure.internal() ? Status::internal(text) : Status::invalid_argument(text);
}

}  // namespace graphi::engine
