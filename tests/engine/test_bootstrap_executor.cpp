// The bootstrap executor (RuntimeOptions::bootstrap_executor, seed 002 section 5.2): with a
// reserved bootstrap core (synthetic hwloc topologies, RecordingBinder) the small ops ready at
// the start run on a thread of its own pinned to that core, concurrently with dispatch; the
// results equal the sequential reference; without a spare core the client runs them as before.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "engine/parallel_runtime.h"
#include "engine/placement.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "engine/topology.h"
#include "graph/graph_builder.h"
#include "ops/custom_op.h"
#include "ops/registry.h"
#include "tests/support/plan_buffers.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;

namespace {

// TestBootTid: a small op (copy of its f32 input) that records the OS thread it ran on.
std::atomic<pid_t> g_boot_tid{0};

Result<std::vector<TensorDesc>> infer_copy(const graph::InferContext& ctx) {
  if (ctx.inputs.size() != 1 || !ctx.inputs[0])
    return Status::invalid_graph(ctx.where + ": expects 1 input");
  return std::vector<TensorDesc>{*ctx.inputs[0]};
}
ops::CostHint cost_copy(const graph::Node&, std::span<const TensorDesc* const>,
                        std::span<const TensorDesc* const>) {
  return {0.0, 8.0};
}
void record_tid(const ops::TeamContext& team, const ops::Buffers& io) {
  g_boot_tid.store(static_cast<pid_t>(::syscall(SYS_gettid)));
  // Input and output are f32[4, 8] (boot_graph): 128 bytes.
  std::memcpy(io.outputs[0], io.inputs[0], 4 * 32);
}

void register_test_op() {
  static Status s = ops::register_custom_op(
      {"TestBootTid", infer_copy, cost_copy, true, {ops::function_kernel<&record_tid>}});
  REQUIRE(s.is_ok());
}

// x f32[4, 8] -> TestBootTid (small, a bootstrap op) -> Identity (small, made ready by it:
// runs inline) -> Tanh (not small: made ready by a bootstrap op, goes to the scheduler), and
// x -> Sigmoid (a non-small start op); both feed Add, Mul.
std::shared_ptr<const graph::Graph> boot_graph() {
  register_test_op();
  graph::GraphBuilder b("<bootstrap graph>");
  b.add_input("x", TensorDesc{DType::kF32, {4, 8}});
  b.add_node("TestBootTid", "boot", {"x"}, {"b"});
  b.add_node("Identity", "boot_id", {"b"}, {"bi"});
  b.add_node("Tanh", "t", {"bi"}, {"tb"});
  b.add_node("Sigmoid", "s", {"x"}, {"sx"});
  b.add_node("Add", "a", {"tb", "sx"}, {"y"});
  b.add_node("Mul", "m", {"y", "sx"}, {"z"});
  b.add_output("z");
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}


}  // namespace

TEST_CASE(
    "bootstrap executor: with a spare core, bootstrap ops run on a pinned thread of their own",
    "[bootstrap]") {
  auto g = boot_graph();
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {4, 8}}, 3);
  // The reference: the sequential executor.
  SessionOptions so;
  auto ref = value_or_throw(value_or_throw(Session::create(g, so))->run({{"x", x}}));

  Plan plan = value_or_throw(compile(g, 1));
  // 4 cores: 2 executors x 1 thread, a scheduler core and a bootstrap core (placement rule 5).
  Topology four = value_or_throw(Topology::from_synthetic("package:1 core:4 pu:1"));
  Placement p = value_or_throw(place_executors(four, {2, 1}));
  REQUIRE(p.scheduler.has_value());
  REQUIRE(p.bootstrap.has_value());
  for (const char* policy : {"cpf", "fifo", "shared-queue"}) {
    INFO(policy);
    RecordingBinder binder;
    RuntimeOptions ro;
    ro.executors = 2;
    ro.threads = 1;
    ro.policy = *parse_policy(policy);
    ro.placement = &p;
    ro.binder = &binder;  // records instead of binding: the synthetic cores are not this machine's
    auto rt = value_or_throw(ParallelRuntime::create(plan, ro));
    REQUIRE(rt->bootstrap_thread());
    const pid_t boot = rt->bootstrap_thread_id();
    CHECK(boot != 0);
    CHECK(boot != static_cast<pid_t>(::syscall(SYS_gettid)));
    // The bootstrap thread bound itself to the bootstrap core's PU, and no executor did.
    int boot_binds = 0;
    for (const RecordingBinder::Call& c : binder.calls()) {
      if (c.tid == boot) {
        ++boot_binds;
        CHECK(c.pus == std::vector<int>{p.bootstrap->pu});
      } else {
        CHECK(c.pus != std::vector<int>{p.bootstrap->pu});
      }
    }
    CHECK(boot_binds == 1);
    rt->set_tracing(true);
    for (int rep = 0; rep < 20; ++rep) {
      test::PlanBuffers buf(plan, x);
      g_boot_tid.store(0);
      REQUIRE(rt->run(SlotTables{buf.in.data(), buf.out.data()}).is_ok());
      CHECK(g_boot_tid.load() == boot);  // the bootstrap op ran on the bootstrap thread
      for (const auto& [name, want] : ref)
        CHECK(test::max_rel_error(buf.value(*g, name), want) == 0.0);
      RunTrace t;
      rt->last_trace(t);
      REQUIRE(t.ops.size() == plan.num_nodes());
      std::set<std::string> on_boot;
      for (const OpSpan& s : t.ops)
        if (s.executor == kBootstrapExecutor) on_boot.insert(g->node(s.node).name);
      CHECK(on_boot == std::set<std::string>{"boot", "boot_id"});
    }
  }
}

