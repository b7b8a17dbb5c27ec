// build_lstm: an unrolled, stacked LSTM as a graph of plain ops (MatMul, Add, Split, Sigmoid,
// Tanh, Mul, Reshape, Concat) with seeded random weights.
//
// Equations (ONNX LSTM, gate order i, o, f, c; no peepholes, no clipping), for layer l and
// step t, with x_t the layer's input ([B, E] for l = 0, layer l-1's h_t otherwise):
//   g   = x_t W + b + h_{t-1} R               [B, 4H], column blocks i | o | f | c
//   i   = sigmoid(g_i)   o = sigmoid(g_o)   f = sigmoid(g_f)   c~ = tanh(g_c)
//   c_t = f * c_{t-1} + i * c~
//   h_t = o * tanh(c_t)
// So layer l step t depends on layer l step t-1 and layer l-1 step t.
//
// Graph inputs:  "x"  f32[T, B, E]; "h0", "c0" f32[L, B, H] (initial states; feed zeros for the
//                usual start).
// Graph outputs: "y"  f32[T, B, H] (last layer's h_t for every t), "h_n", "c_n" f32[L, B, H]
//                (every layer's state after step T-1).
// Constants (x W layout: row-major [in, out], so x_t W is a plain MatMul):
//   "l{l}/W" f32[E_l, 4H] (E_0 = E, E_l = H for l > 0), "l{l}/R" f32[H, 4H], "l{l}/b" f32[4H]
//   (ONNX's Wb + Rb folded into one bias), all uniform in [-1/sqrt(H), 1/sqrt(H)) from
//   models::WeightRng(seed), drawn in the order l0/W, l0/R, l0/b, l1/W, ...;
//   "shape[...]" i64 shape operands of Reshape nodes.
// Node names: "l{l}/t{t}/gates_x" (x_t W), ".../gates_xb" (+ b), ".../gates_h" (h_{t-1} R),
//   ".../gates", ".../split", ".../i", ".../o", ".../f", ".../g", ".../fc", ".../ig", ".../c",
//   ".../tanh_c", ".../h"; "x/rows", "x/split", "h0/...", "y/rows", "y", "h_n", "c_n".
#pragma once

#include "graph/graph.h"
#include "models/rnn_spec.h"

namespace graphi::models {

// Builds and validates the graph with `shapes` (pass ops::Registry::get()). Errors:
// kInvalidArgument for a spec out of range (validate_rnn_spec), else whatever finish() reports.
Result<graph::Graph> build_lstm(const RnnSpec& spec, const graph::ShapeInferencer& shapes);

}  // namespace graphi::models
