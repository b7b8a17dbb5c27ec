// Dropout, in its two forms:
//   Dropout(X) -> Y                         attrs ratio = 0.5, seed (optional)
//       inference: Y = X (a copy). Models exported in training mode keep their Dropout nodes
//       (graph/onnx/import_shape.cpp) so that they can be trained.
//   DropoutTraining(X, step) -> Y, Mask     attrs ratio = 0.5, seed
//       training: Mask[i] = keep(i) / (1 - ratio) (0 where dropped), Y = X * Mask, as
//       torch.nn.Dropout in training mode. The training graph (graph/passes/training_graph.h)
//       turns every Dropout into this op; the gradient is dY * Mask (ops/gradients.cpp).
// The random numbers are counter-based, so they depend on (seed, step, element index) only,
// never on the team size or the schedule (bitwise-equal steps on every scheduler policy):
//   key = splitmix64(seed ^ splitmix64(step)),  u_i = (splitmix64(key + i) >> 40) / 2^24
//   element i is kept when u_i >= ratio.
// `step` is the int64 [] step counter the TrainingSession feeds (1, 2, ...), so every step draws a
// new mask and a run replays exactly. splitmix64 is Steele, Lea and Flood's SplitMix64 finalizer.
#include <cstring>

#include "ops/dropout_rng.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

Result<double> dropout_ratio(const NodeView& v) {
  GRAPHI_ASSIGN_OR_RETURN(double ratio, graph::attr_float(v.node.attrs, v.where, "ratio", 0.5));
  if (!(ratio >= 0 && ratio <= 1))
    return Status::invalid_graph(v.where + ": attribute 'ratio' must be in [0, 1], got " +
                                 std::to_string(ratio));
  return ratio;
}

Result<std::vector<TensorDesc>> infer_dropout(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(dropout_ratio(v).status());
  if (ctx.num_outputs != 1)
    return Status::unsupported(v.where +
                               ": expects 1 output (Y); the mask output is not supported");
  return std::vector<TensorDesc>{v.in(0)};
}

Result<std::vector<TensorDesc>> infer_dropout_training(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "step", {DType::kI64}));
  if (v.in(1).numel() != 1)
    return Status::invalid_graph(v.where + ": input 1 (step) must have one element");
  GRAPHI_RETURN_IF_ERROR(dropout_ratio(v).status());
  GRAPHI_RETURN_IF_ERROR(graph::attr_int(v.node.attrs, v.where, "seed").status());
  if (ctx.num_outputs < 1 || ctx.num_outputs > 2)
    return Status::invalid_graph(v.where + ": expects 1 or 2 outputs (Y, Mask)");
  return std::vector<TensorDesc>(ctx.num_outputs, v.in(0));
}

CostHint cost_dropout(const graph::Node&, std::span<const TensorDesc* const> in,
                      std::span<const TensorDesc* const> out) {
  return {4.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes() * out.size())};
}

class DropoutKernel final : public Kernel {
 public:
  explicit DropoutKernel(bool training) : training_(training) {}
  Status init(const KernelContext& ctx) override {
    NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_ASSIGN_OR_RETURN(ratio_, dropout_ratio(v));
    if (training_) {
      GRAPHI_ASSIGN_OR_RETURN(int64_t seed, graph::attr_int(ctx.node.attrs, ctx.where, "seed"));
      seed_ = static_cast<uint64_t>(seed);
    }
    n_ = ctx.inputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    auto [b, e] = team_range(n_, team.ithr, team.nthr);
    if (!training_) {
      if (e > b) std::memcpy(y + b, x + b, static_cast<size_t>(e - b) * sizeof(float));
      return;
    }
    const int64_t step = *static_cast<const int64_t*>(io.inputs[1]);
    auto* mask = io.outputs.size() > 1 ? static_cast<float*>(io.outputs[1]) : nullptr;
    const DropoutStream rng(seed_, step);
    const float scale = ratio_ < 1.0 ? static_cast<float>(1.0 / (1.0 - ratio_)) : 0.0f;
    for (int64_t i = b; i < e; ++i) {
      const float m = rng.uniform(static_cast<uint64_t>(i)) >= ratio_ ? scale : 0.0f;
      if (mask) mask[i] = m;
      y[i] = x[i] * m;
    }
  }
  const char* name() const override { return training_ ? "dropout_training" : "dropout_identity"; }

 private:
  bool training_;
  double ratio_ = 0.5;
  uint64_t seed_ = 0;
  int64_t n_ = 0;
};

std::unique_ptr<Kernel> make_dropout() { return std::make_unique<DropoutKernel>(false); }
std::unique_ptr<Kernel> make_dropout_training() { return std::make_unique<DropoutKernel>(true); }

}  // namespace

void register_dropout_ops(Registry& r) {
  r.add({"Dropout", infer_dropout, cost_dropout, false, {make_dropout}});
  r.add({"DropoutTraining", infer_dropout_training, cost_dropout, false, {make_dropout_training}});
}

}  // namespace graphi::ops
