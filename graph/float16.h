// IEEE binary16 (ONNX FLOAT16) and bfloat16 (ONNX BFLOAT16) <-> float32. graphi holds and
// computes such values as float32 (graph/onnx/ONNX.md, "Half-precision models"); these convert
// at the edges (file data, a Cast to a 16-bit type, a front end's float16 arrays). Rounding is to
// nearest, ties to even, as F16C's VCVTPS2PH and AVX512-BF16's VCVTNEPS2BF16 do; overflow gives
// infinity, NaN stays a (quiet) NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace graphi::graph {

inline float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31)
    v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;
  if (a > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00);  // NaN
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
