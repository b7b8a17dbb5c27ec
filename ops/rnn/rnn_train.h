// Training of the fused LSTM / GRU / RNN sequence ops (backpropagation through time). Three pieces:
//
// 1. The training form of the forward node (ops/rnn/rnn_train_forward.cpp): the same LSTM/GRU
//    op with attribute graphi_training = 1, every ONNX output present (Y, Y_h[, Y_c]) and one
//    more, S, the activations the backward reads:
//      S [D, T*B, K*H], rows in X's row order (layout 0: t*B + b, layout 1: b*T + t), per row
//        LSTM (K = 5): i, o, f, c~ (gate activations, ONNX order), c_t
//        GRU  (K = 4): z, r, h~ (activations), q = h_prev Rh^T + Rbh (linear_before_reset = 1)
//                      or q = r * h_prev (linear_before_reset = 0)
//        RNN  (K = 1): h_t (the activation's output, from which its derivative follows)
//    Its kernel hoists X W^T for all steps into S as one GEMM per direction and runs one GEMM
//    per step (oneDNN), the gates in place. The inference kernel (WCS) never sees this form.
//
// 2. The backward op LSTMGrad / GRUGrad / RNNGrad (ops/rnn/rnn_backward.cpp). Inputs, in this
//    order ("" = absent): the forward's X, W, R, B, sequence_lens, initial_h, initial_c, P (GRU,
//    RNN: the last two absent), then Y, S, dY, dY_h, dY_c (the gradients of the forward's
//    outputs; absent = zero; GRU, RNN: dY_c absent). Attributes: the forward's (without
//    graphi_training) and graphi_grads, the comma-separated names of the inputs to differentiate,
//    one output each in that order, from X, W, R, B, initial_h, initial_c, P. The data gradients
//    run step by step (one GEMM per step: dh_prev = dgates_t R), the weight gradients are one GEMM
//    per direction over all steps (dW = dgates^T X, dR = dgates^T H_prev), dX one GEMM for both
//    directions.
//
// 3. The gradient rule (ops/rnn/rnn_grad_rule.cpp) that emits (2) for a node in form (1).
//
// The PhasedLSTM (ops/rnn/phased_lstm.h) is an LSTM here with its time gate around the cell:
// S gains c_t (6 blocks); the backward evaluates the time gate again per row
// (phased_gate, rnn_gates.h: it depends on the time stamp and the unit only, and recomputing
// it is cheaper than four more planes of S through memory), PhasedLSTMGrad also differentiates
// tau, shift, r_on.
//
// Supported: every gate, weight, bias, initial state and peephole input, directions forward,
// reverse and bidirectional, layout 0 and 1, RNN activations Tanh, Relu, Sigmoid. Refused by
// name: sequence_lens, clip, input_forget.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/autodiff.h"
#include "ops/rnn/rnn_sequence.h"

namespace graphi::ops {

class Registry;

inline constexpr const char* kRnnTrainingAttr = "graphi_training";
inline constexpr const char* kRnnGradsAttr = "graphi_grads";

// Input slots of LSTMGrad / GRUGrad after the forward's eight (kRnnX .. kRnnP).
enum RnnGradInput : int { kGradY = 8, kGradSaved, kGradDY, kGradDYh, kGradDYc, kGradInputs };
// PhasedLSTMGrad: LSTMGrad's inputs, then the forward's times, tau, shift, r_on.
enum PhasedGradInput : int {
  kGradTimes = kGradInputs,
  kGradTau,
  kGradShift,
  kGradROn,
  kPhasedGradInputs
};
// The grad node's input slot of forward input `slot` (PhasedLSTM's 8..11 come after dY_c).
inline int grad_input_slot(int slot) { return slot < kGradY ? slot : slot + kGradTimes - 8; }

// K of S's rows (K * hidden floats per row).
inline int64_t rnn_saved_blocks(RnnCellKind kind) {
  return kind == RnnCellKind::kLstm ? 5 : kind == RnnCellKind::kGru ? 4 : 1;
}

// K of a node's S: PhasedLSTM adds c_t after the LSTM's five blocks (whose c is the candidate
// c~; h~ = o tanh(c~) follows from them).
inline constexpr int64_t kPhasedSavedCt = 5;
inline int64_t rnn_saved_blocks(const RnnSpec& s) {
  return s.phased ? 6 : rnn_saved_blocks(s.kind);
}

// Rows of X (and of S, and of the backward's gate gradients) in X's order; also the index of
// (t, b) in a PhasedLSTM's times.
inline int64_t rnn_row(const RnnSpec& s, int64_t t, int64_t b) {
  return s.layout == 0 ? t * s.batch + b : b * s.seq_len + t;
}

// Why the gradient of this spec cannot be built ("" = it can): sequence_lens, clip,
// input_forget.
std::string rnn_grad_unsupported(const RnnSpec& s);

// The training form of an LSTM/GRU/RNN node (GradientRules::training_form), nullopt when its
// gradient is not supported (the rule then says why).
std::optional<graph::passes::TrainingForm> rnn_training_form(const graph::Node& node);

// The gradient rules of LSTM, GRU and RNN (one function: the op type is the node's).
Status rnn_grad_rule(graph::passes::GradContext& ctx, std::vector<std::string>& dx);

// Registers LSTMGrad, GRUGrad and RNNGrad (called by register_rnn_ops).
void register_rnn_grad_ops(Registry& r);

// The training-form forward kernel of `kind`, tried before the inference kernel (it declines
// nodes without graphi_training = 1).
class Kernel;
std::unique_ptr<Kernel> make_rnn_train_forward_kernel(RnnCellKind kind);
// The PhasedLSTM's (ops/rnn/phased_lstm.h), registered first for that op.
std::unique_ptr<Kernel> make_phased_lstm_train_forward_kernel();
// Registers PhasedLSTMGrad (called by register_phased_lstm_op).
void register_phased_lstm_grad_op(Registry& r);

// For LSTMGrad/GRUGrad's shape rule and kernel: the forward spec of a backward node (its
// attributes minus graphi_grads, the forward's eight inputs) and the names in graphi_grads as
// forward input slots.
struct RnnGradSpec {
  RnnSpec fwd;             // fwd.phased for PhasedLSTMGrad
  double alpha = 0;        // PhasedLSTM's leak
  std::vector<int> grads;  // forward input slots kRnnX, kRnnW, ... (kPhasedTau ...) per output
};
Result<RnnGradSpec> rnn_grad_spec(const graph::Node& node,
                                  std::span<const TensorDesc* const> inputs, size_t num_outputs,
                                  const std::string& where);

}  // namespace graphi::ops
