// Internal to ops/: the fused gate kernels of ops/rnn/rnn_gates.h written once over the SIMD traits
// of ops/vec_math.h. Included by ops/rnn/rnn_gates.cpp (scalar) and ops/rnn/rnn_gates_avx2.cpp /
// ops/rnn/rnn_gates_avx512.cpp after they define GRAPHI_VEC_<ISA> and include ops/rnn/rnn_gates.h;
// the code below is compiled under ops/vec_math.h's target switch, so it includes nothing else and
// uses no std:: templates (see ops/vec_math.h).
#pragma once

#include "ops/vec_math.h"

namespace {

using graphi::ops::GateTile;
using graphi::ops::GruGateArgs;
using graphi::ops::LstmBackwardArgs;
using graphi::ops::LstmGateArgs;
using graphi::ops::PhasedBlendArgs;
using graphi::ops::PhasedGateArgs;
using graphi::ops::RnnActivation;
using graphi::ops::RnnGateArgs;

template <class T>
inline typename T::V ld_n(const float* p, int n) {
  return n == T::kWidth ? T::load(p) : T::load_n(p, n);
}
template <class T>
inline void st_n(float* p, typename T::V v, int n) {
  if (n == T::kWidth) {
    T::store(p, v);
  } else {
    T::store_n(p, v, n);
  }
}
// min(max(v, -clip), clip) with v second in both, so NaN propagates.
template <class T>
inline typename T::V clip_v(typename T::V v, float clip) {
  return clip > 0.0f ? T::min(T::set1(clip), T::max(T::set1(-clip), v)) : v;
}
inline int lanes_left(int64_t j, int64_t end, int width) {
  return end - j >= width ? width : static_cast<int>(end - j);
}

// The LSTM/GRU gates' activations: vec_math.h's vsigmoid / vtanh without the refinements that
// only matter in isolation (exact 0/1 saturation, tanh's small-|x| polynomial for relative
// precision near 0; NaN still propagates through the arithmetic). Absolute error stays below
// ~1.5e-7, far inside the cell's tolerances; ~25% fewer instructions per gate.
template <class T>
inline typename T::V gate_sigmoid(typename T::V x) {
  using V = typename T::V;
  V e = vexp_nonpos<T>(T::sub(T::zero(), T::abs(x)));  // exp(-|x|), NaN stays NaN
  V s = T::rcp(T::add(T::set1(1.0f), e));
  return T::select(T::lt(x, T::zero()), T::mul(e, s), s);
}
template <class T>
inline typename T::V gate_tanh(typename T::V x) {
  using V = typename T::V;
  const V one = T::set1(1.0f);
  // tanh|x| = (1 - e2) / (1 + e2), e2 = exp(-2|x|); min() keeps a NaN |x| (second operand).
  V e2 = vexp_nonpos<T>(T::mul(T::set1(-2.0f), T::min(T::set1(9.5f), T::abs(x))));
  return T::copysign(T::mul(T::sub(one, e2), T::rcp(T::add(one, e2))), x);
}

template <class T>
void lstm_gates_t(const LstmGateArgs& a, const GateTile& tile) noexcept {
  using V = typename T::V;
  const int64_t gs = a.gate_stride > 0 ? a.gate_stride : a.hidden;
  const V one = T::set1(1.0f);
  const float* pb = a.bias;
  const float* pp = a.peephole;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    const float* gx = a.gates_x + r * a.ld_gates_x;
    const float* gh = a.gates_h ? a.gates_h + r * a.ld_gates_h : nullptr;
    const float* cp = a.c_prev ? a.c_prev + r * a.ld_c_prev : nullptr;
    float* c = a.c + r * a.ld_c;
    float* h = a.h + r * a.ld_h;
    float* sv = a.saved ? a.saved + r * a.ld_saved : nullptr;
    for (int64_t j = tile.col_begin; j < tile.col_end; j += T::kWidth) {
      const int n = lanes_left(j, tile.col_end, T::kWidth);
      V gi = ld_n<T>(gx + j, n);
      V go = ld_n<T>(gx + gs + j, n);
      V gf = ld_n<T>(gx + 2 * gs + j, n);
      V gc = ld_n<T>(gx + 3 * gs + j, n);
      if (gh) {
        gi = T::add(gi, ld_n<T>(gh + j, n));
        go = T::add(go, ld_n<T>(gh + gs + j, n));
        gf = T::add(gf, ld_n<T>(gh + 2 * gs + j, n));
        gc = T::add(gc, ld_n<T>(gh + 3 * gs + j, n));
      }
      if (pb) {
        gi = T::add(gi, ld_n<T>(pb + j, n));
        go = T::add(go, ld_n<T>(pb + gs + j, n));
        gf = T::add(gf, ld_n<T>(pb + 2 * gs + j, n));
        gc = T::add(gc, ld_n<T>(pb + 3 * gs + j, n));
      }
      const V c_prev = cp ? ld_n<T>(cp + j, n) : T::zero();
      if (pp) {
        gi = T::fmadd(ld_n<T>(pp + j, n), c_prev, gi);
        gf = T::fmadd(ld_n<T>(pp + 2 * gs + j, n), c_prev, gf);
      }
      const V i = gate_sigmoid<T>(clip_v<T>(gi, a.clip));
      const V f = a.input_forget ? T::sub(one, i) : gate_sigmoid<T>(clip_v<T>(gf, a.clip));
      const V g = gate_tanh<T>(clip_v<T>(gc, a.clip));
      const V c_new = T::fmadd(f, c_prev, T::mul(i, g));
      if (pp) go = T::fmadd(ld_n<T>(pp + gs + j, n), c_new, go);
      const V o = gate_sigmoid<T>(clip_v<T>(go, a.clip));
      if (sv) {
        st_n<T>(sv + j, i, n);
        st_n<T>(sv + gs + j, o, n);
        st_n<T>(sv + 2 * gs + j, f, n);
        st_n<T>(sv + 3 * gs + j, g, n);
        st_n<T>(sv + 4 * gs + j, c_new, n);
      }
      st_n<T>(c + j, c_new, n);
      st_n<T>(h + j, T::mul(o, gate_tanh<T>(c_new)), n);
    }
  }
}

