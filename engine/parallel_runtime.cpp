#include "engine/parallel_runtime.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "engine/parker.h"
#include "engine/ready_heap.h"
#include "engine/ready_order.h"
#include "engine/spsc_ring.h"

namespace graphi::engine {

namespace {

// Ring items besides op ids. Op ids are < 2^31 (create() checks).
constexpr uint32_t kDoneBit = 0x80000000u;  // report: kDoneBit | c = c inbox items finished
constexpr uint32_t kStop = 0xFFFFFFFEu;     // inbox: leave the loop
constexpr uint32_t kProbe = 0xFFFFFFFDu;    // inbox: record the team's thread ids
constexpr size_t kMaxNodes = 0x7FFFFFF0u;
struct FreeAligned {
  void operator()(void* p) const { std::free(p); }
};

size_t pow2_at_least(size_t n) {
  size_t c = 1;
  while (c < n) c <<= 1;
  return c;
}

// Moves the calling (client) thread to a core of the placement for its lifetime (the scheduler's
// reserved core, or executor 0's when the client plays executor 0 or sleeps through the run
// there) and puts its affinity back afterwards. No-op without pinning or without such a core.
class ClientPin {
 public:
  ClientPin(const RuntimeOptions& o, bool executor0) {
    if (!o.pin || !o.placement || !o.binder) return;
    if (!executor0 && !o.placement->scheduler) return;
    if (executor0 && (o.placement->teams.empty() || o.placement->teams[0].pus.empty())) return;
    const int pu = executor0 ? o.placement->teams[0].pus[0] : o.placement->scheduler->pu;
    // Playing executor 0 on its core already (the usual case from the second run on: the thread
    // stays where the last run put it): leave the affinity alone. Pinning and restoring cost
    // 0.7-3.3 us + 0.75 us of syscalls per run, 1.7% of a 220 us run (LSTM-shaped DAG at 1 us ops,
    // 2x1: 558 -> 549 ns/op; empty ops 30.7 -> 23.7). The kernel has no reason to move it
    // during the run: executor 1 is pinned to the other core and executor 0's own thread sleeps.
    // A client sleeping through the run wakes where it slept (its previous CPU, also the
    // waker's), so it stays there too (measured, 1x2 cpf, 10-op CNN: pinning and restoring
    // every run 0.053 ms against 0.046 for this rule; never pinned, 3 of 5 rounds 8 ms).
    if (executor0 && sched_getcpu() == pu) return;
    CPU_ZERO(&saved_);
    if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
    active_ = o.binder->bind_current_thread(std::span<const int>(&pu, 1)).is_ok();
  }
  ~ClientPin() {
    if (active_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
  }
  ClientPin(const ClientPin&) = delete;
  ClientPin& operator=(const ClientPin&) = delete;

 private:
  cpu_set_t saved_;
  bool active_ = false;
};

}  // namespace

struct alignas(64) Executor {
  Executor(int id_, size_t inbox_capacity, size_t report_capacity)
      : id(id_), bit(uint64_t{1} << (id_ % 64)), inbox(inbox_capacity), reports(report_capacity) {}
  int id;
  uint64_t bit;                // this executor's bit in idle_hint
  SpscRing<uint32_t> inbox;    // scheduler role -> executor: op ids and commands
  SpscRing<uint32_t> reports;  // executor -> scheduler role: published ready ops, done markers
  Parker parker;               // the executor sleeps here when idle
  std::thread thread;
  std::unique_ptr<void, FreeAligned> scratch;
  std::vector<pid_t> tids;
  std::vector<int> cpus;
  // Executor-private per-run state (only this thread touches it during a run).
  ReadyHeap heap;                                // ready ops this executor keeps for itself, by key
  std::vector<graph::NodeId> inline_ops, ready;  // small ops to run inline; ops to publish
  uint32_t taken = 0;                            // assignments taken and not yet reported done
  uint64_t seen_posted = 0;    // `posted` when this executor last made sure of a step
  size_t ran = 0;              // ops run and not yet subtracted from `remaining`
  ops::KernelFailure failure;  // run-time failures of this executor's ops
  double op_ns = 0;            // running mean time per op (0: nothing measured yet)
  Status start_status;
  std::atomic<bool> probed{false};
  // Executor 0 when the client thread plays it (see client_drives): its own thread only serves
  // probe requests and the stop, sleeping on cmd_parker.
  std::atomic<bool> probe_request{false};
  Parker cmd_parker;
  std::vector<OpSpan> spans;  // tracing: this executor's ops of the last run (reserved n)
};

struct ParallelRuntime::Impl {
  const Plan* plan = nullptr;
  RuntimeOptions opt;
  bool dedicated = false;
  bool shared = false;  // shared-queue policy
  // Small machines (no spare core, teams of 1): the client thread plays executor 0 during run()
  // on executor 0's core instead of sleeping while two executors work. A third thread on two
  // cores would have to sleep, and waking it costs ~30-80 us per run (measured: 80 us of every
  // 315 us run of the LSTM-shaped DAG). oneTBB's calling thread joins its arena the same way.
  // With threads > 1 executor 0's thread leads an OpenMP team, so the client cannot stand in.
  bool client_drives = false;
  // The client thread neither schedules nor plays an executor: it sleeps until the run is done
  // (no core of its own; teams of k > 1 or shared-queue). It then sleeps on executor 0's leader
  // core, and executor 0, once the run is done, sleeps at once instead of spinning its budget
  // there: the woken client needs that core to return to the caller. Spinning cost every run a
  // ~50 us wait (the spin budget, then the yield) and, when the client woke on a team member's
  // core instead, a scheduler tick (4 ms) behind libgomp's spin-wait.
  bool client_sleeps = false;
  std::atomic<uint64_t> hand_backs{0};  // runs whose end executor 0 met by sleeping at once
  size_t inbox_capacity = 1;
  std::vector<std::unique_ptr<Executor>> ex;
  std::vector<double> keys;  // heap key per op: level (cpf) or -position (fifo)
  std::unique_ptr<void, FreeAligned> client_scratch;  // for bootstrap ops
  ops::KernelFailure client_failure;                  // failures of bootstrap ops

