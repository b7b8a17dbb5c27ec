// Sequential reference executor and Session (see session.h). Nodes run one at a time in the
// Plan's topological order on the calling thread's OpenMP team; a run that starts while other
// sequential runs of the process hold the CPUs gets a team of 1 (engine/run_width.h, the
// default), and with GRAPHI_SHARED_TEAMS=1 teams of k > 1 run on the process-wide leader thread
// for k (engine/team_leader.h). This is the correctness oracle for every parallel executor.
//
// Concurrency: one Session owns one set of per-run buffers (arena, scratch, pointer tables), so
// run() holds a mutex for the whole run; concurrent callers wait their turn. For parallel
// serving create several Sessions.
//
// Destruction while runs are in flight on other threads: the destructor cancels the running one
// (the executors stop running ops, its run() returns an error), lets every caller still waiting
// for its turn return the same error, waits until all of them have left run(), then joins the
// executors. A run() call that only starts once the destructor has begun is a use after free
// like any other.
#include "engine/session.h"

#include <omp.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>

#include "engine/adaptive_width.h"
#include "engine/input_binding.h"
#include "engine/node_runner.h"
#include "engine/omp_oversubscription.h"
#include "engine/parallel_runtime.h"
#include "engine/plan.h"
#include "engine/rnn_weights_option.h"
#include "engine/run_width.h"
#include "engine/team_leader.h"
#include "engine/team_spread.h"
#include "engine/topology.h"
#include "graph/memory_budget.h"
#include "ops/scoped_omp_threads.h"

