// The sequence kernel's memory: row strides, scratch offsets and the packed weights.
//
// Layout of the packed weights (row-major [K][cols], K = I for W, H for R). The hidden units of
// each direction are split into blocks (one per thread and direction, in whole 16-unit cache
// lines; see plan_partition); within a block [j0, j1) of width w, the G gates of the block's
// units sit next to each other, gate-major: gate g of unit j0 + u at column G*j0 + g*w + u. So a
// thread's GEMM output holds every gate of its own units (the fused gate kernel then needs
// nothing from other threads), and a block's columns are one contiguous range. Biases and
// peepholes use the same block layout (gate_stride = w in ops/rnn/rnn_gates.h).
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "ops/rnn/gemm_bf16.h"
#include "ops/rnn/gemm_int8.h"
#include "ops/rnn/gemv_rows.h"
#include "ops/rnn/rnn_sequence_kernel.h"

namespace graphi::ops::rnn_wcs {

namespace {

// One core's private L2 (glibc reads it from cpuid), 1 MiB if unknown.
int64_t l2_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? static_cast<int64_t>(v) : int64_t{1} << 20;
  }();
  return bytes;
}

}  // namespace

Status RnnSequenceKernel::prepare(int team) {
  const int64_t D = s_.num_directions, G = s_.gates, H = s_.hidden, B = s_.batch, T = s_.seq_len,
                I = s_.input_size;
  for (int64_t v : {G * H, I, H, B * T})
    if (v > (1 << 30)) return Status::unsupported("sizes beyond LIBXSMM's int range");
  canonical_gru_ = kind_ == RnnCellKind::kGru && !s_.linear_before_reset;
  g0_ = canonical_gru_ ? 2 : G;
  team_ = team;
  bf16_ = s_.weights == RnnWeights::kBf16;
  int8_ = s_.weights == RnnWeights::kInt8;
  lowp_ = bf16_ || int8_;

  // Strides (floats), each row padded to whole cache lines.
  // Row strides are an odd number of cache lines: with a multiple of 4 KiB (H = 256: 4H floats)
  // the rows of a microkernel's C tile all map to one L1 set and evict each other.
  auto skew = [](int64_t ld) { return (ld / kLine) % 2 == 0 ? ld + kLine : ld; };
  ldh_ = skew(round_up(H, kLine));
  dir_x_ = round_up(G * H, kLine);
  ldx_ = skew(D * dir_x_);
  dir_gh0_ = round_up(g0_ * H, kLine);
  ld_gh0_ = skew(D * dir_gh0_);
  dir_gh1_ = canonical_gru_ ? round_up(H, kLine) : 0;
  ld_gh1_ = canonical_gru_ ? skew(D * dir_gh1_) : 0;
  dir_p_ = round_up(3 * H, kLine);
  // LIBXSMM takes int strides; the layout-1 projection rows are B * ldx apart.
  if (B * ldx_ > (int64_t{1} << 30))
    return Status::unsupported("strides beyond LIBXSMM's int range (batch " + std::to_string(B) +
                               " x " + std::to_string(ldx_) + " gate columns)");

  shape_.cell = std::string(rnn_cell_name(kind_)) +
                (kind_ == RnnCellKind::kGru && s_.linear_before_reset ? "-lbr" : "");
  if (s_.layout == 1) shape_.cell += " layout1";
  if (bf16_) shape_.cell += " bf16";
  if (int8_) shape_.cell += " int8";
  shape_.weight_bytes = bf16_ ? 2 : int8_ ? 1 : 4;
  shape_.seq_len = T;
  shape_.batch = B;
  shape_.input_size = I;
  shape_.hidden = H;
  shape_.directions = static_cast<int>(D);
  shape_.gates = static_cast<int>(g0_);
  shape_.canonical_gru = canonical_gru_;
  shape_.team = team_;
  shape_.l2_bytes = l2_bytes();
  shape_.stream_tile = lowp_ ? 64 : static_cast<int>(gemv_rows_stream_panel());
  return Status::ok();
}

