// ParallelRuntime: n executors x k threads running one Plan under a scheduling policy (the
// Graphi design, seed 002 sections 4-5, adapted for small machines as issue 3 describes).
//
// - Executor: a std::thread leading an OpenMP team of k threads, created once and reused for
//   every op and every run; each member pins itself (hwloc) to its core in the first region.
// - Buffers: a lock-free SPSC ring of op ids scheduler -> executor (capacity `ring_capacity`)
//   and one executor -> scheduler for reports (published ready ops, "done" markers).
// - Ready ops (cpf, fifo): each executor keeps the ops its own ops make ready in a private
//   ReadyHeap by the policy's key (level for cpf, ties broken by the work an op unlocks, so an
//   unrolled RNN's time chain stays on one executor; topological position for fifo) and runs the
//   best one next: no cross-core traffic while every executor has work. When the scheduler role
//   sees an executor idle (a hint word executors read after each op), an executor with surplus
//   worth a hand-off (count x its measured time per op >= 500 ns) publishes the best half of it
//   to its report ring, one publication in flight at a time; the role moves published ops into
//   the central ReadyHeap and hands the best to idle executors (idle bitmap, ctz); an idle
//   executor that runs the step claims its share of the central heap straight into its own.
//   An executor reports "done" and subtracts its ops from the run's count (one atomic per
//   batch, not per op) only when its heap is empty. local_continuation = false gives the
//   paper's pure central design (every ready op goes through the scheduler).
// - The scheduler is a role guarded by a try-lock. With a spare core (n*k + 1 <= usable cores)
//   the client thread in run() plays it on the reserved core (moved there for the run and put
//   back after), as in the paper: it waits for posts (spin budget, then sleep) and hands
//   published ops out; an executor that goes idle steps itself instead of waiting for it.
//   Without a spare core the executors take the role: the one that goes idle, or an idle one
//   that sees a post (idle executors watch the post counter), so the busy publisher never pays
//   for the step. With teams of 1 the client thread then plays executor 0 for the run (pinned
//   to its core) instead of sleeping beside two busy executors: a third thread on two cores
//   costs a ~30-80 us wake-up per run (oneTBB's calling thread joins its arena the same way).
//   A single executor with a team of 1 (cpf, fifo) has nothing to schedule: the client thread
//   plays it even when a spare core is reserved ("solo"), so no thread waits to be woken.
//   Otherwise (teams of k > 1, shared-queue) the client sleeps through the run on executor 0's
//   leader core, and executor 0 sleeps at once when the run is done instead of spinning its
//   budget: the woken client needs that core (a spinning executor 0 cost ~50 us per run).
// - Small ops run inline in the executor that made them ready. Small ops ready at the start
//   (bootstrap ops: constants, shape bookkeeping) run on the bootstrap executor: a thread of its
//   own pinned to the placement's reserved bootstrap core when the machine has one to spare
//   (n*k + 2 cores), woken at the start of each run while the client dispatches the other start
//   ops; it hands the ops they make ready to the scheduler role like an idle executor. Without
//   that core the client thread runs them before dispatch, on the scheduler's core when it has one
//   (a thread of its own sharing a busy core would cost a ~30 us futex wake-up per run, more than
//   the bootstrap ops themselves).
// - Failures: a kernel reports a run-time failure through TeamContext::fail (custom ops whose
//   code throws, ops/custom_op.h function_kernel); the run stops running ops, finishes its
//   bookkeeping and run() returns the error naming the node. cancel() does the same for a run in
//   flight (Session destruction). The runtime stays usable for the next run. An exception that
//   escapes an executor thread's loop is caught there: the runtime reports it and refuses later
//   runs instead of terminating the process.
// - Idle threads spin for a bounded budget, then sleep on a futex (engine/parker.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "engine/node_runner.h"
#include "engine/parker.h"
#include "engine/placement.h"
#include "engine/policy.h"
#include "engine/thread_binder.h"
#include "engine/trace.h"

