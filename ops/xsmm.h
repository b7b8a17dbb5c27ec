// The LIBXSMM adapter: the only file that includes libxsmm.h (1.17 API; 2.x replaced the dispatch
// calls, see DEPENDENCIES.md 1). Everything here is column-major, as LIBXSMM is.
#pragma once

#include <string>

#include "graph/base.h"

namespace graphi::ops::xsmm {

// Shape of one single-precision small GEMM, column-major:
//   C(m x n) = alpha * op(A)(m x k) * op(B)(k x n) + beta * C
// with op(X) = X or X^T. lda/ldb/ldc are the leading dimensions of the stored matrices.
struct SmmShape {
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f;
  float beta = 0.0f;  // LIBXSMM's own default is 1; the adapter always passes it explicitly
  bool trans_a = false, trans_b = false;
};

// A JIT-ed microkernel. Cheap to copy; callable from any thread at once (it is stateless code).
class SmmKernel {
 public:
  SmmKernel() = default;
  bool valid() const { return fn_ != nullptr; }
  // C = alpha * op(A) op(B) + beta * C for the shape it was dispatched for.
  void operator()(const float* a, const float* b, float* c) const noexcept;

 private:
  friend Result<SmmKernel> dispatch_smm(const SmmShape& s);
  void* fn_ = nullptr;
};

// JIT-generates (or finds in LIBXSMM's code cache) the kernel for `s`. Thread-safe. LIBXSMM only
// JITs alpha = 1 and beta in {0, 1}; anything it cannot do (a NULL kernel) comes back as
// Status::unsupported with the reason, so a caller can decline and let another kernel run.
Result<SmmKernel> dispatch_smm(const SmmShape& s);

// "libxsmm 1.17 (target cpx)": for `graphi info` and logs.
std::string version_string();

}  // namespace graphi::ops::xsmm
