// Window functions and the mel filter bank of ONNX opset 17 (graph/signal_math.h).
#include "graph/signal_math.h"

#include <cmath>
#include <numbers>

namespace graphi::graph::signal {

std::vector<double> window(Window w, int64_t size, bool periodic) {
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (w == Window::kHamming) {
    a0 = 25.0 / 46.0;
    a1 = 21.0 / 46.0;
  } else if (w == Window::kBlackman) {
    a0 = 0.42;
    a2 = 0.08;
  }
  const auto denom = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    const double x = 2 * std::numbers::pi * static_cast<double>(n) / denom;
    v[static_cast<size_t>(n)] = a0 - a1 * std::cos(x) + (a2 != 0 ? a2 * std::cos(2 * x) : 0.0);
  }
  return v;
}

double mel_point_bin(const MelSpec& s, int64_t k) {
  const double lo_mel = 2595 * std::log10(1 + s.lower_hz / 700);
  const double hi_mel = 2595 * std::log10(1 + s.upper_hz / 700);
  const double step = (hi_mel - lo_mel) / static_cast<double>(s.num_mel_bins + 2);
  const double hz = 700 * (std::pow(10.0, (static_cast<double>(k) * step + lo_mel) / 2595) - 1);
  return std::floor(static_cast<double>(s.dft_length + 1) * hz /
                    static_cast<double>(s.sample_rate));
}

Status check_mel_spec(const MelSpec& s, const std::string& where) {
  auto positive = [&](int64_t v, int k, const char* name) {
    if (v >= 1) return Status::ok();
    return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" + name +
                                 ") must be at least 1, got " + std::to_string(v));
  };
  GRAPHI_RETURN_IF_ERROR(positive(s.num_mel_bins, 0, "num_mel_bins"));
  GRAPHI_RETURN_IF_ERROR(positive(s.dft_length, 1, "dft_length"));
  GRAPHI_RETURN_IF_ERROR(positive(s.sample_rate, 2, "sample_rate"));
  if (!std::isfinite(s.lower_hz) || !std::isfinite(s.upper_hz) || s.lower_hz < 0 ||
      s.upper_hz < s.lower_hz)
    return Status::invalid_graph(
        where + ": inputs 3 and 4 (lower_edge_hertz " + std::to_string(s.lower_hz) +
        ", upper_edge_hertz " + std::to_string(s.upper_hz) +
        ") must be finite, with 0 <= lower_edge_hertz <= upper_edge_hertz");
  // ONNX Runtime's check, on the bins of the edges themselves (the points lie between them: the
  // last is at (num_mel_bins + 1) / (num_mel_bins + 2) of the mel range, below upper_hz).
  const auto bins = static_cast<double>(s.bins());
  for (double hz : {s.lower_hz, s.upper_hz}) {
    const double bin =
        std::floor(static_cast<double>(s.dft_length + 1) * hz / static_cast<double>(s.sample_rate));
    if (!(bin >= 0 && bin < bins))
      return Status::invalid_graph(
          where + ": input " +
          (hz == s.lower_hz ? "3 (lower_edge_hertz) " : "4 (upper_edge_hertz) ") +
          std::to_string(hz) + " falls in spectrogram bin " + std::to_string(bin) +
          ", outside the " + std::to_string(s.bins()) + " bins of dft_length " +
          std::to_string(s.dft_length) + " at sample_rate " + std::to_string(s.sample_rate) +
          " (ONNX Runtime refuses it too; keep the edges below sample_rate / 2)");
  }
  return Status::ok();
}

}  // namespace graphi::graph::signal
