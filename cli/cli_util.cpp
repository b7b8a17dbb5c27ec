#include "cli/cli_util.h"

#include <cstdio>

#include "cli/args.h"
#include "engine/model_loader.h"

namespace graphi::cli {

Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path) {
  return load_model(path, graph::ImportOptions{});
}

Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path,
                                                       const graph::ImportOptions& onnx) {
  return engine::load_model(path, onnx);
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
      return Status::invalid_argument(
          "--dim expects NAME=VALUE with VALUE a positive integer, got '" + spec + "'");
    if (o.dims.count(name))
      return Status::invalid_argument("--dim " + name + " is given more than once");
    o.dims[name] = v;
  }
  return o;
}

Result<std::shared_ptr<const graph::Graph>> fuse_graph(std::shared_ptr<const graph::Graph> g) {
  GRAPHI_ASSIGN_OR_RETURN(engine::OptimizedGraph o, engine::optimize_graph(std::move(g)));
  if (!o.summary.empty()) std::fprintf(stderr, "graphi: %s (--no-fuse: off)\n", o.summary.c_str());
  return o.graph;
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

bool is_dim_error(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument &&
         s.message().find("--dim ") != std::string::npos;
}

int runtime_error(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return kExitRuntimeError;
}

}  // namespace graphi::cli
