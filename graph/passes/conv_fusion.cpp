#include "graph/passes/conv_fusion.h"

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

Result<ConvFusionResult> fuse_conv_activations(const Graph& g, const ShapeInferencer& shapes) {
  ConvFusionResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& conv = g.node(id);
    if (conv.op != "Conv" || conv.outputs.size() != 1) continue;
    const ValueId y = conv.outputs[0];
    if (g.value(y).is_output || g.consumers(y).size() != 1) continue;
    const Node& relu = g.node(g.consumers(y)[0]);
    if (relu.op != "Relu" || relu.inputs.size() != 1 || relu.outputs.size() != 1) continue;
    rw.remove(id);
    rw.remove(g.consumers(y)[0]);
    Attributes attrs = conv.attrs;
    attrs.set("activation", std::string("Relu"));
    std::vector<std::string> inputs;
    for (ValueId v : conv.inputs) inputs.push_back(v == kNoId ? "" : g.value(v).name);
    rw.add_node("FusedConv", conv.name, inputs, {g.value(relu.outputs[0]).name}, attrs);
    ++result.fused;
  }
  if (result.fused == 0) {
    result.graph = g;
    return result;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  return result;
}

}  // namespace graphi::graph::passes