namespace graphi::engine {

using graph::kNoId;

namespace {

// CPU time the whole process has used, ms (AdaptiveWidth's starved-team check).
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

struct FreeAligned {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<void, FreeAligned>;

// 64-byte aligned, uninitialized; nullptr for 0 bytes.
Result<AlignedBytes> alloc_aligned(size_t bytes, const std::string& what) {
  if (bytes == 0) return AlignedBytes();
  size_t rounded = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  void* p = std::aligned_alloc(kArenaAlignment, rounded);
  if (!p)
    return Status(StatusCode::kOutOfMemory,
                  "cannot allocate " + std::to_string(rounded) + " bytes for the " + what);
  return AlignedBytes(p);
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  Policy policy = Policy::kSequential;
  // Parallel policies only. Destroyed in reverse order: the runtime (joins executor threads)
  // before the binder and placement it uses.
  std::optional<Placement> placement;
  std::unique_ptr<HwlocBinder> binder;
  std::unique_ptr<ParallelRuntime> runtime;
  std::optional<OmpThreadClaim> omp_claim;  // this Session's share of the process's OpenMP threads
  // Sequential with threads > 1: the process-wide leader that runs this Session's runs on its
  // team (engine/team_leader.h), shared with every other such Session of the same team size.
  std::shared_ptr<TeamLeader> leader;
  // Sequential without the leader: narrow runs that start while others are in flight
  // (engine/run_width.h; GRAPHI_SHARED_TEAMS unset = auto), up to `cpus` threads in flight.
  bool narrow = false;
  int cpus = 1;
  // ... and the full team or the caller alone by measurement (engine/adaptive_width.h; untraced
  // runs only).
  std::optional<AdaptiveWidth> adaptive;
  Status start_runtime();
  std::atomic<bool> closing{false};  // the destructor has begun: cancel the sequential run
  ops::KernelFailure failure;        // run-time op failures of the sequential executor
  RunTrace trace;                    // the last run's, when options.trace

  std::shared_ptr<const Plan> plan_ptr;  // read-only; may be shared with other Sessions
  const Plan& plan() const { return *plan_ptr; }
  // Where the values live: the sequential scheduler runs the nodes one at a time in order(),
  // so its arena reuses bytes by last use in that order (smaller); the others need the
  // dependency-safe plan.
  const MemoryPlan& memory() const {
    return policy == Policy::kSequential ? plan().sequential_memory() : plan().memory();
  }

  std::mutex run_mutex;  // serializes run(): the buffers below belong to the run in progress
  // run() calls inside this Session, running or waiting for run_mutex: the destructor waits
  // for them to leave, so a caller queued behind a cancelled run gets an error, not freed memory.
  mutable std::mutex callers_mutex;
  std::condition_variable callers_left;
  int callers = 0;
  AlignedBytes arena;
  AlignedBytes scratch;
  // Buffers of every node slot, laid out like plan().in_offsets()/out_offsets(). Arena and
  // constant pointers are fixed at create(); graph-input slots are patched on every run.
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  struct InputSlot {
    uint32_t slot;         // index into in_ptrs
    uint32_t input_index;  // position in graph().inputs()
  };
  std::vector<InputSlot> input_slots;
  std::unordered_map<std::string, uint32_t> input_index;  // graph input name -> position

  const void* value_ptr(ValueId v) const {
    const MemoryPlan& m = memory();
    switch (m.storage[v]) {
      case Storage::kArena:
        return static_cast<const char*>(arena.get()) + m.offset[v];
      case Storage::kConstant:
        return plan().graph().value(v).data->data();
      case Storage::kCallerInput:
        return nullptr;
    }
    return nullptr;
  }

  Status bind_inputs(const NamedTensors& inputs, std::vector<const Tensor*>& bound) const;
  template <typename In, typename Take>
  Status run_bound(const In& in, const Take& take);
  Status execute(int threads);
};

Session::Session() : impl_(std::make_unique<Impl>()) {}
void Session::cancel() {
  impl_->closing.store(true, std::memory_order_seq_cst);
  if (impl_->runtime) impl_->runtime->cancel();
}

Session::~Session() {
  if (!impl_) return;
  cancel();
  // Wait for the runs in flight and the callers queued behind them to return; the members
  // (runtime: joins executors) go after.
  {
    std::unique_lock<std::mutex> lock(impl_->callers_mutex);
    impl_->callers_left.wait(lock, [&] { return impl_->callers == 0; });
  }
  std::lock_guard<std::mutex> lock(impl_->run_mutex);
}

int Session::run_calls() const {
  std::lock_guard<std::mutex> lock(impl_->callers_mutex);
  return impl_->callers;
}

const graph::Graph& Session::graph() const { return impl_->plan().graph(); }
const Plan& Session::plan() const { return impl_->plan(); }
std::shared_ptr<const Plan> Session::shared_plan() const { return impl_->plan_ptr; }
const SessionOptions& Session::options() const { return impl_->options; }
const MemoryPlan& Session::memory() const { return impl_->memory(); }
const Placement* Session::placement() const {
  return impl_->placement ? &*impl_->placement : nullptr;
}
ParallelRuntime* Session::runtime() const { return impl_->runtime.get(); }
std::vector<uint32_t> Session::execution_counts() const {
  return impl_->runtime ? impl_->runtime->execution_counts() : std::vector<uint32_t>{};
}

RunTrace Session::last_trace() const {
  const Impl& im = *impl_;
  if (!im.options.trace) return {};
  if (!im.runtime) return im.trace.run_end_ns ? im.trace : RunTrace{};
  RunTrace t;
  im.runtime->last_trace(t);
  return t;
}

void Session::set_tracing(bool on) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lock(im.run_mutex);  // between runs
  im.options.trace = on;
  im.trace.ops.clear();
  im.trace.run_start_ns = im.trace.run_end_ns = 0;
  if (im.runtime)
    im.runtime->set_tracing(on);
  else if (on)
    im.trace.ops.reserve(im.plan().num_nodes());
}

std::string Session::config_summary() const {
  const Impl& im = *impl_;
  const std::string policy = policy_name(im.policy);
  const std::string split =
      std::to_string(im.options.executors) + "x" + std::to_string(im.options.threads);
  if (!im.runtime) return policy + " " + split + " on the calling thread";
  if (im.placement) {
    std::string s = policy + " " + im.placement->summary();
    if (im.runtime->dedicated_scheduler() && !im.placement->scheduler)
      s += "; scheduler on the client thread (forced)";
    if (!im.runtime->dedicated_scheduler() && im.placement->scheduler)
      s += " (unused: one executor of one thread runs solo, the client thread plays it)";
    return s;
  }
  return policy + " " + split + " unpinned" +
         (im.runtime->dedicated_scheduler() ? "; scheduler on the client thread"
                                            : "; scheduler role inside the executors");
}

static Status check_options(const SessionOptions& o) {
  if (o.threads < 1)
    return Status::invalid_argument("session options: threads must be at least 1, got " +
                                    std::to_string(o.threads));
  if (o.executors < 1)
    return Status::invalid_argument("session options: executors must be at least 1, got " +
                                    std::to_string(o.executors));
  std::optional<Policy> policy = parse_policy(o.scheduler);
  if (!policy)
    return Status::invalid_argument("session options: unknown scheduler '" + o.scheduler +
                                    "' (available: " + kPolicyNames + ")");
  if (*policy == Policy::kSequential && o.executors != 1)
    return Status::invalid_argument(
        "session options: the sequential scheduler runs exactly 1 executor, got executors = " +
        std::to_string(o.executors) + " (use cpf, fifo or shared-queue)");
  if (o.ring_capacity < 1 || o.ring_capacity > (1 << 20))
    return Status::invalid_argument("session options: ring_capacity must be in [1, 2^20], got " +
                                    std::to_string(o.ring_capacity));
  for (size_t i = 0; i < o.node_costs.size(); ++i)
    if (!(o.node_costs[i] >= 0) || !std::isfinite(o.node_costs[i]))
      return Status::invalid_argument("session options: node_costs[" + std::to_string(i) +
                                      "] must be a finite cost >= 0 (microseconds), got " +
                                      std::to_string(o.node_costs[i]));
  // The sequential executor runs on the caller's thread and leaves its placement to the caller,
  // so `pin` only matters for the parallel policies.
  return Status::ok();
}

namespace {

// The budget (SessionOptions::max_memory): an explicit limit bounds the whole model (weights
// already loaded + what the Session allocates now); without one, what is allocated now must fit
// in the memory the machine has available.
Status check_planned_memory(const Plan& plan, const MemoryPlan& memory, const SessionOptions& o) {
  const graph::Graph& g = plan.graph();
  uint64_t weights = 0;
  for (const graph::Value& v : g.values())
    if (v.kind == graph::ValueKind::kConstant) weights += v.desc.bytes();
  const uint64_t arena = memory.peak_bytes;
  const uint64_t scratch =
      plan.scratch_bytes() * static_cast<uint64_t>(std::max(o.executors, 1) + 1);
  const std::string parts =
      "arena " + graph::human_bytes(arena) + " + kernel scratch " + graph::human_bytes(scratch);
  if (o.max_memory)
    return graph::check_memory(
        weights + arena + scratch, o.max_memory,
        g.source() + ": the model (weights " + graph::human_bytes(weights) + " + " + parts + ")");
  return graph::check_memory(arena + scratch, 0,
                             g.source() + ": the planned memory (" + parts + ")");
}

}  // namespace

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const graph::Graph> graph,
                                                 const SessionOptions& options) {
  if (!graph) return Status::invalid_argument("Session::create: no graph");
  GRAPHI_RETURN_IF_ERROR(check_options(options));
  GRAPHI_ASSIGN_OR_RETURN(graph, apply_rnn_weights(std::move(graph), options.rnn_weights));
  GRAPHI_ASSIGN_OR_RETURN(Plan plan, compile(std::move(graph), options.threads));
  // The Plan is this Session's own: it carries the measured levels too (plan().levels()).
  if (!options.node_costs.empty() && options.node_costs.size() == plan.num_nodes())
    plan.set_levels(compute_levels(plan, options.node_costs));
  return create(std::make_shared<const Plan>(std::move(plan)), options);
}

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Plan> plan_ptr,
                                                 const SessionOptions& options) {
  if (!plan_ptr) return Status::invalid_argument("Session::create: no plan");
  GRAPHI_RETURN_IF_ERROR(check_options(options));
  if (plan_ptr->team_size() != options.threads)
    return Status::invalid_argument(
        "session options: threads = " + std::to_string(options.threads) +
        ", but the plan's kernels were compiled for teams of " +
        std::to_string(plan_ptr->team_size()));
  if (!options.node_costs.empty() && options.node_costs.size() != plan_ptr->num_nodes())
    return Status::invalid_argument(
        "session options: node_costs has " + std::to_string(options.node_costs.size()) +
        " entries, but " + plan_ptr->graph().source() + " compiles to " +
        std::to_string(plan_ptr->num_nodes()) + " nodes (one cost per Plan node)");
  std::unique_ptr<Session> s(new Session());
  Impl& im = *s->impl_;
  im.options = options;
  im.plan_ptr = std::move(plan_ptr);
  const Plan& plan = im.plan();
  const graph::Graph& g = plan.graph();

  im.policy = *parse_policy(options.scheduler);  // checked by check_options
  GRAPHI_RETURN_IF_ERROR(check_planned_memory(plan, im.memory(), options));
  GRAPHI_ASSIGN_OR_RETURN(im.arena,
                          alloc_aligned(im.memory().peak_bytes, "arena of " + g.source()));
  GRAPHI_ASSIGN_OR_RETURN(im.scratch,
                          alloc_aligned(plan.scratch_bytes(), "kernel scratch of " + g.source()));

  std::vector<uint32_t> input_pos(g.num_values(), UINT32_MAX);
  for (uint32_t i = 0; i < g.inputs().size(); ++i) {
    input_pos[g.inputs()[i]] = i;
    im.input_index.emplace(g.value(g.inputs()[i]).name, i);
  }
  im.in_ptrs.assign(plan.in_offsets().back(), nullptr);
  im.out_ptrs.assign(plan.out_offsets().back(), nullptr);
  for (NodeId n = 0; n < plan.num_nodes(); ++n) {
    std::span<const ValueId> ins = plan.inputs(n), outs = plan.outputs(n);
    for (size_t k = 0; k < ins.size(); ++k) {
      uint32_t slot = plan.in_offsets()[n] + static_cast<uint32_t>(k);
      if (ins[k] == kNoId) continue;
      if (im.memory().storage[ins[k]] == Storage::kCallerInput)
        im.input_slots.push_back({slot, input_pos[ins[k]]});
      else
        im.in_ptrs[slot] = im.value_ptr(ins[k]);
    }
    for (size_t k = 0; k < outs.size(); ++k)
      im.out_ptrs[plan.out_offsets()[n] + k] = const_cast<void*>(im.value_ptr(outs[k]));
  }
  GRAPHI_RETURN_IF_ERROR(im.start_runtime());
  return s;
}