// z and r pre-activations of one vector of hidden units: Xg + Hg + Wb + Rb, clipped.
template <class T>
inline void gru_zr(const GruGateArgs& a, int64_t gs, const float* gx, const float* gh, int64_t j,
                   int n, typename T::V* z_pre, typename T::V* r_pre) {
  using V = typename T::V;
  V z = ld_n<T>(gx + j, n);
  V r = ld_n<T>(gx + gs + j, n);
  if (gh) {
    z = T::add(z, ld_n<T>(gh + j, n));
    r = T::add(r, ld_n<T>(gh + gs + j, n));
  }
  if (a.bias_x) {
    z = T::add(z, ld_n<T>(a.bias_x + j, n));
    r = T::add(r, ld_n<T>(a.bias_x + gs + j, n));
  }
  if (a.bias_h) {
    z = T::add(z, ld_n<T>(a.bias_h + j, n));
    r = T::add(r, ld_n<T>(a.bias_h + gs + j, n));
  }
  *z_pre = clip_v<T>(z, a.clip);
  *r_pre = clip_v<T>(r, a.clip);
}

template <class T>
void gru_gates_lbr_t(const GruGateArgs& a, const GateTile& tile) noexcept {
  using V = typename T::V;
  const int64_t gs = a.gate_stride > 0 ? a.gate_stride : a.hidden;
  const V one = T::set1(1.0f);
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    const float* gx = a.gates_x + r * a.ld_gates_x;
    const float* gh = a.gates_h + r * a.ld_gates_h;
    const float* hp = a.h_prev ? a.h_prev + r * a.ld_h_prev : nullptr;
    float* h = a.h + r * a.ld_h;
    for (int64_t j = tile.col_begin; j < tile.col_end; j += T::kWidth) {
      const int n = lanes_left(j, tile.col_end, T::kWidth);
      V z_pre, r_pre;
      gru_zr<T>(a, gs, gx, gh, j, n, &z_pre, &r_pre);
      const V z = gate_sigmoid<T>(z_pre);
      const V rg = gate_sigmoid<T>(r_pre);
      V lin = ld_n<T>(gh + 2 * gs + j, n);  // h_prev Rh^T
      if (a.bias_h) lin = T::add(lin, ld_n<T>(a.bias_h + 2 * gs + j, n));
      V hh_pre = T::fmadd(rg, lin, ld_n<T>(gx + 2 * gs + j, n));
      if (a.bias_x) hh_pre = T::add(hh_pre, ld_n<T>(a.bias_x + 2 * gs + j, n));
      const V hh = gate_tanh<T>(clip_v<T>(hh_pre, a.clip));
      const V h_prev = hp ? ld_n<T>(hp + j, n) : T::zero();
      // (1 - z) * hh + z * h_prev
      st_n<T>(h + j, T::fmadd(z, h_prev, T::mul(T::sub(one, z), hh)), n);
    }
  }
}