TEST_CASE("bootstrap executor: without a spare core the client thread runs the bootstrap ops",
          "[bootstrap]") {
  auto g = boot_graph();
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {4, 8}}, 5);
  Plan plan = value_or_throw(compile(g, 1));
  // 3 cores, 2x1: a scheduler core, no bootstrap core.
  Topology three = value_or_throw(Topology::from_synthetic("package:1 core:3 pu:1"));
  Placement p = value_or_throw(place_executors(three, {2, 1}));
  REQUIRE(p.scheduler.has_value());
  REQUIRE(!p.bootstrap.has_value());
  RecordingBinder binder;
  RuntimeOptions ro;
  ro.executors = 2;
  ro.policy = Policy::kCriticalPath;
  ro.placement = &p;
  ro.binder = &binder;
  auto rt = value_or_throw(ParallelRuntime::create(plan, ro));
  CHECK(!rt->bootstrap_thread());
  CHECK(rt->bootstrap_thread_id() == 0);
  test::PlanBuffers buf(plan, x);
  REQUIRE(rt->run(SlotTables{buf.in.data(), buf.out.data()}).is_ok());
  CHECK(g_boot_tid.load() == static_cast<pid_t>(::syscall(SYS_gettid)));  // the client ran it

  // Forced on (unpinned) it works without a reserved core too; forced off it never starts.
  ro.pin = false;
  ro.placement = nullptr;
  ro.binder = nullptr;
  ro.bootstrap_executor = true;
  auto forced = value_or_throw(ParallelRuntime::create(plan, ro));
  CHECK(forced->bootstrap_thread());
  test::PlanBuffers fb(plan, x);
  REQUIRE(forced->run(SlotTables{fb.in.data(), fb.out.data()}).is_ok());
  CHECK(g_boot_tid.load() == forced->bootstrap_thread_id());
  for (const char* name : {"y", "z"})
    CHECK(test::max_rel_error(fb.value(*g, name), buf.value(*g, name)) == 0.0);
}

TEST_CASE("bootstrap executor: random DAGs with small start ops match the reference, every op once",
          "[bootstrap]") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    test::RandomDagSpec spec;
    spec.nodes = 60;
    spec.small_share = 0.4;  // Identity ops, many of them ready at the start
    spec.seed = seed;
    auto g = test::random_dag(spec);
    NamedTensors in = test::random_inputs(*g, seed);
    auto want = value_or_throw(value_or_throw(Session::create(g, {}))->run(in));
    for (const char* policy : {"cpf", "fifo", "shared-queue"})
      for (int executors : {1, 2, 4}) {
        SessionOptions o;
        o.executors = executors;
        o.scheduler = policy;
        o.pin = false;
        o.bootstrap_executor = true;
        o.count_executions = true;
        INFO(policy << " " << executors << "x1 seed " << seed);
        auto s = value_or_throw(Session::create(g, o));
        for (int rep = 0; rep < 10; ++rep) {
          auto got = value_or_throw(s->run(in));
          for (size_t i = 0; i < got.size(); ++i)
            CHECK(test::max_rel_error(got[i].second, want[i].second) == 0.0);
          for (uint32_t c : s->execution_counts()) CHECK(c == 1);
        }
      }
  }
}
