// DynamicQuantizeDequantize: x quantized as ONNX DynamicQuantizeLinear does (one uint8 scale and
// zero point for the whole tensor, ops/dynamic_quantize.h) and turned back into float32,
// y = (q - zero_point) * scale. The importer puts it before a convolution ONNX Runtime's
// quantize_dynamic wrote as DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul, whose weights
// it dequantizes, so the float convolution computes the same sums of the same integer products
// (to float32 rounding; graph/onnx/ONNX.md, "Dynamically quantized models"). 0 maps to 0 and the
// range includes 0, so it runs on any layout, padding lanes included.
#include <omp.h>

#include <algorithm>

#include "ops/dynamic_quantize.h"
#include "ops/elementwise_simd.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

Result<std::vector<TensorDesc>> infer_dqdq(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32}));
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_dqdq(const graph::Node&, std::span<const TensorDesc* const> in,
                   std::span<const TensorDesc* const> out) {
  return {6.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(2 * in[0]->bytes() + out[0]->bytes())};
}

class DqdqKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    numel_ = ctx.outputs[0]->numel();
    return Status::ok();
  }
  bool opens_own_region() const override { return true; }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    float lo = 0.0f, hi = 0.0f;
#pragma omp parallel num_threads(team.nthr)
    {
      const DynamicQuant dq = dynamic_quant_of_team(x, numel_, lo, hi);
      auto [i0, i1] = team_range(numel_, omp_get_thread_num(), omp_get_num_threads());
      // (q - zp) * scale = clamp(round(x / scale), -zp, 255 - zp) * scale: QuantizeDequantize's
      // loop (compiled per ISA, ops/elementwise_loops.h), a NaN giving -zp * scale as here.
      loops_->quantize_dequantize(x + i0, y + i0, i1 - i0, dq.scale, -dq.zero_point,
                                  255.0f - dq.zero_point);
    }
  }
  const char* name() const override { return "dynamic_quantize_dequantize"; }

 private:
  int64_t numel_ = 0;
  const EltwiseLoops* loops_ = &active_eltwise_loops();
};

std::unique_ptr<Kernel> make_dqdq() { return std::make_unique<DqdqKernel>(); }

}  // namespace

void register_dynamic_quantize_dequantize_op(Registry& r) {
  r.add({"DynamicQuantizeDequantize", infer_dqdq, cost_dqdq, false, {make_dqdq}});
}

}  // namespace graphi::ops
