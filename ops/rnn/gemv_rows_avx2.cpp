// The AVX2 path of ops/rnn/gemv_rows.h; compiled for AVX2 by ops/vec_math.h's target switch and
// reached only through gemv_rows_kernel() after the CPU check.
#include "ops/rnn/gemv_rows.h"

#define GRAPHI_VEC_AVX2
#include "ops/rnn/gemv_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const GemvRowsFn kGemvRowsAvx2;
const GemvRowsFn kGemvRowsAvx2 = gemv_rows_t<VecAvx2, 2>;
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
