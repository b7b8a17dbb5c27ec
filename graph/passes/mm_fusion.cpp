#include "graph/passes/mm_fusion.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "graph/passes/gemm_operand.h"
#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

Result<MmFusionResult> fuse_shared_matmuls(const Graph& g, const ShapeInferencer& shapes) {
  // Group the candidates by their activation, in node order.
  std::map<ValueId, std::vector<ConstGemm>> by_a;
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (auto m = const_gemm(g, n)) by_a[m->a].push_back(*m);
  std::vector<std::vector<ConstGemm>> groups;
  for (auto& [a, ms] : by_a) {
    if (g.value(a).desc.rank() != 2) {
      // A batched MatMul fuses only without biases (the fused node stays a MatMul).
      ms.erase(
          std::remove_if(ms.begin(), ms.end(), [](const ConstGemm& m) { return m.bias != kNoId; }),
          ms.end());
    }
    if (ms.size() >= 2) groups.push_back(ms);
  }
  MmFusionResult result;
  if (groups.empty()) {
    result.graph = g;
    return result;
  }
  Rewrite rw(g);
  // Concatenated weights by the list of (tensor, transposed, bias tensor) they are made of, so
  // the time steps of an unrolled recurrence share one constant.
  using Key = std::vector<std::tuple<const Tensor*, bool, const Tensor*>>;
  std::map<Key, std::pair<std::string, std::string>> made;
  for (const std::vector<ConstGemm>& ms : groups) {
    const ValueId a = ms[0].a;
    const int64_t K = ms[0].k;
    int64_t N = 0;
    bool any_bias = false;
    Key key;
    for (const ConstGemm& m : ms) {
      N += m.n;
      any_bias = any_bias || m.bias != kNoId;
      key.emplace_back(g.value(m.w).data.get(), m.trans,
                       m.bias == kNoId ? nullptr : g.value(m.bias).data.get());
    }
    auto it = made.find(key);
    if (it == made.end()) {
      Tensor w(TensorDesc{DType::kF32, {K, N}});
      Tensor b(TensorDesc{DType::kF32, {N}});
      int64_t col = 0;
      for (const ConstGemm& m : ms) {
        copy_b(g, m, w.data_as<float>(), N, col);
        if (m.bias != kNoId)
          std::copy_n(g.value(m.bias).data->data_as<float>(), m.n, b.data_as<float>() + col);
        col += m.n;
      }
      const std::string wn = rw.fresh("mm_fused/W"), bn = any_bias ? rw.fresh("mm_fused/b") : "";
      rw.add_constant(wn, std::move(w));
      if (any_bias) rw.add_constant(bn, std::move(b));
      it = made.emplace(key, std::make_pair(wn, bn)).first;
    }
    const std::string base = rw.fresh(g.node(ms[0].node).name + "/mm_fused");
    const std::string y = rw.fresh(base + "/Y");
    if (any_bias)
      rw.add_node("Gemm", base, {g.value(a).name, it->second.first, it->second.second}, {y});
    else
      rw.add_node("MatMul", base, {g.value(a).name, it->second.first}, {y});
    std::vector<std::string> outs;
    std::vector<int64_t> sizes;
    for (const ConstGemm& m : ms) {
      rw.remove(m.node);
      outs.push_back(g.value(g.node(m.node).outputs[0]).name);
      sizes.push_back(m.n);
    }
    rw.add_split(base, y, outs, -1, sizes);
    ++result.groups;
    result.members += static_cast<int>(ms.size());
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  return result;
}

}  // namespace graphi::graph::passes
