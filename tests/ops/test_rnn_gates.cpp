// Fused LSTM/GRU/RNN gate kernels on every ISA path against naive double-precision cells written
// from the ONNX operator equations (starting from X, W, R, biases, peepholes and the states).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/rnn/rnn_gates.h"

using namespace graphi::ops;

namespace {

std::vector<const RnnGateKernels*> paths() {
  std::vector<const RnnGateKernels*> out;
  for (SimdIsa isa : {SimdIsa::kScalar, SimdIsa::kAvx2, SimdIsa::kAvx512})
    if (const RnnGateKernels* k = rnn_gate_kernels(isa)) out.push_back(k);
  return out;
}

std::vector<float> rnd(size_t n, std::mt19937& gen, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double clipd(double v, double clip) { return clip > 0 ? std::min(std::max(v, -clip), clip) : v; }

// out[b, ld*...]: out[b*ld + c] = sum_k in[b*in_ld + k] * w[c*kdim + k] (x W^T, ONNX W is [G*H,
// K]).
std::vector<float> project(const std::vector<float>& in, int64_t rows, int64_t kdim,
                           const std::vector<float>& w, int64_t cols, int64_t ld) {
  std::vector<float> out(rows * ld, 777.0f);  // padding must never be read as data
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t c = 0; c < cols; ++c) {
      double s = 0;
      for (int64_t k = 0; k < kdim; ++k) s += double(in[b * kdim + k]) * w[c * kdim + k];
      out[b * ld + c] = static_cast<float>(s);
    }
  return out;
}

// Every thread's tile of a team of nthr, so the whole state is covered by disjoint tiles.
std::vector<GateTile> team_tiles(int64_t rows, int64_t hidden, int nthr) {
  std::vector<GateTile> t;
  for (int i = 0; i < nthr; ++i) t.push_back(gate_tile_for_thread(rows, hidden, i, nthr));
  return t;
}

struct LstmCase {
  int64_t batch, input, hidden;
  bool use_h, bias, peephole, c_prev, input_forget;
  float clip;
};

// The LSTM cell's BPTT step for unit j, in double, from a saved row [i o f g c ...] (blocks of
// H), dh (dY included), dc_in = dL/dc_t, c_prev and the peephole [P_i P_o P_f] (or none).
struct CellGrad {
  double d_i, d_o, d_f, d_g, dc_out;
};
CellGrad cell_backward_ref(const float* sv, int64_t H, int64_t j, double dh, double dc_in,
                           double c_prev, const std::vector<float>* peep) {
  const double i = sv[j], o = sv[H + j], f = sv[2 * H + j], g = sv[3 * H + j];
  const double tc = std::tanh(static_cast<double>(sv[4 * H + j]));
  CellGrad r;
  r.d_o = dh * tc * o * (1 - o);
  double dc = dc_in + dh * o * (1 - tc * tc);
  if (peep) dc += r.d_o * (*peep)[H + j];
  r.d_i = dc * g * i * (1 - i);
  r.d_f = dc * c_prev * f * (1 - f);
  r.d_g = dc * i * (1 - g * g);
  r.dc_out = dc * f + (peep ? r.d_i * (*peep)[j] + r.d_f * (*peep)[2 * H + j] : 0.0);
  return r;
}

// The arguments of one LSTM backward step over rows of H units (optional c_prev, dY, peephole:
// nullptr); dh, c_prev and dc rows H floats apart.
LstmBackwardArgs backward_args(int64_t H, const std::vector<float>& saved, int64_t lds,
                               const std::vector<float>* cp, const std::vector<float>* dy,
                               int64_t ldy, const std::vector<float>* peep,
                               const std::vector<float>& dh, std::vector<float>& dc,
                               std::vector<float>& dg, int64_t ldg) {
  LstmBackwardArgs a;
  a.hidden = H;
  a.saved = saved.data();
  a.ld_saved = lds;
  if (cp) {
    a.c_prev = cp->data();
    a.ld_c_prev = H;
  }
  if (dy) {
    a.dy = dy->data();
    a.ld_dy = ldy;
  }
  if (peep) a.peephole = peep->data();
  a.dh = dh.data();
  a.ld_dh = H;
  a.dc = dc.data();
  a.ld_dc = H;
  a.dgates = dg.data();
  a.ld_dgates = ldg;
  return a;
}

}  // namespace

