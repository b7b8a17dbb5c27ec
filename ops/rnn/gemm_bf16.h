// bf16-weight GEMMs for the RNN sequence kernels' opt-in reduced precision (node attribute
// graphi_rnn_weights = "bf16", ops/rnn/rnn_sequence.h):
//   C[r][j] (+)= sum_k B[r][k] * A[k][j]   for r < rows, j < m
// with A (the weights) and B (x or h rows) both in bf16, products accumulated in fp32. The data
// is laid out the way AVX512-BF16's vdpbf16ps wants it: pairs of k. One 32-bit word holds
// (A[2q][j], A[2q+1][j]) (low half first), so one 64-byte vector is one pair row of 16 columns,
// and B's pair (B[r][2q], B[r][2q+1]) is broadcast to every lane; a k past the end is 0.
//
// A is packed in panels of `panel` columns (a multiple of 16): panel p is one contiguous block of
// pairs(k) pair rows x panel words (word (q, col) at bf16_word_offset). B rows are pair words with
// a row stride ldb (words).
//
// Two paths, chosen at run time: AVX512-BF16 (vdpbf16ps, ops/rnn/gemm_bf16_avx512bf16.cpp, built
// with -mavx512bf16) where cpuid has it and GRAPHI_SIMD does not cap the ISA below avx512, else a
// portable path that converts both operands to fp32 (a shift) and multiplies in fp32: the same
// rounded inputs, so the two agree to fp32 summation order. ops/ only.
#pragma once

#include <cstdint>
#include <cstring>

#include "graph/float16.h"

namespace graphi::ops {

// bf16 <-> fp32 (graph/float16.h's conversions). Round to nearest even; NaN stays a (quiet)
// NaN, infinities stay infinite.
inline uint16_t bf16_from_f32(float f) { return graph::float_to_bfloat16(f); }
inline float f32_from_bf16(uint16_t h) { return graph::bfloat16_to_float(h); }

inline int64_t bf16_pairs(int64_t k) { return (k + 1) / 2; }
// 32-bit words of a packed [k x m] operand with `panel`-column panels (the last one padded).
inline int64_t bf16_packed_words(int64_t m, int64_t k, int64_t panel) {
  return (m + panel - 1) / panel * panel * bf16_pairs(k);
}
// Word of pair row q (k = 2q, 2q + 1) and column `col` in that layout.
inline int64_t bf16_word_offset(int64_t col, int64_t q, int64_t k, int64_t panel) {
  return col / panel * panel * bf16_pairs(k) + q * panel + col % panel;
}
// Stores A[k][col] = v into a packed operand (see above).
inline void bf16_pack_set(uint32_t* packed, int64_t col, int64_t kk, int64_t k, int64_t panel,
                          float v) {
  uint16_t* w = reinterpret_cast<uint16_t*>(packed + bf16_word_offset(col, kk / 2, k, panel));
  w[kk & 1] = bf16_from_f32(v);  // little endian: the low half is the even k
}

// Pair words of x[k0, k1) (k0 even): out[q - k0/2] for pairs q of [k0/2, ceil(k1/2)); the half
// past k1 is 0 when k1 is odd.
void bf16_pack_row(const float* x, int64_t k0, int64_t k1, uint32_t* out) noexcept;

struct Bf16GemmArgs {
  const uint32_t* a = nullptr;  // packed weights (whole operand, panel 0 first)
  int64_t m = 0, k = 0, panel = 16;
  const uint32_t* b = nullptr;  // B rows, pair words; b[r * ldb + q]
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  int64_t rows = 1;
  int64_t q0 = 0, q1 = -1;  // pair rows [q0, q1) only (q1 < 0: all); lets a step start on the
                            // part of h it already has
  bool accumulate = false;  // false: C = product; true: C += product
  bool reverse = false;     // walk the panels last to first (zigzag)
};

enum class Bf16Path : int { kConverted = 0, kAvx512Bf16 = 1 };
const char* bf16_path_name(Bf16Path p);  // "converted", "avx512_bf16"
bool bf16_path_supported(Bf16Path p);
// AVX512-BF16 when the CPU has it (and avx512 is not capped by GRAPHI_SIMD), else converted.
Bf16Path active_bf16_path();

using GemmBf16Fn = void (*)(const Bf16GemmArgs& a) noexcept;
// One path, for tests; nullptr when this CPU cannot run it.
GemmBf16Fn gemm_bf16_kernel(Bf16Path p);
// The active path.
void gemm_bf16(const Bf16GemmArgs& a) noexcept;

}  // namespace graphi::ops
