// The fused sequence ops LSTM, GRU and RNN with ONNX (opset 14) semantics: one node runs a whole
// layer (all time steps, one or both directions). Stacked layers are separate nodes, as in ONNX.
//
// Inputs (ONNX order; "" = absent optional input):
//   X [T, B, I]                      (layout = 1: [B, T, I])
//   W [D, G*H, I]   R [D, G*H, H]    gate blocks in ONNX order: LSTM (i, o, f, c), GRU (z, r, h),
//                                    RNN one block; D = 2 for direction = bidirectional, else 1
//   B [D, 2*G*H]    optional, Wb then Rb
//   sequence_lens [B]  optional, int32 or int64; values outside [0, T] are clamped to it
//   initial_h [D, B, H]  optional (layout = 1: [B, D, H])
//   initial_c [D, B, H]  optional, LSTM only
//   P [D, 3*H]      optional, LSTM peepholes (i, o, f)
// Outputs, the first 1..3 (LSTM) or 1..2 (GRU, RNN) of:
//   Y [T, D, B, H] (layout = 1: [B, T, D, H]), Y_h [D, B, H], Y_c [D, B, H] (LSTM)
//   (layout = 1: Y_h, Y_c are [B, D, H]). For a batch entry of length L < T, Y is 0 at steps
//   >= L and Y_h / Y_c hold its state after its last valid step (the reverse direction runs
//   steps L-1 .. 0).
// Attributes: hidden_size (default: R's last dim), direction (forward | reverse |
// bidirectional), layout (0 | 1), clip (> 0; applied to the gate pre-activations), input_forget
// (LSTM, 0 | 1), linear_before_reset (GRU, 0 | 1), activations (one comma-separated string, since
// graphi attributes have no string lists: "Sigmoid,Tanh,Tanh" per direction for LSTM,
// "Sigmoid,Tanh" for GRU — only these defaults are supported — and one of Tanh | Relu | Sigmoid
// per direction for RNN; a single direction's list is reused for both directions).
// activation_alpha / activation_beta are rejected (no supported activation takes them).
// graphi_training (0 | 1): the training form of ops/rnn/rnn_train.h (one more output).
// Internal benchmark knob: graphi_wcs_shuffle (int, default 0). 1 rotates the thread-to-block
// mapping every step (thread t computes the block of thread (t + step) mod nthr), which defeats
// weight-centric streamlining; same results, used to measure what WCS buys.
// Schedule knobs (ops/rnn/rnn_schedule.h): graphi_schedule_search (int 0 | 1, default: the
// environment, GRAPHI_RNN_SCHEDULE_SEARCH, on unless "0") calibrates the kernel's schedules at
// init and caches the fastest; graphi_schedule ("threads,xi,xj,chunk,tile,zigzag") forces one
// (tests, experiments; an invalid one is an error naming the limits).
// Weight precision, opt-in: graphi_rnn_weights ("fp32" default | "bf16"; the Session option
// rnn_weights sets it on every LSTM/GRU/RNN node). bf16 stores the input and recurrent weights
// as bf16 pairs (ops/rnn/gemm_bf16.h), converts x and h to bf16 for the GEMMs and accumulates in
// fp32; gates, c and h stay fp32. vdpbf16ps where the CPU has AVX512-BF16, else a converted path
// (same rounding, fp32 FMAs). int8 stores them as s8 with one scale per output column, quantizes
// x and h dynamically to u8 with a scale and zero point (h per row and per thread's block of
// units, each step) and accumulates in int32 (ops/rnn/gemm_int8.h: vpdpbusd where the CPU has
// AVX512-VNNI, else a reference path with the same integers). Accuracy against fp32:
// docs/RNN_KERNELS.md.
//
// The kernel (weight-centric streamlining, DeepCPU 5.2.4): weights packed once at init (when W,
// R, B, P are constants; else per run into scratch), one parallel region for the sequence (the
// executor's), thread t always owning the same block of hidden units (all G gates of each of
// its units, so the fused gate kernel needs only its own GEMM block), the input projection
// X W^T hoisted out of the recurrence as large GEMMs over chunks of time steps, LIBXSMM
// microkernels for the GEMMs (ops/rnn/gemv_rows.h for one-row calls, i.e. batch-1 steps), one team
// exchange per step (two barriers for the canonical GRU, whose reset gate must see all of
// r * h_prev before its last GEMM). With one row per thread a step first multiplies the units of
// h_prev the thread computed itself, then waits for the peers' units (the exchange overlaps
// half the GEMV).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/rnn/rnn_gates.h"