TEST_CASE("rnn gates: gate_tile_for_thread covers the state with disjoint tiles") {
  for (int64_t rows : {1, 3, 8}) {
    for (int64_t hidden : {1, 5, 16, 37, 64, 100, 1024}) {
      for (int nthr = 1; nthr <= 5; ++nthr) {
        std::vector<int> count(rows * hidden, 0);
        for (const GateTile& t : team_tiles(rows, hidden, nthr)) {
          REQUIRE(t.row_begin >= 0);
          REQUIRE(t.row_end <= rows);
          REQUIRE(t.col_begin >= 0);
          REQUIRE(t.col_end <= hidden);
          for (int64_t r = t.row_begin; r < t.row_end; ++r)
            for (int64_t c = t.col_begin; c < t.col_end; ++c) ++count[r * hidden + c];
          // Column splits start on cache lines when there is at least a line per thread.
          if (hidden >= 16 * nthr) CHECK(t.col_begin % 16 == 0);
        }
        for (int c : count) REQUIRE(c == 1);
      }
    }
  }
}

TEST_CASE("rnn gates: LSTM matches the ONNX equations on every path") {
  const LstmCase cases[] = {
      {1, 5, 1, true, true, false, true, false, 0.0f},
      {1, 16, 16, true, true, true, true, false, 0.0f},
      {3, 7, 37, true, true, true, true, false, 0.0f},
      {2, 9, 64, false, false, false, false, false, 0.0f},
      {4, 6, 23, true, true, true, true, true, 0.0f},
      {5, 8, 19, true, true, false, true, false, 1.5f},
      {2, 4, 70, true, false, true, true, false, 0.7f},
  };
  std::mt19937 gen(11);
  for (const LstmCase& cs : cases) {
    const int64_t B = cs.batch, I = cs.input, H = cs.hidden;
    INFO("B=" << B << " I=" << I << " H=" << H << " gates_h=" << cs.use_h << " bias=" << cs.bias
              << " peephole=" << cs.peephole << " c_prev=" << cs.c_prev
              << " input_forget=" << cs.input_forget << " clip=" << cs.clip);
    // ONNX inputs: W [4H, I], R [4H, H], B = [Wb, Rb] (8H), P [3H], gate order i, o, f, c.
    auto X = rnd(B * I, gen), Hp = rnd(B * H, gen), Cp = rnd(B * H, gen);
    auto W = rnd(4 * H * I, gen, -1.2f, 1.2f), R = rnd(4 * H * H, gen, -0.8f, 0.8f);
    auto Bias = rnd(8 * H, gen), P = rnd(3 * H, gen);
    // Naive reference in double.
    std::vector<double> ref_c(B * H), ref_h(B * H), ref_saved(B * 5 * H);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        double g[4];
        for (int q = 0; q < 4; ++q) {
          const int64_t row = q * H + j;
          double s = 0;
          for (int64_t k = 0; k < I; ++k) s += double(X[b * I + k]) * W[row * I + k];
          if (cs.use_h)
            for (int64_t k = 0; k < H; ++k) s += double(Hp[b * H + k]) * R[row * H + k];
          if (cs.bias) s += double(Bias[row]) + Bias[4 * H + row];
          g[q] = s;
        }
        const double cp = cs.c_prev ? Cp[b * H + j] : 0.0;
        const double pi = cs.peephole ? P[j] : 0, po = cs.peephole ? P[H + j] : 0,
                     pf = cs.peephole ? P[2 * H + j] : 0;
        const double i = sig(clipd(g[0] + pi * cp, cs.clip));
        const double f = cs.input_forget ? 1 - i : sig(clipd(g[2] + pf * cp, cs.clip));
        const double c = f * cp + i * std::tanh(clipd(g[3], cs.clip));
        const double o = sig(clipd(g[1] + po * c, cs.clip));
        ref_c[b * H + j] = c;
        ref_h[b * H + j] = o * std::tanh(c);
        const double act[5] = {i, o, f, std::tanh(clipd(g[3], cs.clip)), c};
        for (int q = 0; q < 5; ++q) ref_saved[b * 5 * H + q * H + j] = act[q];
      }
    }
    // Kernel inputs: x W^T and h R^T as separate addends (ld padded), bias = Wb + Rb.
    const int64_t ld = 4 * H + 3;
    auto gx = project(X, B, I, W, 4 * H, ld);
    auto gh = project(Hp, B, H, R, 4 * H, ld);
    std::vector<float> bias(4 * H);
    for (int64_t q = 0; q < 4 * H; ++q) bias[q] = Bias[q] + Bias[4 * H + q];
    for (const RnnGateKernels* k : paths()) {
      for (int nthr : {1, 2, 3}) {
        INFO("path " << simd_isa_name(k->isa) << " nthr " << nthr);
        const int64_t ldc = H + 5;
        std::vector<float> c(B * ldc, -9.0f), h(B * ldc, -9.0f);
        LstmGateArgs a;
        a.hidden = H;
        a.gates_x = gx.data();
        a.ld_gates_x = ld;
        a.gates_h = cs.use_h ? gh.data() : nullptr;
        a.ld_gates_h = ld;
        a.bias = cs.bias ? bias.data() : nullptr;
        a.peephole = cs.peephole ? P.data() : nullptr;
        a.c_prev = cs.c_prev ? Cp.data() : nullptr;
        a.ld_c_prev = H;
        a.c = c.data();
        a.ld_c = ldc;
        a.h = h.data();
        a.ld_h = ldc;
        a.clip = cs.clip;
        a.input_forget = cs.input_forget;
        // The training forward's activations: a separate matrix (nthr 1, 3), or written over
        // gates_x in place (nthr 2: gates_x copied into rows of 5H + 2 floats).
        const int64_t lds = 5 * H + 2;
        std::vector<float> saved(B * lds, -7.0f);
        if (nthr == 2) {
          for (int64_t b = 0; b < B; ++b)
            std::copy(gx.begin() + b * ld, gx.begin() + b * ld + 4 * H, saved.begin() + b * lds);
          a.gates_x = saved.data();
          a.ld_gates_x = lds;
        }
        a.saved = saved.data();
        a.ld_saved = lds;
        REQUIRE(check_lstm_gate_args(a, B, "test").is_ok());
        for (const GateTile& t : team_tiles(B, H, nthr)) k->lstm(a, t);
        double err = 0;
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t j = 0; j < 5 * H; ++j)
            err = std::max(err, std::fabs(saved[b * lds + j] - ref_saved[b * 5 * H + j]));
          for (int64_t j = 5 * H; j < lds; ++j) CHECK(saved[b * lds + j] == -7.0f);
        }
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t j = 0; j < H; ++j) {
            err = std::max(err, std::fabs(c[b * ldc + j] - ref_c[b * H + j]));
            err = std::max(err, std::fabs(h[b * ldc + j] - ref_h[b * H + j]));
          }
          for (int64_t j = H; j < ldc; ++j) {  // padding untouched
            CHECK(c[b * ldc + j] == -9.0f);
            CHECK(h[b * ldc + j] == -9.0f);
          }
        }
        CHECK(err <= 1e-5);
      }
    }
  }
}

