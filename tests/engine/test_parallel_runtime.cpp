// The parallel runtime against the sequential reference executor: every policy and
// configuration gives the same outputs, runs every op exactly once, and never deadlocks.
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>

#include "engine/parallel_runtime.h"
#include "engine/placement.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "models/gru.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;

namespace {

// Fails the whole test binary instead of letting CI hang when a run deadlocks.
class Watchdog {
 public:
  Watchdog(std::chrono::seconds limit, std::string what)
      : what_(std::move(what)), thread_([this, limit] {
          auto deadline = std::chrono::steady_clock::now() + limit;
          while (!stop_.load()) {
            if (std::chrono::steady_clock::now() > deadline) {
              std::fprintf(stderr, "watchdog: '%s' did not finish in %lld s (deadlock?)\n",
                           what_.c_str(), static_cast<long long>(limit.count()));
              std::_Exit(3);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
        }) {}
  ~Watchdog() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::string what_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct Config {
  int executors, threads;
};
// 1x1, 1x2, 2x1 fit this 2-core machine pinned; 4x1, 2x2, 8x1 oversubscribe it (unpinned).
const Config kConfigs[] = {{1, 1}, {1, 2}, {2, 1}, {4, 1}, {2, 2}, {8, 1}};
const char* kPolicies[] = {"cpf", "fifo", "shared-queue"};

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

SessionOptions options_for(Config c, const std::string& policy, bool dedicated = false) {
  SessionOptions o;
  o.executors = c.executors;
  o.threads = c.threads;
  o.scheduler = policy;
  o.pin = c.executors * c.threads <= usable_cores();
  o.count_executions = true;
  if (dedicated) o.dedicated_scheduler = true;
  return o;
}

// Runs `g` under the reference executor with `threads` threads.
NamedTensors reference_outputs(std::shared_ptr<const graph::Graph> g, int threads,
                               const NamedTensors& in) {
  SessionOptions o;
  o.threads = threads;
  auto s = value_or_throw(Session::create(g, o));
  return value_or_throw(s->run(in));
}

void check_same(const NamedTensors& got, const NamedTensors& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].first == want[i].first);
    // The same kernels with the same team size run on the same data: results are bitwise equal.
    CHECK(test::max_rel_error(got[i].second, want[i].second) == 0.0);
  }
}

void check_exactly_once(const Session& s, const std::string& what) {
  INFO(what);
  std::vector<uint32_t> counts = s.execution_counts();
  REQUIRE(counts.size() == s.plan().num_nodes());
  for (size_t i = 0; i < counts.size(); ++i) {
    INFO("node " << s.plan().graph().node(static_cast<graph::NodeId>(i)).name);
    CHECK(counts[i] == 1);
  }
}

}  // namespace

TEST_CASE("parallel: every policy and configuration matches the reference on random DAGs",
          "[parallel]") {
  Watchdog dog(std::chrono::seconds(300), "policies x configurations on random DAGs");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    test::RandomDagSpec spec;
    spec.nodes = 60;
    spec.seed = seed;
    auto g = test::random_dag(spec);
    NamedTensors in = test::random_inputs(*g, seed * 100);
    for (Config c : kConfigs) {
      NamedTensors want = reference_outputs(g, c.threads, in);
      for (const char* policy : kPolicies) {
        for (bool dedicated : {false, true}) {
          std::string what = std::string(policy) + " " + std::to_string(c.executors) + "x" +
                             std::to_string(c.threads) + (dedicated ? " dedicated" : " embedded") +
                             " seed " + std::to_string(seed);
          auto s = value_or_throw(Session::create(g, options_for(c, policy, dedicated)));
          for (int rep = 0; rep < 3; ++rep) {
            check_same(value_or_throw(s->run(in)), want, what);
            check_exactly_once(*s, what);
          }
        }
      }
    }
  }
}

TEST_CASE("parallel: LSTM and GRU models match the reference under every policy", "[parallel]") {
  Watchdog dog(std::chrono::seconds(300), "LSTM/GRU under every policy");
  models::RnnSpec spec;
  spec.input = 16;
  spec.hidden = 32;
  spec.layers = 2;
  spec.batch = 2;
  spec.seq = 6;
  spec.seed = 7;
  for (bool gru : {false, true}) {
    auto g = std::make_shared<const graph::Graph>(
        value_or_throw(gru ? models::build_gru(spec, ops::Registry::get())
                           : models::build_lstm(spec, ops::Registry::get())));
    NamedTensors in = test::random_inputs(*g, 11);
    for (Config c : kConfigs) {
      NamedTensors want = reference_outputs(g, c.threads, in);
      for (const char* policy : kPolicies) {
        std::string what = std::string(gru ? "GRU " : "LSTM ") + policy + " " +
                           std::to_string(c.executors) + "x" + std::to_string(c.threads);
        auto s = value_or_throw(Session::create(g, options_for(c, policy)));
        check_same(value_or_throw(s->run(in)), want, what);
        check_exactly_once(*s, what);
      }
    }
  }
}

