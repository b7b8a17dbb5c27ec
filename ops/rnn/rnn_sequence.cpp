// LSTM, GRU and RNN sequence ops (ONNX semantics, see ops/rnn/rnn_sequence.h) and their
// weight-centric streamlined kernel: its step loops and its registration. The packed weight
// layout is described in ops/rnn/rnn_sequence_pack.cpp, the schedule choice in
// ops/rnn/rnn_sequence_schedule.cpp, the op's attributes and inputs in ops/rnn/rnn_spec.cpp.
//
// The canonical GRU (linear_before_reset = 0) splits R into two groups: (z, r) packed with
// G = 2, and the h gate in plain column order; its step is GEMM(z,r) -> reset pass ->
// barrier (every thread needs all of r * h_prev) -> GEMM(h) -> output pass.
//
// Work split (DeepCPU 5.2.3 / 5.2.4): the recurrent GEMM C[B, D*G*H] = h R^T of one step is cut
// into xi x xj blocks (rows x units, no K split: a K split costs a second barrier per step)
// chosen by PCP's cross-step cost (ops/rnn/pcp_partition.h). Thread t owns the same block for the
// whole sequence; it also computes the input projection X W^T of that block (rows and columns
// of its own), so the hoisted GEMM needs no barrier before the recurrence, and its slice of R
// stays in its L2 across steps.
#include "ops/rnn/rnn_sequence.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

#include "ops/registry.h"
#include "ops/rnn/gemm_bf16.h"
#include "ops/rnn/gemm_int8.h"
#include "ops/rnn/rnn_sequence_kernel.h"
#include "ops/rnn/rnn_train.h"

