// ReluGrad(dY, Y) -> dX: the gradient of Relu from its output, dX = dY where Y > 0, else 0 (as
// PyTorch's threshold_backward: zero gradient at 0 and for a NaN Y). A gradient-only op: the
// Relu rule of ops/gradients.cpp emits it, one pass instead of Mul(dY, Sign(Y)).
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

Status check(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "dY", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "Y", {DType::kF32}));
  if (v.in(0).shape != v.in(1).shape)
    return Status::invalid_graph(v.where + ": dY " + v.in(0).to_string() + " and Y " +
                                 v.in(1).to_string() + " must have the same shape");
  return Status::ok();
}

Result<std::vector<TensorDesc>> infer_relu_grad(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(check(v));
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_relu_grad(const graph::Node& node, std::span<const TensorDesc* const> in,
                        std::span<const TensorDesc* const> out) {
  (void)node;
  return {static_cast<double>(in[0]->numel()),
          static_cast<double>(in[0]->bytes() + in[1]->bytes() + out[0]->bytes())};
}

void relu_grad_range(const float* __restrict dy, const float* __restrict y, float* __restrict dx,
                     int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

class ReluGradKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_RETURN_IF_ERROR(check(NodeView::of_kernel(ctx)));
    n_ = ctx.inputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [b, e] = team_range(n_, team.ithr, team.nthr);
    relu_grad_range(static_cast<const float*>(io.inputs[0]) + b,
                    static_cast<const float*>(io.inputs[1]) + b,
                    static_cast<float*>(io.outputs[0]) + b, e - b);
  }
  const char* name() const override { return "relu_grad"; }

 private:
  int64_t n_ = 0;
};

std::unique_ptr<Kernel> make_relu_grad() { return std::make_unique<ReluGradKernel>(); }

}  // namespace

void register_relu_grad_op(Registry& r) {
  r.add({"ReluGrad", infer_relu_grad, cost_relu_grad, false, {make_relu_grad}});
}

}  // namespace graphi::ops