TEST_CASE("parallel: 10,000 runs of random DAGs finish (no deadlock)", "[parallel][stress]") {
  Watchdog dog(std::chrono::seconds(240), "10,000 random DAG runs");
  int runs = 0;
  uint64_t seed = 1000;
  const Config configs[] = {{2, 1}, {4, 1}, {1, 2}};
  while (runs < 10000) {
    test::RandomDagSpec spec;
    spec.nodes = 12 + static_cast<int>(seed % 30);
    spec.rows = 2;
    spec.cols = 4;
    spec.seed = seed++;
    auto g = test::random_dag(spec);
    NamedTensors in = test::random_inputs(*g, seed);
    NamedTensors want = reference_outputs(g, 1, in);
    for (Config c : configs) {
      if (c.threads != 1) continue;  // compare against the 1-thread reference only
      for (const char* policy : kPolicies) {
        auto s = value_or_throw(Session::create(g, options_for(c, policy, (seed & 1) != 0)));
        for (int rep = 0; rep < 40 && runs < 10000; ++rep, ++runs) {
          NamedTensors got = value_or_throw(s->run(in));
          if (rep == 0 || rep == 39) {
            check_same(got, want, std::string(policy) + " seed " + std::to_string(spec.seed));
            check_exactly_once(*s, policy);
          }
        }
      }
    }
  }
  CHECK(runs == 10000);
}

// Regression (TSan lane): run() reset the shared queue without its lock while an executor of the
// previous run still polled it (executors pop whenever their heap is empty, also after the run
// is done). The poll could read the old head against the cleared size and run a stale op in the
// next run. Back-to-back short runs keep the executors polling across every run boundary; TSan
// reports the unlocked reset on the first boundary, a Release build may see an op run twice.
TEST_CASE("parallel: shared-queue back-to-back runs take no op of another run", "[parallel]") {
  Watchdog dog(std::chrono::seconds(240), "shared-queue back-to-back runs");
  test::RandomDagSpec spec;
  spec.nodes = 16;
  spec.rows = 2;
  spec.cols = 4;
  spec.seed = 77;
  auto g = test::random_dag(spec);
  NamedTensors in = test::random_inputs(*g, 78);
  NamedTensors want = reference_outputs(g, 1, in);
  for (bool dedicated : {false, true}) {
    const std::string what = std::string("shared-queue 2x1") + (dedicated ? " dedicated" : "");
    auto s = value_or_throw(Session::create(g, options_for({2, 1}, "shared-queue", dedicated)));
    for (int rep = 0; rep < 300; ++rep) {
      check_same(value_or_throw(s->run(in)), want, what + " run " + std::to_string(rep));
      check_exactly_once(*s, what + " run " + std::to_string(rep));
    }
  }
}

TEST_CASE("parallel: ring capacity and local continuation do not change results", "[parallel]") {
  test::RandomDagSpec spec;
  spec.nodes = 80;
  spec.seed = 42;
  auto g = test::random_dag(spec);
  NamedTensors in = test::random_inputs(*g, 5);
  NamedTensors want = reference_outputs(g, 1, in);
  for (int cap : {1, 2, 8}) {
    for (bool cont : {false, true}) {
      SessionOptions o = options_for({2, 1}, "cpf");
      o.ring_capacity = cap;
      o.local_continuation = cont;
      auto s = value_or_throw(Session::create(g, o));
      check_same(value_or_throw(s->run(in)), want, "capacity " + std::to_string(cap));
      check_exactly_once(*s, "capacity");
    }
  }
}

