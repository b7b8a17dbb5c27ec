// Internal to ops/: SIMD traits (scalar, AVX2+FMA, AVX-512F) and the exp/sigmoid/tanh math written
// once over them. Not a public header: include it only from the per-ISA translation units.
//
// Usage: a TU includes every other header it needs first, then defines exactly one of
// GRAPHI_VEC_SCALAR, GRAPHI_VEC_AVX2, GRAPHI_VEC_AVX512 and includes this file last, directly
// or through ops/rnn/rnn_gates_impl.h (which includes nothing else). For the SIMD ones this header
// switches the compilation target on (GCC pragma / clang attribute push) and leaves it on: the TU's
// own kernels after the include are compiled for that ISA, and the TU ends with
// GRAPHI_VEC_TARGET_END. Everything here lives in an anonymous namespace, so each TU gets its own
// copy compiled for its ISA and no AVX-512 code can leak into a baseline caller through a shared
// inline (ODR) symbol; for the same reason, code under the target must not instantiate std::
// templates (std::min and friends), whose COMDAT copies the linker may pick. The public entry
// points of a SIMD TU are reached only after a __builtin_cpu_supports check.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(GRAPHI_VEC_AVX2) || defined(GRAPHI_VEC_AVX512)
#include <immintrin.h>
#endif

// Switch the target on for the SIMD TUs (GCC: pragma; clang: attribute push over every function).
#if defined(GRAPHI_VEC_AVX512) || defined(GRAPHI_VEC_AVX2)
#if defined(__clang__)
#if defined(GRAPHI_VEC_AVX512)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#endif
#define GRAPHI_VEC_TARGET_END _Pragma("clang attribute pop")
#else
#pragma GCC push_options
#if defined(GRAPHI_VEC_AVX512)
// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps in min/max); a known false
// positive, silenced for this TU only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx2,fma")
#else
#pragma GCC target("avx2,fma")
#endif
#define GRAPHI_VEC_TARGET_END _Pragma("GCC pop_options")
#endif
#endif

