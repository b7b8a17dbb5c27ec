// graph/float16.h against independent references: the CPU's own F16C conversion (VCVTPS2PH,
// round to nearest even) for binary16, and a nearest-of-two-neighbours search in double for
// bfloat16.
#include <cpuid.h>
#include <immintrin.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "graph/float16.h"

using graphi::graph::bfloat16_to_float;
using graphi::graph::float_to_bfloat16;
using graphi::graph::float_to_half;
using graphi::graph::half_to_float;

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// CPUID.1:ECX bit 29 and the OS's AVX state (clang's __builtin_cpu_supports lacks "f16c").
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}

__attribute__((target("f16c"))) uint16_t f16c_to_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float f16c_to_float(uint16_t h) { return _cvtsh_ss(h); }

// The bfloat16 nearest to f (ties to the even one), by comparing the two bfloat16 values around
// it in double: an implementation that shares nothing with the bit trick under test.
uint16_t bf16_nearest(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t lo = static_cast<uint16_t>(x >> 16);  // truncation: towards zero
  if ((x & 0xffff) == 0) return lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);  // the next one away from zero
  const double d_lo = std::fabs(static_cast<double>(f) - bfloat16_to_float(lo));
  // Past the largest finite value the next step is 2^128, which rounds to infinity.
  const double v_hi = (hi & 0x7fff) == 0x7f80 ? std::ldexp(f < 0 ? -1.0 : 1.0, 128)
                                              : static_cast<double>(bfloat16_to_float(hi));
  const double d_hi = std::fabs(v_hi - f);
  if (d_lo < d_hi) return lo;
  if (d_hi < d_lo) return hi;
  return (lo & 1) ? hi : lo;
}

}  // namespace

TEST_CASE("float16: float_to_half matches F16C on edge values and random bit patterns") {
  if (!cpu_has_f16c()) {
    WARN("CPU without F16C: skipped");
    return;
  }
  std::vector<uint32_t> bits = {
      0x00000000, 0x80000000, 0x3f800000, 0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001,
      0x47800000, 0x7f800000, 0xff800000, 0x38800000, 0x387fffff, 0x33800000, 0x33000000,
      0x33000001, 0x32ffffff, 0x00000001, 0x3eaaaaab, 0x38801000, 0x38802000, 0x38803000};
  // Every half's value and the midpoints between neighbours (the ties), both signs.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float v = f16c_to_float(static_cast<uint16_t>(h));
    const float next = f16c_to_float(static_cast<uint16_t>(h + 1));
    uint32_t b;
    std::memcpy(&b, &v, 4);
    bits.push_back(b);
    bits.push_back(b | 0x80000000u);
    const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);
    std::memcpy(&b, &mid, 4);
    bits.push_back(b);
    bits.push_back(b + 1);
    bits.push_back(b - 1);
  }
  std::mt19937 rng(7);
  for (int k = 0; k < 2000000; ++k) bits.push_back(static_cast<uint32_t>(rng()));
  size_t mismatches = 0;
  for (uint32_t b : bits) {
    const float f = from_bits(b);
    const uint16_t want = f16c_to_half(f), got = float_to_half(f);
    const bool nan = std::isnan(f);
    if (nan ? !std::isnan(half_to_float(got)) : got != want) {
      if (++mismatches <= 5) {
        INFO("bits 0x" << std::hex << b << ": got 0x" << got << ", F16C 0x" << want);
        CHECK(false);
      }
    }
    if (!nan && got == want) {
      // half_to_float is the exact inverse (F16C's widening).
      const float back = half_to_float(got), hw = f16c_to_float(want);
      if (!(back == hw || (std::isnan(back) && std::isnan(hw)))) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("float16: half_to_float matches F16C on every binary16 value") {
  if (!cpu_has_f16c()) {
    WARN("CPU without F16C: skipped");
    return;
  }
  size_t mismatches = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float got = half_to_float(static_cast<uint16_t>(h));
    const float want = f16c_to_float(static_cast<uint16_t>(h));
    uint32_t gb, wb;
    std::memcpy(&gb, &got, 4);
    std::memcpy(&wb, &want, 4);
    if (gb != wb && ++mismatches <= 5) {
      INFO("half 0x" << std::hex << h << ": got 0x" << gb << ", F16C 0x" << wb);
      CHECK(false);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("float16: float_to_bfloat16 rounds to the nearest bfloat16, ties to even") {
  std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x3f808000, 0x3f818000,
                                0x3f808001, 0x7f7fffff, 0x7f7f8000, 0x7f800000,
                                0xff800000, 0x00000001, 0x007fffff, 0x3eaaaaab};
  std::mt19937 rng(11);
  for (int k = 0; k < 2000000; ++k) bits.push_back(static_cast<uint32_t>(rng()));
  size_t mismatches = 0;
  for (uint32_t b : bits) {
    const float f = from_bits(b);
    const uint16_t got = float_to_bfloat16(f);
    if (std::isnan(f)) {
      if (!std::isnan(bfloat16_to_float(got))) ++mismatches;
      continue;
    }
    if (got != bf16_nearest(f) && ++mismatches <= 5) {
      INFO("bits 0x" << std::hex << b << ": got 0x" << got << ", nearest 0x" << bf16_nearest(f));
      CHECK(false);
    }
  }
  CHECK(mismatches == 0);
}
