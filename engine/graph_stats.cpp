#include "engine/graph_stats.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/memory_plan.h"
#include "engine/plan.h"
#include "ops/registry.h"

namespace graphi::engine {

using graph::kNoId;

int64_t count_parameters(const graph::Graph& g) {
  int64_t n = 0;
  for (const graph::Value& v : g.values())
    if (v.kind == graph::ValueKind::kConstant && v.desc.dtype == DType::kF32) n += v.desc.numel();
  return n;
}

Result<GraphStats> compute_graph_stats(const graph::Graph& g, const Plan* plan) {
  const ops::Registry& registry = ops::Registry::get();
  GraphStats s;
  s.source = g.source();
  s.num_nodes = g.num_nodes();
  s.num_values = g.num_values();
  s.num_inputs = g.inputs().size();
  s.num_outputs = g.outputs().size();
  for (const graph::Value& v : g.values()) {
    if (v.kind == graph::ValueKind::kConstant) {
      ++s.num_constants;
      s.constant_bytes += v.desc.bytes();
      if (v.desc.dtype == DType::kF32) {
        s.parameters += v.desc.numel();
        s.parameter_bytes += v.desc.bytes();
      }
    }
    if (v.kind == graph::ValueKind::kInput) s.input_bytes += v.desc.bytes();
    if (v.is_output) s.output_bytes += v.desc.bytes();
  }

  // Depth and the FLOP-weighted longest path, in node order (a topological order).
  std::vector<size_t> depth(g.num_nodes(), 0);
  std::vector<double> path_flops(g.num_nodes(), 0);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const graph::Node& node = g.node(n);
    if (!registry.find(node.op))
      return Status::unsupported(g.source() + ": " + node.where() + ": unknown op type '" +
                                 node.op + "'");
    std::vector<const TensorDesc*> ins, outs;
    size_t d = 0;
    double pf = 0;
    bool has_pred = false;
    for (ValueId v : node.inputs) {
      ins.push_back(v == kNoId ? nullptr : &g.value(v).desc);
      NodeId p = v == kNoId ? kNoId : g.value(v).producer;
      if (p == kNoId) continue;
      has_pred = true;
      d = std::max(d, depth[p]);
      pf = std::max(pf, path_flops[p]);
    }
    for (ValueId v : node.outputs) outs.push_back(&g.value(v).desc);
    ops::CostHint c = registry.cost(node, ins, outs);
    s.flops += c.flops;
    s.bytes_accessed += c.bytes;
    ++s.op_counts[node.op];
    depth[n] = has_pred ? d + 1 : 0;
    path_flops[n] = pf + c.flops;
    if (s.ops_per_depth.size() <= depth[n]) s.ops_per_depth.resize(depth[n] + 1, 0);
    ++s.ops_per_depth[depth[n]];
    s.critical_path_flops = std::max(s.critical_path_flops, path_flops[n]);
  }
  s.critical_path_ops = s.ops_per_depth.size();
  for (size_t w : s.ops_per_depth) s.max_width = std::max(s.max_width, w);
  s.average_parallelism =
      s.critical_path_ops ? double(s.num_nodes) / double(s.critical_path_ops) : 0;

  if (plan) {
    for (NodeId n = 0; n < plan->num_nodes(); ++n) ++s.kernel_counts[plan->kernel_name(n)];
  }
  auto take = [&](const MemoryPlan& m) {
    s.peak_bytes = m.peak_bytes;
    s.total_bytes = m.total_bytes;
    s.aliased_values = s.concat_inputs_in_place = 0;
    s.in_place_outputs = m.in_place_outputs;
    for (ValueId v = 0; v < m.alias_of.size(); ++v) {
      if (m.alias_of[v] == kNoId) continue;
      const NodeId p = g.value(v).producer;
      const std::string& op = p == kNoId ? std::string() : g.node(p).op;
      ++(op == "Reshape" || op == "Identity" ? s.aliased_values : s.concat_inputs_in_place);
    }
  };
  if (plan && plan->memory().mode == ReuseMode::kDependencySafe)
    take(plan->memory());
  else
    take(plan_memory(g, ReuseMode::kDependencySafe));
  s.peak_bytes_sequential = plan_memory(g, ReuseMode::kSequential).peak_bytes;
  return s;
}

