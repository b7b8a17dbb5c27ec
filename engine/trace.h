// RunTrace: what one run did, op by op (profiler/ turns it into cost tables and Chrome traces).
// Recorded by the sequential executor and ParallelRuntime when SessionOptions::trace is on;
// the buffers are sized once per run, so recording allocates nothing per op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graphi::engine {

// Executor ids of ops that did not run on an executor's team.
inline constexpr int32_t kInlineExecutor = -1;     // on the scheduler / client thread
inline constexpr int32_t kBootstrapExecutor = -2;  // on the bootstrap executor

struct OpSpan {   // one op execution
  uint32_t node;  // NodeId in the Plan
  int32_t
      executor;  // 0..n-1; -1 = ran inline on the scheduler/client thread; -2 = bootstrap executor
  int32_t team;  // team size it ran with (1 for small ops run inline)
  uint64_t start_ns, end_ns;  // std::chrono::steady_clock, ns since the steady clock's epoch
};

struct SchedulerSpan {  // the scheduler's own activity
  // kHandOff: pushing a ready op into an executor's ring; kIdle: waiting with nothing to hand
  // out; kStep: one pass over the triggered queues and the ready set.
  enum Kind : uint8_t { kHandOff, kIdle, kStep } kind;
  int32_t executor;  // target executor of a hand-off, else -1
  uint64_t start_ns, end_ns;
};

struct RunTrace {
  uint64_t run_start_ns = 0, run_end_ns = 0;  // makespan = run_end_ns - run_start_ns
  int executors = 1, threads = 1;
  std::string scheduler;    // "cpf", "fifo", "shared-queue", "sequential"
  std::vector<OpSpan> ops;  // every executed node exactly once
  std::vector<SchedulerSpan> scheduler_spans;
};

// Now on std::chrono::steady_clock, in ns since its epoch (the clock of every span above).
uint64_t trace_now_ns();

}  // namespace graphi::engine
