// Run-time ISA selection for the activations, and the scalar path (the same math as the SIMD
// paths, one lane wide, from ops/vec_math.h).
#include "ops/activations.h"

#include <cstdlib>
#include <cstring>

#define GRAPHI_VEC_SCALAR
#include "ops/vec_math.h"

namespace graphi::ops {

namespace detail {
// Defined in ops/activations_avx2.cpp and ops/activations_avx512.cpp.
extern const ActivationKernels kActivationKernelsAvx2;
extern const ActivationKernels kActivationKernelsAvx512;
}  // namespace detail

namespace {
void sigmoid_scalar(const float* src, float* dst, int64_t n) {
  sigmoid_array<VecScalar>(src, dst, n);
}
void tanh_scalar(const float* src, float* dst, int64_t n) { tanh_array<VecScalar>(src, dst, n); }
void swish_scalar(const float* src, float* dst, int64_t n) { swish_array<VecScalar>(src, dst, n); }
void erf_scalar(const float* src, float* dst, int64_t n) { erf_array<VecScalar>(src, dst, n); }
void gelu_scalar(const float* src, float* dst, int64_t n) { gelu_array<VecScalar>(src, dst, n); }
void gelu_tanh_scalar(const float* src, float* dst, int64_t n) {
  gelu_tanh_array<VecScalar>(src, dst, n);
}
const ActivationKernels kActivationKernelsScalar{SimdIsa::kScalar, sigmoid_scalar, tanh_scalar,
                                                 swish_scalar,     erf_scalar,     gelu_scalar,
                                                 gelu_tanh_scalar};

SimdIsa detect_active_isa() {
  SimdIsa best = SimdIsa::kScalar;
  if (simd_isa_supported(SimdIsa::kAvx512)) {
    best = SimdIsa::kAvx512;
  } else if (simd_isa_supported(SimdIsa::kAvx2)) {
    best = SimdIsa::kAvx2;
  }
  if (const char* cap = std::getenv("GRAPHI_SIMD")) {
    SimdIsa want = best;
    if (std::strcmp(cap, "scalar") == 0) want = SimdIsa::kScalar;
    if (std::strcmp(cap, "avx2") == 0) want = SimdIsa::kAvx2;
    if (static_cast<int>(want) < static_cast<int>(best)) best = want;
  }
  return best;
}
}  // namespace

const char* simd_isa_name(SimdIsa isa) {
  switch (isa) {
    case SimdIsa::kScalar:
      return "scalar";
    case SimdIsa::kAvx2:
      return "avx2";
    case SimdIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

bool simd_isa_supported(SimdIsa isa) {
  switch (isa) {
    case SimdIsa::kScalar:
      return true;
    case SimdIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case SimdIsa::kAvx512:
      // The AVX-512 TU is compiled with avx512f,avx2,fma.
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
  }
  return false;
}

SimdIsa active_simd_isa() {
  static const SimdIsa isa = detect_active_isa();  // thread-safe static init
  return isa;
}

const ActivationKernels* activation_kernels(SimdIsa isa) {
  if (!simd_isa_supported(isa)) return nullptr;
  switch (isa) {
    case SimdIsa::kScalar:
      return &kActivationKernelsScalar;
    case SimdIsa::kAvx2:
      return &detail::kActivationKernelsAvx2;
    case SimdIsa::kAvx512:
      return &detail::kActivationKernelsAvx512;
  }
  return nullptr;
}

namespace {
const ActivationKernels& active_kernels() {
  static const ActivationKernels* k = activation_kernels(active_simd_isa());
  return *k;
}
}  // namespace

void sigmoid_f32(const float* src, float* dst, int64_t n) {
  if (n > 0) active_kernels().sigmoid(src, dst, n);
}
void tanh_f32(const float* src, float* dst, int64_t n) {
  if (n > 0) active_kernels().tanh(src, dst, n);
}
void swish_f32(const float* src, float* dst, int64_t n) {
  if (n > 0) active_kernels().swish(src, dst, n);
}
void erf_f32(const float* src, float* dst, int64_t n) {
  if (n > 0) active_kernels().erf(src, dst, n);
}
void gelu_f32(const float* src, float* dst, int64_t n) {
  if (n > 0) active_kernels().gelu(src, dst, n);
}
void gelu_tanh_f32(const float* src, float* dst, int64_t n) {
  if (n > 0) active_kernels().gelu_tanh(src, dst, n);
}

}  // namespace graphi::ops
