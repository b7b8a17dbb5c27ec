// IEEE binary16 (ONNX FLOAT16) and bfloat16 (ONNX BFLOAT16) <-> float32. graphi holds and
// computes such values as float32 (graph/onnx/ONNX.md, "Half-precision models"); these convert
// at the edges (file data, a Cast to a 16-bit type, a front end's float16 arrays). Rounding is to
// nearest, ties to even, as F16C's VCVTPS2PH and AVX512-BF16's VCVTNEPS2BF16 do; overflow gives
// infinity, NaN stays a (quiet) NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace graphi::graph {

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (man << 13) | (man ? 0x400000 : 0);  // infinity, or a quiet NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // exponent rebiased 15 -> 127
  } else if (man == 0) {
    bits = sign;
  } else {
    uint32_t e = 113;  // a subnormal, man * 2^-24: normalized
    while (!(man & 0x400)) {
      man <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((man & 0x3ff) << 13);
  }
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;
  if (a > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00);   // NaN
  if (a >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // >= 65520: infinity
  if (a < 0x38800000) {
    // Below 2^-14: a subnormal half, mantissa = |f| * 2^24 rounded.
    const uint32_t e = a >> 23, shift = 126 - e;  // |f| = M * 2^(e - 150), M with its 1 bit
    if (shift > 24) return static_cast<uint16_t>(sign);
    const uint32_t m = (a & 0x7fffff) | (e ? 0x800000 : 0);
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);  // 0x400 (the smallest normal) when it carries
  }
  uint32_t h = (a - 0x38000000) >> 13;  // exponent rebiased 127 -> 15, mantissa cut to 10 bits
  const uint32_t rem = a & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry moves into the exponent
  return static_cast<uint16_t>(sign | h);
}

inline float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

inline uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

// The float32 value a FLOAT16 / BFLOAT16 element holds after a cast from f.
inline float round_to_half(float f) { return half_to_float(float_to_half(f)); }
inline float round_to_bfloat16(float f) { return bfloat16_to_float(float_to_bfloat16(f)); }

}  // namespace graphi::graph
