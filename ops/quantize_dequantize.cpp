// QuantizeDequantize: an ONNX QuantizeLinear -> DequantizeLinear pair on a run-time float32
// tensor (a QDQ-format quantized model, as ONNX Runtime's quantize_static writes it), computed in
// float32 (graph/onnx/ONNX.md, "Quantized models"):
//   q = saturate(round_half_even(x / scale) + zero_point, [qmin, qmax]);  y = (q - zero_point) *
//   scale
// with the division and the rounding of QuantizeLinear's definition, so y is exactly the value the
// pair gives. Attributes: scale (float), zero_point, qmin, qmax (ints: the quantized type's range,
// 0..255 for UINT8, -128..127 for INT8). One pass, element-wise and layout-agnostic (0 maps to 0).
#include <cmath>

#include "ops/elementwise_simd.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct QdqParams {
  float scale = 1.0f;
  float zero_point = 0.0f, qmin = 0.0f, qmax = 255.0f;
};

Result<QdqParams> params_of(const graph::Node& node, const std::string& where) {
  QdqParams p;
  GRAPHI_ASSIGN_OR_RETURN(double scale, graph::attr_float(node.attrs, where, "scale", 0.0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t zp, graph::attr_int(node.attrs, where, "zero_point", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t qmin, graph::attr_int(node.attrs, where, "qmin", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t qmax, graph::attr_int(node.attrs, where, "qmax", 255));
  if (!(scale > 0.0) || !std::isfinite(scale))
    return Status::invalid_graph(where + ": scale must be a positive finite number, got " +
                                 std::to_string(scale));
  if (qmin > qmax || zp < qmin || zp > qmax || qmax - qmin > (int64_t{1} << 20))
    return Status::invalid_graph(where + ": zero_point " + std::to_string(zp) +
                                 " outside the quantized range [" + std::to_string(qmin) + ", " +
                                 std::to_string(qmax) + "]");
  p.scale = static_cast<float>(scale);
  p.zero_point = static_cast<float>(zp);
  p.qmin = static_cast<float>(qmin);
  p.qmax = static_cast<float>(qmax);
  return p;
}

Result<std::vector<TensorDesc>> infer_qdq(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(params_of(ctx.node, ctx.where).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_qdq(const graph::Node&, std::span<const TensorDesc* const> in,
                  std::span<const TensorDesc* const> out) {
  return {4.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class QdqKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, params_of(ctx.node, ctx.where));
    numel_ = ctx.outputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(numel_, team.ithr, team.nthr);
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    // q - zp = saturate(round(x / s) + zp) - zp = round(x / s) saturated to [qmin - zp, qmax -
    // zp] (zp an integer, all of it exact in float32); y = (q - zp) * scale. The loop is compiled
    // per ISA (ops/elementwise_loops.h); every path gives the same bits.
    loops_->quantize_dequantize(x + begin, y + begin, end - begin, p_.scale,
                                p_.qmin - p_.zero_point, p_.qmax - p_.zero_point);
  }
  const char* name() const override { return "quantize_dequantize"; }

 private:
  QdqParams p_;
  int64_t numel_ = 0;
  const EltwiseLoops* loops_ = &active_eltwise_loops();
};

std::unique_ptr<Kernel> make_qdq() { return std::make_unique<QdqKernel>(); }

}  // namespace

void register_quantize_dequantize_op(Registry& r) {
  r.add({"QuantizeDequantize", infer_qdq, cost_qdq, false, {make_qdq}});
}

}  // namespace graphi::ops
