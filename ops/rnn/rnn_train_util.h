// Internals shared by the training kernels of the fused RNN ops (rnn_train_forward.cpp,
// rnn_backward.cpp): oneDNN matmuls on strided views, and the per-step element-wise passes split
// over the team. Include only from ops/rnn/.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "ops/kernel.h"
#include "ops/onednn.h"

namespace graphi::ops::rnn_train {

// A PhasedLSTM's time-gate inputs for one direction (ops/rnn/phased_lstm.h); the kernels pass
// nullptr for the other cells.
struct PhasedInputs {
  const float* times = nullptr;  // [T, B] (layout 0) or [B, T]: index rnn_row(s, t, b)
  const float* tau = nullptr;    // the direction's [H]
  const float* shift = nullptr;
  const float* r_on = nullptr;
  const double* inv_tau = nullptr;  // 1 / tau, [H]
  double alpha = 0;
};

// A 2-D view: dims [rows, cols] with a row stride and a column stride (in floats), so a
// transposed operand (W^T of a row-major W) is a view, not a copy.
struct View {
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 1;
};
inline View dense(int64_t rows, int64_t cols) { return {rows, cols, cols, 1}; }
inline View strided(int64_t rows, int64_t cols, int64_t ld) { return {rows, cols, ld, 1}; }
// The transpose of a row-major [cols, rows] matrix with row stride ld.
inline View transposed(int64_t rows, int64_t cols, int64_t ld) { return {rows, cols, 1, ld}; }

// dst = src x weights (+ bias of dst's dims) on the team, by one oneDNN matmul primitive created
// once at init. execute() opens oneDNN's own region: call it outside any parallel region.
class Matmul {
 public:
  static Result<Matmul> create(View src, View weights, View dst, bool bias, int team) {
    onednn::MatMulSpec spec;
    auto layout = [](const View& v) {
      return onednn::Layout{{v.rows, v.cols}, {v.row_stride, v.col_stride}};
    };
    spec.src = layout(src);
    spec.weights = layout(weights);
    spec.dst = layout(dst);
    if (bias) spec.bias = layout(dst);
    Matmul m;
    GRAPHI_ASSIGN_OR_RETURN(auto prim, onednn::make_matmul(spec, team, /*allow_ref=*/true));
    m.prim_ = std::shared_ptr<onednn::Primitive>(std::move(prim));
    return m;
  }
  size_t scratch_bytes() const { return prim_ ? prim_->scratch_bytes() : 0; }
  bool valid() const { return prim_ != nullptr; }
  // False on a oneDNN failure (not expected after a successful creation).
  bool run(const float* src, const float* weights, float* dst, void* scratch,
           const float* bias = nullptr) const noexcept {
    return prim_->execute(src, weights, bias, dst, scratch);
  }

 private:
  std::shared_ptr<onednn::Primitive> prim_;
};

// Calls f(b0, b1, member) for near-equal ranges of [0, rows) on up to `nthr` threads (one
// parallel region), or once on the calling thread when the pass is too small to share. Each row
// is computed by the same code whatever the split, so results do not depend on it.
template <typename F>
void for_rows(int64_t rows, int64_t work_per_row, int nthr, F&& f) {
  if (nthr <= 1 || rows < 2 || rows * work_per_row < 8192) {
    f(int64_t{0}, rows, 0);
    return;
  }
#pragma omp parallel num_threads(nthr)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    auto [b0, b1] = team_range(rows, t, n);
    f(b0, b1, t);
  }
}

// Whether an LSTM training kernel walks its steps by batch rows (each thread carries its own rows
// through every step, no barrier): with a few rows per thread (a training batch), not with one or
// two (batch 1 on two threads would leave a thread idle: there the team splits each step's GEMM
// by columns instead).
inline bool walk_batch_rows(int64_t batch, int nthr) { return nthr <= 1 || batch >= 4 * nthr; }

// Every row count a thread gets when `batch` rows split over 1..team threads (team_range): the
// shapes the walk's per-thread GEMM is dispatched for.
inline std::set<int64_t> team_row_counts(int64_t batch, int team) {
  std::set<int64_t> ns;
  for (int n = 1; n <= team; ++n) ns.insert({batch / n, (batch + n - 1) / n});
  ns.erase(0);
  return ns;
}

// Bytes rounded up to whole 64-byte lines, so scratch regions stay aligned.
inline size_t aligned_floats(int64_t floats) {
  return static_cast<size_t>((floats + 15) / 16 * 16);
}

}  // namespace graphi::ops::rnn_train
