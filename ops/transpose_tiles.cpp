#include "ops/transpose_tiles.h"

#include <immintrin.h>

#include "ops/activations.h"  // active_simd_isa()

namespace graphi::ops {
namespace {

// One 8x8 tile: the classic unpack / shuffle / lane-permute transpose.
__attribute__((target("avx2"))) void tile8x8_avx2(const float* src, int64_t ld, float* dst,
                                                  int64_t ldd) {
  __m256 r0 = _mm256_loadu_ps(src + 0 * ld), r1 = _mm256_loadu_ps(src + 1 * ld);
  __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
  __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
  __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(dst + 0 * ldd, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + 1 * ldd, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(s3, s7, 0x31));
}

void scalar_block(const float* src, int64_t ld, float* dst, int64_t ldd, int64_t rows,
                  int64_t cols) {
  for (int64_t y = 0; y < rows; ++y)
    for (int64_t x = 0; x < cols; ++x) dst[x * ldd + y] = src[y * ld + x];
}

}  // namespace

void transpose_block_f32(const float* src, int64_t ld, float* dst, int64_t ldd, int64_t rows,
                         int64_t cols) {
  static const bool avx2 = active_simd_isa() >= SimdIsa::kAvx2;
  constexpr int64_t kT = 8;
  const int64_t full_rows = avx2 ? rows / kT * kT : 0, full_cols = avx2 ? cols / kT * kT : 0;
  // Source rows in steps of 8 (read in order), tiles along them; the destination's 8-column
  // strips of consecutive row steps complete its lines while they are in L1.
  for (int64_t y = 0; y < full_rows; y += kT)
    for (int64_t x = 0; x < full_cols; x += kT)
      tile8x8_avx2(src + y * ld + x, ld, dst + x * ldd + y, ldd);
  // The right strip (cols past the last full tile) and the bottom strip (rows past it).
  if (full_cols < cols)
    scalar_block(src + full_cols, ld, dst + full_cols * ldd, ldd, full_rows, cols - full_cols);
  if (full_rows < rows)
    scalar_block(src + full_rows * ld, ld, dst + full_rows, ldd, rows - full_rows, cols);
}

}  // namespace graphi::ops
