// Batch normalization over the channel dim 1 of X [N, C, D1, ...] (ONNX BatchNormalization), in
// its two forms, plus the in-place update of the running statistics:
//   BatchNormalization(X, scale, B, mean, var) -> Y            attrs epsilon = 1e-5, momentum = 0.9
//       inference: Y = (X - mean[c]) / sqrt(var[c] + eps) * scale[c] + B[c]
//   BatchNormalizationTraining(X, scale, B) -> Y, Mean, InvStdDev, Var       attr epsilon = 1e-5
//       training: the statistics of this batch (over N and the spatial dims, per channel):
//       Mean[c], Var[c] (biased, / count), InvStdDev[c] = 1 / sqrt(Var[c] + eps); Y as above
//       with them. The training graph (graph/passes/training_graph.h) turns every
//       BatchNormalization of a model into this op; its gradient rule is in ops/gradients.cpp.
//   BatchNormStatsUpdate(running_mean, running_var, Mean, Var) -> token
//       attrs momentum (ONNX meaning: the weight of the OLD value; torch's momentum m is 1 - m)
//       and count (elements per channel): IN PLACE, as torch.nn.BatchNorm2d in training mode,
//       running_mean = momentum * running_mean + (1 - momentum) * Mean
//       running_var  = momentum * running_var  + (1 - momentum) * Var * count / (count - 1)
//       (torch keeps the UNBIASED batch variance in the running statistics). The running
//       statistics are graph inputs the TrainingSession owns, read by nothing else in the step
//       graph, so updating them in place is safe, like the optimizer state (optimizer_ops.cpp).
// The statistics are accumulated in double per channel (two passes: mean, then the centred sum of
// squares); a team splits the channels, so results do not depend on the team size.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct BnGeometry {
  int64_t n = 1, c = 1, inner = 1;  // X viewed as [n, c, inner]
  double eps = 1e-5;
};

// X is float32 of rank >= 2 and inputs 1..last are float32 [C].
Result<BnGeometry> bn_geometry(const NodeView& v, size_t per_channel_inputs) {
  static const char* kFields[] = {"X", "scale", "B", "mean", "var"};
  GRAPHI_RETURN_IF_ERROR(
      expect_inputs(v, 1 + per_channel_inputs, 1 + per_channel_inputs, 1 + per_channel_inputs));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  const TensorDesc& x = v.in(0);
  if (x.rank() < 2)
    return Status::invalid_graph(v.where + ": input X " + x.to_string() +
                                 " must be [N, C, ...] (rank >= 2)");
  BnGeometry g;
  g.n = x.shape[0];
  g.c = x.shape[1];
  for (int d = 2; d < x.rank(); ++d) g.inner *= x.shape[static_cast<size_t>(d)];
  for (size_t i = 1; i <= per_channel_inputs; ++i) {
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, i, kFields[i], {DType::kF32}));
    if (v.in(i).rank() != 1 || v.in(i).shape[0] != g.c)
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + kFields[i] +
                                   ") must be [" + std::to_string(g.c) + "], got " +
                                   v.in(i).to_string());
  }
  GRAPHI_ASSIGN_OR_RETURN(g.eps, graph::attr_float(v.node.attrs, v.where, "epsilon", 1e-5));
  if (!(g.eps >= 0)) return Status::invalid_graph(v.where + ": attribute 'epsilon' must be >= 0");
  return g;
}

Result<std::vector<TensorDesc>> infer_bn(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(BnGeometry g, bn_geometry(v, 4));
  (void)g;
  if (ctx.num_outputs != 1)
    return Status::unsupported(v.where + ": expects 1 output (Y); the training-mode outputs " +
                               "running_mean/running_var are not supported");
  return std::vector<TensorDesc>{v.in(0)};
}

Result<std::vector<TensorDesc>> infer_bn_training(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(BnGeometry g, bn_geometry(v, 2));
  if (ctx.num_outputs < 1 || ctx.num_outputs > 4)
    return Status::invalid_graph(v.where + ": expects 1 to 4 outputs (Y, Mean, InvStdDev, Var)");
  if (g.n * g.inner < 1) return Status::invalid_graph(v.where + ": no elements per channel");
  std::vector<TensorDesc> out{v.in(0)};
  for (size_t k = 1; k < ctx.num_outputs; ++k) out.push_back(TensorDesc{DType::kF32, {g.c}});
  return out;
}

