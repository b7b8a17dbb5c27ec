// The AVX-2 path of ops/norm_rows.h; compiled for AVX-2 by ops/vec_math.h's target switch and
// reached only through norm_row_fns_for() after the CPU check.
#include "ops/norm_rows.h"

#define GRAPHI_VEC_AVX2
#include "ops/norm_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const NormRowFns kNormRowsAvx2;
const NormRowFns kNormRowsAvx2 = {norm_sum_t<VecAvx2>,    norm_sq_dev_t<VecAvx2>,
                                  norm_affine_t<VecAvx2>, lane_sum_t<VecAvx2>,
                                  lane_sq_dev_t<VecAvx2>, lane_affine_t<VecAvx2>};
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
