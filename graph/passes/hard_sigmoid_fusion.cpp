#include "graph/passes/hard_sigmoid_fusion.h"

#include <cmath>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

Result<HardSigmoidFusionResult> fuse_hard_sigmoid(const Graph& g, const ShapeInferencer& shapes) {
  HardSigmoidFusionResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& clip = g.node(id);
    if (clip.op != "Clip" || clip.outputs.size() != 1 || clip.inputs.empty()) continue;
    const auto bounds = clip_bounds(g, clip);
    if (!bounds || bounds->first != 0.0 || !(bounds->second > 0.0) ||
        !std::isfinite(bounds->second))
      continue;
    const double h = bounds->second;
    // x + c before it.
    const ValueId sum = clip.inputs[0];
    const NodeId an = g.value(sum).producer;
    if (an == kNoId || sole_reader(g, sum) != id) continue;
    const Node& add = g.node(an);
    if (add.op != "Add" || add.inputs.size() != 2) continue;
    ValueId x = kNoId;
    std::optional<double> c;
    for (int k = 0; k < 2 && !c; ++k) {
      c = float_scalar(g, add.inputs[static_cast<size_t>(1 - k)]);
      x = add.inputs[static_cast<size_t>(k)];
    }
    if (!c || g.value(x).desc != g.value(sum).desc) continue;
    // / h after it.
    const NodeId sn = sole_reader(g, clip.outputs[0]);
    if (sn == kNoId) continue;
    const Node& scale = g.node(sn);
    if (scale.inputs.size() != 2 || scale.outputs.size() != 1) continue;
    const ValueId other = scale.inputs[0] == clip.outputs[0] ? scale.inputs[1] : scale.inputs[0];
    const std::optional<double> s = float_scalar(g, other);
    const bool by_mul = scale.op == "Mul" && s && std::abs(*s * h - 1.0) <= 1e-6;
    const bool by_div = scale.op == "Div" && scale.inputs[0] == clip.outputs[0] && s &&
                        std::abs(*s - h) <= 1e-6 * h;
    if (!by_mul && !by_div) continue;
    if (g.value(scale.outputs[0]).desc != g.value(sum).desc) continue;
    rw.remove(an);
    rw.remove(id);
    rw.remove(sn);
    Attributes a;
    a.set("alpha", 1.0 / h);
    a.set("beta", *c / h);
    rw.add_node("HardSigmoid", scale.name, {g.value(x).name}, {g.value(scale.outputs[0]).name}, a);
    ++result.fused;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

}  // namespace graphi::graph::passes
