// Calibration and per-op cost recording (see calibrate.h).
#include "profiler/calibrate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

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

Result<Calibration> calibrate(std::shared_ptr<const graph::Graph> g,
                              const engine::NamedTensors& inputs,
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
  const int runs = std::max(1, opt.runs);
  const int rounds = std::clamp(opt.rounds, 1, runs);
  const int runs_per_round = (runs + rounds - 1) / rounds;
  const int max_runs = std::max(runs, opt.max_runs);
  // Two runs whose faster one is over kHopeless x the best median end the config at once (1x2
  // on tiny ops can be 1000x slower on a loaded machine: waiting for more would cost seconds).
  // Every early stop also needs the config's fastest run to be slower than the best median: a
  // config that a transient (another process starting) hit in its first block keeps its fast
  // runs and is measured again in the next rounds instead of being dropped.
  constexpr double kHopeless = 10.0;
  double best_ms = 0;
  auto update_best = [&] {
    cal.best = -1;
    for (size_t i = 0; i < count; ++i) {
      ConfigResult& r = cal.results[i];
      if (r.run_ms.empty() || r.stopped_early || !r.error.empty()) continue;
      r.median_ms = median_of(r.run_ms);
      if (cal.best < 0 || r.median_ms < best_ms) {
        cal.best = static_cast<int>(i);
        best_ms = r.median_ms;
      }
    }
  };
  auto progress = [&](const std::string& what, size_t blocks_done, size_t blocks_total) {
    if (opt.quiet) return;
    std::string line = "graphi profile: " + what;
    if (cal.best >= 0 && blocks_done > 0) {
      char b[128];
      std::snprintf(b, sizeof b, ", best so far %s %.3f ms, about %.0f s left",
                    cal.results[static_cast<size_t>(cal.best)].config.name().c_str(), best_ms,
                    seconds_since(t_start) / static_cast<double>(blocks_done) *
                        static_cast<double>(blocks_total - blocks_done));
      line += b;
    }
    std::fprintf(opt.progress, "%s\n", line.c_str());
    std::fflush(opt.progress);
  };

  Status failed;  // the graph itself fails: no config will do better
  size_t blocks_done = 0;
  std::atomic<int> session_runs{0};
  for (int round = 0; round < rounds && failed.is_ok(); ++round) {
    std::vector<size_t> order;
    for (size_t i = 0; i < count; ++i)
      if (!cal.results[i].stopped_early && cal.results[i].error.empty()) order.push_back(i);
    if (round % 2) std::reverse(order.begin(), order.end());
    const size_t blocks_total = blocks_done + order.size() * static_cast<size_t>(rounds - round);
    if (round > 0 && !order.empty())
      progress("round " + std::to_string(round + 1) + " of " + std::to_string(rounds) + ": " +
                   std::to_string(order.size()) + (order.size() == 1 ? " config" : " configs"),
               blocks_done, blocks_total);
    for (size_t n = 0; n < order.size() && failed.is_ok(); ++n) {
      ConfigResult& r = cal.results[order[n]];
      if (round == 0)
        progress("config " + std::to_string(order[n] + 1) + " of " + std::to_string(count) + ": " +
                     r.config.name(),
                 blocks_done, blocks_total);
      const auto t0 = Clock::now();
      Result<std::shared_ptr<const engine::Plan>> plan = plans.get(r.config.threads);
      if (!plan.is_ok()) return plan.status();
      // Early stops compare with the best other config, in the first round only: later rounds
      // measure the configs that survived it, and one preempted run must not end a config.
      const bool have_best = round == 0 && cal.best >= 0 && cal.best != static_cast<int>(order[n]);
      const double best_before = best_ms;
      // The block runs on a fresh client thread: a sequential config leads its OpenMP team from
      // the thread that calls run(), and libgomp keeps that team (pinned) after the Session ends.
      std::thread block([&] {
        Result<std::unique_ptr<engine::Session>> s =
            engine::Session::create(*plan, session_options(r.config, opt));
        if (!s.is_ok()) {
          r.error = s.status().message();
          return;
        }
        const auto w0 = Clock::now();
        for (int w = 0; w < (round == 0 ? opt.warmup : std::min(opt.warmup, 1)) && failed.is_ok();
             ++w) {
          if (w > 0 && opt.block_cap_s > 0 && seconds_since(w0) >= opt.block_cap_s) break;
          Result<double> ms = timed_run(**s, inputs);
          ++session_runs;
          failed = ms.status();
        }
        const auto b0 = Clock::now();
        for (int k = 0; failed.is_ok(); ++k) {
          if (k >= runs_per_round && (seconds_since(b0) * 1e3 >= opt.min_block_ms ||
                                      static_cast<int>(r.run_ms.size()) >= max_runs))
            break;
          // Over the block's share of the budget: the runs so far must do (at least one).
          if (k > 0 && opt.block_cap_s > 0 && seconds_since(w0) >= opt.block_cap_s) break;
          Result<double> ms = timed_run(**s, inputs);
          ++session_runs;
          if (!ms.is_ok()) {
            failed = ms.status();
            return;
          }
          r.run_ms.push_back(*ms);
          if (!have_best) continue;
          const double fastest = *std::min_element(r.run_ms.begin(), r.run_ms.end());
          if ((r.run_ms.size() >= 2 && fastest > kHopeless * best_before) ||
              (opt.early_runs < runs && static_cast<int>(r.run_ms.size()) == opt.early_runs &&
               median_of(r.run_ms) > opt.early_ratio * best_before && fastest > best_before)) {
            r.stopped_early = true;
            return;
          }
        }
      });
      block.join();
      r.seconds += seconds_since(t0);
      r.calibrated = r.error.empty() && !r.run_ms.empty();
      ++blocks_done;
      update_best();
    }
    // After the first round every config has a median: the clearly worse ones stop here.
    if (round == 0 && opt.early_runs < runs && cal.best >= 0)
      for (size_t i = 0; i < count; ++i) {
        ConfigResult& r = cal.results[i];
        if (r.calibrated && !r.stopped_early && median_of(r.run_ms) > opt.early_ratio * best_ms &&
            *std::min_element(r.run_ms.begin(), r.run_ms.end()) > best_ms)
          r.stopped_early = true;
      }
  }
  cal.session_runs = session_runs.load();
  if (!failed.is_ok()) return failed;
  for (size_t i = 0; i < count; ++i)
    if (cal.results[i].calibrated) cal.results[i].median_ms = median_of(cal.results[i].run_ms);
  update_best();
  cal.seconds = seconds_since(t_start);
  if (!opt.quiet && cal.best >= 0)
    std::fprintf(opt.progress,
                 "graphi profile: calibrated %zu of %zu configs in %.1f s (%d rounds): best %s "
                 "%.3f ms\n",
                 count, ranked.size(), cal.seconds, rounds,
                 cal.results[static_cast<size_t>(cal.best)].config.name().c_str(), best_ms);
  return cal;
}

