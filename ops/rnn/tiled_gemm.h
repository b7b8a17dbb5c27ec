// Small GEMMs on LIBXSMM microkernels for the RNN sequence kernels (ops/rnn/rnn_sequence.cpp,
// ops/rnn/phased_lstm.cpp): row-major C[n x m] (ldc) (+)= B[n x k] (ldb) * A[k x m], cut into tiles
// that LIBXSMM 1.17 JITs (m*n*k <= 64^3; above that it falls back to a slow generic path), a
// plain loop where it declines. The microkernels are dispatched once, at create().
//
// A, the weights, comes in one of two layouts:
// - panel-major (create_panels): panels of `panel` columns, each a contiguous [k][panel] block
//   (element (q, col) at panel_offset(col, q, k, panel)), so one microkernel call streams one
//   dense block (no 4 KiB-page hops between rows; the hardware prefetchers keep up);
// - row-major (create_row_major): [k][m] with row stride lda.
// A panel-major operand may also be cut into k blocks (create_panels' k_splits): block [b0, b1)
// holds rows b0..b1-1 of every panel, its panels contiguous, so a pass over one k range streams
// one dense region instead of a piece of each panel (the batch-1 RNN step multiplies its own
// units of h first, then the rest: LSTM h256 b1, 2 threads, AMD Zen 5: 4.0 -> 2.4 us per step).
// packed_floats is the same either way; offset() places an element.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "ops/xsmm.h"

namespace graphi::ops {

class TiledGemm {
 public:
  // `ns`: every row count n that run() will be called with.
  // `k_splits`: the interior bounds of its k blocks (none: one block).
  // `register_tiles`: for many rows (the hoisted input projection's T * B), tiles whose C block
  // stays in the vector registers over k (512 / panel rows: 64 columns x 8 rows = 32 zmm) and
  // k tiles of up to 32 KiB of B, instead of the 32-row tiles within LIBXSMM's 64^3 (whose C
  // block is reloaded every 128 of k): LSTM h1024 b1 T100 on 2 threads 9.13-9.23 -> 8.72-8.96
  // ms on the Zen 5 guest (the hoist at ~67% -> ~80% of the FMA peak).
  static TiledGemm create_panels(int64_t m, int64_t k, int64_t panel, int64_t ldb, int64_t ldc,
                                 const std::set<int64_t>& ns,
                                 const std::vector<int64_t>& k_splits = {},
                                 bool register_tiles = false);
  // Tiles of up to 256 columns for GEMV-like calls (n <= 2 rows, A streamed), else 32.
  static TiledGemm create_row_major(int64_t m, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                    const std::set<int64_t>& ns);

  // Floats of a packed [k x m] operand with `panel`-column panels (the last one padded).
  static int64_t packed_floats(int64_t m, int64_t k, int64_t panel) {
    return (m + panel - 1) / panel * panel * k;
  }
  // Offset of A[q][col] in that layout (one k block).
  static int64_t panel_offset(int64_t col, int64_t q, int64_t k, int64_t panel) {
    return col / panel * panel * k + q * panel + col % panel;
  }
  // Offset of A[q][col] in this GEMM's layout (its k blocks included).
  int64_t offset(int64_t col, int64_t q) const noexcept;

  // C rows [0, n) = B rows * A (n one of create's ns). Column tiles outermost: each [k x tile]
  // block of the weights is loaded once and reused for every row tile (the rows, X or h, are
  // the smaller operand and stay in L1/L2). `reverse` walks the column tiles last to first:
  // alternating it every step (zigzag) starts each step on the weights the previous one touched
  // last, which are still in L2 when a thread's weights overflow it.
  void run(const float* a, const float* b, float* c, int64_t n,
           bool reverse = false) const noexcept;
  // One row (n = 1) over the k range [k0, k1) only: c (+)= b[k0:k1] * A[k0:k1, :] (b indexed
  // from k = 0, accumulate adds to c). Lets a caller start on the part of the row it already
  // has (the RNN kernel's own slice of h) before the rest arrives.
  void run_row_k_range(const float* a, const float* b, float* c, int64_t k0, int64_t k1,
                       bool accumulate, bool reverse = false) const noexcept;

 private:
  struct Entry {
    int64_t mm, nn, kk;
    bool acc;
    xsmm::SmmKernel kernel;  // invalid: LIBXSMM declined, use the plain loop
  };

  // Rows [k0, k1) of A: column m0's tile at row q starts at a + base + m0 * col_step +
  // (q - k0) * lda.
  struct KBlock {
    int64_t k0, k1, base, col_step;
  };
  // mt: column tile width; A's tile (m0, k0) starts at a + m0 * col_step + k0 * lda.
  static TiledGemm make(int64_t m, int64_t k, int64_t mt, int64_t lda, int64_t col_step,
                        int64_t ldb, int64_t ldc, const std::set<int64_t>& ns,
                        std::vector<KBlock> blocks = {}, bool register_tiles = false);
  // The k tile for a block of kk rows (kt_ balanced over the block).
  int64_t block_kt(int64_t kk) const noexcept;
  void add(int64_t mm, int64_t nn, int64_t kk, bool acc);
  const Entry* find(int64_t mm, int64_t nn, int64_t kk, bool acc) const noexcept;
  void naive(const float* a, const float* b, float* c, int64_t mm, int64_t nn, int64_t kk,
             bool acc) const noexcept;

  int64_t m_ = 0, k_ = 0, lda_ = 0, ldb_ = 0, ldc_ = 0, mt_ = 1, nt_ = 1, kt_ = 1;
  std::vector<Entry> entries_;
  std::vector<KBlock> kblocks_;  // at least one
};

}  // namespace graphi::ops