  // Bootstrap executor (RuntimeOptions::bootstrap_executor): whoever runs the bootstrap ops (the
  // bootstrap thread, else the client) collects the non-small ops they make ready in boot_ready.
  bool boot_thread_on = false;
  std::thread boot_thread;
  Parker boot_parker;
  alignas(64) std::atomic<uint64_t> boot_request{0};  // runs asked of the bootstrap thread
  std::atomic<bool> boot_started{false};
  Status boot_start_status;
  pid_t boot_tid = 0;
  std::vector<graph::NodeId> boot_inline, boot_ready;

  // Tracing (set_tracing): buffers reserved when it is switched on, so a traced run allocates
  // nothing per op; spans beyond a buffer's capacity are dropped and counted, never grown.
  bool tracing = false;
  uint64_t run_start_ns = 0, run_end_ns = 0;
  std::vector<OpSpan> boot_spans;          // bootstrap ops (client or bootstrap thread)
  std::vector<SchedulerSpan> sched_spans;  // the role's steps and hand-offs (under sched_lock)
  std::vector<SchedulerSpan> client_idle;  // the dedicated client scheduler's waits
  void record_sched(std::vector<SchedulerSpan>& v, SchedulerSpan::Kind kind, int32_t executor,
                    uint64_t t0) {
    if (v.size() < v.capacity()) v.push_back({kind, executor, t0, trace_now_ns()});
  }

  // Per-run state.
  SlotTables slots;
  // Unfinished predecessors per op. Plain words, accessed through std::atomic_ref during a run
  // and reset with one memcpy between runs (no thread touches them then): a loop of atomic
  // stores cost ~5 us per run on 10,000 ops.
  std::unique_ptr<uint32_t[]> pending;
  std::vector<graph::NodeId> start_ops;  // ops with no predecessors, in id order
  std::unique_ptr<std::atomic<uint32_t>[]> counts;
  alignas(64) std::atomic<int64_t> remaining{0};
  std::atomic<bool> done{false};
  Parker done_parker;

  // Failure and cancellation: once `aborted` is set, ops are not run any more (their pending
  // bookkeeping still is, so the run ends normally) and run() returns `error`.
  alignas(64) std::atomic<bool> aborted{false};
  std::atomic<bool> cancelled{false};  // sticky: cancel() was called (Session destruction)
  std::atomic<bool> broken{false};     // an executor thread died: every later run fails
  std::mutex error_mu;
  Status error;

  // Which executors the scheduler role sees idle (bit e % 64), for executors deciding whether
  // to publish surplus ready ops. A hint: written by the role when the idle set changes, read
  // (relaxed) by executors after each op; a stale value only delays or adds a publication.
  alignas(64) std::atomic<uint64_t> idle_hint{0};

  // Scheduler role: owned by the client (dedicated) or by whoever holds sched_lock (embedded).
  alignas(64) std::atomic<bool> sched_lock{false};
  alignas(64) std::atomic<uint64_t> posted{0};  // reports posted; see try_schedule()
  ReadyHeap heap;
  IdleSet idle;
  std::vector<uint32_t> inflight;  // inbox items given to executor e and not reported done
  uint64_t idle_word = 0;          // last value stored to idle_hint

  // Shared-queue policy: one locked FIFO every executor pops (the baseline to beat).
  std::mutex sq_mu;
  std::vector<graph::NodeId> sq;  // each op is pushed once per run: reserve n, no reallocation
  size_t sq_head = 0;
  alignas(64) std::atomic<uint32_t> sq_size{0};

  std::atomic<bool> stopping{false};
  std::atomic<int> started{0};