Status Session::Impl::bind_inputs(const NamedTensors& inputs,
                                  std::vector<const Tensor*>& bound) const {
  const graph::Graph& g = plan().graph();
  return bind_named_inputs(
      g.source(), g.inputs().size(),
      [&](size_t i) -> const std::string& { return g.value(g.inputs()[i]).name; },
      [&](size_t i) -> const TensorDesc& { return g.value(g.inputs()[i]).desc; },
      [&](const std::string& name) -> size_t {
        auto it = input_index.find(name);
        return it == input_index.end() ? g.inputs().size() : it->second;
      },
      inputs, bound);
}

Status Session::Impl::execute(int threads) {
  // The calling thread's OpenMP ICV may be anything (an embedding framework may have changed
  // it); kernels that open their own region (oneDNN) size their team from it. The caller's
  // value comes back after the run (PyTorch's torch.get_num_threads() is this ICV: dynamo
  // guards on it and recompiled every graph graphi had run with another team size).
  ops::ScopedOmpThreads omp_threads(threads);
  const SlotTables slots{in_ptrs.data(), out_ptrs.data()};
  const graph::Graph& g = plan().graph();
  failure.clear();
  const bool tracing = options.trace;
  if (tracing) {
    trace.ops.clear();  // reserved by set_tracing / create: no allocation per op
    trace.run_end_ns = 0;
    trace.run_start_ns = trace_now_ns();
  }
  for (NodeId n : plan().order()) {
    if (closing.load(std::memory_order_relaxed))
      return Status::invalid_argument(g.source() +
                                      ": run cancelled: the Session is being destroyed");
    if (tracing) [[unlikely]] {
      const uint64_t t0 = trace_now_ns();
      run_node(plan(), n, slots, threads, scratch.get(), plan().scratch_bytes(), &failure);
      trace.ops.push_back({n, 0, plan().node_threads(n, threads), t0, trace_now_ns()});
    } else {
      run_node(plan(), n, slots, threads, scratch.get(), plan().scratch_bytes(), &failure);
    }
    if (failure.failed()) {
      Status st = node_failure(plan(), n, failure);
      failure.clear();
      return st;
    }
  }
  if (tracing) trace.run_end_ns = trace_now_ns();
  return Status::ok();
}

