// fuse_conv_activations: Conv followed by Relu (the Conv's output read by that Relu only, not a
// graph output) becomes one FusedConv node (ONNX Runtime's contrib op name) with attribute
// activation = "Relu": oneDNN applies the ReLU as an eltwise post-op while the output block is
// still in registers (conv + bias + ReLU in one pass over dst), and the plan loses an op and a
// tensor. The fused node keeps the Relu's output name; graph inputs and outputs are unchanged.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ConvFusionResult {
  Graph graph;    // a copy of the input when nothing changed
  int fused = 0;  // Conv + Relu pairs now one FusedConv
};

Result<ConvFusionResult> fuse_conv_activations(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