  void executor_main(Executor& e);
  void bootstrap_main();
  size_t run_bootstrap_op(graph::NodeId s);
  void executor_loop(Executor& e, bool client);
  void command_loop(Executor& e);
  void init_team(Executor& e);
  void run_one(Executor* e, graph::NodeId n, std::vector<graph::NodeId>& inline_ops, void* scratch,
               int threads, ops::KernelFailure& failure, size_t& ran);
  void run_local(Executor& e);
  void publish(Executor& e, size_t count, bool done_marker);
  void finish(size_t ops);
  void fail(graph::NodeId n, const ops::KernelFailure& failure);
  void set_error(Status s);
  bool step(Executor* self);
  void try_schedule(Executor* self);
  void sq_push(const std::vector<graph::NodeId>& ops);
  bool sq_pop(graph::NodeId& n);
};

// Called once an executor has run `ops` ops AND handed on what they made ready, so when the
// count reaches 0 no thread touches this run's state any more and the next run may reset it.
void ParallelRuntime::Impl::finish(size_t ops) {
  if (ops == 0) return;
  // acq_rel: the decrements form one release sequence, so the thread that reaches 0 (and the
  // client acquiring `done`) sees every op's output writes.
  const auto n = static_cast<int64_t>(ops);
  if (remaining.fetch_sub(n, std::memory_order_acq_rel) == n) {
    done.store(true, std::memory_order_release);
    if (client_drives) ex[0]->parker.wake();
    done_parker.wake();
  }
}

void ParallelRuntime::Impl::set_error(Status s) {
  {
    std::lock_guard<std::mutex> lock(error_mu);
    if (error.is_ok()) error = std::move(s);
  }
  aborted.store(true, std::memory_order_seq_cst);
}

void ParallelRuntime::Impl::fail(graph::NodeId n, const ops::KernelFailure& failure) {
  set_error(node_failure(*plan, n, failure));
}

// Runs op n, then the small ops it makes ready (inline, in this thread). Ready ops that are not
// small go to e's heap (e == nullptr: the client's bootstrap, `inline_ops` collects them too).
void ParallelRuntime::Impl::run_one(Executor* e, graph::NodeId n,
                                    std::vector<graph::NodeId>& inline_ops, void* scratch,
                                    int threads, ops::KernelFailure& failure, size_t& ran) {
  const Plan& p = *plan;
  inline_ops.push_back(n);
  while (!inline_ops.empty()) {
    const graph::NodeId m = inline_ops.back();
    inline_ops.pop_back();
    if (counts) counts[m].fetch_add(1, std::memory_order_relaxed);
    if (!aborted.load(std::memory_order_relaxed)) {
      if (tracing) [[unlikely]] {
        const uint64_t t0 = trace_now_ns();
        run_node(p, m, slots, threads, scratch, p.scratch_bytes(), &failure);
        std::vector<OpSpan>& v = e ? e->spans : boot_spans;
        if (v.size() < v.capacity())
          v.push_back({m, e ? static_cast<int32_t>(e->id) : kBootstrapExecutor,
                       p.node_threads(m, threads), t0, trace_now_ns()});
      } else {
        run_node(p, m, slots, threads, scratch, p.scratch_bytes(), &failure);
      }
      if (failure.failed()) {
        fail(m, failure);
        failure.clear();
      }
    }
    for (graph::NodeId s : p.successors(m)) {
      // acq_rel: release publishes m's outputs; the acquire by the last predecessor makes all
      // predecessors' outputs visible to whoever runs s (passed on through heaps and rings).
      // (A plain load/store instead when one thread runs every op, 1x1: no measurable gain, 40.8
      // vs 41.8 ns/op on the layered DAG with empty ops.)
      if (std::atomic_ref<uint32_t>(pending[s]).fetch_sub(1, std::memory_order_acq_rel) != 1)
        continue;
      if (p.small(s))
        inline_ops.push_back(s);
      else if (e)
        e->heap.push(s);
      else
        boot_ready.push_back(s);  // bootstrap: handed to the scheduler role afterwards
    }
    ++ran;
  }
}

// Pushes `count` ops from e's heap (best first) and, if asked, the done marker for e's finished
// assignments to e's report ring, then lets the scheduler role see them.
//
// Surplus (no done marker, e keeps working): e only posts and wakes sleeping idle executors;
// in embedded mode the idle executors, which watch `posted`, take the role and pay for the step,
// not the busy publisher. Done marker (e is idle now): e takes the role itself.
void ParallelRuntime::Impl::publish(Executor& e, size_t count, bool done_marker) {
  auto push = [&](uint32_t item) {
    while (!e.reports.try_push(item)) {
      // Full: the scheduler role drains it; take the role ourselves if it is free.
      try_schedule(nullptr);
      cpu_relax();
    }
  };
  for (size_t i = 0; i < count && !e.heap.empty(); ++i) push(e.heap.pop());
  if (done_marker && e.taken) {
    push(kDoneBit | e.taken);
    e.taken = 0;
  }
  // seq_cst pairs with the load in try_schedule() after the role is released: either that holder
  // sees our report and goes around again, or we find the lock free below. It also orders the
  // post before the sleepers_ loads of wake_if_sleeping().
  const uint64_t now = posted.fetch_add(1, std::memory_order_seq_cst) + 1;
  if (done_marker) {
    // Idle now: step ourselves rather than wait for the scheduler (with a dedicated client it
    // may be asleep: a futex wake-up costs more than the step). Whoever holds the role steps.
    e.seen_posted = now;
    try_schedule(&e);
    return;
  }
  if (dedicated) {
    done_parker.wake_if_sleeping();  // the client scheduler hands published ops out
    return;
  }
  uint64_t idle_bits = idle_hint.load(std::memory_order_relaxed) & ~e.bit;
  while (idle_bits) {
    const int i = __builtin_ctzll(idle_bits);
    idle_bits &= idle_bits - 1;
    if (static_cast<size_t>(i) < ex.size()) ex[static_cast<size_t>(i)]->parker.wake_if_sleeping();
  }
}

// The executor's work loop for one batch: run the best op of its own heap while it has one.
// After each op, if another executor is idle and this one has more than it runs next, it
// publishes part of its surplus (best first) for the scheduler role to hand out. When the heap
// is empty it reports its finished inbox items (it is idle now), then subtracts its ops from
// `remaining`: nothing of this run is touched after that by this executor.
void ParallelRuntime::Impl::run_local(Executor& e) {
  const bool multi = ex.size() > 1;
  void* scratch = e.scratch.get();
  const int k = opt.threads;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t ran0 = e.ran;
  while (!e.heap.empty()) {
    const graph::NodeId n = e.heap.pop();
    // Someone is idle: give it the best half of the surplus. (Measured and dropped: also
    // keeping one op published whenever the central heap is empty, so an executor that runs out
    // finds work at once: LSTM-shaped DAG at 1 us 609 vs 576 ns/op, empty ops 199 vs 142.)
    // At most one publication in flight (the ring is empty once the role has drained it): while
    // an idle executor is still reacting, the hint stays set and would cost a post per op.
    // Only work worth a hand-off is shared: the receiver pays ~0.3-1 us to get it, so
    // publishing two 10 ns ops costs more than running them here (the LSTM-shaped DAG with empty
    // ops ran 140-210 ns/op sharing, near the sequential speed without).
    if (multi && !e.heap.empty() && (idle_hint.load(std::memory_order_relaxed) & ~e.bit) != 0 &&
        e.reports.empty_approx()) {
      const size_t give = surplus_to_publish(e.heap.size(), e.reports.capacity());
      if (worth_publishing(give, e.op_ns)) publish(e, give, false);
    }
    run_one(&e, n, e.inline_ops, scratch, k, e.failure, e.ran);
    if (inbox_capacity > 1) {
      uint32_t x;
      while (e.inbox.try_pop(x)) {
        ++e.taken;
        e.heap.push(x);
      }
    }
  }
  // Running mean of this executor's time per op (ops plus dispatch), kept across runs: two
  // clock reads per batch, none per op.
  const size_t ops = e.ran - ran0;
  if (ops) {
    const double ns = static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    const double per_op = ns / static_cast<double>(ops);
    e.op_ns = e.op_ns == 0 ? per_op : 0.75 * e.op_ns + 0.25 * per_op;
  }
}

// One scheduling step: drain every report ring, then give ready ops to executors with room in
// their inbox, highest key first. An idle executor running the step (`self`) claims a share of
// the heap (the best 1/n of it) straight into its own heap as one assignment: fewer steps per op
// on wide graphs. Returns whether anything happened.
bool ParallelRuntime::Impl::step(Executor* self) {
  // Tracing reads the clock as little as it can (~25 ns a read, more under a hypervisor):
  // back-to-back hand-offs share their boundaries (one read each) and the step ends with the
  // last of them.
  uint64_t step_t0 = tracing ? trace_now_ns() : 0;
  bool progress = false;
  for (auto& ep : ex) {
    Executor& e = *ep;
    uint32_t x;
    while (e.reports.try_pop(x)) {
      progress = true;
      if (x & kDoneBit) {
        inflight[e.id] -= x & ~kDoneBit;
        if (inflight[e.id] < inbox_capacity) idle.set(e.id);
      } else {
        heap.push(x);
      }
    }
  }
  if (self && opt.local_continuation && !heap.empty() && inflight[self->id] < inbox_capacity) {
    // Split between the idle executors (self included); busy ones do not need work now.
    const size_t share = central_share(heap.size(), idle.count());
    for (size_t i = 0; i < share; ++i) self->heap.push(heap.pop());
    ++self->taken;
    if (++inflight[self->id] == inbox_capacity) idle.clear(self->id);
    progress = true;
  }
  uint64_t t_last = 0;  // end of the last hand-off span (tracing)
  while (!heap.empty() && idle.any()) {
    const size_t i = idle.first();
    const uint64_t t0 = !tracing ? 0 : t_last ? t_last : trace_now_ns();
    const graph::NodeId n = heap.pop();
    GRAPHI_CHECK(ex[i]->inbox.try_push(n), "executor inbox full although it was marked idle");
    if (++inflight[i] == inbox_capacity) idle.clear(i);
    ex[i]->parker.wake();
    if (tracing) {
      t_last = trace_now_ns();
      if (sched_spans.size() < sched_spans.capacity())
        sched_spans.push_back({SchedulerSpan::kHandOff, static_cast<int32_t>(i), t0, t_last});
    }
    progress = true;
  }
  const uint64_t w = idle.word(0);
  if (w != idle_word) {
    idle_word = w;
    idle_hint.store(w, std::memory_order_relaxed);
  }
  if (tracing && progress && sched_spans.size() < sched_spans.capacity())
    sched_spans.push_back({SchedulerSpan::kStep, -1, step_t0, t_last ? t_last : trace_now_ns()});
  return progress;
}

// Embedded mode: take the scheduler role if nobody holds it. A reporter that finds the role
// taken relies on the holder: after releasing, the holder re-reads `posted` and goes around
// again if a report arrived meanwhile, so no report waits for a step that never comes.
void ParallelRuntime::Impl::try_schedule(Executor* self) {
  while (true) {
    if (sched_lock.exchange(true, std::memory_order_seq_cst)) return;
    const uint64_t seen = posted.load(std::memory_order_seq_cst);
    step(self);
    sched_lock.store(false, std::memory_order_seq_cst);
    if (posted.load(std::memory_order_seq_cst) == seen) return;
  }
}

void ParallelRuntime::Impl::sq_push(const std::vector<graph::NodeId>& ops) {
  if (ops.empty()) return;
  {
    std::lock_guard<std::mutex> lock(sq_mu);
    for (graph::NodeId n : ops) sq.push_back(n);
    sq_size.store(static_cast<uint32_t>(sq.size() - sq_head), std::memory_order_release);
  }
  // Wake as many sleeping executors as ops became ready (cheap when nobody sleeps).
  size_t woken = 0;
  for (auto& e : ex) {
    if (woken++ >= ops.size()) break;
    e->parker.wake();
  }
}

bool ParallelRuntime::Impl::sq_pop(graph::NodeId& n) {
  std::lock_guard<std::mutex> lock(sq_mu);
  if (sq_head == sq.size()) return false;
  n = sq[sq_head++];
  sq_size.store(static_cast<uint32_t>(sq.size() - sq_head), std::memory_order_release);
  return true;
}

void ParallelRuntime::Impl::init_team(Executor& e) {
  const int k = opt.threads;
  e.tids.assign(static_cast<size_t>(k), 0);
  e.cpus.assign(static_cast<size_t>(k), -1);
  std::mutex mu;
  auto member = [&](int tid) {
    if (opt.pin) {
      const int pu = opt.placement->teams[static_cast<size_t>(e.id)].pus[static_cast<size_t>(tid)];
      Status s = opt.binder->bind_current_thread(std::span<const int>(&pu, 1));
      if (!s.is_ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (e.start_status.is_ok())
          e.start_status = s.with_context("executor " + std::to_string(e.id) + " member " +
                                          std::to_string(tid) + " (PU " + std::to_string(pu) + ")");
      }
    }
    e.tids[static_cast<size_t>(tid)] = static_cast<pid_t>(::gettid());
    e.cpus[static_cast<size_t>(tid)] = sched_getcpu();
  };
  // The team size is this thread's ICV: set it explicitly (an embedding framework may have
  // changed the inherited one; DEPENDENCIES.md 1.5). oneDNN kernels read it too.
  omp_set_num_threads(k);
  if (k == 1) {
    member(0);
  } else {
#pragma omp parallel num_threads(k)
    member(omp_get_thread_num());
  }
}

// Runs bootstrap op s and the small ops it makes ready (inline); the other ops it makes ready
// are left in boot_ready. Returns how many ops ran.
size_t ParallelRuntime::Impl::run_bootstrap_op(graph::NodeId s) {
  size_t ran = 0;
  run_one(nullptr, s, boot_inline, client_scratch.get(), 1, client_failure, ran);
  return ran;
}

// The bootstrap executor's thread: one thread (no OpenMP team), pinned to the reserved
// bootstrap core. Per run: the bootstrap ops, then the ops they made ready go to the scheduler
// role (its heap and a step, as an idle executor's report would; the shared queue for
// shared-queue), then its ops count towards `remaining`. Idle between runs: spin for the budget,
// then sleep.
void ParallelRuntime::Impl::bootstrap_main() {
  pthread_setname_np(pthread_self(), "graphi-boot");
  boot_tid = static_cast<pid_t>(::gettid());
  if (opt.pin && opt.placement && opt.placement->bootstrap && opt.binder) {
    const int pu = opt.placement->bootstrap->pu;
    Status st = opt.binder->bind_current_thread(std::span<const int>(&pu, 1));
    if (!st.is_ok())
      boot_start_status = st.with_context("bootstrap executor (PU " + std::to_string(pu) + ")");
  }
  omp_set_num_threads(1);  // kernels that open their own region: a team of 1
  boot_started.store(true, std::memory_order_release);
  boot_started.notify_all();
  if (!boot_start_status.is_ok()) return;
  uint64_t seen = 0;
  try {
    while (true) {
      boot_parker.wait(
          [&] {
            return boot_request.load(std::memory_order_acquire) != seen ||
                   stopping.load(std::memory_order_acquire);
          },
          opt.spin_budget);
      if (stopping.load(std::memory_order_acquire)) return;
      seen = boot_request.load(std::memory_order_acquire);
      size_t ran = 0;
      boot_ready.clear();
      for (const graph::NodeId s : start_ops)
        if (plan->small(s)) ran += run_bootstrap_op(s);
      if (shared) {
        sq_push(boot_ready);
      } else if (!boot_ready.empty()) {
        // Take the role like try_schedule, but wait for it: these ops must reach the heap.
        while (sched_lock.exchange(true, std::memory_order_seq_cst)) cpu_relax();
        const uint64_t posts = posted.load(std::memory_order_seq_cst);
        for (const graph::NodeId r : boot_ready) heap.push(r);
        step(nullptr);  // hands them to idle executors; busy ones claim the rest when idle
        sched_lock.store(false, std::memory_order_seq_cst);
        if (posted.load(std::memory_order_seq_cst) != posts)
          try_schedule(nullptr);  // see try_schedule
      }
      finish(ran);
    }
  } catch (...) {
    broken.store(true, std::memory_order_seq_cst);
    set_error(
        Status::internal("the bootstrap executor stopped with an exception (the Session cannot run "
                         "any more; destroy it)"));
    done.store(true, std::memory_order_release);
    done_parker.wake();
  }
}

// The thread body. Nothing in the loop is expected to throw (kernels are noexcept, buffers are
// reserved), but if something does, the thread must not take the process down with
// std::terminate: it records the error, marks the runtime broken (its run state is lost, so
// every later run fails), releases the client and leaves.
void ParallelRuntime::Impl::executor_main(Executor& e) {
  char name[16];
  std::snprintf(name, sizeof name, "graphi-ex%d", e.id);
  pthread_setname_np(pthread_self(), name);
  try {
    init_team(e);
  } catch (const std::exception& x) {
    e.start_status = Status::internal("executor " + std::to_string(e.id) +
                                      ": starting the team threw: " + x.what());
  }
  started.fetch_add(1, std::memory_order_release);
  started.notify_all();
  if (!e.start_status.is_ok()) return;
  try {
    if (client_drives && e.id == 0)
      command_loop(e);
    else
      executor_loop(e, false);
  } catch (...) {
    std::string what = "unknown exception";
    try {
      throw;
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    broken.store(true, std::memory_order_seq_cst);
    set_error(Status::internal("executor " + std::to_string(e.id) + " stopped: " + what +
                               " (the Session cannot run any more; destroy it)"));
    done.store(true, std::memory_order_release);
    done_parker.wake();
  }
}

// Executor 0's own thread while the client drives executor 0: probes and the stop only.
void ParallelRuntime::Impl::command_loop(Executor& e) {
  while (true) {
    e.cmd_parker.wait(
        [&] {
          return e.probe_request.load(std::memory_order_acquire) ||
                 stopping.load(std::memory_order_acquire);
        },
        std::chrono::microseconds(0));
    if (stopping.load(std::memory_order_acquire)) return;
    init_team(e);
    e.probe_request.store(false, std::memory_order_relaxed);
    e.probed.store(true, std::memory_order_release);
    e.probed.notify_all();
  }
}

// The executor's loop; `client`: the client thread playing executor 0 for one run, returning
// when the run is done.
void ParallelRuntime::Impl::executor_loop(Executor& e, bool client) {
  void* scratch = e.scratch.get();
  const int k = opt.threads;
  // Embedded role: an idle executor also watches `posted` (another executor published surplus
  // ops) and then takes the role to claim them.
  const bool watch_posts = !dedicated && !shared && opt.local_continuation;
  // Executor 0 shares its core with the sleeping client (client_sleeps): at the run's end it
  // stops spinning and sleeps at once (after the Parker's yields, which hand the core over).
  const bool hands_back = client_sleeps && !client && e.id == 0;
  while (true) {
    if (e.heap.empty()) {
      const bool run_over = hands_back && done.load(std::memory_order_acquire);
      if (run_over) hand_backs.fetch_add(1, std::memory_order_relaxed);
      e.parker.wait(
          [&] {
            return !e.inbox.empty_approx() ||
                   (shared && sq_size.load(std::memory_order_acquire) != 0) ||
                   (watch_posts && posted.load(std::memory_order_seq_cst) != e.seen_posted) ||
                   stopping.load(std::memory_order_acquire) ||
                   ((client || (hands_back && !run_over)) && done.load(std::memory_order_acquire));
          },
          run_over ? std::chrono::microseconds(0) : opt.spin_budget);
      uint32_t item;
      while (e.inbox.try_pop(item)) {
        if (item == kStop) return;
        if (item == kProbe) {
          init_team(e);  // re-binding to the same core is harmless; records current tids
          e.probed.store(true, std::memory_order_release);
          e.probed.notify_all();
          continue;
        }
        ++e.taken;
        if (opt.local_continuation) {
          e.heap.push(item);
        } else {
          // The paper's central design: run the op given, report every op it made ready.
          run_one(&e, item, e.inline_ops, scratch, k, e.failure, e.ran);
          publish(e, e.heap.size(), true);
          const size_t ran = e.ran;
          e.ran = 0;
          finish(ran);
        }
      }
      if (e.heap.empty() && watch_posts) {
        const uint64_t now = posted.load(std::memory_order_seq_cst);
        if (now != e.seen_posted) {
          e.seen_posted = now;
          try_schedule(&e);  // may claim published ops into e.heap or e.inbox
        }
      }
      if (shared && e.heap.empty()) {
        graph::NodeId n;
        if (sq_pop(n)) {
          size_t ran = 0;
          run_one(&e, n, e.inline_ops, scratch, k, e.failure, ran);
          e.ready.clear();
          while (!e.heap.empty()) e.ready.push_back(e.heap.pop());
          sq_push(e.ready);
          finish(ran);
        }
      }
      if (e.heap.empty()) {
        if (client && done.load(std::memory_order_acquire)) return;
        if (stopping.load(std::memory_order_acquire) && e.inbox.empty_approx()) return;
        continue;
      }
    }
    run_local(e);
    publish(e, 0, true);  // idle now: report, take the role (may claim more work into e.heap)
    const size_t ran = e.ran;
    e.ran = 0;
    finish(ran);
  }
}

ParallelRuntime::ParallelRuntime() : impl_(std::make_unique<Impl>()) {}

Result<std::unique_ptr<ParallelRuntime>> ParallelRuntime::create(const Plan& plan,
                                                                 const RuntimeOptions& o) {
  if (o.executors < 1 || o.threads < 1)
    return Status::invalid_argument(
        "parallel runtime: executors and threads must be at least 1, got " +
        std::to_string(o.executors) + " x " + std::to_string(o.threads));
  if (o.policy == Policy::kSequential)
    return Status::invalid_argument(
        "parallel runtime: the sequential policy runs on the reference executor");
  if (SpscRing<uint32_t>::rounded_capacity(static_cast<size_t>(o.ring_capacity)) == 0 ||
      o.ring_capacity > (1 << 20))
    return Status::invalid_argument("ring capacity must be in [1, 2^20], got " +
                                    std::to_string(o.ring_capacity));
  if (o.pin && (!o.placement || !o.binder))
    return Status::invalid_argument("parallel runtime: pinning needs a placement and a binder");
  if (o.pin && (o.placement->executors != o.executors || o.placement->threads != o.threads))
    return Status::invalid_argument("parallel runtime: the placement is for " +
                                    std::to_string(o.placement->executors) + "x" +
                                    std::to_string(o.placement->threads) + ", not " +
                                    std::to_string(o.executors) + "x" + std::to_string(o.threads));
  if (plan.num_nodes() >= kMaxNodes)
    return Status::unsupported("parallel runtime: too many nodes (" +
                               std::to_string(plan.num_nodes()) + ")");

  std::unique_ptr<ParallelRuntime> rt(new ParallelRuntime());
  Impl& im = *rt->impl_;
  im.plan = &plan;
  im.opt = o;
  im.shared = o.policy == Policy::kSharedQueue;
  im.inbox_capacity = SpscRing<uint32_t>::rounded_capacity(static_cast<size_t>(o.ring_capacity));
  // One executor with a team of 1 (cpf, fifo) keeps every op it makes ready: a scheduler has
  // nothing to hand out, so even with a spare core the client thread plays the executor instead
  // of sleeping on it until the run ends. The sleeping client cost a futex wake-up (30-80 us) per
  // run: LSTM-shaped DAG, 1 us ops, cpf 1x1 1152 ns/op against 1021 for the sequential executor.
  const ClientRole role = client_role(o.executors, o.threads, o.policy,
                                      o.placement != nullptr && o.placement->scheduler.has_value(),
                                      o.local_continuation);
  im.dedicated = o.dedicated_scheduler.has_value() ? *o.dedicated_scheduler : role.dedicated;
  im.client_drives = !im.dedicated && !im.shared && o.threads == 1 && o.local_continuation;
  im.client_sleeps = !im.dedicated && !im.client_drives;
  const size_t n = plan.num_nodes();

  if (!o.levels.empty() && o.levels.size() != n)
    return Status::invalid_argument("parallel runtime: " + std::to_string(o.levels.size()) +
                                    " levels for " + std::to_string(n) + " nodes");
  std::span<const double> levels =
      o.levels.empty() ? plan.levels() : std::span<const double>(o.levels);
  // The ready order (keys, cpf's tie-break) is the simulator's too: engine/ready_order.h.
  ReadyOrder order = ready_order(
      o.policy, DagView{plan.succ_offsets(), plan.succ_ids(), plan.initial_pending()}, levels);
  im.keys = std::move(order.keys);
  im.pending.reset(new uint32_t[n == 0 ? 1 : n]);
  for (size_t i = 0; i < n; ++i)
    if (plan.initial_pending()[i] == 0) im.start_ops.push_back(static_cast<graph::NodeId>(i));
  if (o.count_executions) im.counts.reset(new std::atomic<uint32_t>[n == 0 ? 1 : n]);
  im.sq.reserve(n);
  im.heap.reset(im.keys, order.ties);

  size_t max_out = 0;
  for (size_t i = 0; i < n; ++i)
    max_out = std::max(max_out, plan.successors(static_cast<graph::NodeId>(i)).size());
  // Room for one op's report (its ready successors plus the done marker) at least; more lets
  // executors publish ahead of a busy scheduler.
  const size_t report_capacity =
      pow2_at_least(std::max<size_t>(max_out + 2, std::min<size_t>(n + 2, 4096)));
  const size_t scratch_bytes = plan.scratch_bytes();
  for (int i = 0; i < o.executors; ++i) {
    auto e = std::make_unique<Executor>(i, im.inbox_capacity, report_capacity);
    if (scratch_bytes) {
      e->scratch.reset(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64));
      if (!e->scratch) return Status(StatusCode::kOutOfMemory, "cannot allocate executor scratch");
    }
    e->inline_ops.reserve(n);
    e->ready.reserve(n);
    e->heap.reset_like(im.heap);
    im.ex.push_back(std::move(e));
  }
  if (scratch_bytes) {
    im.client_scratch.reset(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64));
    if (!im.client_scratch)
      return Status(StatusCode::kOutOfMemory, "cannot allocate bootstrap scratch");
  }
  im.idle.reset(im.ex.size());
  im.inflight.assign(im.ex.size(), 0);
  bool boot_ops = false;
  for (const graph::NodeId s : im.start_ops) boot_ops |= plan.small(s);
  const bool boot_core = o.pin && o.placement && o.placement->bootstrap.has_value();
  im.boot_thread_on = boot_ops && o.bootstrap_executor.value_or(boot_core);
  im.boot_inline.reserve(n);
  im.boot_ready.reserve(n);

