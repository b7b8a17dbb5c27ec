// cost_table_from_traces: the mean duration per node over several runs' traces.
#include <catch2/catch.hpp>

#include "engine/plan.h"
#include "engine/session.h"
#include "profiler/cost_table.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;

TEST_CASE("cost table: means of hand-made spans per node", "[profiler][cost]") {
  test::RandomDagSpec spec;
  spec.nodes = 4;
  spec.seed = 9;
  auto g = test::random_dag(spec);
  Plan plan = value_or_throw(compile(g, 1));
  REQUIRE(plan.num_nodes() == 4);
  // Node 0: 1000 and 3000 ns -> 2 us; node 1: 500 ns once (absent from the second run) -> 0.5;
  // node 2: 10 and 20 us -> 15; node 3: never traced -> 0.
  RunTrace a, b;
  a.ops = {{0, 0, 1, 100, 1100}, {1, 0, 1, 1200, 1700}, {2, 1, 1, 2000, 12000}};
  b.ops = {{2, 0, 1, 0, 20000}, {0, 1, 1, 50000, 53000}};
  std::vector<RunTrace> traces{a, b};
  profiler::CostTable t = profiler::cost_table_from_traces(plan, traces);
  CHECK(t.runs == 2);
  REQUIRE(t.node_us.size() == 4);
  CHECK(t.node_us[0] == Approx(2.0));
  CHECK(t.node_us[1] == Approx(0.5));
  CHECK(t.node_us[2] == Approx(15.0));
  CHECK(t.node_us[3] == 0.0);
}

TEST_CASE("cost table: from real traced runs, every node gets a positive mean",
          "[profiler][cost]") {
  test::RandomDagSpec spec;
  spec.nodes = 30;
  spec.seed = 4;
  auto g = test::random_dag(spec);
  SessionOptions o;
  o.trace = true;
  auto s = value_or_throw(Session::create(g, o));
  NamedTensors in = test::random_inputs(*g, 2);
  std::vector<RunTrace> traces;
  for (int i = 0; i < 3; ++i) {
    (void)value_or_throw(s->run(in));
    traces.push_back(s->last_trace());
  }
  profiler::CostTable t = profiler::cost_table_from_traces(s->plan(), traces);
  CHECK(t.runs == 3);
  REQUIRE(t.node_us.size() == s->plan().num_nodes());
  double sum = 0;
  for (double us : t.node_us) {
    CHECK(us >= 0);
    sum += us;
  }
  // The ops' mean times add up to no more than the mean makespan (one thread ran them all).
  double makespan = 0;
  for (const RunTrace& r : traces)
    makespan += static_cast<double>(r.run_end_ns - r.run_start_ns) * 1e-3 / 3;
  CHECK(sum > 0);
  CHECK(sum <= makespan * 1.0001);
}

TEST_CASE("cost table: identical ops share the mean of their group", "[profiler][cost]") {
  test::RandomDagSpec spec;
  spec.nodes = 30;
  spec.seed = 11;
  auto g = test::random_dag(spec);
  Plan plan = value_or_throw(compile(g, 1));
  const size_t n = plan.num_nodes();
  profiler::CostTable t;
  t.node_us.resize(n);
  for (size_t i = 0; i < n; ++i) t.node_us[i] = i == 3 ? 0.0 : static_cast<double>(i + 1);
  profiler::CostTable pooled = t;
  profiler::pool_identical_ops(plan, pooled);
  // The reference groups by op type and the shapes of inputs and outputs, read from the graph,
  // and by whether the outputs are memory-plan aliases (such a Reshape copies nothing, one of
  // the same shapes whose input is a graph input copies).
  const std::vector<graph::ValueId>& alias_of = plan.memory().alias_of;
  auto key = [&](size_t i) {
    std::string k = g->node(static_cast<graph::NodeId>(i)).op;
    for (graph::ValueId v : plan.outputs(static_cast<NodeId>(i)))
      k += alias_of.empty() || alias_of[v] == graph::kNoId ? "" : "(alias)";
    for (graph::ValueId v : plan.inputs(static_cast<NodeId>(i)))
      k += "/" + shape_to_string(g->value(v).desc.shape);
    for (graph::ValueId v : plan.outputs(static_cast<NodeId>(i)))
      k += ">" + shape_to_string(g->value(v).desc.shape);
    return k;
  };
  size_t groups_with_several = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == 3) {
      CHECK(pooled.node_us[i] == 0.0);  // untraced stays untraced
      continue;
    }
    double sum = 0;
    int count = 0;
    for (size_t j = 0; j < n; ++j)
      if (j != 3 && key(j) == key(i)) {
        sum += t.node_us[j];
        ++count;
      }
    if (count > 1) ++groups_with_several;
    CHECK(pooled.node_us[i] == Approx(sum / count));
  }
  CHECK(groups_with_several > 0);  // the DAG repeats ops, so the pooling was exercised
  CHECK(profiler::op_signature(plan, 0) != "");
}
