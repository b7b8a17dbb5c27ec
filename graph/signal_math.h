// ONNX's window functions and mel filter bank (opset 17: HannWindow, HammingWindow,
// BlackmanWindow, MelWeightMatrix) as ONNX's reference implementation and ONNX Runtime compute
// them. Shared by the importer's folding (graph/onnx/onnx_fold_signal.cpp) and the run-time
// MelWeightMatrix kernel (ops/signal_ops.cpp); knows nothing of graphs or tensors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/base.h"

namespace graphi::graph::signal {

enum class Window { kHann, kHamming, kBlackman };

// The window of `size` points: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size when
// periodic, size - 1 when symmetric; Hann a = (0.5, 0.5, 0), Hamming (25/46, 21/46, 0),
// Blackman (0.42, 0.5, 0.08). A symmetric window of size 1 divides 0 by 0: NaN, as ONNX's
// reference and ONNX Runtime give.
std::vector<double> window(Window w, int64_t size, bool periodic);

// MelWeightMatrix's inputs. The matrix is [dft_length / 2 + 1, num_mel_bins]: num_mel_bins + 2
// points evenly spaced on the mel scale mel(f) = 2595 log10(1 + f / 700) from lower_hz, with step
// (mel(upper_hz) - mel(lower_hz)) / (num_mel_bins + 2) (so the last point stays below upper_hz:
// ONNX's reference and ONNX Runtime both do so), each mapped to the spectrogram bin
// floor((dft_length + 1) f / sample_rate); filter i is the triangle rising from point i to 1 at
// point i + 1 and falling to 0 at point i + 2.
struct MelSpec {
  int64_t num_mel_bins = 0, dft_length = 0, sample_rate = 0;
  double lower_hz = 0, upper_hz = 0;
  int64_t bins() const { return dft_length / 2 + 1; }
};

// The spectrogram bin of mel point k (0 <= k < num_mel_bins + 2), before any range check.
double mel_point_bin(const MelSpec& s, int64_t k);

// Positive counts, finite 0 <= lower_hz <= upper_hz, and the edges' bins inside
// [0, dft_length / 2] (ONNX Runtime's check); the error starts with `where` and names the input.
Status check_mel_spec(const MelSpec& s, const std::string& where);

// Writes the matrix (row-major, bins() x num_mel_bins) of a spec check_mel_spec accepted.
// Allocates nothing: the run-time kernel calls it.
template <typename T>
void fill_mel_weight_matrix(const MelSpec& s, T* out) {
  const int64_t m = s.num_mel_bins;
  std::fill(out, out + s.bins() * m, T(0));
  auto point = [&](int64_t k) { return static_cast<int64_t>(mel_point_bin(s, k)); };
  for (int64_t i = 0; i < m; ++i) {
    const int64_t left = point(i), center = point(i + 1), right = point(i + 2);
    if (center == left)
      out[center * m + i] = T(1);
    else
      for (int64_t j = left; j <= center; ++j)
        out[j * m + i] =
            static_cast<T>(static_cast<double>(j - left) / static_cast<double>(center - left));
    for (int64_t j = center; j < right; ++j)
      out[j * m + i] =
          static_cast<T>(static_cast<double>(right - j) / static_cast<double>(right - center));
  }
}

}  // namespace graphi::graph::signal
