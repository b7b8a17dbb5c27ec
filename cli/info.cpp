// graphi info: what a model costs and how much parallelism it offers (engine/graph_stats.h),
// plus the kernel the registry selects for each op type.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "cli/json_output.h"
#include "cli/load_progress.h"
#include "engine/graph_stats.h"
#include "engine/plan.h"
#include "engine/rnn_weights_option.h"
#include "ops/rnn/rnn_sequence.h"

namespace graphi::cli {

int info_command(int argc, char** argv) {
  Args args(
      "graphi info MODEL [--json [--json-indent N]] [--threads K] [--no-fuse] [--dim "
      "NAME=VALUE]...",
      "Prints a model's op counts, parameters and bytes, FLOPs per run, the number of ops at\n"
      "each depth level (the inter-op parallelism the graph offers), the critical path in\n"
      "ops and FLOPs, peak memory with and without buffer reuse, and the kernel selected for\n"
      "each op type, after the graph passes (RNN cell fusion, MM fusion, hoisting; --no-fuse: as "
      "stored).\n"
      "Example:\n"
      "  graphi info lstm.graphi --json");
  args.positional("MODEL", "the model file (.graphi or .onnx)");
  args.flag("--no-fuse", "describe the graph as stored (no graph passes)");
  args.option("--dim", "NAME=VALUE", "value of a symbolic dim of an .onnx model's inputs", true);
  args.flag("--json", "print one JSON object on stdout instead of text");
  args.option("--json-indent", "N", "indent --json output by N spaces (default: one line)");
  args.flag("--progress",
            "show the progress of a load longer than 1 s on stderr even when it is not a "
            "terminal (on a terminal it is shown anyway), with a time per stage");
  args.option("--threads", "K", "team size the kernels are selected for, 1..1024 (default 1)");
  args.option("--rnn-weights", "fp32|bf16|int8",
              "storage precision of the fused LSTM/GRU/RNN weights (as graphi run)");
  if (auto code = args.parse(argc, argv)) return *code;
  auto threads = args.get_int("--threads", 1, 1, 1024);
  auto json_indent = args.get_int("--json-indent", 0, 0, 16);
  if (!threads || !json_indent) return kExitUsage;
  const std::string path = args.positionals()[0];

  auto dims = parse_dim_flags(args.get_all("--dim"));
  if (!dims.is_ok()) return args.usage_error(dims.status().message());
  LoadProgressPrinter load_progress(path, args.has("--progress"));
  dims->progress = load_progress.callback();
  auto g = load_model(path, *dims);
  if (!g.is_ok() && is_dim_error(g.status())) return args.usage_error(g.status().message());
  if (!g.is_ok()) return runtime_error(g.status());
  const int64_t parameters_as_stored = engine::count_parameters(**g);
  if (!args.has("--no-fuse")) {
    load_progress.stage("passes");
    g = fuse_graph(*g);
    if (!g.is_ok()) return runtime_error(g.status());
  }
  if (args.has("--rnn-weights")) {
    g = engine::apply_rnn_weights(*g, args.get("--rnn-weights"));
    if (!g.is_ok()) return args.usage_error(g.status().message());
  }
  load_progress.stage("compile");

  // Kernel selection needs a compiled Plan; if compiling fails (a kernel refuses every
  // candidate), the statistics are still useful, so report the reason and go on.
  auto plan = engine::compile(*g, static_cast<int>(*threads));
  std::string plan_error;
  if (!plan.is_ok()) plan_error = plan.status().message();
  load_progress.stage("statistics");
  auto stats = engine::compute_graph_stats(**g, plan.is_ok() ? &*plan : nullptr);
  load_progress.done();
  if (!stats.is_ok()) return runtime_error(stats.status());
  stats->parameters_as_stored = parameters_as_stored;

  std::map<std::string, std::map<std::string, size_t>> kernels_by_op;
  // Fused RNN layers, each with its kernel's schedule (ops/rnn/rnn_schedule.h), in node order.
  std::vector<std::pair<std::string, std::string>> rnn_layers;
  if (plan.is_ok())
    for (graph::NodeId n = 0; n < plan->num_nodes(); ++n) {
      ++kernels_by_op[(*g)->node(n).op][plan->kernel_name(n)];
      std::string d = ops::rnn_kernel_description(plan->kernel(n));
      if (!d.empty()) rnn_layers.emplace_back((*g)->node(n).where(), d);
    }

  if (args.has("--json")) {
    nlohmann::json j = engine::to_json(*stats);
    j["model"] = path;
    if (plan.is_ok()) {
      j["kernels_by_op"] = kernels_by_op;
      j["rnn_layers"] = nlohmann::json::array();
      for (const auto& [node, d] : rnn_layers)
        j["rnn_layers"].push_back({{"node", node}, {"kernel", d}});
      j["kernel_threads"] = *threads;
    } else {
      j["kernel_selection_error"] = plan_error;
    }
    print_json(j, *json_indent);
    return kExitOk;
  }
  std::printf("%s", engine::to_text(*stats).c_str());
  if (plan.is_ok()) {
    std::printf("kernels per op type (team of %ld):\n", *threads);
    for (const auto& [op, ks] : kernels_by_op) {
      std::string line;
      for (const auto& [k, n] : ks)
        line += (line.empty() ? "" : ", ") + k + " x" + std::to_string(n);
      std::printf("  %-20s %s\n", op.c_str(), line.c_str());
    }
    for (const auto& [node, d] : rnn_layers) std::printf("  %s: %s\n", node.c_str(), d.c_str());
  } else {
    std::printf("kernels: not available (%s)\n", plan_error.c_str());
  }
  return kExitOk;
}

}  // namespace graphi::cli
