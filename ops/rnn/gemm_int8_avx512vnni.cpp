// The AVX512-VNNI path of ops/rnn/gemm_int8.h: vpdpbusd (four u8 x s8 products per int32 lane
// and instruction, accumulated in int32). This file alone is compiled with -mavx512f
// -mavx512vnni (CMakeLists.txt) and reached only through gemm_int8_kernel() after the cpuid
// check. Like ops/rnn/gemm_bf16_avx512bf16.cpp it calls no inline function or std:: template
// shared with other TUs (their COMDAT copies, compiled here with AVX-512, could be the ones the
// linker keeps).
// GCC 12 flags the _mm512_undefined_* pass-through operands inside the plain AVX-512 intrinsics
// (min, max, cvt) as uninitialized: a false positive of the header, silenced for this TU.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "ops/rnn/gemm_int8.h"

namespace {

// Keeps an A vector in a register when several rows use it (see gemm_bf16_avx512bf16.cpp).
inline void keep_in_register(__m512i& v) { __asm__("" : "+v"(v)); }

// acc += the u8 x s8 products of b and a, accumulated in place. GCC 12 compiles the
// _mm512_dpbusd_epi32 intrinsic of a register-blocked loop with a copy of the accumulator
// around every vpdpbusd and a store of it to the stack (the 6 x 64 block of the hoisted GEMM ran
// at ~40% of the instruction's rate on a Zen 5 core); the instruction itself, written out, does
// neither.
inline __m512i dpbusd(__m512i acc, __m512i b, __m512i a) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(b), "v"(a));
  return acc;
}

