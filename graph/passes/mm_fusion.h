// fuse_shared_matmuls (MM fusion): MatMul / Gemm nodes that read the same activation A and
// multiply it by constant weights become one GEMM on the weights concatenated along N, followed
// by a Split along the last axis that produces the original outputs (same names, so consumers
// are untouched). The 4 gate GEMMs of an unfused LSTM step on x (and those on h) become one
// GEMM of 4x the width: one weight stream, one kernel call, better GEMM efficiency.
//
// A member: MatMul(A, W) with W a 2-D f32 constant (possibly behind Identity / Transpose), A f32
// of rank >= 2; or Gemm(A, W[, C]) with transA = 0, alpha = beta = 1, any transB, C absent or
// a constant bias of shape [N] or [1, N]. Members with a bias need a 2-D A (the fused node is a
// Gemm with the biases concatenated, zeros for members without one). Groups of identical
// weight lists share one concatenated constant (every time step of an unrolled RNN reuses it).
// Fusing cannot make a cycle: every member reads only A and constants.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct MmFusionResult {
  Graph graph;      // a copy of the input when nothing was fused
  int groups = 0;   // fused GEMMs created
  int members = 0;  // MatMul / Gemm nodes they replaced
};

// `shapes` validates the rewritten graph (pass ops::Registry::get()).
Result<MmFusionResult> fuse_shared_matmuls(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
