// Softmax over one axis (ONNX opset 13: 'axis', default -1; the other dims are independent).
// y = exp(x - max) / sum(exp(x - max)): subtracting the max keeps exp's argument <= 0, so no
// overflow; the sum is accumulated in double so long axes keep full float accuracy. The last
// axis (contiguous rows) runs ops/softmax_rows.h's vectorized loop.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"
#include "ops/softmax_rows.h"

namespace graphi::ops {
namespace {

// The input as [outer, axis_len, inner]; one softmax per (outer, inner) lane.
class SoftmaxKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 1 || !ctx.inputs[0] || ctx.inputs[0]->dtype != DType::kF32)
      return Status::unsupported("expects one float32 input");
    const TensorDesc& in = *ctx.inputs[0];
    NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr,
                            graph::attr_int(ctx.node.attrs, ctx.where, "axis", -1));
    GRAPHI_ASSIGN_OR_RETURN(int axis, normalize_axis(v, "axis", axis_attr, in));
    outer_ = inner_ = 1;
    for (int d = 0; d < axis; ++d) outer_ *= in.shape[static_cast<size_t>(d)];
    for (int d = axis + 1; d < in.rank(); ++d) inner_ *= in.shape[static_cast<size_t>(d)];
    len_ = in.shape[static_cast<size_t>(axis)];
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* src = static_cast<const float*>(io.inputs[0]);
    float* dst = static_cast<float*>(io.outputs[0]);
    if (inner_ == 1) {  // the common case (last axis): contiguous rows
      auto [begin, end] = team_range(outer_, team.ithr, team.nthr);
      const SoftmaxRowFn row = softmax_row_fn();
      for (int64_t r = begin; r < end; ++r) row(src + r * len_, dst + r * len_, len_);
      return;
    }
    // Lanes (o, i) with stride inner_; a thread takes a range of lanes.
    auto [begin, end] = team_range(outer_ * inner_, team.ithr, team.nthr);
    for (int64_t lane = begin; lane < end; ++lane) {
      const int64_t o = lane / inner_, i = lane % inner_;
      strided(src + o * len_ * inner_ + i, dst + o * len_ * inner_ + i);
    }
  }
  const char* name() const override { return "softmax_f32"; }

 private:
  void strided(const float* x, float* y) const {
    float m = x[0];
    for (int64_t k = 1; k < len_; ++k) m = std::max(m, x[k * inner_]);
    double sum = 0;
    for (int64_t k = 0; k < len_; ++k) {
      y[k * inner_] = std::exp(x[k * inner_] - m);
      sum += y[k * inner_];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t k = 0; k < len_; ++k) y[k * inner_] *= inv;
  }

  int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

Result<std::vector<TensorDesc>> infer_softmax(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32}));
  if (v.in(0).rank() == 0)
    return Status::invalid_graph(ctx.where + ": input 0 must have rank >= 1, got " +
                                 v.in(0).to_string());
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(ctx.node.attrs, ctx.where, "axis", -1));
  GRAPHI_RETURN_IF_ERROR(normalize_axis(v, "axis", axis, v.in(0)).status());
  return std::vector<TensorDesc>{v.in(0)};
}

// Per element: max, subtract, exp (~8), add, multiply.
CostHint cost_softmax(const graph::Node&, std::span<const TensorDesc* const> in,
                      std::span<const TensorDesc* const> out) {
  return {12.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

std::unique_ptr<Kernel> make_softmax() { return std::make_unique<SoftmaxKernel>(); }

}  // namespace

void register_softmax_op(Registry& r) {
  r.add({"Softmax", infer_softmax, cost_softmax, false, {make_softmax}});
}

}  // namespace graphi::ops
