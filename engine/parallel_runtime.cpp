#include "engine/parallel_runtime.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "engine/parker.h"
#include "engine/ready_heap.h"
#include "engine/spsc_ring.h"

namespace graphi::engine {

namespace {

// Ring items besides op ids. Op ids are < 2^32 - 3 (a Plan never has that many nodes).
constexpr uint32_t kDone = 0xFFFFFFFFu;   // report: the executor finished the op it was given
constexpr uint32_t kStop = 0xFFFFFFFEu;   // inbox: leave the loop
constexpr uint32_t kProbe = 0xFFFFFFFDu;  // inbox: record the team's thread ids

struct FreeAligned {
  void operator()(void* p) const { std::free(p); }
};

size_t pow2_at_least(size_t n) {
  size_t c = 1;
  while (c < n) c <<= 1;
  return c;
}

// Moves the calling (client) thread to the placement's scheduler core for its lifetime and puts
// its affinity back afterwards. No-op without pinning or without a reserved core.
class ClientPin {
 public:
  explicit ClientPin(const RuntimeOptions& o) {
    if (!o.pin || !o.placement || !o.placement->scheduler || !o.binder) return;
    CPU_ZERO(&saved_);
    if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
    const int pu = o.placement->scheduler->pu;
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
      : id(id_), inbox(inbox_capacity), reports(report_capacity) {}
  int id;
  SpscRing<uint32_t> inbox;    // scheduler -> executor: op ids and commands
  SpscRing<uint32_t> reports;  // executor -> scheduler role: ready op ids, then kDone
  Parker parker;               // the executor sleeps here when idle
  std::thread thread;
  std::unique_ptr<void, FreeAligned> scratch;
  std::vector<pid_t> tids;
  std::vector<int> cpus;
  std::vector<graph::NodeId> local, ready;  // per-op work lists, reserved once
  Status start_status;
  std::atomic<bool> probed{false};
};

struct ParallelRuntime::Impl {
  const Plan* plan = nullptr;
  RuntimeOptions opt;
  bool dedicated = false;
  bool shared = false;  // shared-queue policy
  size_t inbox_capacity = 1;
  std::vector<std::unique_ptr<Executor>> ex;
  std::vector<double> keys;  // heap key per op: level (cpf) or -position (fifo)
  std::unique_ptr<void, FreeAligned> client_scratch;  // for bootstrap ops run by the client

  // Per-run state.
  SlotTables slots;
  std::unique_ptr<std::atomic<uint32_t>[]> pending;
  std::unique_ptr<std::atomic<uint32_t>[]> counts;
  alignas(64) std::atomic<int64_t> remaining{0};
  std::atomic<bool> done{false};
  Parker done_parker;

  // Scheduler role: owned by the client (dedicated) or by whoever holds sched_lock (embedded).
  alignas(64) std::atomic<bool> sched_lock{false};
  alignas(64) std::atomic<uint64_t> posted{0};  // reports posted; see try_schedule()
  ReadyHeap heap;
  IdleSet idle;
  std::vector<uint32_t> inflight;  // ops assigned to executor e and not reported done

  // Shared-queue policy: one locked FIFO every executor pops (the baseline to beat).
  std::mutex sq_mu;
  std::vector<graph::NodeId> sq;  // each op is pushed once per run: reserve n, no reallocation
  size_t sq_head = 0;
  alignas(64) std::atomic<uint32_t> sq_size{0};

  std::atomic<bool> stopping{false};
  std::atomic<int> started{0};

