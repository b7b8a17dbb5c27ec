// profile_graph (see profile.h).
#include "profiler/profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

namespace graphi::profiler {

namespace {

using Clock = std::chrono::steady_clock;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Session::run calls of one calibration with these counts (warm-ups included, no early stops).
double calibration_runs(const CalibrationOptions& c, size_t configs) {
  const int rounds = std::clamp(c.rounds, 1, std::max(1, c.runs));
  return static_cast<double>(configs) *
         (c.warmup + std::max(1, c.runs) + (rounds - 1) * std::min(c.warmup, 1));
}

}  // namespace

BudgetCounts budget_counts(double run_s, size_t configs, double budget_s,
                           const ProfileOptions& base) {
  BudgetCounts b;
  b.calibration = base.calibration;
  b.cost_runs = base.cost_runs;
  configs = std::max<size_t>(configs, 1);
  auto estimate = [&] {
    return run_s * (calibration_runs(b.calibration, configs) + 1 + std::max(1, b.cost_runs));
  };
  b.estimated_s = estimate();
  if (budget_s <= 0 || b.estimated_s <= budget_s) return b;
  b.lowered = true;
  CalibrationOptions& c = b.calibration;
  c.min_block_ms = 0;
  c.warmup = std::min(c.warmup, 1);
  b.cost_runs = 1;
  // Runs per split that fit after the cost recording (its warm-up and one run).
  const double fit = std::floor((budget_s / std::max(run_s, 1e-9) - 2) / static_cast<double>(configs));
  const int per_config = static_cast<int>(std::clamp(fit, 0.0, 1e6));
  c.rounds = std::clamp(per_config / 4, 1, std::max(1, base.calibration.rounds));
  const int timed = per_config - c.warmup - (c.rounds - 1) * c.warmup;
  c.runs = std::clamp(timed, 1, std::max(1, base.calibration.runs));
  c.rounds = std::min(c.rounds, c.runs);
  b.estimated_s = estimate();
  return b;
}

Result<ProfileResult> profile_graph(std::shared_ptr<const graph::Graph> g,
                                    const engine::NamedTensors& inputs, const ProfileOptions& opt) {
  const auto t0 = Clock::now();
  GRAPHI_ASSIGN_OR_RETURN(engine::Topology topo,
                          engine::Topology::load_this_machine(opt.calibration.cpuset));
  ProfileResult res;
  res.space = enumerate_configs(topo);
  if (res.space.configs.empty())
    return Status::invalid_argument("no executor x thread split fits this machine (" +
                                    res.space.topology + ")");

  // The model: measured per-op times at k = 1 and k = K, else the cost hints.
  GRAPHI_ASSIGN_OR_RETURN(ModelGraph mg, model_graph(*g));
  int kmax = 1;
  for (const Config& c : res.space.configs)
    if (c.executors == 1) kmax = std::max(kmax, c.threads);
  const auto t_fit = Clock::now();
  auto say = [&](const char* fmt, auto... args) {
    if (opt.calibration.quiet) return;
    std::fprintf(opt.calibration.progress, fmt, args...);
    std::fflush(opt.calibration.progress);
  };
  // The fit's traced runs stop at a tenth of the budget each (at least one run).
  const double fit_cap_s = opt.budget_s > 0 ? 0.1 * opt.budget_s : 0;
  Config one;
  say("graphi profile: fitting the cost model: traced runs under 1x1 (%d nodes)\n",
      static_cast<int>(g->num_nodes()));
  GRAPHI_ASSIGN_OR_RETURN(
      OpCosts at1, record_op_costs(g, inputs, one, opt.fit_runs, opt.calibration, {}, fit_cap_s));
  res.session_runs += at1.session_runs;
  OpCosts atk;
  if (kmax > 1 && at1.recorded) {
    Config wide;
    wide.threads = kmax;
    say("graphi profile: fitting the cost model: 1x1 %.1f ms per run; traced runs under 1x%d\n",
        median_of(at1.run_ms), kmax);
    GRAPHI_ASSIGN_OR_RETURN(
        atk, record_op_costs(g, inputs, wide, opt.fit_runs, opt.calibration, {}, fit_cap_s));
    res.session_runs += atk.session_runs;
  }
  res.model = at1.recorded
                  ? CostModel::fitted(mg, at1.table.node_us, atk.table.node_us, kmax, {},
                                      median_of(at1.run_ms) * 1e3, median_of(atk.run_ms) * 1e3)
                  : CostModel::analytical(mg);
  res.fit_seconds = std::chrono::duration<double>(Clock::now() - t_fit).count();
  res.candidates = with_policies(res.space.configs, opt.policies);
  if (!opt.calibration.quiet)
    std::fprintf(opt.calibration.progress,
                 "graphi profile: %zu splits (%zu configs with their schedulers) on %s; cost "
                 "model from %s (%.1f s)\n",
                 res.space.configs.size(), res.candidates.size(), res.space.topology.c_str(),
                 res.model.source().c_str(), res.fit_seconds);

  const std::vector<RankedConfig> ranked = rank_configs(res.model, res.candidates);
  const size_t n = ranked.size();
  size_t count = opt.top_k > 0 ? std::min<size_t>(static_cast<size_t>(opt.top_k), n) : n;
  if (opt.compare_exhaustive) count = n;
  // Fit the calibration and the cost recording into what is left of the budget, from the fit's
  // run times (the mean of the 1x1 and 1xK medians: a split is rarely slower than both).
  const double run_s =
      (atk.run_ms.empty() ? median_of(at1.run_ms)
                          : 0.5 * (median_of(at1.run_ms) + median_of(atk.run_ms))) * 1e-3;
  const double left_s = opt.budget_s > 0 ? std::max(0.0, opt.budget_s - seconds_since(t0)) : 0;
  BudgetCounts counts = budget_counts(run_s, count, opt.budget_s > 0 ? std::max(left_s, 1e-9) : 0,
                                      opt);
  if (opt.budget_s > 0) {
    // One split far slower than the estimate (1x2 on a loaded machine) stops at twice its share.
    const int rounds = std::clamp(counts.calibration.rounds, 1, counts.calibration.runs);
    counts.calibration.block_cap_s =
        2.0 * left_s / static_cast<double>(std::max<size_t>(count, 1) * rounds);
  }
  res.budget_lowered = counts.lowered;
  if (counts.lowered)
    say("graphi profile: one run takes ~%.0f ms: the default runs would take ~%.0f s of the "
        "%.0f s left of the %.0f s budget (--budget-s); lowered to %d warm-up + %d runs in %d "
        "round(s) per split, %d cost run (~%.0f s)\n",
        run_s * 1e3, budget_counts(run_s, count, 0, opt).estimated_s, left_s, opt.budget_s,
        counts.calibration.warmup, counts.calibration.runs, counts.calibration.rounds,
        counts.cost_runs, counts.estimated_s);
  GRAPHI_ASSIGN_OR_RETURN(res.calibration,
                          calibrate(g, inputs, ranked, count, counts.calibration));
  res.session_runs += res.calibration.session_runs;
  if (res.calibration.best < 0)
    return Status::invalid_argument("no configuration could run the graph");
  const std::vector<ConfigResult>& results = res.calibration.results;
  for (const ConfigResult& r : results)
    if (r.calibrated && r.config.executors == 1 && r.config.threads == 1)
      res.sequential_ms = r.median_ms;

  if (opt.compare_exhaustive) {
    ExhaustiveComparison cmp;
    cmp.top_k = opt.top_k > 0 ? opt.top_k : 2;
    const ConfigResult& best = results[static_cast<size_t>(res.calibration.best)];
    cmp.true_best = best.config.name();
    cmp.true_best_ms = best.median_ms;
    cmp.true_best_model_rank = best.model_rank + 1;
    int topk_best = -1;
    for (size_t i = 0; i < n; ++i) {
      cmp.exhaustive_s += results[i].seconds;
      if (static_cast<int>(i) >= cmp.top_k) continue;
      cmp.top_k_s += results[i].seconds;
      if (results[i].calibrated && !results[i].stopped_early &&
          (topk_best < 0 ||
           results[i].median_ms < results[static_cast<size_t>(topk_best)].median_ms))
        topk_best = static_cast<int>(i);
    }
    if (topk_best >= 0) {
      cmp.top_k_choice = results[static_cast<size_t>(topk_best)].config.name();
      cmp.top_k_ms = results[static_cast<size_t>(topk_best)].median_ms;
      cmp.lost_pct = cmp.true_best_ms > 0 ? (cmp.top_k_ms / cmp.true_best_ms - 1.0) * 100.0 : 0;
    }
    res.comparison = cmp;
  }

  const ConfigResult& best = results[static_cast<size_t>(res.calibration.best)];
  res.chosen = best.config;
  res.chosen_ms = best.median_ms;
  if (!opt.calibration.quiet)
    std::fprintf(opt.calibration.progress,
                 "graphi profile: recording per-op costs under %s (%d runs)\n",
                 res.chosen.name().c_str(), counts.cost_runs);
  std::vector<double> predicted_us(g->num_nodes());
  for (size_t i = 0; i < predicted_us.size(); ++i)
    predicted_us[i] = res.model.node_us(i, res.chosen.threads);
  const double cost_cap_s =
      opt.budget_s > 0 ? std::max(1e-9, opt.budget_s - seconds_since(t0)) : 0;
  GRAPHI_ASSIGN_OR_RETURN(res.costs,
                          record_op_costs(g, inputs, res.chosen, counts.cost_runs,
                                          counts.calibration, predicted_us, cost_cap_s));
  res.session_runs += res.costs.session_runs;

  SavedPlan& p = res.plan;
  p.graph_hash = graph_content_hash(*g);
  p.topology = topology_signature(topo);
  p.version = graphi_version();
  p.config = res.chosen;
  p.node_us = res.costs.table.node_us;
  p.levels = res.costs.levels;
  p.cost_runs = res.costs.table.runs;
  p.makespan_ms = res.chosen_ms;
  p.model = opt.model;
  p.created = utc_now();
  for (const ConfigResult& r : results) {
    if (!r.calibrated) continue;
    p.configs.push_back({{"executors", r.config.executors},
                         {"threads", r.config.threads},
                         {"scheduler", r.config.scheduler},
                         {"makespan_ms", r.median_ms},
                         {"stopped_early", r.stopped_early}});
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace graphi::profiler
