#include "tests/support/reference_rnn.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace graphi::test {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// v rounded to float, then to the 8 significant bits of bf16, ties to even (finite v only).
double round_bf16(double v) {
  const float f = static_cast<float>(v);
  if (f == 0.0f || !std::isfinite(f)) return f;
  int e = 0;
  const double m = std::frexp(static_cast<double>(f), &e);  // |m| in [0.5, 1)
  const double scaled = std::ldexp(m, 8);                   // 8 significant bits
  return std::ldexp(std::nearbyint(scaled), e - 8);         // default mode: ties to even
}

double activate(const std::string& name, double v) {
  if (name == "Tanh") return std::tanh(v);
  if (name == "Sigmoid") return sigmoid(v);
  if (name == "Relu") return v > 0 ? v : 0.0;
  throw std::invalid_argument("reference_rnn: unknown activation " + name);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("reference_rnn: " + what);
}

}  // namespace

std::vector<Tensor> reference_rnn(const RnnRefSpec& spec, const RnnRefInputs& in) {
  require(in.x && in.w && in.r, "X, W and R are required");
  const bool lstm = spec.op == "LSTM", gru = spec.op == "GRU", rnn = spec.op == "RNN";
  require(lstm || gru || rnn, "op must be LSTM, GRU or RNN");
  const int64_t G = lstm ? 4 : gru ? 3 : 1;
  const int64_t D = spec.direction == "bidirectional" ? 2 : 1;
  const Shape& xs = in.x->shape();
  require(xs.size() == 3, "X must be 3-D");
  const int64_t T = spec.layout == 0 ? xs[0] : xs[1];
  const int64_t B = spec.layout == 0 ? xs[1] : xs[0];
  const int64_t I = xs[2];
  const int64_t H = spec.hidden;
  require(in.w->shape() == Shape({D, G * H, I}), "W shape");
  require(in.r->shape() == Shape({D, G * H, H}), "R shape");

  // Element accessors in ONNX index order.
  const float* X = in.x->data_as<float>();
  auto x_at = [&](int64_t t, int64_t b, int64_t i) -> double {
    return spec.layout == 0 ? X[(t * B + b) * I + i] : X[(b * T + t) * I + i];
  };
  const float* W = in.w->data_as<float>();
  const float* R = in.r->data_as<float>();
  const float* Bias = in.b ? in.b->data_as<float>() : nullptr;
  const float* P = in.p ? in.p->data_as<float>() : nullptr;
  auto state_at = [&](const Tensor* t, int64_t d, int64_t b, int64_t j) -> double {
    if (!t) return 0.0;
    const float* p = t->data_as<float>();
    return spec.layout == 0 ? p[(d * B + b) * H + j] : p[(b * D + d) * H + j];
  };
  auto seq_len = [&](int64_t b) -> int64_t {
    if (!in.seq_lens) return T;
    const int64_t v = in.seq_lens->dtype() == DType::kI64 ? in.seq_lens->data_as<int64_t>()[b]
                                                          : in.seq_lens->data_as<int32_t>()[b];
    return std::clamp<int64_t>(v, 0, T);
  };
  auto clip = [&](double v) { return spec.clip > 0 ? std::clamp(v, -spec.clip, spec.clip) : v; };

  const Shape y_shape = spec.layout == 0 ? Shape{T, D, B, H} : Shape{B, T, D, H};
  const Shape s_shape = spec.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  Tensor y(TensorDesc{DType::kF32, y_shape});  // zero-filled: steps past a length stay 0
  Tensor yh(TensorDesc{DType::kF32, s_shape}), yc(TensorDesc{DType::kF32, s_shape});
  auto y_at = [&](int64_t t, int64_t d, int64_t b, int64_t j) -> float& {
    float* p = y.data_as<float>();
    return spec.layout == 0 ? p[((t * D + d) * B + b) * H + j] : p[((b * T + t) * D + d) * H + j];
  };
  auto s_at = [&](Tensor& s, int64_t d, int64_t b, int64_t j) -> float& {
    float* p = s.data_as<float>();
    return spec.layout == 0 ? p[(d * B + b) * H + j] : p[(b * D + d) * H + j];
  };

  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = spec.direction == "reverse" || d == 1;
    std::string act = "Tanh";
    if (rnn && !spec.activations.empty())
      act = spec.activations.size() == 1 ? spec.activations[0] : spec.activations.at(d);
    // Row n of direction d's W / R: W[d][n][:], R[d][n][:]; biases Wb[d][n], Rb[d][n].
    auto op = [&](double v) { return spec.bf16_operands ? round_bf16(v) : v; };
    auto wx = [&](int64_t n, int64_t t, int64_t b) {  // Xt . W[n]
      double s = 0;
      for (int64_t i = 0; i < I; ++i) s += op(x_at(t, b, i)) * op(W[(d * G * H + n) * I + i]);
      return s;
    };
    auto rh = [&](int64_t n, const std::vector<double>& h) {  // h . R[n]
      double s = 0;
      for (int64_t k = 0; k < H; ++k) s += op(h[k]) * op(R[(d * G * H + n) * H + k]);
      return s;
    };
    auto wb = [&](int64_t n) { return Bias ? static_cast<double>(Bias[d * 2 * G * H + n]) : 0.0; };
    auto rb = [&](int64_t n) {
      return Bias ? static_cast<double>(Bias[d * 2 * G * H + G * H + n]) : 0.0;
    };
    auto peep = [&](int64_t g, int64_t j) {
      return P ? static_cast<double>(P[d * 3 * H + g * H + j]) : 0.0;
    };

    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(H), c(H), hn(H), cn(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = state_at(in.initial_h, d, b, j);
        c[j] = state_at(in.initial_c, d, b, j);
      }
      const int64_t len = seq_len(b);
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        if (lstm) {
          // Gate blocks i, o, f, c; peepholes i, o, f.
          for (int64_t j = 0; j < H; ++j) {
            const int64_t ni = 0 * H + j, no = 1 * H + j, nf = 2 * H + j, nc = 3 * H + j;
            const double it =
                sigmoid(clip(wx(ni, t, b) + rh(ni, h) + peep(0, j) * c[j] + wb(ni) + rb(ni)));
            const double ft =
                spec.input_forget
                    ? 1.0 - it
                    : sigmoid(clip(wx(nf, t, b) + rh(nf, h) + peep(2, j) * c[j] + wb(nf) + rb(nf)));
            const double ct = std::tanh(clip(wx(nc, t, b) + rh(nc, h) + wb(nc) + rb(nc)));
            cn[j] = ft * c[j] + it * ct;
            const double ot =
                sigmoid(clip(wx(no, t, b) + rh(no, h) + peep(1, j) * cn[j] + wb(no) + rb(no)));
            hn[j] = ot * std::tanh(cn[j]);
          }
        } else if (gru) {
          // Gate blocks z, r, h.
          std::vector<double> r(H), z(H), rhp(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = sigmoid(clip(wx(j, t, b) + rh(j, h) + wb(j) + rb(j)));
            r[j] = sigmoid(clip(wx(H + j, t, b) + rh(H + j, h) + wb(H + j) + rb(H + j)));
            rhp[j] = r[j] * h[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            const int64_t nh = 2 * H + j;
            double pre;
            if (spec.linear_before_reset) {
              pre = wx(nh, t, b) + r[j] * (rh(nh, h) + rb(nh)) + wb(nh);
            } else {
              pre = wx(nh, t, b) + rh(nh, rhp) + rb(nh) + wb(nh);
            }
            const double ht = std::tanh(clip(pre));
            hn[j] = (1.0 - z[j]) * ht + z[j] * h[j];
          }
        } else {
          for (int64_t j = 0; j < H; ++j)
            hn[j] = activate(act, clip(wx(j, t, b) + rh(j, h) + wb(j) + rb(j)));
        }
        h = hn;
        if (lstm) c = cn;
        for (int64_t j = 0; j < H; ++j) y_at(t, d, b, j) = static_cast<float>(h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        s_at(yh, d, b, j) = static_cast<float>(h[j]);
        s_at(yc, d, b, j) = static_cast<float>(c[j]);
      }
    }
  }
  std::vector<Tensor> out;
  out.push_back(std::move(y));
  out.push_back(std::move(yh));
  if (lstm) out.push_back(std::move(yc));
  return out;
}

}  // namespace graphi::test
