// fuse_hard_sigmoid: clip(x + c, 0, h) / h, as Keras writes its hard_sigmoid and the gate of its
// hard_swish (relu6(x + 3) / 6; tf2onnx: Add, Clip, Mul by 1/h or Div by h), becomes one
// HardSigmoid(x; alpha = 1/h, beta = c/h): three passes over the activation become one, and
// conv_fusion then fuses x * HardSigmoid(x) after a conv as a HardSwish post-op
// (graph/passes/conv_fusion.h). Recognized with the Add's operands in either order and the
// constants as float scalars (1/h within 1e-6 relative); the Add's and the Clip's outputs read
// only by the next node and not graph outputs.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct HardSigmoidFusionResult {
  Graph graph;    // a copy of the input when nothing changed
  int fused = 0;  // HardSigmoid nodes made
};

Result<HardSigmoidFusionResult> fuse_hard_sigmoid(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
