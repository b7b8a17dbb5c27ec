// The AVX512-BF16 path of ops/rnn/gemm_bf16.h: vdpbf16ps (two bf16 products per fp32 lane and
// instruction, accumulated in fp32). This file alone is compiled with -mavx512f -mavx512bf16
// (CMakeLists.txt) and reached only through gemm_bf16_kernel() after the cpuid check. Like the
// ops/vec_math.h TUs it calls no inline function or std:: template shared with other TUs (their
// COMDAT copies, compiled here with AVX-512, could be the ones the linker keeps).
#include <immintrin.h>

#include <cstdint>

#include "ops/rnn/gemm_bf16.h"

namespace {

// An empty asm that claims to change v: keeps an A vector in a register when several rows use it
// (else the compiler folds the load into every row's vdpbf16ps and the loop is load-port bound).
inline void keep_in_register(__m512i& v) { __asm__("" : "+v"(v)); }

// C[R rows][NV x 16 columns] in registers over pair rows [q0, q1); `tail` masks the last vector
// when kMasked (A is never read past the panel's last column, C never written past it).
template <int R, int NV, bool kMasked>
inline __attribute__((always_inline)) void block(const uint32_t* a, int64_t panel,
                                                 const uint32_t* b, int64_t ldb, float* c,
                                                 int64_t ldc, int64_t q0, int64_t q1,
                                                 __mmask16 tail, bool accumulate) {
  __m512 s[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s[r][v] = _mm512_setzero_ps();
  for (int64_t q = q0; q < q1; ++q) {
    const uint32_t* aq = a + q * panel;
    __m512i av[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      av[v] = (kMasked && v == NV - 1) ? _mm512_maskz_loadu_epi32(tail, aq + 16 * v)
                                       : _mm512_loadu_si512(aq + 16 * v);
    if constexpr (R > 1) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) keep_in_register(av[v]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i bv = _mm512_set1_epi32(static_cast<int>(b[r * ldb + q]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        s[r][v] = _mm512_dpbf16_ps(s[r][v], (__m512bh)av[v], (__m512bh)bv);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* cr = c + r * ldc + 16 * v;
      const __mmask16 m = (kMasked && v == NV - 1) ? tail : static_cast<__mmask16>(0xffff);
      __m512 out = s[r][v];
      if (accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(m, cr));
      _mm512_mask_storeu_ps(cr, m, out);
    }
}

// R rows over `cols` columns of one panel: blocks of 4 vectors, then one masked block.
template <int R>
void panel_rows(const uint32_t* ap, int64_t panel, int64_t cols, const uint32_t* b, int64_t ldb,
                float* c, int64_t ldc, int64_t q0, int64_t q1, bool accumulate) {
  int64_t j = 0;
  for (; j + 64 <= cols; j += 64)
    block<R, 4, false>(ap + j, panel, b, ldb, c + j, ldc, q0, q1, 0xffff, accumulate);
  const int64_t left = cols - j;
  if (left <= 0) return;
  const int nv = static_cast<int>((left + 15) / 16);
  const int lanes = static_cast<int>(left - int64_t{nv - 1} * 16);
  const __mmask16 tail = static_cast<__mmask16>((1u << lanes) - 1u);
  switch (nv) {
    case 1:
      block<R, 1, true>(ap + j, panel, b, ldb, c + j, ldc, q0, q1, tail, accumulate);
      break;
    case 2:
      block<R, 2, true>(ap + j, panel, b, ldb, c + j, ldc, q0, q1, tail, accumulate);
      break;
    case 3:
      block<R, 3, true>(ap + j, panel, b, ldb, c + j, ldc, q0, q1, tail, accumulate);
      break;
    default:
      block<R, 4, true>(ap + j, panel, b, ldb, c + j, ldc, q0, q1, tail, accumulate);
      break;
  }
}

}  // namespace

namespace graphi::ops::detail {

void gemm_bf16_avx512bf16(const Bf16GemmArgs& g) noexcept {
  const int64_t kp = (g.k + 1) / 2;
  const int64_t q0 = g.q0, q1 = g.q1 < 0 || g.q1 > kp ? kp : g.q1;
  const int64_t np = (g.m + g.panel - 1) / g.panel;
  // Rows in blocks of 6 (6 x 4 accumulators + 4 A vectors of the 32 registers).
  constexpr int64_t kRows = 6;
  for (int64_t pi = 0; pi < np; ++pi) {
    const int64_t p = g.reverse ? np - 1 - pi : pi;
    const int64_t m0 = p * g.panel;
    const int64_t cols = g.m - m0 < g.panel ? g.m - m0 : g.panel;
    const uint32_t* ap = g.a + p * g.panel * kp;
    for (int64_t r0 = 0; r0 < g.rows; r0 += kRows) {
      const int64_t n = g.rows - r0 < kRows ? g.rows - r0 : kRows;
      const uint32_t* b = g.b + r0 * g.ldb;
      float* c = g.c + r0 * g.ldc + m0;
      switch (n) {
        case 1:
          panel_rows<1>(ap, g.panel, cols, b, g.ldb, c, g.ldc, q0, q1, g.accumulate);
          break;
        case 2:
          panel_rows<2>(ap, g.panel, cols, b, g.ldb, c, g.ldc, q0, q1, g.accumulate);
          break;
        case 3:
          panel_rows<3>(ap, g.panel, cols, b, g.ldb, c, g.ldc, q0, q1, g.accumulate);
          break;
        case 4:
          panel_rows<4>(ap, g.panel, cols, b, g.ldb, c, g.ldc, q0, q1, g.accumulate);
          break;
        case 5:
          panel_rows<5>(ap, g.panel, cols, b, g.ldb, c, g.ldc, q0, q1, g.accumulate);
          break;
        default:
          panel_rows<6>(ap, g.panel, cols, b, g.ldb, c, g.ldc, q0, q1, g.accumulate);
          break;
      }
    }
  }
}

}  // namespace graphi::ops::detail
