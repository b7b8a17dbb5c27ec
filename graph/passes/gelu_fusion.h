// fuse_gelu: the exact GELU as exporters write it, x * (1 + erf(x / sqrt(2))) * 0.5 (PyTorch's
// nn.GELU() / F.gelu at opsets 13-17: Div(x, 1.4142135), Erf, Add(1), Mul(x, .), Mul(0.5)),
// becomes one Gelu op (ops/unary_ops.cpp; ONNX opset 20's Gelu with approximate 'none'): five
// passes over the activation become one (ConvNeXt and ViT blocks: ONNX Runtime fuses it too).
// Recognized with the operands of each Add and Mul in either order, x / sqrt(2) also as
// x * 0.70710677, the 0.5 also applied to x first ((x * 0.5) * (1 + erf)), constants within
// 1e-6 relative; every intermediate value read only by the next node of the chain and not a
// graph output. The tanh approximation is left as it is (it is already cheap op by op).
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct GeluFusionResult {
  Graph graph;    // a copy of the input when nothing changed
  int fused = 0;  // Gelu nodes made
};

Result<GeluFusionResult> fuse_gelu(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
