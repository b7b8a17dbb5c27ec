// Fused RNN gate kernels: one pass over the gate pre-activations of one time step (bias, peephole,
// clip, activations and the state update in registers). ONNX semantics and gate order, so the
// sequence op maps ONNX's LSTM/GRU/RNN one to one. Vectorized with the ops/activations.h math
// (AVX-512 / AVX2 / scalar chosen at run time). ops/ only; no graph or engine types.
//
// Layout. Every matrix is row-major [rows = batch, ...] with its own leading dimension (ld, in
// floats). A gate matrix holds its gates as blocks of `hidden` columns, gate g of hidden unit j at
// row[g * gate_stride + j]; gate_stride = 0 means hidden (the ONNX layout [B, G*H]). A blocked
// layout (one thread's slice of every gate next to each other, as a weight-centric sequence op
// wants) passes pointers to the slice and gate_stride = slice width. Bias and peephole vectors use
// the same gate layout as one row of the gate matrix.
//
// Work split. Each kernel processes the rectangle `tile` (rows x hidden units) and touches only
// those rows and units of its outputs, so the members of a team may call it concurrently on
// disjoint tiles (see gate_tile_for_thread). Kernels never allocate, never fail and are
// noexcept; check the arguments once with check_*_args() before the hot loop.
//
// PyTorch gate orders (for importers): nn.LSTM stacks (i, f, g, o) where ONNX has (i, o, f, c):
// PyTorch block 0 -> ONNX 0, 1 -> 2, 2 -> 3, 3 -> 1. nn.GRU stacks (r, z, n) where ONNX has
// (z, r, h): PyTorch block 0 -> ONNX 1, 1 -> 0, 2 -> 2, and PyTorch's GRU is ONNX's
// linear_before_reset = 1 (b_hn inside r * (.)).
#pragma once

#include <cstdint>
#include <string_view>

#include "graph/base.h"
#include "ops/activations.h"