void RnnSequenceKernel::configure() {
  const int64_t D = s_.num_directions, B = s_.batch, T = s_.seq_len;
  chunk_ = std::clamp<int64_t>(schedule_.chunk, 1, T);
  // The same conditions as step()'s own-units-first split (run(): counters, one row).
  kblocked_ = !int8_ && !canonical_gru_ && !schedule_.zigzag && schedule_.xj > 1 && B == 1 &&
              !s_.wcs_shuffle && team_ <= 8;
  plan_partition();
  for (ThreadPlan& p : plans_) make_gemms(p);
  make_gemms(solo_);

  // Packed weights: the blocks' slabs (offsets set by plan_partition), [int8: their scales and
  // column sums], then biases, peepholes.
  int64_t off = slabs_floats_;
  kbounds_.assign(D, {});
  for (const Segment& seg : solo_.segs) kbounds_[seg.d].push_back(seg.j0);
  for (auto& b : kbounds_) {
    std::sort(b.begin(), b.end());
    b.push_back(s_.hidden);
  }
  if (int8_) {
    auto kb_of = [&](const Segment& seg) {
      const auto& b = kbounds_[seg.d];
      return static_cast<int64_t>(std::lower_bound(b.begin(), b.end(), seg.j0) - b.begin());
    };
    for (Segment& seg : solo_.segs) {
      seg.kb = kb_of(seg);
      seg.aux_off = off;
      off += round_up(int8_aux_floats(seg), kLine);
    }
    for (ThreadPlan& p : plans_)
      for (Segment& seg : p.segs)
        for (const Segment& b : solo_.segs)
          if (b.d == seg.d && b.j0 == seg.j0) {
            seg.kb = b.kb;
            seg.aux_off = b.aux_off;
          }
  }
  bias_off_ = off;  // LSTM/RNN: Wb + Rb; GRU: Wb
  off += s_.has_bias ? D * dir_x_ : 0;
  bias_h_off_ = off;  // GRU: Rb
  off += (s_.has_bias && kind_ == RnnCellKind::kGru) ? D * dir_x_ : 0;
  peep_off_ = off;
  off += s_.has_peephole ? D * dir_p_ : 0;
  packed_floats_ = off;

  // Scratch: barrier, hoisted projections, GEMM outputs, states, [packed weights].
  auto take = [&](int64_t floats) {
    const int64_t at = scratch_floats_;
    scratch_floats_ += round_up(floats, kLine);
    return at;
  };
  static_assert(sizeof(SpinBarrier) <= 64 * kLine, "barrier slot too small");
  scratch_floats_ = 0;
  take(sizeof(SpinBarrier) / sizeof(float) + 1);
  flags_off_ = take(team_ * kFlagFloats);
  xw_off_ = take(chunk_ * B * ldx_);
  gh0_off_ = take(B * ld_gh0_);
  gh1_off_ = take(B * ld_gh1_);
  hb_off_ = take(2 * D * B * ldh_);
  cb_off_ = take(kind_ == RnnCellKind::kLstm ? D * B * ldh_ : 0);
  zb_off_ = take(canonical_gru_ ? D * B * ldh_ : 0);
  rhb_off_ = take(canonical_gru_ ? D * B * ldh_ : 0);
  // bf16 / int8: a pair (u8 quad) copy of every state buffer from hb to rhb at one fixed
  // distance (so a state row's mirror is row + mirror_delta_; int8: the blocks' scales and zero
  // points at int8_param_word), and one bf16 (u8) copy of x rows per thread (int8: each row's
  // scale and zero point in the two words after its data).
  const int64_t states = scratch_floats_ - hb_off_;
  mirror_delta_ = lowp_ ? take(states) - hb_off_ : 0;
  ldx16_ = bf16_   ? round_up(bf16_pairs(s_.input_size), kLine)
           : int8_ ? round_up(int8_quads(s_.input_size) + 2, kLine)
                   : 0;
  x16_per_thread_ = lowp_ ? chunk_ * B * ldx16_ : 0;
  x16_off_ = take(team_ * x16_per_thread_);
  hoist_ldc_ = s_.layout == 1 ? B * ldx_ : ldx_;
  scratch_packed_off_ = take(const_weights_ ? 0 : packed_floats_);
}

void RnnSequenceKernel::make_gemms(ThreadPlan& p) const {
  if (!p.active()) return;
  const int64_t B = s_.batch, T = s_.seq_len, I = s_.input_size, H = s_.hidden;
  const int64_t rows = p.r1 - p.r0;
  const bool full_rows = rows == B;
  // Row counts of the hoisted GEMM calls (see hoist()).
  std::set<int64_t> hoist_ns;
  for (int64_t s0 = 0; s0 < T; s0 += chunk_) {
    const int64_t len = std::min(chunk_, T - s0);
    if (s_.layout == 1)
      hoist_ns.insert(len);
    else
      hoist_ns.insert(full_rows ? len * B : rows);
  }
  const int64_t hoist_ldc = s_.layout == 1 ? B * ldx_ : ldx_;
  if (lowp_) return;  // ops/rnn/gemm_bf16.h and gemm_int8.h need no per-shape set-up
  for (Segment& seg : p.segs) {
    const int64_t w = seg.j1 - seg.j0;
    seg.hoist =
        TiledGemm::create_panels(s_.gates * w, I, seg.pw_w, I, hoist_ldc, hoist_ns, {}, true);
    seg.rec0 = TiledGemm::create_panels(
        g0_ * w, H, seg.pw_r0, ldh_, ld_gh0_, {rows},
        kblocked_ ? std::vector<int64_t>{seg.j0, seg.j1} : std::vector<int64_t>{});
    if (canonical_gru_) seg.rec1 = TiledGemm::create_panels(w, H, seg.pw_r1, ldh_, ld_gh1_, {rows});
  }
}

