#include "graph/passes/matmul_epilogue.h"

#include <optional>

#include "graph/passes/gemm_operand.h"
#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

namespace {

// The rows at or below which gemm.cpp's GEMV kernel runs a product (kGemvMaxRows), and the
// multiply-adds at or below which its LIBXSMM kernel does.
constexpr int64_t kGemvRows = 4;
constexpr double kXsmmMacs = 64.0 * 64.0 * 64.0;

// The values of constant `v` (f32) when it broadcasts over the last dim of a tensor of rank
// `rank` only: n values, shape [n] or [1, ..., 1, n] of rank <= `rank`; empty otherwise.
std::vector<float> last_dim_constant(const Graph& g, ValueId v, int64_t n, size_t rank) {
  const Value& c = g.value(v);
  if (!c.data || c.data->dtype() != DType::kF32 || c.desc.numel() != n || c.desc.rank() < 1 ||
      static_cast<size_t>(c.desc.rank()) > rank || c.desc.shape.back() != n)
    return {};
  const float* p = c.data->data_as<float>();
  return std::vector<float>(p, p + n);
}

// The MatMulBias activation a node applies to its single input, or nullopt.
std::optional<std::string> activation_name(const Node& n) {
  if (n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
  if (n.op == "Relu") return std::string("Relu");
  if (n.op == "Gelu") {
    auto approx = attr_string(n.attrs, n.name, "approximate", "none");
    if (!approx.is_ok()) return std::nullopt;
    if (*approx == "none") return std::string("Gelu");
    if (*approx == "tanh") return std::string("GeluTanh");
  }
  return std::nullopt;
}

}  // namespace

Result<MatMulEpilogueResult> fuse_matmul_epilogues(const Graph& g, const ShapeInferencer& shapes) {
  MatMulEpilogueResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (g.node(id).op != "MatMul") continue;
    std::optional<ConstGemm> m = const_gemm(g, id);
    if (!m) continue;
    const TensorDesc& a = g.value(m->a).desc;
    const int64_t rows = a.numel() / m->k;
    if (rows <= kGemvRows ||
        static_cast<double>(rows) * static_cast<double>(m->k) * static_cast<double>(m->n) <=
            kXsmmMacs)
      continue;
    const size_t rank = static_cast<size_t>(a.rank());
    ValueId y = g.node(id).outputs[0];
    const NodeId add_id = sole_reader(g, y);
    if (add_id == kNoId || rw.removed(add_id)) continue;
    const ValueId b = other_operand(g.node(add_id), "Add", y);
    if (b == kNoId) continue;
    std::vector<float> bias = last_dim_constant(g, b, m->n, rank);
    if (bias.empty()) continue;
    const ValueId sum = g.node(add_id).outputs[0];
    if (g.value(sum).desc != g.value(y).desc) continue;
    std::vector<NodeId> fused = {id, add_id};
    ValueId out = sum;
    // A Mul by a per-column constant: W[:, j] and b[j] scaled by s[j].
    std::vector<float> scale;
    if (const NodeId mul_id = sole_reader(g, out); mul_id != kNoId) {
      if (const ValueId s = other_operand(g.node(mul_id), "Mul", out); s != kNoId) {
        scale = last_dim_constant(g, s, m->n, rank);
        if (!scale.empty() && g.value(g.node(mul_id).outputs[0]).desc == g.value(y).desc) {
          fused.push_back(mul_id);
          out = g.node(mul_id).outputs[0];
        } else {
          scale.clear();
        }
      }
    }
    std::optional<std::string> act;
    if (const NodeId act_id = sole_reader(g, out); act_id != kNoId) {
      act = activation_name(g.node(act_id));
      if (act) {
        fused.push_back(act_id);
        out = g.node(act_id).outputs[0];
      }
    }
    Tensor w(TensorDesc{DType::kF32, {m->k, m->n}});
    copy_b(g, *m, w.data_as<float>(), m->n, 0);
    if (!scale.empty()) {
      float* wp = w.data_as<float>();
      for (int64_t k = 0; k < m->k; ++k)
        for (int64_t j = 0; j < m->n; ++j) wp[k * m->n + j] *= scale[static_cast<size_t>(j)];
      for (int64_t j = 0; j < m->n; ++j)
        bias[static_cast<size_t>(j)] *= scale[static_cast<size_t>(j)];
    }
    Tensor bt(TensorDesc{DType::kF32, {m->n}});
    std::copy(bias.begin(), bias.end(), bt.data_as<float>());
    const std::string& name = g.node(id).name;
    const std::string w_name = rw.fresh(name + "/weights"), b_name = rw.fresh(name + "/bias");
    rw.add_constant(w_name, std::move(w));
    rw.add_constant(b_name, std::move(bt));
    Attributes attrs;
    if (act) attrs.set("activation", *act);
    for (NodeId f : fused) rw.remove(f);
    rw.add_node("MatMulBias", name, {g.value(m->a).name, w_name, b_name}, {g.value(out).name},
                attrs);
    ++result.fused;
    if (!scale.empty()) ++result.scales;
    if (act) ++result.activations;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

}  // namespace graphi::graph::passes
