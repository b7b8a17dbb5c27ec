// fuse_lstm_cells: recognizes unrolled LSTM cells built from plain ops (as `graphi model lstm`
// emits, or a hand-written cell exported to ONNX) and replaces each chain of cells that share
// weights with one ONNX LSTM sequence op.
//
// A cell (matched structurally, never by name):
//   g = x W + b + h_prev R    (Adds in any association; x W and h_prev R MatMuls; W, R, b
//                              float32 constants, W [I, 4H], R [H, 4H], b [4H] or [1, 4H])
//   Split(g, axis 1, 4 equal parts) -> three Sigmoid, one Tanh (c~)
//   c = f * c_prev + i * c~,  h = o * tanh(c)
// The roles i, o, f are read off the equations (the sigmoid multiplying c_prev is f, the one
// multiplying c~ is i, the one multiplying tanh(c) is o), so any gate order in the columns works;
// W, R, b are permuted into ONNX order (i, o, f, c) and transposed to [1, 4H, I] / [1, 4H, H].
// Cells chain when cell t's h_prev and c_prev are cell t-1's h and c and all share W, R, b.
// Every use of a chain's h_t outside the chain reads Reshape(Slice(Y, t)) (the last one reads
// Y_h); the last c reads Y_c; the replacement values keep the original names, so graph outputs
// and downstream nodes are untouched. A chain is left alone when any other internal value
// (an intermediate c_t, a gate, a pre-activation) is used outside it or is a graph output, or
// when its inputs depend on the chain itself (fusing would make a cycle).
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct LstmFusionResult {
  Graph graph;        // the rewritten graph (a copy of the input when nothing was fused)
  int cells = 0;      // cells replaced
  int sequences = 0;  // LSTM ops created
};

// `shapes` validates the rewritten graph (pass ops::Registry::get()); it must know the LSTM,
// Slice, Reshape and Concat ops.
Result<LstmFusionResult> fuse_lstm_cells(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
