// The makespan simulator (profiler/simulator.h): hand-computed makespans of tiny DAGs per
// policy with known op times and overheads; the runtime and the simulator take the same
// decisions (engine/ready_order.h) for a fixed cost table; `graphi simulate --json` parses.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/plan.h"
#include "engine/ready_order.h"
#include "engine/session.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "profiler/simulator.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

using namespace graphi;
using engine::Policy;

namespace {

// A DAG given by successor lists; ops of 1 flop per byte (memory class), none small.
profiler::ModelGraph dag(const std::vector<std::vector<uint32_t>>& succ) {
  profiler::ModelGraph g;
  g.succ_offsets.push_back(0);
  for (const auto& s : succ) {
    g.op.push_back("Op");
    g.flops.push_back(1);
    g.bytes.push_back(1);
    g.small.push_back(0);
    g.succ.insert(g.succ.end(), s.begin(), s.end());
    g.succ_offsets.push_back(static_cast<uint32_t>(g.succ.size()));
  }
  return g;
}

profiler::DispatchCosts costs() {
  profiler::DispatchCosts d;
  d.seq_op_us = 0.05;
  d.local_op_us = 0.1;
  d.handoff_us = 1.0;
  d.step_us = 0.5;
  d.sq_op_us = 0.2;
  d.sq_lock_us = 0.1;
  d.run_start_us = 2.0;
  return d;
}

profiler::SimResult sim(const profiler::ModelGraph& g, const std::vector<double>& t, Policy p,
                        int n) {
  profiler::SimConfig c;
  c.executors = n;
  c.policy = p;
  return profiler::simulate_schedule(g, t, profiler::levels_from_costs(g, t), c, costs());
}

}  // namespace

TEST_CASE("simulator: a chain, hand-computed per policy", "[profiler][simulator]") {
  const auto g = dag({{1}, {2}, {}});
  const std::vector<double> t = {10, 20, 30};
  // Sequential: the sum plus 0.05 per op.
  CHECK(sim(g, t, Policy::kSequential, 1).makespan_us == Approx(60.15));
  // cpf/fifo: start 2, first step 0.5, then every op 0.1 of dispatch on the same executor.
  for (Policy p : {Policy::kCriticalPath, Policy::kFifo}) {
    const auto r = sim(g, t, p, 2);
    CHECK(r.makespan_us == Approx(2 + 0.5 + 3 * 0.1 + 60));
    CHECK(r.handoffs == 0);
  }
  // Shared queue: each op a pop (lock 0.1 + 0.2) after its predecessor's push (lock 0.1).
  const auto sq = sim(g, t, Policy::kSharedQueue, 2);
  CHECK(sq.makespan_us == Approx(62.8));
  CHECK(sq.critical_path_us == Approx(60));
  CHECK(sq.work_us == Approx(60));
}

TEST_CASE("simulator: a fork-join, hand-computed per policy", "[profiler][simulator]") {
  // s -> {a, b} -> j
  const auto g = dag({{1, 2}, {3}, {3}, {}});
  const std::vector<double> t = {5, 10, 10, 5};
  CHECK(sim(g, t, Policy::kSequential, 1).makespan_us == Approx(30.2));
  // cpf 2x1: s on executor 0 (2.5 + 0.1 .. 7.6); it keeps a (7.7 .. 17.7) and publishes b,
  // which executor 1 claims (step 0.5 + hand-off 1.0: 9.1, + 0.1, .. 19.2); b's end readies j
  // on executor 1: 19.3 .. 24.3.
  for (Policy p : {Policy::kCriticalPath, Policy::kFifo}) {
    const auto r = sim(g, t, p, 2);
    CHECK(r.makespan_us == Approx(24.3));
    CHECK(r.handoffs == 1);
    REQUIRE(r.start_order.size() == 4);
    CHECK(r.start_order[0] == 0);
    CHECK(r.start_order[3] == 3);
  }
  // One executor runs all four: 2.5 + 4 x 0.1 + 30.
  CHECK(sim(g, t, Policy::kCriticalPath, 1).makespan_us == Approx(32.9));
  // Shared queue 2x1: s 2.2 .. 7.2; push (lock to 7.3); executor 0 pops a (7.5 .. 17.5),
  // executor 1 pops b after the lock (7.4) + 0.2 + hand-off 1.0 (8.6 .. 18.6); j: push at
  // 18.6 (lock to 18.7), pop 18.7 (lock to 18.8), + 0.2: 18.9 .. 23.9.
  const auto sq = sim(g, t, Policy::kSharedQueue, 2);
  CHECK(sq.makespan_us == Approx(23.9));
  CHECK(sq.handoffs == 1);
}