nlohmann::json to_json(const GraphStats& s) {
  nlohmann::json j;
  j["source"] = s.source;
  j["nodes"] = s.num_nodes;
  j["values"] = s.num_values;
  j["inputs"] = s.num_inputs;
  j["outputs"] = s.num_outputs;
  j["constants"] = s.num_constants;
  j["op_counts"] = s.op_counts;
  if (!s.kernel_counts.empty()) j["kernel_counts"] = s.kernel_counts;
  // "parameters" is what the model file holds (as `graphi model` counts it); the graph the
  // engine runs may hold more (see GraphStats::parameters_as_stored).
  const bool passes_added = s.parameters_as_stored >= 0 && s.parameters_as_stored != s.parameters;
  j["parameters"] = passes_added ? s.parameters_as_stored : s.parameters;
  if (passes_added) j["parameters_after_passes"] = s.parameters;
  j["parameter_bytes"] = s.parameter_bytes;
  j["constant_bytes"] = s.constant_bytes;
  j["input_bytes"] = s.input_bytes;
  j["output_bytes"] = s.output_bytes;
  j["flops"] = s.flops;
  j["bytes_accessed"] = s.bytes_accessed;
  j["ops_per_depth"] = s.ops_per_depth;
  j["critical_path"] = {{"ops", s.critical_path_ops}, {"flops", s.critical_path_flops}};
  j["max_width"] = s.max_width;
  j["average_parallelism"] = s.average_parallelism;
  j["memory"] = {{"peak_bytes", s.peak_bytes},
                 {"peak_bytes_sequential", s.peak_bytes_sequential},
                 {"total_bytes", s.total_bytes},
                 {"aliased_values", s.aliased_values},
                 {"concat_inputs_in_place", s.concat_inputs_in_place},
                 {"in_place_outputs", s.in_place_outputs}};
  return j;
}

namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

std::string human_count(double x) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (x >= 1000 && u < 5) x /= 1000, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.2f %s", x, units[u]);
  return buf;
}

}  // namespace

std::string to_text(const GraphStats& s) {
  std::string out;
  auto line = [&](const std::string& k, const std::string& v) {
    out += k + std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') + v + "\n";
  };
  line("model", s.source);
  line("nodes", std::to_string(s.num_nodes));
  line("inputs / outputs", std::to_string(s.num_inputs) + " / " + std::to_string(s.num_outputs));
  std::string ops;
  for (const auto& [op, n] : s.op_counts)
    ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(n);
  line("ops", ops.empty() ? "none" : ops);
  if (!s.kernel_counts.empty()) {
    std::string ks;
    for (const auto& [k, n] : s.kernel_counts)
      ks += (ks.empty() ? "" : ", ") + k + " " + std::to_string(n);
    line("kernels", ks);
  }
  if (s.parameters_as_stored >= 0 && s.parameters_as_stored != s.parameters)
    line("parameters", std::to_string(s.parameters_as_stored) + " in the file; " +
                           std::to_string(s.parameters) + " (" +
                           human_bytes(double(s.parameter_bytes)) +
                           ") after the graph passes (fused RNN ops add zero recurrent biases)");
  else
    line("parameters",
         std::to_string(s.parameters) + " (" + human_bytes(double(s.parameter_bytes)) + ")");
  line("FLOPs per run",
       human_count(s.flops) + " (" + std::to_string(static_cast<int64_t>(s.flops)) + ")");
  line("bytes accessed", human_bytes(s.bytes_accessed));
  std::string depth;
  for (size_t i = 0; i < s.ops_per_depth.size(); ++i) {
    if (i == 32 && s.ops_per_depth.size() > 40) {
      depth += " ... (" + std::to_string(s.ops_per_depth.size() - 32) + " more levels)";
      break;
    }
    depth += (i ? " " : "") + std::to_string(s.ops_per_depth[i]);
  }
  line("ops per depth level", depth.empty() ? "none" : depth);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", s.average_parallelism);
  line("max width", std::to_string(s.max_width) + " (average parallelism " + buf + ")");
  line("critical path", std::to_string(s.critical_path_ops) + " ops, " +
                            human_count(s.critical_path_flops) + " FLOPs");
  line("memory (reuse)",
       human_bytes(double(s.peak_bytes)) + " peak, dependency-safe (" +
           human_bytes(double(s.peak_bytes_sequential)) +
           " on the sequential scheduler, which runs the nodes in order)" +
           (s.aliased_values ? "; " + std::to_string(s.aliased_values) +
                                   " Reshape/Identity outputs share their "
                                   "input's bytes"
                             : std::string()) +
           (s.concat_inputs_in_place ? "; " + std::to_string(s.concat_inputs_in_place) +
                                           " Concat inputs written in place in its output"
                                     : std::string()) +
           (s.in_place_outputs ? "; " + std::to_string(s.in_place_outputs) +
                                     " element-wise outputs over an input that dies there"
                               : std::string()));
  line("memory (no reuse)", human_bytes(double(s.total_bytes)));
  line("inputs / outputs bytes",
       human_bytes(double(s.input_bytes)) + " / " + human_bytes(double(s.output_bytes)));
  return out;
}

}  // namespace graphi::engine
