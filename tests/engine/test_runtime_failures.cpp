// Robustness of the Session's runtimes: a custom op that throws, a Session destroyed while a run
// is in flight, where bootstrap ops run, and the OpenMP oversubscription warning. Expected values
// are computed here from the definitions (each op adds 1 to its input).
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/omp_oversubscription.h"
#include "engine/parallel_runtime.h"
#include "engine/placement.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/custom_op.h"
#include "ops/registry.h"

using namespace graphi;
using namespace graphi::engine;
using Catch::Matchers::Contains;

namespace {

// Every op here: f32[1] inputs, output f32[1] = 1 + max(inputs).
Result<std::vector<TensorDesc>> infer_scalar(const graph::InferContext& ctx) {
  for (const TensorDesc* d : ctx.inputs)
    if (!d || d->dtype != DType::kF32 || d->numel() != 1)
      return Status::invalid_graph(ctx.where + ": inputs must be 1-element float32");
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {1}}};
}
ops::CostHint cost_scalar(const graph::Node&, std::span<const TensorDesc* const>,
                          std::span<const TensorDesc* const>) {
  return {1000.0, 8.0};
}
float max_input(const ops::Buffers& io) {
  float m = 0;
  for (const void* p : io.inputs) m = std::max(m, *static_cast<const float*>(p));
  return m;
}

// TestThrow: throws when its result would be 42.
void throw_at_42(const ops::TeamContext& team, const ops::Buffers& io) {
  const float y = max_input(io) + 1;
  if (y == 42.0f) throw std::runtime_error("the answer is not allowed");
  if (team.ithr == 0) *static_cast<float*>(io.outputs[0]) = y;
}

