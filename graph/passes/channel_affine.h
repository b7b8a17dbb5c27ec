// fuse_channel_affine: a per-channel constant Mul and Add (an inference BatchNormalization the
// importer wrote as Mul + Add, that no conv before it absorbs) and the Relu after them become
// one ChannelAffine node (ops/channel_affine.cpp): Y = act(X * S[c] + B[c]) in one pass over X
// instead of three (DenseNet's pre-activation BN + ReLU before each conv reads the whole
// concatenated feature map, which stays live for the later Concats, so nothing runs in place).
// X is [N, C, H, W] with S and B [C, 1, 1] or [1, C, 1, 1], or, after blocked_layout, blocked
// [N, C/L, H, W, L] with S and B [1, C/L, 1, 1, L]; the Mul's and the Add's outputs must be read
// by the next node only (and not be graph outputs). The fused node keeps the Mul's name and the
// last fused node's output name.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ChannelAffineResult {
  Graph graph;        // a copy of the input when nothing changed
  int fused = 0;      // Mul + Add pairs now one ChannelAffine
  int with_relu = 0;  // ... of which also took the Relu after them
};

Result<ChannelAffineResult> fuse_channel_affine(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