Status Session::Impl::start_runtime() {
  policy = *parse_policy(options.scheduler);
  if (policy == Policy::kSequential) {
    const TeamSharing sharing = team_sharing_from_env();
    if (options.threads > 1 && sharing == TeamSharing::kLeader) {
      leader = TeamLeader::acquire(options.threads);  // holds the OpenMP claim for all of them
    } else {
      omp_claim.emplace(1, options.threads, false);
      narrow = sharing == TeamSharing::kAuto;
      cpus = allowed_cpu_count();
      if (narrow && options.threads > 1 && AdaptiveWidth::enabled_by_env())
        adaptive.emplace(options.threads);
    }
    trace.executors = 1;
    trace.threads = options.threads;
    trace.scheduler = policy_name(policy);
    if (options.trace) trace.ops.reserve(plan().num_nodes());
    return Status::ok();
  }
  const Plan& p = plan();
  RuntimeOptions ro;
  ro.executors = options.executors;
  ro.threads = options.threads;
  ro.policy = policy;
  ro.ring_capacity = options.ring_capacity;
  ro.pin = options.pin;
  ro.local_continuation = options.local_continuation;
  ro.count_executions = options.count_executions;
  ro.dedicated_scheduler = options.dedicated_scheduler;
  ro.bootstrap_executor = options.bootstrap_executor;
  // A shared Plan keeps its own levels; measured costs reach the scheduler through these.
  if (!options.node_costs.empty()) ro.levels = compute_levels(p, options.node_costs);
  if (options.pin) {
    static std::once_flag warned;
    if (auto w = omp_affinity_env_warning())
      std::call_once(warned, [&] { std::fprintf(stderr, "graphi: warning: %s\n", w->c_str()); });
    GRAPHI_ASSIGN_OR_RETURN(Topology topo, Topology::load_this_machine(options.cpuset));
    PlacementRequest req;
    req.executors = options.executors;
    req.threads = options.threads;
    Result<Placement> pl = place_executors(topo, req);
    if (!pl.is_ok())
      return pl.status().with_context(p.graph().source() + ": cannot place " +
                                      std::to_string(options.executors) + " executors x " +
                                      std::to_string(options.threads) +
                                      " threads (pin = false runs unpinned)");
    placement = std::move(pl).value();
    GRAPHI_ASSIGN_OR_RETURN(binder, HwlocBinder::create());
    ro.placement = &*placement;
    ro.binder = binder.get();
  } else if (!options.cpuset.empty()) {
    return Status::invalid_argument("session options: cpuset needs pin = true");
  }
  GRAPHI_ASSIGN_OR_RETURN(runtime, ParallelRuntime::create(p, ro));
  if (options.trace) runtime->set_tracing(true);
  // Executor threads are new OpenMP masters; a dedicated scheduler spins on a core of its own.
  omp_claim.emplace(options.executors, options.threads, runtime->dedicated_scheduler());
  return Status::ok();
}

