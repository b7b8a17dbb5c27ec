#include "tests/stress/stress_harness.h"

#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "engine/model_loader.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

namespace graphi::test {

namespace {

using Clock = std::chrono::steady_clock;

double since_s(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A model with a few input sets and the sequential reference executor's outputs for each.
struct Model {
  std::string name;
  std::shared_ptr<const graph::Graph> graph;
  std::vector<engine::NamedTensors> inputs;
  std::vector<engine::NamedTensors> expected;
  std::shared_ptr<const engine::Plan> plans[3];  // shared Plans for teams of 1 and 2
};

Model make_model(std::string name, std::shared_ptr<const graph::Graph> g, uint64_t seed) {
  Model m;
  m.name = std::move(name);
  m.graph = std::move(g);
  engine::SessionOptions seq;  // the reference: sequential, 1 thread
  auto ref = value_or_throw(engine::Session::create(m.graph, seq));
  for (uint64_t i = 0; i < 3; ++i) {
    m.inputs.push_back(random_inputs(*m.graph, seed * 100 + i * 7));
    m.expected.push_back(value_or_throw(ref->run(m.inputs.back())));
  }
  for (int k = 1; k <= 2; ++k)
    m.plans[k] = std::make_shared<const engine::Plan>(value_or_throw(engine::compile(m.graph, k)));
  return m;
}

std::vector<Model> make_models() {
  std::vector<Model> models;
  RandomDagSpec wide;  // many short ops: scheduler-bound runs
  wide.nodes = 48;
  wide.seed = 11;
  models.push_back(make_model("random_dag_48", random_dag(wide), 1));
  RandomDagSpec big;  // bigger tensors and more MatMuls: teams of 2 split the GEMMs
  big.nodes = 24;
  big.rows = 16;
  big.cols = 64;
  big.matmul_share = 0.4;
  big.seed = 12;
  models.push_back(make_model("random_dag_24_mm", random_dag(big), 2));
  // An unrolled LSTM through the default passes (fused sequence op: one OpenMP region for the
  // whole sequence, team barriers per step), a longer run for destruction to hit.
  models::RnnSpec spec;
  spec.input = 16;
  spec.hidden = 32;
  spec.layers = 2;
  spec.batch = 2;
  spec.seq = 8;
  spec.seed = 3;
  auto lstm = std::make_shared<const graph::Graph>(
      value_or_throw(models::build_lstm(spec, ops::Registry::get())));
  models.push_back(make_model("lstm_fused", value_or_throw(engine::optimize_graph(lstm)).graph, 3));
  models.push_back(make_model("lstm_unrolled", lstm, 4));
  return models;
}

struct Config {
  std::string policy;
  int executors = 1, threads = 1;
  bool pin = false;
  std::optional<bool> dedicated;
  bool shared_plan = true;
  std::string str() const {
    std::string s = policy + " " + std::to_string(executors) + "x" + std::to_string(threads) +
                    (pin ? " pinned" : " unpinned");
    if (dedicated) s += *dedicated ? " dedicated-scheduler" : " embedded-scheduler";
    return s + (shared_plan ? " shared-plan" : " own-plan");
  }
};

// One live Session. Clients take a reference under the slot's lock and count themselves in
// `active`; the churn thread swaps the entry out of its slot (no new callers), then destroys the
// Session while they are inside run() or after cancel().
struct Entry {
  const Model* model = nullptr;
  Config config;
  std::unique_ptr<engine::Session> session;
  std::atomic<int> active{0};
  std::atomic<bool> closing{false};
};

struct Slot {
  std::mutex mu;
  std::shared_ptr<Entry> entry;
};

// What each client is doing, for the watchdog's dump.
struct ClientState {
  std::atomic<int> phase{0};  // 0 idle, 1 picked, 2 in run(), 3 checking
  std::atomic<int> slot{-1};
  std::atomic<const Entry*> entry{nullptr};
  std::atomic<int64_t> since_ns{0};
  std::atomic<uint64_t> runs{0};
};

const char* phase_name(int p) {
  static const char* names[] = {"idle", "picked a session", "inside run()", "checking outputs"};
  return p >= 0 && p < 4 ? names[p] : "?";
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Stack dump on demand: the watchdog signals every thread of the process; each prints its own
// backtrace (addresses and module offsets: `addr2line -e BINARY +OFFSET` names them).
void dump_stack_handler(int) {
  char head[64];
  const int n =
      std::snprintf(head, sizeof head, "--- thread %ld:\n", static_cast<long>(syscall(SYS_gettid)));
  if (n > 0) (void)!write(2, head, static_cast<size_t>(n));
  void* frames[48];
  const int depth = backtrace(frames, 48);
  backtrace_symbols_fd(frames, depth, 2);
}

void dump_all_stacks() {
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc's unwinder outside the signal handler
  struct sigaction sa {};
  sa.sa_handler = dump_stack_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, nullptr);
  DIR* d = opendir("/proc/self/task");
  if (!d) return;
  const long self = syscall(SYS_gettid);
  while (dirent* ent = readdir(d)) {
    const long tid = std::atol(ent->d_name);
    if (tid <= 0 || tid == self) continue;
    syscall(SYS_tgkill, getpid(), tid, SIGUSR2);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  closedir(d);
}

}  // namespace

long current_rss_kb() {
  long pages_total = 0, pages_rss = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2) pages_rss = 0;
    std::fclose(f);
  }
  return pages_rss * (sysconf(_SC_PAGESIZE) / 1024);
}

std::string StressReport::summary() const {
  std::ostringstream s;
  s << "runs " << runs << " (ok " << ok << ", wrong " << wrong << ", cancelled " << cancelled
    << ", other errors " << errors << ") in " << seconds << " s; sessions created " << created
    << ", destroyed " << destroyed << " (" << destroyed_in_flight << " with runs inside, "
    << cancel_first << " cancelled first); RSS " << rss_start_kb << " kB after "
    << runs_at_rss_start << " runs, " << rss_end_kb << " kB at the end (max " << rss_max_kb << ")";
  return s.str();
}

StressReport run_stress(const StressOptions& o) {
  const std::vector<Model> models = make_models();
  std::vector<Config> configs;
  for (const std::string& p : o.policies) {
    const bool seq = p == "sequential";
    std::vector<std::pair<int, int>> splits = {{1, 1}, {1, 2}};
    if (!seq) splits.push_back({2, 1});
    for (auto [e, t] : splits)
      for (int variant = 0; variant < (seq ? 2 : 4); ++variant) {
        Config c;
        c.policy = p;
        c.executors = e;
        c.threads = t;
        c.shared_plan = variant % 2 == 0;
        // Pinned sessions share the machine's cores with every other one: the placement
        // checks n x k against the cores, not against other Sessions.
        c.pin =
            !seq && variant == 1 && e * t <= static_cast<int>(std::thread::hardware_concurrency());
        if (!seq && variant >= 2) c.dedicated = variant == 3;
        configs.push_back(c);
      }
  }

  std::mutex report_mu;
  StressReport rep;
  auto failure = [&](std::string msg) {
    std::lock_guard<std::mutex> lock(report_mu);
    if (rep.failures.size() < 8) rep.failures.push_back(std::move(msg));
  };

  auto make_entry = [&](std::mt19937_64& rng) -> std::shared_ptr<Entry> {
    auto e = std::make_shared<Entry>();
    e->model = &models[rng() % models.size()];
    e->config = configs[rng() % configs.size()];
    engine::SessionOptions so;
    so.scheduler = e->config.policy;
    so.executors = e->config.executors;
    so.threads = e->config.threads;
    so.pin = e->config.pin;
    so.dedicated_scheduler = e->config.dedicated;
    auto s = e->config.shared_plan ? engine::Session::create(e->model->plans[e->config.threads], so)
                                   : engine::Session::create(e->model->graph, so);
    if (!s.is_ok()) {
      failure("creating " + e->model->name + " " + e->config.str() + ": " + s.status().message());
      return nullptr;
    }
    e->session = std::move(s).value();
    return e;
  };

  std::vector<Slot> slots(static_cast<size_t>(o.slots));
  std::mt19937_64 main_rng(o.seed);
  for (Slot& s : slots) s.entry = make_entry(main_rng);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> progress{0};
  std::atomic<uint64_t> runs{0}, ok{0}, wrong{0}, cancelled{0}, errors{0};
  std::atomic<uint64_t> created{static_cast<uint64_t>(o.slots)}, destroyed{0}, in_flight{0},
      cancel_first{0};
  std::vector<ClientState> states(static_cast<size_t>(o.clients));

  auto client = [&](int id) {
    std::mt19937_64 rng(o.seed * 1000 + static_cast<uint64_t>(id));
    ClientState& st = states[static_cast<size_t>(id)];
    while (!stop.load(std::memory_order_relaxed)) {
      const size_t si = rng() % slots.size();
      std::shared_ptr<Entry> e;
      {
        std::lock_guard<std::mutex> lock(slots[si].mu);
        e = slots[si].entry;
        if (e) e->active.fetch_add(1);
      }
      if (!e) {
        std::this_thread::yield();
        continue;
      }
      st.slot = static_cast<int>(si);
      st.entry = e.get();
      st.since_ns = now_ns();
      st.phase = 1;
      const size_t k = rng() % e->model->inputs.size();
      st.phase = 2;
      Result<engine::NamedTensors> out = e->session->run(e->model->inputs[k]);
      st.phase = 3;
      runs.fetch_add(1, std::memory_order_relaxed);
      if (out.is_ok()) {
        const engine::NamedTensors& want = e->model->expected[k];
        std::string diff;
        if (out->size() != want.size()) diff = "output count " + std::to_string(out->size());
        for (size_t i = 0; diff.empty() && i < want.size(); ++i) {
          diff = compare_to_reference((*out)[i].second, want[i].second);
          if (!diff.empty()) diff = "output '" + want[i].first + "': " + diff;
        }
        if (diff.empty()) {
          ok.fetch_add(1, std::memory_order_relaxed);
        } else {
          wrong.fetch_add(1, std::memory_order_relaxed);
          failure("wrong output: " + e->model->name + " " + e->config.str() + " inputs " +
                  std::to_string(k) + ": " + diff);
        }
      } else if (e->closing.load() &&
                 out.status().message().find("run cancelled") != std::string::npos) {
        cancelled.fetch_add(1, std::memory_order_relaxed);
      } else {
        errors.fetch_add(1, std::memory_order_relaxed);
        failure("error: " + e->model->name + " " + e->config.str() + ": " + out.status().message());
      }
      st.phase = 0;
      st.entry = nullptr;
      st.runs.fetch_add(1, std::memory_order_relaxed);
      e->active.fetch_sub(1);
      progress.fetch_add(1, std::memory_order_relaxed);
    }
  };

  // Replaces one slot's Session every churn_ms; the old one is destroyed either while its
  // callers are inside run() (the destructor cancels them) or after cancel().
  auto churn = [&] {
    std::mt19937_64 rng(o.seed * 7 + 3);
    while (!stop.load(std::memory_order_relaxed)) {
      std::this_thread::sleep_for(
          std::chrono::microseconds(static_cast<int64_t>(o.churn_ms * 1000)));
      const size_t si = rng() % slots.size();
      std::shared_ptr<Entry> fresh = make_entry(rng);
      if (fresh) created.fetch_add(1);
      std::shared_ptr<Entry> old;
      {
        std::lock_guard<std::mutex> lock(slots[si].mu);
        old.swap(slots[si].entry);
        slots[si].entry = fresh;
      }
      if (!old) continue;
      old->closing.store(true);
      if (rng() % 2 == 0) {
        // Every caller that took this entry is inside run() (or gone): the destructor must
        // cancel them. The entry left the slot, so `active` only falls; equal counts read
        // between two equal reads of `active` mean no caller is between taking it and run().
        int calls = 0;
        while (true) {
          const int a1 = old->active.load();
          calls = old->session->run_calls();
          if (old->active.load() == a1 && calls == a1) break;
          std::this_thread::yield();
        }
        if (calls > 0) in_flight.fetch_add(1);
        old->session.reset();
      } else {
        old->session->cancel();
        if (old->active.load() > 0) cancel_first.fetch_add(1);
        while (old->active.load() > 0) std::this_thread::yield();
        old->session.reset();
      }
      destroyed.fetch_add(1);
      progress.fetch_add(1, std::memory_order_relaxed);
    }
  };

  const auto t0 = Clock::now();
  long rss_start = 0, rss_max = 0;
  uint64_t runs_at_start = 0;
  std::atomic<bool> finished{false};
  // The watchdog: fails the process (state, stacks, abort) when nothing progresses.
  std::thread watchdog([&] {
    uint64_t last = progress.load();
    auto last_change = Clock::now();
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const uint64_t now = progress.load();
      if (now != last) {
        last = now;
        last_change = Clock::now();
        continue;
      }
      if (since_s(last_change) < o.watchdog_s) continue;
      std::fprintf(stderr,
                   "\nstress watchdog: no run finished and no Session replaced for %.0f s "
                   "(stop requested: %d)\n",
                   o.watchdog_s, stop.load() ? 1 : 0);
      for (size_t i = 0; i < states.size(); ++i) {
        const ClientState& st = states[i];
        const Entry* e = st.entry.load();
        std::fprintf(stderr, "  client %zu: %s, slot %d, %s for %.3f s, %llu runs done\n", i,
                     phase_name(st.phase.load()), st.slot.load(),
                     e ? (e->model->name + " " + e->config.str()).c_str() : "-",
                     static_cast<double>(now_ns() - st.since_ns.load()) * 1e-9,
                     static_cast<unsigned long long>(st.runs.load()));
      }
      for (size_t i = 0; i < slots.size(); ++i) {
        std::unique_lock<std::mutex> lock(slots[i].mu, std::try_to_lock);
        if (!lock.owns_lock()) {
          std::fprintf(stderr, "  slot %zu: lock held\n", i);
          continue;
        }
        const Entry* e = slots[i].entry.get();
        if (e)
          std::fprintf(stderr, "  slot %zu: %s %s, %d callers, %d inside run()\n", i,
                       e->model->name.c_str(), e->config.str().c_str(), e->active.load(),
                       e->session ? e->session->run_calls() : -1);
      }
      std::fflush(stderr);
      dump_all_stacks();
      std::fprintf(stderr, "stress watchdog: aborting\n");
      std::abort();
    }
  });