TEST_CASE("rnn gates: LSTM in place, blocked gate layout, partial tile and NaN") {
  std::mt19937 gen(5);
  const int64_t B = 2, H = 40, w = 24;  // a thread's slice of 24 hidden units at offset 16
  const int64_t j0 = 16;
  auto G = rnd(B * 4 * H, gen, -4, 4), C0 = rnd(B * H, gen), bias = rnd(4 * H, gen);
  for (const RnnGateKernels* k : paths()) {
    INFO("path " << simd_isa_name(k->isa));
    // Standard layout, tile = units [16, 40) of row 1 only, c updated in place.
    std::vector<float> c(C0), h(B * H, 5.0f);
    LstmGateArgs a;
    a.hidden = H;
    a.gates_x = G.data();
    a.ld_gates_x = 4 * H;
    a.bias = bias.data();
    a.c_prev = c.data();
    a.ld_c_prev = H;
    a.c = c.data();
    a.ld_c = H;
    a.h = h.data();
    a.ld_h = H;
    k->lstm(a, GateTile{1, 2, j0, j0 + w});
    // Blocked layout: the same slice of each gate copied next to each other, gate_stride = w.
    std::vector<float> blk(B * 4 * w), bblk(4 * w), c2(B * w), h2(B * w);
    for (int64_t b = 0; b < B; ++b)
      for (int q = 0; q < 4; ++q)
        for (int64_t j = 0; j < w; ++j) blk[b * 4 * w + q * w + j] = G[b * 4 * H + q * H + j0 + j];
    for (int q = 0; q < 4; ++q)
      for (int64_t j = 0; j < w; ++j) bblk[q * w + j] = bias[q * H + j0 + j];
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < w; ++j) c2[b * w + j] = C0[b * H + j0 + j];
    LstmGateArgs a2 = a;
    a2.hidden = w;
    a2.gate_stride = w;
    a2.gates_x = blk.data();
    a2.ld_gates_x = 4 * w;
    a2.bias = bblk.data();
    a2.c_prev = c2.data();
    a2.ld_c_prev = w;
    a2.c = c2.data();
    a2.ld_c = w;
    a2.h = h2.data();
    a2.ld_h = w;
    REQUIRE(check_lstm_gate_args(a2, B, "").is_ok());
    k->lstm(a2, GateTile{0, B, 0, w});
    for (int64_t j = 0; j < H; ++j) {
      // Row 0 and units outside the tile are untouched.
      CHECK(c[j] == C0[j]);
      CHECK(h[j] == 5.0f);
      if (j < j0) {
        CHECK(c[H + j] == C0[H + j]);
        CHECK(h[H + j] == 5.0f);
      } else {  // identical arithmetic in both layouts: identical bits
        CHECK(c[H + j] == c2[w + j - j0]);
        CHECK(h[H + j] == h2[w + j - j0]);
      }
    }
    // NaN in one pre-activation reaches c and h of that unit only.
    std::vector<float> gn(G);
    gn[3 * H + 7] = std::numeric_limits<float>::quiet_NaN();  // row 0, gate c, unit 7
    std::vector<float> c3(B * H), h3(B * H);
    LstmGateArgs a3 = a;
    a3.gates_x = gn.data();
    a3.c_prev = C0.data();
    a3.c = c3.data();
    a3.h = h3.data();
    k->lstm(a3, GateTile{0, 1, 0, H});
    CHECK(std::isnan(c3[7]));
    CHECK(std::isnan(h3[7]));
    CHECK_FALSE(std::isnan(h3[6]));
    CHECK_FALSE(std::isnan(h3[8]));
  }
}

