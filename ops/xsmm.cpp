#include "ops/xsmm.h"

#include <libxsmm.h>

#include <cstdlib>
#include <mutex>

namespace graphi::ops::xsmm {

// LIBXSMM 1.17's initialization (run by its first dispatch) does setenv("OMP_PROC_BIND=TRUE")
// when the variable is unset. libgomp has read its settings by then, but the variable would
// leak into child processes and trip graphi's affinity warning. Initialize once here and put
// the environment back as it was.
static void init_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* before = std::getenv("OMP_PROC_BIND");
    const bool was_set = before != nullptr;
    libxsmm_init();
    if (!was_set) unsetenv("OMP_PROC_BIND");
  });
}

void SmmKernel::operator()(const float* a, const float* b, float* c) const noexcept {
  reinterpret_cast<libxsmm_smmfunction>(fn_)(a, b, c);
}

static std::string describe(const SmmShape& s) {
  return "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
         " lda=" + std::to_string(s.lda) + " ldb=" + std::to_string(s.ldb) +
         " ldc=" + std::to_string(s.ldc) + " alpha=" + std::to_string(s.alpha) +
         " beta=" + std::to_string(s.beta) + (s.trans_a ? " transA" : "") +
         (s.trans_b ? " transB" : "");
}

Result<SmmKernel> dispatch_smm(const SmmShape& s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    return Status::invalid_argument("libxsmm: empty GEMM (" + describe(s) + ")");
  if (s.alpha != 1.0f || (s.beta != 0.0f && s.beta != 1.0f))
    return Status::unsupported("libxsmm JITs only alpha=1 and beta in {0,1} (" + describe(s) + ")");
  init_once();
  const libxsmm_blasint lda = s.lda, ldb = s.ldb, ldc = s.ldc;
  const float alpha = s.alpha, beta = s.beta;
  const int flags =
      (s.trans_a ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (s.trans_b ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  libxsmm_smmfunction fn =
      libxsmm_smmdispatch(s.m, s.n, s.k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
  if (fn == nullptr)
    return Status::unsupported("libxsmm returned no kernel for " + describe(s) + " (target " +
                               std::string(libxsmm_get_target_arch()) + ")");
  SmmKernel k;
  k.fn_ = reinterpret_cast<void*>(fn);
  return k;
}

std::string version_string() {
  return "libxsmm " + std::to_string(LIBXSMM_VERSION_MAJOR) + "." +
         std::to_string(LIBXSMM_VERSION_MINOR) + " (target " +
         std::string(libxsmm_get_target_arch()) + ")";
}

}  // namespace graphi::ops::xsmm
