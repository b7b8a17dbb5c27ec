// Tracing (engine/trace.h): the RunTrace of a run under every policy and configuration holds
// every node once, spans that respect the graph's dependencies and never overlap on one
// executor, all inside the run; tracing changes no result; node_costs drive cpf's order.
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>

#include "engine/plan.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;

namespace {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

std::shared_ptr<const graph::Graph> small_lstm() {
  models::RnnSpec spec;
  spec.input = 16;
  spec.hidden = 32;
  spec.layers = 2;
  spec.batch = 2;
  spec.seq = 6;
  spec.seed = 7;
  return std::make_shared<const graph::Graph>(
      value_or_throw(models::build_lstm(spec, ops::Registry::get())));
}

// The invariants every trace of one complete run of `plan` must satisfy.
void check_trace(const Plan& plan, const RunTrace& t, int executors, int threads,
                 const std::string& scheduler) {
  const size_t n = plan.num_nodes();
  CHECK(t.scheduler == scheduler);
  CHECK(t.executors == executors);
  CHECK(t.threads == threads);
  REQUIRE(t.run_start_ns > 0);
  REQUIRE(t.run_end_ns >= t.run_start_ns);
  // Every node exactly once.
  REQUIRE(t.ops.size() == n);
  std::vector<const OpSpan*> by_node(n, nullptr);
  for (const OpSpan& s : t.ops) {
    REQUIRE(s.node < n);
    INFO("node " << plan.graph().node(s.node).name);
    CHECK(by_node[s.node] == nullptr);
    by_node[s.node] = &s;
    // Inside the run, non-negative length.
    CHECK(s.start_ns >= t.run_start_ns);
    CHECK(s.end_ns >= s.start_ns);
    CHECK(s.end_ns <= t.run_end_ns);
    CHECK(((s.executor >= 0 && s.executor < executors) || s.executor == kBootstrapExecutor));
    CHECK(s.team == plan.node_threads(s.node, threads));
  }
  // Dependencies: an op starts only after each of its predecessors ended.
  for (NodeId a = 0; a < n; ++a)
    for (NodeId b : plan.successors(a)) {
      INFO(plan.graph().node(a).name << " -> " << plan.graph().node(b).name);
      CHECK(by_node[b]->start_ns >= by_node[a]->end_ns);
    }
  // Per executor track (the bootstrap one too): in start order, each span starts after the
  // previous one ended (one thread runs one op at a time).
  std::map<int32_t, std::vector<const OpSpan*>> tracks;
  for (const OpSpan& s : t.ops) tracks[s.executor].push_back(&s);
  for (auto& [e, spans] : tracks) {
    std::sort(spans.begin(), spans.end(),
              [](const OpSpan* a, const OpSpan* b) { return a->start_ns < b->start_ns; });
    for (size_t i = 1; i < spans.size(); ++i) {
      INFO("executor " << e << ": " << plan.graph().node(spans[i - 1]->node).name << " then "
                       << plan.graph().node(spans[i]->node).name);
      CHECK(spans[i]->start_ns >= spans[i - 1]->end_ns);
    }
  }
  for (const SchedulerSpan& s : t.scheduler_spans) {
    CHECK(s.end_ns >= s.start_ns);
    CHECK(s.start_ns >= t.run_start_ns);
    if (s.kind == SchedulerSpan::kHandOff) CHECK((s.executor >= 0 && s.executor < executors));
  }
}

}  // namespace

TEST_CASE("trace: LSTM runs under every policy give complete, consistent traces", "[trace]") {
  auto g = small_lstm();
  NamedTensors in = test::random_inputs(*g, 3);
  struct Config {
    int executors, threads;
  };
  const Config configs[] = {{1, 1}, {2, 1}, {1, 2}, {4, 1}};
  const char* policies[] = {"cpf", "fifo", "shared-queue"};
  SessionOptions ref;
  for (Config c : configs) {
    ref.threads = c.threads;
    NamedTensors want = value_or_throw(value_or_throw(Session::create(g, ref))->run(in));
    for (const char* policy : policies)
      for (bool dedicated : {false, true}) {
        SessionOptions o;
        o.executors = c.executors;
        o.threads = c.threads;
        o.scheduler = policy;
        o.pin = c.executors * c.threads <= usable_cores();
        if (dedicated) o.dedicated_scheduler = true;
        o.trace = true;
        INFO(policy << " " << c.executors << "x" << c.threads
                    << (dedicated ? " dedicated" : " embedded"));
        auto s = value_or_throw(Session::create(g, o));
        for (int rep = 0; rep < 3; ++rep) {
          NamedTensors got = value_or_throw(s->run(in));
          for (size_t i = 0; i < got.size(); ++i)
            CHECK(test::max_rel_error(got[i].second, want[i].second) == 0.0);
          check_trace(s->plan(), s->last_trace(), c.executors, c.threads, policy);
        }
        // A dedicated scheduler hands ops out itself: its hand-offs are in the trace.
        if (dedicated && std::string(policy) != "shared-queue") {
          bool handoff = false;
          for (const SchedulerSpan& sp : s->last_trace().scheduler_spans)
            handoff |= sp.kind == SchedulerSpan::kHandOff;
          CHECK(handoff);
        }
      }
  }
}

