// fuse_group_norm: GroupNorm as PyTorch exports it (and as graph/onnx imports ONNX's
// GroupNormalization): Reshape of X [N, C, H, W] to [N, G, ...], InstanceNormalization with unit
// scale and zero bias, Reshape back to X's shape, then optionally a per-channel constant Mul, a
// per-channel constant Add and a Relu, becomes one GroupNorm(X, scale[C], bias[C]; num_groups,
// epsilon, activation) node (ops/group_norm.cpp); a 4-D InstanceNormalization with constant scale
// and bias becomes GroupNorm with G = C. blocked_layout then runs it on the blocked tensor
// between convs instead of leaving the layout twice per norm (BiT, diffusion U-Nets). Every
// fused intermediate must be read by the next node only and not be a graph output; the fused
// node keeps the InstanceNormalization's name and the last fused node's output name.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct GroupNormFusionResult {
  Graph graph;        // a copy of the input when nothing changed
  int fused = 0;      // GroupNorm nodes made
  int affine = 0;     // ... of which took the per-channel Mul / Add after them
  int with_relu = 0;  // ... and the Relu after them
};

Result<GroupNormFusionResult> fuse_group_norm(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
