// PhasedLSTM: an LSTM layer with Neil, Pfeiffer and Liu's time gate ("Phased LSTM: Accelerating
// Recurrent Network Training for Long or Event-based Sequences", NIPS 2016), for irregularly
// sampled sequences. A graphi op (no ONNX equivalent) whose inputs extend ONNX's LSTM:
//
// Inputs ("" = absent optional input):
//   0 X [T, B, I] (layout = 1: [B, T, I])   1 W [D, 4H, I]   2 R [D, 4H, H]   gates (i, o, f, c)
//   3 B [D, 8H] optional (Wb, Rb)   4 sequence_lens [B] optional (int32/int64, clamped to [0, T])
//   5 initial_h [D, B, H]  6 initial_c [D, B, H] optional (layout = 1: [B, D, H])
//   7 P [D, 3H] optional peepholes (i, o, f)
//   8 times [T, B] (layout = 1: [B, T]) float32, required: the timestamp of every step
//   9 tau [D, H], 10 shift [D, H], 11 r_on [D, H] float32, required: per unit period (> 0),
//     phase shift and open ratio (in (0, 1]); trainable parameters of the paper
// Outputs: the first 1..3 of Y [T, D, B, H], Y_h [D, B, H], Y_c [D, B, H] (layout = 1: [B, T,
// D, H], [B, D, H]); past a batch entry's length Y is 0 and the states are carried (as ONNX LSTM).
// Attributes: those of ONNX LSTM (hidden_size, direction, layout, clip, input_forget,
// activations = the defaults only) plus alpha (float >= 0, default 0.001): the leak of the
// closed phase (the paper's value). The paper motivates the leak by training (gradients flow
// through closed gates); graphi applies it at inference too by default, so a model trained with
// the leak computes the same function it was trained as. Pass alpha = 0 for a strictly closed
// gate (what an implementation that drops the leak at test time computes).
//
// Per step t (time stamp ts = times[t, b]), per unit j of direction d, with the plain ONNX LSTM
// update (c~, h~) from (h_{t-1}, c_{t-1}):
//   phi = ((ts - shift_j) mod tau_j) / tau_j                   (floor modulo: phi in [0, 1))
//   k   = 2 phi / r_on_j        if phi < r_on_j / 2
//         2 - 2 phi / r_on_j    if phi < r_on_j
//         alpha * phi           otherwise
//   c_t = k c~_t + (1 - k) c_{t-1}        h_t = k h~_t + (1 - k) h_{t-1}
// A reverse direction runs t = L_b - 1 .. 0 with the same per-step time stamps. tau, shift and
// r_on are checked at init when they are constants (tau > 0, 0 < r_on <= 1, all finite); fed at
// run time, out-of-range values give what the formula gives (NaN for tau = 0).
//
// Kernel: weights packed once (constant W, R, B, P) into per-thread blocks of hidden units
// (whole 16-unit cache lines, all 4 gates of a unit next to each other), X W^T hoisted for
// chunks of steps, then per step one LIBXSMM GEMM of h_{t-1} with the thread's block of R, the
// fused LSTM gate kernel (ops/rnn/rnn_gates.h) and the time-gate blend, one team barrier per step.
//
// Training (ops/rnn/rnn_train.h): graphi_training = 1 gives the training form (all three outputs
// plus S with 6 blocks per row: the LSTM's [i o f c~ c_cand] of the candidate state, then c_t;
// the backward evaluates the gate again); PhasedLSTMGrad differentiates X, W,
// R, B, initial_h, initial_c, P, tau, shift and r_on (phi's floor has no gradient, the phase
// boundaries are not differentiated, as autodiff of the unrolled ops and torch.remainder give).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "ops/registry.h"
#include "ops/rnn/rnn_sequence.h"

namespace graphi::ops {

inline constexpr const char* kPhasedLstmOp = "PhasedLSTM";
inline constexpr double kPhasedLstmDefaultAlpha = 0.001;

// Input slots beyond ONNX LSTM's eight.
enum PhasedLstmInput : int { kPhasedTimes = 8, kPhasedTau, kPhasedShift, kPhasedROn };
inline constexpr int kPhasedLstmInputs = 12;

// A validated PhasedLSTM node: the LSTM part (lstm.phased = true) and the leak alpha.
struct PhasedSpec {
  RnnSpec lstm;
  double alpha = kPhasedLstmDefaultAlpha;
};
// Validates a PhasedLSTM node (12 inputs, the op's attributes; errors name `where`).
Result<PhasedSpec> phased_spec(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                               size_t num_outputs, const std::string& where);

// Registered by register_phased_lstm_op() (ops/registry.h).

}  // namespace graphi::ops
