// LSTMGrad / GRUGrad / RNNGrad: backpropagation through time of the fused sequence ops
// (ops/rnn/rnn_train.h). Per direction, walking the steps in the reverse of the forward's order:
// an element-wise pass turns dL/dh_t (from dY and from step t+1) and the saved activations into
// the gate gradients dgates_t (kept for every step, rows in X's order), then one GEMM per step
// gives the recurrent part of dL/dh_{t-1} = dgates_t R (the canonical GRU needs a second one
// inside the step, for its reset gate). After the walk: dW = dgates^T X and dR = dgates^T H_prev
// as ONE GEMM each over all T*B rows, the bias gradients as column sums, and, after both
// directions, dX = dgates W as one GEMM over [dgates_fwd | dgates_bwd]. Every GEMM is oneDNN on
// the team; sums run in a fixed order, so results do not depend on the thread count's split.
//
// Math (per row, ONNX gate order; dh includes dY_t; c_prev, h_prev from S / Y / initial state):
//   RNN:  dpre = dh act'(h) (tanh 1 - h^2, sigmoid h (1-h), relu [h > 0]); dh_prev = dpre R
//   LSTM: tc = tanh(c); do = dh tc o(1-o); dc += dh o (1 - tc^2) + do Po;
//         di = dc c~ i(1-i); df = dc c_prev f(1-f); dc~ = dc i (1 - c~^2);
//         dc_prev = dc f + di Pi + df Pf;  dh_prev = [di do df dc~] R
//   GRU:  dn = dh (1-z) (1-h~^2); dz = dh (h_prev - h~) z(1-z);
//         lbr 1: dr = dn q r(1-r) (q = h_prev Rh^T + Rbh); R-side gradient of h~ is dn r;
//                dh_prev = dh z + [dz dr dn r] R
//         lbr 0: da = dn Rh (a = r h_prev); dr = da h_prev r(1-r);
//                dh_prev = dh z + da r + [dz dr] R_zr;  dRh = dn^T (r h_prev)
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "ops/registry.h"
#include "ops/rnn/phased_lstm.h"
#include "ops/rnn/rnn_gates.h"
#include "ops/rnn/rnn_sequence_kernel.h"
#include "ops/rnn/rnn_train.h"
#include "ops/rnn/rnn_train_util.h"
#include "ops/rnn/tiled_gemm.h"
#include "ops/shape_rules.h"