namespace {

// Traits contract (T): V vector type, M mask type, kWidth lanes;
//   set1, zero, load/store (unaligned), load_n/store_n (first n < kWidth lanes, others
//   untouched and never read), add/sub/mul, fmadd(a,b,c)=a*b+c, fnmadd(a,b,c)=c-a*b,
//   min(a,b)/max(a,b) (return b when either is NaN, as x86 MINPS/MAXPS do; the math below puts
//   the possibly-NaN operand second so NaN propagates), abs, copysign(mag>=0, sgn),
//   round (to nearest even), floor, scale2(y, n) = y * 2^n for integral n in [-126, 126],
//   frac(t) = t - floor(t), scale2_floor(y, t) = y * 2^floor(t) for any t (AVX-512: exact,
//   overflowing to inf and underflowing to 0; the others clamp floor(t) to [-126, 126]),
//   rcp(d) ~ 1/d for d in [1, 2^127) to ~1 ulp, lt(a,b) (false on NaN), nlt(a,b) = !lt(a,b)
//   (true on NaN), isnan, select(m, a, b), mul_where(m, a, b) = m ? a*b : 0.

#if defined(GRAPHI_VEC_SCALAR)
struct VecScalar {
  using V = float;
  using M = bool;
  static constexpr int kWidth = 1;
  static V set1(float x) { return x; }
  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V load_n(const float* p, int) { return *p; }
  static void store_n(float* p, V v, int) { *p = v; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V fnmadd(V a, V b, V c) { return c - a * b; }
  static V min(V a, V b) { return a < b ? a : b; }
  static V max(V a, V b) { return a > b ? a : b; }
  static V abs(V a) {
    uint32_t u;
    std::memcpy(&u, &a, 4);
    u &= 0x7fffffffu;
    std::memcpy(&a, &u, 4);
    return a;
  }
  static V copysign(V mag, V sgn) {
    uint32_t m, s;
    std::memcpy(&m, &mag, 4);
    std::memcpy(&s, &sgn, 4);
    m |= s & 0x80000000u;
    std::memcpy(&mag, &m, 4);
    return mag;
  }
  static V round(V a) { return __builtin_nearbyintf(a); }
  static V floor(V a) { return __builtin_floorf(a); }
  static V frac(V a) { return a - floor(a); }
  static V scale2(V y, V n) {
    if (n != n) return n;  // casting NaN to int is UB
    int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float p;
    std::memcpy(&p, &bits, 4);
    return y * p;
  }
  static V scale2_floor(V y, V t) { return scale2(y, min(126.0f, max(-126.0f, floor(t)))); }
  static V rcp(V d) { return 1.0f / d; }
  static M lt(V a, V b) { return a < b; }
  static M nlt(V a, V b) { return !(a < b); }
  static M isnan(V a) { return a != a; }
  static V select(M m, V a, V b) { return m ? a : b; }
  static V mul_where(M m, V a, V b) { return m ? a * b : 0.0f; }
};
#endif

#if defined(GRAPHI_VEC_AVX2)
struct VecAvx2 {
  using V = __m256;
  using M = __m256;
  static constexpr int kWidth = 8;
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __m256i lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // vmaskmov never touches (or faults on) the masked-off lanes.
  static V load_n(const float* p, int n) { return _mm256_maskload_ps(p, lanes(n)); }
  static void store_n(float* p, V v, int n) { _mm256_maskstore_ps(p, lanes(n), v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V abs(V a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
  static V copysign(V mag, V sgn) {
    return _mm256_or_ps(
        mag,
        _mm256_and_ps(sgn, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)))));
  }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V floor(V a) { return _mm256_floor_ps(a); }
  static V frac(V a) { return _mm256_sub_ps(a, floor(a)); }
  static V scale2(V y, V n) {
    // n is integral in [-126, 126]: build 2^n in the exponent field. A NaN n gives a finite
    // factor here, but y is NaN then too.
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  }
  static V scale2_floor(V y, V t) {
    return scale2(y, min(_mm256_set1_ps(126.0f), max(_mm256_set1_ps(-126.0f), floor(t))));
  }
  // A true division: rcpps + one Newton step is ~2-3 ulp and makes sigmoid(0) = 0.49999997; the
  // AVX2 path runs on machines whose ymm divider is fast enough for an O(B*H) elementwise pass.
  static V rcp(V d) { return _mm256_div_ps(_mm256_set1_ps(1.0f), d); }
  static M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M nlt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_NLT_UQ); }
  static M isnan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static V select(M m, V a, V b) { return _mm256_blendv_ps(b, a, m); }
  static V mul_where(M m, V a, V b) { return _mm256_and_ps(m, _mm256_mul_ps(a, b)); }
};
#endif

#if defined(GRAPHI_VEC_AVX512)
struct VecAvx512 {
  using V = __m512;
  using M = __mmask16;
  static constexpr int kWidth = 16;
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static __mmask16 lanes(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(lanes(n), p); }
  static void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, lanes(n), v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V abs(V a) { return _mm512_abs_ps(a); }
  static V copysign(V mag, V sgn) {
    // AVX-512F has no and_ps/or_ps (those are DQ); go through the integer domain.
    __m512i s = _mm512_and_si512(_mm512_castps_si512(sgn),
                                 _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag), s));
  }
  static V round(V a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static V floor(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static V scale2(V y, V n) { return _mm512_scalef_ps(y, n); }
  // VSCALEFPS floors its exponent operand itself. (AVX512DQ's VREDUCEPS would make frac one
  // instruction: no faster here, and the AVX-512 TUs need only AVX512F.)
  static V frac(V a) { return _mm512_sub_ps(a, floor(a)); }
  static V scale2_floor(V y, V t) { return _mm512_scalef_ps(y, t); }
  static V rcp(V d) {
    // rcp14 has 14 bits; one Newton step gives ~1 ulp.
    V r = _mm512_rcp14_ps(d);
    return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r);
  }
  static M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M nlt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLT_UQ); }
  static M isnan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static V select(M m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }
  static V mul_where(M m, V a, V b) { return _mm512_maskz_mul_ps(m, a, b); }
};
#endif

