// The AVX512 path of ops/activations.h; compiled for AVX512 by ops/vec_math.h's target switch and
// reached only through activation_kernels() after the CPU check.
#include "ops/activations.h"

#define GRAPHI_VEC_AVX512
#include "ops/vec_math.h"

namespace graphi::ops {
namespace {
void sigmoid_avx512(const float* src, float* dst, int64_t n) {
  sigmoid_array<VecAvx512>(src, dst, n);
}
void tanh_avx512(const float* src, float* dst, int64_t n) { tanh_array<VecAvx512>(src, dst, n); }
void swish_avx512(const float* src, float* dst, int64_t n) { swish_array<VecAvx512>(src, dst, n); }
void erf_avx512(const float* src, float* dst, int64_t n) { erf_array<VecAvx512>(src, dst, n); }
void gelu_avx512(const float* src, float* dst, int64_t n) { gelu_array<VecAvx512>(src, dst, n); }
void gelu_tanh_avx512(const float* src, float* dst, int64_t n) {
  gelu_tanh_array<VecAvx512>(src, dst, n);
}
}  // namespace

namespace detail {
extern const ActivationKernels kActivationKernelsAvx512;
const ActivationKernels kActivationKernelsAvx512{SimdIsa::kAvx512, sigmoid_avx512, tanh_avx512,
                                                 swish_avx512,     erf_avx512,     gelu_avx512,
                                                 gelu_tanh_avx512};
}  // namespace detail
}  // namespace graphi::ops

GRAPHI_VEC_TARGET_END
