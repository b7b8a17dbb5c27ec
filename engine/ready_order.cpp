// ready_order, unlocked_work: see ready_order.h.
#include "engine/ready_order.h"

namespace graphi::engine {

// Work reachable along several paths is shared out instead of counted once per path; O(edges).
// Costs come from the levels, so measured levels count too. Among equal levels (an unrolled
// RNN's cells (l+1, t) and (l, t+1) both lie on critical paths) the op with more work behind it,
// the time chain, runs next in the executor that made it ready, and its sibling is the surplus
// an executor publishes: each executor tends to follow one layer's chain, so fewer dependencies
// cross cores. LSTM-shaped DAG, 1 us ops, 2x1: 570-578 -> 555-560 ns/op (ties to the lower id
// ran the layer-up op and handed the chain around).
std::vector<double> unlocked_work(const DagView& dag, std::span<const double> level) {
  const size_t n = dag.num_nodes();
  std::vector<double> w(n, 0.0);
  auto succ = [&](size_t v) {
    return dag.succ.subspan(dag.succ_offsets[v], dag.succ_offsets[v + 1] - dag.succ_offsets[v]);
  };
  // Reverse topological order: Kahn's algorithm from the sources, walked backwards.
  std::vector<uint32_t> pend(dag.initial_pending.begin(), dag.initial_pending.end());
  std::vector<uint32_t> order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (pend[i] == 0) order.push_back(static_cast<uint32_t>(i));
  for (size_t h = 0; h < order.size(); ++h)
    for (uint32_t s : succ(order[h]))
      if (--pend[s] == 0) order.push_back(s);
  for (size_t h = order.size(); h-- > 0;) {
    const uint32_t v = order[h];
    double max_succ = 0, sum = 0;
    for (uint32_t s : succ(v)) {
      max_succ = std::max(max_succ, level[s]);
      sum += w[s] / std::max<uint32_t>(1, dag.initial_pending[s]);
    }
    w[v] = std::max(0.0, level[v] - max_succ) + sum;
  }
  return w;
}

ReadyOrder ready_order(Policy policy, const DagView& dag, std::span<const double> levels) {
  const size_t n = dag.num_nodes();
  ReadyOrder o;
  o.keys.resize(n);
  const bool cpf = policy == Policy::kCriticalPath;
  for (size_t i = 0; i < n; ++i) o.keys[i] = cpf ? levels[i] : -static_cast<double>(i);
  if (cpf) o.ties = unlocked_work(dag, levels);
  return o;
}

}  // namespace graphi::engine
