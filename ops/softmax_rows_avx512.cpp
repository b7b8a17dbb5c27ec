// The AVX-512 path of ops/softmax_rows.h; compiled for AVX-512 by ops/vec_math.h's target switch
// and reached only through softmax_row_fn_for() after the CPU check.
#include "ops/softmax_rows.h"

#define GRAPHI_VEC_AVX512
#include "ops/softmax_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const SoftmaxRowFn kSoftmaxRowAvx512;
const SoftmaxRowFn kSoftmaxRowAvx512 = softmax_row_t<VecAvx512>;
extern const SoftmaxRowFn kLogSoftmaxRowAvx512;
const SoftmaxRowFn kLogSoftmaxRowAvx512 = log_softmax_row_t<VecAvx512>;
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
