// The AVX-512 path of ops/rnn/gemv_rows.h; compiled for AVX-512 by ops/vec_math.h's target switch
// and reached only through gemv_rows_kernel() after the CPU check.
#include "ops/rnn/gemv_rows.h"

#define GRAPHI_VEC_AVX512
#include "ops/rnn/gemv_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const GemvRowsFn kGemvRowsAvx512;
const GemvRowsFn kGemvRowsAvx512 = gemv_rows_t<VecAvx512, 4>;
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
