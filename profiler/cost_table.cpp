#include "profiler/cost_table.h"

#include <unordered_map>

namespace graphi::profiler {

CostTable cost_table_from_traces(const engine::Plan& plan,
                                 std::span<const engine::RunTrace> traces) {
  const size_t n = plan.num_nodes();
  CostTable t;
  t.node_us.assign(n, 0.0);
  t.runs = static_cast<int>(traces.size());
  std::vector<int> seen(n, 0);
  for (const engine::RunTrace& tr : traces)
    for (const engine::OpSpan& s : tr.ops) {
      if (s.node >= n || s.end_ns < s.start_ns) continue;  // not a span of this plan
      t.node_us[s.node] += static_cast<double>(s.end_ns - s.start_ns) * 1e-3;
      ++seen[s.node];
    }
  for (size_t i = 0; i < n; ++i)
    if (seen[i]) t.node_us[i] /= seen[i];
  return t;
}

std::string op_signature(const engine::Plan& plan, engine::NodeId n) {
  const graph::Graph& g = plan.graph();
  std::string sig = g.node(n).op;
  sig += '|';
  sig += plan.kernel_name(n);
  sig += '|' + std::to_string(plan.cost(n).flops) + '|' + std::to_string(plan.cost(n).bytes);
  auto add = [&](std::span<const graph::ValueId> ids) {
    sig += '|';
    for (graph::ValueId v : ids) {
      if (v == graph::kNoId) {
        sig += "-;";
        continue;
      }
      const TensorDesc& d = g.value(v).desc;
      sig += std::to_string(static_cast<int>(d.dtype));
      for (int64_t x : d.shape) sig += ',' + std::to_string(x);
      sig += ';';
    }
  };
  add(plan.inputs(n));
  add(plan.outputs(n));
  return sig;
}

void pool_identical_ops(const engine::Plan& plan, CostTable& table) {
  struct Sum {
    double us = 0;
    int count = 0;
  };
  std::unordered_map<std::string, Sum> sums;
  std::vector<std::string> sig(table.node_us.size());
  for (engine::NodeId n = 0; n < table.node_us.size(); ++n) {
    if (table.node_us[n] <= 0) continue;
    sig[n] = op_signature(plan, n);
    Sum& s = sums[sig[n]];
    s.us += table.node_us[n];
    ++s.count;
  }
  for (engine::NodeId n = 0; n < table.node_us.size(); ++n)
    if (table.node_us[n] > 0) {
      const Sum& s = sums[sig[n]];
      table.node_us[n] = s.us / s.count;
    }
}

}  // namespace graphi::profiler
