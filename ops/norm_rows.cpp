// Run-time ISA selection and the scalar path of ops/norm_rows.h.
#include "ops/norm_rows.h"

#define GRAPHI_VEC_SCALAR
#include "ops/norm_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops {

namespace detail {
// Defined in ops/norm_rows_avx2.cpp and ops/norm_rows_avx512.cpp.
extern const NormRowFns kNormRowsAvx2;
extern const NormRowFns kNormRowsAvx512;
}  // namespace detail

NormRowFns norm_row_fns_for(SimdIsa isa) {
  if (!simd_isa_supported(isa)) return {};
  switch (isa) {
    case SimdIsa::kScalar:
      return {norm_sum_t<VecScalar>, norm_sq_dev_t<VecScalar>, norm_affine_t<VecScalar>,
              lane_sum_t<VecScalar>, lane_sq_dev_t<VecScalar>, lane_affine_t<VecScalar>};
    case SimdIsa::kAvx2:
      return detail::kNormRowsAvx2;
    case SimdIsa::kAvx512:
      return detail::kNormRowsAvx512;
  }
  return {};
}

const NormRowFns& norm_row_fns() {
  static const NormRowFns fns = norm_row_fns_for(active_simd_isa());
  return fns;
}

}  // namespace graphi::ops
