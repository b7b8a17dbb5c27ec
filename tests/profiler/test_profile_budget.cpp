// The profiler's time budget (ProfileOptions::budget_s, `graphi profile --budget-s`): the run
// counts it gives (budget_counts) and a whole profile that cannot fit it making the fewest runs.
// Counts only, never timings: the machine running the tests is shared.
#include <catch2/catch.hpp>

#include "profiler/profile.h"
#include "tests/support/random_dag.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {
// Session::run calls of a calibration with these counts and no early stop (calibrate.cpp).
double runs_of(const profiler::BudgetCounts& b, size_t configs) {
  const auto& c = b.calibration;
  const int rounds = std::min(c.rounds, c.runs);
  return static_cast<double>(configs) * (c.warmup + c.runs + (rounds - 1) * std::min(c.warmup, 1)) +
         1 + b.cost_runs;
}
}  // namespace

TEST_CASE("profile budget: the defaults when they fit, fewer runs that fit when not",
          "[profiler][budget]") {
  profiler::ProfileOptions base;  // 2 warm-ups, 10 runs in 3 rounds, 5 cost runs
  // 3 splits x (2 + 10 + 2 later warm-ups) + 1 + 5 = 48 runs of 1 s.
  profiler::BudgetCounts ample = profiler::budget_counts(1.0, 3, 48.0, base);
  CHECK_FALSE(ample.lowered);
  CHECK(ample.calibration.runs == 10);
  CHECK(ample.calibration.warmup == 2);
  CHECK(ample.cost_runs == 5);
  CHECK(ample.estimated_s == Approx(48.0));
  CHECK_FALSE(profiler::budget_counts(1.0, 3, 0.0, base).lowered);  // 0: no budget

  // 20 s: (20 - 2) / 3 = 6 runs per split: one warm-up, 5 timed runs in one round, 1 cost run.
  profiler::BudgetCounts tight = profiler::budget_counts(1.0, 3, 20.0, base);
  CHECK(tight.lowered);
  CHECK(tight.calibration.warmup == 1);
  CHECK(tight.calibration.runs == 5);
  CHECK(tight.calibration.rounds == 1);
  CHECK(tight.cost_runs == 1);
  CHECK(tight.calibration.min_block_ms == 0);
  CHECK(runs_of(tight, 3) == 20);

  // A 4000-op training step of 10 s per run against the default 120 s budget (issue 13: 16 min).
  for (double budget : {30.0, 60.0, 120.0, 300.0}) {
    profiler::BudgetCounts b = profiler::budget_counts(10.0, 3, budget, base);
    INFO("budget " << budget);
    CHECK(b.lowered == (budget < 480.0));
    CHECK(b.calibration.runs >= 1);
    CHECK(b.calibration.runs <= 10);
    // Fits whenever the minimum (one warm-up and one run per split, 2 for the costs) does.
    if (budget >= 10.0 * (3 * 2 + 2)) CHECK(runs_of(b, 3) * 10.0 <= budget);
    CHECK(b.estimated_s == Approx(runs_of(b, 3) * 10.0));
  }
  // Nothing fits: the minimum, never zero runs.
  profiler::BudgetCounts none = profiler::budget_counts(10.0, 3, 1e-6, base);
  CHECK(none.calibration.runs == 1);
  CHECK(none.calibration.warmup == 1);
  CHECK(none.calibration.rounds == 1);
  CHECK(none.cost_runs == 1);
}

TEST_CASE("profile budget: a profile over its budget makes the fewest runs", "[profiler][budget]") {
  test::RandomDagSpec spec;
  spec.nodes = 40;
  spec.seed = 13;
  auto g = test::random_dag(spec);
  engine::NamedTensors in = test::random_inputs(*g, 3);
  profiler::ProfileOptions o;
  o.calibration.quiet = true;
  o.budget_s = 1e-6;  // any run is over it
  profiler::ProfileResult r = value_or_throw(profiler::profile_graph(g, in, o));
  const size_t configs = r.candidates.size();  // the splits, several executors per scheduler
  REQUIRE(configs >= r.space.configs.size());
  CHECK(r.budget_lowered);
  // Fit: 1x1 and 1xK one warm-up + one traced run each; calibration: one warm-up + one run per
  // config; costs: one warm-up + one traced run.
  CHECK(r.session_runs <= static_cast<int>(4 + 2 * configs + 2));
  for (const profiler::ConfigResult& c : r.calibration.results)
    if (c.calibrated) CHECK(c.run_ms.size() == 1);
  CHECK(r.costs.run_ms.size() == 1);

  // Without a budget the same profile runs the defaults (5 ms blocks: many more runs).
  o.budget_s = 0;
  profiler::ProfileResult full = value_or_throw(profiler::profile_graph(g, in, o));
  CHECK_FALSE(full.budget_lowered);
  CHECK(full.session_runs > static_cast<int>(4 + 2 * configs + 2));
}
