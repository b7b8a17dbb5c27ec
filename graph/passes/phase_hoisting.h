// hoist_input_projections (phase hoisting, DeepCPU's time-independent phase): in an unrolled
// recurrence that was not fused into a sequence op, the input projections x_t W of all time
// steps do not depend on the recurrence. When every x_t is a block of rows of one tensor X
// (Split / Slice along axis 0, or Reshape of such a slice of a [T, B, I] input, as unrolled
// graphs and PyTorch exports take x[t]) and all those products use the same constant W (and
// bias), they become one GEMM of X (as [T*B, I]) by W ahead of the recurrence, whose result is
// split back into the per-step outputs (same names). One big GEMM streams W once instead of T
// times and takes T small GEMMs off the recurrence's critical path.
//
// Members are MatMul / Gemm nodes as in MM fusion (graph/passes/gemm_operand.h) with a 2-D
// activation. Members with the same X, weight, bias and op whose row blocks are adjacent form
// one group (at least 2); X must not depend on any member (no cycle).
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct HoistResult {
  Graph graph;      // a copy of the input when nothing was hoisted
  int groups = 0;   // hoisted GEMMs created
  int members = 0;  // per-step products they replaced
};

// `shapes` validates the rewritten graph (pass ops::Registry::get()).
Result<HoistResult> hoist_input_projections(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
