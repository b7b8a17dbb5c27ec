// MatMul (numpy matmul semantics) and Gemm (alpha, beta, transA, transB, bias).
#include "ops/registry.h"

namespace graphi::ops {
void register_gemm_ops(Registry& r) {}
}  // namespace graphi::ops
