// GemmOperand: what the passes need to know of a MatMul / Gemm whose B is a constant matrix
// (behind Identity / Transpose nodes or not), shared by MM fusion and phase hoisting.
#pragma once

#include <optional>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace graphi::graph::passes {

struct ConstGemm {
  NodeId node = kNoId;
  ValueId a = kNoId;     // the activation
  ValueId w = kNoId;     // the constant holding B
  bool trans = false;    // B = w^T
  ValueId bias = kNoId;  // a constant [N] or [1, N], or kNoId
  int64_t k = 0, n = 0;  // B is [k, n]
};

// `node` as a product of its first input by a constant: MatMul(A, W) with A f32 of rank >= 2,
// or Gemm(A, W[, C]) with transA = 0, alpha = beta = 1 and C absent or a constant bias.
std::optional<ConstGemm> const_gemm(const Graph& g, NodeId node);

// B as a row-major [k, n] matrix (transposed if need be).
void copy_b(const Graph& g, const ConstGemm& m, float* dst, int64_t ld, int64_t col0);

}  // namespace graphi::graph::passes
