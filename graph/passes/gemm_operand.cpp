#include "graph/passes/gemm_operand.h"

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

std::optional<ConstGemm> const_gemm(const Graph& g, NodeId node) {
  const Node& n = g.node(node);
  const bool matmul = n.op == "MatMul" && n.inputs.size() == 2;
  const bool gemm = n.op == "Gemm" && (n.inputs.size() == 2 || n.inputs.size() == 3);
  if ((!matmul && !gemm) || n.outputs.size() != 1 || n.inputs[0] == kNoId || n.inputs[1] == kNoId)
    return std::nullopt;
  ConstGemm m;
  m.node = node;
  m.a = n.inputs[0];
  bool trans_b = false;
  if (gemm) {
    auto ta = attr_int(n.attrs, "", "transA", 0), tb = attr_int(n.attrs, "", "transB", 0);
    auto alpha = attr_float(n.attrs, "", "alpha", 1.0), beta = attr_float(n.attrs, "", "beta", 1.0);
    if (!ta.is_ok() || !tb.is_ok() || !alpha.is_ok() || !beta.is_ok() || *ta != 0 ||
        *alpha != 1.0 || *beta != 1.0)
      return std::nullopt;
    trans_b = *tb != 0;
  }
  auto w = resolve_const(g, n.inputs[1]);
  if (!w) return std::nullopt;
  const TensorDesc& wd = g.value(w->value).desc;
  const TensorDesc& ad = g.value(m.a).desc;
  if (wd.dtype != DType::kF32 || wd.rank() != 2 || ad.dtype != DType::kF32 || ad.rank() < 2 ||
      (gemm && ad.rank() != 2) || g.value(n.outputs[0]).desc.dtype != DType::kF32)
    return std::nullopt;
  m.w = w->value;
  m.trans = w->transposed != trans_b;
  m.k = m.trans ? wd.shape[1] : wd.shape[0];
  m.n = m.trans ? wd.shape[0] : wd.shape[1];
  if (ad.shape.back() != m.k) return std::nullopt;
  if (gemm && n.inputs.size() == 3 && n.inputs[2] != kNoId) {
    auto c = resolve_const(g, n.inputs[2]);
    if (!c || c->transposed) return std::nullopt;
    const TensorDesc& cd = g.value(c->value).desc;
    if (cd.dtype != DType::kF32 || (cd.shape != Shape{m.n} && cd.shape != Shape{1, m.n}))
      return std::nullopt;
    m.bias = c->value;
  }
  return m;
}

void copy_b(const Graph& g, const ConstGemm& m, float* dst, int64_t ld, int64_t col0) {
  const Tensor& w = *g.value(m.w).data;
  const float* src = w.data_as<float>();
  for (int64_t k = 0; k < m.k; ++k)
    for (int64_t j = 0; j < m.n; ++j)
      dst[k * ld + col0 + j] = m.trans ? src[j * m.k + k] : src[k * m.n + j];
}

}  // namespace graphi::graph::passes