void RnnSequenceKernel::pack_segment(const WeightSources& src, const Segment& seg,
                                     float* packed) const {
  const int64_t D = s_.num_directions, G = s_.gates, H = s_.hidden, I = s_.input_size;
  (void)D;
  const int d = seg.d;
  const int64_t j0 = seg.j0, w = seg.j1 - seg.j0;
  const float* W = src.w + d * G * H * I;
  const float* R = src.r + d * G * H * H;
  if (bf16_) {
    // Same columns as below, in bf16 pairs of k (ops/rnn/gemm_bf16.h); padding stays 0.
    auto words = [&](int64_t off) { return reinterpret_cast<uint32_t*>(packed + off); };
    auto pack = [&](uint32_t* dst, int64_t cols, int64_t panel, int64_t k, auto&& src_row) {
      std::fill_n(dst, bf16_packed_words(cols, k, panel), 0u);
      for (int64_t col = 0; col < cols; ++col) {
        const float* row = src_row(col);
        for (int64_t kk = 0; kk < k; ++kk) bf16_pack_set(dst, col, kk, k, panel, row[kk]);
      }
    };
    pack(words(seg.wp_off), G * w, seg.pw_w, I,
         [&](int64_t col) { return W + ((col / w) * H + j0 + col % w) * I; });
    for (const Bf16KBlock& kb : bf16_kblocks(seg.j0, seg.j1, g0_ * w, seg.pw_r0))
      pack(words(seg.rp0_off) + kb.words, g0_ * w, seg.pw_r0, kb.k1 - kb.k0,
           [&](int64_t col) { return R + ((col / w) * H + j0 + col % w) * H + kb.k0; });
    if (canonical_gru_)
      pack(words(seg.rp1_off), w, seg.pw_r1, H,
           [&](int64_t col) { return R + (2 * H + j0 + col) * H; });
  }
  if (int8_) {
    // Same columns in s8 quads of k (ops/rnn/gemm_int8.h), one symmetric scale per column;
    // padding stays 0. Column sums: W over all of I, R over each k block of the direction. R is
    // packed block by block (int8_block_words): each per-block pass of a step streams one dense
    // region (as TiledGemm's k_splits for fp32).
    const Int8Aux aux = int8_aux(seg);
    float* aux_f = packed;
    auto* aux_i = reinterpret_cast<int32_t*>(packed);
    const std::vector<int64_t>& kb = kbounds_[d];
    auto pack = [&](int64_t off, int64_t cols, int64_t panel, int64_t k, int64_t scale_off,
                    int64_t colsum_off, int64_t nblocks, auto&& src_row) {
      uint32_t* dst = reinterpret_cast<uint32_t*>(packed + off);
      std::fill_n(dst, int8_packed_words(cols, k, panel), 0u);
      for (int64_t col = 0; col < cols; ++col) {
        const float* row = src_row(col);
        const float sc = int8_weight_scale(row, k, 1);
        aux_f[scale_off + col] = sc;
        for (int64_t b = 0; b < nblocks; ++b) aux_i[colsum_off + b * cols + col] = 0;
        int64_t b = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const int8_t q = int8_quantize_weight(row[kk], sc);
          if (nblocks > 1)
            while (kk >= kb[b + 1]) ++b;
          const int64_t b0 = nblocks > 1 ? kb[b] : 0, b1 = nblocks > 1 ? kb[b + 1] : k;
          const int64_t word = int8_block_words(cols, panel, b0) +
                               int8_word_offset(col, (kk - b0) / 4, b1 - b0, panel);
          reinterpret_cast<int8_t*>(dst + word)[kk & 3] = q;
          aux_i[colsum_off + b * cols + col] += q;
        }
      }
    };
    const int64_t nb = static_cast<int64_t>(kb.size()) - 1;
    pack(seg.wp_off, G * w, seg.pw_w, I, aux.w_scale, aux.w_colsum, 1,
         [&](int64_t col) { return W + ((col / w) * H + j0 + col % w) * I; });
    pack(seg.rp0_off, g0_ * w, seg.pw_r0, H, aux.r_scale[0], aux.r_colsum[0], nb,
         [&](int64_t col) { return R + ((col / w) * H + j0 + col % w) * H; });
    if (canonical_gru_)
      pack(seg.rp1_off, w, seg.pw_r1, H, aux.r_scale[1], aux.r_colsum[1], nb,
           [&](int64_t col) { return R + (2 * H + j0 + col) * H; });
  }
  float* wp = packed + seg.wp_off;
  for (int64_t g = 0; g < G && !lowp_; ++g)
    for (int64_t u = 0; u < w; ++u) {
      const float* row = W + (g * H + j0 + u) * I;
      const int64_t col = g * w + u;
      for (int64_t k = 0; k < I; ++k) wp[TiledGemm::panel_offset(col, k, I, seg.pw_w)] = row[k];
    }
  float* rp0 = packed + seg.rp0_off;
  for (int64_t g = 0; g < g0_ && !lowp_; ++g)
    for (int64_t u = 0; u < w; ++u) {
      const float* row = R + (g * H + j0 + u) * H;
      const int64_t col = g * w + u;
      for (int64_t k = 0; k < H; ++k) rp0[seg.rec0.offset(col, k)] = row[k];
    }
  if (canonical_gru_ && !lowp_) {
    float* rp1 = packed + seg.rp1_off;
    for (int64_t u = 0; u < w; ++u) {
      const float* row = R + (2 * H + j0 + u) * H;
      for (int64_t k = 0; k < H; ++k) rp1[TiledGemm::panel_offset(u, k, H, seg.pw_r1)] = row[k];
    }
  }
  if (src.b) {
    const float* wb = src.b + d * 2 * G * H;
    const float* rb = wb + G * H;
    float* bias = packed + bias_off_ + d * dir_x_;
    float* bias_h = packed + bias_h_off_ + d * dir_x_;
    for (int64_t g = 0; g < G; ++g)
      for (int64_t u = 0; u < w; ++u) {
        const int64_t col = G * j0 + g * w + u, j = g * H + j0 + u;
        if (kind_ == RnnCellKind::kGru) {
          bias[col] = wb[j];
          bias_h[col] = rb[j];
        } else {
          bias[col] = wb[j] + rb[j];
        }
      }
  }
  if (src.p) {
    const float* pv = src.p + d * 3 * H;
    float* pp = packed + peep_off_ + d * dir_p_;
    for (int64_t g = 0; g < 3; ++g)
      for (int64_t u = 0; u < w; ++u) pp[3 * j0 + g * w + u] = pv[g * H + j0 + u];
  }
}

