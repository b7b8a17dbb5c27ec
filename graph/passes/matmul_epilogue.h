// fuse_matmul_epilogues: a MatMul by a constant matrix (A [..., K] x W [K, N], W behind
// Identity / Transpose nodes or not) whose output only an Add of a constant bias over the last
// dim reads (b [N] or [1, ..., 1, N]: PyTorch's nn.Linear on a 3-D or 4-D input exports as
// MatMul + Add), then optionally a Mul by such a constant (ConvNeXt's layer scale: folded into
// W's columns and b) and an activation that alone reads the result (Relu, Gelu of either
// approximation), becomes one MatMulBias node (ops/gemm.cpp): oneDNN's matmul with the bias
// and the activation as post-ops, one pass over the output instead of the product's store plus
// a read and a store per fused op. Products of <= 4 rows (graphi's GEMV kernel streams their
// weights faster than oneDNN's matmul) and of <= 64^3 multiply-adds (LIBXSMM's) stay as they
// are. The fused node keeps the last fused node's output name; the MatMul's name.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct MatMulEpilogueResult {
  Graph graph;          // a copy of the input when nothing changed
  int fused = 0;        // MatMul + Add chains now one MatMulBias
  int scales = 0;       // ... of which folded a Mul by a constant into W and b
  int activations = 0;  // ... of which took the activation after them
};

Result<MatMulEpilogueResult> fuse_matmul_epilogues(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
