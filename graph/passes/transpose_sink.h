// sink_transposes: Transposes pushed down through the element-wise ops after them until they meet
// their inverse and cancel. tf2onnx writes a Keras (NHWC) CNN as NCHW convolutions with each
// activation, bias Add and squeeze-excitation between a Transpose to NHWC and one back: 106
// Transposes in MobileNetV3-Small, each a copy, and each keeping the convolutions' blocked layout
// from running through (a reorder pair around every one). Here, in one pass in node order, a
// Transpose's output is held as (its input, the permutation) instead of being made; an op that
// commutes with the permutation runs on the untransposed value and its output is held the same
// way; two Transposes in a row compose (to nothing when they are inverse); a value is made (one
// Transpose) only where an op that does not commute, or a graph output, reads it. Ops it pushes
// through:
//   - element-wise unary ops (graph/passes/pass_util.h) whose other operands are scalars (Clip's
//     bounds);
//   - Add, Sub, Mul, Div, Max, Min, Pow and PRelu whose operands are held with the same
//     permutation, scalars, or constants (permuted into a new constant);
//   - ReduceMean / ReduceSum / ReduceMax / ReduceMin with keepdims = 1 and constant axes;
//   - Pad with constant pads and no axes input.
// The rewrite is kept only when it leaves fewer Transposes than the graph had. Graph inputs,
// outputs and their names are kept.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct TransposeSinkResult {
  Graph graph;         // a copy of the input when nothing changed
  int transposes = 0;  // Transposes before
  int removed = 0;     // Transposes fewer after
};

Result<TransposeSinkResult> sink_transposes(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