namespace graphi::engine {

struct RuntimeOptions {
  int executors = 1;
  int threads = 1;
  Policy policy = Policy::kCriticalPath;
  int ring_capacity = 1;
  // Bind team members to the placement's cores. With pin = false threads float (useful when
  // oversubscribing on purpose, e.g. tests of 8x1 on 2 cores).
  bool pin = true;
  // An executor whose finished op makes exactly one op ready runs it next itself (cpf, fifo).
  bool local_continuation = true;
  // Scheduler role: nullopt = decide from the placement (client thread iff a spare core).
  std::optional<bool> dedicated_scheduler;
  std::chrono::microseconds spin_budget = kDefaultSpinBudget;
  // Bootstrap executor (seed 002 section 5.2): small ops ready at the start (constants, shape
  // bookkeeping) and the small ops they make ready run on a light-weight single-thread executor
  // of their own, pinned to the placement's reserved bootstrap core, concurrently with the
  // dispatch of the other start ops. nullopt: when the placement reserves a bootstrap core (and
  // the plan has such ops); else the client thread runs them before dispatch (small machines).
  // true: a thread of its own even without a reserved core (unpinned); false: never.
  std::optional<bool> bootstrap_executor;
  // Count executions per op (exactly-once checks in tests); off by default (one atomic per op).
  bool count_executions = false;
  // Levels for cpf's ready heaps instead of the plan's (one per node, e.g. from measured costs:
  // SessionOptions::node_costs); empty = plan.levels().
  std::vector<double> levels;
  // Where executors run; required when pin is true. The binder applies it (HwlocBinder for
  // real, RecordingBinder in tests). Both must outlive the runtime.
  const Placement* placement = nullptr;
  ThreadBinder* binder = nullptr;
};

class ParallelRuntime {
 public:
  // Starts the executors (threads and teams, pinned) for `plan`, which must outlive the runtime.
  // Errors: invalid options, pinning failures (naming the executor, member and core).
  static Result<std::unique_ptr<ParallelRuntime>> create(const Plan& plan,
                                                         const RuntimeOptions& options);
  // Stops and joins every executor thread. Must not be called from an executor thread.
  ~ParallelRuntime();

  // Runs every node once with these slot tables; returns when all have run, or the error of
  // the first op that failed (naming the node; later ops are skipped) or of cancel(). Not
  // reentrant: the Session serializes calls.
  Status run(SlotTables slots);
  // Any thread: the run in flight (if any) stops running ops and returns an error, and so does
  // every later run. Used by the Session's destructor to end a run in flight quickly.
  void cancel();

  // Record a RunTrace of every following run (op spans per executor, the scheduler role's
  // hand-offs, steps and idle waits). Off: one predictable branch per op. Between runs only.
  void set_tracing(bool on);
  // The last run's trace (empty before the first traced run). Between runs only.
  void last_trace(RunTrace& out) const;

  const RuntimeOptions& options() const;
  bool dedicated_scheduler() const;
  // Whether bootstrap ops run on a thread of their own (RuntimeOptions::bootstrap_executor), and
  // that thread's OS id (0 without one).
  bool bootstrap_thread() const;
  pid_t bootstrap_thread_id() const;
  // Whether the client thread sleeps through each run on executor 0's core (no core of its own
  // and not playing executor 0: teams of k > 1, or shared-queue), and how many times executor 0
  // met a finished run by sleeping at once instead of spinning its budget there (at least once
  // per run then; 0 otherwise): the woken client gets the core back without waiting.
  bool client_sleeps() const;
  uint64_t hand_backs() const;
  // After a run with count_executions: how many times each op ran in that run.
  std::vector<uint32_t> execution_counts() const;
  // OS thread ids of each executor's team members (member i at [e][i]), and the CPU each member
  // observed with sched_getcpu() right after binding.
  std::vector<std::vector<pid_t>> team_thread_ids() const;
  std::vector<std::vector<int>> team_cpus() const;
  // Asks every team member for its current OS thread id by running one empty region on each
  // executor (tests check teams keep their threads across ops).
  std::vector<std::vector<pid_t>> probe_team_thread_ids();

 private:
  ParallelRuntime();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphi::engine