TEST_CASE("trace: the sequential executor traces every node in topological order", "[trace]") {
  auto g = small_lstm();
  NamedTensors in = test::random_inputs(*g, 3);
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.threads = threads;
    o.trace = true;
    auto s = value_or_throw(Session::create(g, o));
    (void)value_or_throw(s->run(in));
    RunTrace t = s->last_trace();
    check_trace(s->plan(), t, 1, threads, "sequential");
    for (size_t i = 0; i < t.ops.size(); ++i) {
      CHECK(t.ops[i].node == s->plan().order()[i]);
      CHECK(t.ops[i].executor == 0);
    }
  }
}

TEST_CASE("trace: off by default, toggled between runs", "[trace]") {
  auto g = small_lstm();
  NamedTensors in = test::random_inputs(*g, 3);
  for (const char* policy : {"sequential", "cpf"}) {
    SessionOptions o;
    o.scheduler = policy;
    o.executors = 1;
    auto s = value_or_throw(Session::create(g, o));
    (void)value_or_throw(s->run(in));
    CHECK(s->last_trace().ops.empty());
    CHECK(s->last_trace().run_end_ns == 0);
    s->set_tracing(true);
    CHECK(s->last_trace().ops.empty());  // nothing traced yet
    (void)value_or_throw(s->run(in));
    CHECK(s->last_trace().ops.size() == s->plan().num_nodes());
    s->set_tracing(false);
    (void)value_or_throw(s->run(in));
    CHECK(s->last_trace().ops.empty());
  }
}

TEST_CASE("trace: node_costs give cpf its levels and order the ready ops", "[trace][levels]") {
  // One input feeding 12 independent Tanh ops (each a sink): all ready at once, so one
  // executor runs them strictly by level, and each one's level is its own cost.
  const int width = 12;
  graph::GraphBuilder b("<fan-out>");
  b.add_input("x", TensorDesc{DType::kF32, {4, 8}});
  for (int i = 0; i < width; ++i) {
    b.add_node("Tanh", "t" + std::to_string(i), {"x"}, {"y" + std::to_string(i)});
    b.add_output("y" + std::to_string(i));
  }
  auto g = std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
  NamedTensors in = test::random_inputs(*g, 1);
  // Costs in a scrambled order, unlike both the ids (fifo) and the equal cost hints.
  std::vector<double> costs(width);
  for (int i = 0; i < width; ++i) costs[i] = static_cast<double>((i * 5) % width) + 1.0;
  std::vector<NodeId> want(width);
  for (int i = 0; i < width; ++i) want[i] = static_cast<NodeId>(i);
  std::sort(want.begin(), want.end(), [&](NodeId a, NodeId c) { return costs[a] > costs[c]; });

  for (bool shared_plan : {false, true}) {
    SessionOptions o;
    o.scheduler = "cpf";
    o.executors = 1;
    o.trace = true;
    o.node_costs = costs;
    std::unique_ptr<Session> s;
    if (shared_plan) {
      auto plan = std::make_shared<const Plan>(value_or_throw(compile(g, 1)));
      s = value_or_throw(Session::create(plan, o));
    } else {
      s = value_or_throw(Session::create(g, o));
      for (int i = 0; i < width; ++i) CHECK(s->plan().level(static_cast<NodeId>(i)) == costs[i]);
    }
    for (int rep = 0; rep < 3; ++rep) {
      (void)value_or_throw(s->run(in));
      RunTrace t = s->last_trace();
      REQUIRE(t.ops.size() == static_cast<size_t>(width));
      std::vector<NodeId> got;
      for (const OpSpan& sp : t.ops) got.push_back(sp.node);  // in start order
      INFO((shared_plan ? "shared plan" : "own plan") << " rep " << rep);
      CHECK(got == want);
    }
  }
  SECTION("a cost table of the wrong size or with a negative cost is an error naming the field") {
    SessionOptions o;
    o.scheduler = "cpf";
    o.node_costs = {1.0, 2.0};
    Result<std::unique_ptr<Session>> r = Session::create(g, o);
    REQUIRE(!r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("node_costs"));
    o.node_costs.assign(width, 1.0);
    o.node_costs[3] = -1;
    r = Session::create(g, o);
    REQUIRE(!r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("node_costs[3]"));
  }
}