// exp(x) for x <= 0 (NaN propagates). Cephes expf: x = n ln2 + r with |r| <= ln2/2, ln2 split in
// two parts so n*ln2_hi is exact, exp(r) by a degree-5 minimax polynomial; max relative error
// ~1.5 ulp. Clamped at -87 so 2^n stays a normal float; callers saturate below that.
// exp(x) for x in [-87, 87] (the reduction and polynomial of vexp_nonpos, below).
template <class T>
inline typename T::V vexp_reduced(typename T::V x) {
  using V = typename T::V;
  V n = T::round(T::mul(x, T::set1(1.44269504088896341f)));
  V r = T::fnmadd(n, T::set1(0.693359375f), x);
  r = T::fnmadd(n, T::set1(-2.12194440e-4f), r);
  V p = T::set1(1.9875691500e-4f);
  p = T::fmadd(p, r, T::set1(1.3981999507e-3f));
  p = T::fmadd(p, r, T::set1(8.3334519073e-3f));
  p = T::fmadd(p, r, T::set1(4.1665795894e-2f));
  p = T::fmadd(p, r, T::set1(1.6666665459e-1f));
  p = T::fmadd(p, r, T::set1(5.0000001201e-1f));
  p = T::fmadd(p, T::mul(r, r), T::add(r, T::set1(1.0f)));
  return T::scale2(p, n);
}

template <class T>
inline typename T::V vexp_nonpos(typename T::V x) {
  return vexp_reduced<T>(T::max(T::set1(-87.0f), x));
}

// sigmoid(x) = 1/(1+e) for x >= 0 and e/(1+e) for x < 0 with e = exp(-|x|) in (0, 1], so the
// denominator is in [1, 2] (no overflow, rcp is safe) and the negative side keeps relative
// precision. Saturates to exactly 1 above 17.5 (sigmoid rounds to 1.0f there) and to 0 below
// -87 (true value < 2e-38).
template <class T>
inline typename T::V vsigmoid(typename T::V x) {
  using V = typename T::V;
  const V one = T::set1(1.0f);
  V e = vexp_nonpos<T>(T::sub(T::zero(), T::abs(x)));
  V s = T::rcp(T::add(one, e));
  V r = T::select(T::lt(x, T::zero()), T::mul(e, s), s);
  r = T::select(T::lt(T::set1(17.5f), x), one, r);
  r = T::select(T::lt(x, T::set1(-87.0f)), T::zero(), r);
  return T::select(T::isnan(x), x, r);
}

// 2^t: t = n + f with n = floor(t) and f in [0, 1), 2^f by a degree-5 minimax polynomial
// (relative error 1.6e-7 in float arithmetic), times 2^n (T::scale2_floor: on AVX-512 exact for
// any t, inf above 128 and 0 far below; elsewhere n clamped to [-126, 126]). Three vector ops
// fewer than vexp_reduced's two-constant ln2 reduction, but exp(x) through it, 2^(x log2 e),
// inherits the rounding of x log2 e: relative error up to ~|x| 4e-8 (2.6e-6 at |x| = 60).
template <class T>
inline typename T::V vexp2(typename T::V t) {
  using V = typename T::V;
  V f = T::frac(t);
  V p = T::set1(1.8775670323520899e-3f);
  p = T::fmadd(p, f, T::set1(8.989340625703335e-3f));
  p = T::fmadd(p, f, T::set1(5.58263398706913e-2f));
  p = T::fmadd(p, f, T::set1(2.4015359580516815e-1f));
  p = T::fmadd(p, f, T::set1(6.931530833244324e-1f));
  p = T::fmadd(p, f, T::set1(9.999999403953552e-1f));
  return T::scale2_floor(p, t);
}