template <class T>
void gru_gates_reset_t(const GruGateArgs& a, const GateTile& tile) noexcept {
  using V = typename T::V;
  const int64_t gs = a.gate_stride > 0 ? a.gate_stride : a.hidden;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    const float* gx = a.gates_x + r * a.ld_gates_x;
    const float* gh = a.gates_h ? a.gates_h + r * a.ld_gates_h : nullptr;
    const float* hp = a.h_prev ? a.h_prev + r * a.ld_h_prev : nullptr;
    float* zo = a.z + r * a.ld_z;
    float* rho = a.rh + r * a.ld_rh;
    for (int64_t j = tile.col_begin; j < tile.col_end; j += T::kWidth) {
      const int n = lanes_left(j, tile.col_end, T::kWidth);
      V z_pre, r_pre;
      gru_zr<T>(a, gs, gx, gh, j, n, &z_pre, &r_pre);
      st_n<T>(zo + j, gate_sigmoid<T>(z_pre), n);
      const V h_prev = hp ? ld_n<T>(hp + j, n) : T::zero();
      st_n<T>(rho + j, T::mul(gate_sigmoid<T>(r_pre), h_prev), n);
    }
  }
}

template <class T>
void gru_gates_output_t(const GruGateArgs& a, const GateTile& tile) noexcept {
  using V = typename T::V;
  const int64_t gs = a.gate_stride > 0 ? a.gate_stride : a.hidden;
  const V one = T::set1(1.0f);
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    const float* gx = a.gates_x + r * a.ld_gates_x;
    const float* ghh = a.gates_hh + r * a.ld_gates_hh;
    const float* zi = a.z + r * a.ld_z;
    const float* hp = a.h_prev ? a.h_prev + r * a.ld_h_prev : nullptr;
    float* h = a.h + r * a.ld_h;
    for (int64_t j = tile.col_begin; j < tile.col_end; j += T::kWidth) {
      const int n = lanes_left(j, tile.col_end, T::kWidth);
      V pre = T::add(ld_n<T>(gx + 2 * gs + j, n), ld_n<T>(ghh + j, n));
      if (a.bias_x) pre = T::add(pre, ld_n<T>(a.bias_x + 2 * gs + j, n));
      if (a.bias_h) pre = T::add(pre, ld_n<T>(a.bias_h + 2 * gs + j, n));
      const V hh = gate_tanh<T>(clip_v<T>(pre, a.clip));
      const V z = ld_n<T>(zi + j, n);
      const V h_prev = hp ? ld_n<T>(hp + j, n) : T::zero();
      st_n<T>(h + j, T::fmadd(z, h_prev, T::mul(T::sub(one, z), hh)), n);
    }
  }
}

template <class T>
void rnn_gates_t(const RnnGateArgs& a, const GateTile& tile) noexcept {
  using V = typename T::V;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    const float* gx = a.gates_x + r * a.ld_gates_x;
    const float* gh = a.gates_h ? a.gates_h + r * a.ld_gates_h : nullptr;
    float* h = a.h + r * a.ld_h;
    for (int64_t j = tile.col_begin; j < tile.col_end; j += T::kWidth) {
      const int n = lanes_left(j, tile.col_end, T::kWidth);
      V pre = ld_n<T>(gx + j, n);
      if (gh) pre = T::add(pre, ld_n<T>(gh + j, n));
      if (a.bias) pre = T::add(pre, ld_n<T>(a.bias + j, n));
      pre = clip_v<T>(pre, a.clip);
      V out;
      switch (a.activation) {
        case RnnActivation::kRelu:
          out = T::max(T::zero(), pre);  // NaN stays NaN (pre is the second operand)
          break;
        case RnnActivation::kSigmoid:
          out = vsigmoid<T>(pre);
          break;
        case RnnActivation::kTanh:
        default:
          out = vtanh<T>(pre);
          break;
      }
      st_n<T>(h + j, out, n);
    }
  }
}

