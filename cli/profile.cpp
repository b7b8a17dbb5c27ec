// graphi profile: finds the fastest executor x thread split of a model on this machine
// (profiler/profile.h), prints what it measured and writes the plan into the cache
// (profiler/plan_cache.h) so `graphi run` uses it. docs/PROFILER.md explains the report.
#include "profiler/profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "cli/input_binding.h"
#include "cli/json_output.h"
#include "engine/plan.h"
#include "engine/policy.h"
#include "models/weights.h"
#include "profiler/chrome_trace.h"

namespace graphi::cli {

namespace {

struct ExecutorUse {
  std::string track;  // "executor 0", "inline", "bootstrap"
  double busy_ms = 0;
  double utilisation = 0;  // busy / makespan
};

// Busy time per track of one traced run.
std::vector<ExecutorUse> utilisation(const engine::RunTrace& t) {
  std::map<int, double> busy_ns;
  for (const engine::OpSpan& s : t.ops)
    busy_ns[s.executor] += static_cast<double>(s.end_ns - s.start_ns);
  const double span = static_cast<double>(t.run_end_ns - t.run_start_ns);
  std::vector<ExecutorUse> out;
  for (int e = 0; e < t.executors; ++e) busy_ns.try_emplace(e, 0.0);
  for (const auto& [e, ns] : busy_ns) {
    ExecutorUse u;
    u.track = e >= 0                            ? "executor " + std::to_string(e)
              : e == engine::kBootstrapExecutor ? "bootstrap"
                                                : "inline";
    u.busy_ms = ns / 1e6;
    u.utilisation = span > 0 ? ns / span : 0;
    out.push_back(u);
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

int profile_command(int argc, char** argv) {
  Args args(
      "graphi profile MODEL [--top-k K] [--runs R] [--trace FILE] [--plan-out FILE] [--json] "
      "[--quiet]\n"
      "                      [--compare-exhaustive] [--no-fuse] [--dim NAME=VALUE]... [--input "
      "NAME=FILE.npy]... [--cpuset "
      "LIST]\n"
      "                      [--schedulers LIST]",
      "Finds the fastest executors x threads split of MODEL on this machine: enumerates the "
      "splits\n"
      "the allowed cores admit (several executors once per scheduler of --schedulers), ranks them "
      "with a cost model fitted from per-op times under 1x1 "
      "and\n"
      "1xK, calibrates the best ranked (warm-up, then R runs each, median makespan; a split "
      "clearly\n"
      "worse than the best so far is stopped early), records per-op costs under the fastest and\n"
      "saves the plan (split, cost table, levels) in the plan cache, where `graphi run` finds it.\n"
      "Inputs are seeded random values. docs/PROFILER.md explains the report. Example:\n"
      "  graphi profile lstm.graphi --top-k 2 --plan-out lstm.plan.json");
  args.positional("MODEL", "the model file (.graphi or .onnx)");
  args.option("--top-k", "K",
              "calibrate only the K splits the cost model ranks best (default: all)");
  args.option("--runs", "R", "timed runs per split, 1..100000 (default 10)");
  args.option("--warmup", "N", "untimed runs per split first, 0..1000 (default 2)");
  args.option("--budget-s", "S",
              "time budget of all runs in seconds; fewer runs on long graphs (default 120, 0: "
              "none)");
  args.option("--trace", "FILE",
              "write the chosen split's Chrome trace (Perfetto, chrome://tracing)");
  args.option("--plan-out", "FILE", "also write the plan to FILE (graphi run --plan FILE)");
  args.flag("--json", "print one JSON object on stdout instead of the report");
  args.option("--json-indent", "N", "indent --json output by N spaces (default: one line)");
  args.flag("--quiet", "no progress on stderr");
  args.flag("--compare-exhaustive",
            "calibrate every split and report what --top-k K (default 2) would have chosen");
  args.flag("--no-cache", "do not write the plan into the cache");
  args.flag("--no-fuse", "profile the graph as stored (no graph passes)");
  args.option("--dim", "NAME=VALUE",
              "value of a symbolic dim of an .onnx model's inputs (default: from the --input "
              "files' shapes)",
              true);
  args.option("--input", "NAME=FILE.npy",
              "feed graph input NAME from a .npy file (others: seeded random values)", true);
  args.option("--cpuset", "LIST", "profile on these cores only (\"0-3,8\")");
  args.option("--schedulers", "LIST",
              "schedulers tried on every split of several executors, comma-separated (default "
              "cpf,shared-queue; one executor always runs sequential)");
  args.option("--seed", "S", "seed of the generated inputs (default 0)");
  if (auto code = args.parse(argc, argv)) return *code;
  const std::string model_path = args.positionals()[0];
  auto top_k = args.get_int("--top-k", 0, 1, 100000);
  auto runs = args.get_int("--runs", 10, 1, 100000);
  auto warmup = args.get_int("--warmup", 2, 0, 1000);
  auto seed = args.get_int("--seed", 0, 0, 0x7fffffffffffffffL);
  auto json_indent = args.get_int("--json-indent", 0, 0, 16);
  auto budget = args.get_int("--budget-s", 120, 0, 1000000);
  if (!top_k || !runs || !warmup || !seed || !json_indent || !budget) return kExitUsage;
  const bool json = args.has("--json");

  auto input_files = parse_input_flags(args.get_all("--input"));
  if (!input_files.is_ok()) return args.usage_error(input_files.status().message());
  auto dims = parse_dim_flags(args.get_all("--dim"));
  if (!dims.is_ok()) return args.usage_error(dims.status().message());
  read_input_files(*input_files);
  dims->input_shapes = input_shapes(*input_files);  // symbolic dims the files' shapes give
  // A file for an input that is also an initializer overrides it (graph/onnx/ONNX.md).
  for (const InputFile& f : *input_files) dims->override_initializers.insert(f.name);
  auto loaded = load_model(model_path, *dims);
  if (!loaded.is_ok() && is_dim_error(loaded.status()))
    return args.usage_error(loaded.status().message());
  if (!loaded.is_ok()) return runtime_error(loaded.status());
  std::shared_ptr<const graph::Graph> g = *loaded;
  if (!args.has("--no-fuse")) {
    auto fused = fuse_graph(g);
    if (!fused.is_ok()) return runtime_error(fused.status());
    g = *fused;
  }
  if (auto unknown = unknown_input(*g, model_path, *input_files)) return args.usage_error(*unknown);
  auto bound = bind_inputs(*g, *input_files, static_cast<uint64_t>(*seed));
  if (!bound.is_ok()) return runtime_error(bound.status());
  const engine::NamedTensors& inputs = bound->tensors;

  profiler::ProfileOptions opt;
  opt.top_k = static_cast<int>(*top_k);
  opt.compare_exhaustive = args.has("--compare-exhaustive");
  opt.model = model_path;
  opt.calibration.runs = static_cast<int>(*runs);
  opt.calibration.warmup = static_cast<int>(*warmup);
  opt.budget_s = static_cast<double>(*budget);
  opt.calibration.quiet = args.has("--quiet");
  opt.calibration.cpuset = args.get("--cpuset");
  if (args.has("--schedulers")) {
    opt.policies.clear();
    std::string list = args.get("--schedulers");
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      const std::string name = list.substr(at, comma - at);
      const auto p = engine::parse_policy(name);
      if (!p || *p == engine::Policy::kSequential)
        return args.usage_error("--schedulers: '" + name +
                                "' is not a scheduler of several executors (use cpf, fifo, "
                                "shared-queue)");
      if (std::find(opt.policies.begin(), opt.policies.end(), name) == opt.policies.end())
        opt.policies.push_back(name);
      at = comma + 1;
    }
  }
  auto profiled = profiler::profile_graph(g, inputs, opt);
  if (!profiled.is_ok()) {
    // Errors of the graph's nodes already start with its path.
    const Status& s = profiled.status();
    return runtime_error(with_input_hint(
        s.message().rfind(model_path, 0) == 0 ? s : s.with_context(model_path), *bound));
  }
  const profiler::ProfileResult& res = *profiled;

  std::string cache_file;
  if (!args.has("--no-cache")) {
    auto stored = profiler::store_cached_plan(res.plan);
    if (stored.is_ok())
      cache_file = *stored;
    else
      std::fprintf(stderr, "graphi: warning: plan not cached: %s\n",
                   stored.status().message().c_str());
  }
  if (args.has("--plan-out")) {
    if (Status s = profiler::write_plan_file(args.get("--plan-out"), res.plan); !s.is_ok())
      return runtime_error(s);
  }
  // The report and --trace show the traced run of median length (not an outlier).
  const engine::RunTrace* trace =
      res.costs.traces.empty() ? nullptr : &res.costs.traces[res.costs.median_run];
  if (args.has("--trace")) {
    if (!trace || trace->ops.empty())
      return runtime_error(
          Status::unsupported("--trace: the engine recorded no trace of the chosen split"));
    auto plan = engine::compile(g, res.chosen.threads);
    if (!plan.is_ok()) return runtime_error(plan.status());
    if (Status s = profiler::write_chrome_trace(args.get("--trace"), *plan, *trace); !s.is_ok())
      return runtime_error(s);
  }

  // Derived numbers for the report.
  const double best_ms = res.chosen_ms;
  double critical_path_us = 0;
  for (double l : res.costs.levels) critical_path_us = std::max(critical_path_us, l);
  std::map<std::string, std::pair<double, int>> per_type;  // op type -> (total us, nodes)
  std::vector<size_t> by_time;
  for (size_t i = 0; i < res.costs.table.node_us.size(); ++i) {
    per_type[g->node(static_cast<graph::NodeId>(i)).op].first += res.costs.table.node_us[i];
    per_type[g->node(static_cast<graph::NodeId>(i)).op].second += 1;
    by_time.push_back(i);
  }
  std::sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) {
    return res.costs.table.node_us[a] > res.costs.table.node_us[b];
  });
  if (by_time.size() > 10) by_time.resize(10);
  std::vector<std::pair<std::string, std::pair<double, int>>> types(per_type.begin(),
                                                                    per_type.end());
  std::sort(types.begin(), types.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  double total_us = 0;
  for (const auto& t : types) total_us += t.second.first;
  const std::vector<ExecutorUse> use =
      trace && !trace->ops.empty() ? utilisation(*trace) : std::vector<ExecutorUse>{};

  if (json) {
    nlohmann::ordered_json j;
    j["model"] = model_path;
    j["topology"] = res.space.topology;
    j["cost_model"] = res.model.source();
    nlohmann::ordered_json configs = nlohmann::ordered_json::array();
    for (const profiler::ConfigResult& r : res.calibration.results) {
      nlohmann::ordered_json c{{"executors", r.config.executors},
                               {"threads", r.config.threads},
                               {"scheduler", r.config.scheduler},
                               {"calibrated", r.calibrated},
                               {"predicted_ms", r.predicted.makespan_us / 1e3},
                               {"model_rank", r.model_rank + 1}};
      if (r.calibrated) {
        c["makespan_ms"] = r.median_ms;
        c["runs"] = r.run_ms.size();
        c["stopped_early"] = r.stopped_early;
        c["vs_best"] = best_ms > 0 ? r.median_ms / best_ms : 0;
        if (res.sequential_ms > 0) c["vs_sequential"] = r.median_ms / res.sequential_ms;
      }
      if (!r.error.empty()) c["error"] = r.error;
      configs.push_back(c);
    }
    j["configs"] = configs;
    j["chosen"] = {{"executors", res.chosen.executors},
                   {"threads", res.chosen.threads},
                   {"scheduler", res.chosen.scheduler},
                   {"makespan_ms", res.chosen_ms}};
    j["critical_path_ms"] = critical_path_us / 1e3;
    if (trace && !trace->ops.empty())
      j["traced_makespan_ms"] = static_cast<double>(trace->run_end_ns - trace->run_start_ns) / 1e6;
    j["per_op_costs"] = res.costs.recorded ? "traced" : "cost model (the engine recorded no trace)";
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (size_t i : by_time)
      ops.push_back({{"node", g->node(static_cast<graph::NodeId>(i)).name},
                     {"op", g->node(static_cast<graph::NodeId>(i)).op},
                     {"us", res.costs.table.node_us[i]}});
    j["top_ops"] = ops;
    nlohmann::ordered_json ex = nlohmann::ordered_json::array();
    for (const ExecutorUse& u : use)
      ex.push_back({{"track", u.track}, {"busy_ms", u.busy_ms}, {"utilisation", u.utilisation}});
    j["executors"] = ex;
    if (res.comparison) {
      const auto& c = *res.comparison;
      j["compare_exhaustive"] = {{"top_k", c.top_k},
                                 {"true_best", c.true_best},
                                 {"true_best_ms", c.true_best_ms},
                                 {"true_best_model_rank", c.true_best_model_rank},
                                 {"top_k_choice", c.top_k_choice},
                                 {"top_k_ms", c.top_k_ms},
                                 {"lost_pct", c.lost_pct},
                                 {"exhaustive_s", c.exhaustive_s},
                                 {"top_k_s", c.top_k_s}};
    }
    j["plan_cache"] = cache_file;
    j["fit_s"] = res.fit_seconds;
    j["profiling_s"] = res.seconds;
    j["session_runs"] = res.session_runs;
    j["budget_lowered"] = res.budget_lowered;
    print_json(j, *json_indent);
    return kExitOk;
  }

  std::printf("model: %s (%zu nodes)\nmachine: %s\ncost model: %s\n\n", model_path.c_str(),
              g->num_nodes(), res.space.topology.c_str(), res.model.source().c_str());
  std::printf("%-18s %10s %12s %8s %8s %6s  %s\n", "config", "predicted", "median", "vs best",
              "vs 1x1", "runs", "note");
  for (const profiler::ConfigResult& r : res.calibration.results) {
    std::string note = !r.error.empty() ? r.error
                       : !r.calibrated
                           ? "not calibrated (model rank " + std::to_string(r.model_rank + 1) + ")"
                       : r.stopped_early ? "stopped early"
                                         : "";
    if (r.calibrated && r.config.name() == res.chosen.name()) note = "chosen";
    std::printf("%-18s %9.3fms %10s %8s %8s %6s  %s\n", r.config.name().c_str(),
                r.predicted.makespan_us / 1e3,
                r.calibrated ? fmt("%.3f ms", r.median_ms).c_str() : "-",
                r.calibrated ? fmt("%.2fx", r.median_ms / best_ms).c_str() : "-",
                r.calibrated && res.sequential_ms > 0
                    ? fmt("%.2fx", r.median_ms / res.sequential_ms).c_str()
                    : "-",
                r.calibrated ? std::to_string(r.run_ms.size()).c_str() : "-", note.c_str());
  }
  std::printf("\nchosen: %s, median %.3f ms", res.chosen.name().c_str(), res.chosen_ms);
  if (res.sequential_ms > 0)
    std::printf(" (%.2fx faster than 1x1 sequential)", res.sequential_ms / res.chosen_ms);
  std::printf("\n");
  const double traced_ms = trace && !trace->ops.empty()
                               ? static_cast<double>(trace->run_end_ns - trace->run_start_ns) / 1e6
                               : 0;
  std::printf("critical path %.3f ms of a %.3f ms makespan (%.0f%%)%s\n", critical_path_us / 1e3,
              res.chosen_ms, res.chosen_ms > 0 ? critical_path_us / 1e3 / res.chosen_ms * 100 : 0,
              res.costs.recorded
                  ? ""
                  : " [per-op costs from the cost model: the engine recorded no trace]");
  if (traced_ms > 0)
    std::printf("  (op costs from traced runs; the traced run of median length took %.3f ms)\n",
                traced_ms);
  std::printf("\ntop op types by total time (per run):\n");
  for (size_t i = 0; i < types.size() && i < 8; ++i)
    std::printf("  %-22s %5d nodes %10.1f us %5.1f%%\n", types[i].first.c_str(),
                types[i].second.second, types[i].second.first,
                total_us > 0 ? types[i].second.first / total_us * 100 : 0);
  std::printf("top ops:\n");
  for (size_t i : by_time)
    std::printf("  %-40s %-14s %10.1f us\n", g->node(static_cast<graph::NodeId>(i)).name.c_str(),
                g->node(static_cast<graph::NodeId>(i)).op.c_str(), res.costs.table.node_us[i]);
  if (!use.empty()) {
    std::printf("utilisation (the traced run of median length):\n");
    for (const ExecutorUse& u : use)
      std::printf("  %-12s busy %8.3f ms  %5.1f%%\n", u.track.c_str(), u.busy_ms,
                  u.utilisation * 100);
  }
  if (res.comparison) {
    const auto& c = *res.comparison;
    std::printf(
        "\nmodel vs exhaustive calibration: the fastest (%s, %.3f ms) was the model's #%d; --top-k "
        "%d would "
        "pick %s (%.3f ms, %+.1f%%) in %.1f s of calibration instead of %.1f s\n",
        c.true_best.c_str(), c.true_best_ms, c.true_best_model_rank, c.top_k,
        c.top_k_choice.c_str(), c.top_k_ms, c.lost_pct, c.top_k_s, c.exhaustive_s);
  }
  std::printf("\nprofiling took %.1f s (model fit %.1f s, calibration %.1f s), %d runs%s\n",
              res.seconds, res.fit_seconds, res.calibration.seconds, res.session_runs,
              res.budget_lowered ? " (run counts lowered to fit --budget-s)" : "");
  if (!cache_file.empty()) std::printf("plan cached in %s\n", cache_file.c_str());
  if (args.has("--plan-out")) std::printf("plan written to %s\n", args.get("--plan-out").c_str());
  if (args.has("--trace")) std::printf("trace written to %s\n", args.get("--trace").c_str());
  return kExitOk;
}

}  // namespace graphi::cli
