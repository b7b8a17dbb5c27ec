// LogSoftmax over one axis (ONNX opset 13: 'axis', default -1): y = x - max - log(sum(exp(x -
// max))). Computed directly rather than as Log(Softmax): log of an underflowed softmax would be
// -inf where the true value is a finite large negative number. Sums in double. The last axis
// (contiguous rows) runs ops/softmax_rows.h's vectorized loop.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"
#include "ops/softmax_rows.h"

namespace graphi::ops {
namespace {

struct Lanes {
  int64_t outer = 1, len = 1, inner = 1;
};

Result<Lanes> lanes_of(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32}));
  const TensorDesc& in = v.in(0);
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, graph::attr_int(v.node.attrs, v.where, "axis", -1));
  GRAPHI_ASSIGN_OR_RETURN(int axis, normalize_axis(v, "axis", axis_attr, in));
  Lanes l;
  for (int d = 0; d < axis; ++d) l.outer *= in.shape[static_cast<size_t>(d)];
  for (int d = axis + 1; d < in.rank(); ++d) l.inner *= in.shape[static_cast<size_t>(d)];
  l.len = in.shape[static_cast<size_t>(axis)];
  return l;
}

Result<std::vector<TensorDesc>> infer_log_softmax(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(lanes_of(v).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_log_softmax(const graph::Node&, std::span<const TensorDesc* const> in,
                          std::span<const TensorDesc* const> out) {
  return {12.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class LogSoftmaxKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(l_, lanes_of(NodeView::of_kernel(ctx)));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* src = static_cast<const float*>(io.inputs[0]);
    auto* dst = static_cast<float*>(io.outputs[0]);
    if (l_.inner == 1) {  // contiguous rows
      auto [r0, r1] = team_range(l_.outer, team.ithr, team.nthr);
      const SoftmaxRowFn row = log_softmax_row_fn();
      for (int64_t r = r0; r < r1; ++r) row(src + r * l_.len, dst + r * l_.len, l_.len);
      return;
    }
    auto [begin, end] = team_range(l_.outer * l_.inner, team.ithr, team.nthr);
    const int64_t s = l_.inner;
    for (int64_t lane = begin; lane < end; ++lane) {
      const int64_t o = lane / l_.inner, i = lane % l_.inner;
      const float* x = src + o * l_.len * s + i;
      float* y = dst + o * l_.len * s + i;
      float m = x[0];
      for (int64_t k = 1; k < l_.len; ++k) m = std::max(m, x[k * s]);
      double sum = 0;
      for (int64_t k = 0; k < l_.len; ++k) sum += std::exp(static_cast<double>(x[k * s] - m));
      const auto lse = static_cast<float>(std::log(sum));
      for (int64_t k = 0; k < l_.len; ++k) y[k * s] = x[k * s] - m - lse;
    }
  }
  const char* name() const override { return "log_softmax_f32"; }

 private:
  Lanes l_;
};

std::unique_ptr<Kernel> make_log_softmax() { return std::make_unique<LogSoftmaxKernel>(); }

}  // namespace

void register_log_softmax_op(Registry& r) {
  r.add({"LogSoftmax", infer_log_softmax, cost_log_softmax, false, {make_log_softmax}});
}

}  // namespace graphi::ops