namespace graphi::ops::rnn_wcs {

// X W^T for plan p's rows and segments over steps [s0, s1). Row (t - window_begin) * B + b of
// xw holds time t, batch b, so each direction's window of times fills the same rows.
void RnnSequenceKernel::hoist_rows(const Segment& seg, const float* packed, const float* x,
                                   float* out, int64_t n, uint32_t* x16) const noexcept {
  if (!lowp_) {
    seg.hoist.run(packed + seg.wp_off, x, out, n);
    return;
  }
  const int64_t I = s_.input_size;
  if (int8_) {
    // Each x row quantized on its own (DynamicQuantizeLinear), scale and zero point after it.
    const int64_t kq = int8_quads(I);
    for (int64_t r = 0; r < n; ++r) {
      uint32_t* row = x16 + r * ldx16_;
      row[kq - 1] = 0;  // the bytes past I (A is 0 there)
      float sc;
      int32_t zp;
      int8_quantize_row(x + r * I, 0, I, reinterpret_cast<uint8_t*>(row), &sc, &zp);
      std::memcpy(row + kq, &sc, 4);
      row[kq + 1] = static_cast<uint32_t>(zp);
    }
    const Int8Aux aux = int8_aux(seg);
    Int8GemmArgs g;
    g.a = reinterpret_cast<const uint32_t*>(packed + seg.wp_off);
    g.m = s_.gates * (seg.j1 - seg.j0);
    g.k = I;
    g.panel = seg.pw_w;
    g.a_scale = packed + aux.w_scale;
    g.colsum = reinterpret_cast<const int32_t*>(packed + aux.w_colsum);
    g.b = x16;
    g.ldb = ldx16_;
    g.bp = x16 + kq;
    g.c = out;
    g.ldc = hoist_ldc_;
    g.rows = n;
    gemm_int8(g);
    return;
  }
  for (int64_t r = 0; r < n; ++r) bf16_pack_row(x + r * I, 0, I, x16 + r * ldx16_);
  Bf16GemmArgs g;
  g.a = reinterpret_cast<const uint32_t*>(packed + seg.wp_off);
  g.m = s_.gates * (seg.j1 - seg.j0);
  g.k = I;
  g.panel = seg.pw_w;
  g.b = x16;
  g.ldb = ldx16_;
  g.c = out;
  g.ldc = hoist_ldc_;
  g.rows = n;
  gemm_bf16(g);
}

void RnnSequenceKernel::hoist(const ThreadPlan& p, const float* x, const float* packed, float* xw,
                              int64_t s0, int64_t s1, float* scratch, int ithr) const noexcept {
  const int64_t B = s_.batch, G = s_.gates;
  const int64_t len = s1 - s0;
  uint32_t* x16 =
      lowp_ ? reinterpret_cast<uint32_t*>(scratch + x16_off_ + ithr * x16_per_thread_) : nullptr;
  for (const Segment& seg : p.segs) {
    const int64_t t0 = s_.window_begin(seg.d, s0, s1);
    float* out = xw + seg.d * dir_x_ + G * seg.j0;
    if (s_.layout == 1) {
      for (int64_t b = p.r0; b < p.r1; ++b)
        hoist_rows(seg, packed, x + s_.x_row(t0, b), out + b * ldx_, len, x16);
    } else if (p.r1 - p.r0 == B) {
      hoist_rows(seg, packed, x + s_.x_row(t0, 0), out, len * B, x16);
    } else {
      for (int64_t t = 0; t < len; ++t)
        hoist_rows(seg, packed, x + s_.x_row(t0 + t, p.r0), out + (t * B + p.r0) * ldx_,
                   p.r1 - p.r0, x16);
    }
  }
}

void RnnSequenceKernel::to_mirror(float* row, int64_t j0, int64_t j1) const noexcept {
  if (int8_) {
    // Units [j0, j1) are one k block (j0 on a 16-unit line): quantized with their own scale.
    uint32_t* m = reinterpret_cast<uint32_t*>(row + mirror_delta_);
    float sc;
    int32_t zp;
    int8_quantize_row(row, j0, j1, reinterpret_cast<uint8_t*>(m) + j0, &sc, &zp);
    // The row's last quad past H: defined bytes (R is 0 there, so any value gives 0).
    for (int64_t j = j1; j % 4 != 0; ++j) reinterpret_cast<uint8_t*>(m)[j] = 0;
    std::memcpy(m + int8_param_word(j0), &sc, 4);
    m[int8_param_word(j0) + 1] = static_cast<uint32_t>(zp);
    return;
  }
  bf16_pack_row(row, j0, j1, reinterpret_cast<uint32_t*>(row + mirror_delta_) + j0 / 2);
}

void RnnSequenceKernel::init_state(const ThreadPlan& p, const Buffers& io, float* hb,
                                   float* cb) const noexcept {
  const int64_t B = s_.batch;
  const float* h0 = s_.has_initial_h ? static_cast<const float*>(io.inputs[kRnnInitialH]) : nullptr;
  const float* c0 = s_.has_initial_c ? static_cast<const float*>(io.inputs[kRnnInitialC]) : nullptr;
  for (const Segment& seg : p.segs)
    for (int64_t b = p.r0; b < p.r1; ++b) {
      float* h = hb + (seg.d * B + b) * ldh_;
      if (h0)
        std::memcpy(h + seg.j0, h0 + s_.state_row(seg.d, b) + seg.j0,
                    (seg.j1 - seg.j0) * sizeof(float));
      else
        std::fill(h + seg.j0, h + seg.j1, 0.0f);
      if (kind_ == RnnCellKind::kLstm) {
        float* c = cb + (seg.d * B + b) * ldh_;
        if (c0)
          std::memcpy(c + seg.j0, c0 + s_.state_row(seg.d, b) + seg.j0,
                      (seg.j1 - seg.j0) * sizeof(float));
        else
          std::fill(c + seg.j0, c + seg.j1, 0.0f);
      }
      if (lowp_) to_mirror(h, seg.j0, seg.j1);
    }
}

void RnnSequenceKernel::recurrent_gemm(const Segment& seg, int group, const float* packed,
                                       const float* h, float* out, int64_t rows,
                                       bool reverse) const noexcept {
  if (int8_) {
    // Reversed (zigzag), the k blocks go last to first too, so the step starts on the panels
    // the previous one read last (still in L2): with the blocks in a fixed order the first
    // block's panels were the oldest ones at every step.
    const auto nb = static_cast<int64_t>(kbounds_[seg.d].size()) - 1;
    for (int64_t i = 0; i < nb; ++i)
      recurrent_gemm_int8(seg, group, packed, h, out, rows, reverse ? nb - 1 - i : i, i == 0,
                          reverse);
    return;
  }
  if (bf16_ && group == 0) {
    recurrent_gemm_bf16_blocks(seg, packed, h, out, rows, reverse, 0, 3, false);
    return;
  }
  if (bf16_) {  // the canonical GRU's h gate: never in k blocks
    Bf16GemmArgs g;
    g.a = reinterpret_cast<const uint32_t*>(packed + seg.rp1_off);
    g.m = seg.j1 - seg.j0;
    g.k = s_.hidden;
    g.panel = seg.pw_r1;
    g.b = reinterpret_cast<const uint32_t*>(h + mirror_delta_);
    g.ldb = ldh_;
    g.c = out;
    g.ldc = ld_gh1_;
    g.rows = rows;
    g.reverse = reverse;
    gemm_bf16(g);
    return;
  }
  if (group == 0)
    seg.rec0.run(packed + seg.rp0_off, h, out, rows, reverse);
  else
    seg.rec1.run(packed + seg.rp1_off, h, out, rows, reverse);
}

void RnnSequenceKernel::recurrent_gemm_bf16_blocks(const Segment& seg, const float* packed,
                                                   const float* h, float* out, int64_t rows,
                                                   bool reverse, int i0, int i1,
                                                   bool accumulate) const noexcept {
  Bf16GemmArgs g;
  g.m = g0_ * (seg.j1 - seg.j0);
  g.panel = seg.pw_r0;
  g.ldb = ldh_;
  g.c = out;
  g.ldc = ld_gh0_;
  g.rows = rows;
  g.reverse = reverse;
  g.accumulate = accumulate;
  const auto* base = reinterpret_cast<const uint32_t*>(packed + seg.rp0_off);
  const auto* mirror = reinterpret_cast<const uint32_t*>(h + mirror_delta_);
  const Bf16KBlocks blocks = bf16_kblocks(seg.j0, seg.j1, g.m, g.panel);
  // Reversed (zigzag): the blocks last to first too, as in recurrent_gemm's int8 path.
  const int n = std::min(i1, blocks.n);
  for (int j = i0; j < n; ++j) {
    const int i = reverse ? n - 1 - (j - i0) : j;
    g.a = base + blocks.b[i].words;
    g.k = blocks.b[i].k1 - blocks.b[i].k0;
    g.b = mirror + blocks.b[i].k0 / 2;
    gemm_bf16(g);
    g.accumulate = true;
  }
}

void RnnSequenceKernel::recurrent_gemm_part(const Segment& seg, int part, const float* packed,
                                            const float* h, float* out,
                                            bool reverse) const noexcept {
  if (int8_) {
    // k blocks: part 0 = the segment's own (its units of h), part 1 = every other, accumulated.
    if (part == 0) {
      recurrent_gemm_int8(seg, 0, packed, h, out, 1, seg.kb, true, reverse);
    } else {
      for (int64_t kb = 0; kb + 1 < static_cast<int64_t>(kbounds_[seg.d].size()); ++kb)
        if (kb != seg.kb) recurrent_gemm_int8(seg, 0, packed, h, out, 1, kb, false, reverse);
    }
    return;
  }
  if (bf16_ && kblocked_) {
    // The own units' block (packed first), then the others', accumulated.
    if (part == 0)
      recurrent_gemm_bf16_blocks(seg, packed, h, out, 1, reverse, 0, 1, false);
    else
      recurrent_gemm_bf16_blocks(seg, packed, h, out, 1, reverse, 1, 3, true);
    return;
  }
  if (bf16_) {
    // Pair rows of k: the own units [j0, j1) start on an even k (whole cache lines).
    Bf16GemmArgs g;
    g.a = reinterpret_cast<const uint32_t*>(packed + seg.rp0_off);
    g.m = g0_ * (seg.j1 - seg.j0);
    g.k = s_.hidden;
    g.panel = seg.pw_r0;
    g.b = reinterpret_cast<const uint32_t*>(h + mirror_delta_);
    g.ldb = ldh_;
    g.c = out;
    g.ldc = ld_gh0_;
    g.reverse = reverse;
    const int64_t own0 = seg.j0 / 2, own1 = bf16_pairs(seg.j1), all = bf16_pairs(s_.hidden);
    if (part == 0) {
      g.q0 = own0;
      g.q1 = own1;
      gemm_bf16(g);
    } else {
      g.accumulate = true;
      if (own0 > 0) {
        g.q0 = 0;
        g.q1 = own0;
        gemm_bf16(g);
      }
      if (own1 < all) {
        g.q0 = own1;
        g.q1 = all;
        gemm_bf16(g);
      }
    }
    return;
  }
  const float* r = packed + seg.rp0_off;
  if (part == 0) {
    seg.rec0.run_row_k_range(r, h, out, seg.j0, seg.j1, false, reverse);
  } else {
    seg.rec0.run_row_k_range(r, h, out, 0, seg.j0, true, reverse);
    seg.rec0.run_row_k_range(r, h, out, seg.j1, s_.hidden, true, reverse);
  }
}

void RnnSequenceKernel::recurrent_gemm_int8(const Segment& seg, int group, const float* packed,
                                            const float* h, float* out, int64_t rows, int64_t kb,
                                            bool first, bool reverse) const noexcept {
  const std::vector<int64_t>& bounds = kbounds_[seg.d];
  const Int8Aux aux = int8_aux(seg);
  const int64_t m = (group == 0 ? g0_ : 1) * (seg.j1 - seg.j0);
  const uint32_t* mirror = reinterpret_cast<const uint32_t*>(h + mirror_delta_);
  Int8GemmArgs g;
  g.panel = group == 0 ? seg.pw_r0 : seg.pw_r1;
  // Block kb of R is an operand of its own (packed block by block, pack_segment).
  g.a = reinterpret_cast<const uint32_t*>(packed + (group == 0 ? seg.rp0_off : seg.rp1_off)) +
        int8_block_words(m, g.panel, bounds[kb]);
  g.m = m;
  g.k = bounds[kb + 1] - bounds[kb];
  g.a_scale = packed + aux.r_scale[group];
  g.colsum = reinterpret_cast<const int32_t*>(packed + aux.r_colsum[group]) + kb * m;
  g.b = mirror + bounds[kb] / 4;
  g.ldb = ldh_;
  g.bp = mirror + int8_param_word(bounds[kb]);
  g.c = out;
  g.ldc = group == 0 ? ld_gh0_ : ld_gh1_;
  g.rows = rows;
  g.accumulate = !first;
  g.reverse = reverse;
  gemm_int8(g);
}

void RnnSequenceKernel::step(const ThreadPlan& p, int64_t s, int64_t s0, int64_t s1,
                             const Buffers& io, const float* packed, float* scratch,
                             SpinBarrier* barrier, PeerWait wait_peers) const noexcept {
  const int64_t B = s_.batch, G = s_.gates, T = s_.seq_len;
  const int64_t DBH = s_.num_directions * B * ldh_;
  const float* hprev_all = scratch + hb_off_ + (s & 1) * DBH;
  float* hnext_all = scratch + hb_off_ + ((s + 1) & 1) * DBH;
  const float* xw = scratch + xw_off_;
  float* gh0 = scratch + gh0_off_;
  float* y = static_cast<float*>(io.outputs[0]);
  const void* lens = s_.has_seq_lens ? io.inputs[kRnnSeqLens] : nullptr;
  const bool has_bias = s_.has_bias;
  // At step 0 without initial_h, h_prev R^T is zero: LSTM and RNN skip the GEMM.
  const bool zero_h = s == 0 && !s_.has_initial_h;
  const bool active_p = p.active();
  const bool zig = schedule_.zigzag && (s & 1);

  // Calls f(ra, rb) for each run of rows in [r0, r1) whose sequence covers time tt.
  auto for_active_runs = [&](int64_t tt, auto&& f) {
    if (!lens) {
      f(p.r0, p.r1);
      return;
    }
    int64_t b = p.r0;
    while (b < p.r1) {
      while (b < p.r1 && s_.seq_len_of(lens, b) <= tt) ++b;
      const int64_t a = b;
      while (b < p.r1 && s_.seq_len_of(lens, b) > tt) ++b;
      if (a < b) f(a, b);
    }
  };
  // Y for this step (h or 0), and h carried over for rows past their length.
  auto finish_rows = [&](const Segment& seg, int64_t tt) {
    const int64_t w = seg.j1 - seg.j0;
    const float* hprev = hprev_all + seg.d * B * ldh_;
    float* hnext = hnext_all + seg.d * B * ldh_;
    for (int64_t b = p.r0; b < p.r1; ++b) {
      float* yr = y + s_.y_row(tt, seg.d, b) + seg.j0;
      float* hn = hnext + b * ldh_ + seg.j0;
      if (s_.seq_len_of(lens, b) > tt) {
        std::memcpy(yr, hn, w * sizeof(float));
      } else {
        std::memcpy(hn, hprev + b * ldh_ + seg.j0, w * sizeof(float));
        std::fill(yr, yr + w, 0.0f);
      }
      if (lowp_) to_mirror(hnext + b * ldh_, seg.j0, seg.j1);
    }
  };
  auto time_of = [&](int d) { return s_.is_reverse(d) ? T - 1 - s : s; };
  auto xg_of = [&](const Segment& seg, int64_t tt) {
    return xw + (tt - s_.window_begin(seg.d, s0, s1)) * B * ldx_ + seg.d * dir_x_ + G * seg.j0;
  };

  // Split: a one-row plan with peers to wait for starts on its own units of h_prev (zigzag
  // keeps the plain walk: its panel order is what keeps weights in L2).
  const bool split = wait_peers.fn && p.r1 - p.r0 == 1 && !schedule_.zigzag;
  if (!split) wait_peers();
  auto gh_of = [&](const Segment& seg) { return gh0 + seg.d * dir_gh0_ + g0_ * seg.j0; };
  auto hrow_of = [&](const Segment& seg) { return hprev_all + seg.d * B * ldh_ + p.r0 * ldh_; };
  if (split) {
    const bool skip = zero_h && kind_ != RnnCellKind::kGru;  // no GEMM at all
    if (active_p && !skip)
      for (const Segment& seg : p.segs)
        recurrent_gemm_part(seg, 0, packed, hrow_of(seg), gh_of(seg) + p.r0 * ld_gh0_, false);
    wait_peers();
    if (active_p && !skip)
      for (const Segment& seg : p.segs)
        recurrent_gemm_part(seg, 1, packed, hrow_of(seg), gh_of(seg) + p.r0 * ld_gh0_, false);
  }

  if (kind_ == RnnCellKind::kLstm || kind_ == RnnCellKind::kRnn) {
    if (!active_p) return;
    for (const Segment& seg : p.segs) {
      const int d = seg.d;
      const int64_t w = seg.j1 - seg.j0, tt = time_of(d);
      const float* hprev = hprev_all + d * B * ldh_;
      float* gh = gh0 + d * dir_gh0_ + G * seg.j0;
      if (!zero_h && !split)
        recurrent_gemm(seg, 0, packed, hprev + p.r0 * ldh_, gh + p.r0 * ld_gh0_, p.r1 - p.r0, zig);
      const float* xg = xg_of(seg, tt);
      float* hnext = hnext_all + d * B * ldh_ + seg.j0;
      if (kind_ == RnnCellKind::kLstm) {
        LstmGateArgs a;
        a.hidden = w;
        a.gate_stride = w;
        a.gates_x = xg;
        a.ld_gates_x = ldx_;
        a.gates_h = zero_h ? nullptr : gh;
        a.ld_gates_h = ld_gh0_;
        a.bias = has_bias ? packed + bias_off_ + d * dir_x_ + G * seg.j0 : nullptr;
        a.peephole = s_.has_peephole ? packed + peep_off_ + d * dir_p_ + 3 * seg.j0 : nullptr;
        float* c = scratch + cb_off_ + d * B * ldh_ + seg.j0;
        a.c_prev = c;
        a.ld_c_prev = ldh_;
        a.c = c;
        a.ld_c = ldh_;
        a.h = hnext;
        a.ld_h = ldh_;
        a.clip = s_.clip;
        a.input_forget = s_.input_forget;
        for_active_runs(tt, [&](int64_t ra, int64_t rb) { lstm_gates(a, GateTile{ra, rb, 0, w}); });
      } else {
        RnnGateArgs a;
        a.hidden = w;
        a.gates_x = xg;
        a.ld_gates_x = ldx_;
        a.gates_h = zero_h ? nullptr : gh;
        a.ld_gates_h = ld_gh0_;
        a.bias = has_bias ? packed + bias_off_ + d * dir_x_ + seg.j0 : nullptr;
        a.h = hnext;
        a.ld_h = ldh_;
        a.clip = s_.clip;
        a.activation = s_.activation[d];
        for_active_runs(tt, [&](int64_t ra, int64_t rb) { rnn_gates(a, GateTile{ra, rb, 0, w}); });
      }
      finish_rows(seg, tt);
    }
    return;
  }

  // GRU.
  auto gru_args = [&](const Segment& seg, int64_t tt) {
    const int d = seg.d;
    GruGateArgs a;
    a.hidden = seg.j1 - seg.j0;
    a.gate_stride = a.hidden;
    a.gates_x = xg_of(seg, tt);
    a.ld_gates_x = ldx_;
    a.gates_h = gh0 + d * dir_gh0_ + g0_ * seg.j0;
    a.ld_gates_h = ld_gh0_;
    a.bias_x = has_bias ? packed + bias_off_ + d * dir_x_ + G * seg.j0 : nullptr;
    a.bias_h = has_bias ? packed + bias_h_off_ + d * dir_x_ + G * seg.j0 : nullptr;
    a.h_prev = hprev_all + d * B * ldh_ + seg.j0;
    a.ld_h_prev = ldh_;
    a.h = hnext_all + d * B * ldh_ + seg.j0;
    a.ld_h = ldh_;
    a.clip = s_.clip;
    return a;
  };
  if (active_p) {
    for (const Segment& seg : p.segs) {
      const int d = seg.d;
      const int64_t tt = time_of(d), w = seg.j1 - seg.j0;
      const float* hprev = hprev_all + d * B * ldh_;
      GruGateArgs a = gru_args(seg, tt);
      if (!split)
        recurrent_gemm(seg, 0, packed, hprev + p.r0 * ldh_,
                       gh0 + d * dir_gh0_ + g0_ * seg.j0 + p.r0 * ld_gh0_, p.r1 - p.r0, zig);
      if (!canonical_gru_) {
        for_active_runs(tt, [&](int64_t ra, int64_t rb) {
          gru_gates_lbr(a, GateTile{ra, rb, 0, w});
        });
        finish_rows(seg, tt);
      } else {
        a.z = scratch + zb_off_ + d * B * ldh_ + seg.j0;
        a.ld_z = ldh_;
        a.rh = scratch + rhb_off_ + d * B * ldh_ + seg.j0;
        a.ld_rh = ldh_;
        gru_gates_reset(a, GateTile{p.r0, p.r1, 0, w});
        if (lowp_)
          for (int64_t b = p.r0; b < p.r1; ++b)
            to_mirror(scratch + rhb_off_ + (d * B + b) * ldh_, seg.j0, seg.j1);
      }
    }
  }
  if (!canonical_gru_) return;
  if (barrier) barrier->wait();  // every thread's r * h_prev is in rhb
  if (!active_p) return;
  for (const Segment& seg : p.segs) {
    const int d = seg.d;
    const int64_t tt = time_of(d), w = seg.j1 - seg.j0;
    float* ghh = scratch + gh1_off_ + d * dir_gh1_ + seg.j0;
    recurrent_gemm(seg, 1, packed, scratch + rhb_off_ + (d * B + p.r0) * ldh_, ghh + p.r0 * ld_gh1_,
                   p.r1 - p.r0, zig);
    GruGateArgs a = gru_args(seg, tt);
    a.gates_hh = ghh;
    a.ld_gates_hh = ld_gh1_;
    a.z = scratch + zb_off_ + d * B * ldh_ + seg.j0;
    a.ld_z = ldh_;
    for_active_runs(tt, [&](int64_t ra, int64_t rb) {
      gru_gates_output(a, GateTile{ra, rb, 0, w});
    });
    finish_rows(seg, tt);
  }
}

void RnnSequenceKernel::write_final(const ThreadPlan& p, const Buffers& io, const float* hb,
                                    const float* cb) const noexcept {
  if (s_.num_outputs < 2 || !p.active()) return;
  const int64_t B = s_.batch;
  float* yh = static_cast<float*>(io.outputs[1]);
  float* yc = s_.num_outputs > 2 ? static_cast<float*>(io.outputs[2]) : nullptr;
  for (const Segment& seg : p.segs)
    for (int64_t b = p.r0; b < p.r1; ++b) {
      const size_t bytes = (seg.j1 - seg.j0) * sizeof(float);
      std::memcpy(yh + s_.state_row(seg.d, b) + seg.j0, hb + (seg.d * B + b) * ldh_ + seg.j0,
                  bytes);
      if (yc)
        std::memcpy(yc + s_.state_row(seg.d, b) + seg.j0, cb + (seg.d * B + b) * ldh_ + seg.j0,
                    bytes);
    }
}

void RnnSequenceKernel::run(const TeamContext& team, const Buffers& io) const noexcept {
  // A team of another size than init's (the runtime may give fewer threads): member 0 runs
  // every block alone, the others have nothing to do.
  const bool solo = team.nthr != team_;
  if (solo && team.ithr != 0) return;
  const int nthr = solo ? 1 : team.nthr;
  const int ithr = solo ? 0 : team.ithr;
  float* scratch = static_cast<float*>(team.scratch);
  SpinBarrier* barrier = reinterpret_cast<SpinBarrier*>(scratch);
  const ThreadPlan& own = solo ? solo_ : plans_[ithr];
  const int64_t T = s_.seq_len;
  const float* x = static_cast<const float*>(io.inputs[kRnnX]);

  // Phase 0: per-run set-up of this thread's share; one OpenMP barrier publishes it all.
  if (ithr == 0 && nthr > 1) new (barrier) SpinBarrier(nthr);
  auto flag = [&](int t) {
    return reinterpret_cast<TeamWord*>(scratch + flags_off_ + t * kFlagFloats);
  };
  if (nthr > 1) new (flag(ithr)) TeamWord();
  const float* packed = const_weights_ ? packed_.data_as<float>() : scratch + scratch_packed_off_;
  if (!const_weights_ && own.active() && own.r0 == 0) {
    WeightSources src{static_cast<const float*>(io.inputs[kRnnW]),
                      static_cast<const float*>(io.inputs[kRnnR]),
                      s_.has_bias ? static_cast<const float*>(io.inputs[kRnnB]) : nullptr,
                      s_.has_peephole ? static_cast<const float*>(io.inputs[kRnnP]) : nullptr};
    for (const Segment& seg : own.segs) pack_segment(src, seg, scratch + scratch_packed_off_);
  }
  init_state(own, io, scratch + hb_off_, scratch + cb_off_);
  if (nthr > 1) {
#pragma omp barrier
  }

  // The recurrence. Thread ithr computes plan ithr at every step (weight-centric
  // streamlining), or plan (ithr + step) mod nthr with the shuffle knob.
  const bool shuffle = s_.wcs_shuffle && nthr > 1;
  // With batch rows as the only split (xj = 1) a thread owns every unit of its rows: its h rows
  // depend on nothing another thread computes, so the threads run the steps without meeting.
  const bool sync = nthr > 1 && (shuffle || schedule_.xj > 1);
  // The per-step exchange as per-thread step counters instead of the central barrier: each
  // member publishes "step s done" on its own cache line and waits for the others' lines, one
  // cache-line transfer instead of an atomic read-modify-write chain plus a release broadcast
  // (the step is a few microseconds at batch 1). Same guarantee as a barrier: nobody starts
  // step s + 1 (which overwrites the h buffer step s reads) before everyone finished step s.
  const bool counters = sync && !shuffle && !canonical_gru_ && nthr <= 8;
  // Waits spin for a bounded time, then yield, then sleep (ops/rnn/team_wait.h): a preempted peer
  // must not make the others burn their time slices. Counters are 32-bit (the futex word),
  // compared modulo 2^32.
  // Publishing "step s done" and waiting for the peers' are separate: the wait for step s - 1
  // happens inside step s (PeerWait), after the part of the GEMM that reads only the thread's
  // own units of h_prev when it has one row (batch 1), so a step's exchange overlaps work.
  struct WaitCtx {
    TeamWord* (*flag)(float*, int64_t, int);
    float* scratch;
    int64_t flags_off;
    int ithr, nthr;
    uint32_t done;
  };
  auto flag_of = [](float* sc, int64_t off, int t) {
    return reinterpret_cast<TeamWord*>(sc + off + t * kFlagFloats);
  };
  WaitCtx wctx{flag_of, scratch, flags_off_, ithr, nthr, 0};
  PeerWait peer_wait;
  if (counters) {
    peer_wait.ctx = &wctx;
    peer_wait.fn = [](void* c) {
      auto* w = static_cast<WaitCtx*>(c);
      const uint32_t done = w->done;
      if (done == 0) return;  // step 0 waits for nobody
      for (int t = 0; t < w->nthr; ++t) {
        if (t == w->ithr) continue;
        team_wait(*w->flag(w->scratch, w->flags_off, t),
                  [done](uint32_t v) { return static_cast<int32_t>(v - done) >= 0; });
      }
    };
  }
  const bool abortable = calib_deadline_ms_ > 0 && (!sync || counters);
  bool aborted = false;
  for (int64_t s0 = 0; s0 < T && !aborted; s0 += chunk_) {
    const int64_t s1 = std::min(T, s0 + chunk_);
    // Hoisted input projections of this chunk, for the thread's own block: no barrier needed
    // unless another thread will read them (shuffle).
    hoist(own, x, packed, scratch + xw_off_, s0, s1, scratch, ithr);
    if (shuffle) barrier->wait();
    for (int64_t s = s0; s < s1; ++s) {
      if (abortable) {
        if (ithr == 0 && std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now().time_since_epoch())
                                 .count() > calib_deadline_ms_)
          calib_aborted_.store(true, std::memory_order_release);
        if (calib_aborted_.load(std::memory_order_acquire)) {
          // Release the peers' waits for good; they see the flag at their next step.
          if (counters) flag(ithr)->publish(static_cast<uint32_t>(T + (int64_t{1} << 30)));
          aborted = true;
          break;
        }
      }
      const ThreadPlan& p = shuffle ? plans_[(ithr + s) % nthr] : own;
      wctx.done = static_cast<uint32_t>(s);  // peers must have finished steps < s
      step(p, s, s0, s1, io, packed, scratch, sync ? barrier : nullptr, peer_wait);
      if (s + 1 < T && sync) {  // h of step s is read by all at s + 1
        if (counters)
          flag(ithr)->publish(static_cast<uint32_t>(s + 1));
        else
          barrier->wait();
      }
    }
  }
  if (aborted) return;
  const ThreadPlan& last = shuffle ? plans_[(ithr + T - 1) % nthr] : own;
  write_final(last, io, scratch + hb_off_ + (T & 1) * s_.num_directions * s_.batch * ldh_,
              scratch + cb_off_);
}
}  // namespace graphi::ops::rnn_wcs

