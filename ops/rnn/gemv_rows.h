// Small-row GEMM ("GEMV with a few rows") for the recurrent step of the RNN sequence kernels:
//   C[r][j] (+)= sum_q B[r][q] * A[q * lda + j]   for r < rows, j < cols, q < k
// with B = the h rows of one step (1..kGemvMaxRows of them) and A one [k x cols] tile of packed
// weights (a panel of ops/rnn/tiled_gemm.h: row stride lda = the panel width). At batch 1 a step's
// recurrent GEMM is this call, streaming the thread's slice of R from L2; LIBXSMM's n = 1 code
// reached ~148 GB/s per core here against ~158 GB/s for this loop (four 16-float accumulators
// per row, every A vector loaded once for all rows), and the per-call dispatch is one indirect
// call. AVX-512 / AVX2 / scalar paths chosen at run time by active_simd_isa() (ops/activations.h;
// GRAPHI_SIMD caps it). ops/ only.
#pragma once

#include <cstdint>

#include "ops/activations.h"

namespace graphi::ops {

// Rows per call; TiledGemm uses this kernel for row counts up to it.
inline constexpr int64_t kGemvMaxRows = 4;

// Preconditions: 1 <= rows <= kGemvMaxRows, k >= 1, cols >= 1, lda >= cols; A is read only at
// columns < cols (no padding needed), C written only at columns < cols. accumulate = false
// overwrites C.
void gemv_rows(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
               int64_t rows, int64_t k, int64_t cols, bool accumulate) noexcept;

// Columns of one register block of the active path (AVX-512 64, AVX2 16, scalar 4): a packed
// panel this wide is read by one block as a single contiguous stream.
int64_t gemv_rows_block_cols() noexcept;
// That width as a packed panel width (a multiple of 16 floats, one cache line at least).
inline int64_t gemv_rows_stream_panel() noexcept {
  return gemv_rows_block_cols() < 16 ? 16 : gemv_rows_block_cols();
}

// One ISA path, for tests; nullptr when this CPU cannot run `isa`.
using GemvRowsFn = void (*)(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                            int64_t ldc, int64_t rows, int64_t k, int64_t cols,
                            bool accumulate) noexcept;
GemvRowsFn gemv_rows_kernel(SimdIsa isa);

}  // namespace graphi::ops