namespace graphi::ops {

namespace {

const char* kSlotNames[] = {"X",         "W", "R",     "B",   "sequence_lens", "initial_h",
                            "initial_c", "P", "times", "tau", "shift",         "r_on"};

RnnCellKind grad_kind(const std::string& op) {
  return op == "LSTMGrad" || op == "PhasedLSTMGrad" ? RnnCellKind::kLstm
         : op == "GRUGrad"                          ? RnnCellKind::kGru
                                                    : RnnCellKind::kRnn;
}

}  // namespace

Result<RnnGradSpec> rnn_grad_spec(const graph::Node& node,
                                  std::span<const TensorDesc* const> inputs, size_t num_outputs,
                                  const std::string& where) {
  const RnnCellKind kind = grad_kind(node.op);
  const bool lstm = kind == RnnCellKind::kLstm;
  const bool phased = node.op == "PhasedLSTMGrad";
  const size_t n_inputs = static_cast<size_t>(phased ? int{kPhasedGradInputs} : int{kGradInputs});
  if (inputs.size() != n_inputs)
    return Status::invalid_graph(where + ": " + node.op + " has " + std::to_string(n_inputs) +
                                 " inputs (X, W, R, B, sequence_lens, initial_h, initial_c, P, "
                                 "Y, S, dY, dY_h, dY_c" +
                                 (phased ? ", times, tau, shift, r_on" : "") +
                                 "; absent ones empty), got " + std::to_string(inputs.size()));
  graph::Node fwd;
  fwd.op = phased ? kPhasedLstmOp : rnn_cell_name(kind);
  fwd.name = node.name;
  for (const auto& [k, v] : node.attrs.all())
    if (k != kRnnGradsAttr) fwd.attrs.set(k, v);
  const size_t n_fwd = phased ? kPhasedLstmInputs : lstm ? 8 : 6;
  if (!lstm)
    for (int i : {int{kRnnInitialC}, int{kRnnP}, int{kGradDYc}})
      if (inputs[i])
        return Status::invalid_graph(where + ": " + node.op + " input " + std::to_string(i) +
                                     " must be absent");
  RnnGradSpec g;
  if (phased) {
    // The forward's twelve inputs: the first eight, then times, tau, shift, r_on.
    std::vector<const TensorDesc*> fwd_in(inputs.begin(), inputs.begin() + 8);
    for (int i = kGradTimes; i <= kGradROn; ++i) fwd_in.push_back(inputs[i]);
    GRAPHI_ASSIGN_OR_RETURN(PhasedSpec ps, phased_spec(fwd, fwd_in, 3, where));
    g.fwd = ps.lstm;
    g.alpha = ps.alpha;
  } else {
    GRAPHI_ASSIGN_OR_RETURN(g.fwd, rnn_spec(fwd, inputs.first(n_fwd), lstm ? 3 : 2, where));
  }
  if (std::string why = rnn_grad_unsupported(g.fwd); !why.empty())
    return Status::unsupported(where + ": " + why);
  const std::vector<TensorDesc> outs = rnn_output_descs(g.fwd);
  const int64_t KH = rnn_saved_blocks(g.fwd) * g.fwd.hidden;
  const TensorDesc saved{DType::kF32, {g.fwd.num_directions, g.fwd.seq_len * g.fwd.batch, KH}};
  auto expect = [&](int slot, const TensorDesc& want, const char* what, bool required) -> Status {
    if (!inputs[slot]) {
      if (!required) return Status::ok();
      return Status::invalid_graph(where + ": input " + std::to_string(slot) + " (" + what +
                                   ") is required");
    }
    if (*inputs[slot] == want) return Status::ok();
    return Status::invalid_graph(where + ": input " + std::to_string(slot) + " (" + what + ") is " +
                                 inputs[slot]->to_string() + ", expected " + want.to_string());
  };
  GRAPHI_RETURN_IF_ERROR(expect(kGradY, outs[0], "Y", true));
  GRAPHI_RETURN_IF_ERROR(expect(kGradSaved, saved, "S, the saved activations", true));
  GRAPHI_RETURN_IF_ERROR(expect(kGradDY, outs[0], "dY", false));
  GRAPHI_RETURN_IF_ERROR(expect(kGradDYh, outs[1], "dY_h", false));
  if (lstm) GRAPHI_RETURN_IF_ERROR(expect(kGradDYc, outs[2], "dY_c", false));
  GRAPHI_ASSIGN_OR_RETURN(std::string names,
                          graph::attr_string(node.attrs, where, kRnnGradsAttr, ""));
  for (const std::string& n : rnn_wcs::split_names(names)) {
    int slot = -1;
    for (int i = 0; i < static_cast<int>(n_fwd); ++i)
      if (n == kSlotNames[i] && i != kRnnSeqLens && i != kPhasedTimes) slot = i;
    if (slot < 0 || !inputs[grad_input_slot(slot)])
      return Status::invalid_graph(where + ": attribute '" + kRnnGradsAttr + "' names '" + n +
                                   "', not a present input of " + fwd.op +
                                   " (X, W, R, B, initial_h" + (lstm ? ", initial_c, P" : "") +
                                   (phased ? ", tau, shift, r_on" : "") + ")");
    if (std::find(g.grads.begin(), g.grads.end(), slot) != g.grads.end())
      return Status::invalid_graph(where + ": attribute '" + kRnnGradsAttr + "' names '" + n +
                                   "' twice");
    g.grads.push_back(slot);
  }
  if (g.grads.empty() || g.grads.size() != num_outputs)
    return Status::invalid_graph(where + ": attribute '" + kRnnGradsAttr + "' = '" + names +
                                 "' must name one input per output (" +
                                 std::to_string(num_outputs) + " outputs)");
  return g;
}

namespace {

using rnn_train::aligned_floats;
using rnn_train::Matmul;
using rnn_train::PhasedInputs;

class RnnBackwardKernel final : public Kernel {
 public:
  RnnBackwardKernel(RnnCellKind kind, bool phased) : kind_(kind), phased_(phased) {}
  const char* name() const override {
    return phased_                       ? "phased_lstm_bptt"
           : kind_ == RnnCellKind::kLstm ? "lstm_bptt"
           : kind_ == RnnCellKind::kGru  ? "gru_bptt"
                                         : "rnn_bptt";
  }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return scratch_floats_ * sizeof(float); }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, rnn_grad_spec(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    const RnnSpec& s = g_.fwd;
    team_ = std::max(1, ctx.team_size);
    const int64_t B = s.batch, H = s.hidden, I = s.input_size, G = s.gates, T = s.seq_len;
    const int64_t D = s.num_directions, rows = T * B, GH = G * H;
    const int64_t KH = rnn_saved_blocks(s) * H;
    ldg_ = D * GH;
    lbr0_ = kind_ == RnnCellKind::kGru && !s.linear_before_reset;
    lbr1_ = kind_ == RnnCellKind::kGru && s.linear_before_reset;
    // Rows of step t's dgates: consecutive in X's order for layout 0, T rows apart for layout 1.
    const int64_t step_ld = (s.layout == 0 ? 1 : T) * ldg_;
    auto want = [&](int slot) {
      return std::find(g_.grads.begin(), g_.grads.end(), slot) != g_.grads.end();
    };
    using rnn_train::dense;
    using rnn_train::strided;
    using rnn_train::transposed;
    if (lbr0_) {
      // da = dn Rh; dh_prev = [dz dr] R_zr + carry.
      GRAPHI_ASSIGN_OR_RETURN(
          step_a_, Matmul::create(strided(B, H, step_ld), dense(H, H), dense(B, H), false, team_));
      GRAPHI_ASSIGN_OR_RETURN(step_, Matmul::create(strided(B, 2 * H, step_ld), dense(2 * H, H),
                                                    dense(B, H), true, team_));
    } else {
      // The GRU and the PhasedLSTM add a carry (the part of dh_prev that skips R).
      GRAPHI_ASSIGN_OR_RETURN(step_,
                              Matmul::create(strided(B, GH, step_ld), dense(GH, H), dense(B, H),
                                             kind_ == RnnCellKind::kGru || phased_, team_));
    }
    if (kind_ == RnnCellKind::kLstm) {
      // The batch-row walk (rnn_train::walk_batch_rows): dh_rows = dgates_rows R with R as stored
      // ([4H, H]).
      rows_gemm_ =
          TiledGemm::create_row_major(H, GH, H, step_ld, H, rnn_train::team_row_counts(B, team_));
    }
    if (want(kRnnX)) {
      GRAPHI_ASSIGN_OR_RETURN(
          dx_, Matmul::create(dense(rows, D * GH), dense(D * GH, I), dense(rows, I), false, team_));
    }
    if (want(kRnnW)) {
      GRAPHI_ASSIGN_OR_RETURN(dw_, Matmul::create(transposed(GH, rows, ldg_), dense(rows, I),
                                                  dense(GH, I), false, team_));
    }
    if (want(kRnnR)) {
      if (lbr0_) {
        GRAPHI_ASSIGN_OR_RETURN(dr_, Matmul::create(transposed(2 * H, rows, ldg_), dense(rows, H),
                                                    dense(2 * H, H), false, team_));
        GRAPHI_ASSIGN_OR_RETURN(
            dr_h_, Matmul::create(transposed(H, rows, ldg_), strided(rows, H, KH), dense(H, H),
                                  false, team_));
      } else {
        GRAPHI_ASSIGN_OR_RETURN(dr_, Matmul::create(transposed(GH, rows, ldg_), dense(rows, H),
                                                    dense(GH, H), false, team_));
      }
    }
    size_t prim = 0;
    for (const Matmul* m : {&step_, &step_a_, &dx_, &dw_, &dr_, &dr_h_})
      prim = std::max(prim, m->scratch_bytes());
    size_t off = aligned_floats(static_cast<int64_t>((prim + 3) / 4));
    auto take = [&](int64_t floats) {
      const size_t at = off;
      off += aligned_floats(floats);
      return at;
    };
    dg_off_ = take(rows * ldg_);
    dh_side_off_ = lbr1_ ? take(rows * ldg_) : dg_off_;
    hp_off_ = take(rows * H);
    dh_off_ = take(B * H);
    dc_off_ = take(B * H);
    carry_off_ = take(B * H);
    da_off_ = take(B * H);
    if (phased_) {
      dk_off_ = take(3 * rows * H);  // per row and unit: the time-gate parameters' terms
      inv_tau_off_ = take(2 * H);    // H doubles
      gate_off_ = off;               // per thread: one row's time gate planes (phased_gate)
      gate_floats_ = aligned_floats(4 * H);
      off += static_cast<size_t>(team_) * gate_floats_;
    }
    scratch_floats_ = off;
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* scratch = static_cast<float*>(team.scratch);
    const RnnSpec& s = g_.fwd;
    for (int d = 0; d < s.num_directions; ++d)
      if (!direction(team, io, d, scratch)) return fail(team);
    if (float* dx = out(io, kRnnX))
      if (!dx_.run(scratch + dg_off_, static_cast<const float*>(io.inputs[kRnnW]), dx, scratch))
        return fail(team);
  }