namespace graphi::ops {

namespace {

using rnn_wcs::RnnSequenceKernel;

// ---- registration ----

Result<std::vector<TensorDesc>> infer_rnn(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(RnnSpec s, rnn_spec(ctx.node, ctx.inputs, ctx.num_outputs, ctx.where));
  return rnn_output_descs(s);
}

CostHint cost_rnn(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                  std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const TensorDesc& w = *inputs[kRnnW];
  const TensorDesc& r = *inputs[kRnnR];
  const TensorDesc& y = *outputs[0];
  // Y is [T, D, B, H] or [B, T, D, H]: T*D*B*H elements either way.
  const double tdbh = static_cast<double>(y.numel());
  const double gh = static_cast<double>(w.shape[1]);  // G*H
  const double h = static_cast<double>(r.shape[2]), i = static_cast<double>(w.shape[2]);
  const double g = gh / std::max(1.0, h);
  c.flops = 2.0 * tdbh * g * (i + h) + tdbh * g * 10.0;  // GEMMs + gates
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  for (const TensorDesc* d : outputs) c.bytes += static_cast<double>(d->bytes());
  return c;
}

template <RnnCellKind K>
std::unique_ptr<Kernel> make_rnn_kernel() {
  return std::make_unique<RnnSequenceKernel>(K);
}

}  // namespace

std::string rnn_kernel_description(const Kernel& k) {
  const auto* rnn = dynamic_cast<const RnnSequenceKernel*>(&k);
  if (!rnn) return "";
  return std::string(rnn->name()) + " " + rnn->schedule().to_string() +
         (rnn->bf16()   ? std::string(" bf16 weights (") + bf16_path_name(active_bf16_path()) + ")"
          : rnn->int8() ? std::string(" int8 weights (") + int8_path_name(active_int8_path()) + ")"
                        : std::string());
}

template <RnnCellKind K>
std::unique_ptr<Kernel> make_train_kernel() {
  return make_rnn_train_forward_kernel(K);
}

void register_rnn_ops(Registry& r) {
  // The training form (ops/rnn/rnn_train.h) has a kernel of its own, tried first; it declines
  // every inference node.
  r.add({"LSTM",
         infer_rnn,
         cost_rnn,
         false,
         {make_train_kernel<RnnCellKind::kLstm>, make_rnn_kernel<RnnCellKind::kLstm>}});
  r.add({"GRU",
         infer_rnn,
         cost_rnn,
         false,
         {make_train_kernel<RnnCellKind::kGru>, make_rnn_kernel<RnnCellKind::kGru>}});
  r.add({"RNN",
         infer_rnn,
         cost_rnn,
         false,
         {make_train_kernel<RnnCellKind::kRnn>, make_rnn_kernel<RnnCellKind::kRnn>}});
  register_rnn_grad_ops(r);
}

}  // namespace graphi::ops