// swish(x) = x sigmoid(x) = x / (1 + exp(-x)) (SiLU) in one pass, exp(-x) = 2^(-x log2 e) by
// vexp2; x below -87 (-inf too) gives 0 (the true value is under 2e-36 there; the masked
// multiply also drops the NaN that 1 / (1 + inf)'s Newton step makes once 2^t overflows),
// x above 87 gives x, NaN propagates. Its absolute error stays within 1e-6 max(1, |x|); the
// exp's rounding only shows as relative error where swish is tiny (x < -20: |swish| < 5e-8).
// 16 vector ops on AVX-512 (no upper exponent clamp: VSCALEFPS saturates to inf and floors t
// itself), 17 before: one AVX-512 core 0.340 -> 0.311 ns per value (same run, this host).
template <class T>
inline typename T::V vswish(typename T::V x) {
  using V = typename T::V;
  // t >= -126: t - floor(t) is NaN at t = -inf (x = +inf); above, no clamp (see the header).
  V t = T::max(T::set1(-126.0f), T::mul(x, T::set1(-1.44269504088896341f)));
  V r = T::rcp(T::add(T::set1(1.0f), vexp2<T>(t)));
  return T::mul_where(T::nlt(x, T::set1(-87.0f)), x, r);
}

// tanh: for |x| < 0.625 Cephes tanhf's odd minimax polynomial x + x^3 P(x^2) (relative error
// ~1e-7, exact sign and -0); above, sign(x) (1-e2)/(1+e2) with e2 = exp(-2|x|), whose absolute
// error is a few 1e-8. Saturates to exactly +-1 for |x| > 9.1 (tanh rounds to 1.0f there).
template <class T>
inline typename T::V vtanh(typename T::V x) {
  using V = typename T::V;
  const V one = T::set1(1.0f);
  V a = T::abs(x);
  V z = T::mul(x, x);
  V p = T::set1(-5.70498872745e-3f);
  p = T::fmadd(p, z, T::set1(2.06390887954e-2f));
  p = T::fmadd(p, z, T::set1(-5.37397155531e-2f));
  p = T::fmadd(p, z, T::set1(1.33314422036e-1f));
  p = T::fmadd(p, z, T::set1(-3.33332819422e-1f));
  V small = T::fmadd(T::mul(p, z), a, a);  // on |x|, so that -0 keeps its sign below
  V e2 = vexp_nonpos<T>(T::mul(T::set1(-2.0f), T::min(T::set1(9.5f), a)));
  V t = T::mul(T::sub(one, e2), T::rcp(T::add(one, e2)));
  t = T::select(T::lt(T::set1(9.1f), a), one, t);
  V r = T::copysign(T::select(T::lt(a, T::set1(0.625f)), small, t), x);
  return T::select(T::isnan(x), x, r);
}

// erf: for |x| < 1 the Maclaurin series to x^21 (truncation < 2e-9, exact sign and -0); above,
// Abramowitz & Stegun 7.1.26, 1 - t (a1 + t (a2 + ... + t a5)) exp(-x^2) with t = 1 / (1 + p |x|)
// (absolute error <= 1.5e-7), |x| clamped to 9 (erf rounds to 1.0f above 3.9). ~35 vector ops;
// NaN propagates, +-inf give +-1. (GELU's erf: ONNX exports of nn.GELU(), ConvNeXt, ViT;
// std::erf per element was ~10 ns.)
template <class T>
inline typename T::V verf(typename T::V x) {
  using V = typename T::V;
  const V one = T::set1(1.0f);
  V a = T::min(T::set1(9.0f), T::abs(x));
  V z = T::mul(a, a);
  // 2/sqrt(pi) (a - a^3/3 + a^5/10 - ...): coefficient n is 1 / (n! (2n + 1)), signs alternate
  // (each fnmadd flips them).
  V s = T::set1(1.0f / 76204800.0f);
  s = T::fnmadd(s, z, T::set1(1.0f / 6894720.0f));  // (no std::initializer_list loop here: see
  s = T::fnmadd(s, z, T::set1(1.0f / 685440.0f));   // the header's note on std:: templates)
  s = T::fnmadd(s, z, T::set1(1.0f / 75600.0f));
  s = T::fnmadd(s, z, T::set1(1.0f / 9360.0f));
  s = T::fnmadd(s, z, T::set1(1.0f / 1320.0f));
  s = T::fnmadd(s, z, T::set1(1.0f / 216.0f));
  s = T::fnmadd(s, z, T::set1(1.0f / 42.0f));
  s = T::fnmadd(s, z, T::set1(1.0f / 10.0f));
  s = T::fnmadd(s, z, T::set1(1.0f / 3.0f));
  s = T::fnmadd(s, z, one);
  s = T::mul(T::mul(s, a), T::set1(1.12837916709551257f));
  V t = T::rcp(T::fmadd(T::set1(0.3275911f), a, one));
  V p = T::set1(1.061405429f);
  p = T::fmadd(p, t, T::set1(-1.453152027f));
  p = T::fmadd(p, t, T::set1(1.421413741f));
  p = T::fmadd(p, t, T::set1(-0.284496736f));
  p = T::fmadd(p, t, T::set1(0.254829592f));
  V big = T::fnmadd(T::mul(p, t), vexp_nonpos<T>(T::sub(T::zero(), z)), one);
  V r = T::copysign(T::select(T::lt(a, one), s, big), x);
  return T::select(T::isnan(x), x, r);
}

