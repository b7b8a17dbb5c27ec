// graphi simulate: predicts the makespan of a model under every executors x threads split and
// every policy on a machine we do not have (profiler/simulator.h, docs/SIMULATOR.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "engine/plan.h"
#include "engine/topology.h"
#include "profiler/chrome_trace.h"
#include "profiler/plan_cache.h"
#include "profiler/simulator.h"

namespace graphi::cli {

namespace {

// Configs of `space` with n*k <= cores that no larger split within `cores` dominates.
std::vector<profiler::Config> within_cores(const profiler::ConfigSpace& space, int cores) {
  std::vector<profiler::Config> out;
  const int tile = space.tile_size;
  for (const profiler::Config& c : space.configs) {
    if (c.cores() > cores) continue;
    if ((c.executors + 1) * c.threads <= cores || c.executors * (c.threads + tile) <= cores)
      continue;
    out.push_back(c);
  }
  return out;
}

Result<double> parse_positive(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v > 0 && std::isfinite(v)) return v;
  } catch (...) {
  }
  return Status::invalid_argument(flag + ": '" + text + "' is not a positive number");
}

bool is_chrome_trace(const std::string& path) {
  std::ifstream f(path);
  char head[256] = {};
  f.read(head, sizeof head - 1);
  return std::string(head).find("traceEvents") != std::string::npos;
}

// Per-node durations (us) from Chrome traces of real runs (profiler/chrome_trace.h: "op" events
// with args.node_id and args.team), per team size the runs' non-small ops ran with (a file's
// team: the largest args.team in it): the median over the files of that team size, which shrugs
// off the runs another process disturbed.
Result<std::map<int, std::vector<double>>> median_costs_from_traces(
    const std::vector<std::string>& files, size_t nodes) {
  std::map<int, std::vector<std::vector<double>>> per;  // team -> node -> samples
  std::map<int, std::string> first_file;
  for (const std::string& file : files) {
    std::ifstream f(file);
    if (!f) return Status(StatusCode::kIoError, file + ": cannot read");
    nlohmann::json j;
    std::vector<std::pair<size_t, double>> events;
    int team = 1;
    try {
      j = nlohmann::json::parse(f);
      for (const auto& ev : j.at("traceEvents")) {
        if (ev.value("cat", "") != "op") continue;
        const size_t id = ev.at("args").at("node_id").get<size_t>();
        if (id >= nodes)
          return Status::invalid_argument(file + ": node_id " + std::to_string(id) +
                                          " beyond the model's " + std::to_string(nodes) +
                                          " nodes (a trace of another model?)");
        events.emplace_back(id, ev.at("dur").get<double>());
        team = std::max(team, ev.at("args").value("team", 1));
      }
    } catch (const nlohmann::json::exception& x) {
      return Status::invalid_argument(file +
                                      ": not a Chrome trace of graphi run --trace: " + x.what());
    }
    auto& samples = per[team];
    samples.resize(nodes);
    first_file.emplace(team, file);
    for (const auto& [id, us] : events) samples[id].push_back(us);
  }
  std::map<int, std::vector<double>> out;
  for (auto& [team, samples] : per) {
    std::vector<double>& us = out[team];
    us.assign(nodes, 0.0);
    for (size_t i = 0; i < nodes; ++i) {
      if (samples[i].empty())
        return Status::invalid_argument(first_file[team] + ": no op event for node " +
                                        std::to_string(i));
      std::sort(samples[i].begin(), samples[i].end());
      us[i] = samples[i][samples[i].size() / 2];
    }
  }
  return out;
}

}  // namespace