// One BPTT step of the LSTM (ops/rnn/rnn_gates.h, LstmBackwardArgs): the gate gradients and
// dL/dc_{t-1} from the saved activations, in registers.
template <class T>
void lstm_backward_t(const LstmBackwardArgs& a, const GateTile& tile) noexcept {
  using V = typename T::V;
  const int64_t H = a.hidden;
  const V one = T::set1(1.0f);
  const float* pp = a.peephole;
  const bool phased = a.phased_carry != nullptr;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    const float* sv = a.saved + r * a.ld_saved;
    const float* cp = a.c_prev ? a.c_prev + r * a.ld_c_prev : nullptr;
    const float* dy = a.dy ? a.dy + r * a.ld_dy : nullptr;
    const float* dh = a.dh + r * a.ld_dh;
    float* dc = a.dc + r * a.ld_dc;
    float* dg = a.dgates + r * a.ld_dgates;
    float* carry = phased ? a.phased_carry + r * a.ld_phased_carry : nullptr;
    const float* hp = phased ? a.h_prev + r * a.ld_h_prev : nullptr;
    float* gk = phased ? a.dk_planes + r * a.ld_dk : nullptr;
    const float* gv = phased ? a.gate + r * a.ld_gate : nullptr;  // k, dk/dphi, u, dk/dr_on
    for (int64_t j = tile.col_begin; j < tile.col_end; j += T::kWidth) {
      const int n = lanes_left(j, tile.col_end, T::kWidth);
      const V i = ld_n<T>(sv + j, n), o = ld_n<T>(sv + H + j, n), f = ld_n<T>(sv + 2 * H + j, n);
      const V g = ld_n<T>(sv + 3 * H + j, n), c = ld_n<T>(sv + 4 * H + j, n);
      const V tc = gate_tanh<T>(c);
      V dhv = ld_n<T>(dh + j, n);
      if (dy) dhv = T::add(dhv, ld_n<T>(dy + j, n));
      V dc_in = ld_n<T>(dc + j, n);
      const V cpv = cp ? ld_n<T>(cp + j, n) : T::zero();
      V keep = T::zero();  // (1 - k) dc_in: what skips the cell
      if (phased) {
        const V k = ld_n<T>(gv + j, n), skip = T::sub(one, k);
        const V dk =
            T::fmadd(dc_in, T::sub(c, cpv), T::mul(dhv, T::sub(T::mul(o, tc), ld_n<T>(hp + j, n))));
        const V dphi = T::mul(dk, ld_n<T>(gv + H + j, n));
        st_n<T>(gk + j, dphi, n);
        st_n<T>(gk + a.dk_plane + j, T::mul(dphi, ld_n<T>(gv + 2 * H + j, n)), n);
        st_n<T>(gk + 2 * a.dk_plane + j, T::mul(dk, ld_n<T>(gv + 3 * H + j, n)), n);
        st_n<T>(carry + j, T::mul(skip, dhv), n);
        keep = T::mul(skip, dc_in);
        dhv = T::mul(k, dhv);
        dc_in = T::mul(k, dc_in);
      }
      const V d_o = T::mul(T::mul(dhv, tc), T::mul(o, T::sub(one, o)));
      V dcv = T::fmadd(T::mul(dhv, o), T::sub(one, T::mul(tc, tc)), dc_in);
      if (pp) dcv = T::fmadd(d_o, ld_n<T>(pp + H + j, n), dcv);
      const V d_i = T::mul(T::mul(dcv, g), T::mul(i, T::sub(one, i)));
      const V d_f = T::mul(T::mul(dcv, cpv), T::mul(f, T::sub(one, f)));
      const V d_g = T::mul(T::mul(dcv, i), T::sub(one, T::mul(g, g)));
      st_n<T>(dg + j, d_i, n);
      st_n<T>(dg + H + j, d_o, n);
      st_n<T>(dg + 2 * H + j, d_f, n);
      st_n<T>(dg + 3 * H + j, d_g, n);
      V dcn = T::fmadd(dcv, f, keep);
      if (pp)
        dcn = T::fmadd(d_i, ld_n<T>(pp + j, n), T::fmadd(d_f, ld_n<T>(pp + 2 * H + j, n), dcn));
      st_n<T>(dc + j, dcn, n);
    }
  }
}

// The time gate k of one unit (ops/rnn/rnn_gates.h, PhasedBlendArgs) and its parts u, phi and
// 1 / r_on for the backward's planes. floor(u) by the 2^52 rounding trick, which vectorizes
// where the int64 conversion does not (before AVX-512DQ); |u| >= 2^52 is an integer already.
template <class T>
inline double phased_gate_t(double ts, double shift, double inv_tau, double r_on, double alpha,
                            double& u, double& phi, double& inv_r) {
  constexpr double kTwo52 = 4503599627370496.0;
  u = (ts - shift) * inv_tau;
  const double big = u < 0 ? -kTwo52 : kTwo52;
  double rn = (u + big) - big;  // u rounded to the nearest integer
  rn = __builtin_fabs(u) < kTwo52 ? rn : u;
  phi = u - (rn > u ? rn - 1.0 : rn);
  inv_r = 1.0 / r_on;
  const double up = 2.0 * phi * inv_r;
  const double open = phi < 0.5 * r_on ? up : 2.0 - up;  // rising, falling
  return phi < r_on ? open : alpha * phi;
}

