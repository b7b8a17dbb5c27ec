// Optimizer steps as ops, the last ops of a training step (graph/passes/training_graph.h):
//   SGDUpdate(W, G, [V], ordering...)           attrs lr, momentum = 0, weight_decay = 0
//   AdamUpdate(W, G, M, V, step, ordering...)   attrs lr, beta1 = 0.9, beta2 = 0.999,
//                                               epsilon = 1e-8, weight_decay = 0
// They are the one exception to "a kernel writes only its outputs": W and the optimizer state
// (V, M) are graph inputs that the training session owns, and these kernels update them IN
// PLACE (no copy of the weights per step). That is safe because the training graph gives the
// update of W an "ordering" input from every other node that reads W, so it runs after every
// read of the old W in any schedule, and nothing else reads the state. The single output is a
// float32 [] token (0) so the node has an output like every other.
// The arithmetic follows torch.optim.SGD / torch.optim.Adam (PyTorch 1.13, single-tensor path):
//   SGD:  g = G + wd W;  V = momentum V + g (V = g at step 1, V starts at 0);  W -= lr V
//   Adam: g = G + wd W;  M = b1 M + (1-b1) g;  V = b2 V + (1-b2) g^2;
//         W -= lr / (1 - b1^t) * M / (sqrt(V) / sqrt(1 - b2^t) + eps)
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

Status check_same(const NodeView& v, size_t i, const char* field) {
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, i, field, {DType::kF32}));
  if (v.in(i).shape != v.in(0).shape)
    return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + field + ") " +
                                 v.in(i).to_string() + " must have the weight's shape " +
                                 v.in(0).to_string());
  return Status::ok();
}

template <bool kAdam>
Result<std::vector<TensorDesc>> infer_update(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  const size_t required = kAdam ? 5 : 2;
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, required, 1u << 20, required));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "W", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(check_same(v, 1, "G"));
  GRAPHI_ASSIGN_OR_RETURN(double lr, graph::attr_float(ctx.node.attrs, v.where, "lr", -1.0));
  if (!(lr >= 0.0))
    return Status::invalid_graph(v.where + ": attribute 'lr' must be given and >= 0");
  if (kAdam) {
    GRAPHI_RETURN_IF_ERROR(check_same(v, 2, "M"));
    GRAPHI_RETURN_IF_ERROR(check_same(v, 3, "V"));
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 4, "step", {DType::kI64}));
    if (v.in(4).numel() != 1)
      return Status::invalid_graph(v.where + ": input 4 (step) must have one element");
  } else {
    GRAPHI_ASSIGN_OR_RETURN(double m, graph::attr_float(ctx.node.attrs, v.where, "momentum", 0.0));
    if (m != 0.0 && !v.has_input(2))
      return Status::invalid_graph(v.where + ": momentum " + std::to_string(m) +
                                   " needs the velocity input 2 (V)");
    if (v.has_input(2)) GRAPHI_RETURN_IF_ERROR(check_same(v, 2, "V"));
  }
  if (ctx.num_outputs != 1) return Status::invalid_graph(v.where + ": expects 1 output (a token)");
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {}}};
}

CostHint cost_update(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const>) {
  const double n = static_cast<double>(in[0]->numel());
  return {6 * n, 5 * 4 * n};
}

// w -= lr * g (w and g never overlap: the gradient is another value).
void sgd_plain(float* __restrict w, const float* __restrict g, int64_t n, float lr) noexcept {
  for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
}

class SgdKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_ASSIGN_OR_RETURN(double lr, graph::attr_float(ctx.node.attrs, v.where, "lr", 0.0));
    GRAPHI_ASSIGN_OR_RETURN(double m, graph::attr_float(ctx.node.attrs, v.where, "momentum", 0.0));
    GRAPHI_ASSIGN_OR_RETURN(double wd,
                            graph::attr_float(ctx.node.attrs, v.where, "weight_decay", 0.0));
    lr_ = static_cast<float>(lr);
    momentum_ = static_cast<float>(m);
    wd_ = static_cast<float>(wd);
    has_v_ = v.has_input(2);
    n_ = ctx.inputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* w = static_cast<float*>(const_cast<void*>(io.inputs[0]));  // in place: see the top
    const float* g = static_cast<const float*>(io.inputs[1]);
    float* vel = has_v_ ? static_cast<float*>(const_cast<void*>(io.inputs[2])) : nullptr;
    auto [b, e] = team_range(n_, team.ithr, team.nthr);
    if (!vel && wd_ == 0.0f) {
      sgd_plain(w + b, g + b, e - b, lr_);  // the common case, without branches: vectorized
    } else {
      for (int64_t i = b; i < e; ++i) {
        float d = g[i];
        if (wd_ != 0.0f) d += wd_ * w[i];
        if (vel) {
          vel[i] = momentum_ * vel[i] + d;
          d = vel[i];
        }
        w[i] -= lr_ * d;
      }
    }
    if (team.ithr == 0) *static_cast<float*>(io.outputs[0]) = 0.0f;
  }
  const char* name() const override { return "sgd_update"; }

 private:
  float lr_ = 0, momentum_ = 0, wd_ = 0;
  bool has_v_ = false;
  int64_t n_ = 0;
};

class AdamKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    const std::string& w = ctx.where;
    const graph::Attributes& a = ctx.node.attrs;
    GRAPHI_ASSIGN_OR_RETURN(lr_, graph::attr_float(a, w, "lr", 0.0));
    GRAPHI_ASSIGN_OR_RETURN(b1_, graph::attr_float(a, w, "beta1", 0.9));
    GRAPHI_ASSIGN_OR_RETURN(b2_, graph::attr_float(a, w, "beta2", 0.999));
    GRAPHI_ASSIGN_OR_RETURN(eps_, graph::attr_float(a, w, "epsilon", 1e-8));
    GRAPHI_ASSIGN_OR_RETURN(wd_, graph::attr_float(a, w, "weight_decay", 0.0));
    n_ = ctx.inputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* w = static_cast<float*>(const_cast<void*>(io.inputs[0]));  // in place: see the top
    const float* g = static_cast<const float*>(io.inputs[1]);
    float* m = static_cast<float*>(const_cast<void*>(io.inputs[2]));
    float* v = static_cast<float*>(const_cast<void*>(io.inputs[3]));
    const double t = static_cast<double>(*static_cast<const int64_t*>(io.inputs[4]));
    // As torch: step_size and sqrt(bias_correction2) in double, the tensor math in float.
    const float step_size = static_cast<float>(lr_ / (1.0 - std::pow(b1_, t)));
    const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2_, t)));
    const float b1 = static_cast<float>(b1_), b2 = static_cast<float>(b2_);
    const float eps = static_cast<float>(eps_), wd = static_cast<float>(wd_);
    auto [b, e] = team_range(n_, team.ithr, team.nthr);
    for (int64_t i = b; i < e; ++i) {
      float d = g[i];
      if (wd != 0.0f) d += wd * w[i];
      m[i] = m[i] * b1 + (1.0f - b1) * d;
      v[i] = v[i] * b2 + (1.0f - b2) * d * d;
      const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      w[i] -= step_size * (m[i] / denom);
    }
    if (team.ithr == 0) *static_cast<float*>(io.outputs[0]) = 0.0f;
  }
  const char* name() const override { return "adam_update"; }

 private:
  double lr_ = 0, b1_ = 0, b2_ = 0, eps_ = 0, wd_ = 0;
  int64_t n_ = 0;
};

std::unique_ptr<Kernel> make_sgd() { return std::make_unique<SgdKernel>(); }
std::unique_ptr<Kernel> make_adam() { return std::make_unique<AdamKernel>(); }

}  // namespace

void register_optimizer_ops(Registry& r) {
  r.add({"SGDUpdate", infer_update<false>, cost_update, false, {make_sgd}});
  r.add({"AdamUpdate", infer_update<true>, cost_update, false, {make_adam}});
}

}  // namespace graphi::ops
