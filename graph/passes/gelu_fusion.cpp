#include "graph/passes/gelu_fusion.h"

#include <cmath>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

// A float constant of one element equal to `want` within 1e-6 relative.
bool scalar_near(const Graph& g, ValueId v, double want) {
  const std::optional<double> c = float_scalar(g, v);
  return c && std::abs(*c - want) <= 1e-6 * want;
}

}  // namespace

Result<GeluFusionResult> fuse_gelu(const Graph& g, const ShapeInferencer& shapes) {
  GeluFusionResult result;
  Rewrite rw(g);
  constexpr double kSqrt2 = 1.41421356237309515, kRsqrt2 = 0.70710678118654757;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& erf = g.node(id);
    if (erf.op != "Erf" || erf.inputs.size() != 1 || erf.outputs.size() != 1 || rw.removed(id))
      continue;
    // x / sqrt(2) or x * (1 / sqrt(2)).
    const ValueId d = erf.inputs[0];
    const NodeId dn = g.value(d).producer;
    if (dn == kNoId || sole_reader(g, d) != id) continue;
    const Node& scale = g.node(dn);
    if (scale.inputs.size() != 2) continue;
    ValueId x = kNoId;
    if (scale.op == "Div" && scalar_near(g, scale.inputs[1], kSqrt2)) x = scale.inputs[0];
    if (scale.op == "Mul" && scalar_near(g, scale.inputs[1], kRsqrt2)) x = scale.inputs[0];
    if (scale.op == "Mul" && scalar_near(g, scale.inputs[0], kRsqrt2)) x = scale.inputs[1];
    if (x == kNoId || g.value(x).desc.dtype != DType::kF32) continue;
    // 1 + erf.
    const NodeId an = sole_reader(g, erf.outputs[0]);
    if (an == kNoId) continue;
    const Node& add = g.node(an);
    const ValueId one = other_operand(add, "Add", erf.outputs[0]);
    if (!scalar_near(g, one, 1.0) || g.value(add.outputs[0]).desc != g.value(x).desc) continue;
    // (x * (1 + erf)) * 0.5, or (x * 0.5) * (1 + erf).
    const NodeId mn = sole_reader(g, add.outputs[0]);
    if (mn == kNoId) continue;
    const Node& mul = g.node(mn);
    const ValueId other = other_operand(mul, "Mul", add.outputs[0]);
    std::vector<NodeId> chain = {dn, id, an, mn};
    ValueId y = kNoId;
    if (other == x) {
      const NodeId hn = sole_reader(g, mul.outputs[0]);
      if (hn == kNoId) continue;
      const Node& half = g.node(hn);
      if (!scalar_near(g, other_operand(half, "Mul", mul.outputs[0]), 0.5)) continue;
      chain.push_back(hn);
      y = half.outputs[0];
    } else if (other != kNoId && g.value(other).producer != kNoId) {
      const Node& half = g.node(g.value(other).producer);
      if (sole_reader(g, other) != mn || other_operand(half, "Mul", x) == kNoId ||
          !scalar_near(g, other_operand(half, "Mul", x), 0.5))
        continue;
      chain.push_back(g.value(other).producer);
      y = mul.outputs[0];
    } else {
      continue;
    }
    if (g.value(y).desc != g.value(x).desc) continue;  // no broadcast hidden in the chain
    bool free = true;
    for (NodeId n : chain) free = free && !rw.removed(n);
    if (!free) continue;
    for (NodeId n : chain) rw.remove(n);
    rw.add_node("Gelu", rw.fresh(erf.name + "/gelu"), {g.value(x).name}, {g.value(y).name});
    ++result.fused;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

}  // namespace graphi::graph::passes
