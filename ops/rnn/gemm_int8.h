// int8-weight GEMMs for the RNN sequence kernels' opt-in reduced precision (node attribute
// graphi_rnn_weights = "int8", ops/rnn/rnn_sequence.h):
//   C[r][j] (+)= sb[r] * sa[j] * (sum_k (B[r][k] - zb[r]) * A[k][j])
// A (the weights) is s8 with one scale sa[j] per output column (symmetric, per output unit and
// gate); B (x or h rows) is u8 with a scale sb[r] and zero point zb[r] per row, quantized per
// call by the caller (int8_quantize_row: ONNX Runtime's DynamicQuantizeLinear on the row).
// Products are accumulated in int32 (exact), then
//   sb * sa * (acc - zb * colsum[j]),  colsum[j] = sum over the call's k of A[k][j]
// turns them into fp32. The data is laid out the way AVX512-VNNI's vpdpbusd wants it: quads of
// k. One 32-bit word of A holds A[4q..4q+3][j] (lowest byte first), so one 64-byte vector is one
// quad row of 16 columns, and B's quad (B[r][4q..4q+3]) is broadcast to every lane; a k past the
// end is 0 in A (so B's bytes there do not matter).
//
// A is packed in panels of `panel` columns (a multiple of 16): panel p is one contiguous block of
// quads(k) quad rows x panel words (word (q, col) at int8_word_offset). B rows are quad words
// with a row stride ldb (words); row r's scale (float bits) and zero point (int32) are the two
// words bp[r * ldb] and bp[r * ldb + 1].
//
// Two paths, chosen at run time: AVX512-VNNI (vpdpbusd, ops/rnn/gemm_int8_avx512vnni.cpp, built
// with -mavx512vnni) where cpuid has it and GRAPHI_SIMD does not cap the ISA below avx512, else a
// portable reference path with the same integer arithmetic (results agree exactly up to fp32
// rounding of the final product). ops/ only.
#pragma once

#include <cstdint>

namespace graphi::ops {

inline int64_t int8_quads(int64_t k) { return (k + 3) / 4; }
// 32-bit words of a packed [k x m] operand with `panel`-column panels (the last one padded).
inline int64_t int8_packed_words(int64_t m, int64_t k, int64_t panel) {
  return (m + panel - 1) / panel * panel * int8_quads(k);
}
// Word of quad row q (k = 4q .. 4q + 3) and column `col` in that layout.
inline int64_t int8_word_offset(int64_t col, int64_t q, int64_t k, int64_t panel) {
  return col / panel * panel * int8_quads(k) + q * panel + col % panel;
}
// An operand packed in k blocks, each a packed operand of its own (the RNN kernel's R): words
// before the block starting at k0 when every earlier block's k is a multiple of 4.
inline int64_t int8_block_words(int64_t m, int64_t panel, int64_t k0) {
  return (m + panel - 1) / panel * panel * (k0 / 4);
}

// Symmetric per-column quantization of A: the scale of `n` values is max|v| / 127 (1 when all
// are 0); q = round-to-nearest-even(v / scale), in [-127, 127].
float int8_weight_scale(const float* v, int64_t n, int64_t stride);
int8_t int8_quantize_weight(float v, float scale);

// DynamicQuantizeLinear (ONNX) of x[k0, k1) into u8 bytes out[0 .. k1 - k0): range
// [min(0, min x), max(0, max x)], scale = range / 255 (1 when the range is 0), zero point
// round(-min / scale) in [0, 255], q = saturate(round(x / scale) + zp); rounding to nearest even.
// Writes the scale and zero point to *scale, *zp. AVX-512 on the avx512_vnni path, else portable;
// the two give the same bytes.
void int8_quantize_row(const float* x, int64_t k0, int64_t k1, uint8_t* out, float* scale,
                       int32_t* zp) noexcept;
void int8_quantize_row_portable(const float* x, int64_t k0, int64_t k1, uint8_t* out, float* scale,
                                int32_t* zp) noexcept;

// q = saturate(round half to even(x[i] / scale) + zero_point) into u8 bytes out[0 .. n) (ONNX
// QuantizeLinear's division, as DynamicQuantizeLinear quantizes with its own scale; a NaN gives
// 0). zero_point is an integer in [0, 255]. AVX-512 on the avx512_vnni path, else portable; the
// same bytes.
void int8_quantize_values(const float* x, int64_t n, float scale, float zero_point,
                          uint8_t* out) noexcept;

struct Int8GemmArgs {
  const uint32_t* a = nullptr;  // packed s8 weights (whole operand, panel 0 first)
  int64_t m = 0, k = 0, panel = 16;
  const float* a_scale = nullptr;   // [m] per-column scales
  const int32_t* colsum = nullptr;  // [m] sum of A[k][j] over quad rows [q0, q1)
  const uint32_t* b = nullptr;      // B rows, u8 quad words; b[r * ldb + q]
  int64_t ldb = 0;
  const uint32_t* bp = nullptr;  // row r: scale bits bp[r * ldb], zero point bp[r * ldb + 1]
  float* c = nullptr;
  int64_t ldc = 0;
  int64_t rows = 1;
  int64_t q0 = 0, q1 = -1;  // quad rows [q0, q1) only (q1 < 0: all)
  bool accumulate = false;  // false: C = product; true: C += product
  bool reverse = false;     // walk the panels last to first (zigzag)
};

enum class Int8Path : int { kReference = 0, kAvx512Vnni = 1 };
const char* int8_path_name(Int8Path p);  // "reference", "avx512_vnni"
bool int8_path_supported(Int8Path p);
// AVX512-VNNI when the CPU has it (and avx512 is not capped by GRAPHI_SIMD), else reference.
Int8Path active_int8_path();

using GemmInt8Fn = void (*)(const Int8GemmArgs& a) noexcept;
// One path, for tests; nullptr when this CPU cannot run it.
GemmInt8Fn gemm_int8_kernel(Int8Path p);
// The active path.
void gemm_int8(const Int8GemmArgs& a) noexcept;

}  // namespace graphi::ops
