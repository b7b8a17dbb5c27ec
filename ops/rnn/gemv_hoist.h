// The batch-1 recurrent GEMV with the next hoisted chunk's input projection riding along
// ("fused hoist", a knob of the RNN schedule search, ops/rnn/rnn_schedule.h). At batch 1 a
// step's GEMV streams the thread's slice of R from L2 and leaves FMA slots idle; the hoisted
// input GEMM X W^T is compute-bound. Run one after the other they cost the sum of their times;
// interleaved in one k loop, on a core that can overlap them, part of the GEMM hides under the
// stream. Measured with graphi_overlap_probe (one thread, 512 KiB of R plus 1/8 of W per step,
// medians of 11 interleaved reps): AMD EPYC Zen 4 (KVM guest) GEMV 4.97-5.09 us, GEMM share 2.34-
// 2.43, one after the other 7.65-7.68, fused 6.39-6.77; on the Intel Xeon measured in session 4
// the fused loop cost the sum (6.3 vs 6.2 us), so the schedule search decides per machine.
// ops/ only.
#pragma once

#include <cstdint>

namespace graphi::ops {

// x rows per tile (the fused schedule's hoist chunk) and columns per tile.
inline constexpr int kHoistRows = 8;
inline constexpr int64_t kHoistTileCols = 16;

// What one step computes of the next chunk's projection: tiles of kHoistRows rows x 16 columns,
//   out[r * ldo + c] = sum_{q < k} x[r * ldx + q] * W(q, c)     r < kHoistRows, c in a tile,
// for the tiles [col, col_end) (multiples of 16) of W, packed panel-major with `panel` columns
// (TiledGemm::panel_offset). gemv_row_hoist() advances it by some k rows per call;
// hoist_finish() completes the rest. A tile's result is written when its last k row is done.
struct HoistCursor {
  const float* w = nullptr;
  int64_t panel = 16, k = 0;
  const float* x = nullptr;
  int64_t ldx = 0;
  float* out = nullptr;
  int64_t ldo = 0;
  int64_t col = 0, col_end = 0;  // the current tile's first column; the end of this step's tiles
  int64_t q = 0;                 // the current tile's next k row (0: acc holds nothing yet)
  alignas(64) float acc[kHoistRows][kHoistTileCols];  // the current tile's sums over rows < q

  bool done() const { return col >= col_end; }
  // k rows left over all remaining tiles.
  int64_t rows_left() const { return done() ? 0 : (col_end - col) / kHoistTileCols * k - q; }
  // Row qq of the current tile in the packed W.
  const float* tile_row(int64_t qq) const {
    return w + col / panel * panel * k + qq * panel + col % panel;
  }
};

// c[0, cols) (+)= h[0, k) * A[0:k, 0:cols) (A rows lda apart: one row of ops/rnn/gemv_rows.h),
// with up to `hoist_rows` k rows of the cursor's tiles computed in the same loop (one per two
// GEMV rows, spread over the 64-column blocks). Returns the hoist rows it did. Without AVX-512
// the two run one after the other (both sum over q in order either way).
int64_t gemv_row_hoist(const float* a, int64_t lda, const float* h, float* c, int64_t k,
                       int64_t cols, bool accumulate, HoistCursor& hc,
                       int64_t hoist_rows) noexcept;

// Computes every k row the cursor has left.
void hoist_finish(HoistCursor& hc) noexcept;

// True where gemv_row_hoist interleaves the two (AVX-512 active); the schedule search offers
// the fused schedule only there.
bool gemv_hoist_interleaved() noexcept;

}  // namespace graphi::ops
