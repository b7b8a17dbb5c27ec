// profile_graph: the whole `graphi profile` pipeline on one graph, as a library call.
//  1. enumerate the splits of this machine (config_space.h), each multi-executor split once per
//     scheduler in ProfileOptions::policies;
//  2. fit the cost model: per-op times traced under 1x1 and 1xK (K the largest single team),
//     serial fraction per op class (cost_model.h); without recorded traces, the analytical model;
//  3. rank the splits with the model, calibrate the top K (all without --top-k) (calibrate.h);
//  4. record per-op costs under the fastest, compute levels, build the plan for the cache.
// With compare_exhaustive every split is calibrated and the result says what --top-k K would
// have chosen: the model's rank of the true best, the makespan lost, the calibration time saved.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "profiler/calibrate.h"
#include "profiler/config_space.h"
#include "profiler/cost_model.h"
#include "profiler/plan_cache.h"

namespace graphi::profiler {

struct ProfileOptions {
  int top_k = 0;                    // 0 = calibrate every config
  bool compare_exhaustive = false;  // calibrate every config, then evaluate top_k (default 2)
  int fit_runs = 3;                 // traced runs at 1x1 and 1xK for the model's fit
  int cost_runs = 5;                // traced runs under the chosen config for the cost table
  // Budget of all the runs in seconds (0: none). From the fit's measured run time the counts
  // above are lowered (budget_counts) so that the estimated total fits it; each phase also
  // stops at its share of it. Wall time from the start, compiling the plans included.
  double budget_s = 120;
  // Schedulers tried on every multi-executor split (with_policies). Both by default: the seed
  // reports cpf 8-19% ahead of a shared queue on a 64-core Phi, but here a shared queue won on
  // PathNet's 6-wide fan-out at 2x1 in every run (0.82-0.93 of cpf), so the profiler measures
  // rather than assumes. Empty: cpf only.
  std::vector<std::string> policies = {"cpf", "shared-queue"};
  CalibrationOptions calibration;
  std::string model;  // the file, for the plan's record
};

struct ExhaustiveComparison {
  int top_k = 0;
  int true_best_model_rank = 0;  // 1-based rank the model gave the config that measured fastest
  std::string true_best, top_k_choice;
  double true_best_ms = 0, top_k_ms = 0;
  double lost_pct = 0;                   // (top_k_ms / true_best_ms - 1) * 100
  double exhaustive_s = 0, top_k_s = 0;  // calibration time of all configs / of the top K only
};

// The run counts of a profile whose runs take about `run_s` seconds each, with `budget_s` left
// for calibrating `configs` splits and recording the chosen one's costs. When the defaults
// (`base`) fit, they are kept; otherwise one warm-up per split, one round when fewer than 4
// runs per round fit, R lowered to what fits (at least 1), one cost run, no minimum block time.
struct BudgetCounts {
  CalibrationOptions calibration;
  int cost_runs = 0;
  bool lowered = false;  // the defaults did not fit
  double estimated_s = 0;  // runs x run_s with the counts returned
};
BudgetCounts budget_counts(double run_s, size_t configs, double budget_s,
                           const ProfileOptions& base);

struct ProfileResult {
  ConfigSpace space;               // the splits
  std::vector<Config> candidates;  // the splits with their schedulers: what was ranked
  CostModel model;
  double fit_seconds = 0;  // measuring 1x1 and 1xK for the model
  Calibration calibration;
  Config chosen;
  double chosen_ms = 0;
  double sequential_ms = 0;  // 1x1 sequential's median, 0 if not calibrated
  OpCosts costs;             // under the chosen config
  SavedPlan plan;
  std::optional<ExhaustiveComparison> comparison;
  double seconds = 0;  // all of profiling
  int session_runs = 0;  // every Session::run of the fit, the calibration and the cost recording
  bool budget_lowered = false;  // the run counts were lowered to fit budget_s
};

Result<ProfileResult> profile_graph(std::shared_ptr<const graph::Graph> g,
                                    const engine::NamedTensors& inputs,
                                    const ProfileOptions& options);

}  // namespace graphi::profiler