// The blend of phased_blend_t, inference: c and h only.
template <class T>
void phased_blend_rows_t(int64_t n, double ts, double alpha, const float* __restrict shift,
                         const double* __restrict inv_tau, const float* __restrict r_on,
                         const float* __restrict cand_c, const float* __restrict cand_h,
                         float* __restrict c, const float* h_prev, float* h) noexcept {
  for (int64_t j = 0; j < n; ++j) {
    double u, phi, inv_r;
    const float k = static_cast<float>(
        phased_gate_t<T>(ts, shift[j], inv_tau[j], r_on[j], alpha, u, phi, inv_r));
    c[j] = k * cand_c[j] + (1.0f - k) * c[j];
    h[j] = k * cand_h[j] + (1.0f - k) * h_prev[j];
  }
}

// The blend of phased_blend_t, training: also c_t for the backward.
template <class T>
void phased_blend_saved_t(int64_t n, double ts, double alpha, const float* __restrict shift,
                          const double* __restrict inv_tau, const float* __restrict r_on,
                          const float* __restrict cand_c, const float* __restrict cand_h,
                          float* __restrict c, const float* h_prev, float* h,
                          float* __restrict sc) noexcept {
  for (int64_t j = 0; j < n; ++j) {
    double u, phi, inv_r;
    const float k = static_cast<float>(
        phased_gate_t<T>(ts, shift[j], inv_tau[j], r_on[j], alpha, u, phi, inv_r));
    const float cj = k * cand_c[j] + (1.0f - k) * c[j];
    c[j] = cj;
    h[j] = k * cand_h[j] + (1.0f - k) * h_prev[j];
    sc[j] = cj;
  }
}

// The time gate's planes (ops/rnn/rnn_gates.h, PhasedGateArgs): k as the blend rounds it, and
// its derivatives dk/dphi and dk/dr_on, and u.
template <class T>
void phased_gate_planes_t(int64_t n, double ts, double alpha, const float* __restrict shift,
                          const double* __restrict inv_tau, const float* __restrict r_on,
                          float* __restrict sk, float* __restrict sdphi, float* __restrict su,
                          float* __restrict sdr) noexcept {
  for (int64_t j = 0; j < n; ++j) {
    double u, phi, inv_r;
    const double r = r_on[j];
    sk[j] = static_cast<float>(phased_gate_t<T>(ts, shift[j], inv_tau[j], r, alpha, u, phi, inv_r));
    const bool rising = phi < 0.5 * r, open = phi < r;
    const double dphi_open = rising ? 2.0 * inv_r : -2.0 * inv_r;
    sdphi[j] = static_cast<float>(open ? dphi_open : alpha);
    su[j] = static_cast<float>(u);
    const double slope_r = 2.0 * phi * inv_r * inv_r;
    const double dr_open = rising ? -slope_r : slope_r;
    sdr[j] = static_cast<float>(open ? dr_open : 0.0);
  }
}

template <class T>
void phased_gate_row_t(const PhasedGateArgs& a) noexcept {
  phased_gate_planes_t<T>(a.n, a.ts, a.alpha, a.shift, a.inv_tau, a.r_on, a.out, a.out + a.n,
                          a.out + 2 * a.n, a.out + 3 * a.n);
}

// The PhasedLSTM's time gate and blend (ops/rnn/rnn_gates.h, PhasedBlendArgs). Plain loops
// without branches that the compiler vectorizes for this TU's ISA (doubles, 8 per AVX-512
// register; T only names the TU's copy). The pointers go in as __restrict parameters: read
// from the argument struct inside the loop's function, GCC 12 gives up on the float loads.
template <class T>
void phased_blend_t(const PhasedBlendArgs& a) noexcept {
  if (!a.saved_c) {
    phased_blend_rows_t<T>(a.n, a.ts, a.alpha, a.shift, a.inv_tau, a.r_on, a.cand_c, a.cand_h, a.c,
                           a.h_prev, a.h);
  } else {
    phased_blend_saved_t<T>(a.n, a.ts, a.alpha, a.shift, a.inv_tau, a.r_on, a.cand_c, a.cand_h, a.c,
                            a.h_prev, a.h, a.saved_c);
  }
}

}  // namespace