TEST_CASE("rnn gates: GRU canonical and linear-before-reset match the ONNX equations") {
  struct Case {
    int64_t batch, input, hidden;
    bool biases, h_prev;
    float clip;
  };
  const Case cases[] = {{1, 6, 1, true, true, 0.0f},
                        {1, 16, 32, true, true, 0.0f},
                        {3, 5, 37, true, true, 0.0f},
                        {2, 7, 19, false, false, 0.0f},
                        {4, 9, 50, true, true, 0.9f}};
  std::mt19937 gen(23);
  for (const Case& cs : cases) {
    const int64_t B = cs.batch, I = cs.input, H = cs.hidden;
    // ONNX inputs: W [3H, I], R [3H, H], B = [Wb, Rb] (6H), gate order z, r, h.
    auto X = rnd(B * I, gen), Hp = rnd(B * H, gen);
    auto W = rnd(3 * H * I, gen, -1.2f, 1.2f), R = rnd(3 * H * H, gen, -0.8f, 0.8f);
    auto Bias = rnd(6 * H, gen);
    std::vector<float> hp = cs.h_prev ? Hp : std::vector<float>(B * H, 0.0f);
    for (int lbr = 0; lbr <= 1; ++lbr) {
      INFO("B=" << B << " I=" << I << " H=" << H << " biases=" << cs.biases
                << " h_prev=" << cs.h_prev << " clip=" << cs.clip << " lbr=" << lbr);
      std::vector<double> ref(B * H);
      for (int64_t b = 0; b < B; ++b) {
        std::vector<double> r(H), z(H);
        auto xw = [&](int64_t row) {
          double s = 0;
          for (int64_t k = 0; k < I; ++k) s += double(X[b * I + k]) * W[row * I + k];
          return s;
        };
        auto wb = [&](int64_t row) { return cs.biases ? double(Bias[row]) : 0.0; };
        auto rb = [&](int64_t row) { return cs.biases ? double(Bias[3 * H + row]) : 0.0; };
        for (int64_t j = 0; j < H; ++j) {
          double hz = 0, hr = 0;
          for (int64_t k = 0; k < H; ++k) {
            hz += double(hp[b * H + k]) * R[j * H + k];
            hr += double(hp[b * H + k]) * R[(H + j) * H + k];
          }
          z[j] = sig(clipd(xw(j) + hz + wb(j) + rb(j), cs.clip));
          r[j] = sig(clipd(xw(H + j) + hr + wb(H + j) + rb(H + j), cs.clip));
        }
        for (int64_t j = 0; j < H; ++j) {
          const int64_t row = 2 * H + j;
          double pre;
          if (lbr) {
            double hh = 0;
            for (int64_t k = 0; k < H; ++k) hh += double(hp[b * H + k]) * R[row * H + k];
            pre = xw(row) + r[j] * (hh + rb(row)) + wb(row);
          } else {
            double rhh = 0;
            for (int64_t k = 0; k < H; ++k) rhh += r[k] * hp[b * H + k] * R[row * H + k];
            pre = xw(row) + rhh + rb(row) + wb(row);
          }
          const double hh = std::tanh(clipd(pre, cs.clip));
          ref[b * H + j] = (1 - z[j]) * hh + z[j] * hp[b * H + j];
        }
      }
      const int64_t ld = 3 * H + 1;
      auto gx = project(X, B, I, W, 3 * H, ld);
      auto gh = project(hp, B, H, R, 3 * H, ld);
      std::vector<float> wb(Bias.begin(), Bias.begin() + 3 * H),
          rb(Bias.begin() + 3 * H, Bias.end());
      std::vector<float> rh_w(R.begin() + 2 * H * H, R.end());  // Rh [H, H]
      for (const RnnGateKernels* k : paths()) {
        for (int nthr : {1, 2, 3}) {
          INFO("path " << simd_isa_name(k->isa) << " nthr " << nthr);
          std::vector<float> h(B * H, -3.0f), z(B * H), rh(B * H);
          GruGateArgs a;
          a.hidden = H;
          a.gates_x = gx.data();
          a.ld_gates_x = ld;
          a.gates_h = gh.data();
          a.ld_gates_h = ld;
          a.bias_x = cs.biases ? wb.data() : nullptr;
          a.bias_h = cs.biases ? rb.data() : nullptr;
          a.h_prev = cs.h_prev ? Hp.data() : nullptr;
          a.ld_h_prev = H;
          a.h = h.data();
          a.ld_h = H;
          a.z = z.data();
          a.ld_z = H;
          a.rh = rh.data();
          a.ld_rh = H;
          a.clip = cs.clip;
          const auto tiles = team_tiles(B, H, nthr);
          std::vector<float> ghh;
          if (lbr) {
            REQUIRE(check_gru_gate_args(a, GruPass::kLinearBeforeReset, B, "t").is_ok());
            for (const GateTile& t : tiles) k->gru_lbr(a, t);
          } else {
            REQUIRE(check_gru_gate_args(a, GruPass::kReset, B, "t").is_ok());
            for (const GateTile& t : tiles) k->gru_reset(a, t);
            ghh = project(rh, B, H, rh_w, H, H);  // the caller's GEMM: (r * h_prev) Rh^T
            a.gates_hh = ghh.data();
            a.ld_gates_hh = H;
            REQUIRE(check_gru_gate_args(a, GruPass::kOutput, B, "t").is_ok());
            for (const GateTile& t : tiles) k->gru_output(a, t);
          }
          double err = 0;
          for (int64_t i = 0; i < B * H; ++i) err = std::max(err, std::fabs(h[i] - ref[i]));
          CHECK(err <= 1e-5);
        }
      }
    }
  }
}

