// Vectorized sigmoid and tanh over float arrays, with AVX-512 and AVX2+FMA paths chosen at run
// time and a scalar fallback. ops/ code only; knows nothing of graphs or teams.
//
// Accuracy (every path): max absolute error <= 1e-6 against std::tanh and the exact sigmoid for
// all finite inputs (measured ~2e-7); tanh(+-inf) = +-1, sigmoid(-inf) = 0, sigmoid(+inf) = 1,
// tanh(-0) = -0, NaN in -> NaN out. Method (ops/vec_math.h): exp(-|x|) by Cephes-style range
// reduction and a degree-5 polynomial, then sigmoid = 1/(1+e) (e/(1+e) for x < 0), and with
// e2 = exp(-2|x|), tanh = sign(x) (1-e2)/(1+e2) for |x| >= 0.625 and an odd minimax polynomial
// below that (so tanh keeps full relative precision near 0). Reciprocals: rcp14 + one Newton step
// on AVX-512, a true division on the other paths.
#pragma once

#include <cstdint>

namespace graphi::ops {

// Instruction-set paths, ordered: a higher value implies the lower ones are also usable.
enum class SimdIsa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* simd_isa_name(SimdIsa isa);  // "scalar", "avx2", "avx512"

// True when this CPU (and OS) can run `isa`'s code: AVX2 needs avx2+fma, AVX-512 needs avx512f
// (checked with __builtin_cpu_supports, which includes the OS's XSAVE state).
bool simd_isa_supported(SimdIsa isa);

// The path the dispatching functions below use: the best supported one, capped by the
// environment variable GRAPHI_SIMD=scalar|avx2|avx512 if set (read once, for benchmarks and
// for reproducing a lower-ISA machine). Thread-safe.
SimdIsa active_simd_isa();

// dst[i] = sigmoid(src[i]) / tanh(src[i]) for i in [0, n). dst == src (in place) is allowed;
// other overlaps are not. No alignment requirement. n <= 0 does nothing.
// (Named *_f32 so that they never hide std::tanh for unqualified calls inside graphi::ops.)
void sigmoid_f32(const float* src, float* dst, int64_t n);
// dst[i] = src[i] * sigmoid(src[i]) (swish / SiLU) in one pass (ops/vec_math.h vswish, exp as
// 2^(-x log2 e)): max absolute error <= 1e-6 * max(1, |x|) (measured 1.4e-7; relative error
// grows to ~2.6e-6 only where |swish| < 1e-20); swish(+inf) = +inf, 0 below -87 (-inf too), NaN
// in -> NaN out. In place allowed, as above.
void swish_f32(const float* src, float* dst, int64_t n);
void tanh_f32(const float* src, float* dst, int64_t n);
// dst[i] = erf(src[i]) (ops/vec_math.h verf): absolute error <= 2e-7, relative <= 1e-6 for
// normal |x| < 1; +-inf -> +-1, NaN in -> NaN out. In place allowed.
void erf_f32(const float* src, float* dst, int64_t n);
// dst[i] = src[i] (1 + erf(src[i] / sqrt(2))) / 2 (GELU, exact form), through erf_f32's math.
void gelu_f32(const float* src, float* dst, int64_t n);
// dst[i] = GELU's tanh form x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2, through tanh_f32's
// math. In place allowed.
void gelu_tanh_f32(const float* src, float* dst, int64_t n);
inline void sigmoid_f32_inplace(float* x, int64_t n) { sigmoid_f32(x, x, n); }
inline void tanh_f32_inplace(float* x, int64_t n) { tanh_f32(x, x, n); }

// One path's functions, for tests and benchmarks that want a specific ISA.
struct ActivationKernels {
  SimdIsa isa;
  void (*sigmoid)(const float* src, float* dst, int64_t n);
  void (*tanh)(const float* src, float* dst, int64_t n);
  void (*swish)(const float* src, float* dst, int64_t n);
  void (*erf)(const float* src, float* dst, int64_t n);
  void (*gelu)(const float* src, float* dst, int64_t n);
  void (*gelu_tanh)(const float* src, float* dst, int64_t n);
};

// The table for `isa`, or nullptr when this CPU cannot run it.
const ActivationKernels* activation_kernels(SimdIsa isa);

}  // namespace graphi::ops
