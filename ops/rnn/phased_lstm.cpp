// PhasedLSTM op and kernel (see ops/rnn/phased_lstm.h).
//
// Packed layout (as ops/rnn/rnn_sequence.cpp's, simplified: no row split, no PCP choice): each
// direction's hidden units are cut into blocks of whole 16-unit lines, one block per team member
// (members beyond the blocks idle). Block [j0, j1) of width w has its own slabs Wp [I][ldw] and
// Rp [H][ldw] (at batch <= 2 Rp in panels one GEMV block wide instead), ldw = round_up(4w, 16),
// gate g of unit j0 + u at column g*w + u; bias (Wb + Rb)
// and peepholes use the same block layout. Gate buffers (hoisted X W^T and h R^T) hold direction
// d's block at columns d*dir_x + 4*j0 .. + 4w, so the fused gate kernel runs on gate_stride = w.
#include "ops/rnn/phased_lstm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <set>

#include "ops/rnn/gemv_rows.h"
#include "ops/rnn/rnn_gates.h"
#include "ops/rnn/rnn_sequence.h"
#include "ops/rnn/rnn_train.h"
#include "ops/rnn/spin_barrier.h"
#include "ops/rnn/tiled_gemm.h"
#include "ops/shape_rules.h"
#include "ops/xsmm.h"

