// Softmax of one contiguous row, vectorized (ops/softmax.cpp's last-axis case): the max, then
// y = exp(x - max) with its sum (float vector partial sums of at most 16 elements per lane added
// in double), then y *= 1 / sum. exp is ops/vec_math.h's (max relative error ~1.5 ulp); an
// argument below -87 gives exactly 0, as std::exp's underflow does for attention masks of -inf
// or -1e9. The scalar std::exp loop took ~1.1 ms per Softmax of a ViT's [4, 6, 197, 197]
// attention scores on the Zen 4 VM. AVX-512 / AVX2 / scalar paths chosen by active_simd_isa().
// ops/ only.
#pragma once

#include <cstdint>

#include "ops/activations.h"

namespace graphi::ops {

// y[0, n) = softmax(x[0, n)); y may be x. n >= 1.
using SoftmaxRowFn = void (*)(const float* x, float* y, int64_t n) noexcept;

// The active path's function.
SoftmaxRowFn softmax_row_fn();

// One ISA path, for tests; nullptr when this CPU cannot run `isa`.
SoftmaxRowFn softmax_row_fn_for(SimdIsa isa);

// y[0, n) = log_softmax(x[0, n)) = x - max - log(sum(exp(x - max))), computed directly (no log
// of an underflowed softmax); y may be x. n >= 1. (ops/log_softmax.cpp's last-axis case.)
SoftmaxRowFn log_softmax_row_fn();
SoftmaxRowFn log_softmax_row_fn_for(SimdIsa isa);

}  // namespace graphi::ops