// TestSlow: 1 ms of sleep, and counts how many ran (to know a run is in flight).
std::atomic<int> g_slow_started{0};
void slow_op(const ops::TeamContext& team, const ops::Buffers& io) {
  if (team.ithr != 0) return;
  g_slow_started.fetch_add(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  *static_cast<float*>(io.outputs[0]) = max_input(io) + 1;
}

// TestWhere (small): records the OS thread and CPU it ran on (the first one to run records its
// thread in g_first_tid too).
std::atomic<pid_t> g_where_tid{0}, g_first_tid{0}, g_plain_tid{0};
std::atomic<int> g_where_cpu{-1};
void where_op(const ops::TeamContext&, const ops::Buffers& io) {
  pid_t zero = 0;
  g_first_tid.compare_exchange_strong(zero, static_cast<pid_t>(::gettid()));
  g_where_tid.store(static_cast<pid_t>(::gettid()));
  g_where_cpu.store(sched_getcpu());
  *static_cast<float*>(io.outputs[0]) = max_input(io) + 1;
}
// TestPlain: not small.
void plain_op(const ops::TeamContext& team, const ops::Buffers& io) {
  if (team.ithr != 0) return;
  g_plain_tid.store(static_cast<pid_t>(::gettid()));
  *static_cast<float*>(io.outputs[0]) = max_input(io) + 1;
}

void register_test_ops() {
  static bool done = [] {
    REQUIRE(
        ops::register_custom_op(
            {"TestThrow", infer_scalar, cost_scalar, false, {ops::function_kernel<&throw_at_42>}})
            .is_ok());
    REQUIRE(ops::register_custom_op(
                {"TestSlow", infer_scalar, cost_scalar, false, {ops::function_kernel<&slow_op>}})
                .is_ok());
    REQUIRE(ops::register_custom_op(
                {"TestWhere", infer_scalar, cost_scalar, true, {ops::function_kernel<&where_op>}})
                .is_ok());
    REQUIRE(ops::register_custom_op(
                {"TestPlain", infer_scalar, cost_scalar, false, {ops::function_kernel<&plain_op>}})
                .is_ok());
    return true;
  }();
  (void)done;
}

// `width` chains of `length` ops of type `op` from input x; chain c's node i is "c<c>_<i>";
// outputs: each chain's last value.
std::shared_ptr<const graph::Graph> chains(const std::string& op, int width, int length) {
  register_test_ops();
  graph::GraphBuilder b("<" + op + " chains>");
  b.add_input("x", TensorDesc{DType::kF32, {1}});
  for (int c = 0; c < width; ++c) {
    std::string prev = "x";
    for (int i = 0; i < length; ++i) {
      const std::string name = "c" + std::to_string(c) + "_" + std::to_string(i);
      b.add_node(op, name, {prev}, {name + "_y"});
      prev = name + "_y";
    }
    b.add_output(prev);
  }
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

NamedTensors scalar_input(float v) {
  Tensor x(TensorDesc{DType::kF32, {1}});
  x.data_as<float>()[0] = v;
  NamedTensors in;
  in.emplace_back("x", std::move(x));
  return in;
}

int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// LLVM's libomp (the TSan lane's runtime) keeps team threads in a process-wide pool once made,
// whoever made them; libgomp keeps the calling thread's. Make both as large as any config below
// needs (teams of 2) before the first baseline, on main and on another thread, so Sessions reuse
// those threads. (The sequential warm-up runs used to do it, but this file's ops are too small
// for a team and run without a parallel region now: engine/plan.h, Plan::narrow.)
void warm_openmp_pools() {
  std::thread other([] {
#pragma omp parallel num_threads(2)
    { (void)0; }
  });
  other.join();
#pragma omp parallel num_threads(2)
  { (void)0; }
}

// Threads of destroyed Sessions' OpenMP teams leave asynchronously: wait up to 5 s.
bool threads_back_to(int baseline) {
  for (int i = 0; i < 500; ++i) {
    if (thread_count() <= baseline) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return thread_count() <= baseline;
}

int usable_cores() { return allowed_cpu_count(); }

struct Config {
  const char* policy;
  int executors, threads;
  bool dedicated;
};
const Config kConfigs[] = {
    {"sequential", 1, 1, false}, {"sequential", 1, 2, false}, {"cpf", 1, 1, true},
    {"cpf", 2, 1, false},        {"fifo", 2, 1, true},        {"shared-queue", 2, 1, false},
    {"cpf", 1, 2, false},        {"cpf", 4, 1, false},        {"shared-queue", 4, 1, false}};

SessionOptions options_for(const Config& c) {
  SessionOptions o;
  o.scheduler = c.policy;
  o.executors = c.executors;
  o.threads = c.threads;
  o.pin = c.executors * c.threads <= usable_cores();
  if (c.dedicated) o.dedicated_scheduler = true;
  o.count_executions = std::string(c.policy) != "sequential";
  return o;
}

std::string name_of(const Config& c) {
  return std::string(c.policy) + " " + std::to_string(c.executors) + "x" +
         std::to_string(c.threads) + (c.dedicated ? " dedicated" : "");
}

}  // namespace

TEST_CASE(
    "failures: a custom op that throws fails run() naming the node and the Session stays usable",
    "[failures]") {
  auto g = chains("TestThrow", 3, 12);
  warm_openmp_pools();
  for (const Config& c : kConfigs) {
    INFO(name_of(c));
    // The sequential executor's team is the calling thread's own OpenMP pool, which outlives
    // the Session by design: count it in the baseline.
    if (std::string(c.policy) == "sequential")
      value_or_throw(value_or_throw(Session::create(g, options_for(c)))->run(scalar_input(0)));
    const int baseline = thread_count();
    {
      auto s = value_or_throw(Session::create(g, options_for(c)));
      for (int round = 0; round < 3; ++round) {
        // x = 0: every chain ends at 12.
        auto ok = s->run(scalar_input(0));
        REQUIRE(ok.is_ok());
        for (auto& [name, t] : *ok) CHECK(t.data_as<float>()[0] == 12.0f);
        // x = 39: node i of every chain computes 40 + i, so node 2 of some chain throws first.
        auto bad = s->run(scalar_input(39));
        REQUIRE_FALSE(bad.is_ok());
        CHECK_THAT(bad.status().message(), Contains("_2' (TestThrow)"));
        CHECK_THAT(bad.status().message(), Contains("threw: the answer is not allowed"));
        CHECK_THAT(bad.status().message(), Contains("<TestThrow chains>"));
        if (c.executors > 1 || std::string(c.policy) != "sequential") {
          // Ops after the failure are skipped, but every op is accounted for exactly once.
          for (uint32_t n : s->execution_counts()) CHECK(n == 1);
        }
      }
      // Still usable after failures.
      auto again = s->run(scalar_input(1));
      REQUIRE(again.is_ok());
      for (auto& [name, t] : *again) CHECK(t.data_as<float>()[0] == 13.0f);
    }
    CHECK(threads_back_to(baseline));
  }
}

TEST_CASE("failures: a built-in op's run-time error names its node once, on every policy",
          "[failures]") {
  // Gather with a run-time index: 7 is out of range for an axis of 4.
  graph::GraphBuilder b("<gather oob>");
  Tensor data(TensorDesc{DType::kF32, {4, 2}});
  b.add_constant("data", std::move(data));
  b.add_input("idx", TensorDesc{DType::kI64, {1}});
  b.add_node("Gather", "pick", {"data", "idx"}, {"y"}, {});
  b.add_output("y");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
  for (const Config& c : kConfigs) {
    INFO(name_of(c));
    auto s = value_or_throw(Session::create(g, options_for(c)));
    Tensor idx(TensorDesc{DType::kI64, {1}});
    idx.data_as<int64_t>()[0] = 7;
    NamedTensors in;
    in.emplace_back("idx", std::move(idx));
    auto r = s->run(in);
    REQUIRE_FALSE(r.is_ok());
    const std::string m = r.status().message();
    CHECK_THAT(m, Contains("<gather oob>: node 'pick' (Gather): index"));
    CHECK(m.find("node 'pick'") == m.rfind("node 'pick'"));  // the place once, not twice
  }
}

TEST_CASE(
    "failures: destroying a Session while run() is in flight cancels the run and leaves no thread",
    "[failures]") {
  auto g = chains("TestSlow", 2, 300);  // ~300 ms per run unless cancelled
  warm_openmp_pools();
  for (const Config& c : kConfigs) {
    INFO(name_of(c));
    if (std::string(c.policy) == "sequential") {
      // Warm up on a thread other than main, as the run below is: LLVM's libomp (the TSan
      // lane's runtime) keeps the team threads of a finished non-initial master thread in its
      // pool for reuse instead of ending them (libgomp ends them), and they are not ours.
      std::thread warm([&] {
        value_or_throw(value_or_throw(Session::create(chains("TestThrow", 1, 1), options_for(c)))
                           ->run(scalar_input(0)));
      });
      warm.join();
    }
    const int baseline = thread_count();
    auto s = value_or_throw(Session::create(g, options_for(c)));
    Session* raw = s.get();
    g_slow_started.store(0);
    Status result;
    std::thread caller([&] {
      auto r = raw->run(scalar_input(0));
      result = r.is_ok() ? Status::ok() : r.status();
    });
    while (g_slow_started.load() < 3) std::this_thread::sleep_for(std::chrono::microseconds(100));
    s.reset();  // mid-flight
    caller.join();
    REQUIRE_FALSE(result.is_ok());
    CHECK_THAT(result.message(), Contains("cancelled"));
    CHECK(g_slow_started.load() < 600);  // the remaining ops were skipped
    CHECK(threads_back_to(baseline));
  }
}

TEST_CASE(
    "failures: callers queued behind a run when the Session is destroyed get an error, not freed "
    "memory",
    "[failures]") {
  auto g = chains("TestSlow", 2, 300);  // ~300 ms per run unless cancelled
  for (const Config& c : {kConfigs[0], kConfigs[3], kConfigs[5]}) {
    INFO(name_of(c));
    auto s = value_or_throw(Session::create(g, options_for(c)));
    Session* raw = s.get();
    g_slow_started.store(0);
    constexpr int kCallers = 4;
    std::atomic<int> entered{0};
    std::vector<Status> results(kCallers);
    std::vector<std::thread> callers;
    for (int i = 0; i < kCallers; ++i)
      callers.emplace_back([&, i] {
        entered.fetch_add(1);
        auto r = raw->run(scalar_input(0));
        results[i] = r.is_ok() ? Status::ok() : r.status();
      });
    // One run is in flight, the others are inside run() waiting for their turn.
    while (g_slow_started.load() < 3 || entered.load() < kCallers)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s.reset();
    for (std::thread& t : callers) t.join();
    for (const Status& st : results) {
      REQUIRE_FALSE(st.is_ok());
      CHECK_THAT(st.message(), Contains("cancelled"));
    }
    CHECK(g_slow_started.load() < 600);  // the in-flight run was cut short, no queued run ran
  }
}

TEST_CASE("failures: bootstrap ops run on the client thread, later small ops inline on an executor",
          "[failures]") {
  register_test_ops();
  // x -> boot (small, ready at the start) -> big (not small) -> late (small, made ready by big).
  graph::GraphBuilder b("<bootstrap>");
  b.add_input("x", TensorDesc{DType::kF32, {1}});
  b.add_node("TestWhere", "boot", {"x"}, {"b"});
  b.add_node("TestPlain", "big", {"b"}, {"p"});
  b.add_node("TestWhere", "late", {"p"}, {"y"});
  b.add_output("y");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
  const pid_t me = static_cast<pid_t>(::gettid());
  for (const Config& c : {Config{"cpf", 1, 1, false}, Config{"cpf", 2, 1, false},
                          Config{"shared-queue", 2, 1, false}}) {
    INFO(name_of(c));
    auto s = value_or_throw(Session::create(g, options_for(c)));
    g_where_tid.store(0);
    g_first_tid.store(0);
    auto out = value_or_throw(s->run(scalar_input(5)));
    CHECK(out[0].second.data_as<float>()[0] == 8.0f);
    // `boot` ran first, on the calling thread; `late` ran last, inline in the thread that ran
    // `big` (an executor, not the client's bootstrap).
    CHECK(g_first_tid.load() == me);
    CHECK(g_where_tid.load() == g_plain_tid.load());
  }
  // A graph with only the bootstrap op: it runs on the calling thread, on the scheduler's
  // reserved core when the placement has one (1x1 on a machine with 2 or more cores).
  graph::GraphBuilder b2("<bootstrap only>");
  b2.add_input("x", TensorDesc{DType::kF32, {1}});
  b2.add_node("TestWhere", "boot", {"x"}, {"b"});
  b2.add_node("TestPlain", "big", {"b"}, {"y"});
  b2.add_output("y");
  auto g2 = std::make_shared<const graph::Graph>(value_or_throw(b2.finish(ops::Registry::get())));
  for (const Config& c : {Config{"cpf", 1, 1, false}, Config{"fifo", 2, 1, false}}) {
    INFO(name_of(c));
    auto s = value_or_throw(Session::create(g2, options_for(c)));
    g_where_tid.store(0);
    auto out = value_or_throw(s->run(scalar_input(5)));
    CHECK(out[0].second.data_as<float>()[0] == 7.0f);
    CHECK(g_where_tid.load() == me);
    const Placement* pl = s->placement();
    if (pl && pl->scheduler && s->runtime()->dedicated_scheduler())
      CHECK(g_where_cpu.load() == pl->scheduler->pu);
  }
}

TEST_CASE("failures: the OpenMP oversubscription warning names the numbers", "[failures][omp]") {
  OmpThreadCount c;
  c.cpus = 2;
  c.session_threads = 2;
  c.process_threads = 2;
  CHECK_FALSE(omp_oversubscription_warning(c).has_value());
  c.process_threads = 3;  // e.g. two 1x2 Sessions: 1 + 1 + 1
  auto w = omp_oversubscription_warning(c);
  REQUIRE(w.has_value());
  CHECK_THAT(*w, Contains("3 OpenMP threads on 2 allowed CPUs"));
  CHECK_THAT(*w, Contains("OMP_WAIT_POLICY=active"));
  c.wait_policy_set = true;  // the user chose a wait policy: nothing to say
  CHECK_FALSE(omp_oversubscription_warning(c).has_value());
  c.session_threads = 4;  // 4x1 unpinned on 2 CPUs
  w = omp_oversubscription_warning(c);
  REQUIRE(w.has_value());
  CHECK_THAT(*w, Contains("4 threads on 2 allowed CPUs"));

  // Sessions claim k - 1 threads per team while they live (libgomp's count of a team whose
  // master already exists).
  auto g = chains("TestPlain", 1, 2);
  const int before = omp_process_threads();
  {
    SessionOptions o;
    o.scheduler = "cpf";
    o.executors = 1;
    o.threads = 2;
    o.pin = false;
    auto s1 = value_or_throw(Session::create(g, o));
    CHECK(omp_process_threads() == before + 1);
    auto s2 = value_or_throw(Session::create(g, o));
    CHECK(omp_process_threads() == before + 2);
  }
  CHECK(omp_process_threads() == before);
}
