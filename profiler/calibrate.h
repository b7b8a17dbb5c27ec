// Calibration: runs the graph under candidate configurations and measures (seed 002 sections
// 4.2 and 5.2). Per config: a Session, warm-up runs, then timed runs and their median makespan
// (wall clock around Session::run); a config whose first runs are already clearly worse than the
// best so far is stopped early. The runs are spread over interleaved rounds (config A, B, C, then
// C, B, A, ...), each block on a fresh client thread, so that a transient (another process, a
// clock change) or what one config leaves behind (libgomp keeps a calling thread's team alive
// after its Session ends) does not land on one config only. Then the chosen config's per-op costs:
// traced runs averaged into a cost table (profiler::cost_table_from_traces) and levels computed
// from it.
#pragma once

#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/session.h"
#include "engine/trace.h"
#include "profiler/cost_model.h"
#include "profiler/cost_table.h"

namespace graphi::profiler {

struct CalibrationOptions {
  int runs = 10;   // timed runs per config, at least (more when blocks are short: min_block_ms)
  int warmup = 2;  // untimed runs first (threads awake, caches warm, RNN schedules chosen)
  int rounds = 3;  // the runs are split over this many interleaved rounds (at most `runs`)
  // A config's block in a round lasts at least this long: a 20 us graph gets hundreds of runs,
  // not 3, so one slow wake-up cannot decide its median. Capped at max_runs runs per config.
  double min_block_ms = 5.0;
  int max_runs = 5000;
  // Early stop: after `early_runs` runs, a config whose median exceeds early_ratio x the best
  // median so far is abandoned.
  int early_runs = 3;
  double early_ratio = 1.5;
  // Wall-time cap of each config's block in a round, after its first timed run (0: none). Set
  // by profile_graph from its budget (ProfileOptions::budget_s) so that a split far slower
  // than the others (1x2 on a loaded machine: 40x) cannot take all of it.
  double block_cap_s = 0;
  std::string cpuset;
  bool pin = true;
  bool quiet = false;  // no progress on stderr
  FILE* progress = stderr;
};

struct ConfigResult {
  Config config;
  CostModel::Prediction predicted;
  int model_rank = 0;  // 0 = the model's favourite
  bool calibrated = false;
  bool stopped_early = false;
  std::vector<double> run_ms;  // timed runs
  double median_ms = 0;
  double seconds = 0;  // wall time spent on this config (session, warm-up, runs)
  std::string error;   // a config that could not run (placement, ...)
};

struct Calibration {
  std::vector<ConfigResult> results;  // in the model's ranking order
  int best = -1;                      // index of the fastest calibrated config
  double seconds = 0;
  int session_runs = 0;  // every Session::run, warm-ups included
};

// Compiles (one Plan per team size, shared between configs) and calibrates results[i] for every
// i < calibrate_count in `ranked` order. `inputs` feeds every run.
Result<Calibration> calibrate(std::shared_ptr<const graph::Graph> g,
                              const engine::NamedTensors& inputs,
                              std::span<const RankedConfig> ranked, size_t calibrate_count,
                              const CalibrationOptions& options);

// Per-op durations of `config` averaged over the faster half of `runs` traced runs and over the
// identical ops of the plan (profiler::pool_identical_ops), the levels they give, and the traces
// themselves (for the report and the Chrome trace). The faster half: one run preempted by
// another process would dominate a mean on a shared machine.
struct OpCosts {
  CostTable table;
  std::vector<double> levels;
  std::vector<engine::RunTrace> traces;
  std::vector<double> run_ms;  // wall time of the traced runs
  size_t median_run = 0;       // index of the run with the median wall time
  bool recorded = false;       // false: the engine recorded no spans (tracing unavailable)
  int session_runs = 0;        // every Session::run, the warm-up included
};
// When the engine recorded no spans and `fallback_us` (one per node) is given, the table holds
// it instead (e.g. the cost model's prediction for this config) and `recorded` stays false.
// `max_seconds` > 0: no further traced run once the warm-up and the runs so far took that long
// (at least one traced run always).
Result<OpCosts> record_op_costs(std::shared_ptr<const graph::Graph> g,
                                const engine::NamedTensors& inputs, const Config& config, int runs,
                                const CalibrationOptions& options,
                                std::span<const double> fallback_us = {}, double max_seconds = 0);

double median_of(std::vector<double> v);

}  // namespace graphi::profiler
