// build_gru: an unrolled, stacked GRU as a graph of plain ops (MatMul, Add, Sub, Split, Sigmoid,
// Tanh, Mul, Reshape, Concat) with seeded random weights.
//
// Equations (ONNX GRU, gate order z, r, h), for layer l and step t, with x_t the layer's input
// ([B, E] for l = 0, layer l-1's h_t otherwise):
//   z   = sigmoid(x_t W_z + h_{t-1} R_z + b_z)
//   r   = sigmoid(x_t W_r + h_{t-1} R_r + b_r)
//   canonical (linear_before_reset = false, the default; the original GRU paper's form):
//     h~ = tanh(x_t W_h + (r * h_{t-1}) R_h + b_h)
//   linear_before_reset = true (ONNX's flag; cuDNN's and PyTorch's form):
//     h~ = tanh(x_t W_h + Wb_h + r * (h_{t-1} R_h + Rb_h))
//   h_t = (1 - z) * h~ + z * h_{t-1}          (computed as h~ + z * (h_{t-1} - h~))
// So layer l step t depends on layer l step t-1 and layer l-1 step t.
//
// Graph inputs:  "x" f32[T, B, E]; "h0" f32[L, B, H] (initial state; feed zeros for the usual
//                start).
// Graph outputs: "y" f32[T, B, H] (last layer's h_t for every t), "h_n" f32[L, B, H].
// Constants (row-major [in, out] so x_t W is a plain MatMul; column blocks z | r | h):
//   "l{l}/W" f32[E_l, 3H] (E_0 = E, E_l = H for l > 0) and "l{l}/b" f32[3H], then
//   canonical:           "l{l}/R_zr" f32[H, 2H] (R_z | R_r), "l{l}/R_h" f32[H, H];
//                        b = Wb + Rb of ONNX folded into one bias;
//   linear_before_reset: "l{l}/R" f32[H, 3H] and "l{l}/Rb" f32[3H]; b is ONNX's Wb.
//   All uniform in [-1/sqrt(H), 1/sqrt(H)) from models::WeightRng(seed), drawn per layer in
//   the order listed (W, b, then R_zr, R_h or R, Rb). "shape[...]": i64 Reshape operands.
// Node names: "l{l}/t{t}/gates_x", ".../gates_xb", ".../split_x", ".../gates_h", ".../zr_pre",
//   ".../zr", ".../split_zr", ".../rh", ".../rh_R" (canonical) or ".../gates_hb",
//   ".../split_h", ".../r_gh" (lbr),
//   ".../hh_pre", ".../hh", ".../diff", ".../z_diff", ".../h".
#pragma once

#include "graph/graph.h"
#include "models/rnn_spec.h"

namespace graphi::models {

// Builds and validates the graph with `shapes` (pass ops::Registry::get()). Errors:
// kInvalidArgument for a spec out of range (validate_rnn_spec), else whatever finish() reports.
Result<graph::Graph> build_gru(const RnnSpec& spec, const graph::ShapeInferencer& shapes);

}  // namespace graphi::models
