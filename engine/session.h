// Session: the engine's run API. Owns a compiled Plan (kernels, memory plan) and runs it.
// Front ends (CLI, C API, Python) and the profiler use this; it knows nothing of files.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/trace.h"
#include "graph/graph.h"

namespace graphi::engine {

class Plan;
class ParallelRuntime;
struct MemoryPlan;
struct Placement;

struct SessionOptions {
  int executors = 1;  // n executors ...
  int threads = 1;    // ... x k threads each (one team per executor)
  // cpf (critical-path first), fifo, shared-queue (the TensorFlow/MXNet baseline) or sequential
  // (the reference executor: one team on the calling thread, topological order; executors = 1).
  std::string scheduler = "sequential";
  int ring_capacity = 1;  // scheduler -> executor ring (the paper found 1 best)
  // Pin each team member to its own core (hwloc), whole tiles per executor, inside the process's
  // allowed cpuset. A split that does not fit is an error; pin = false lets threads float (and
  // allows oversubscribing the machine on purpose).
  bool pin = true;
  std::string cpuset;  // restrict placement further ("0-3,8"); empty = the process's allowed set
  // Who plays the scheduler: nullopt = the client thread when the machine has a spare core,
  // else the executors take turns (small machines). Tests force either.
  std::optional<bool> dedicated_scheduler;
  bool local_continuation = true;  // an op that makes exactly one op ready hands it to itself
  bool count_executions = false;   // per-op execution counters (tests: exactly once)
  // Bootstrap ops on a thread of their own (RuntimeOptions::bootstrap_executor): nullopt = when
  // the placement reserves a bootstrap core (n*k + 2 usable cores); parallel policies only.
  std::optional<bool> bootstrap_executor;
  bool trace = false;  // record a RunTrace per run (off: one predictable branch per op)
  // Optional, one per Plan node (microseconds, e.g. measured by the profiler): the levels the
  // cpf scheduler orders ready ops by come from these instead of the ops' cost hints.
  std::vector<double> node_costs;
  // Storage precision of the fused LSTM/GRU/RNN weights: "" or "fp32" (default), "bf16",
  // "int8" (opt-in; engine/rnn_weights_option.h, docs/RNN_KERNELS.md). Applied when a Session is
  // created from a graph (a Plan is already compiled).
  std::string rnn_weights;
  // Memory budget in bytes (graph/memory_budget.h): a plan whose weights + arena + kernel
  // scratch exceed it is refused before the arena is allocated, naming the model and the
  // amounts. 0: the arena and scratch must fit in the memory the machine has available.
  uint64_t max_memory = 0;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Session {
 public:
  // Compiles `graph` (kernel selection, weight packing, memory plan). Errors name the node.
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const graph::Graph> graph,
                                                 const SessionOptions& options = {});
  // Runs an already compiled Plan (e.g. several Sessions serving in parallel share one Plan and
  // its packed weights without copying them). options.threads must equal plan->team_size().
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Plan> plan,
                                                 const SessionOptions& options = {});
  // Safe while run() is in flight on other threads: the running call is cancelled and the calls
  // waiting for their turn do not run; each returns an error ("run cancelled"). The destructor
  // waits for all of them to return and joins every executor thread. A run() call that starts
  // after destruction has begun is a use after free like any other.
  ~Session();
  // What the destructor does first, without destroying: cancels the run in flight (its run()
  // returns "run cancelled" once the ops already started finish) and makes every run() call
  // from now on, queued or new, return the same error without running. For owners that must
  // stop the runs before they may destroy the Session (engine/api: callers still copying their
  // inputs). Irreversible; safe from any thread.
  void cancel();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the graph once. `inputs` holds one tensor per graph input, by name, in any order; a
  // missing, unknown or duplicated name, or a wrong dtype or shape, is an error that names the
  // input and both shapes. The caller's tensors are only read. Returns the graph outputs in
  // the graph's output order. Thread-safe: concurrent calls are serialized.
  // An op that fails at run time (a custom op whose code throws, ops/custom_op.h) makes run()
  // return an error naming the node; the Session stays usable.
  Result<NamedTensors> run(const NamedTensors& inputs);
  // run() on the caller's buffers, unchecked: inputs[k] holds graph input k (graph().inputs()
  // order, its desc's bytes), outputs[k] receives graph output k. For front ends that checked
  // the data already (engine/batch_slices.h: one slice of a batch, no copies).
  Status run_buffers(std::span<const void* const> inputs, std::span<void* const> outputs);
  // How many run() calls are inside this Session now: the one running plus those waiting for
  // their turn (a queue depth for serving; owners that destroy a Session under load use it to
  // know their callers have entered run(), tests/stress).
  int run_calls() const;

  const graph::Graph& graph() const;
  const Plan& plan() const;
  std::shared_ptr<const Plan> shared_plan() const;
  const SessionOptions& options() const;
  // The memory plan of this Session's arena: plan().sequential_memory() on the sequential
  // scheduler (nodes one at a time in order), plan().memory() on the parallel ones.
  const MemoryPlan& memory() const;

  // The executors' placement (core sets), or nullptr for the sequential executor or pin = false.
  const Placement* placement() const;
  // "2x1 cpf on cores {0} {1}; scheduler inside the executors" (for logs and --json).
  std::string config_summary() const;
  // After a run with count_executions: how often each node ran in the last run (else empty).
  std::vector<uint32_t> execution_counts() const;
  // The parallel runtime, or nullptr for the sequential executor (tests, profiler).
  ParallelRuntime* runtime() const;
  // The last run's trace (empty RunTrace when options.trace is false or before the first run).
  RunTrace last_trace() const;
  void set_tracing(bool on);  // toggle between runs (not during one)

 private:
  Session();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphi::engine