Result<OpCosts> record_op_costs(std::shared_ptr<const graph::Graph> g,
                                const engine::NamedTensors& inputs, const Config& config, int runs,
                                const CalibrationOptions& opt, std::span<const double> fallback_us,
                                double max_seconds) {
  GRAPHI_ASSIGN_OR_RETURN(engine::Plan plan, engine::compile(g, config.threads));
  auto plan_ptr = std::make_shared<const engine::Plan>(std::move(plan));
  engine::SessionOptions so = session_options(config, opt);
  so.trace = true;
  OpCosts out;
  Status status;
  std::thread client([&] {  // a fresh client thread, as in calibrate()
    auto run_all = [&]() -> Status {
      GRAPHI_ASSIGN_OR_RETURN(std::unique_ptr<engine::Session> s,
                              engine::Session::create(plan_ptr, so));
      const auto t0 = Clock::now();
      // Runs of a second or more say so (a large training step can take minutes per run).
      auto progress = [&](const char* what, double ms) {
        if (opt.quiet || ms < 1000.0) return;
        std::fprintf(opt.progress, "graphi profile:   %s under %dx%d: %.1f s (%.0f s elapsed)\n",
                     what, config.executors, config.threads, ms * 1e-3, seconds_since(t0));
        std::fflush(opt.progress);
      };
      ++out.session_runs;
      const auto tw = Clock::now();
      GRAPHI_RETURN_IF_ERROR(s->run(inputs).status());  // warm-up
      progress("warm-up run", seconds_since(tw) * 1e3);
      const int n = std::max(1, runs);
      for (int i = 0; i < n; ++i) {
        if (i > 0 && max_seconds > 0 && seconds_since(t0) >= max_seconds) break;
        ++out.session_runs;
        GRAPHI_ASSIGN_OR_RETURN(double ms, timed_run(*s, inputs));
        out.run_ms.push_back(ms);
        out.traces.push_back(s->last_trace());
        const std::string what = "traced run " + std::to_string(i + 1) + "/" + std::to_string(n);
        progress(what.c_str(), ms);
      }
      return Status();
    };
    status = run_all();
  });
  client.join();
  GRAPHI_RETURN_IF_ERROR(status);
  for (const engine::RunTrace& t : out.traces) out.recorded = out.recorded || !t.ops.empty();
  // Average over the faster half of the runs: on a shared machine one run preempted by another
  // process would dominate a mean over all of them.
  std::vector<size_t> by_makespan(out.traces.size());
  for (size_t i = 0; i < by_makespan.size(); ++i) by_makespan[i] = i;
  std::sort(by_makespan.begin(), by_makespan.end(),
            [&](size_t a, size_t b) { return out.run_ms[a] < out.run_ms[b]; });
  std::vector<engine::RunTrace> faster;
  for (size_t i = 0; i < (by_makespan.size() + 1) / 2; ++i)
    faster.push_back(out.traces[by_makespan[i]]);
  out.median_run = by_makespan[by_makespan.size() / 2];
  out.table = cost_table_from_traces(*plan_ptr, faster);
  pool_identical_ops(*plan_ptr, out.table);
  if (out.table.node_us.size() != plan_ptr->num_nodes())
    out.table.node_us.assign(plan_ptr->num_nodes(), 0.0);
  if (!out.recorded && fallback_us.size() == plan_ptr->num_nodes())
    out.table.node_us.assign(fallback_us.begin(), fallback_us.end());
  out.levels = engine::compute_levels(*plan_ptr, out.table.node_us);
  return out;
}

}  // namespace graphi::profiler