TEST_CASE("rnn gates: vanilla RNN with tanh, relu and sigmoid") {
  std::mt19937 gen(3);
  const int64_t B = 3, H = 29;
  auto gx = rnd(B * H, gen, -3, 3), gh = rnd(B * H, gen, -3, 3), bias = rnd(H, gen);
  for (RnnActivation act : {RnnActivation::kTanh, RnnActivation::kRelu, RnnActivation::kSigmoid}) {
    for (float clip : {0.0f, 1.0f}) {
      for (const RnnGateKernels* k : paths()) {
        INFO("path " << simd_isa_name(k->isa) << " act " << int(act) << " clip " << clip);
        std::vector<float> h(B * H);
        RnnGateArgs a;
        a.hidden = H;
        a.gates_x = gx.data();
        a.ld_gates_x = H;
        a.gates_h = gh.data();
        a.ld_gates_h = H;
        a.bias = bias.data();
        a.h = h.data();
        a.ld_h = H;
        a.clip = clip;
        a.activation = act;
        REQUIRE(check_rnn_gate_args(a, B, "t").is_ok());
        k->rnn(a, GateTile{0, B, 0, H});
        double err = 0;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j) {
            const double pre = clipd(double(gx[b * H + j]) + gh[b * H + j] + bias[j], clip);
            const double want = act == RnnActivation::kTanh   ? std::tanh(pre)
                                : act == RnnActivation::kRelu ? std::max(pre, 0.0)
                                                              : sig(pre);
            err = std::max(err, std::fabs(h[b * H + j] - want));
          }
        CHECK(err <= 2e-6);
      }
    }
  }
}

TEST_CASE("rnn gates: LSTM backward step matches the BPTT equations on every path") {
  // Saved activations in (0, 1) / (-1, 1) as a forward pass leaves them, strided rows with
  // padding that must not be read or written, partial vectors (H = 21), peepholes on and off,
  // c_prev and dY present and absent.
  std::mt19937 gen(7);
  const int64_t B = 3, H = 21, lds = 5 * H + 3, ldg = 4 * H + 5, ldy = H + 2;
  for (bool peep : {false, true})
    for (bool with_cp : {false, true})
      for (bool with_dy : {false, true}) {
        std::vector<float> saved(B * lds, 555.0f);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < 5 * H; ++j) {
            const int64_t blk = j / H;
            saved[b * lds + j] =
                blk < 3 ? rnd(1, gen, 0.02f, 0.98f)[0]
                        : rnd(1, gen, blk == 4 ? -2.0f : -0.98f, blk == 4 ? 2.0f : 0.98f)[0];
          }
        const std::vector<float> cp = rnd(B * H, gen, -2.0f, 2.0f);
        const std::vector<float> dy = rnd(B * ldy, gen);
        const std::vector<float> dh = rnd(B * H, gen);
        const std::vector<float> dc_in = rnd(B * H, gen);
        const std::vector<float> p = rnd(3 * H, gen);
        for (const RnnGateKernels* k : paths()) {
          std::vector<float> dc = dc_in, dg(B * ldg, 999.0f);
          LstmBackwardArgs a =
              backward_args(H, saved, lds, with_cp ? &cp : nullptr, with_dy ? &dy : nullptr, ldy,
                            peep ? &p : nullptr, dh, dc, dg, ldg);
          k->lstm_backward(a, GateTile{0, B, 0, H});
          for (int64_t b = 0; b < B; ++b) {
            for (int64_t j = 4 * H; j < ldg; ++j) REQUIRE(dg[b * ldg + j] == 999.0f);
            for (int64_t j = 0; j < H; ++j) {
              const double dhj = dh[b * H + j] + (with_dy ? dy[b * ldy + j] : 0.0);
              const CellGrad r =
                  cell_backward_ref(&saved[b * lds], H, j, dhj, dc_in[b * H + j],
                                    with_cp ? cp[b * H + j] : 0.0, peep ? &p : nullptr);
              INFO("isa " << static_cast<int>(k->isa) << " peep " << peep << " c_prev " << with_cp
                          << " dy " << with_dy << " row " << b << " unit " << j);
              CHECK(dg[b * ldg + j] == Approx(r.d_i).margin(1e-6));
              CHECK(dg[b * ldg + H + j] == Approx(r.d_o).margin(1e-6));
              CHECK(dg[b * ldg + 2 * H + j] == Approx(r.d_f).margin(1e-6));
              CHECK(dg[b * ldg + 3 * H + j] == Approx(r.d_g).margin(1e-6));
              CHECK(dc[b * H + j] == Approx(r.dc_out).margin(1e-6));
            }
          }
        }
      }
}