namespace graphi::ops {

namespace {

constexpr int64_t kLine = 16;  // floats per 64-byte cache line
constexpr int kLstmInputs = 8;
constexpr int kPhasedInputs = 12;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

const char* phased_input_name(int i) {
  static const char* names[] = {"times", "tau", "shift", "r_on"};
  return names[i - kPhasedTimes];
}

}  // namespace

// Validates the node: the LSTM part through rnn_spec() (on a copy of the node that looks like an
// ONNX LSTM: op "LSTM", without alpha, the first eight inputs), then alpha and inputs 8..11.
Result<PhasedSpec> phased_spec(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                               size_t num_outputs, const std::string& where) {
  PhasedSpec s;
  if (inputs.size() != kPhasedInputs)
    return Status::invalid_graph(
        where +
        ": PhasedLSTM expects 12 inputs (X, W, R, B, sequence_lens, initial_h, "
        "initial_c, P, times, tau, shift, r_on; \"\" for absent optional ones), got " +
        std::to_string(inputs.size()));
  graph::Node lstm = node;
  lstm.op = "LSTM";
  lstm.attrs = graph::Attributes();
  for (const auto& [name, value] : node.attrs.all())
    if (name != "alpha") lstm.attrs.set(name, value);
  GRAPHI_ASSIGN_OR_RETURN(s.lstm, rnn_spec(lstm, inputs.first(kLstmInputs), num_outputs, where));
  s.lstm.phased = true;
  GRAPHI_ASSIGN_OR_RETURN(s.alpha,
                          graph::attr_float(node.attrs, where, "alpha", kPhasedLstmDefaultAlpha));
  if (!(s.alpha >= 0.0) || !std::isfinite(s.alpha))
    return Status::invalid_graph(where + ": attribute 'alpha' must be a finite number >= 0, got " +
                                 std::to_string(s.alpha));
  const RnnSpec& l = s.lstm;
  const int64_t D = l.num_directions, H = l.hidden;
  for (int i = kPhasedTimes; i <= kPhasedROn; ++i) {
    const std::string name = "input " + std::to_string(i) + " (" + phased_input_name(i) + ")";
    if (!inputs[i]) return Status::invalid_graph(where + ": " + name + " is required");
    const Shape want = i == kPhasedTimes
                           ? (l.layout == 0 ? Shape{l.seq_len, l.batch} : Shape{l.batch, l.seq_len})
                           : Shape{D, H};
    const std::string dims = i == kPhasedTimes ? (l.layout == 0 ? "[seq_length, batch_size]"
                                                                : "[batch_size, seq_length]")
                                               : "[num_directions, hidden_size]";
    if (inputs[i]->dtype != DType::kF32 || inputs[i]->shape != want)
      return Status::invalid_graph(where + ": " + name + " is " + inputs[i]->to_string() +
                                   ", expected float32" + shape_to_string(want) + " = " + dims);
  }
  return s;
}

namespace {

// One block of hidden units [j0, j1) of direction d.
struct Block {
  int d = 0;
  int64_t j0 = 0, j1 = 0;
  int64_t ldw = 0;                 // row stride of the block's W and R slabs
  int64_t wp_off = 0, rp_off = 0;  // slabs in the packed buffer
  TiledGemm hoist, rec;            // row-major slabs (ops/rnn/tiled_gemm.h)
};

class PhasedLstmKernel final : public Kernel {
 public:
  const char* name() const override { return "phased_lstm_wcs"; }
  size_t scratch_bytes() const override { return scratch_floats_ * sizeof(float); }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(PhasedSpec ps,
                            phased_spec(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    s_ = ps.lstm;
    if (s_.training)  // the training form runs on the BPTT forward (rnn_train_forward.cpp)
      return Status::unsupported(ctx.where + ": the training form of PhasedLSTM");
    alpha_ = ps.alpha;
    const int64_t D = s_.num_directions, H = s_.hidden, B = s_.batch, T = s_.seq_len,
                  I = s_.input_size;
    for (int64_t v : {4 * H, I, H, B * T})
      if (v > (1 << 28)) return Status::unsupported("sizes beyond LIBXSMM's int range");
    team_ = std::max(1, ctx.team_size);
    ldh_ = round_up(H, kLine);
    dir_x_ = round_up(4 * H, kLine);
    ldx_ = D * dir_x_;
    dir_p_ = round_up(3 * H, kLine);
    if (B * ldx_ > (int64_t{1} << 28))
      return Status::unsupported("strides beyond LIBXSMM's int range");
    auto is_const = [&](int i) {
      return static_cast<size_t>(i) < ctx.const_inputs.size() && ctx.const_inputs[i] != nullptr;
    };
    // Constant time parameters are checked once here.
    if (is_const(kPhasedTau) && is_const(kPhasedROn) && is_const(kPhasedShift)) {
      const float* tau = ctx.const_inputs[kPhasedTau]->data_as<float>();
      const float* ron = ctx.const_inputs[kPhasedROn]->data_as<float>();
      const float* sh = ctx.const_inputs[kPhasedShift]->data_as<float>();
      for (int64_t i = 0; i < D * H; ++i) {
        const std::string at = "[" + std::to_string(i / H) + ", " + std::to_string(i % H) + "]";
        if (!(tau[i] > 0.0f) || !std::isfinite(tau[i]))
          return Status::invalid_graph(ctx.where + ": input 9 (tau)" + at + " = " +
                                       std::to_string(tau[i]) + ", must be finite and > 0");
        if (!(ron[i] > 0.0f && ron[i] <= 1.0f))
          return Status::invalid_graph(ctx.where + ": input 11 (r_on)" + at + " = " +
                                       std::to_string(ron[i]) + ", must be in (0, 1]");
        if (!std::isfinite(sh[i]))
          return Status::invalid_graph(ctx.where + ": input 10 (shift)" + at + " = " +
                                       std::to_string(sh[i]) + ", must be finite");
      }
    }

    // Blocks: the D * lines 16-unit lines split over the team.
    const int64_t lines = (H + kLine - 1) / kLine;
    const int64_t total = D * lines;
    const int parts = static_cast<int>(std::min<int64_t>(team_, total));
    chunk_ = std::clamp<int64_t>((int64_t{4} << 20) / std::max<int64_t>(B * ldx_ * 4, 1), 1, T);
    std::set<int64_t> hoist_ns;
    for (int64_t s0 = 0; s0 < T; s0 += chunk_)
      hoist_ns.insert(s_.layout == 1 ? std::min(chunk_, T - s0) : std::min(chunk_, T - s0) * B);
    const int64_t hoist_ldc = s_.layout == 1 ? B * ldx_ : ldx_;
    plans_.assign(team_, {});
    int64_t off = 0;
    for (int q = 0; q < parts; ++q) {
      auto [l0, l1] = team_range(total, q, parts);
      for (int d = 0; d < D; ++d) {
        const int64_t a = std::max(l0, d * lines) - d * lines,
                      e = std::min(l1, (d + 1) * lines) - d * lines;
        if (a >= e) continue;
        Block blk;
        blk.d = d;
        blk.j0 = a * kLine;
        blk.j1 = std::min(H, e * kLine);
        const int64_t w = blk.j1 - blk.j0;
        blk.ldw = round_up(4 * w, kLine);
        blk.wp_off = off;
        off += I * blk.ldw;
        blk.rp_off = off;
        blk.hoist = TiledGemm::create_row_major(4 * w, I, blk.ldw, I, hoist_ldc, hoist_ns);
        // GEMV-like steps (batch <= 2) read R as panels one GEMV register block wide, one
        // contiguous stream per block (a 256 B block per row of a wide slab ran at half the L2
        // rate on AMD Zen 5: ops/rnn/RNN_SCHEDULE.md); wider batches keep LIBXSMM's row-major
        // tiles.
        if (B <= 2) {
          const int64_t panel = gemv_rows_stream_panel();
          off += TiledGemm::packed_floats(4 * w, H, panel);
          blk.rec = TiledGemm::create_panels(4 * w, H, panel, ldh_, ldx_, {B});
        } else {
          off += H * blk.ldw;
          blk.rec = TiledGemm::create_row_major(4 * w, H, blk.ldw, ldh_, ldx_, {B});
        }
        plans_[q].push_back(std::move(blk));
      }
    }
    bias_off_ = off;
    off += s_.has_bias ? D * dir_x_ : 0;
    peep_off_ = off;
    off += s_.has_peephole ? D * dir_p_ : 0;
    packed_floats_ = off;
    const_weights_ = is_const(kRnnW) && is_const(kRnnR) && (!s_.has_bias || is_const(kRnnB)) &&
                     (!s_.has_peephole || is_const(kRnnP));
    if (const_weights_) {
      packed_ = Tensor(TensorDesc{DType::kF32, {packed_floats_}});
      const Sources src{ctx.const_inputs[kRnnW]->data_as<float>(),
                        ctx.const_inputs[kRnnR]->data_as<float>(),
                        s_.has_bias ? ctx.const_inputs[kRnnB]->data_as<float>() : nullptr,
                        s_.has_peephole ? ctx.const_inputs[kRnnP]->data_as<float>() : nullptr};
      for (const auto& plan : plans_)
        for (const Block& blk : plan) pack(src, blk, packed_.data_as<float>());
    }

    auto take = [&](int64_t floats) {
      const int64_t at = scratch_floats_;
      scratch_floats_ += round_up(floats, kLine);
      return at;
    };
    scratch_floats_ = 0;
    take(sizeof(SpinBarrier) / sizeof(float) + 1);
    xw_off_ = take(chunk_ * B * ldx_);
    gh_off_ = take(B * ldx_);
    hb_off_ = take(2 * D * B * ldh_);
    cb_off_ = take(D * B * ldh_);
    ct_off_ = take(D * B * ldh_);
    ht_off_ = take(D * B * ldh_);
    inv_tau_off_ = take(2 * D * H);  // doubles
    scratch_packed_off_ = take(const_weights_ ? 0 : packed_floats_);
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override;

 private:
  struct Sources {
    const float *w, *r, *b, *p;
  };

  void pack(const Sources& src, const Block& blk, float* packed) const {
    const int64_t H = s_.hidden, I = s_.input_size, d = blk.d, j0 = blk.j0, w = blk.j1 - blk.j0;
    const float* W = src.w + d * 4 * H * I;
    const float* R = src.r + d * 4 * H * H;
    float* wp = packed + blk.wp_off;
    float* rp = packed + blk.rp_off;
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t u = 0; u < w; ++u) {
        const int64_t col = g * w + u, row = g * H + j0 + u;
        for (int64_t k = 0; k < I; ++k) wp[k * blk.ldw + col] = W[row * I + k];
        for (int64_t k = 0; k < H; ++k) rp[blk.rec.offset(col, k)] = R[row * H + k];
      }
    if (src.b) {
      const float* wb = src.b + d * 8 * H;
      float* bias = packed + bias_off_ + d * dir_x_;
      for (int64_t g = 0; g < 4; ++g)
        for (int64_t u = 0; u < w; ++u)
          bias[4 * j0 + g * w + u] = wb[g * H + j0 + u] + wb[4 * H + g * H + j0 + u];
    }
    if (src.p) {
      const float* pv = src.p + d * 3 * H;
      float* pp = packed + peep_off_ + d * dir_p_;
      for (int64_t g = 0; g < 3; ++g)
        for (int64_t u = 0; u < w; ++u) pp[3 * j0 + g * w + u] = pv[g * H + j0 + u];
    }
  }

  int64_t time_index(int64_t t, int64_t b) const {
    return s_.layout == 0 ? t * s_.batch + b : b * s_.seq_len + t;
  }
  void hoist(const std::vector<Block>& plan, const float* x, const float* packed, float* xw,
             int64_t s0, int64_t s1) const noexcept;
  void step(const std::vector<Block>& plan, int64_t s, int64_t s0, int64_t s1, const Buffers& io,
            const float* packed, float* scratch) const noexcept;

  RnnSpec s_;
  double alpha_ = kPhasedLstmDefaultAlpha;
  int team_ = 1;
  int64_t ldh_ = 0, dir_x_ = 0, ldx_ = 0, dir_p_ = 0, chunk_ = 1;
  std::vector<std::vector<Block>> plans_;  // per team member
  bool const_weights_ = false;
  Tensor packed_;
  int64_t packed_floats_ = 0, bias_off_ = 0, peep_off_ = 0;
  int64_t scratch_floats_ = 0, xw_off_ = 0, gh_off_ = 0, hb_off_ = 0, cb_off_ = 0, ct_off_ = 0,
          ht_off_ = 0, inv_tau_off_ = 0, scratch_packed_off_ = 0;
};

void PhasedLstmKernel::hoist(const std::vector<Block>& plan, const float* x, const float* packed,
                             float* xw, int64_t s0, int64_t s1) const noexcept {
  const int64_t B = s_.batch, len = s1 - s0;
  for (const Block& blk : plan) {
    const int64_t t0 = s_.window_begin(blk.d, s0, s1);
    const float* wp = packed + blk.wp_off;
    float* out = xw + blk.d * dir_x_ + 4 * blk.j0;
    if (s_.layout == 1) {
      for (int64_t b = 0; b < B; ++b) blk.hoist.run(wp, x + s_.x_row(t0, b), out + b * ldx_, len);
    } else {
      blk.hoist.run(wp, x + s_.x_row(t0, 0), out, len * B);
    }
  }
}

void PhasedLstmKernel::step(const std::vector<Block>& plan, int64_t s, int64_t s0, int64_t s1,
                            const Buffers& io, const float* packed, float* scratch) const noexcept {
  const int64_t B = s_.batch, T = s_.seq_len, H = s_.hidden;
  const int64_t DBH = s_.num_directions * B * ldh_;
  const float* hprev_all = scratch + hb_off_ + (s & 1) * DBH;
  float* hnext_all = scratch + hb_off_ + ((s + 1) & 1) * DBH;
  float* y = static_cast<float*>(io.outputs[0]);
  const void* lens = s_.has_seq_lens ? io.inputs[kRnnSeqLens] : nullptr;
  const float* times = static_cast<const float*>(io.inputs[kPhasedTimes]);
  const float* shift_all = static_cast<const float*>(io.inputs[kPhasedShift]);
  const float* ron_all = static_cast<const float*>(io.inputs[kPhasedROn]);
  const bool zero_h = s == 0 && !s_.has_initial_h;
  const double alpha = alpha_;

  for (const Block& blk : plan) {
    const int d = blk.d;
    const int64_t w = blk.j1 - blk.j0, j0 = blk.j0;
    const int64_t tt = s_.is_reverse(d) ? T - 1 - s : s;
    const float* hprev = hprev_all + d * B * ldh_;
    float* hnext = hnext_all + d * B * ldh_;
    float* gh = scratch + gh_off_ + d * dir_x_ + 4 * j0;
    if (!zero_h) blk.rec.run(packed + blk.rp_off, hprev, gh, B);
    float* c = scratch + cb_off_ + d * B * ldh_;
    float* ct = scratch + ct_off_ + d * B * ldh_;
    float* ht = scratch + ht_off_ + d * B * ldh_;
    LstmGateArgs a;
    a.hidden = w;
    a.gate_stride = w;
    a.gates_x =
        scratch + xw_off_ + (tt - s_.window_begin(d, s0, s1)) * B * ldx_ + d * dir_x_ + 4 * j0;
    a.ld_gates_x = ldx_;
    a.gates_h = zero_h ? nullptr : gh;
    a.ld_gates_h = ldx_;
    a.bias = s_.has_bias ? packed + bias_off_ + d * dir_x_ + 4 * j0 : nullptr;
    a.peephole = s_.has_peephole ? packed + peep_off_ + d * dir_p_ + 3 * j0 : nullptr;
    a.c_prev = c + j0;
    a.ld_c_prev = ldh_;
    a.c = ct + j0;  // c~ and h~ into their own buffers: the blend needs c_{t-1}, h_{t-1}
    a.ld_c = ldh_;
    a.h = ht + j0;
    a.ld_h = ldh_;
    a.clip = s_.clip;
    a.input_forget = s_.input_forget;
    // Runs of rows whose sequence covers time tt get the gate kernel.
    int64_t b = 0;
    while (b < B) {
      while (b < B && s_.seq_len_of(lens, b) <= tt) ++b;
      const int64_t r0 = b;
      while (b < B && s_.seq_len_of(lens, b) > tt) ++b;
      if (r0 < b) lstm_gates(a, GateTile{r0, b, 0, w});
    }
    // Time gate and blend; rows past their length carry the state and emit 0.
    const double* inv_tau = reinterpret_cast<const double*>(scratch + inv_tau_off_) + d * H + j0;
    const float* shift = shift_all + d * H + j0;
    const float* ron = ron_all + d * H + j0;
    for (int64_t r = 0; r < B; ++r) {
      float* yr = y + s_.y_row(tt, d, r) + j0;
      const float* hp = hprev + r * ldh_ + j0;
      float* hn = hnext + r * ldh_ + j0;
      if (s_.seq_len_of(lens, r) <= tt) {
        std::memcpy(hn, hp, w * sizeof(float));
        std::fill(yr, yr + w, 0.0f);
        continue;
      }
      PhasedBlendArgs g;
      g.n = w;
      g.ts = times[time_index(tt, r)];
      g.alpha = alpha;
      g.shift = shift;
      g.inv_tau = inv_tau;
      g.r_on = ron;
      g.cand_c = ct + r * ldh_ + j0;
      g.cand_h = ht + r * ldh_ + j0;
      g.c = c + r * ldh_ + j0;
      g.h_prev = hp;
      g.h = hn;
      phased_blend(g);
      std::memcpy(yr, hn, w * sizeof(float));
    }
  }
}

void PhasedLstmKernel::run(const TeamContext& team, const Buffers& io) const noexcept {
  // A team of another size than init's: member 0 runs every block alone.
  const bool solo = team.nthr != team_;
  if (solo && team.ithr != 0) return;
  const int nthr = solo ? 1 : team.nthr;
  float* scratch = static_cast<float*>(team.scratch);
  SpinBarrier* barrier = reinterpret_cast<SpinBarrier*>(scratch);
  std::vector<Block> const* own = solo ? nullptr : &plans_[team.ithr];
  // Solo: walk all members' blocks. (A span over plans_ would need no copy; plans are few.)
  const int64_t T = s_.seq_len, B = s_.batch;
  const float* x = static_cast<const float*>(io.inputs[kRnnX]);
  if (team.ithr == 0 && nthr > 1) new (barrier) SpinBarrier(nthr);
  const float* packed = const_weights_ ? packed_.data_as<float>() : scratch + scratch_packed_off_;
  auto for_own = [&](auto&& f) {
    if (own) {
      f(*own);
    } else {
      for (const auto& p : plans_) f(p);
    }
  };
  if (!const_weights_) {
    const Sources src{static_cast<const float*>(io.inputs[kRnnW]),
                      static_cast<const float*>(io.inputs[kRnnR]),
                      s_.has_bias ? static_cast<const float*>(io.inputs[kRnnB]) : nullptr,
                      s_.has_peephole ? static_cast<const float*>(io.inputs[kRnnP]) : nullptr};
    for_own([&](const std::vector<Block>& plan) {
      for (const Block& blk : plan) pack(src, blk, scratch + scratch_packed_off_);
    });
  }
  // 1 / tau of the own units (the time gate multiplies by it at every step).
  const float* tau = static_cast<const float*>(io.inputs[kPhasedTau]);
  double* inv_tau = reinterpret_cast<double*>(scratch + inv_tau_off_);
  for_own([&](const std::vector<Block>& plan) {
    for (const Block& blk : plan)
      for (int64_t j = blk.j0; j < blk.j1; ++j)
        inv_tau[blk.d * s_.hidden + j] = 1.0 / static_cast<double>(tau[blk.d * s_.hidden + j]);
  });
  // Initial states of the own blocks.
  const float* h0 = s_.has_initial_h ? static_cast<const float*>(io.inputs[kRnnInitialH]) : nullptr;
  const float* c0 = s_.has_initial_c ? static_cast<const float*>(io.inputs[kRnnInitialC]) : nullptr;
  for_own([&](const std::vector<Block>& plan) {
    for (const Block& blk : plan)
      for (int64_t b = 0; b < B; ++b) {
        const size_t bytes = (blk.j1 - blk.j0) * sizeof(float);
        float* h = scratch + hb_off_ + (blk.d * B + b) * ldh_ + blk.j0;
        float* c = scratch + cb_off_ + (blk.d * B + b) * ldh_ + blk.j0;
        if (h0)
          std::memcpy(h, h0 + s_.state_row(blk.d, b) + blk.j0, bytes);
        else
          std::memset(h, 0, bytes);
        if (c0)
          std::memcpy(c, c0 + s_.state_row(blk.d, b) + blk.j0, bytes);
        else
          std::memset(c, 0, bytes);
      }
  });
  if (nthr > 1) {
#pragma omp barrier
  }
  for (int64_t s0 = 0; s0 < T; s0 += chunk_) {
    const int64_t s1 = std::min(T, s0 + chunk_);
    for_own(
        [&](const std::vector<Block>& plan) { hoist(plan, x, packed, scratch + xw_off_, s0, s1); });
    for (int64_t s = s0; s < s1; ++s) {
      for_own([&](const std::vector<Block>& plan) { step(plan, s, s0, s1, io, packed, scratch); });
      if (s + 1 < T && nthr > 1) barrier->wait();  // h of step s is read by all at s + 1
    }
  }
  if (s_.num_outputs < 2) return;
  float* yh = static_cast<float*>(io.outputs[1]);
  float* yc = s_.num_outputs > 2 ? static_cast<float*>(io.outputs[2]) : nullptr;
  const float* hb = scratch + hb_off_ + (T & 1) * s_.num_directions * B * ldh_;
  for_own([&](const std::vector<Block>& plan) {
    for (const Block& blk : plan)
      for (int64_t b = 0; b < B; ++b) {
        const size_t bytes = (blk.j1 - blk.j0) * sizeof(float);
        std::memcpy(yh + s_.state_row(blk.d, b) + blk.j0, hb + (blk.d * B + b) * ldh_ + blk.j0,
                    bytes);
        if (yc)
          std::memcpy(yc + s_.state_row(blk.d, b) + blk.j0,
                      scratch + cb_off_ + (blk.d * B + b) * ldh_ + blk.j0, bytes);
      }
  });
}

Result<std::vector<TensorDesc>> infer_phased(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(PhasedSpec s,
                          phased_spec(ctx.node, ctx.inputs, ctx.num_outputs, ctx.where));
  return rnn_output_descs(s.lstm);
}

CostHint cost_phased(const graph::Node&, std::span<const TensorDesc* const> inputs,
                     std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const double tdbh = static_cast<double>(outputs[0]->numel());
  const double h = static_cast<double>(inputs[kRnnR]->shape[2]);
  const double i = static_cast<double>(inputs[kRnnW]->shape[2]);
  c.flops = 2.0 * tdbh * 4.0 * (i + h) + tdbh * 60.0;  // GEMMs + gates + time gate
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  for (const TensorDesc* d : outputs) c.bytes += static_cast<double>(d->bytes());
  return c;
}

std::unique_ptr<Kernel> make_phased_lstm_kernel() { return std::make_unique<PhasedLstmKernel>(); }

}  // namespace

void register_phased_lstm_op(Registry& r) {
  // The training form's kernel first (it declines the inference form, the WCS kernel the other).
  r.add({kPhasedLstmOp,
         infer_phased,
         cost_phased,
         false,
         {make_phased_lstm_train_forward_kernel, make_phased_lstm_kernel}});
  register_phased_lstm_grad_op(r);
}

}  // namespace graphi::ops
