#include "tests/support/reference_phased_lstm.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace graphi::test {

namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

double at(const Tensor* t, int64_t i) {
  return t ? static_cast<double>(t->data_as<float>()[i]) : 0.0;
}

}  // namespace

std::vector<Tensor> reference_phased_lstm(const PhasedLstmRefSpec& spec,
                                          const PhasedLstmRefInputs& in) {
  if (!in.x || !in.w || !in.r || !in.times || !in.tau || !in.shift || !in.r_on)
    throw std::invalid_argument("reference_phased_lstm: X, W, R, times, tau, shift, r_on required");
  const int D = spec.direction == "bidirectional" ? 2 : 1;
  const bool layout1 = spec.layout == 1;
  const Shape& xs = in.x->shape();
  const int64_t T = layout1 ? xs[1] : xs[0], B = layout1 ? xs[0] : xs[1], I = xs[2];
  const int64_t H = spec.hidden;
  if (in.w->shape() != Shape{D, 4 * H, I} || in.r->shape() != Shape{D, 4 * H, H})
    throw std::invalid_argument("reference_phased_lstm: W/R shapes");
  Tensor y(TensorDesc{DType::kF32, layout1 ? Shape{B, T, D, H} : Shape{T, D, B, H}});
  Tensor yh(TensorDesc{DType::kF32, layout1 ? Shape{B, D, H} : Shape{D, B, H}});
  Tensor yc(yh.desc());
  auto state_index = [&](int d, int64_t b, int64_t j) {
    return (layout1 ? (b * D + d) : (d * B + b)) * H + j;
  };
  auto clip = [&](double v) {
    return spec.clip > 0 ? std::min(std::max(v, -spec.clip), spec.clip) : v;
  };
  for (int d = 0; d < D; ++d) {
    const bool reverse = spec.direction == "reverse" || d == 1;
    const float* W = in.w->data_as<float>() + d * 4 * H * I;
    const float* R = in.r->data_as<float>() + d * 4 * H * H;
    for (int64_t b = 0; b < B; ++b) {
      int64_t len = T;
      if (in.seq_lens) {
        len = in.seq_lens->dtype() == DType::kI64 ? in.seq_lens->data_as<int64_t>()[b]
                                                  : in.seq_lens->data_as<int32_t>()[b];
        len = std::clamp<int64_t>(len, 0, T);
      }
      std::vector<double> h(H), c(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = at(in.initial_h, state_index(d, b, j));
        c[j] = at(in.initial_c, state_index(d, b, j));
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        const float* x = in.x->data_as<float>() + (layout1 ? b * T + t : t * B + b) * I;
        const double ts = in.times->data_as<float>()[layout1 ? b * T + t : t * B + b];
        std::vector<double> hn(H), cn(H);
        for (int64_t j = 0; j < H; ++j) {
          // Gate pre-activations, ONNX order i, o, f, c: x W^T + h R^T + Wb + Rb.
          double g[4];
          for (int k = 0; k < 4; ++k) {
            const int64_t row = k * H + j;
            double v = 0;
            for (int64_t q = 0; q < I; ++q) v += double(W[row * I + q]) * double(x[q]);
            for (int64_t q = 0; q < H; ++q) v += double(R[row * H + q]) * h[q];
            if (in.b) v += at(in.b, d * 8 * H + row) + at(in.b, d * 8 * H + 4 * H + row);
            g[k] = v;
          }
          const double pi = at(in.p, d * 3 * H + j), po = at(in.p, d * 3 * H + H + j),
                       pf = at(in.p, d * 3 * H + 2 * H + j);
          const double i = sigmoid(clip(g[0] + pi * c[j]));
          const double f = spec.input_forget ? 1.0 - i : sigmoid(clip(g[2] + pf * c[j]));
          const double c_tilde = f * c[j] + i * std::tanh(clip(g[3]));
          const double o = sigmoid(clip(g[1] + po * c_tilde));
          const double h_tilde = o * std::tanh(c_tilde);
          // Time gate: phi = ((t - s) mod tau) / tau with a non-negative (floor) modulo.
          const double tau = at(in.tau, d * H + j), shift = at(in.shift, d * H + j),
                       r_on = at(in.r_on, d * H + j);
          double m = std::fmod(ts - shift, tau);
          if (m < 0) m += tau;
          const double phi = m / tau;
          double k;
          if (phi < 0.5 * r_on)
            k = 2.0 * phi / r_on;
          else if (phi < r_on)
            k = 2.0 - 2.0 * phi / r_on;
          else
            k = spec.alpha * phi;
          cn[j] = k * c_tilde + (1.0 - k) * c[j];
          hn[j] = k * h_tilde + (1.0 - k) * h[j];
        }
        h = hn;
        c = cn;
        const int64_t y_row = layout1 ? (b * T + t) * D + d : (t * D + d) * B + b;
        for (int64_t j = 0; j < H; ++j)
          y.data_as<float>()[y_row * H + j] = static_cast<float>(h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        yh.data_as<float>()[state_index(d, b, j)] = static_cast<float>(h[j]);
        yc.data_as<float>()[state_index(d, b, j)] = static_cast<float>(c[j]);
      }
    }
  }
  std::vector<Tensor> out;
  out.push_back(std::move(y));
  out.push_back(std::move(yh));
  out.push_back(std::move(yc));
  return out;
}

}  // namespace graphi::test
