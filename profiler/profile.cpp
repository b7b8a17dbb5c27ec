// profile_graph (see profile.h).
#include "profiler/profile.h"

#include <chrono>
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

}  // namespace

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
  Config one;
  GRAPHI_ASSIGN_OR_RETURN(OpCosts at1,
                          record_op_costs(g, inputs, one, opt.fit_runs, opt.calibration));
  OpCosts atk;
  if (kmax > 1 && at1.recorded) {
    Config wide;
    wide.threads = kmax;
    GRAPHI_ASSIGN_OR_RETURN(atk, record_op_costs(g, inputs, wide, opt.fit_runs, opt.calibration));
  }
  res.model = at1.recorded
                  ? CostModel::fitted(mg, at1.table.node_us, atk.table.node_us, kmax, {},
                                      median_of(at1.run_ms) * 1e3, median_of(atk.run_ms) * 1e3)
                  : CostModel::analytical(mg);
  res.fit_seconds = std::chrono::duration<double>(Clock::now() - t_fit).count();
  if (!opt.calibration.quiet)
    std::fprintf(opt.calibration.progress,
                 "graphi profile: %zu configs on %s; cost model from %s (%.1f s)\n",
                 res.space.configs.size(), res.space.topology.c_str(), res.model.source().c_str(),
                 res.fit_seconds);

  const std::vector<RankedConfig> ranked = rank_configs(res.model, res.space.configs);
  const size_t n = ranked.size();
  size_t count = opt.top_k > 0 ? std::min<size_t>(static_cast<size_t>(opt.top_k), n) : n;
  if (opt.compare_exhaustive) count = n;
  GRAPHI_ASSIGN_OR_RETURN(res.calibration, calibrate(g, inputs, ranked, count, opt.calibration));
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
                 res.chosen.name().c_str(), opt.cost_runs);
  std::vector<double> predicted_us(g->num_nodes());
  for (size_t i = 0; i < predicted_us.size(); ++i)
    predicted_us[i] = res.model.node_us(i, res.chosen.threads);
  GRAPHI_ASSIGN_OR_RETURN(res.costs, record_op_costs(g, inputs, res.chosen, opt.cost_runs,
                                                     opt.calibration, predicted_us));

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
