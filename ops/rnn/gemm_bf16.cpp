// Run-time path selection and the portable (converted) path of ops/rnn/gemm_bf16.h.
#include "ops/rnn/gemm_bf16.h"

#include <algorithm>

#include "ops/activations.h"

namespace graphi::ops {

namespace detail {
// Defined in ops/rnn/gemm_bf16_avx512bf16.cpp (compiled with -mavx512bf16); reached only after
// the cpuid check below.
void gemm_bf16_avx512bf16(const Bf16GemmArgs& a) noexcept;
}  // namespace detail

namespace {

// bf16 -> fp32 on a CPU without AVX512-BF16: each pair row of a panel is widened once into two
// fp32 rows (even k, odd k) and used for every B row; C accumulates in fp32, column by column,
// in a loop the compiler vectorizes for the baseline ISA.
void gemm_bf16_converted(const Bf16GemmArgs& g) noexcept {
  const int64_t kp = bf16_pairs(g.k);
  const int64_t q0 = g.q0, q1 = g.q1 < 0 ? kp : std::min(g.q1, kp);
  const int64_t np = (g.m + g.panel - 1) / g.panel;
  constexpr int64_t kCols = 512;  // widened columns at a time (two 2 KiB rows on the stack)
  float lo[kCols], hi[kCols];
  for (int64_t pi = 0; pi < np; ++pi) {
    const int64_t p = g.reverse ? np - 1 - pi : pi;
    const int64_t m0 = p * g.panel;
    const int64_t cols = std::min(g.panel, g.m - m0);
    const uint32_t* ap = g.a + p * g.panel * kp;
    for (int64_t j0 = 0; j0 < cols; j0 += kCols) {
      const int64_t n = std::min(kCols, cols - j0);
      if (!g.accumulate)
        for (int64_t r = 0; r < g.rows; ++r) std::fill_n(g.c + r * g.ldc + m0 + j0, n, 0.0f);
      for (int64_t q = q0; q < q1; ++q) {
        const uint32_t* aq = ap + q * g.panel + j0;
        for (int64_t j = 0; j < n; ++j) {
          const uint32_t w = aq[j];
          const uint32_t l = w << 16, h = w & 0xffff0000u;
          std::memcpy(&lo[j], &l, 4);
          std::memcpy(&hi[j], &h, 4);
        }
        for (int64_t r = 0; r < g.rows; ++r) {
          const uint32_t bw = g.b[r * g.ldb + q];
          const float b0 = f32_from_bf16(static_cast<uint16_t>(bw & 0xffffu));
          const float b1 = f32_from_bf16(static_cast<uint16_t>(bw >> 16));
          float* cr = g.c + r * g.ldc + m0 + j0;
          for (int64_t j = 0; j < n; ++j) cr[j] += lo[j] * b0 + hi[j] * b1;
        }
      }
    }
  }
}

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

}  // namespace

void bf16_pack_row(const float* x, int64_t k0, int64_t k1, uint32_t* out) noexcept {
  int64_t i = 0;
  for (int64_t k = k0; k < k1; k += 2, ++i) {
    const uint32_t lo = bf16_from_f32(x[k]);
    const uint32_t hi = k + 1 < k1 ? bf16_from_f32(x[k + 1]) : 0u;
    out[i] = lo | (hi << 16);
  }
}

const char* bf16_path_name(Bf16Path p) {
  return p == Bf16Path::kAvx512Bf16 ? "avx512_bf16" : "converted";
}

bool bf16_path_supported(Bf16Path p) {
  if (p == Bf16Path::kConverted) return true;
  return simd_isa_supported(SimdIsa::kAvx512) && cpu_has_avx512_bf16();
}

Bf16Path active_bf16_path() {
  static const Bf16Path p =
      bf16_path_supported(Bf16Path::kAvx512Bf16) && active_simd_isa() == SimdIsa::kAvx512
          ? Bf16Path::kAvx512Bf16
          : Bf16Path::kConverted;
  return p;
}

GemmBf16Fn gemm_bf16_kernel(Bf16Path p) {
  if (!bf16_path_supported(p)) return nullptr;
  return p == Bf16Path::kAvx512Bf16 ? detail::gemm_bf16_avx512bf16 : gemm_bf16_converted;
}

void gemm_bf16(const Bf16GemmArgs& a) noexcept {
  static const GemmBf16Fn fn = gemm_bf16_kernel(active_bf16_path());
  fn(a);
}

}  // namespace graphi::ops
