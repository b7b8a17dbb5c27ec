// collapse_reshapes: Reshape(Reshape(...(x))) becomes Reshape(x) to the final shape (each
// Reshape is a copy in graphi). The rewrites of the other passes leave such chains behind (the
// fused sequence op's X and Y between the shapes an unrolled graph used), and ONNX imports have
// them (Unsqueeze / Squeeze become Reshapes). Inner Reshapes nothing else reads disappear;
// value names and graph outputs stay.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ReshapeCleanupResult {
  Graph graph;        // a copy of the input when nothing changed
  int collapsed = 0;  // Reshapes now reading the start of their chain
};

Result<ReshapeCleanupResult> collapse_reshapes(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
