// Calibration and per-op cost recording (see calibrate.h).
#include "profiler/calibrate.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "engine/plan.h"

namespace graphi::profiler {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

engine::SessionOptions session_options(const Config& c, const CalibrationOptions& o) {
  engine::SessionOptions s;
  s.executors = c.executors;
  s.threads = c.threads;
  s.scheduler = c.scheduler;
  s.cpuset = o.cpuset;
  s.pin = o.pin;
  return s;
}

// One compiled Plan per team size (kernels and packed weights depend on it).
class PlanCache {
 public:
  explicit PlanCache(std::shared_ptr<const graph::Graph> g) : g_(std::move(g)) {}
  Result<std::shared_ptr<const engine::Plan>> get(int threads) {
    auto it = plans_.find(threads);
    if (it != plans_.end()) return it->second;
    GRAPHI_ASSIGN_OR_RETURN(engine::Plan p, engine::compile(g_, threads));
    auto ptr = std::make_shared<const engine::Plan>(std::move(p));
    plans_[threads] = ptr;
    return ptr;
  }

 private:
  std::shared_ptr<const graph::Graph> g_;
  std::map<int, std::shared_ptr<const engine::Plan>> plans_;
};

Result<double> timed_run(engine::Session& s, const engine::NamedTensors& inputs) {
  const auto t0 = Clock::now();
  Result<engine::NamedTensors> r = s.run(inputs);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.is_ok()) return r.status();
  return ms;
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Result<Calibration> calibrate(std::shared_ptr<const graph::Graph> g, const engine::NamedTensors& inputs,
                              std::span<const RankedConfig> ranked, size_t count,
                              const CalibrationOptions& opt) {
  const auto t_start = Clock::now();
  Calibration cal;
  PlanCache plans(g);
  count = std::min(count, ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) {
    ConfigResult r;
    r.config = ranked[i].config;
    r.predicted = ranked[i].predicted;
    r.model_rank = static_cast<int>(i);
    cal.results.push_back(r);
  }
  double best_ms = 0;
  for (size_t i = 0; i < count; ++i) {
    ConfigResult& r = cal.results[i];
    const auto t0 = Clock::now();
    if (!opt.quiet) {
      std::string line = "graphi profile: config " + std::to_string(i + 1) + " of " + std::to_string(count) + ": " +
                         r.config.name();
      if (cal.best >= 0) {
        char b[96];
        std::snprintf(b, sizeof b, ", best so far %s %.3f ms, about %.0f s left",
                      cal.results[static_cast<size_t>(cal.best)].config.name().c_str(), best_ms,
                      seconds_since(t_start) / static_cast<double>(i) * static_cast<double>(count - i));
        line += b;
      }
      std::fprintf(opt.progress, "%s\n", line.c_str());
      std::fflush(opt.progress);
    }
    Result<std::shared_ptr<const engine::Plan>> plan = plans.get(r.config.threads);
    if (!plan.is_ok()) return plan.status();
    Result<std::unique_ptr<engine::Session>> s = engine::Session::create(*plan, session_options(r.config, opt));
    if (!s.is_ok()) {
      r.error = s.status().message();
      r.seconds = seconds_since(t0);
      continue;
    }
    Status failed;
    // A run over kHopeless x the best median ends the config at once (1x2 on tiny ops can be
    // 1000x slower on a loaded machine: waiting for 3 such runs would cost seconds).
    constexpr double kHopeless = 10.0;
    for (int w = 0; w < opt.warmup && failed.is_ok(); ++w) {
      Result<double> ms = timed_run(**s, inputs);
      failed = ms.status();
      if (ms.is_ok() && cal.best >= 0 && *ms > kHopeless * best_ms) {
        r.run_ms.push_back(*ms);
        r.stopped_early = true;
        break;
      }
    }
    for (int k = 0; k < opt.runs && failed.is_ok() && !r.stopped_early; ++k) {
      Result<double> ms = timed_run(**s, inputs);
      if (!ms.is_ok()) {
        failed = ms.status();
        break;
      }
      r.run_ms.push_back(*ms);
      if (cal.best >= 0 && opt.early_runs < opt.runs &&
          ((static_cast<int>(r.run_ms.size()) == opt.early_runs && median_of(r.run_ms) > opt.early_ratio * best_ms) ||
           *ms > kHopeless * best_ms)) {
        r.stopped_early = true;
        break;
      }
    }
    if (!failed.is_ok()) return failed;  // the graph itself fails: no config will do better
    r.calibrated = true;
    r.median_ms = median_of(r.run_ms);
    r.seconds = seconds_since(t0);
    if (!r.stopped_early && (cal.best < 0 || r.median_ms < best_ms)) {
      cal.best = static_cast<int>(i);
      best_ms = r.median_ms;
    }
  }
  cal.seconds = seconds_since(t_start);
  if (!opt.quiet && cal.best >= 0)
    std::fprintf(opt.progress, "graphi profile: calibrated %zu of %zu configs in %.1f s: best %s %.3f ms\n", count,
                 ranked.size(), cal.seconds, cal.results[static_cast<size_t>(cal.best)].config.name().c_str(), best_ms);
  return cal;
}

Result<OpCosts> record_op_costs(std::shared_ptr<const graph::Graph> g, const engine::NamedTensors& inputs,
                                const Config& config, int runs, const CalibrationOptions& opt,
                                std::span<const double> fallback_us) {
  GRAPHI_ASSIGN_OR_RETURN(engine::Plan plan, engine::compile(g, config.threads));
  auto plan_ptr = std::make_shared<const engine::Plan>(std::move(plan));
  engine::SessionOptions so = session_options(config, opt);
  so.trace = true;
  GRAPHI_ASSIGN_OR_RETURN(std::unique_ptr<engine::Session> s, engine::Session::create(plan_ptr, so));
  OpCosts out;
  GRAPHI_RETURN_IF_ERROR(s->run(inputs).status());  // warm-up
  for (int i = 0; i < std::max(1, runs); ++i) {
    GRAPHI_ASSIGN_OR_RETURN(double ms, timed_run(*s, inputs));
    out.run_ms.push_back(ms);
    out.traces.push_back(s->last_trace());
  }
  for (const engine::RunTrace& t : out.traces) out.recorded = out.recorded || !t.ops.empty();
  // Average over the faster half of the runs: on a shared machine one run preempted by another
  // process would dominate a mean over all of them.
  std::vector<size_t> by_makespan(out.traces.size());
  for (size_t i = 0; i < by_makespan.size(); ++i) by_makespan[i] = i;
  std::sort(by_makespan.begin(), by_makespan.end(), [&](size_t a, size_t b) { return out.run_ms[a] < out.run_ms[b]; });
  std::vector<engine::RunTrace> faster;
  for (size_t i = 0; i < (by_makespan.size() + 1) / 2; ++i) faster.push_back(out.traces[by_makespan[i]]);
  out.median_run = by_makespan[by_makespan.size() / 2];
  out.table = cost_table_from_traces(*plan_ptr, faster);
  if (out.table.node_us.size() != plan_ptr->num_nodes()) out.table.node_us.assign(plan_ptr->num_nodes(), 0.0);
  if (!out.recorded && fallback_us.size() == plan_ptr->num_nodes())
    out.table.node_us.assign(fallback_us.begin(), fallback_us.end());
  out.levels = engine::compute_levels(*plan_ptr, out.table.node_us);
  return out;
}

}  // namespace graphi::profiler