TEST_CASE("parallel: pinned teams run on their cores and keep their threads across 1,000 ops",
          "[parallel][pinning]") {
  if (usable_cores() < 2) {
    WARN("fewer than 2 usable cores: skipped");
    return;
  }
  test::RandomDagSpec spec;
  spec.nodes = 100;
  spec.seed = 3;
  auto g = test::random_dag(spec);
  NamedTensors in = test::random_inputs(*g, 9);
  for (Config c : {Config{2, 1}, Config{1, 2}}) {
    SessionOptions o = options_for(c, "cpf");
    auto s = value_or_throw(Session::create(g, o));
    const Placement* pl = s->placement();
    REQUIRE(pl != nullptr);
    ParallelRuntime* rt = s->runtime();
    REQUIRE(rt != nullptr);
    auto cpus = rt->team_cpus();
    auto tids_before = rt->team_thread_ids();
    for (size_t e = 0; e < cpus.size(); ++e)
      for (size_t m = 0; m < cpus[e].size(); ++m) {
        INFO("executor " << e << " member " << m);
        CHECK(cpus[e][m] == pl->teams[e].pus[m]);
      }
    for (int r = 0; r < 10; ++r) value_or_throw(s->run(in));  // 10 runs x 100 ops
    auto tids_after = rt->probe_team_thread_ids();
    CHECK(tids_after == tids_before);
    std::set<pid_t> all;
    for (auto& t : tids_after) all.insert(t.begin(), t.end());
    CHECK(all.size() == static_cast<size_t>(c.executors * c.threads));  // no thread shared
  }
}

TEST_CASE(
    "parallel: sessions are destroyed cleanly right after runs, and runs may come from many "
    "threads",
    "[parallel]") {
  Watchdog dog(std::chrono::seconds(120), "session lifecycle");
  test::RandomDagSpec spec;
  spec.nodes = 30;
  spec.seed = 77;
  auto g = test::random_dag(spec);
  NamedTensors in = test::random_inputs(*g, 1);
  NamedTensors want = reference_outputs(g, 1, in);
  for (int i = 0; i < 50; ++i) {
    auto s = value_or_throw(Session::create(g, options_for({4, 1}, kPolicies[i % 3])));
    check_same(value_or_throw(s->run(in)), want, "lifecycle");
  }  // each destructor joins its 4 executors
  auto s = value_or_throw(Session::create(g, options_for({2, 1}, "cpf")));
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r) {
        NamedTensors got = value_or_throw(s->run(in));
        for (size_t i = 0; i < got.size(); ++i)
          if (test::max_rel_error(got[i].second, want[i].second) != 0.0) ++bad;
      }
    });
  for (auto& c : callers) c.join();
  CHECK(bad.load() == 0);
}

TEST_CASE(
    "parallel: one executor of one thread runs on the calling thread, and callers keep their "
    "affinity",
    "[parallel]") {
  // With a spare core the placement reserves one for a scheduler, but a single executor keeps
  // every op it makes ready: the client thread plays the executor on its core for the run (no
  // scheduler thread to wake at the end). The client's own affinity must be what it was after
  // every run, whether the run moved it to the executor's core or found it there already.
  Watchdog dog(std::chrono::seconds(120), "solo executor");
  test::RandomDagSpec spec;
  spec.nodes = 50;
  spec.seed = 91;
  auto g = test::random_dag(spec);
  NamedTensors in = test::random_inputs(*g, 3);
  NamedTensors want = reference_outputs(g, 1, in);
  auto affinity = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    return set;
  };
  const cpu_set_t before = affinity();
  for (const char* policy : {"cpf", "fifo"}) {
    for (Config c : {Config{1, 1}, Config{2, 1}}) {
      if (c.executors > usable_cores()) continue;
      const std::string what = std::string(policy) + " " + std::to_string(c.executors) + "x1";
      auto s = value_or_throw(Session::create(g, options_for(c, policy)));
      if (c.executors == 1) CHECK_FALSE(s->runtime()->dedicated_scheduler());
      for (int rep = 0; rep < 20; ++rep) {
        check_same(value_or_throw(s->run(in)), want, what);
        check_exactly_once(*s, what);
        const cpu_set_t now = affinity();
        CHECK(CPU_EQUAL(&now, &before));
      }
      // Runs from other threads (serialized by the Session) keep theirs too.
      std::vector<std::thread> callers;
      std::atomic<int> bad{0};
      for (int t = 0; t < 3; ++t)
        callers.emplace_back([&] {
          const cpu_set_t mine = affinity();
          for (int r = 0; r < 10; ++r) {
            NamedTensors got = value_or_throw(s->run(in));
            for (size_t i = 0; i < got.size(); ++i)
              if (test::max_rel_error(got[i].second, want[i].second) != 0.0) ++bad;
            const cpu_set_t now = affinity();
            if (!CPU_EQUAL(&now, &mine)) ++bad;
          }
        });
      for (auto& t : callers) t.join();
      CHECK(bad.load() == 0);
    }
  }
}