// C[R rows][NV x 16 columns] over quad rows [q0, q1), int32 accumulators in registers; the
// epilogue applies the zero points, column sums and scales. `tail` masks the last vector when
// kMasked.
template <int R, int NV, bool kMasked>
inline __attribute__((always_inline)) void block(const uint32_t* a, int64_t panel,
                                                 const uint32_t* b, const uint32_t* bp, int64_t ldb,
                                                 const float* sa, const int32_t* cs, float* c,
                                                 int64_t ldc, int64_t q0, int64_t q1,
                                                 __mmask16 tail, bool accumulate) {
  __m512i s[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s[r][v] = _mm512_setzero_si512();
  int64_t q = q0;
  if constexpr (R == 1) {
    // One row (the batch-1 step): a second set of accumulators for odd quad rows, so the
    // vpdpbusd chains are twice as many and half as long (its latency, not its throughput, bounds
    // one chain per vector).
    __m512i s2[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s2[v] = _mm512_setzero_si512();
    for (; q + 2 <= q1; q += 2) {
      const uint32_t* aq = a + q * panel;
      const __m512i b0 = _mm512_set1_epi32(static_cast<int>(b[q]));
      const __m512i b1 = _mm512_set1_epi32(static_cast<int>(b[q + 1]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m512i a0 = (kMasked && v == NV - 1) ? _mm512_maskz_loadu_epi32(tail, aq + 16 * v)
                                                    : _mm512_loadu_si512(aq + 16 * v);
        const __m512i a1 = (kMasked && v == NV - 1)
                               ? _mm512_maskz_loadu_epi32(tail, aq + panel + 16 * v)
                               : _mm512_loadu_si512(aq + panel + 16 * v);
        s[0][v] = dpbusd(s[0][v], b0, a0);
        s2[v] = dpbusd(s2[v], b1, a1);
      }
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s[0][v] = _mm512_add_epi32(s[0][v], s2[v]);
  }
  for (; q < q1; ++q) {
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
      for (int v = 0; v < NV; ++v) s[r][v] = dpbusd(s[r][v], bv, av[v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 sb = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(bp[r * ldb])));
    const __m512i zb = _mm512_set1_epi32(static_cast<int>(bp[r * ldb + 1]));
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = (kMasked && v == NV - 1) ? tail : static_cast<__mmask16>(0xffff);
      const __m512i csv = _mm512_maskz_loadu_epi32(m, cs + 16 * v);
      const __m512 sav = _mm512_maskz_loadu_ps(m, sa + 16 * v);
      const __m512i iv = _mm512_sub_epi32(s[r][v], _mm512_mullo_epi32(zb, csv));
      __m512 out = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(m, iv), _mm512_mul_ps(sav, sb));
      float* cr = c + r * ldc + 16 * v;
      if (accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(m, cr));
      _mm512_mask_storeu_ps(cr, m, out);
    }
  }
}

template <int R>
void panel_rows(const uint32_t* ap, int64_t panel, int64_t cols, const uint32_t* b,
                const uint32_t* bp, int64_t ldb, const float* sa, const int32_t* cs, float* c,
                int64_t ldc, int64_t q0, int64_t q1, bool accumulate) {
  int64_t j = 0;
  for (; j + 64 <= cols; j += 64)
    block<R, 4, false>(ap + j, panel, b, bp, ldb, sa + j, cs + j, c + j, ldc, q0, q1, 0xffff,
                       accumulate);
  const int64_t left = cols - j;
  if (left <= 0) return;
  const int nv = static_cast<int>((left + 15) / 16);
  const int lanes = static_cast<int>(left - int64_t{nv - 1} * 16);
  const __mmask16 tail = static_cast<__mmask16>((1u << lanes) - 1u);
  switch (nv) {
    case 1:
      block<R, 1, true>(ap + j, panel, b, bp, ldb, sa + j, cs + j, c + j, ldc, q0, q1, tail,
                        accumulate);
      break;
    case 2:
      block<R, 2, true>(ap + j, panel, b, bp, ldb, sa + j, cs + j, c + j, ldc, q0, q1, tail,
                        accumulate);
      break;
    case 3:
      block<R, 3, true>(ap + j, panel, b, bp, ldb, sa + j, cs + j, c + j, ldc, q0, q1, tail,
                        accumulate);
      break;
    default:
      block<R, 4, true>(ap + j, panel, b, bp, ldb, sa + j, cs + j, c + j, ldc, q0, q1, tail,
                        accumulate);
      break;
  }
}

}  // namespace

namespace graphi::ops::detail {

void gemm_int8_avx512vnni(const Int8GemmArgs& g) noexcept {
  const int64_t kq = (g.k + 3) / 4;
  const int64_t q0 = g.q0, q1 = g.q1 < 0 || g.q1 > kq ? kq : g.q1;
  const int64_t np = (g.m + g.panel - 1) / g.panel;
  constexpr int64_t kRows = 6;  // 6 x 4 accumulators + 4 A vectors of the 32 registers
  for (int64_t pi = 0; pi < np; ++pi) {
    const int64_t p = g.reverse ? np - 1 - pi : pi;
    const int64_t m0 = p * g.panel;
    const int64_t cols = g.m - m0 < g.panel ? g.m - m0 : g.panel;
    const uint32_t* ap = g.a + p * g.panel * kq;
    for (int64_t r0 = 0; r0 < g.rows; r0 += kRows) {
      const int64_t n = g.rows - r0 < kRows ? g.rows - r0 : kRows;
      const uint32_t* b = g.b + r0 * g.ldb;
      const uint32_t* bp = g.bp + r0 * g.ldb;
      const float* sa = g.a_scale + m0;
      const int32_t* cs = g.colsum + m0;
      float* c = g.c + r0 * g.ldc + m0;
#define GRAPHI_INT8_ROWS(R)                                                               \
  panel_rows<R>(ap, g.panel, cols, b, bp, g.ldb, sa, cs, c, g.ldc, q0, q1, g.accumulate); \
  break
      switch (n) {
        case 1:
          GRAPHI_INT8_ROWS(1);
        case 2:
          GRAPHI_INT8_ROWS(2);
        case 3:
          GRAPHI_INT8_ROWS(3);
        case 4:
          GRAPHI_INT8_ROWS(4);
        case 5:
          GRAPHI_INT8_ROWS(5);
        default:
          GRAPHI_INT8_ROWS(6);
      }
#undef GRAPHI_INT8_ROWS
    }
  }
}

}  // namespace graphi::ops::detail

namespace graphi::ops::detail {

// int8_quantize_row with AVX-512: the same arithmetic (fp32 min / max, scale, x * (1 / scale)
// rounded to nearest even by vcvtps2dq under the default MXCSR, + zero point, clamped), so the
// bytes equal the portable version's.
void int8_quantize_row_avx512(const float* x, int64_t k0, int64_t k1, uint8_t* out, float* scale,
                              int32_t* zp) noexcept {
  const int64_t n = k1 - k0;
  const float* p = x + k0;
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(p + i);
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
  }
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
  if (i < n) {
    const __m512 v = _mm512_maskz_loadu_ps(tail, p + i);  // zeros: the range includes 0 anyway
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
  }
  alignas(64) float lov[16], hiv[16];
  _mm512_store_ps(lov, lo);
  _mm512_store_ps(hiv, hi);
  float mn = 0.0f, mx = 0.0f;
  for (int j = 0; j < 16; ++j) {
    mn = lov[j] < mn ? lov[j] : mn;
    mx = hiv[j] > mx ? hiv[j] : mx;
  }
  float s = (mx - mn) / 255.0f;
  if (!(s > 0.0f) || !(s < __builtin_inff())) s = 1.0f;
  float z = __builtin_nearbyintf(-mn / s);
  z = z < 0.0f ? 0.0f : z > 255.0f ? 255.0f : z;
  const __m512 inv = _mm512_set1_ps(1.0f / s), zv = _mm512_set1_ps(z);
  const __m512 lo_c = _mm512_setzero_ps(), hi_c = _mm512_set1_ps(255.0f);
  auto quant = [&](__m512 v) {
    // nearbyint(v * inv) + z, clamped, as floats (exact: small integers), then to bytes.
    const __m512 r = _mm512_maskz_roundscale_ps(0xffff, _mm512_mul_ps(v, inv),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 c = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, zv), lo_c), hi_c);
    return _mm512_maskz_cvtepi32_epi8(0xffff, _mm512_maskz_cvttps_epi32(0xffff, c));
  };
  for (i = 0; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), quant(_mm512_loadu_ps(p + i)));
  if (i < n) {  // (a masked byte store needs AVX512-BW + VL, not assumed here)
    alignas(16) uint8_t last[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(last), quant(_mm512_maskz_loadu_ps(tail, p + i)));
    for (int64_t j = 0; i + j < n; ++j) out[i + j] = last[j];
  }
  *scale = s;
  *zp = static_cast<int32_t>(z);
}

// int8_quantize_values with AVX-512: x / scale (a division, as QuantizeLinear defines it), rounded
// to nearest even by vrndscaleps, + zero point, clamped with NaN going to 0 (vmaxps returns its
// second operand for a NaN first one).
void int8_quantize_values_avx512(const float* x, int64_t n, float scale, float zero_point,
                                 uint8_t* out) noexcept {
  const __m512 sv = _mm512_set1_ps(scale), zv = _mm512_set1_ps(zero_point);
  const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.0f);
  auto quant = [&](__m512 v) {
    const __m512 r = _mm512_maskz_roundscale_ps(0xffff, _mm512_div_ps(v, sv),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 c = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, zv), lo), hi);
    return _mm512_maskz_cvtepi32_epi8(0xffff, _mm512_maskz_cvttps_epi32(0xffff, c));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), quant(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    alignas(16) uint8_t last[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(last), quant(_mm512_maskz_loadu_ps(tail, x + i)));
    for (int64_t j = 0; i + j < n; ++j) out[i + j] = last[j];
  }
}

}  // namespace graphi::ops::detail