 private:
  void fail(const TeamContext& team) const noexcept {
    team.fail(std::string(name()) + ": oneDNN execution failed", /*internal=*/true);
  }
  float* out(const Buffers& io, int slot) const noexcept {  // slot: the forward's input slot
    for (size_t k = 0; k < g_.grads.size(); ++k)
      if (g_.grads[k] == slot) return static_cast<float*>(io.outputs[k]);
    return nullptr;
  }

  bool direction(const TeamContext& team, const Buffers& io, int d, float* scratch) const noexcept {
    const RnnSpec& s = g_.fwd;
    const int64_t B = s.batch, H = s.hidden, I = s.input_size, G = s.gates, T = s.seq_len;
    const int64_t rows = T * B, GH = G * H, KH = rnn_saved_blocks(s) * H;
    const bool lstm = kind_ == RnnCellKind::kLstm;
    auto in = [&](int i) { return static_cast<const float*>(io.inputs[i]); };
    const float* x = in(kRnnX);
    const float* r = in(kRnnR) + d * GH * H;
    const float* h0 = s.has_initial_h ? in(kRnnInitialH) : nullptr;
    const float* c0 = s.has_initial_c ? in(kRnnInitialC) : nullptr;
    const float* peep = s.has_peephole ? in(kRnnP) + d * 3 * H : nullptr;
    const float* y = in(kGradY);
    const float* S = in(kGradSaved) + d * rows * KH;
    const float* dy = in(kGradDY);
    const float* dyh = in(kGradDYh);
    const float* dyc = lstm ? in(kGradDYc) : nullptr;
    float* dg = scratch + dg_off_ + d * GH;        // row stride ldg_
    float* dgh = scratch + dh_side_off_ + d * GH;  // R-side gate gradients (lbr 1), else dg
    float* hp = scratch + hp_off_;
    float* dh = scratch + dh_off_;
    float* dc = scratch + dc_off_;
    float* carry = scratch + carry_off_;
    float* da = scratch + da_off_;
    const int nthr = team.nthr;
    const bool rev = s.is_reverse(d);
    // The time step before t in the forward's order, or -1 at its first step.
    auto prev_of = [&](int64_t t) -> int64_t {
      const int64_t p = rev ? t + 1 : t - 1;
      return p < 0 || p >= T ? -1 : p;
    };
    // c_prev of row (t, b): S's c of the previous step (a PhasedLSTM's: c_t after the time
    // gate), initial_c or nullptr (zeros).
    const int64_t c_block = phased_ ? kPhasedSavedCt : 4;
    auto c_prev = [&](int64_t t, int64_t b) -> const float* {
      const int64_t p = prev_of(t);
      if (p >= 0) return S + rnn_row(s, p, b) * KH + c_block * H;
      return c0 ? c0 + s.state_row(d, b) : nullptr;
    };
    PhasedInputs ph;  // the time gate, evaluated again per row (lstm_rows)
    if (phased_) {
      ph.times = in(kGradTimes);
      ph.shift = in(kGradShift) + d * H;
      ph.r_on = in(kGradROn) + d * H;
      ph.alpha = g_.alpha;
      ph.tau = in(kGradTau) + d * H;
      double* inv_tau = reinterpret_cast<double*>(scratch + inv_tau_off_);
      for (int64_t j = 0; j < H; ++j) inv_tau[j] = 1.0 / static_cast<double>(ph.tau[j]);
      ph.inv_tau = inv_tau;
    }
    float* dk = phased_ ? scratch + dk_off_ : nullptr;  // [3][rows][H], see lstm_rows

    // H_prev in X's row order (the dR GEMM's operand and the GRU's h_prev).
    rnn_train::for_rows(T, B * H, nthr, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t p = prev_of(t);
        for (int64_t b = 0; b < B; ++b) {
          float* dst = hp + rnn_row(s, t, b) * H;
          const float* src = p >= 0 ? y + s.y_row(p, d, b) : h0 ? h0 + s.state_row(d, b) : nullptr;
          if (src)
            std::memcpy(dst, src, H * sizeof(float));
          else
            std::fill(dst, dst + H, 0.0f);
        }
      }
    });
    for (int64_t b = 0; b < B; ++b) {
      if (dyh)
        std::memcpy(dh + b * H, dyh + s.state_row(d, b), H * sizeof(float));
      else
        std::fill(dh + b * H, dh + (b + 1) * H, 0.0f);
      if (!lstm) continue;
      if (dyc)
        std::memcpy(dc + b * H, dyc + s.state_row(d, b), H * sizeof(float));
      else
        std::fill(dc + b * H, dc + (b + 1) * H, 0.0f);
    }