  for (auto& e : im.ex) {
    Executor* ep = e.get();
    try {
      ep->thread = std::thread([&im, ep] { im.executor_main(*ep); });
    } catch (const std::system_error& x) {
      // The executors started so far are stopped and joined by the destructor.
      ep->start_status = Status::internal("cannot start executor thread " + std::to_string(ep->id) +
                                          ": " + x.what());
      im.started.fetch_add(1, std::memory_order_release);
    }
  }
  if (im.boot_thread_on) {
    try {
      im.boot_thread = std::thread([&im] { im.bootstrap_main(); });
    } catch (const std::system_error& x) {
      im.boot_start_status =
          Status::internal(std::string("cannot start the bootstrap executor thread: ") + x.what());
      im.boot_started.store(true, std::memory_order_release);
    }
  }
  // Wait until every team is up and pinned.
  for (int s = im.started.load(std::memory_order_acquire); s < o.executors;
       s = im.started.load(std::memory_order_acquire))
    im.started.wait(s, std::memory_order_acquire);
  if (im.boot_thread_on) im.boot_started.wait(false, std::memory_order_acquire);
  for (auto& e : im.ex)
    if (!e->start_status.is_ok()) return e->start_status;  // the destructor joins the threads
  if (!im.boot_start_status.is_ok()) return im.boot_start_status;
  return rt;
}

ParallelRuntime::~ParallelRuntime() {
  if (!impl_) return;
  Impl& im = *impl_;
  im.stopping.store(true, std::memory_order_release);
  for (auto& e : im.ex) {
    // Between runs every inbox is empty, so the stop command fits; `stopping` covers the rest.
    (void)e->inbox.try_push(kStop);
    e->parker.wake();
    e->cmd_parker.wake();
  }
  for (auto& e : im.ex)
    if (e->thread.joinable()) e->thread.join();
  im.boot_parker.wake();
  if (im.boot_thread.joinable()) im.boot_thread.join();
}

void ParallelRuntime::cancel() {
  Impl& im = *impl_;
  im.cancelled.store(true, std::memory_order_seq_cst);
  im.set_error(Status::invalid_argument(im.plan->graph().source() +
                                        ": run cancelled: the Session is being destroyed"));
}

Status ParallelRuntime::run(SlotTables slots) {
  Impl& im = *impl_;
  const Plan& p = *im.plan;
  const size_t n = p.num_nodes();
  if (im.broken.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(im.error_mu);
    return im.error;
  }
  {
    std::lock_guard<std::mutex> lock(im.error_mu);
    im.error = Status::ok();
  }
  // cancel() sets cancelled, then aborted: whichever order the stores below meet it in, the
  // run ends up aborted.
  im.aborted.store(false, std::memory_order_seq_cst);
  if (im.cancelled.load(std::memory_order_seq_cst)) {
    cancel();
    std::lock_guard<std::mutex> lock(im.error_mu);
    return im.error;
  }
  if (n == 0) return Status::ok();
  if (im.tracing) im.run_start_ns = trace_now_ns();

  im.slots = slots;
  std::span<const uint32_t> init = p.initial_pending();
  std::memcpy(im.pending.get(), init.data(), n * sizeof(uint32_t));
  if (im.counts)
    for (size_t i = 0; i < n; ++i) im.counts[i].store(0, std::memory_order_relaxed);
  im.done.store(false, std::memory_order_relaxed);
  im.remaining.store(static_cast<int64_t>(n), std::memory_order_relaxed);
  // The role lock is held from here to the seeding step: an idle executor may still take the
  // role for a post of the previous run (it watches `posted`), and the client owns the heap and
  // the rings while it resets them and runs the bootstrap ops.
  while (im.sched_lock.exchange(true, std::memory_order_seq_cst)) cpu_relax();
  // Reports left from the previous run (its last done markers) belong to no one now.
  for (auto& e : im.ex) {
    uint32_t x;
    while (e->reports.try_pop(x)) {
    }
  }
  im.heap.clear();
  im.idle.reset(im.ex.size());
  for (size_t i = 0; i < im.ex.size(); ++i) im.idle.set(i);
  im.idle_word = 0;
  im.idle_hint.store(0, std::memory_order_relaxed);
  std::fill(im.inflight.begin(), im.inflight.end(), 0u);
  {
    // Under sq_mu: an executor of the previous run may still be polling the queue (it pops
    // whenever its heap is empty, also after the run is done). Unlocked, it could read the old
    // sq_head against the cleared size and take a stale op (found by the TSan lane).
    std::lock_guard<std::mutex> lock(im.sq_mu);
    im.sq.clear();
    im.sq_head = 0;
    im.sq_size.store(0, std::memory_order_relaxed);
  }
  im.client_failure.clear();
  if (im.tracing) {  // capacities stay (set_tracing reserved them)
    for (auto& e : im.ex) e->spans.clear();
    im.boot_spans.clear();
    im.sched_spans.clear();
    im.client_idle.clear();
  }
  std::atomic_thread_fence(std::memory_order_release);  // the ring pushes below publish all this

  // With a core of its own the client thread moves there for the whole run: it runs the
  // bootstrap ops there, then plays the scheduler. Else it plays executor 0 or sleeps through
  // the run on executor 0's core (client_sleeps): unpinned, its wake-up at the run's end could
  // land on a team member's core and wait there behind libgomp's spin-wait until a scheduler
  // tick (medians of 4 and 8 ms for runs of 0.02-0.3 ms, 1x2 cpf and 2x1 shared-queue).
  std::optional<ClientPin> pin;
  if (im.dedicated && !im.shared)
    pin.emplace(im.opt, false);
  else if (im.client_drives || im.client_sleeps)
    pin.emplace(im.opt, true);

  // Bootstrap: small ops ready at the start (constants, shape bookkeeping) and the small ops
  // they make ready run here, on the client thread: the light-weight single-thread executor.
  // The ops they make ready join the other start ops in the scheduler's heap.
  // With a bootstrap thread (a spare core) they run there instead, while the client dispatches.
  if (im.boot_thread_on) {
    im.boot_request.fetch_add(1, std::memory_order_release);  // publishes the reset above
    im.boot_parker.wake();
    for (const graph::NodeId s : im.start_ops)
      if (!p.small(s)) im.heap.push(s);
  } else {
    size_t boot_ran = 0;
    for (const graph::NodeId s : im.start_ops) {
      if (p.small(s)) {
        im.boot_ready.clear();
        boot_ran += im.run_bootstrap_op(s);
        for (const graph::NodeId r : im.boot_ready) im.heap.push(r);
      } else {
        im.heap.push(s);
      }
    }
    im.finish(boot_ran);
  }

  uint64_t seen = 0;  // `posted` before the seeding step: later posts need a step
  if (im.done.load(std::memory_order_acquire)) {
    im.sched_lock.store(false, std::memory_order_seq_cst);
  } else {
    if (im.shared) {
      std::vector<graph::NodeId> start;
      while (!im.heap.empty()) start.push_back(im.heap.pop());
      im.sched_lock.store(false, std::memory_order_seq_cst);
      im.sq_push(start);
    } else {
      seen = im.posted.load(std::memory_order_seq_cst);
      im.step(nullptr);
      im.sched_lock.store(false, std::memory_order_seq_cst);
      if (!im.dedicated && im.posted.load(std::memory_order_seq_cst) != seen)
        im.try_schedule(nullptr);
    }
    if (im.client_drives) {
      // Kernels that open their own region (oneDNN) size it from this thread's ICV: executor 0's
      // team size is 1 (client_drives requires it), whatever the caller's setting is.
      const int saved_threads = omp_get_max_threads();
      omp_set_num_threads(1);
      im.executor_loop(*im.ex[0], true);
      omp_set_num_threads(saved_threads);
    }

    if (im.dedicated && !im.shared) {
      // The paper's design: the client thread runs the scheduler on a core of its own,
      // handing published ops to idle executors. Executors post only when they publish or go
      // idle, so between posts it waits like an executor: spin for the budget, then sleep (a
      // core spinning for a whole run slowed the executor on its SMT sibling by 6-9%). An
      // executor that goes idle does not wait for it: it takes the role lock and steps itself.
      while (!im.done.load(std::memory_order_acquire)) {
        const uint64_t t0 = im.tracing ? trace_now_ns() : 0;
        im.done_parker.wait(
            [&] {
              return im.posted.load(std::memory_order_seq_cst) != seen ||
                     im.done.load(std::memory_order_acquire);
            },
            im.opt.spin_budget);
        if (im.tracing) im.record_sched(im.client_idle, SchedulerSpan::kIdle, -1, t0);
        seen = im.posted.load(std::memory_order_seq_cst);
        im.try_schedule(nullptr);
      }
    } else {
      // Without a core of its own (the role runs inside the executors) the client sleeps at
      // once: spinning would take a core from an executor for the spin budget of every run.
      const auto budget = im.dedicated ? im.opt.spin_budget : std::chrono::microseconds(0);
      im.done_parker.wait([&] { return im.done.load(std::memory_order_acquire); }, budget);
    }
  }
  if (im.tracing) im.run_end_ns = trace_now_ns();
  if (im.aborted.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> lock(im.error_mu);
    return im.error;
  }
  return Status::ok();
}

void ParallelRuntime::set_tracing(bool on) {
  Impl& im = *impl_;
  // Under the role lock: an idle executor may still run a late step of the previous run.
  while (im.sched_lock.exchange(true, std::memory_order_seq_cst)) cpu_relax();
  im.tracing = on;
  im.run_end_ns = 0;  // no trace until the next run
  if (on) {
    const size_t n = im.plan->num_nodes();
    for (auto& e : im.ex) e->spans.reserve(n);
    im.boot_spans.reserve(n);
    im.sched_spans.reserve(4 * n + 64);  // a step and a hand-off per op at most, plus posts
    im.client_idle.reserve(2 * n + 64);
  }
  im.sched_lock.store(false, std::memory_order_seq_cst);
}

void ParallelRuntime::last_trace(RunTrace& out) const {
  Impl& im = *impl_;
  out = RunTrace{};
  if (!im.tracing || im.run_end_ns == 0) return;
  out.run_start_ns = im.run_start_ns;
  out.run_end_ns = im.run_end_ns;
  out.executors = im.opt.executors;
  out.threads = im.opt.threads;
  out.scheduler = policy_name(im.opt.policy);
  out.ops.insert(out.ops.end(), im.boot_spans.begin(), im.boot_spans.end());
  for (auto& e : im.ex) out.ops.insert(out.ops.end(), e->spans.begin(), e->spans.end());
  std::sort(out.ops.begin(), out.ops.end(),
            [](const OpSpan& a, const OpSpan& b) { return a.start_ns < b.start_ns; });
  while (im.sched_lock.exchange(true, std::memory_order_seq_cst)) cpu_relax();
  // Steps that an idle executor ran after the run ended belong to no run.
  for (const SchedulerSpan& sp : im.sched_spans)
    if (sp.start_ns <= im.run_end_ns) out.scheduler_spans.push_back(sp);
  im.sched_lock.store(false, std::memory_order_seq_cst);
  out.scheduler_spans.insert(out.scheduler_spans.end(), im.client_idle.begin(),
                             im.client_idle.end());
  std::sort(out.scheduler_spans.begin(), out.scheduler_spans.end(),
            [](const SchedulerSpan& a, const SchedulerSpan& b) { return a.start_ns < b.start_ns; });
}

const RuntimeOptions& ParallelRuntime::options() const { return impl_->opt; }
bool ParallelRuntime::dedicated_scheduler() const { return impl_->dedicated; }
bool ParallelRuntime::bootstrap_thread() const { return impl_->boot_thread_on; }
pid_t ParallelRuntime::bootstrap_thread_id() const { return impl_->boot_tid; }

std::vector<uint32_t> ParallelRuntime::execution_counts() const {
  std::vector<uint32_t> out;
  if (!impl_->counts) return out;
  for (size_t i = 0; i < impl_->plan->num_nodes(); ++i) out.push_back(impl_->counts[i].load());
  return out;
}

bool ParallelRuntime::client_sleeps() const { return impl_->client_sleeps; }

uint64_t ParallelRuntime::hand_backs() const {
  return impl_->hand_backs.load(std::memory_order_relaxed);
}

std::vector<std::vector<pid_t>> ParallelRuntime::team_thread_ids() const {
  std::vector<std::vector<pid_t>> out;
  for (auto& e : impl_->ex) out.push_back(e->tids);
  return out;
}

std::vector<std::vector<int>> ParallelRuntime::team_cpus() const {
  std::vector<std::vector<int>> out;
  for (auto& e : impl_->ex) out.push_back(e->cpus);
  return out;
}

std::vector<std::vector<pid_t>> ParallelRuntime::probe_team_thread_ids() {
  for (auto& e : impl_->ex) {
    e->probed.store(false, std::memory_order_relaxed);
    if (impl_->client_drives && e->id == 0) {
      e->probe_request.store(true, std::memory_order_release);
      e->cmd_parker.wake();
      continue;
    }
    GRAPHI_CHECK(e->inbox.try_push(kProbe), "probe while a run is in flight");
    e->parker.wake();
  }
  for (auto& e : impl_->ex)
    while (!e->probed.load(std::memory_order_acquire))
      e->probed.wait(false, std::memory_order_acquire);
  return team_thread_ids();
}

}  // namespace graphi::engine
