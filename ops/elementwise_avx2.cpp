// The AVX2 path of ops/elementwise_simd.h: ops/elementwise_loops.h compiled for AVX2 (the loops are
// plain C++ the compiler vectorizes; only the target differs). Reached only through
// eltwise_loops() after the CPU check.
#include "ops/elementwise_simd.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#include "ops/elementwise_loops.h"

namespace graphi::ops::detail {
extern const EltwiseLoops kEltwiseLoopsAvx2;
const EltwiseLoops kEltwiseLoopsAvx2 = make_eltwise_loops(SimdIsa::kAvx2);
}  // namespace graphi::ops::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
