// The AVX-512 path of ops/norm_rows.h; compiled for AVX-512 by ops/vec_math.h's target switch and
// reached only through norm_row_fns_for() after the CPU check.
#include "ops/norm_rows.h"

#define GRAPHI_VEC_AVX512
#include "ops/norm_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const NormRowFns kNormRowsAvx512;
const NormRowFns kNormRowsAvx512 = {norm_sum_t<VecAvx512>,    norm_sq_dev_t<VecAvx512>,
                                    norm_affine_t<VecAvx512>, lane_sum_t<VecAvx512>,
                                    lane_sq_dev_t<VecAvx512>, lane_affine_t<VecAvx512>};
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
