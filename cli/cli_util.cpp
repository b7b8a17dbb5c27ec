#include "cli/cli_util.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/args.h"
#include "graph/graph_file.h"
#include "graph/passes/pipeline.h"
#include "ops/registry.h"

namespace graphi::cli {

Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path) {
  return load_model(path, graph::ImportOptions{});
}

Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path,
                                                       const graph::ImportOptions& onnx) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::io_error(path + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    return Status::io_error(path + ": is a directory, not a model file");
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, graph::read_graph_file(path, ops::Registry::get(), onnx));
  return std::make_shared<const graph::Graph>(std::move(g));
}

Result<graph::ImportOptions> parse_dim_flags(const std::vector<std::string>& specs) {
  graph::ImportOptions o;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    const std::string name = eq == std::string::npos ? spec : spec.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : spec.substr(eq + 1);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (name.empty() || value.empty() || used != value.size() || v < 1 || v > (1LL << 40))
      return Status::invalid_argument("--dim expects NAME=VALUE with VALUE a positive integer, got '" +
                                      spec + "'");
    if (o.dims.count(name)) return Status::invalid_argument("--dim " + name + " is given more than once");
    o.dims[name] = v;
  }
  return o;
}

Result<std::shared_ptr<const graph::Graph>> fuse_graph(std::shared_ptr<const graph::Graph> g) {
  // GRAPHI_PASSES (comma-separated pass names; unset or empty: all) runs a subset, to compare
  // passes one by one.
  graph::passes::PipelineOptions options;
  if (const char* env = std::getenv("GRAPHI_PASSES"); env && *env) {
    options.rnn_fusion = options.mm_fusion = options.phase_hoisting = options.reshape_cleanup =
        false;
    std::string list = env;
    for (size_t pos = 0; pos <= list.size();) {
      size_t end = list.find(',', pos);
      if (end == std::string::npos) end = list.size();
      const std::string name = list.substr(pos, end - pos);
      if (name == "rnn_fusion")
        options.rnn_fusion = true;
      else if (name == "mm_fusion")
        options.mm_fusion = true;
      else if (name == "phase_hoisting")
        options.phase_hoisting = true;
      else if (name == "reshape_cleanup")
        options.reshape_cleanup = true;
      else if (!name.empty())
        return Status::invalid_argument("GRAPHI_PASSES: unknown pass '" + name +
                                        "' (known: rnn_fusion, mm_fusion, phase_hoisting, reshape_cleanup)");
      pos = end + 1;
    }
  }
  GRAPHI_ASSIGN_OR_RETURN(graph::passes::PipelineResult p,
                          graph::passes::run_passes(*g, ops::Registry::get(), options));
  std::fprintf(stderr, "graphi: %s (--no-fuse: off)\n", p.summary().c_str());
  if (!p.changed()) return g;
  return std::make_shared<const graph::Graph>(std::move(p.graph));
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string human_flops(double f) {
  const char* units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"};
  int u = 0;
  while (f >= 1000 && u < 4) {
    f /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", f, units[u]);
  return buf;
}

int runtime_error(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return kExitRuntimeError;
}

}  // namespace graphi::cli