int simulate_command(int argc, char** argv) {
  Args args(
      "graphi simulate MODEL (--synthetic \"HWLOC DESC\" | --machine PRESET | --this-machine)\n"
      "                       [--executor-cores N] [--costs PLAN.json | --costs TRACE.json...] "
      "[--policy P] [--config NxK]\n"
      "                       [--bandwidth l2=GBS,l3=GBS,dram=GBS] [--dispatch NAME=US,...] "
      "[--core-speed X]\n"
      "                       [--trace FILE] [--json] [--no-fuse] [--dim NAME=VALUE]...",
      "Predicts MODEL's makespan under every executors x threads split the profiler would try on "
      "a\n"
      "virtual machine, for every policy (cpf, fifo, shared-queue; sequential for one executor), "
      "by\n"
      "a discrete-event simulation of graphi's scheduler that uses the runtime's own decision "
      "code\n"
      "(ready order, cpf's tie-break, surplus publication, claims: engine/ready_order.h).\n"
      "\n"
      "Measured (on this machine): per-op times, from a plan's cost table (--costs, written by\n"
      "`graphi profile --plan-out`) or the median over Chrome traces of `graphi run --trace` "
      "(repeat\n"
      "--costs; traces of runs with different team sizes give a table per team size, used as "
      "measured\n"
      "for that k), at the team size they ran with; without --costs estimated from the ops' "
      "cost hints;\n"
      "dispatch overheads (sequential and local per-op cost, hand-off, scheduler step, "
      "shared-queue\n"
      "pop) from scripts/bench_engine.sh on the 2-core VM (benchmarks/README.md; --dispatch "
      "overrides);\n"
      "the client's hand-over per run (6 us) when it sleeps through the run (no spare core and "
      "teams of\n"
      "k > 1 or shared-queue), from 1xk cpf against 1xk sequential on this VM.\n"
      "Extrapolated: op time on a team of k, t(k) = t1 (s + (1-s)/min(k, k_sat)) + sync log2(k),\n"
      "with s = 0.02, k_sat = 8 for compute-bound ops and s = 0.05, k_sat = 16 for memory-bound "
      "ones\n"
      "(seed 002 Fig. 2), floored by the machine's L2/L3/DRAM bandwidth shared by the executors;\n"
      "t1 and every overhead divided by the machine's per-core speed relative to this one; "
      "hand-offs\n"
      "between packages x 2.5. docs/SIMULATOR.md lists the assumptions and how far each was "
      "checked.\n"
      "Presets (--machine): knl7250 (Xeon Phi 7250, 64 cores for executors), xeon-2s-24c, "
      "epyc-2x64.\n"
      "Example:\n"
      "  graphi simulate lstm.graphi --machine knl7250 --no-fuse --json");
  args.positional("MODEL", "the model file (.graphi or .onnx)");
  args.option("--synthetic", "DESC",
              "hwloc synthetic topology, e.g. \"package:1 l2:34 core:2 pu:4\"");
  args.option("--machine", "PRESET", std::string("a preset machine: ") + profiler::kMachinePresets);
  args.flag("--this-machine", "this machine's topology (validation: compare with graphi run)");
  args.option("--executor-cores", "N",
              "only splits with executors x threads <= N (the preset's count by default)");
  args.option(
      "--costs", "FILE",
      "per-op times measured here: a plan (graphi profile --plan-out), or Chrome traces of\n"
      "graphi run --trace (repeat --costs: the median per op over them)",
      true);
  args.option("--policy", "P", std::string("only this policy: ") + engine::kPolicyNames);
  args.option("--config", "NxK", "only this split (e.g. 8x8)");
  args.option("--bandwidth", "SPEC",
              "l2=GB/s per tile, l3=, dram= for the machine; l2_mb=, l3_mb= sizes");
  args.option(
      "--dispatch", "SPEC",
      "overheads in us: seq, local, handoff, step, sq, sq_lock, start, sync, client, cross_package");
  args.option("--core-speed", "X",
              "per-core speed relative to this machine (default: the preset's, else 1)");
  args.option("--trace", "FILE",
              "write the best prediction's (or --config/--policy's) simulated timeline");
  args.flag("--json", "print one JSON object on stdout");
  args.flag("--no-fuse", "simulate the graph as stored (no graph passes)");
  args.option("--dim", "NAME=VALUE", "value of a symbolic dim of an .onnx model's inputs", true);
  if (auto code = args.parse(argc, argv)) return *code;
  const std::string model_path = args.positionals()[0];
  const int sources = (args.has("--synthetic") ? 1 : 0) + (args.has("--machine") ? 1 : 0) +
                      (args.has("--this-machine") ? 1 : 0);
  if (sources > 1 && !(args.has("--machine") && args.has("--synthetic") && sources == 2))
    return args.usage_error(
        "give one of --synthetic, --machine, --this-machine (--synthetic may refine --machine)");
  if (sources == 0)
    return args.usage_error(
        "give the machine: --synthetic \"DESC\", --machine PRESET or --this-machine");

  // The machine.
  profiler::MachineSpec spec;
  if (args.has("--machine")) {
    auto preset = profiler::machine_preset(args.get("--machine"));
    if (!preset.is_ok()) return args.usage_error(preset.status().message());
    spec = *preset;
  } else if (args.has("--this-machine")) {
    spec.name = "this machine";
  }
  if (args.has("--bandwidth"))
    if (Status s = profiler::parse_bandwidths(args.get("--bandwidth"), spec); !s.is_ok())
      return args.usage_error(s.message());
  if (args.has("--core-speed")) {
    auto v = parse_positive("--core-speed", args.get("--core-speed"));
    if (!v.is_ok()) return args.usage_error(v.status().message());
    spec.core_speed = *v;
  }
  profiler::DispatchCosts here;
  if (args.has("--dispatch"))
    if (Status s = profiler::parse_dispatch_costs(args.get("--dispatch"), here); !s.is_ok())
      return args.usage_error(s.message());
  const std::string desc = args.has("--synthetic") ? args.get("--synthetic") : spec.synthetic;
  auto topo = args.has("--this-machine") ? engine::Topology::load_this_machine()
                                         : engine::Topology::from_synthetic(desc);
  if (!topo.is_ok()) return runtime_error(topo.status());
  auto cores_opt = args.get_int("--executor-cores", spec.executor_cores, 0, 1 << 20);
  if (!cores_opt) return kExitUsage;
  const int executor_cores = static_cast<int>(*cores_opt);
  if (executor_cores > 0 && !args.has("--this-machine")) {
    // Keep the executors' cores plus two (the scheduler and the bootstrap executor).
    std::vector<int> pus;
    const int keep = std::min<int>(executor_cores + 2, static_cast<int>(topo->cores().size()));
    for (int c = 0; c < keep; ++c)
      for (int pu : topo->core(c).pus) pus.push_back(pu);
    auto narrowed = engine::Topology::from_synthetic(desc, engine::format_cpu_list(pus));
    if (!narrowed.is_ok()) return runtime_error(narrowed.status());
    topo = std::move(narrowed);
  }
  const profiler::ConfigSpace space = profiler::enumerate_configs(*topo);
  std::vector<profiler::Config> configs =
      executor_cores > 0 ? within_cores(space, executor_cores) : space.configs;
  if (args.has("--config")) {
    const std::string want = args.get("--config");
    int n = 0, k = 0;
    char x = 0;
    if (std::sscanf(want.c_str(), "%d%c%d", &n, &x, &k) != 3 || x != 'x' || n < 1 || k < 1)
      return args.usage_error("--config: '" + want + "' is not NxK");
    engine::PlacementRequest req;
    req.executors = n;
    req.threads = k;
    auto placed = engine::place_executors(*topo, req);
    if (!placed.is_ok())
      return args.usage_error("--config " + want + ": " + placed.status().message());
    profiler::Config c;
    c.executors = n;
    c.threads = k;
    c.scheduler = profiler::default_scheduler(n);
    c.scheduler_core = placed->scheduler.has_value();
    c.bootstrap_core = placed->bootstrap.has_value();
    configs = {c};
  }
  if (configs.empty())
    return runtime_error(
        Status::invalid_argument("no executors x threads split fits " + topo->summary()));
  std::vector<engine::Policy> policies = {engine::Policy::kCriticalPath, engine::Policy::kFifo,
                                          engine::Policy::kSharedQueue,
                                          engine::Policy::kSequential};
  if (args.has("--policy")) {
    auto p = engine::parse_policy(args.get("--policy"));
    if (!p)
      return args.usage_error("--policy: unknown policy '" + args.get("--policy") + "' (use " +
                              engine::kPolicyNames + ")");
    policies = {*p};
  }

  // The model, as the runtime would run it.
  auto dims = parse_dim_flags(args.get_all("--dim"));
  if (!dims.is_ok()) return args.usage_error(dims.status().message());
  auto loaded = load_model(model_path, *dims);
  if (!loaded.is_ok()) return runtime_error(loaded.status());
  std::shared_ptr<const graph::Graph> g = *loaded;
  if (!args.has("--no-fuse")) {
    auto fused = fuse_graph(g);
    if (!fused.is_ok()) return runtime_error(fused.status());
    g = *fused;
  }
  auto plan = engine::compile(g, 1);
  if (!plan.is_ok()) return runtime_error(plan.status().with_context(model_path));
  const profiler::ModelGraph mg = profiler::model_graph(*plan);

  // Op costs and levels.
  std::vector<double> levels(plan->levels().begin(), plan->levels().end());
  profiler::OpCostCurves curves;
  const std::vector<std::string> cost_files = args.get_all("--costs");
  const bool from_traces = !cost_files.empty() && is_chrome_trace(cost_files.front());
  if (from_traces) {
    auto measured = median_costs_from_traces(cost_files, mg.num_nodes());
    if (!measured.is_ok()) return runtime_error(measured.status());
    // The smallest team's times give t1 (and cpf's levels); other teams' are used as measured.
    const auto& [k0, us0] = *measured->begin();
    curves = profiler::OpCostCurves::from_measured(mg, us0, k0, spec, here);
    for (const auto& [k, us] : *measured)
      if (k != k0) curves.add_measured(k, us);
    levels = engine::compute_levels(*plan, us0);
  } else if (!cost_files.empty()) {
    if (cost_files.size() > 1)
      return args.usage_error(
          "--costs: give one plan file, or one or more Chrome traces of graphi run --trace");
    const std::string file = cost_files.front();
    auto saved = profiler::read_plan_file(file);
    if (!saved.is_ok()) return runtime_error(saved.status());
    if (saved->graph_hash != profiler::graph_content_hash(*g))
      return runtime_error(Status::invalid_argument(
          file + ": graph_hash " + saved->graph_hash + " is another graph's (this one: " +
          profiler::graph_content_hash(*g) + "; profile the same file with the same --no-fuse)"));
    if (saved->node_us.size() != mg.num_nodes())
      return runtime_error(
          Status::invalid_argument(file + ": node_us has " + std::to_string(saved->node_us.size()) +
                                   " entries for " + std::to_string(mg.num_nodes()) + " nodes"));
    curves = profiler::OpCostCurves::from_measured(mg, saved->node_us, saved->config.threads, spec,
                                                   here);
    if (saved->levels.size() == mg.num_nodes()) levels = saved->levels;
  } else {
    curves = profiler::OpCostCurves::from_hints(mg, spec, here);
  }
  curves.tile_size = std::max(1, space.tile_size);
  curves.machine_cores = space.usable_cores;
  const profiler::DispatchCosts d = here.scaled(spec.core_speed);

  auto predicted = profiler::simulate_configs(mg, curves, levels, *topo, configs, policies, d);
  if (!predicted.is_ok()) return runtime_error(predicted.status());
  std::vector<profiler::SimPrediction>& preds = *predicted;
  const profiler::GraphShape shape = profiler::graph_shape(mg);

  // Reference: one executor with every core, sequential (seed 002 Fig. 6's baseline).
  const profiler::SimPrediction* seq = nullptr;
  const profiler::SimPrediction* best = nullptr;
  for (const auto& p : preds) {
    if (p.policy == engine::Policy::kSequential && (!seq || p.config.threads > seq->config.threads))
      seq = &p;
    if (!best || p.result.makespan_us < best->result.makespan_us) best = &p;
  }

  if (args.has("--trace")) {
    if (Status s = profiler::write_chrome_trace(args.get("--trace"), *plan, best->result.trace);
        !s.is_ok())
      return runtime_error(s);
  }

  if (args.has("--json")) {
    nlohmann::ordered_json j;
    j["model"] = model_path;
    j["machine"] = spec.name;
    j["topology"] = space.topology;
    j["usable_cores"] = space.usable_cores;
    j["executor_cores"] = executor_cores;
    j["costs"] = curves.source();
    j["core_speed"] = spec.core_speed;
    j["bandwidth_gbs"] = {
        {"l2_per_tile", spec.l2_gbs}, {"l3", spec.l3_gbs}, {"dram", spec.dram_gbs}};
    j["dispatch_us"] = {
        {"seq", d.seq_op_us},      {"local", d.local_op_us}, {"handoff", d.handoff_us},
        {"step", d.step_us},       {"sq", d.sq_op_us},       {"sq_lock", d.sq_lock_us},
        {"start", d.run_start_us}, {"sync", d.team_sync_us}, {"client", d.client_wake_us},
        {"cross_package", d.cross_package}};
    j["graph_width"] = shape.max_width;
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& p : preds) {
      nlohmann::ordered_json o{{"executors", p.config.executors},
                               {"threads", p.config.threads},
                               {"policy", engine::policy_name(p.policy)},
                               {"makespan_ms", p.result.makespan_us / 1e3},
                               {"critical_path_ms", p.result.critical_path_us / 1e3},
                               {"work_ms", p.result.work_us / 1e3},
                               {"handoffs", p.result.handoffs},
                               {"scheduler_core", p.config.scheduler_core}};
      if (seq) o["vs_sequential"] = seq->result.makespan_us / p.result.makespan_us;
      arr.push_back(o);
    }
    j["predictions"] = arr;
    j["best"] = {{"executors", best->config.executors},
                 {"threads", best->config.threads},
                 {"policy", engine::policy_name(best->policy)},
                 {"makespan_ms", best->result.makespan_us / 1e3}};
    if (seq)
      j["sequential"] = {{"executors", 1},
                         {"threads", seq->config.threads},
                         {"makespan_ms", seq->result.makespan_us / 1e3}};
    if (args.has("--trace")) j["trace_file"] = args.get("--trace");
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }

  std::printf(
      "model: %s (%zu nodes, graph width %zu)\nmachine: %s, %s\nusable cores %d%s; per-core speed "
      "%.2f x this machine\n",
      model_path.c_str(), mg.num_nodes(), shape.max_width, spec.name.c_str(),
      space.topology.c_str(), space.usable_cores,
      executor_cores > 0 ? (", splits up to " + std::to_string(executor_cores) + " cores").c_str()
                         : "",
      spec.core_speed);
  std::printf("op costs: %s; beyond: extrapolated (t(k) curves, bandwidth floors)\n\n",
              curves.source().c_str());
  std::printf("%-8s %-13s %12s %8s %12s %9s\n", "config", "policy", "makespan", "vs seq",
              "crit. path", "handoffs");
  for (const auto& p : preds) {
    char vs[32] = "-";
    if (seq) std::snprintf(vs, sizeof vs, "%.2fx", seq->result.makespan_us / p.result.makespan_us);
    std::printf(
        "%-8s %-13s %9.3f ms %8s %9.3f ms %9d\n",
        (std::to_string(p.config.executors) + "x" + std::to_string(p.config.threads)).c_str(),
        engine::policy_name(p.policy), p.result.makespan_us / 1e3, vs,
        p.result.critical_path_us / 1e3, p.result.handoffs);
  }
  std::printf("\nbest: %dx%d %s, %.3f ms", best->config.executors, best->config.threads,
              engine::policy_name(best->policy), best->result.makespan_us / 1e3);
  if (seq)
    std::printf(" (%.2fx the 1x%d sequential's %.3f ms)",
                seq->result.makespan_us / best->result.makespan_us, seq->config.threads,
                seq->result.makespan_us / 1e3);
  std::printf("\n");
  if (args.has("--trace"))
    std::printf("simulated trace written to %s\n", args.get("--trace").c_str());
  return kExitOk;
}

}  // namespace graphi::cli
