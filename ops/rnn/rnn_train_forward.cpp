// The training form of the LSTM / GRU sequence ops (ops/rnn/rnn_train.h): the forward pass that
// also writes S, the activations the backward reads. Per direction: one GEMM X W^T over all
// steps straight into S's gate columns, then per step one GEMM h_prev R^T (two for the canonical
// GRU) and one element-wise pass that turns S's pre-activations into activations in place and
// writes c, h and Y. oneDNN runs the hoisted GEMM on the team. The LSTM's steps run in ONE
// parallel region where each thread walks all steps over its own batch rows (rows of a batch are
// independent, so the walk needs no barrier): a LIBXSMM GEMM h_rows R^T on a packed R^T, then the
// rows' gates. The other cells run each step as a oneDNN GEMM on the team plus an element-wise
// pass that splits the rows. The inference path (the WCS kernel) is untouched.
#include <omp.h>

#include <cstring>

#include "ops/activations.h"
#include "ops/rnn/phased_lstm.h"
#include "ops/rnn/rnn_gates.h"
#include "ops/rnn/rnn_train.h"
#include "ops/rnn/rnn_train_util.h"
#include "ops/rnn/tiled_gemm.h"

namespace graphi::ops {
namespace {

using rnn_train::aligned_floats;
using rnn_train::Matmul;
using rnn_train::PhasedInputs;

class RnnTrainForwardKernel final : public Kernel {
 public:
  RnnTrainForwardKernel(RnnCellKind kind, bool phased) : kind_(kind), phased_(phased) {}
  const char* name() const override {
    return phased_                       ? "phased_lstm_train_forward"
           : kind_ == RnnCellKind::kLstm ? "lstm_train_forward"
           : kind_ == RnnCellKind::kGru  ? "gru_train_forward"
                                         : "rnn_train_forward";
  }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return scratch_floats_ * sizeof(float); }