  std::vector<std::thread> threads;
  for (int i = 0; i < o.clients; ++i) threads.emplace_back(client, i);
  std::thread churner(churn);
  int last_report = 0;
  while (since_s(t0) < o.seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const long rss = current_rss_kb();
    rss_max = std::max(rss_max, rss);
    if (rss_start == 0 && since_s(t0) >= 0.1 * o.seconds) {
      rss_start = rss;
      runs_at_start = runs.load();
    }
    if (o.verbose && static_cast<int>(since_s(t0)) > last_report) {
      last_report = static_cast<int>(since_s(t0));
      std::fprintf(stderr, "stress: %d s, %llu runs, RSS %ld kB\n", last_report,
                   static_cast<unsigned long long>(runs.load()), rss);
    }
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  churner.join();
  for (Slot& s : slots) {
    if (s.entry) destroyed.fetch_add(1);
    s.entry.reset();
  }
  finished.store(true);
  watchdog.join();

  rep.seconds = since_s(t0);
  rep.runs = runs;
  rep.ok = ok;
  rep.wrong = wrong;
  rep.cancelled = cancelled;
  rep.errors = errors;
  rep.created = created;
  rep.destroyed = destroyed;
  rep.destroyed_in_flight = in_flight;
  rep.cancel_first = cancel_first;
  rep.rss_start_kb = rss_start;
  rep.runs_at_rss_start = runs_at_start;
  rep.rss_end_kb = current_rss_kb();
  rep.rss_max_kb = std::max(rss_max, rep.rss_end_kb);
  return rep;
}

}  // namespace graphi::test