    const bool walk = lstm && rnn_train::walk_batch_rows(B, nthr);
    if (walk) {
      // One parallel region: each thread walks every step over its own batch rows (rows are
      // independent, so no barrier): its rows' gate gradients, then dh_rows = dgates_rows R.
#pragma omp parallel num_threads(std::max(1, std::min(nthr, team_)))
      {
        const int m = omp_get_thread_num(), n = omp_get_num_threads();
        const auto [b0, b1] = team_range(B, m, n);
        for (int64_t k = T - 1; k >= 0 && b1 > b0; --k) {
          const int64_t t = rev ? T - 1 - k : k;
          if (phased_) {
            lstm_rows(t, b0, b1, d, c_prev, dy, peep, S, dh, dc, dg, hp, dk, carry, &ph,
                      scratch + gate_off_ + m * gate_floats_);
            rows_gemm_.run(r, dg + rnn_row(s, t, b0) * ldg_, dh + b0 * H, b1 - b0);
            for (int64_t e = b0 * H; e < b1 * H; ++e) dh[e] += carry[e];
          } else {
            lstm_rows(t, b0, b1, d, c_prev, dy, peep, S, dh, dc, dg);
            rows_gemm_.run(r, dg + rnn_row(s, t, b0) * ldg_, dh + b0 * H, b1 - b0);
          }
        }
      }
    }
    for (int64_t k = walk ? -1 : T - 1; k >= 0; --k) {  // the team-wide steps
      const int64_t t = rev ? T - 1 - k : k;
      const int64_t row0 = rnn_row(s, t, 0);
      if (kind_ == RnnCellKind::kRnn) {
        const RnnActivation act = s.activation[d];
        rnn_train::for_rows(B, 5 * H, nthr, [&](int64_t b0, int64_t b1, int) {
          for (int64_t b = b0; b < b1; ++b) {
            const int64_t row = rnn_row(s, t, b);
            const float* h = S + row * KH;
            const float* dyr = dy ? dy + s.y_row(t, d, b) : nullptr;
            float* dpre = dg + row * ldg_;
            for (int64_t j = 0; j < H; ++j) {
              const float dhj = dh[b * H + j] + (dyr ? dyr[j] : 0.0f);
              const float slope = act == RnnActivation::kTanh      ? 1.0f - h[j] * h[j]
                                  : act == RnnActivation::kSigmoid ? h[j] * (1.0f - h[j])
                                                                   : (h[j] > 0.0f ? 1.0f : 0.0f);
              dpre[j] = dhj * slope;
            }
          }
        });
        if (!step_.run(dg + row0 * ldg_, r, dh, scratch)) return false;
        continue;
      }
      if (phased_) {
        // At most team_ threads: one gate buffer each.
        rnn_train::for_rows(B, 40 * H, std::min(nthr, team_), [&](int64_t b0, int64_t b1, int m) {
          lstm_rows(t, b0, b1, d, c_prev, dy, peep, S, dh, dc, dg, hp, dk, carry, &ph,
                    scratch + gate_off_ + m * gate_floats_);
        });
        if (!step_.run(dg + row0 * ldg_, r, dh, scratch, carry)) return false;
        continue;
      }
      if (lstm) {
        rnn_train::for_rows(B, 30 * H, nthr, [&](int64_t b0, int64_t b1, int) {
          lstm_rows(t, b0, b1, d, c_prev, dy, peep, S, dh, dc, dg);
        });
        if (!step_.run(dg + row0 * ldg_, r, dh, scratch)) return false;
        continue;
      }
      rnn_train::for_rows(B, 20 * H, nthr, [&](int64_t b0, int64_t b1, int) {
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t row = rnn_row(s, t, b);
          gru_row(S + row * KH, hp + row * H, dy ? dy + s.y_row(t, d, b) : nullptr, dh + b * H,
                  carry + b * H, dg + row * ldg_, lbr1_ ? dgh + row * ldg_ : nullptr);
        }
      });
      if (lbr0_) {
        // da = dn Rh, then the reset gate's gradient and the rest of dh_prev's direct part.
        if (!step_a_.run(dg + row0 * ldg_ + 2 * H, r + 2 * H * H, da, scratch)) return false;
        rnn_train::for_rows(B, 10 * H, nthr, [&](int64_t b0, int64_t b1, int) {
          for (int64_t b = b0; b < b1; ++b) {
            const int64_t row = rnn_row(s, t, b);
            const float* rr = S + row * KH + H;
            const float* h_prev = hp + row * H;
            float* dr = dg + row * ldg_ + H;
            for (int64_t j = 0; j < H; ++j) {
              const float a = da[b * H + j];
              dr[j] = a * h_prev[j] * rr[j] * (1.0f - rr[j]);
              carry[b * H + j] += a * rr[j];
            }
          }
        });
      }
      if (!step_.run(lbr1_ ? dgh + row0 * ldg_ : dg + row0 * ldg_, r, dh, scratch, carry))
        return false;
    }

    // d initial states.
    if (float* dh0 = out(io, kRnnInitialH))
      for (int64_t b = 0; b < B; ++b)
        std::memcpy(dh0 + s.state_row(d, b), dh + b * H, H * sizeof(float));
    if (float* dc0 = out(io, kRnnInitialC))
      for (int64_t b = 0; b < B; ++b)
        std::memcpy(dc0 + s.state_row(d, b), dc + b * H, H * sizeof(float));
    // Weight gradients: one GEMM each over all steps.
    if (float* dw = out(io, kRnnW))
      if (!dw_.run(dg, x, dw + d * GH * I, scratch)) return false;
    if (float* dr = out(io, kRnnR)) {
      if (!dr_.run(dgh, hp, dr + d * GH * H, scratch)) return false;
      if (lbr0_ && !dr_h_.run(dg + 2 * H, S + 3 * H, dr + d * GH * H + 2 * H * H, scratch))
        return false;
    }
    // The time gate's parameters: sums over the rows in a fixed order, units split.
    float* dtau = out(io, kPhasedTau);
    float* dshift = out(io, kPhasedShift);
    float* dron = out(io, kPhasedROn);
    if (dtau || dshift || dron)
      rnn_train::for_rows(H, 3 * rows, nthr, [&](int64_t j0, int64_t j1, int) {
        time_gate_grads(ph, dk, j0, j1, dtau ? dtau + d * H : nullptr,
                        dshift ? dshift + d * H : nullptr, dron ? dron + d * H : nullptr);
      });
    // Bias and peephole gradients: column sums over the rows in a fixed order, columns split.
    float* db = out(io, kRnnB);
    float* dp = out(io, kRnnP);
    if (db || dp) {
      rnn_train::for_rows(GH, rows, nthr, [&](int64_t j0, int64_t j1, int) {
        if (db) {
          float* dwb = db + d * 2 * GH;
          float* drb = dwb + GH;
          column_sums(dg, rows, j0, j1, dwb);
          if (dgh == dg)  // the R-side gate gradients are the x side's (all but GRU lbr 1)
            std::copy(dwb + j0, dwb + j1, drb + j0);
          else
            column_sums(dgh, rows, j0, j1, drb);
        }
        if (dp) {
          // Gate columns [0, H) i, [H, 2H) o, [2H, 3H) f map to P's blocks i, o, f.
          float* p = dp + d * 3 * H;
          const int64_t e0 = std::min(j0, 3 * H), e1 = std::min(j1, 3 * H);
          for (int64_t j = e0; j < e1; ++j) p[j] = 0.0f;
          for (int64_t t = 0; t < T; ++t)
            for (int64_t b = 0; b < B; ++b) {
              const int64_t row = rnn_row(s, t, b);
              const float* gx = dg + row * ldg_;
              const float* cp = c_prev(t, b);
              const float* cn = S + row * KH + 4 * H;  // c (PhasedLSTM: the candidate c~)
              for (int64_t j = e0; j < e1; ++j) {
                const int64_t u = j % H;
                const float cv = j / H == 1 ? cn[u] : (cp ? cp[u] : 0.0f);
                p[j] += gx[j] * cv;
              }
            }
        }
      });
    }
    return true;
  }

  // sum[j] = sum over rows of m[row * ldg_ + j] for j in [j0, j1), rows in order.
  void column_sums(const float* m, int64_t rows, int64_t j0, int64_t j1,
                   float* __restrict sum) const noexcept {
    std::fill(sum + j0, sum + j1, 0.0f);
    for (int64_t row = 0; row < rows; ++row) {
      const float* __restrict r = m + row * ldg_;
      for (int64_t j = j0; j < j1; ++j) sum[j] += r[j];
    }
  }

  // Rows [b0, b1) of step t (direction d): the gate gradients into dg, dc updated
  // (lstm_gates_backward, vectorized). Every matrix's rows are affine in b, so each is a base
  // pointer at b = 0 and a row stride. A PhasedLSTM (phased_: hp, dk, carry, ph and gate_buf
  // given) takes its time gate in the same pass (LstmBackwardArgs), row by row: the row's gate
  // planes into gate_buf (4 H floats, phased_gate), then dk's planes [3][rows][H] for the gate
  // parameters' sums (time_gate_grads) and the carry (1 - k) dL/dh_t, which skips R.
  template <class CPrev>
  void lstm_rows(int64_t t, int64_t b0, int64_t b1, int d, const CPrev& c_prev, const float* dy,
                 const float* peep, const float* S, const float* dh, float* dc, float* dg,
                 const float* hp = nullptr, float* dk = nullptr, float* carry = nullptr,
                 const PhasedInputs* ph = nullptr, float* gate_buf = nullptr) const noexcept {
    const RnnSpec& s = g_.fwd;
    const int64_t H = s.hidden, KH = rnn_saved_blocks(s) * H;
    const int64_t rs = s.layout == 0 ? 1 : s.seq_len;  // X rows between batch rows of a step
    // The gate kernel reads the PhasedLSTM's saved blocks by these numbers (rnn_gates.h).
    static_assert(kPhasedSavedCt == 5);
    LstmBackwardArgs a;
    if (carry) {
      a.phased_carry = carry;
      a.ld_phased_carry = H;
      a.h_prev = hp + rnn_row(s, t, 0) * H;
      a.ld_h_prev = rs * H;
      a.dk_planes = dk + rnn_row(s, t, 0) * H;
      a.ld_dk = rs * H;
      a.dk_plane = s.seq_len * s.batch * H;
    }
    a.hidden = H;
    a.saved = S + rnn_row(s, t, 0) * KH;
    a.ld_saved = rs * KH;
    const float* cp0 = c_prev(t, 0);
    a.c_prev = cp0;
    if (cp0) a.ld_c_prev = s.batch > 1 ? c_prev(t, 1) - cp0 : 0;
    if (dy) {
      a.dy = dy + s.y_row(t, d, 0);
      a.ld_dy = s.y_row(t, d, 1) - s.y_row(t, d, 0);
    }
    a.peephole = peep;
    a.dh = dh;
    a.ld_dh = H;
    a.dc = dc;
    a.ld_dc = H;
    a.dgates = dg + rnn_row(s, t, 0) * ldg_;
    a.ld_dgates = rs * ldg_;
    if (!carry) {
      lstm_gates_backward(a, GateTile{b0, b1, 0, H});
      return;
    }
    PhasedGateArgs pg;
    pg.n = H;
    pg.alpha = ph->alpha;
    pg.shift = ph->shift;
    pg.inv_tau = ph->inv_tau;
    pg.r_on = ph->r_on;
    pg.out = gate_buf;
    a.gate = gate_buf;
    a.ld_gate = 0;  // one row per call: the buffer serves every row
    for (int64_t b = b0; b < b1; ++b) {
      pg.ts = ph->times[rnn_row(s, t, b)];
      phased_gate(pg);
      lstm_gates_backward(a, GateTile{b, b + 1, 0, H});
    }
  }

  // d tau, d shift, d r_on of units [j0, j1) from lstm_rows' dk planes: phi = u - floor(u),
  // u = (ts - shift) / tau, so dphi/dshift = -1/tau and dphi/dtau = -u/tau. Rows in order,
  // accumulated in double.
  void time_gate_grads(const PhasedInputs& p, const float* dk, int64_t j0, int64_t j1, float* dtau,
                       float* dshift, float* dron) const noexcept {
    const RnnSpec& s = g_.fwd;
    const int64_t H = s.hidden, rows = s.seq_len * s.batch, plane = rows * H;
    constexpr int64_t kCols = 16;  // units per pass: the rows are read 16 floats at a time
    for (int64_t c0 = j0; c0 < j1; c0 += kCols) {
      const int64_t c1 = std::min(j1, c0 + kCols);
      double ss[kCols] = {}, st[kCols] = {}, sr[kCols] = {};
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t j = c0; j < c1; ++j) {
          ss[j - c0] += dk[row * H + j];
          st[j - c0] += dk[plane + row * H + j];
          sr[j - c0] += dk[2 * plane + row * H + j];
        }
      for (int64_t j = c0; j < c1; ++j) {
        if (dshift) dshift[j] = static_cast<float>(-ss[j - c0] * p.inv_tau[j]);
        if (dtau) dtau[j] = static_cast<float>(-st[j - c0] * p.inv_tau[j]);
        if (dron) dron[j] = static_cast<float>(sr[j - c0]);
      }
    }
  }

  // One GRU row: dgates (x side, and for lbr 0 the R side too; lbr 0 fills dr later), dgh (lbr
  // 1: R side), carry = the part of dh_prev that does not go through R (dh z).
  void gru_row(const float* sv, const float* h_prev, const float* dy, const float* dh, float* carry,
               float* dgates, float* dgh) const noexcept {
    const int64_t H = g_.fwd.hidden;
    const float *z = sv, *rr = sv + H, *n = sv + 2 * H, *q = sv + 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const float dhj = dh[j] + (dy ? dy[j] : 0.0f);
      const float dn = dhj * (1.0f - z[j]) * (1.0f - n[j] * n[j]);
      const float dz = dhj * (h_prev[j] - n[j]) * z[j] * (1.0f - z[j]);
      carry[j] = dhj * z[j];
      dgates[j] = dz;
      dgates[2 * H + j] = dn;
      if (dgh) {
        const float dr = dn * q[j] * rr[j] * (1.0f - rr[j]);
        dgates[H + j] = dr;
        dgh[j] = dz;
        dgh[H + j] = dr;
        dgh[2 * H + j] = dn * rr[j];
      }
    }
  }

  RnnCellKind kind_;
  bool phased_ = false;
  RnnGradSpec g_;
  int team_ = 1;
  bool lbr0_ = false, lbr1_ = false;
  int64_t ldg_ = 0;
  Matmul step_, step_a_, dx_, dw_, dr_, dr_h_;
  TiledGemm rows_gemm_;
  size_t scratch_floats_ = 0, dg_off_ = 0, dh_side_off_ = 0, hp_off_ = 0, dh_off_ = 0, dc_off_ = 0,
         carry_off_ = 0, da_off_ = 0, dk_off_ = 0, inv_tau_off_ = 0, gate_off_ = 0,
         gate_floats_ = 0;
};