TEST_CASE("rnn gates: PhasedLSTM time gate and blend match the paper's equations on every path") {
  // Reference: phi = ((ts - shift) mod tau) / tau with a non-negative fmod, in double, and the
  // gate's pieces written out. Time stamps before the shift (u < 0), far from it (u ~ 1e6, where
  // float would lose the phase), exactly on a period (phi = 0) and on a piece boundary; 37 units
  // so every path has a partial vector; h in place (training) and into another buffer.
  std::mt19937 gen(11);
  const int64_t n = 37;
  const double alpha = 1e-3;
  std::vector<float> tau = rnd(n, gen, 0.5f, 20.0f), shift = rnd(n, gen, 0.0f, 10.0f);
  std::vector<float> r_on = rnd(n, gen, 0.02f, 0.3f);
  tau[0] = 4.0f;  // with shift 1 and ts 9: u = 2 exactly, phi = 0
  shift[0] = 1.0f;
  tau[1] = 8.0f;  // with shift 0 and ts 9: phi = 0.125 = r_on / 2 (the falling piece starts)
  shift[1] = 0.0f;
  r_on[1] = 0.25f;
  std::vector<double> inv_tau(n);
  for (int64_t j = 0; j < n; ++j) inv_tau[j] = 1.0 / static_cast<double>(tau[j]);
  const std::vector<float> cand_c = rnd(n, gen, -2, 2), cand_h = rnd(n, gen),
                           c0 = rnd(n, gen, -2, 2);
  const std::vector<float> h0 = rnd(n, gen);
  for (double ts : {9.0, -3.25, 0.0, 123.456, 1.0e6 + 0.37}) {
    for (const RnnGateKernels* k : paths())
      for (bool train : {false, true}) {
        std::vector<float> c = c0, h(n, 0.0f), h_prev = h0;
        std::vector<float> sv(n, 555.0f), gate(4 * n, 555.0f);
        PhasedBlendArgs a;
        a.n = n;
        a.ts = ts;
        a.alpha = alpha;
        a.shift = shift.data();
        a.inv_tau = inv_tau.data();
        a.r_on = r_on.data();
        a.cand_c = cand_c.data();
        a.cand_h = cand_h.data();
        a.c = c.data();
        if (train) {  // in place, as the training forward runs it
          h = h0;
          a.h_prev = h.data();
          a.saved_c = sv.data();
          PhasedGateArgs g;  // the backward's planes of the same gate
          static_cast<PhasedTimeGate&>(g) = a;
          g.out = gate.data();
          k->phased_gate(g);
        } else {
          a.h_prev = h_prev.data();
        }
        a.h = h.data();
        k->phased_blend(a);
        for (int64_t j = 0; j < n; ++j) {
          double m = std::fmod(ts - shift[j], static_cast<double>(tau[j]));
          if (m < 0) m += tau[j];
          const double phi = m / tau[j], r = r_on[j];
          const int piece = phi < 0.5 * r ? 0 : phi < r ? 1 : 2;
          const double kk = piece == 0 ? 2 * phi / r : piece == 1 ? 2 - 2 * phi / r : alpha * phi;
          INFO("isa " << static_cast<int>(k->isa) << " ts " << ts << " unit " << j << " train "
                      << train << " phi " << phi);
          CHECK(c[j] == Approx(kk * cand_c[j] + (1 - kk) * c0[j]).margin(1e-5));
          CHECK(h[j] == Approx(kk * cand_h[j] + (1 - kk) * h0[j]).margin(1e-5));
          if (!train) {
            CHECK(h_prev[j] == h0[j]);
            continue;
          }
          CHECK(sv[j] == c[j]);
          CHECK(gate[j] == Approx(kk).margin(1e-6));
          CHECK(gate[n + j] == Approx(piece == 0 ? 2 / r : piece == 1 ? -2 / r : alpha));
          CHECK(gate[2 * n + j] == Approx((ts - shift[j]) / tau[j]).epsilon(1e-6));
          const double slope = 2 * phi / (r * r);
          CHECK(gate[3 * n + j] == Approx(piece == 0   ? -slope
                                          : piece == 1 ? slope
                                                       : 0.0)
                                       .margin(1e-4));
        }
        if (ts == 9.0) {  // the two boundary units took the expected pieces
          CHECK(c[0] == Approx(c0[0]).margin(1e-7));      // phi = 0: k = 0, c kept
          CHECK(c[1] == Approx(cand_c[1]).margin(1e-6));  // phi = r_on / 2: k = 1
        }
      }
  }
}