// Runs the bound graph once: `in(k)` is graph input k's data; then hands each graph output's
// bytes (in the arena, or the input itself) to `take(k, src)`. Holds the run lock throughout;
// the pointers are unbound before it returns. Templates, not std::function: no allocation.
template <typename In, typename Take>
Status Session::Impl::run_bound(const In& in, const Take& take) {
  Impl& im = *this;
  const graph::Graph& g = im.plan().graph();
  {
    std::lock_guard<std::mutex> lock(im.callers_mutex);
    ++im.callers;
  }
  struct Leave {  // declared before the run lock: released after it
    Impl& im;
    ~Leave() {
      std::lock_guard<std::mutex> lock(im.callers_mutex);
      if (--im.callers == 0) im.callers_left.notify_all();
    }
  } leave{im};
  std::lock_guard<std::mutex> lock(im.run_mutex);
  if (im.closing.load(std::memory_order_acquire))
    return Status::invalid_argument(g.source() + ": run cancelled: the Session is being destroyed");
  // Caller buffers must not be referenced after the run returns.
  struct Unbind {
    Impl& im;
    ~Unbind() {
      for (const Impl::InputSlot& s : im.input_slots) im.in_ptrs[s.slot] = nullptr;
    }
  } unbind{im};
  for (const Impl::InputSlot& s : im.input_slots) im.in_ptrs[s.slot] = in(s.input_index);

  if (im.runtime) {
    GRAPHI_RETURN_IF_ERROR(im.runtime->run(SlotTables{im.in_ptrs.data(), im.out_ptrs.data()}));
  } else {
    Status st;
    if (im.leader) {
      im.leader->run([&] { st = im.execute(im.options.threads); });
    } else {
      using Clock = AdaptiveWidth::Clock;
      // A traced run (the profiler's per-op costs) keeps the full team.
      const bool adapt = im.adaptive && !im.options.trace;
      const Clock::time_point start = adapt ? Clock::now() : Clock::time_point{};
      const double cpu_start = adapt ? process_cpu_ms() : 0;
      const RunWidth width(adapt ? im.adaptive->choose(start) : im.options.threads, im.cpus,
                           im.narrow);
      // The calling thread's OpenMP team (each master thread has its own) is spread over the
      // CPUs once, before its first run (engine/team_spread.h).
      static thread_local int spread_width = 1;
      if (width.threads() > spread_width) {
        spread_openmp_team(width.threads());
        spread_width = width.threads();
      }
      st = im.execute(width.threads());
      if (adapt && st.is_ok()) {
        const Clock::time_point end = Clock::now();
        im.adaptive->record(width.threads(),
                            std::chrono::duration<double, std::milli>(end - start).count(), end,
                            process_cpu_ms() - cpu_start);
      }
    }
    GRAPHI_RETURN_IF_ERROR(st);
  }
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const ValueId v = g.outputs()[k];
    const graph::Value& val = g.value(v);
    take(k, im.memory().storage[v] == Storage::kCallerInput ? in(im.input_index.at(val.name))
                                                            : im.value_ptr(v));
  }
  return Status::ok();
}

