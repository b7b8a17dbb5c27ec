#include "graph/passes/channel_affine.h"

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

Result<ChannelAffineResult> fuse_channel_affine(const Graph& g, const ShapeInferencer& shapes) {
  ChannelAffineResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& mul = g.node(id);
    if (mul.op != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1 || rw.removed(id))
      continue;
    const ValueId t = mul.outputs[0];
    const Shape& ts = g.value(t).desc.shape;
    if (g.value(t).desc.dtype != DType::kF32 || (ts.size() != 4 && ts.size() != 5)) continue;
    int xi = -1;
    for (int k = 0; k < 2; ++k)
      if (mul.inputs[k] != kNoId && g.value(mul.inputs[k]).desc.shape == ts &&
          g.value(mul.inputs[k]).data == nullptr && mul.inputs[1 - k] != kNoId &&
          per_channel_constant(g.value(mul.inputs[1 - k]), ts))
        xi = k;
    if (xi < 0 || g.value(t).is_output) continue;
    const NodeId ai = sole_reader(g, t);
    if (ai == kNoId) continue;
    const Node& add = g.node(ai);
    const ValueId shift = other_operand(add, "Add", t);
    if (shift == kNoId || !per_channel_constant(g.value(shift), ts)) continue;
    ValueId out = add.outputs[0];
    Attributes attrs;
    std::vector<NodeId> fused = {id, ai};
    if (!g.value(out).is_output) {
      const NodeId ri = sole_reader(g, out);
      if (ri != kNoId && g.node(ri).op == "Relu" && g.node(ri).inputs.size() == 1 &&
          g.node(ri).outputs.size() == 1) {
        attrs.set("activation", std::string("Relu"));
        fused.push_back(ri);
        out = g.node(ri).outputs[0];
        ++result.with_relu;
      }
    }
    for (NodeId n : fused) rw.remove(n);
    rw.add_node(
        "ChannelAffine", mul.name,
        {g.value(mul.inputs[xi]).name, g.value(mul.inputs[1 - xi]).name, g.value(shift).name},
        {g.value(out).name}, attrs);
    ++result.fused;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

}  // namespace graphi::graph::passes
