// Internal to ops/: the per-ISA tables of elementwise loops (binary ops over a broadcast plan,
// Relu, QuantizeDequantize). The loops are written once in ops/elementwise_loops.h and compiled
// three times: for the baseline target (ops/elementwise.cpp), AVX2 (ops/elementwise_avx2.cpp) and
// AVX-512 (ops/elementwise_avx512.cpp). Every path computes bit-identical results (one IEEE
// operation per element, no contraction), so the choice changes speed only.
#pragma once

#include <cstdint>

#include "ops/activations.h"  // SimdIsa, active_simd_isa()
#include "ops/broadcast.h"

namespace graphi::ops {

enum class BinaryKind : int { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3 };

// dst[i] = a[.] op b[.] for output positions [begin, end) of the plan. dst may equal a or b
// when that operand has the output's shape (in place); no other overlap.
using BinaryRangeFn = void (*)(const BroadcastPlan& plan, const float* a, const float* b,
                               float* dst, int64_t begin, int64_t end);
using UnaryLoopFn = void (*)(const float* src, float* dst, int64_t n);
// QuantizeDequantize's pass (ops/quantize_dequantize.cpp): round half to even(x / s) bounded to
// [qlo, qhi] (q - zero point: qmin - zp, qmax - zp, integers), times s; a NaN x gives qlo * s.
using QdqLoopFn = void (*)(const float* x, float* y, int64_t n, float s, float qlo, float qhi);

struct EltwiseLoops {
  SimdIsa isa;
  BinaryRangeFn binary[4];  // indexed by BinaryKind
  UnaryLoopFn relu;
  QdqLoopFn quantize_dequantize;
};

// The table for `isa`, or nullptr when this CPU cannot run it (kScalar means the baseline
// compile target, SSE2 on x86-64).
const EltwiseLoops* eltwise_loops(SimdIsa isa);
// The table of active_simd_isa() (honours GRAPHI_SIMD, like the activations).
const EltwiseLoops& active_eltwise_loops();

}  // namespace graphi::ops
