// Transposed copies of 4-byte elements in 8x8 tiles: the fast path of Transpose (and any other
// strided gather) when the output's last dim walks the source with a stride and the one before
// it walks it contiguously, i.e. a batch of 2-D transposes (NCHW <-> NHWC, the [S, D] <-> [D, S]
// of attention heads). Element by element such a copy reads one source line per element
// (ConvNeXt's [48, 3136] -> [3136, 48]: 50 us for 0.6 MB at 2 threads); in tiles every line
// read and written is used whole while it is in L1, and on AVX-2 an 8x8 tile is 8 loads,
// 24 shuffles and 8 stores.
#pragma once

#include <cstdint>

namespace graphi::ops {

// dst[x * ldd + y] = src[y * ld + x] for y < rows, x < cols (source rows of stride `ld`,
// destination rows of stride `ldd`, in elements). Any sizes; full 8x8 tiles on AVX-2 where
// the CPU has it (active_simd_isa()), a scalar loop for the rest.
void transpose_block_f32(const float* src, int64_t ld, float* dst, int64_t ldd, int64_t rows,
                         int64_t cols);

}  // namespace graphi::ops