CostHint cost_bn(const graph::Node&, std::span<const TensorDesc* const> in,
                 std::span<const TensorDesc* const> out) {
  return {4.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class BatchNormKernel final : public Kernel {
 public:
  explicit BatchNormKernel(bool training) : training_(training) {}
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, bn_geometry(NodeView::of_kernel(ctx), training_ ? 2 : 4));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* scale = static_cast<const float*>(io.inputs[1]);
    const auto* bias = static_cast<const float*>(io.inputs[2]);
    auto* y = static_cast<float*>(io.outputs[0]);
    auto out = [&](size_t k) {
      return io.outputs.size() > k ? static_cast<float*>(io.outputs[k]) : nullptr;
    };
    float *mean_out = out(1), *inv_out = out(2), *var_out = out(3);
    const int64_t plane = g_.c * g_.inner;
    auto [begin, end] = team_range(g_.c, team.ithr, team.nthr);
    for (int64_t c = begin; c < end; ++c) {
      double mean, var;
      if (training_) {
        double sum = 0;
        for (int64_t n = 0; n < g_.n; ++n) {
          const float* xr = x + n * plane + c * g_.inner;
          for (int64_t k = 0; k < g_.inner; ++k) sum += xr[k];
        }
        const double count = static_cast<double>(g_.n * g_.inner);
        mean = sum / count;
        double sq = 0;
        for (int64_t n = 0; n < g_.n; ++n) {
          const float* xr = x + n * plane + c * g_.inner;
          for (int64_t k = 0; k < g_.inner; ++k) {
            const double d = xr[k] - mean;
            sq += d * d;
          }
        }
        var = sq / count;
      } else {
        mean = static_cast<const float*>(io.inputs[3])[c];
        var = static_cast<const float*>(io.inputs[4])[c];
      }
      const double inv = 1.0 / std::sqrt(var + g_.eps);
      if (mean_out) mean_out[c] = static_cast<float>(mean);
      if (inv_out) inv_out[c] = static_cast<float>(inv);
      if (var_out) var_out[c] = static_cast<float>(var);
      const auto s = static_cast<float>(scale[c] * inv);
      const auto b = static_cast<float>(bias[c] - mean * scale[c] * inv);
      for (int64_t n = 0; n < g_.n; ++n) {
        const float* xr = x + n * plane + c * g_.inner;
        float* yr = y + n * plane + c * g_.inner;
        for (int64_t k = 0; k < g_.inner; ++k) yr[k] = xr[k] * s + b;
      }
    }
  }
  const char* name() const override {
    return training_ ? "batch_norm_training_f32" : "batch_norm_f32";
  }

 private:
  bool training_;
  BnGeometry g_;
};

std::unique_ptr<Kernel> make_bn() { return std::make_unique<BatchNormKernel>(false); }
std::unique_ptr<Kernel> make_bn_training() { return std::make_unique<BatchNormKernel>(true); }

// ---- running statistics, in place ----

struct StatsAttrs {
  double momentum = 0.9;
  int64_t count = 0;
};

Result<StatsAttrs> stats_attrs(const NodeView& v) {
  StatsAttrs a;
  GRAPHI_ASSIGN_OR_RETURN(a.momentum, graph::attr_float(v.node.attrs, v.where, "momentum", 0.9));
  GRAPHI_ASSIGN_OR_RETURN(a.count, graph::attr_int(v.node.attrs, v.where, "count", 0));
  if (!(a.momentum >= 0 && a.momentum <= 1))
    return Status::invalid_graph(v.where + ": attribute 'momentum' must be in [0, 1]");
  if (a.count < 1)
    return Status::invalid_graph(v.where + ": attribute 'count' (elements per channel) must be " +
                                 ">= 1");
  return a;
}

Result<std::vector<TensorDesc>> infer_stats_update(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  static const char* kFields[] = {"running_mean", "running_var", "Mean", "Var"};
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 4, 1u << 20, 4));
  for (size_t i = 0; i < 4; ++i) {
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, i, kFields[i], {DType::kF32}));
    if (v.in(i).rank() != 1 || v.in(i).shape != v.in(0).shape)
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + kFields[i] +
                                   ") " + v.in(i).to_string() + " must be a vector of the " +
                                   "running mean's shape " + v.in(0).to_string());
  }
  GRAPHI_RETURN_IF_ERROR(stats_attrs(v).status());
  if (ctx.num_outputs != 1) return Status::invalid_graph(v.where + ": expects 1 output (a token)");
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {}}};
}

CostHint cost_stats_update(const graph::Node&, std::span<const TensorDesc* const> in,
                           std::span<const TensorDesc* const>) {
  const double n = static_cast<double>(in[0]->numel());
  return {6 * n, 6 * 4 * n};
}

class StatsUpdateKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(a_, stats_attrs(NodeView::of_kernel(ctx)));
    c_ = ctx.inputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto* rm = static_cast<float*>(const_cast<void*>(io.inputs[0]));  // in place: see the top
    auto* rv = static_cast<float*>(const_cast<void*>(io.inputs[1]));
    const auto* mean = static_cast<const float*>(io.inputs[2]);
    const auto* var = static_cast<const float*>(io.inputs[3]);
    // As torch (aten batch_norm_cpu_update_stats_template): double arithmetic, stored as float.
    const double keep = a_.momentum, take = 1.0 - a_.momentum;
    const double unbias =
        a_.count > 1 ? static_cast<double>(a_.count) / static_cast<double>(a_.count - 1) : 1.0;
    auto [b, e] = team_range(c_, team.ithr, team.nthr);
    for (int64_t i = b; i < e; ++i) {
      rm[i] = static_cast<float>(keep * rm[i] + take * mean[i]);
      rv[i] = static_cast<float>(keep * rv[i] + take * (var[i] * unbias));
    }
    if (team.ithr == 0) *static_cast<float*>(io.outputs[0]) = 0.0f;
  }
  const char* name() const override { return "batch_norm_stats_update"; }

 private:
  StatsAttrs a_;
  int64_t c_ = 0;
};

std::unique_ptr<Kernel> make_stats_update() { return std::make_unique<StatsUpdateKernel>(); }

}  // namespace

void register_batch_norm_ops(Registry& r) {
  r.add({"BatchNormalization", infer_bn, cost_bn, false, {make_bn}});
  r.add({"BatchNormalizationTraining", infer_bn_training, cost_bn, false, {make_bn_training}});
  r.add(
      {"BatchNormStatsUpdate", infer_stats_update, cost_stats_update, false, {make_stats_update}});
}

}  // namespace graphi::ops
