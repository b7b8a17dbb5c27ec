// Internal to ops/: the small-row GEMM of ops/rnn/gemv_rows.h written once over the SIMD traits of
// ops/vec_math.h. Included by ops/rnn/gemv_rows.cpp (scalar) and ops/rnn/gemv_rows_avx2.cpp /
// ops/rnn/gemv_rows_avx512.cpp after they define GRAPHI_VEC_<ISA>; compiled under vec_math.h's
// target switch, so it includes nothing else and uses no std:: templates.
#pragma once

#include "ops/vec_math.h"

namespace {

// An empty asm that claims to change v: the value must then live in a register.
template <class V>
inline void gemv_opaque(V& v) {
#if defined(GRAPHI_VEC_SCALAR)
  (void)v;
#else
  __asm__("" : "+x"(v));
#endif
}

// Column blocks of NV vectors: C[R rows][NV * W columns] in registers for the whole k loop, every
// A vector loaded once and used by all R rows. `tail` = lanes of the last vector (W: full), so
// A is never read past `cols` (the last panel of a packed operand may be unpadded).
template <class T, int R, int NV, bool kMasked>
inline void gemv_block(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                       int64_t ldc, int64_t k, int tail, bool accumulate) {
  using V = typename T::V;
  constexpr int W = T::kWidth;
  V acc[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = T::zero();
  for (int64_t q = 0; q < k; ++q) {
    const float* aq = a + q * lda;
    V av[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      av[v] = (kMasked && v == NV - 1) ? T::load_n(aq + v * W, tail) : T::load(aq + v * W);
    // With several rows, keep each A vector in a register: left alone, the compiler folds the
    // load into every row's FMA (R loads per vector) and the loop becomes load-port bound.
    if constexpr (R > 1) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) gemv_opaque(av[v]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V hr = T::set1(b[r * ldb + q]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = T::fmadd(av[v], hr, acc[r][v]);
    }
  }
  // Unrolled like the loops above: a loop over r left rolled here indexes acc at run time, and
  // GCC 12 then keeps acc in memory and stores every accumulator to the stack in the k loop.
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const bool part = kMasked && v == NV - 1;
      V out = acc[r][v];
      if (accumulate) out = T::add(out, part ? T::load_n(cr + v * W, tail) : T::load(cr + v * W));
      if (part)
        T::store_n(cr + v * W, out, tail);
      else
        T::store(cr + v * W, out);
    }
  }
}

// Blocks of kNv vectors over the columns, then the remainder in one masked block.
template <class T, int R, int kNv>
inline void gemv_rows_r(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                        int64_t ldc, int64_t k, int64_t cols, bool accumulate) {
  constexpr int W = T::kWidth;
  int64_t j = 0;
  for (; j + kNv * W <= cols; j += kNv * W)
    gemv_block<T, R, kNv, false>(a + j, lda, b, ldb, c + j, ldc, k, W, accumulate);
  const int64_t left = cols - j;
  if (left <= 0) return;
  const int nv = static_cast<int>((left + W - 1) / W);
  const int tail = static_cast<int>(left - int64_t{nv - 1} * W);
  // nv <= kNv; the last vector masked (a full one when tail == W costs nothing extra).
  switch (nv) {
    case 1:
      gemv_block<T, R, 1, true>(a + j, lda, b, ldb, c + j, ldc, k, tail, accumulate);
      break;
    case 2:
      gemv_block<T, R, (kNv >= 2 ? 2 : 1), true>(a + j, lda, b, ldb, c + j, ldc, k, tail,
                                                 accumulate);
      break;
    case 3:
      gemv_block<T, R, (kNv >= 3 ? 3 : 1), true>(a + j, lda, b, ldb, c + j, ldc, k, tail,
                                                 accumulate);
      break;
    default:
      gemv_block<T, R, kNv, true>(a + j, lda, b, ldb, c + j, ldc, k, tail, accumulate);
      break;
  }
}

// kNv vectors per block: 4 x 16 floats for AVX-512 (4 rows: 16 accumulators of 32 registers),
// 2 x 8 for AVX2 (8 of 16), 4 for scalar.
template <class T, int kNv>
void gemv_rows_t(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                 int64_t rows, int64_t k, int64_t cols, bool accumulate) noexcept {
  switch (rows) {
    case 1:
      gemv_rows_r<T, 1, kNv>(a, lda, b, ldb, c, ldc, k, cols, accumulate);
      break;
    case 2:
      gemv_rows_r<T, 2, kNv>(a, lda, b, ldb, c, ldc, k, cols, accumulate);
      break;
    case 3:
      gemv_rows_r<T, 3, kNv>(a, lda, b, ldb, c, ldc, k, cols, accumulate);
      break;
    default:
      gemv_rows_r<T, 4, kNv>(a, lda, b, ldb, c, ldc, k, cols, accumulate);
      break;
  }
}

}  // namespace