namespace graphi::ops {

// Rows [row_begin, row_end) and hidden units [col_begin, col_end) of a [batch, hidden] state.
struct GateTile {
  int64_t row_begin = 0, row_end = 0;
  int64_t col_begin = 0, col_end = 0;
};

// Thread ithr's tile of a [rows, hidden] state split over nthr threads: by hidden units in whole
// 16-float cache lines when hidden >= 16 * nthr (no two threads write one line of h or c), else
// by rows when rows >= nthr, else by single hidden units. Tiles may be empty.
GateTile gate_tile_for_thread(int64_t rows, int64_t hidden, int ithr, int nthr);

// LSTM (ONNX LSTM, default activations f = sigmoid, g = h = tanh), per element, with
// G = gates_x + gates_h + bias (absent addends are 0), P = peephole (absent = 0),
// clip(v) = min(max(v, -clip), clip) when clip > 0 (ONNX/ONNX Runtime: applied to the four gate
// inputs of the activations, after bias and peephole):
//   i  = sigmoid(clip(G_i + P_i * c_prev))
//   f  = sigmoid(clip(G_f + P_f * c_prev))          (input_forget: f = 1 - i)
//   g  = tanh(clip(G_c))
//   c  = f * c_prev + i * g
//   o  = sigmoid(clip(G_o + P_o * c))
//   h  = o * tanh(c)
// Gate blocks in order (i, o, f, c); peephole blocks in order (i, o, f). c may alias c_prev and h
// may alias nothing else (in-place cell state update is allowed).
struct LstmGateArgs {
  int64_t hidden = 0;
  int64_t gate_stride = 0;         // 0 = hidden
  const float* gates_x = nullptr;  // required
  int64_t ld_gates_x = 0;
  const float* gates_h = nullptr;  // optional second addend
  int64_t ld_gates_h = 0;
  const float* bias = nullptr;      // optional, 4 blocks (Wb + Rb)
  const float* peephole = nullptr;  // optional, 3 blocks
  const float* c_prev = nullptr;    // optional, nullptr = zeros
  int64_t ld_c_prev = 0;
  float* c = nullptr;  // required
  int64_t ld_c = 0;
  float* h = nullptr;  // required
  int64_t ld_h = 0;
  float clip = 0.0f;  // <= 0: no clipping
  bool input_forget = false;
  // Optional: the activations a backward pass reads, per row [i o f c~ c] (5 blocks of
  // gate_stride); may alias gates_x with the same ld (the training forward overwrites x W^T in
  // place).
  float* saved = nullptr;
  int64_t ld_saved = 0;
};

// GRU (ONNX GRU, default activations f = sigmoid, g = tanh). Gate blocks in order (z, r, h).
// Xg = gates_x (x W^T, required), Hg = gates_h (h_prev R^T without bias), Wb = bias_x,
// Rb = bias_h (absent biases are 0), clip as for LSTM:
//   z  = sigmoid(clip(Xg_z + Hg_z + Wb_z + Rb_z))
//   r  = sigmoid(clip(Xg_r + Hg_r + Wb_r + Rb_r))
//   linear_before_reset = 0 (canonical):  hh = tanh(clip(Xg_h + (r * h_prev) Rh^T + Rb_h + Wb_h))
//   linear_before_reset = 1:              hh = tanh(clip(Xg_h + r * (Hg_h + Rb_h) + Wb_h))
//   h  = (1 - z) * hh + z * h_prev
// Linear-before-reset is one pass (gru_gates_lbr). The canonical form needs (r * h_prev) before
// its last GEMM, so it is two passes around that GEMM:
//   gru_gates_reset:  reads the z and r blocks of gates_x/gates_h, writes z and rh = r * h_prev;
//   (caller: gates_hh = rh Rh^T, one block of hidden columns)
//   gru_gates_output: reads the h block of gates_x, gates_hh, z, h_prev; writes h.
// In the canonical form gates_h needs only the z and r blocks.
struct GruGateArgs {
  int64_t hidden = 0;
  int64_t gate_stride = 0;         // 0 = hidden
  const float* gates_x = nullptr;  // required
  int64_t ld_gates_x = 0;
  const float* gates_h = nullptr;  // optional (required by lbr)
  int64_t ld_gates_h = 0;
  const float* gates_hh = nullptr;  // canonical output pass: (r*h_prev) Rh^T
  int64_t ld_gates_hh = 0;
  const float* bias_x = nullptr;  // optional Wb, 3 blocks
  const float* bias_h = nullptr;  // optional Rb, 3 blocks
  const float* h_prev = nullptr;  // optional, nullptr = zeros
  int64_t ld_h_prev = 0;
  float* h = nullptr;  // lbr and output pass
  int64_t ld_h = 0;
  float* z = nullptr;  // canonical: written by reset, read by output
  int64_t ld_z = 0;
  float* rh = nullptr;  // canonical: r * h_prev, written by reset
  int64_t ld_rh = 0;
  float clip = 0.0f;
};

// Vanilla RNN (ONNX RNN): h = act(clip(gates_x + gates_h + bias)), one gate block.
enum class RnnActivation { kTanh, kRelu, kSigmoid };
struct RnnGateArgs {
  int64_t hidden = 0;
  const float* gates_x = nullptr;  // required
  int64_t ld_gates_x = 0;
  const float* gates_h = nullptr;  // optional
  int64_t ld_gates_h = 0;
  const float* bias = nullptr;  // optional (Wb + Rb)
  float* h = nullptr;           // required; may alias gates_x (same ld)
  int64_t ld_h = 0;
  float clip = 0.0f;
  RnnActivation activation = RnnActivation::kTanh;
};

// One step of the LSTM's backpropagation through time (the fused sequence op's training kernel,
// ops/rnn/rnn_backward.cpp), per element with dh = dL/dh_t (+ dY_t), tc = tanh(c_t):
//   do = dh tc o (1 - o);  dc = dc_in + dh o (1 - tc^2) + do P_o
//   di = dc c~ i (1 - i);  df = dc c_prev f (1 - f);  dc~ = dc i (1 - c~^2)
//   dc_out = dL/dc_{t-1} = dc f + di P_i + df P_f
// The hidden units of a row are contiguous in every matrix (no gate_stride); tile columns are
// hidden units.
struct LstmBackwardArgs {
  int64_t hidden = 0;
  const float* saved = nullptr;  // required: rows [i o f c~ c_t], the forward's activations
  int64_t ld_saved = 0;
  const float* c_prev = nullptr;  // optional, nullptr = zeros
  int64_t ld_c_prev = 0;
  const float* dy = nullptr;  // optional dL/dY_t, added to dh
  int64_t ld_dy = 0;
  const float* peephole = nullptr;  // optional, 3 blocks (i, o, f)
  const float* dh = nullptr;        // required: dL/dh_t from step t + 1
  int64_t ld_dh = 0;
  float* dc = nullptr;  // required: in dL/dc_t from step t + 1, out dL/dc_{t-1}
  int64_t ld_dc = 0;
  float* dgates = nullptr;  // required: out [di do df dc~]
  int64_t ld_dgates = 0;
  // A PhasedLSTM's time gate around the cell (optional: phased_carry set). saved rows then hold
  // the 6 blocks of ops/rnn/rnn_train.h (block 4 is the candidate c~, which the cell's part
  // above reads as its c; then c_t), `gate` rows the time gate's planes k, dk/dphi, u, dk/dr_on
  // (phased_gate), and dh, dc are taken at the gate's output. With dh = dL/dh_t (+ dY_t),
  // dc_in = dL/dc_t and h~ = o tanh(c~) (as the forward's gate kernel computed it):
  //   the cell's part on k dh and k dc_in;  dc_out += (1 - k) dc_in;  carry = (1 - k) dh;
  //   dk = dc_in (c~ - c_prev) + dh (h~ - h_prev), and dk's planes for tau's, shift's and
  //   r_on's gradients: g[0] = dk dk/dphi, g[plane] = dk dk/dphi u, g[2 plane] = dk dk/dr_on.
  float* phased_carry = nullptr;  // out (1 - k) dh, the part of dh_{t-1} that skips R
  int64_t ld_phased_carry = 0;
  const float* h_prev = nullptr;  // required with the gate
  int64_t ld_h_prev = 0;
  const float* gate = nullptr;  // required with the gate: per row 4 planes of `hidden` floats
  int64_t ld_gate = 0;
  float* dk_planes = nullptr;  // required with the gate: three planes, plane floats apart
  int64_t ld_dk = 0;
  int64_t dk_plane = 0;
};

// The PhasedLSTM's time gate and blend on units [0, n) of one batch row at time stamp ts
// (Neil et al. 2016; ops/rnn/phased_lstm.h has the op): per unit j, in double,
//   u = (ts - shift) / tau,  phi = u - floor(u),
//   k = 2 phi / r_on (phi < r_on / 2),  2 - 2 phi / r_on (phi < r_on),  alpha phi (closed),
//   c = k c~ + (1 - k) c_prev,  h = k h~ + (1 - k) h_prev   (rounded to float).
// Branch-free over j, so the compiler vectorizes it per ISA (the floor by the 2^52 rounding
// trick: the int64 conversion it replaces does not vectorize before AVX-512DQ). saved_c, when
// given, receives c_t for the backward (which evaluates the gate again and has h~ = o tanh(c~)
// from the LSTM's blocks).
struct PhasedTimeGate {  // the gate's inputs, shared by the blend and phased_gate
  int64_t n = 0;
  double ts = 0;
  double alpha = 0;
  const float* shift = nullptr;     // [n]
  const double* inv_tau = nullptr;  // [n], 1 / tau
  const float* r_on = nullptr;      // [n]
};
struct PhasedBlendArgs : PhasedTimeGate {
  const float* cand_c = nullptr;  // c~
  const float* cand_h = nullptr;  // h~
  float* c = nullptr;             // in c_{t-1}, out c_t (in place)
  const float* h_prev = nullptr;  // may alias h
  float* h = nullptr;
  float* saved_c = nullptr;  // optional (training)
};

// The time gate of PhasedBlendArgs alone, for the backward: the four planes of n floats at
// `out` that LstmBackwardArgs::gate reads, k, dk/dphi, u, dk/dr_on, as the blend computed k
// (the same function). Recomputing them per row is cheaper than storing them in the forward's
// S and reading them back: they depend on the time stamp and the unit only, and S of a small
// PhasedLSTM step (4 layers, 64 x 20 rows) does not stay in cache between the two passes.
struct PhasedGateArgs : PhasedTimeGate {
  float* out = nullptr;  // [4][n]: k, dk/dphi, u, dk/dr_on
};

// The entry points below use active_simd_isa(). Preconditions (checked by check_*_args, not
// here): pointers valid for every row and unit of the tile, tile inside [rows, hidden].
void lstm_gates(const LstmGateArgs& args, const GateTile& tile) noexcept;
void gru_gates_lbr(const GruGateArgs& args, const GateTile& tile) noexcept;
void gru_gates_reset(const GruGateArgs& args, const GateTile& tile) noexcept;
void gru_gates_output(const GruGateArgs& args, const GateTile& tile) noexcept;
void rnn_gates(const RnnGateArgs& args, const GateTile& tile) noexcept;
void lstm_gates_backward(const LstmBackwardArgs& args, const GateTile& tile) noexcept;
void phased_blend(const PhasedBlendArgs& args) noexcept;
void phased_gate(const PhasedGateArgs& args) noexcept;

// One ISA path's kernels, for tests and benchmarks.
struct RnnGateKernels {
  SimdIsa isa;
  void (*lstm)(const LstmGateArgs&, const GateTile&) noexcept;
  void (*gru_lbr)(const GruGateArgs&, const GateTile&) noexcept;
  void (*gru_reset)(const GruGateArgs&, const GateTile&) noexcept;
  void (*gru_output)(const GruGateArgs&, const GateTile&) noexcept;
  void (*rnn)(const RnnGateArgs&, const GateTile&) noexcept;
  void (*lstm_backward)(const LstmBackwardArgs&, const GateTile&) noexcept;
  void (*phased_blend)(const PhasedBlendArgs&) noexcept;
  void (*phased_gate)(const PhasedGateArgs&) noexcept;
};
// nullptr when this CPU cannot run `isa`.
const RnnGateKernels* rnn_gate_kernels(SimdIsa isa);

// Argument checks for `rows` batch rows: required pointers present, hidden > 0, gate_stride >=
// hidden, every ld large enough for the layout, clip not NaN. Errors are invalid_argument
// prefixed with `where` (e.g. the node's "<source>: node 'x' (LSTM)").
enum class GruPass { kLinearBeforeReset, kReset, kOutput };
Status check_lstm_gate_args(const LstmGateArgs& args, int64_t rows, std::string_view where);
Status check_gru_gate_args(const GruGateArgs& args, GruPass pass, int64_t rows,
                           std::string_view where);
Status check_rnn_gate_args(const RnnGateArgs& args, int64_t rows, std::string_view where);

}  // namespace graphi::ops
