// Quantization helpers, run-time path selection and the portable (reference) path of
// ops/rnn/gemm_int8.h.
#include "ops/rnn/gemm_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/activations.h"

namespace graphi::ops {

namespace detail {
// Defined in ops/rnn/gemm_int8_avx512vnni.cpp (compiled with -mavx512vnni); reached only after
// the cpuid check below.
void gemm_int8_avx512vnni(const Int8GemmArgs& a) noexcept;
void int8_quantize_row_avx512(const float* x, int64_t k0, int64_t k1, uint8_t* out, float* scale,
                              int32_t* zp) noexcept;
void int8_quantize_values_avx512(const float* x, int64_t n, float scale, float zero_point,
                                 uint8_t* out) noexcept;
}  // namespace detail

namespace {

// The same integer arithmetic as vpdpbusd (u8 x s8 products summed in int32), column by column
// in a loop the compiler vectorizes for the baseline ISA, then the same fp32 epilogue.
void gemm_int8_reference(const Int8GemmArgs& g) noexcept {
  const int64_t kq = int8_quads(g.k);
  const int64_t q0 = g.q0, q1 = g.q1 < 0 ? kq : std::min(g.q1, kq);
  const int64_t np = (g.m + g.panel - 1) / g.panel;
  constexpr int64_t kCols = 512;
  int32_t acc[kCols];
  for (int64_t pi = 0; pi < np; ++pi) {
    const int64_t p = g.reverse ? np - 1 - pi : pi;
    const int64_t m0 = p * g.panel;
    const int64_t cols = std::min(g.panel, g.m - m0);
    const uint32_t* ap = g.a + p * g.panel * kq;
    for (int64_t j0 = 0; j0 < cols; j0 += kCols) {
      const int64_t n = std::min(kCols, cols - j0);
      for (int64_t r = 0; r < g.rows; ++r) {
        std::fill_n(acc, n, 0);
        const uint32_t* br = g.b + r * g.ldb;
        for (int64_t q = q0; q < q1; ++q) {
          const uint32_t bw = br[q];
          const int32_t b0 = bw & 0xff, b1 = (bw >> 8) & 0xff, b2 = (bw >> 16) & 0xff,
                        b3 = bw >> 24;
          const uint32_t* aq = ap + q * g.panel + j0;
          for (int64_t j = 0; j < n; ++j) {
            const uint32_t w = aq[j];
            acc[j] += b0 * int32_t(int8_t(w & 0xff)) + b1 * int32_t(int8_t((w >> 8) & 0xff)) +
                      b2 * int32_t(int8_t((w >> 16) & 0xff)) + b3 * int32_t(int8_t(w >> 24));
          }
        }
        float sb;
        std::memcpy(&sb, g.bp + r * g.ldb, 4);
        const int32_t zb = static_cast<int32_t>(g.bp[r * g.ldb + 1]);
        float* cr = g.c + r * g.ldc + m0 + j0;
        const float* sa = g.a_scale + m0 + j0;
        const int32_t* cs = g.colsum + m0 + j0;
        for (int64_t j = 0; j < n; ++j) {
          const float v = static_cast<float>(acc[j] - zb * cs[j]) * (sa[j] * sb);
          cr[j] = g.accumulate ? cr[j] + v : v;
        }
      }
    }
  }
}

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

}  // namespace

float int8_weight_scale(const float* v, int64_t n, int64_t stride) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i * stride]));
  return m > 0.0f ? m / 127.0f : 1.0f;
}

int8_t int8_quantize_weight(float v, float scale) {
  const float q = std::nearbyint(v / scale);
  return static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
}

void int8_quantize_row_portable(const float* x, int64_t k0, int64_t k1, uint8_t* out, float* scale,
                                int32_t* zp) noexcept {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t k = k0; k < k1; ++k) {
    lo = std::min(lo, x[k]);
    hi = std::max(hi, x[k]);
  }
  float s = (hi - lo) / 255.0f;
  if (!(s > 0.0f) || !std::isfinite(s)) s = 1.0f;
  const float z = std::clamp(std::nearbyint(-lo / s), 0.0f, 255.0f);
  const float inv = 1.0f / s;
  for (int64_t k = k0; k < k1; ++k)
    out[k - k0] = static_cast<uint8_t>(std::clamp(std::nearbyint(x[k] * inv) + z, 0.0f, 255.0f));
  *scale = s;
  *zp = static_cast<int32_t>(z);
}

void int8_quantize_values(const float* x, int64_t n, float scale, float zero_point,
                          uint8_t* out) noexcept {
  static const bool vnni = active_int8_path() == Int8Path::kAvx512Vnni;
  if (vnni) {
    detail::int8_quantize_values_avx512(x, n, scale, zero_point, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float q = std::nearbyint(x[i] / scale) + zero_point;
    out[i] = static_cast<uint8_t>(q > 0.0f ? (q < 255.0f ? q : 255.0f) : 0.0f);
  }
}

void int8_quantize_row(const float* x, int64_t k0, int64_t k1, uint8_t* out, float* scale,
                       int32_t* zp) noexcept {
  static const bool vnni = active_int8_path() == Int8Path::kAvx512Vnni;
  if (vnni)
    detail::int8_quantize_row_avx512(x, k0, k1, out, scale, zp);
  else
    int8_quantize_row_portable(x, k0, k1, out, scale, zp);
}

const char* int8_path_name(Int8Path p) {
  return p == Int8Path::kAvx512Vnni ? "avx512_vnni" : "reference";
}

bool int8_path_supported(Int8Path p) {
  if (p == Int8Path::kReference) return true;
  return simd_isa_supported(SimdIsa::kAvx512) && cpu_has_avx512_vnni();
}

Int8Path active_int8_path() {
  static const Int8Path p =
      int8_path_supported(Int8Path::kAvx512Vnni) && active_simd_isa() == SimdIsa::kAvx512
          ? Int8Path::kAvx512Vnni
          : Int8Path::kReference;
  return p;
}

GemmInt8Fn gemm_int8_kernel(Int8Path p) {
  if (!int8_path_supported(p)) return nullptr;
  return p == Int8Path::kAvx512Vnni ? detail::gemm_int8_avx512vnni : gemm_int8_reference;
}

void gemm_int8(const Int8GemmArgs& a) noexcept {
  static const GemmInt8Fn fn = gemm_int8_kernel(active_int8_path());
  fn(a);
}

}  // namespace graphi::ops