Result<NamedTensors> Session::run(const NamedTensors& inputs) {
  Impl& im = *impl_;
  const graph::Graph& g = im.plan().graph();
  std::vector<const Tensor*> bound;
  {
    // bind_inputs reads only the graph's descs: checked before the run lock is taken.
    GRAPHI_RETURN_IF_ERROR(im.bind_inputs(inputs, bound));
  }
  NamedTensors out;
  bool out_of_memory = false;
  auto in = [&](size_t k) -> const void* { return bound[k]->data(); };
  GRAPHI_RETURN_IF_ERROR(im.run_bound(in, [&](size_t k, const void* src) {
    if (out_of_memory) return;
    const graph::Value& val = g.value(g.outputs()[k]);
    try {
      if (k == 0) out.reserve(g.outputs().size());
      Tensor t(val.desc);
      std::memcpy(t.data(), src, val.desc.bytes());
      out.emplace_back(val.name, std::move(t));
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
  }));
  if (out_of_memory || out.size() != g.outputs().size())
    return Status(StatusCode::kOutOfMemory, g.source() + ": cannot allocate the output tensors");
  return out;
}

Status Session::run_buffers(std::span<const void* const> inputs, std::span<void* const> outputs) {
  Impl& im = *impl_;
  const graph::Graph& g = im.plan().graph();
  if (inputs.size() != g.inputs().size() || outputs.size() != g.outputs().size())
    return Status::invalid_argument(
        g.source() + ": run_buffers: " + std::to_string(inputs.size()) + " inputs and " +
        std::to_string(outputs.size()) + " outputs given, the graph has " +
        std::to_string(g.inputs().size()) + " and " + std::to_string(g.outputs().size()));
  auto in = [&](size_t k) { return inputs[k]; };
  return im.run_bound(in, [&](size_t k, const void* src) {
    std::memcpy(outputs[k], src, g.value(g.outputs()[k]).desc.bytes());
  });
}

}  // namespace graphi::engine