TEST_CASE("rnn gates: LSTM backward with a PhasedLSTM time gate on every path") {
  // The saved rows of a PhasedLSTM (6 blocks: i o f g c~ c_t) followed here by the gate's
  // planes (k dk/dphi u dk/dr_on, which LstmBackwardArgs::gate reads with the same stride),
  // strided rows, 3 batch rows of 37 units (partial vectors), peepholes, c_prev and dY on and
  // off; the gate's part and the cell's written out in double (h~ = o tanh(c~)).
  std::mt19937 gen(12);
  const int64_t B = 3, H = 37, lds = 10 * H + 5, ldg = 4 * H + 3, ldk = H + 1;
  const int64_t plane = B * ldk;
  std::vector<float> saved(B * lds, 555.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < 10 * H; ++j) {
      const int64_t blk = j / H;
      float v = rnd(1, gen, -1.0f, 1.0f)[0];
      if (blk < 3 || blk == 6) v = rnd(1, gen, 0.02f, 0.98f)[0];  // sigmoids and k
      if (blk == 4 || blk == 5) v = rnd(1, gen, -2.0f, 2.0f)[0];  // c~, c_t
      if (blk == 7 || blk == 9) v = rnd(1, gen, -40.0f, 40.0f)[0];
      if (blk == 8) v = rnd(1, gen, -5.0f, 50.0f)[0];  // u
      saved[b * lds + j] = v;
    }
  const auto cp = rnd(B * H, gen, -2, 2), hp = rnd(B * H, gen), dy = rnd(B * H, gen);
  const auto dh = rnd(B * H, gen), dc0 = rnd(B * H, gen), p = rnd(3 * H, gen);
  for (bool peep : {false, true})
    for (bool with_cp : {false, true})
      for (bool with_dy : {false, true})
        for (const RnnGateKernels* k : paths()) {
          std::vector<float> dc = dc0, dg(B * ldg, 999.0f), carry(B * H), dk(3 * plane, 888.0f);
          LstmBackwardArgs a =
              backward_args(H, saved, lds, with_cp ? &cp : nullptr, with_dy ? &dy : nullptr, H,
                            peep ? &p : nullptr, dh, dc, dg, ldg);
          a.phased_carry = carry.data();
          a.ld_phased_carry = H;
          a.h_prev = hp.data();
          a.ld_h_prev = H;
          a.gate = saved.data() + 6 * H;
          a.ld_gate = lds;
          a.dk_planes = dk.data();
          a.ld_dk = ldk;
          a.dk_plane = plane;
          k->lstm_backward(a, GateTile{0, B, 0, H});
          for (int64_t b = 0; b < B; ++b) {
            CHECK(dk[b * ldk + H] == 888.0f);  // the planes' row padding is not written
            for (int64_t j = 0; j < H; ++j) {
              const float* sv = &saved[b * lds];
              const double cc = sv[4 * H + j], kk = sv[6 * H + j];
              const double hh = static_cast<double>(sv[H + j]) * std::tanh(cc);  // h~ = o tanh(c~)
              const double c_prev = with_cp ? cp[b * H + j] : 0.0;
              const double dhv = dh[b * H + j] + (with_dy ? dy[b * H + j] : 0.0);
              const double dc_in = dc0[b * H + j];
              const double dkv = dc_in * (cc - c_prev) + dhv * (hh - hp[b * H + j]);
              // The cell on k dh and k dc_in (its c is block 4, c~); (1 - k) dc_in skips it.
              const CellGrad r =
                  cell_backward_ref(sv, H, j, kk * dhv, kk * dc_in, c_prev, peep ? &p : nullptr);
              const double dc_out = r.dc_out + (1 - kk) * dc_in;
              INFO("isa " << static_cast<int>(k->isa) << " peep " << peep << " c_prev " << with_cp
                          << " dy " << with_dy << " row " << b << " unit " << j);
              CHECK(dg[b * ldg + j] == Approx(r.d_i).margin(1e-5));
              CHECK(dg[b * ldg + H + j] == Approx(r.d_o).margin(1e-5));
              CHECK(dg[b * ldg + 2 * H + j] == Approx(r.d_f).margin(1e-5));
              CHECK(dg[b * ldg + 3 * H + j] == Approx(r.d_g).margin(1e-5));
              CHECK(dc[b * H + j] == Approx(dc_out).margin(1e-5));
              CHECK(carry[b * H + j] == Approx((1 - kk) * dhv).margin(1e-6));
              CHECK(dk[b * ldk + j] == Approx(dkv * sv[7 * H + j]).margin(1e-3));
              CHECK(dk[plane + b * ldk + j] ==
                    Approx(dkv * sv[7 * H + j] * sv[8 * H + j]).margin(1e-2));
              CHECK(dk[2 * plane + b * ldk + j] == Approx(dkv * sv[9 * H + j]).margin(1e-3));
            }
          }
        }
}