TEST_CASE("simulator: two independent chains, hand-computed per policy", "[profiler][simulator]") {
  // a1 -> a2, b1 -> b2 (ids a1 0, b1 1, a2 2, b2 3)
  const auto g = dag({{2}, {3}, {}, {}});
  const std::vector<double> t = {10, 10, 10, 10};
  // cpf 2x1: the first step hands a1 to executor 0 (2.5) and b1 to executor 1 (3.0); each
  // keeps its chain: b2 ends at 3.0 + 0.1 + 10 + 0.1 + 10.
  const auto r = sim(g, t, Policy::kCriticalPath, 2);
  CHECK(r.makespan_us == Approx(23.2));
  CHECK(r.handoffs == 0);
  // One executor: a1, a2 (made ready locally), then it goes idle and claims b1 (step 0.5).
  const auto one = sim(g, t, Policy::kCriticalPath, 1);
  CHECK(one.makespan_us == Approx(2.5 + 0.1 + 20 + 0.1 + 0.5 + 0.1 + 20 + 0.1));
  CHECK(one.start_order == std::vector<uint32_t>{0, 2, 1, 3});
  CHECK(sim(g, t, Policy::kSequential, 1).makespan_us == Approx(40.2));
}

TEST_CASE("simulator: op cost curves saturate and respect the bandwidth floor",
          "[profiler][simulator]") {
  auto g = dag({{}});
  g.flops[0] = 1e6;  // compute class (1e6 flops on 1e3 bytes)
  g.bytes[0] = 1e3;
  profiler::MachineSpec m;
  m.core_speed = 1;
  profiler::DispatchCosts here;
  here.team_sync_us = 0;
  const std::vector<double> measured = {100};
  const auto c = profiler::OpCostCurves::from_measured(g, measured, 1, m, here);
  CHECK(c.node_us(0, 1, 1) == Approx(100));
  CHECK(c.node_us(0, 4, 1) == Approx(100 * (0.02 + 0.98 / 4)));
  CHECK(c.node_us(0, 32, 1) == Approx(100 * (0.02 + 0.98 / 8)));  // saturated at 8
  // A memory floor: 1 GB/s DRAM shared by 2 executors, 4e6 bytes beyond L2 -> 8000 us.
  g.bytes[0] = 4e6;
  g.flops[0] = 1;
  m.l2_bytes = 1024;
  m.dram_gbs = 1;
  const auto mem = profiler::OpCostCurves::from_measured(g, measured, 1, m, here);
  CHECK(mem.node_us(0, 4, 2) == Approx(8000));
}

TEST_CASE("simulator: times measured with a team of k are used as they are for that k",
          "[profiler][simulator]") {
  auto g = dag({{}});
  g.flops[0] = 1e6;  // compute class
  g.bytes[0] = 1e3;
  profiler::MachineSpec m;
  m.core_speed = 1;
  profiler::DispatchCosts here;
  here.team_sync_us = 0;
  const std::vector<double> at1 = {100}, at2 = {80};  // a team of 2 gains less than the curve
  auto c = profiler::OpCostCurves::from_measured(g, at1, 1, m, here);
  CHECK(c.node_us(0, 2, 1) == Approx(100 * (0.02 + 0.98 / 2)));
  c.add_measured(2, at2);
  CHECK(c.measured_at(2));
  CHECK(c.node_us(0, 2, 1) == Approx(80));
  CHECK(c.node_us(0, 1, 1) == Approx(100));
  CHECK(c.node_us(0, 4, 1) == Approx(100 * (0.02 + 0.98 / 4)));  // still extrapolated from t1
}

TEST_CASE("simulator: a sleeping client's hand-over is charged once per run, by the runtime's rule",
          "[profiler][simulator]") {
  // The rule is the runtime's (engine::client_role, used by ParallelRuntime::create).
  CHECK(engine::client_role(1, 2, Policy::kCriticalPath, false).sleeps);
  CHECK(engine::client_role(2, 1, Policy::kSharedQueue, false).sleeps);
  CHECK(!engine::client_role(2, 1, Policy::kCriticalPath, false).sleeps);  // plays executor 0
  CHECK(!engine::client_role(1, 2, Policy::kCriticalPath, true).sleeps);   // a core of its own
  CHECK(!engine::client_role(1, 1, Policy::kFifo, true).sleeps);          // solo: plays it
  const auto g = dag({{1}, {2}, {}});
  const std::vector<double> t = {10, 20, 30};
  profiler::SimConfig c;
  c.executors = 1;
  c.threads = 2;
  profiler::DispatchCosts d = costs();
  d.client_wake_us = 7;
  for (Policy p : {Policy::kCriticalPath, Policy::kSharedQueue, Policy::kSequential}) {
    c.policy = p;
    c.client_sleeps = false;
    const double awake = profiler::simulate_schedule(g, t, profiler::levels_from_costs(g, t), c, d)
                             .makespan_us;
    c.client_sleeps = true;
    const double asleep = profiler::simulate_schedule(g, t, profiler::levels_from_costs(g, t), c, d)
                              .makespan_us;
    // The sequential executor runs on the caller: no hand-over.
    CHECK(asleep - awake == Approx(p == Policy::kSequential ? 0.0 : 7.0));
  }
}

