// fuse_rnn_cells: recognizes unrolled LSTM and GRU cells built from plain ops (as `graphi model
// lstm|gru` emits them, or as torch.onnx.export writes a hand-written cell) and replaces each
// chain of cells that share weights with one ONNX LSTM / GRU sequence op.
//
// Matching is structural, never by name or gate order. Every gate pre-activation is read as an
// affine expression  sum_k left_k M_k + sum_j b_j  where each M_k is a block of a float32
// constant matrix and each b_j a block of a constant [N] / [1, N] vector. It may be written with
// MatMul (by a constant, possibly behind Identity / Transpose nodes), Gemm (transA = 0, alpha =
// beta = 1, any transB, a constant bias C or a C that is itself such an expression: tf2onnx's
// Gemm(x_t, W, C = h R)), Adds in any association, Split or Slice along axis 1
// of any of these (torch.chunk), a Concat [x, h] along axis 1 as the left operand (one term per
// part), and one GEMM per gate or one for all gates. A gate value is act(affine) or a column
// piece of act(affine) (activation applied before the split).
//
// LSTM, from the dataflow  c = f * c_prev + i * g,  h = o * tanh(c)  (operands of every Mul and
// Add in either order): the sigmoid multiplying c_prev is f, the one multiplying the tanh gate g
// is i, the one multiplying tanh(c) is o. The pre-activations must read exactly two left
// operands (x_t and h_prev) with one weight block each; W, R, b are permuted into ONNX order
// (i, o, f, c); all biases of a gate are summed into Wb (Rb = 0). Peepholes (i and f adding
// p * c_prev, o adding p * c, p a constant [H] / [1, H]) become the LSTM op's P input.
// GRU:  h = n + z * (h_prev - n)  or  h = (1 - z) * n + z * h_prev,  n = tanh(...), z, r
// sigmoid gates. Where r is applied decides the variant: r * h_prev as the left operand of n's
// recurrent product is canonical (linear_before_reset = 0); r * (h_prev R_n + Rb_n) added to
// n's input part is linear_before_reset = 1 (PyTorch's and cuDNN's form). Weights go into
// ONNX order (z, r, h).
//
// Vanilla RNN:  h = act(x W + h_prev R + b)  with act Tanh, Relu or Sigmoid, chains of at
// least two cells (a lone one is just a dense layer) -> ONNX RNN, activations = act. Matched
// after LSTM and GRU, on what they did not take.
//
// Every value computed inside a cell other than h (and c) must be read only inside the cell and
// not be a graph output; different activations, other ops, non-constant weights, a third left
// operand, or any extra use leave the cell alone (fusing never changes results). Cells chain
// when cell t's h_prev (and c_prev) are cell t-1's h (and c) and both have the same weights;
// equal constants count as one value (an export repeats the zero initial state). A chain is
// skipped when an intermediate c_t is used outside it or its inputs depend on it (a cycle).
//
// The rewrite: X is the previous fused layer's Y, or the tensor whose consecutive row blocks the
// x_t are (a Split of x, x[t] as Slice + Reshape), else a Concat of the x_t; a Concat along
// axis 0 of all h_t (or of each h_t reshaped, torch.stack) becomes a Reshape of Y; other uses
// of h_t read Reshape(Slice(Y, t)), the last one Y_h, the last c Y_c. Replacement values keep
// the original names, so graph outputs and downstream nodes are untouched; weight plumbing left
// dead (Identity / Transpose of the old weights) is dropped.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct RnnFusionResult {
  Graph graph;        // the rewritten graph (a copy of the input when nothing was fused)
  int cells = 0;      // cells replaced (LSTM and GRU)
  int sequences = 0;  // sequence ops created
  int lstm_cells = 0, lstm_sequences = 0, gru_cells = 0, gru_sequences = 0;
  int rnn_cells = 0, rnn_sequences = 0;  // vanilla RNN
};

// `shapes` validates the rewritten graph (pass ops::Registry::get()); it must know the LSTM,
// GRU, Slice, Reshape and Concat ops. The default pipeline (graph/passes/pipeline.h) runs it
// first.
Result<RnnFusionResult> fuse_rnn_cells(const Graph& g, const ShapeInferencer& shapes);

// fuse_rnn_cells for a graph that will be trained. A cell the pass could not chain with its
// neighbours (PhasedLSTM's time gate sits between the steps) becomes a one-step sequence op with
// its own copy of the layer's weights: trained apart, the copies would no longer be one shared
// weight, so such a result is refused (kUnsupported, naming `source` and the node).
Result<RnnFusionResult> fuse_rnn_cells_for_training(const Graph& g, const ShapeInferencer& shapes,
                                                    const std::string& source);

}  // namespace graphi::graph::passes