  Status init(const KernelContext& ctx) override {
    if (phased_) {
      GRAPHI_ASSIGN_OR_RETURN(PhasedSpec ps,
                              phased_spec(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
      s_ = ps.lstm;
      alpha_ = ps.alpha;
    } else {
      GRAPHI_ASSIGN_OR_RETURN(s_, rnn_spec(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    }
    if (!s_.training) return Status::unsupported("not the training form (graphi_training = 1)");
    if (std::string why = rnn_grad_unsupported(s_); !why.empty())
      return Status::unsupported(ctx.where + ": " + why);
    team_ = std::max(1, ctx.team_size);
    const int64_t B = s_.batch, H = s_.hidden, I = s_.input_size, G = s_.gates;
    const int64_t rows = s_.seq_len * B, KH = rnn_saved_blocks(s_) * H;
    lbr0_ = kind_ == RnnCellKind::kGru && !s_.linear_before_reset;
    // X W_d^T into S_d's first G*H columns.
    GRAPHI_ASSIGN_OR_RETURN(
        hoist_, Matmul::create(rnn_train::dense(rows, I), rnn_train::transposed(I, G * H, I),
                               rnn_train::strided(rows, G * H, KH), false, team_));
    // h_prev R^T (canonical GRU: the z and r gates only, then (r * h_prev) Rh^T).
    rec_cols_ = lbr0_ ? 2 * H : G * H;
    GRAPHI_ASSIGN_OR_RETURN(
        rec_, Matmul::create(rnn_train::dense(B, H), rnn_train::transposed(H, rec_cols_, H),
                             rnn_train::dense(B, rec_cols_), false, team_));
    if (kind_ == RnnCellKind::kLstm) {
      // The batch-row walk: R^T packed in panels of kPanel columns, one GEMM per step and thread
      // on the thread's rows (every row count a split of B over 1..team_ threads can give).
      rows_gemm_ = TiledGemm::create_panels(G * H, H, kPanel, H, G * H,
                                            rnn_train::team_row_counts(B, team_));
    }
    if (lbr0_) {
      GRAPHI_ASSIGN_OR_RETURN(rec_h_,
                              Matmul::create(rnn_train::dense(B, H), rnn_train::transposed(H, H, H),
                                             rnn_train::dense(B, H), false, team_));
    }
    size_t off = aligned_floats(static_cast<int64_t>(
        (std::max({hoist_.scratch_bytes(), rec_.scratch_bytes(), rec_h_.scratch_bytes()}) + 3) /
        4));
    auto take = [&](int64_t floats) {
      const size_t at = off;
      off += aligned_floats(floats);
      return at;
    };
    h_off_ = take(B * H);
    c_off_ = take(B * H);
    gh_off_ = take(B * rec_cols_);
    ghh_off_ = take(B * H);
    rh_off_ = take(B * H);
    if (kind_ == RnnCellKind::kLstm) {
      rt_off_ = take(TiledGemm::packed_floats(G * H, H, kPanel));
      bias_off_ = take(G * H);
    }
    if (phased_) {
      cand_c_off_ = take(B * H);  // the candidate state c~ and h~ of a step, before the blend
      cand_h_off_ = take(B * H);
      inv_tau_off_ = take(2 * H);  // H doubles
    }
    scratch_floats_ = off;
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* scratch = static_cast<float*>(team.scratch);
    for (int d = 0; d < s_.num_directions; ++d)
      if (!direction(team, io, d, scratch)) {
        team.fail(std::string(name()) + ": oneDNN execution failed", /*internal=*/true);
        return;
      }
  }

 private:
  bool direction(const TeamContext& team, const Buffers& io, int d, float* scratch) const noexcept {
    const int64_t B = s_.batch, H = s_.hidden, I = s_.input_size, G = s_.gates, T = s_.seq_len;
    const int64_t rows = T * B, KH = rnn_saved_blocks(s_) * H;
    auto in = [&](int i) { return static_cast<const float*>(io.inputs[i]); };
    PhasedInputs ph;
    if (phased_) {
      ph.times = in(kPhasedTimes);
      ph.shift = in(kPhasedShift) + d * H;
      ph.r_on = in(kPhasedROn) + d * H;
      const float* tau = in(kPhasedTau) + d * H;
      double* inv_tau = reinterpret_cast<double*>(scratch + inv_tau_off_);
      for (int64_t j = 0; j < H; ++j) inv_tau[j] = 1.0 / static_cast<double>(tau[j]);
      ph.inv_tau = inv_tau;
      ph.alpha = alpha_;
    }
    const PhasedInputs* phased = phased_ ? &ph : nullptr;
    const float* x = in(kRnnX);
    const float* w = in(kRnnW) + d * G * H * I;
    const float* r = in(kRnnR) + d * G * H * H;
    const float* wb = s_.has_bias ? in(kRnnB) + d * 2 * G * H : nullptr;
    const float* rb = wb ? wb + G * H : nullptr;
    const float* h0 = s_.has_initial_h ? in(kRnnInitialH) : nullptr;
    const float* c0 = s_.has_initial_c ? in(kRnnInitialC) : nullptr;
    const float* peep = s_.has_peephole ? in(kRnnP) + d * 3 * H : nullptr;
    const bool lstm = kind_ == RnnCellKind::kLstm;
    float* y = static_cast<float*>(io.outputs[0]);
    float* yh = static_cast<float*>(io.outputs[1]);
    float* yc = lstm ? static_cast<float*>(io.outputs[2]) : nullptr;
    float* S = static_cast<float*>(io.outputs[lstm ? 3 : 2]) + d * rows * KH;
    float* h = scratch + h_off_;
    float* c = scratch + c_off_;
    float* gh = scratch + gh_off_;
    float* ghh = scratch + ghh_off_;
    float* rh = scratch + rh_off_;
    const int nthr = team.nthr;

    if (!hoist_.run(x, w, S, scratch)) return false;
    for (int64_t b = 0; b < B; ++b) {
      if (h0)
        std::memcpy(h + b * H, h0 + s_.state_row(d, b), H * sizeof(float));
      else
        std::fill(h + b * H, h + (b + 1) * H, 0.0f);
      if (!lstm) continue;
      if (c0)
        std::memcpy(c + b * H, c0 + s_.state_row(d, b), H * sizeof(float));
      else
        std::fill(c + b * H, c + (b + 1) * H, 0.0f);
    }
    // The LSTM's gates read one bias vector, Wb + Rb.
    float* bias = lstm && wb ? scratch + bias_off_ : nullptr;
    for (int64_t j = 0; bias && j < G * H; ++j) bias[j] = wb[j] + rb[j];
    if (lstm && rnn_train::walk_batch_rows(B, nthr)) {
      lstm_walk(r, bias, peep, phased, S, h, c, gh, y, scratch, d, nthr);
    } else {
      for (int64_t k = 0; k < T; ++k)
        if (!step(k, d, r, wb, rb, bias, peep, phased, S, h, c, gh, ghh, rh, y, scratch, nthr))
          return false;
    }
    for (int64_t b = 0; b < B; ++b) {
      std::memcpy(yh + s_.state_row(d, b), h + b * H, H * sizeof(float));
      if (yc) std::memcpy(yc + s_.state_row(d, b), c + b * H, H * sizeof(float));
    }
    return true;
  }

  // The LSTM's steps: one parallel region; thread m packs its share of R^T, then (after one
  // barrier) walks every step over its batch rows: gh_rows = h_rows R^T, then the rows' gates
  // (lstm_rows). A row's result does not depend on the split (the same GEMM code per row;
  // LIBXSMM's k order is per element).
  void lstm_walk(const float* r, const float* bias, const float* peep, const PhasedInputs* phased,
                 float* S, float* h, float* c, float* gh, float* y, float* scratch, int d,
                 int nthr) const noexcept {
    const int64_t B = s_.batch, H = s_.hidden, T = s_.seq_len, GH = 4 * H;
    float* rt = scratch + rt_off_;
#pragma omp parallel num_threads(std::max(1, std::min(nthr, team_)))
    {
      const int m = omp_get_thread_num(), n = omp_get_num_threads();
      const auto [c0, c1] = team_range(GH, m, n);
      for (int64_t col = c0; col < c1; ++col)
        for (int64_t q = 0; q < H; ++q)
          rt[TiledGemm::panel_offset(col, q, H, kPanel)] = r[col * H + q];
#pragma omp barrier
      const auto [b0, b1] = team_range(B, m, n);
      for (int64_t k = 0; k < T && b1 > b0; ++k) {
        const int64_t t = s_.is_reverse(d) ? T - 1 - k : k;
        rows_gemm_.run(rt, h + b0 * H, gh + b0 * GH, b1 - b0);
        lstm_rows(t, d, b0, b1, bias, peep, phased, S, gh, h, c, y, scratch);
      }
    }
  }

  // Rows [b0, b1) of LSTM step t (direction d): S's rows hold x W^T on entry, the activations
  // the backward reads on exit (lstm_gates, vectorized, in place), with gh = h_prev R^T; the
  // state c, h and Y's rows updated. A PhasedLSTM's gates write the candidate state (c~, h~)
  // to scratch, then the time gate blends it with (c_prev, h_prev) into c, h, S's c_t and h~.
  void lstm_rows(int64_t t, int d, int64_t b0, int64_t b1, const float* bias, const float* peep,
                 const PhasedInputs* phased, float* S, const float* gh, float* h, float* c,
                 float* y, float* scratch) const noexcept {
    const int64_t H = s_.hidden, KH = rnn_saved_blocks(s_) * H;
    LstmGateArgs a;
    a.hidden = H;
    a.gates_x = a.saved = S + rnn_row(s_, t, 0) * KH;
    a.ld_gates_x = a.ld_saved = (s_.layout == 0 ? 1 : s_.seq_len) * KH;
    a.gates_h = gh;
    a.ld_gates_h = 4 * H;
    a.bias = bias;
    a.peephole = peep;
    a.c_prev = a.c = c;
    a.ld_c_prev = a.ld_c = H;
    a.h = h;
    a.ld_h = H;
    if (phased) {
      a.c = scratch + cand_c_off_;
      a.h = scratch + cand_h_off_;
    }
    lstm_gates(a, GateTile{b0, b1, 0, H});
    if (phased) blend(t, b0, b1, *phased, a.c, a.h, S, h, c);
    float* yt = y + s_.y_row(t, d, 0);
    const int64_t ld_y = s_.y_row(0, d, 1) - s_.y_row(0, d, 0);
    for (int64_t b = b0; b < b1; ++b) std::memcpy(yt + b * ld_y, h + b * H, H * sizeof(float));
  }

  // The PhasedLSTM's time gate on rows [b0, b1) of step t: c = k c~ + (1 - k) c,
  // h = k h~ + (1 - k) h (the state in place); S's c_t written (the backward evaluates the
  // gate again, phased_gate, and takes h~ = o tanh(c~) from the LSTM's blocks).
  void blend(int64_t t, int64_t b0, int64_t b1, const PhasedInputs& p, const float* cand_c,
             const float* cand_h, float* S, float* h, float* c) const noexcept {
    const int64_t H = s_.hidden, KH = rnn_saved_blocks(s_) * H;
    for (int64_t b = b0; b < b1; ++b) {
      const double ts = p.times[rnn_row(s_, t, b)];
      float* row = S + rnn_row(s_, t, b) * KH;
      float* cb = c + b * H;
      float* hb = h + b * H;
      const float* cc = cand_c + b * H;
      const float* hc = cand_h + b * H;
      PhasedBlendArgs g;
      g.n = H;
      g.ts = ts;
      g.alpha = p.alpha;
      g.shift = p.shift;
      g.inv_tau = p.inv_tau;
      g.r_on = p.r_on;
      g.cand_c = cc;
      g.cand_h = hc;
      g.c = cb;
      g.h_prev = hb;
      g.h = hb;
      g.saved_c = row + kPhasedSavedCt * H;
      phased_blend(g);
    }
  }

  // One step k: h_prev R^T on the team (oneDNN), then the rows' gates split over the team.
  bool step(int64_t k, int d, const float* r, const float* wb, const float* rb,
            const float* lstm_bias, const float* peep, const PhasedInputs* phased, float* S,
            float* h, float* c, float* gh, float* ghh, float* rh, float* y, float* scratch,
            int nthr) const noexcept {
    const int64_t B = s_.batch, H = s_.hidden, T = s_.seq_len;
    const int64_t KH = rnn_saved_blocks(s_) * H;
    const int64_t t = s_.is_reverse(d) ? T - 1 - k : k;
    if (!rec_.run(h, r, gh, scratch)) return false;
    if (kind_ == RnnCellKind::kRnn) {
      rnn_train::for_rows(B, 10 * H, nthr, [&](int64_t b0, int64_t b1, int) {
        for (int64_t b = b0; b < b1; ++b)
          vanilla_row(S + rnn_row(s_, t, b) * KH, gh + b * H, wb, rb, s_.activation[d], h + b * H,
                      y + s_.y_row(t, d, b));
      });
      return true;
    }
    if (kind_ == RnnCellKind::kLstm) {
      rnn_train::for_rows(B, 20 * H, nthr, [&](int64_t b0, int64_t b1, int) {
        lstm_rows(t, d, b0, b1, lstm_bias, peep, phased, S, gh, h, c, y, scratch);
      });
      return true;
    }
    // GRU.
    const float* wbh = wb ? wb + 2 * H : nullptr;
    const float* rbh = rb ? rb + 2 * H : nullptr;
    if (!lbr0_) {
      rnn_train::for_rows(B, 20 * H, nthr, [&](int64_t b0, int64_t b1, int) {
        for (int64_t b = b0; b < b1; ++b) {
          float* row = S + rnn_row(s_, t, b) * KH;
          const float* g = gh + b * 3 * H;
          gates_zr(row, g, wb, rb);
          float* q = row + 3 * H;  // h_prev Rh^T + Rbh
          for (int64_t j = 0; j < H; ++j) q[j] = g[2 * H + j] + (rbh ? rbh[j] : 0.0f);
          float* n = row + 2 * H;
          for (int64_t j = 0; j < H; ++j) n[j] += (wbh ? wbh[j] : 0.0f) + row[H + j] * q[j];
          tanh_f32_inplace(n, H);
          gru_output(row, h + b * H, y + s_.y_row(t, d, b));
        }
      });
      return true;
    }
    // Canonical GRU: z, r first; then (r * h_prev) Rh^T for the candidate.
    rnn_train::for_rows(B, 10 * H, nthr, [&](int64_t b0, int64_t b1, int) {
      for (int64_t b = b0; b < b1; ++b) {
        float* row = S + rnn_row(s_, t, b) * KH;
        gates_zr(row, gh + b * 2 * H, wb, rb);
        float* q = row + 3 * H;  // r * h_prev
        for (int64_t j = 0; j < H; ++j) q[j] = row[H + j] * h[b * H + j];
        std::memcpy(rh + b * H, q, H * sizeof(float));
      }
    });
    if (!rec_h_.run(rh, r + 2 * H * H, ghh, scratch)) return false;
    rnn_train::for_rows(B, 20 * H, nthr, [&](int64_t b0, int64_t b1, int) {
      for (int64_t b = b0; b < b1; ++b) {
        float* row = S + rnn_row(s_, t, b) * KH;
        float* n = row + 2 * H;
        for (int64_t j = 0; j < H; ++j)
          n[j] += ghh[b * H + j] + (rbh ? rbh[j] : 0.0f) + (wbh ? wbh[j] : 0.0f);
        tanh_f32_inplace(n, H);
        gru_output(row, h + b * H, y + s_.y_row(t, d, b));
      }
    });
    return true;
  }

  // One RNN row: row = x W^T on entry, h = act(row + h_prev R^T + Wb + Rb) on exit; the state
  // h and y = h.
  void vanilla_row(float* row, const float* gh, const float* wb, const float* rb, RnnActivation act,
                   float* h, float* y) const noexcept {
    const int64_t H = s_.hidden;
    for (int64_t j = 0; j < H; ++j) row[j] += gh[j] + (wb ? wb[j] + rb[j] : 0.0f);
    if (act == RnnActivation::kTanh) {
      tanh_f32_inplace(row, H);
    } else if (act == RnnActivation::kSigmoid) {
      sigmoid_f32_inplace(row, H);
    } else {
      for (int64_t j = 0; j < H; ++j) row[j] = row[j] > 0.0f ? row[j] : 0.0f;
    }
    std::memcpy(h, row, H * sizeof(float));
    std::memcpy(y, row, H * sizeof(float));
  }

  // z, r = sigmoid(x W^T (in row) + h_prev R^T (g) + Wb + Rb) into row[0, 2H).
  void gates_zr(float* row, const float* g, const float* wb, const float* rb) const noexcept {
    const int64_t H2 = 2 * s_.hidden;
    for (int64_t j = 0; j < H2; ++j) row[j] += g[j] + (wb ? wb[j] + rb[j] : 0.0f);
    sigmoid_f32_inplace(row, H2);
  }

  // h = (1 - z) * h~ + z * h_prev, in place in the state h; y = h.
  void gru_output(const float* row, float* h, float* y) const noexcept {
    const int64_t H = s_.hidden;
    const float* z = row;
    const float* n = row + 2 * H;
    for (int64_t j = 0; j < H; ++j) {
      h[j] = (1.0f - z[j]) * n[j] + z[j] * h[j];
      y[j] = h[j];
    }
  }

  RnnCellKind kind_;
  bool phased_ = false;
  double alpha_ = 0;
  RnnSpec s_;
  int team_ = 1;
  bool lbr0_ = false;
  int64_t rec_cols_ = 0;
  static constexpr int64_t kPanel = 32;  // R^T panel width of the LSTM walk
  Matmul hoist_, rec_, rec_h_;
  TiledGemm rows_gemm_;
  size_t scratch_floats_ = 0, h_off_ = 0, c_off_ = 0, gh_off_ = 0, ghh_off_ = 0, rh_off_ = 0,
         rt_off_ = 0, bias_off_ = 0, cand_c_off_ = 0, cand_h_off_ = 0, inv_tau_off_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_rnn_train_forward_kernel(RnnCellKind kind) {
  return std::make_unique<RnnTrainForwardKernel>(kind, false);
}
std::unique_ptr<Kernel> make_phased_lstm_train_forward_kernel() {
  return std::make_unique<RnnTrainForwardKernel>(RnnCellKind::kLstm, true);
}

}  // namespace graphi::ops