  void executor_main(Executor& e);
  void init_team(Executor& e);
  size_t process(Executor* e, graph::NodeId first, std::vector<graph::NodeId>& local,
                 std::vector<graph::NodeId>& ready, void* scratch, int threads);
  void finish(size_t ops);
  void report(Executor& e);
  bool step();
  void try_schedule();
  void sq_push(const std::vector<graph::NodeId>& ops);
  bool sq_pop(graph::NodeId& n);
  void wake_all();
};

// Called once an executor has run `ops` ops AND handed on what they made ready, so when the
// count reaches 0 no thread touches this run's state any more and the next run may reset it.
void ParallelRuntime::Impl::finish(size_t ops) {
  // acq_rel: the decrements form one release sequence, so the thread that reaches 0 (and the
  // client acquiring `done`) sees every op's output writes.
  const auto n = static_cast<int64_t>(ops);
  if (remaining.fetch_sub(n, std::memory_order_acq_rel) == n) {
    done.store(true, std::memory_order_release);
    done_parker.wake();
  }
}

// Runs `first`, then the small ops it makes ready (inline, in this thread), and collects the
// other ops that became ready in `ready`. With local continuation it keeps going while exactly
// one op becomes ready. e == nullptr: the client thread running bootstrap ops. Returns how many
// ops ran; the caller reports, then calls finish() with that count.
size_t ParallelRuntime::Impl::process(Executor* e, graph::NodeId first, std::vector<graph::NodeId>& local,
                                    std::vector<graph::NodeId>& ready, void* scratch, int threads) {
  const Plan& p = *plan;
  const size_t scratch_bytes = p.scratch_bytes();
  graph::NodeId n = first;
  size_t ran = 0;
  while (true) {
    local.clear();
    ready.clear();
    local.push_back(n);
    while (!local.empty()) {
      graph::NodeId m = local.back();
      local.pop_back();
      if (counts) counts[m].fetch_add(1, std::memory_order_relaxed);
      run_node(p, m, slots, threads, scratch, scratch_bytes);
      for (graph::NodeId s : p.successors(m)) {
        // acq_rel: release publishes m's outputs; the acquire by the last predecessor makes all
        // predecessors' outputs visible to whoever runs s (passed on through the rings).
        if (pending[s].fetch_sub(1, std::memory_order_acq_rel) == 1) (p.small(s) ? local : ready).push_back(s);
      }
      ++ran;
    }
    if (e == nullptr || shared) return ran;
    if (opt.local_continuation && ready.size() == 1 && e->inbox.empty_approx()) {
      n = ready[0];
      continue;
    }
    return ran;
  }
}

void ParallelRuntime::Impl::report(Executor& e) {
  auto push = [&](uint32_t item) {
    while (!e.reports.try_push(item)) {
      // Full: the scheduler role drains it. In embedded mode take the role ourselves.
      if (!dedicated) try_schedule();
      cpu_relax();
    }
  };
  for (graph::NodeId r : e.ready) push(r);
  push(kDone);
  // seq_cst pairs with the load in try_schedule() after the role is released: either that holder
  // sees our report and goes around again, or we find the lock free below.
  posted.fetch_add(1, std::memory_order_seq_cst);
  if (!dedicated) try_schedule();
}

// One scheduling step: drain every report ring, then give ready ops to executors with room in
// their inbox, highest key first. Returns whether anything happened.
bool ParallelRuntime::Impl::step() {
  bool progress = false;
  for (auto& ep : ex) {
    Executor& e = *ep;
    uint32_t x;
    while (e.reports.try_pop(x)) {
      progress = true;
      if (x == kDone) {
        if (inflight[e.id]-- == inbox_capacity) idle.set(e.id);
      } else {
        heap.push(x);
      }
    }
  }
  while (!heap.empty() && idle.any()) {
    const size_t i = idle.first();
    const graph::NodeId n = heap.pop();
    GRAPHI_CHECK(ex[i]->inbox.try_push(n), "executor inbox full although it was marked idle");
    if (++inflight[i] == inbox_capacity) idle.clear(i);
    ex[i]->parker.wake();
    progress = true;
  }
  return progress;
}

// Embedded mode: take the scheduler role if nobody holds it. A reporter that finds the role
// taken relies on the holder: after releasing, the holder re-reads `posted` and goes around
// again if a report arrived meanwhile, so no report waits for a step that never comes.
void ParallelRuntime::Impl::try_schedule() {
  while (true) {
    if (sched_lock.exchange(true, std::memory_order_seq_cst)) return;
    const uint64_t seen = posted.load(std::memory_order_seq_cst);
    step();
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

void ParallelRuntime::Impl::wake_all() {
  for (auto& e : ex) e->parker.wake();
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

void ParallelRuntime::Impl::executor_main(Executor& e) {
  char name[16];
  std::snprintf(name, sizeof name, "graphi-ex%d", e.id);
  pthread_setname_np(pthread_self(), name);
  init_team(e);
  started.fetch_add(1, std::memory_order_release);
  started.notify_all();

  void* scratch = e.scratch.get();
  const int k = opt.threads;
  while (true) {
    e.parker.wait(
        [&] {
          return !e.inbox.empty_approx() || (shared && sq_size.load(std::memory_order_acquire) != 0) ||
                 stopping.load(std::memory_order_acquire);
        },
        opt.spin_budget);
    uint32_t item;
    if (e.inbox.try_pop(item)) {
      if (item == kStop) return;
      if (item == kProbe) {
        init_team(e);  // re-binding to the same core is harmless; records current tids
        e.probed.store(true, std::memory_order_release);
        e.probed.notify_all();
        continue;
      }
      const size_t ran = process(&e, item, e.local, e.ready, scratch, k);
      if (shared) sq_push(e.ready);
      else report(e);
      finish(ran);
    } else if (shared) {
      graph::NodeId n;
      if (sq_pop(n)) {
        const size_t ran = process(&e, n, e.local, e.ready, scratch, k);
        sq_push(e.ready);
        finish(ran);
      }
    } else if (stopping.load(std::memory_order_acquire)) {
      return;
    }
  }
}

ParallelRuntime::ParallelRuntime() : impl_(std::make_unique<Impl>()) {}

Result<std::unique_ptr<ParallelRuntime>> ParallelRuntime::create(const Plan& plan, const RuntimeOptions& o) {
  if (o.executors < 1 || o.threads < 1)
    return Status::invalid_argument("parallel runtime: executors and threads must be at least 1, got " +
                                    std::to_string(o.executors) + " x " + std::to_string(o.threads));
  if (o.policy == Policy::kSequential)
    return Status::invalid_argument("parallel runtime: the sequential policy runs on the reference executor");
  if (SpscRing<uint32_t>::rounded_capacity(static_cast<size_t>(o.ring_capacity)) == 0)
    return Status::invalid_argument("ring capacity must be in [1, 2^30], got " + std::to_string(o.ring_capacity));
  if (o.pin && (!o.placement || !o.binder))
    return Status::invalid_argument("parallel runtime: pinning needs a placement and a binder");
  if (o.pin && (o.placement->executors != o.executors || o.placement->threads != o.threads))
    return Status::invalid_argument("parallel runtime: the placement is for " +
                                    std::to_string(o.placement->executors) + "x" +
                                    std::to_string(o.placement->threads) + ", not " +
                                    std::to_string(o.executors) + "x" + std::to_string(o.threads));
  if (plan.num_nodes() >= kProbe)
    return Status::unsupported("parallel runtime: too many nodes (" + std::to_string(plan.num_nodes()) + ")");

  std::unique_ptr<ParallelRuntime> rt(new ParallelRuntime());
  Impl& im = *rt->impl_;
  im.plan = &plan;
  im.opt = o;
  im.shared = o.policy == Policy::kSharedQueue;
  im.inbox_capacity = SpscRing<uint32_t>::rounded_capacity(static_cast<size_t>(o.ring_capacity));
  im.dedicated = o.dedicated_scheduler.has_value()
                     ? *o.dedicated_scheduler
                     : (o.placement != nullptr && o.placement->scheduler.has_value());
  const size_t n = plan.num_nodes();

  im.keys.resize(n);
  for (size_t i = 0; i < n; ++i)
    im.keys[i] = o.policy == Policy::kCriticalPath ? plan.level(static_cast<graph::NodeId>(i)) : -static_cast<double>(i);
  im.pending.reset(new std::atomic<uint32_t>[n == 0 ? 1 : n]);
  if (o.count_executions) im.counts.reset(new std::atomic<uint32_t>[n == 0 ? 1 : n]);
  im.sq.reserve(n);

  size_t max_out = 0;
  for (size_t i = 0; i < n; ++i) max_out = std::max(max_out, plan.successors(static_cast<graph::NodeId>(i)).size());
  // Room for one op's report (its ready successors plus kDone) at least; more lets executors
  // run ahead of a busy scheduler.
  const size_t report_capacity = pow2_at_least(std::max<size_t>(max_out + 1, std::min<size_t>(n + 1, 4096)));
  const size_t scratch_bytes = plan.scratch_bytes();
  for (int i = 0; i < o.executors; ++i) {
    auto e = std::make_unique<Executor>(i, im.inbox_capacity, report_capacity);
    if (scratch_bytes) {
      e->scratch.reset(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64));
      if (!e->scratch) return Status(StatusCode::kOutOfMemory, "cannot allocate executor scratch");
    }
    e->local.reserve(n);
    e->ready.reserve(n);
    im.ex.push_back(std::move(e));
  }
  if (scratch_bytes) {
    im.client_scratch.reset(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64));
    if (!im.client_scratch) return Status(StatusCode::kOutOfMemory, "cannot allocate bootstrap scratch");
  }
  im.idle.reset(im.ex.size());
  im.inflight.assign(im.ex.size(), 0);

  for (auto& e : im.ex) {
    Executor* ep = e.get();
    ep->thread = std::thread([&im, ep] { im.executor_main(*ep); });
  }
  // Wait until every team is up and pinned.
  for (int s = im.started.load(std::memory_order_acquire); s < o.executors; s = im.started.load(std::memory_order_acquire))
    im.started.wait(s, std::memory_order_acquire);
  for (auto& e : im.ex)
    if (!e->start_status.is_ok()) return e->start_status;  // the destructor joins the threads
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
  }
  for (auto& e : im.ex)
    if (e->thread.joinable()) e->thread.join();
}

Status ParallelRuntime::run(SlotTables slots) {
  Impl& im = *impl_;
  const Plan& p = *im.plan;
  const size_t n = p.num_nodes();
  if (n == 0) return Status::ok();

  im.slots = slots;
  std::span<const uint32_t> init = p.initial_pending();
  for (size_t i = 0; i < n; ++i) im.pending[i].store(init[i], std::memory_order_relaxed);
  if (im.counts)
    for (size_t i = 0; i < n; ++i) im.counts[i].store(0, std::memory_order_relaxed);
  im.done.store(false, std::memory_order_relaxed);
  im.remaining.store(static_cast<int64_t>(n), std::memory_order_relaxed);
  // Reports left from the previous run (its last kDone markers) belong to no one now.
  for (auto& e : im.ex) {
    uint32_t x;
    while (e->reports.try_pop(x)) {}
  }
  im.heap.reset(im.keys);
  im.idle.reset(im.ex.size());
  for (size_t i = 0; i < im.ex.size(); ++i) im.idle.set(i);
  std::fill(im.inflight.begin(), im.inflight.end(), 0u);
  im.sq.clear();
  im.sq_head = 0;
  im.sq_size.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // the ring pushes below publish all this

  // Bootstrap: ops ready at the start that are small run here, on the client thread (the
  // light-weight executor); the rest go to the executors.
  std::vector<graph::NodeId> start, local, ready;
  for (size_t i = 0; i < n; ++i)
    if (init[i] == 0) start.push_back(static_cast<graph::NodeId>(i));
  std::vector<graph::NodeId> big;
  for (graph::NodeId s : start) {
    if (!p.small(s)) {
      big.push_back(s);
      continue;
    }
    const size_t ran = im.process(nullptr, s, local, ready, im.client_scratch.get(), 1);
    big.insert(big.end(), ready.begin(), ready.end());
    im.finish(ran);
  }
  if (im.done.load(std::memory_order_acquire)) return Status::ok();  // all ops were small

  if (im.shared) {
    im.sq_push(big);
  } else {
    // Seed the heap under the role lock (executors cannot report before they get work).
    while (im.sched_lock.exchange(true, std::memory_order_seq_cst)) cpu_relax();
    for (graph::NodeId b : big) im.heap.push(b);
    const uint64_t seen = im.posted.load(std::memory_order_seq_cst);
    im.step();
    im.sched_lock.store(false, std::memory_order_seq_cst);
    if (!im.dedicated && im.posted.load(std::memory_order_seq_cst) != seen) im.try_schedule();
  }

  if (im.dedicated && !im.shared) {
    // The paper's design: the client thread polls the report rings in a loop on a core of its
    // own. It is the caller's thread, so it moves to the reserved core only for this run.
    ClientPin pin(im.opt);
    uint32_t idle_steps = 0;
    while (!im.done.load(std::memory_order_acquire)) {
      if (im.step()) {
        idle_steps = 0;
      } else if (++idle_steps > 4096) {
        std::this_thread::yield();
      } else {
        cpu_relax();
      }
    }
  } else {
    // Without a core of its own (the role runs inside the executors) the client sleeps at once:
    // spinning would take a core from an executor for the spin budget of every run.
    const auto budget = im.dedicated ? im.opt.spin_budget : std::chrono::microseconds(0);
    im.done_parker.wait([&] { return im.done.load(std::memory_order_acquire); }, budget);
  }
  return Status::ok();
}

const RuntimeOptions& ParallelRuntime::options() const { return impl_->opt; }
bool ParallelRuntime::dedicated_scheduler() const { return impl_->dedicated; }

std::vector<uint32_t> ParallelRuntime::execution_counts() const {
  std::vector<uint32_t> out;
  if (!impl_->counts) return out;
  for (size_t i = 0; i < impl_->plan->num_nodes(); ++i) out.push_back(impl_->counts[i].load());
  return out;
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
    GRAPHI_CHECK(e->inbox.try_push(kProbe), "probe while a run is in flight");
    e->parker.wake();
  }
  for (auto& e : impl_->ex)
    while (!e->probed.load(std::memory_order_acquire)) e->probed.wait(false, std::memory_order_acquire);
  return team_thread_ids();
}

}  // namespace graphi::engine