Result<std::vector<TensorDesc>> infer_rnn_grad(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(RnnGradSpec g,
                          rnn_grad_spec(ctx.node, ctx.inputs, ctx.num_outputs, ctx.where));
  std::vector<TensorDesc> out;
  for (int slot : g.grads) out.push_back(*ctx.inputs[grad_input_slot(slot)]);
  return out;
}

CostHint cost_rnn_grad(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                       std::span<const TensorDesc* const> outputs) {
  (void)node;
  CostHint c;
  const TensorDesc& w = *inputs[kRnnW];
  const TensorDesc& r = *inputs[kRnnR];
  const TensorDesc& y = *inputs[kGradY];
  const double tdbh = static_cast<double>(y.numel());
  const double h = static_cast<double>(r.shape[2]), i = static_cast<double>(w.shape[2]);
  const double g = static_cast<double>(w.shape[1]) / std::max(1.0, h);
  // dh_prev, dR, dW and dX GEMMs, twice the forward's, plus the element-wise passes.
  c.flops = 4.0 * tdbh * g * (i + h) + tdbh * g * 20.0;
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  for (const TensorDesc* d : outputs) c.bytes += static_cast<double>(d->bytes());
  return c;
}

std::unique_ptr<Kernel> make_lstm_bptt() {
  return std::make_unique<RnnBackwardKernel>(RnnCellKind::kLstm, false);
}
std::unique_ptr<Kernel> make_gru_bptt() {
  return std::make_unique<RnnBackwardKernel>(RnnCellKind::kGru, false);
}
std::unique_ptr<Kernel> make_rnn_bptt() {
  return std::make_unique<RnnBackwardKernel>(RnnCellKind::kRnn, false);
}
std::unique_ptr<Kernel> make_phased_lstm_bptt() {
  return std::make_unique<RnnBackwardKernel>(RnnCellKind::kLstm, true);
}

}  // namespace

void register_rnn_grad_ops(Registry& r) {
  r.add({"LSTMGrad", infer_rnn_grad, cost_rnn_grad, false, {make_lstm_bptt}});
  r.add({"GRUGrad", infer_rnn_grad, cost_rnn_grad, false, {make_gru_bptt}});
  r.add({"RNNGrad", infer_rnn_grad, cost_rnn_grad, false, {make_rnn_bptt}});
}

void register_phased_lstm_grad_op(Registry& r) {
  r.add({"PhasedLSTMGrad", infer_rnn_grad, cost_rnn_grad, false, {make_phased_lstm_bptt}});
}

}  // namespace graphi::ops
