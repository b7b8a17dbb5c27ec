// The AVX2 path of ops/activations.h; compiled for AVX2 by ops/vec_math.h's target switch and
// reached only through activation_kernels() after the CPU check.
#include "ops/activations.h"

#define GRAPHI_VEC_AVX2
#include "ops/vec_math.h"

namespace graphi::ops {
namespace {
void sigmoid_avx2(const float* src, float* dst, int64_t n) { sigmoid_array<VecAvx2>(src, dst, n); }
void tanh_avx2(const float* src, float* dst, int64_t n) { tanh_array<VecAvx2>(src, dst, n); }
void swish_avx2(const float* src, float* dst, int64_t n) { swish_array<VecAvx2>(src, dst, n); }
void erf_avx2(const float* src, float* dst, int64_t n) { erf_array<VecAvx2>(src, dst, n); }
void gelu_avx2(const float* src, float* dst, int64_t n) { gelu_array<VecAvx2>(src, dst, n); }
void gelu_tanh_avx2(const float* src, float* dst, int64_t n) {
  gelu_tanh_array<VecAvx2>(src, dst, n);
}
}  // namespace

namespace detail {
extern const ActivationKernels kActivationKernelsAvx2;
const ActivationKernels kActivationKernelsAvx2{
    SimdIsa::kAvx2, sigmoid_avx2, tanh_avx2, swish_avx2, erf_avx2, gelu_avx2, gelu_tanh_avx2};
}  // namespace detail
}  // namespace graphi::ops

GRAPHI_VEC_TARGET_END
