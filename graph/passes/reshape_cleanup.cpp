#include "graph/passes/reshape_cleanup.h"

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

Result<ReshapeCleanupResult> collapse_reshapes(const Graph& g, const ShapeInferencer& shapes) {
  auto is_reshape = [&](NodeId n) {
    const Node& node = g.node(n);
    return node.op == "Reshape" && node.inputs.size() == 2 && node.inputs[0] != kNoId &&
           node.outputs.size() == 1;
  };
  ReshapeCleanupResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (!is_reshape(id)) continue;
    // A Reshape only other Reshapes read goes away with the chain.
    const ValueId o = g.node(id).outputs[0];
    bool inner = !g.value(o).is_output && !g.consumers(o).empty();
    for (NodeId c : g.consumers(o)) inner = inner && is_reshape(c) && g.node(c).inputs[0] == o;
    if (inner) continue;
    // The start of the chain: the first value not produced by a Reshape.
    ValueId src = g.node(id).inputs[0];
    int depth = 0;
    while (g.value(src).producer != kNoId && is_reshape(g.value(src).producer)) {
      src = g.node(g.value(src).producer).inputs[0];
      ++depth;
    }
    const Node& n = g.node(id);
    const Value& out = g.value(n.outputs[0]);
    if (g.value(src).desc.shape == out.desc.shape && !out.is_output) {
      // Back to the shape it started from: readers take the start of the chain directly.
      rw.remove(id);
      rw.replace_uses(n.outputs[0], g.value(src).name);
      ++result.collapsed;
      continue;
    }
    if (depth == 0) continue;
    rw.remove(id);
    const std::string shape = rw.fresh(n.name + "/shape");
    rw.add_constant(shape, i64_tensor(out.desc.shape));
    rw.add_node("Reshape", n.name, {g.value(src).name, shape}, {out.name});
    ++result.collapsed;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.collapsed, shapes));
  return result;
}

}  // namespace graphi::graph::passes
