#include "profiler/cost_table.h"

namespace graphi::profiler {

CostTable cost_table_from_traces(const engine::Plan& plan, std::span<const engine::RunTrace> traces) {
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

}  // namespace graphi::profiler
