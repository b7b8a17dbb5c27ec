// The AVX2 path of ops/softmax_rows.h; compiled for AVX2 by ops/vec_math.h's target switch and
// reached only through softmax_row_fn_for() after the CPU check.
#include "ops/softmax_rows.h"

#define GRAPHI_VEC_AVX2
#include "ops/softmax_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const SoftmaxRowFn kSoftmaxRowAvx2;
const SoftmaxRowFn kSoftmaxRowAvx2 = softmax_row_t<VecAvx2>;
extern const SoftmaxRowFn kLogSoftmaxRowAvx2;
const SoftmaxRowFn kLogSoftmaxRowAvx2 = log_softmax_row_t<VecAvx2>;
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