namespace graphi::ops {

enum class RnnCellKind { kRnn, kGru, kLstm };

// The benchmark knob described above.
inline constexpr const char* kWcsShuffleAttr = "graphi_wcs_shuffle";
inline constexpr const char* kScheduleAttr = "graphi_schedule";
inline constexpr const char* kScheduleSearchAttr = "graphi_schedule_search";
inline constexpr const char* kRnnWeightsAttr = "graphi_rnn_weights";
// The precision the model file stored the weights in ("int8": the ONNX importer sets it on an
// LSTM imported from ONNX Runtime's DynamicQuantizeLSTM): the default of graphi_rnn_weights, which
// the node's own graphi_rnn_weights and the Session option rnn_weights (even "fp32") override.
inline constexpr const char* kRnnFileWeightsAttr = "graphi_rnn_file_weights";

// Storage precision of the fused kernels' weights (graphi_rnn_weights).
enum class RnnWeights { kF32, kBf16, kInt8 };
// "fp32" / "bf16" / "int8".
const char* rnn_weights_name(RnnWeights w);
// Parses "fp32" | "bf16" | "int8" (also "f32", "float32", "bfloat16", "s8"); an error names the
// accepted values. `what` prefixes the message.
Result<RnnWeights> parse_rnn_weights(const std::string& v, const std::string& what);

// Input slots, ONNX order.
enum RnnInput : int {
  kRnnX = 0,
  kRnnW,
  kRnnR,
  kRnnB,
  kRnnSeqLens,
  kRnnInitialH,
  kRnnInitialC,
  kRnnP
};

// A validated LSTM/GRU/RNN node.
struct RnnSpec {
  RnnCellKind kind = RnnCellKind::kLstm;
  int64_t seq_len = 0, batch = 0, input_size = 0, hidden = 0;
  int num_directions = 1;
  bool reverse_only = false;  // direction = reverse (D = 1)
  int gates = 4;              // G: LSTM 4, GRU 3, RNN 1
  int layout = 0;
  float clip = 0.0f;                                                           // 0 = no clipping
  bool input_forget = false;                                                   // LSTM
  bool linear_before_reset = false;                                            // GRU
  RnnActivation activation[2] = {RnnActivation::kTanh, RnnActivation::kTanh};  // RNN, per direction
  bool has_bias = false, has_seq_lens = false, has_initial_h = false, has_initial_c = false,
       has_peephole = false;
  DType seq_lens_dtype = DType::kI32;
  int num_outputs = 1;
  bool wcs_shuffle = false;
  std::string forced_schedule;            // graphi_schedule, "" = none
  int schedule_search = -1;               // graphi_schedule_search: -1 = the environment decides
  RnnWeights weights = RnnWeights::kF32;  // graphi_rnn_weights
  // graphi_training = 1: the training form (ops/rnn/rnn_train.h), every output plus the saved
  // activations S; num_outputs then counts S too.
  bool training = false;
  bool phased = false;  // a PhasedLSTM's LSTM part (ops/rnn/phased_lstm.h): S has 7 blocks

  // Is direction d (0 or 1) processed back to front?
  bool is_reverse(int d) const { return reverse_only || d == 1; }
  // First time index of direction d's window of steps [s0, s1).
  int64_t window_begin(int d, int64_t s0, int64_t s1) const {
    return is_reverse(d) ? seq_len - s1 : s0;
  }
  // Length of batch entry b: sequence_lens[b] (`lens` of seq_lens_dtype) clamped to
  // [0, seq_len], or seq_len without lens.
  int64_t seq_len_of(const void* lens, int64_t b) const noexcept {
    if (!lens) return seq_len;
    const int64_t v = seq_lens_dtype == DType::kI64 ? static_cast<const int64_t*>(lens)[b]
                                                    : static_cast<const int32_t*>(lens)[b];
    return v < 0 ? 0 : (v > seq_len ? seq_len : v);
  }
  // Offsets (floats) of rows in the ONNX tensors X, Y and Y_h / Y_c, per layout.
  int64_t x_row(int64_t t, int64_t b) const {
    return (layout == 0 ? t * batch + b : b * seq_len + t) * input_size;
  }
  int64_t y_row(int64_t t, int d, int64_t b) const {
    const int64_t D = num_directions;
    return (layout == 0 ? (t * D + d) * batch + b : (b * seq_len + t) * D + d) * hidden;
  }
  int64_t state_row(int d, int64_t b) const {
    return (layout == 0 ? d * batch + b : b * num_directions + d) * hidden;
  }
};

const char* rnn_cell_name(RnnCellKind kind);  // "LSTM", "GRU", "RNN"

// Checks inputs, attributes and the number of outputs of an LSTM/GRU/RNN node. Shape errors name
// the input, its shape and the expected shape with where each dim comes from; unsupported
// features (non-default activations, activation_alpha/beta) are kUnsupported.
Result<RnnSpec> rnn_spec(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                         size_t num_outputs, const std::string& where);

// The descs of the spec's outputs (the first num_outputs of Y, Y_h, Y_c).
std::vector<TensorDesc> rnn_output_descs(const RnnSpec& s);

// For `graphi info`: "<kernel> <schedule>" (e.g. "lstm_wcs p2 1x2 hoisted chunk 100 tile 256
// (calibrated)") when `k` is an LSTM/GRU/RNN sequence kernel, else "".
class Kernel;
std::string rnn_kernel_description(const Kernel& k);

}  // namespace graphi::ops