TEST_CASE("simulator: the runtime and the simulator take the same decisions for a fixed cost table",
          "[profiler][simulator]") {
  models::RnnSpec spec;
  spec.input = 8;
  spec.hidden = 8;
  spec.layers = 3;
  spec.batch = 1;
  spec.seq = 4;
  spec.seed = 5;
  auto g = std::make_shared<const graph::Graph>(
      value_or_throw(models::build_lstm(spec, ops::Registry::get())));
  auto plan = value_or_throw(engine::compile(g, 1));
  // A fixed cost table that differs from the cost hints, so cpf's order depends on it.
  std::vector<double> node_costs(plan.num_nodes());
  for (size_t i = 0; i < node_costs.size(); ++i)
    node_costs[i] = 1.0 + static_cast<double>((i * 7919) % 13);
  for (const char* policy : {"cpf", "fifo"}) {
    INFO(policy);
    engine::SessionOptions o;
    o.scheduler = policy;
    o.executors = 1;
    o.threads = 1;
    o.pin = false;
    o.trace = true;
    o.node_costs = node_costs;
    auto s = value_or_throw(engine::Session::create(g, o));
    (void)value_or_throw(s->run(test::random_inputs(*g, 1)));
    engine::RunTrace tr = s->last_trace();
    std::stable_sort(
        tr.ops.begin(), tr.ops.end(),
        [](const engine::OpSpan& a, const engine::OpSpan& b) { return a.start_ns < b.start_ns; });
    std::vector<uint32_t> real;
    for (const auto& op : tr.ops) real.push_back(op.node);

    const profiler::ModelGraph mg = profiler::model_graph(s->plan());
    profiler::SimConfig c;
    c.policy = *engine::parse_policy(policy);
    const auto r =
        profiler::simulate_schedule(mg, node_costs, engine::compute_levels(s->plan(), node_costs),
                                    c, profiler::DispatchCosts{});
    REQUIRE(real.size() == plan.num_nodes());
    CHECK(r.start_order == real);
    // cpf's order follows the cost table, not the ids (else the check above proves little).
    if (std::string(policy) == "cpf") CHECK_FALSE(std::is_sorted(real.begin(), real.end()));
  }
}

TEST_CASE("simulator: graphi simulate --json parses and covers every config and policy",
          "[profiler][simulator][cli]") {
  const auto dir = test::scratch_dir("simulate_json");
  const std::string model = (dir / "lstm.graphi").string();
  const std::string cli = test::cli_path();
  REQUIRE(std::system((cli + " model lstm --input 8 --hidden 8 --layers 2 --seq 3 -o " + model +
                       " > /dev/null")
                          .c_str()) == 0);
  const std::string cmd = cli + " simulate " + model +
                          " --synthetic 'package:1 l2:4 core:2 pu:1' --json --trace " +
                          (dir / "sim.json").string();
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  const auto j = nlohmann::json::parse(out);
  REQUIRE(j["predictions"].is_array());
  // 8 cores in tiles of 2: 1x8, 2x4, 4x2, 1x6, 3x2 ... ; every split has cpf, fifo, shared-queue.
  int sequential = 0, cpf = 0;
  for (const auto& p : j["predictions"]) {
    CHECK(p["makespan_ms"].get<double>() > 0);
    CHECK(p["makespan_ms"].get<double>() >= p["critical_path_ms"].get<double>() * 0.999);
    if (p["policy"] == "sequential") {
      ++sequential;
      CHECK(p["executors"] == 1);
    }
    if (p["policy"] == "cpf") ++cpf;
  }
  CHECK(cpf >= 3);
  CHECK(sequential >= 1);
  // The trace is Chrome Trace Event JSON.
  std::ifstream f(dir / "sim.json");
  const auto trace = nlohmann::json::parse(f);
  CHECK(trace.contains("traceEvents"));
  // Bad input names the problem.
  CHECK(std::system((cli + " simulate " + model + " --machine nosuch 2> /dev/null").c_str()) != 0);
}