TEST_CASE("rnn gates: the dispatching entry points use the active path") {
  std::mt19937 gen(9);
  const int64_t B = 2, H = 33;
  auto g = rnd(B * 4 * H, gen, -3, 3), cp = rnd(B * H, gen);
  LstmGateArgs a;
  a.hidden = H;
  a.gates_x = g.data();
  a.ld_gates_x = 4 * H;
  a.c_prev = cp.data();
  a.ld_c_prev = H;
  std::vector<float> c1(B * H), h1(B * H), c2(B * H), h2(B * H);
  a.c = c1.data();
  a.h = h1.data();
  a.ld_c = a.ld_h = H;
  lstm_gates(a, GateTile{0, B, 0, H});
  a.c = c2.data();
  a.h = h2.data();
  rnn_gate_kernels(active_simd_isa())->lstm(a, GateTile{0, B, 0, H});
  CHECK(c1 == c2);
  CHECK(h1 == h2);
}

TEST_CASE("rnn gates: argument checks name the kernel and the field") {
  std::vector<float> buf(1000);
  LstmGateArgs a;
  a.hidden = 8;
  a.gates_x = buf.data();
  a.ld_gates_x = 32;
  a.c = buf.data();
  a.ld_c = 8;
  a.h = buf.data();
  a.ld_h = 8;
  REQUIRE(check_lstm_gate_args(a, 2, "m.graphi: node 'l1' (LSTM)").is_ok());
  auto expect = [](const graphi::Status& s, const std::string& part) {
    CHECK(s.code() == graphi::StatusCode::kInvalidArgument);
    INFO(s.message());
    CHECK(s.message().find("m.graphi: node 'l1' (LSTM)") != std::string::npos);
    CHECK(s.message().find(part) != std::string::npos);
  };
  LstmGateArgs b = a;
  b.ld_gates_x = 31;
  expect(check_lstm_gate_args(b, 2, "m.graphi: node 'l1' (LSTM)"), "gates_x leading dimension 31");
  b = a;
  b.h = nullptr;
  expect(check_lstm_gate_args(b, 2, "m.graphi: node 'l1' (LSTM)"), "h is required");
  b = a;
  b.gate_stride = 4;
  expect(check_lstm_gate_args(b, 2, "m.graphi: node 'l1' (LSTM)"), "gate_stride 4 < hidden 8");
  b = a;
  b.hidden = 0;
  expect(check_lstm_gate_args(b, 2, "m.graphi: node 'l1' (LSTM)"), "hidden must be > 0");
  b = a;
  b.clip = std::numeric_limits<float>::quiet_NaN();
  expect(check_lstm_gate_args(b, 2, "m.graphi: node 'l1' (LSTM)"), "clip is NaN");

  GruGateArgs g;
  g.hidden = 8;
  g.gates_x = buf.data();
  g.ld_gates_x = 24;
  g.z = buf.data();
  g.ld_z = 8;
  g.rh = buf.data();
  g.ld_rh = 8;
  REQUIRE(check_gru_gate_args(g, GruPass::kReset, 1, "x").is_ok());
  auto s = check_gru_gate_args(g, GruPass::kLinearBeforeReset, 1, "m.graphi: node 'l1' (LSTM)");
  expect(s, "gates_h is required");
  s = check_gru_gate_args(g, GruPass::kOutput, 1, "m.graphi: node 'l1' (LSTM)");
  expect(s, "gates_hh is required");

  RnnGateArgs r;
  r.hidden = 8;
  r.gates_x = buf.data();
  r.ld_gates_x = 8;
  r.h = buf.data();
  r.ld_h = 7;
  expect(check_rnn_gate_args(r, 1, "m.graphi: node 'l1' (LSTM)"), "h leading dimension 7");
}
