#include "graph/passes/phase_hoisting.h"

#include <algorithm>
#include <unordered_set>

#include "graph/passes/gemm_operand.h"
#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

struct Member {
  ConstGemm m;
  RowBlock rows;
};

bool same_group(const Graph& g, const Member& a, const Member& b) {
  const Node &na = g.node(a.m.node), &nb = g.node(b.m.node);
  return a.rows.src == b.rows.src && na.op == nb.op && a.m.trans == b.m.trans &&
         same_const(g, a.m.w, b.m.w) && (a.m.bias == kNoId) == (b.m.bias == kNoId) &&
         (a.m.bias == kNoId || same_const(g, a.m.bias, b.m.bias));
}

}  // namespace

Result<HoistResult> hoist_input_projections(const Graph& g, const ShapeInferencer& shapes) {
  std::vector<Member> cands;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    auto m = const_gemm(g, n);
    if (!m || g.value(m->a).desc.rank() != 2) continue;
    auto r = row_block(g, m->a);
    if (r) cands.push_back({*m, *r});
  }
  // Partition into groups of the same source and weights, then into runs of adjacent rows.
  std::vector<std::vector<Member>> groups;
  std::vector<bool> used(cands.size(), false);
  for (size_t i = 0; i < cands.size(); ++i) {
    if (used[i]) continue;
    std::vector<Member> same;
    for (size_t j = i; j < cands.size(); ++j)
      if (!used[j] && same_group(g, cands[i], cands[j])) {
        used[j] = true;
        same.push_back(cands[j]);
      }
    std::stable_sort(same.begin(), same.end(),
                     [](const Member& a, const Member& b) { return a.rows.off < b.rows.off; });
    std::vector<Member> run;
    auto flush = [&] {
      if (run.size() >= 2) groups.push_back(run);
      run.clear();
    };
    for (const Member& m : same) {
      if (!run.empty() && m.rows.off != run.back().rows.off + run.back().rows.rows) flush();
      run.push_back(m);
    }
    flush();
  }
  HoistResult result;
  Rewrite rw(g);
  for (const std::vector<Member>& ms : groups) {
    std::unordered_set<NodeId> members;
    for (const Member& m : ms) members.insert(m.m.node);
    const ValueId src = ms[0].rows.src;
    if (!inputs_independent(g, {src}, members)) continue;
    const TensorDesc& sd = g.value(src).desc;
    const int64_t K = sd.shape.back(), R = sd.numel() / K;
    const int64_t lo = ms.front().rows.off, hi = ms.back().rows.off + ms.back().rows.rows;
    const Node& first = g.node(ms[0].m.node);
    const std::string base = rw.fresh(first.name + "/hoisted");
    std::string x = g.value(src).name;
    if (sd.rank() != 2) {
      const std::string shape = rw.fresh(base + "/shape");
      rw.add_constant(shape, i64_tensor({R, K}));
      const std::string flat = rw.fresh(base + "/X");
      rw.add_node("Reshape", rw.fresh(base + "/reshape"), {x, shape}, {flat});
      x = flat;
    }
    if (lo != 0 || hi != R) {
      Attributes sa;
      sa.set("starts", std::vector<int64_t>{lo});
      sa.set("ends", std::vector<int64_t>{hi});
      sa.set("axes", std::vector<int64_t>{0});
      const std::string rows = rw.fresh(base + "/rows");
      rw.add_node("Slice", rw.fresh(base + "/slice"), {x}, {rows}, std::move(sa));
      x = rows;
    }
    // The first member's op, weights and attributes, applied to all rows at once.
    std::vector<std::string> ins{x};
    for (size_t i = 1; i < first.inputs.size(); ++i)
      ins.push_back(first.inputs[i] == kNoId ? std::string() : g.value(first.inputs[i]).name);
    const std::string y = rw.fresh(base + "/Y");
    rw.add_node(first.op, base, ins, {y}, first.attrs);
    std::vector<std::string> outs;
    std::vector<int64_t> sizes;
    for (const Member& m : ms) {
      rw.remove(m.m.node);
      outs.push_back(g.value(g.node(m.m.node).outputs[0]).name);
      sizes.push_back(m.rows.rows);
    }
    rw.add_split(base, y, outs, 0, sizes);
    ++result.groups;
    result.members += static_cast<int>(ms.size());
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.groups, shapes));
  return result;
}

}  // namespace graphi::graph::passes