RnnSequenceKernel::Bf16KBlocks RnnSequenceKernel::bf16_kblocks(int64_t j0, int64_t j1, int64_t m,
                                                               int64_t panel) const noexcept {
  const int64_t H = s_.hidden;
  Bf16KBlocks out;
  const int64_t all[1][2] = {{0, H}};
  // Own units first; every bound but H is on a unit line (even), so blocks hold whole pairs.
  const int64_t own_first[3][2] = {{j0, j1}, {0, j0}, {j1, H}};
  const auto* bounds = kblocked_ ? own_first : all;
  for (int i = 0; i < (kblocked_ ? 3 : 1); ++i) {
    const int64_t k0 = bounds[i][0], k1 = bounds[i][1];
    if (k1 <= k0) continue;
    out.b[out.n++] = {k0, k1, out.words};
    out.words += bf16_packed_words(m, k1 - k0, panel);
  }
  return out;
}

RnnSequenceKernel::Int8Aux RnnSequenceKernel::int8_aux(const Segment& seg) const {
  const int64_t w = seg.j1 - seg.j0, mw = s_.gates * w, m0 = g0_ * w, m1 = canonical_gru_ ? w : 0;
  const int64_t nb = static_cast<int64_t>(kbounds_[seg.d].size()) - 1;
  Int8Aux a;
  a.w_scale = seg.aux_off;
  a.w_colsum = a.w_scale + mw;
  a.r_scale[0] = a.w_colsum + mw;
  a.r_colsum[0] = a.r_scale[0] + m0;
  a.r_scale[1] = a.r_colsum[0] + nb * m0;
  a.r_colsum[1] = a.r_scale[1] + m1;
  return a;
}

int64_t RnnSequenceKernel::int8_aux_floats(const Segment& seg) const {
  const int64_t w = seg.j1 - seg.j0, m1 = canonical_gru_ ? w : 0;
  const int64_t nb = static_cast<int64_t>(kbounds_[seg.d].size()) - 1;
  return 2 * s_.gates * w + (1 + nb) * (g0_ * w + m1);
}

}  // namespace graphi::ops::rnn_wcs
