// fuse_rnn_cells: recognizes unrolled LSTM and GRU cells built from plain ops (as `graphi model
// lstm|gru` emits, or a hand-written cell exported to ONNX) and replaces each chain of cells
// that share weights with one ONNX LSTM / GRU sequence op.
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
//
// A GRU cell (the form models/gru.h documents, both variants):
//   Split(x W + b, axis 1, {2H, H}) -> x_zr, x_h;  z | r = Split(Sigmoid(x_zr + h_zr))
//   canonical: h_zr = h_prev R_zr, h~ = tanh(x_h + (r * h_prev) R_h)
//   linear_before_reset: h_zr | h_h = Split(h_prev R + Rb), h~ = tanh(x_h + r * h_h)
//   h = h~ + z * (h_prev - h~)
// h_prev is the Sub's first operand, z the gate multiplying the difference, r the other one;
// the weights are permuted into ONNX order (z, r, h). Chains and outside uses as for LSTM.
// Stacked layers read the previous fused layer's Y directly; a Concat of all h_t along axis 0
// becomes a Reshape of Y.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct RnnFusionResult {
  Graph graph;        // the rewritten graph (a copy of the input when nothing was fused)
  int cells = 0;      // cells replaced (LSTM and GRU)
  int sequences = 0;  // sequence ops created
  int lstm_cells = 0, lstm_sequences = 0, gru_cells = 0, gru_sequences = 0;
};

// `shapes` validates the rewritten graph (pass ops::Registry::get()); it must know the LSTM,
// GRU, Slice, Reshape and Concat ops.
Result<RnnFusionResult> fuse_rnn_cells(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