// GELU, exact form: x (1 + erf(x / sqrt(2))) / 2 (what PyTorch exports nn.GELU() as: Div, Erf,
// Add, Mul, Mul; graph/passes/gelu_fusion.h makes it one op).
template <class T>
inline typename T::V vgelu(typename T::V x) {
  using V = typename T::V;
  V e = verf<T>(T::mul(x, T::set1(0.70710678118654752f)));
  return T::mul(T::mul(x, T::set1(0.5f)), T::add(T::set1(1.0f), e));
}

// GELU, tanh form (ONNX Gelu approximate = 'tanh', PyTorch nn.GELU(approximate='tanh')):
// x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2.
template <class T>
inline typename T::V vgelu_tanh(typename T::V x) {
  using V = typename T::V;
  const V inner = T::mul(T::set1(0.7978845608028654f),
                         T::fmadd(T::mul(T::set1(0.044715f), T::mul(x, x)), x, x));
  return T::mul(T::mul(x, T::set1(0.5f)), T::add(T::set1(1.0f), vtanh<T>(inner)));
}

// Horizontal sum (in double) and max of a vector's lanes, through a lane array. Not inlined and
// not ASan-instrumented: GCC 12's ASan build with detect_stack_use_after_return (the fake stack)
// stored the vector through a bad pointer when such an array lived in an instrumented AVX-512
// frame (ops/softmax_rows_impl.h's row loop).
template <class T>
__attribute__((no_sanitize_address, noinline)) double vlanes_sum(typename T::V v) {
  float lanes[T::kWidth];
  T::store(lanes, v);
  double s = 0;
  for (int i = 0; i < T::kWidth; ++i) s += lanes[i];
  return s;
}

template <class T>
__attribute__((no_sanitize_address, noinline)) float vlanes_max(typename T::V v) {
  float lanes[T::kWidth];
  T::store(lanes, v);
  float m = lanes[0];
  for (int i = 1; i < T::kWidth; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}

// dst[i] = f(src[i]) over whole vectors and a masked tail; f is one of the v* functions above.
template <class T, typename T::V (*F)(typename T::V)>
void map_array(const float* src, float* dst, int64_t n) {
  constexpr int W = T::kWidth;
  int64_t i = 0;
  for (; i + W <= n; i += W) T::store(dst + i, F(T::load(src + i)));
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    T::store_n(dst + i, F(T::load_n(src + i, rest)), rest);
  }
}

template <class T>
void sigmoid_array(const float* src, float* dst, int64_t n) {
  map_array<T, vsigmoid<T>>(src, dst, n);
}

template <class T>
void swish_array(const float* src, float* dst, int64_t n) {
  map_array<T, vswish<T>>(src, dst, n);
}

template <class T>
void tanh_array(const float* src, float* dst, int64_t n) {
  map_array<T, vtanh<T>>(src, dst, n);
}

template <class T>
void erf_array(const float* src, float* dst, int64_t n) {
  map_array<T, verf<T>>(src, dst, n);
}

template <class T>
void gelu_array(const float* src, float* dst, int64_t n) {
  map_array<T, vgelu<T>>(src, dst, n);
}

template <class T>
void gelu_tanh_array(const float* src, float* dst, int64_t n) {
  map_array<T, vgelu_tanh<T>>(src, dst, n);
}

}  // namespace
