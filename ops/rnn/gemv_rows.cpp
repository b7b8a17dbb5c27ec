// Run-time ISA selection and the scalar path of ops/rnn/gemv_rows.h.
#include "ops/rnn/gemv_rows.h"

#define GRAPHI_VEC_SCALAR
#include "ops/rnn/gemv_rows_impl.h"  // includes ops/vec_math.h

namespace graphi::ops {

namespace detail {
// Defined in ops/rnn/gemv_rows_avx2.cpp and ops/rnn/gemv_rows_avx512.cpp.
extern const GemvRowsFn kGemvRowsAvx2;
extern const GemvRowsFn kGemvRowsAvx512;
}  // namespace detail

GemvRowsFn gemv_rows_kernel(SimdIsa isa) {
  if (!simd_isa_supported(isa)) return nullptr;
  switch (isa) {
    case SimdIsa::kScalar:
      return gemv_rows_t<VecScalar, 4>;
    case SimdIsa::kAvx2:
      return detail::kGemvRowsAvx2;
    case SimdIsa::kAvx512:
      return detail::kGemvRowsAvx512;
  }
  return nullptr;
}

int64_t gemv_rows_block_cols() noexcept {
  switch (active_simd_isa()) {
    case SimdIsa::kAvx512:
      return 4 * 16;
    case SimdIsa::kAvx2:
      return 2 * 8;
    case SimdIsa::kScalar:
      break;
  }
  return 4;
}

void gemv_rows(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
               int64_t rows, int64_t k, int64_t cols, bool accumulate) noexcept {
  static const GemvRowsFn fn = gemv_rows_kernel(active_simd_isa());
  fn(a, lda, b, ldb, c, ldc, rows, k, cols, accumulate);
}

}  // namespace graphi::ops
