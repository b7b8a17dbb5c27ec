// Run-time ISA selection and the scalar path of ops/softmax_rows.h.
#include "ops/softmax_rows.h"

#define GRAPHI_VEC_SCALAR
#include "ops/softmax_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops {

namespace detail {
// Defined in ops/softmax_rows_avx2.cpp and ops/softmax_rows_avx512.cpp.
extern const SoftmaxRowFn kSoftmaxRowAvx2;
extern const SoftmaxRowFn kSoftmaxRowAvx512;
extern const SoftmaxRowFn kLogSoftmaxRowAvx2;
extern const SoftmaxRowFn kLogSoftmaxRowAvx512;
}  // namespace detail

SoftmaxRowFn softmax_row_fn_for(SimdIsa isa) {
  if (!simd_isa_supported(isa)) return nullptr;
  switch (isa) {
    case SimdIsa::kScalar:
      return softmax_row_t<VecScalar>;
    case SimdIsa::kAvx2:
      return detail::kSoftmaxRowAvx2;
    case SimdIsa::kAvx512:
      return detail::kSoftmaxRowAvx512;
  }
  return nullptr;
}

SoftmaxRowFn log_softmax_row_fn_for(SimdIsa isa) {
  if (!simd_isa_supported(isa)) return nullptr;
  switch (isa) {
    case SimdIsa::kScalar:
      return log_softmax_row_t<VecScalar>;
    case SimdIsa::kAvx2:
      return detail::kLogSoftmaxRowAvx2;
    case SimdIsa::kAvx512:
      return detail::kLogSoftmaxRowAvx512;
  }
  return nullptr;
}

SoftmaxRowFn log_softmax_row_fn() {
  static const SoftmaxRowFn fn = log_softmax_row_fn_for(active_simd_isa());
  return fn;
}

SoftmaxRowFn softmax_row_fn() {
  static const SoftmaxRowFn fn = softmax_row_fn_for(active_simd_isa());
  return fn;
}

}  // namespace graphi::ops
