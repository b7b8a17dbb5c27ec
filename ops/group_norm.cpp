// GroupNorm(X, scale, bias) -> Y (graphi's own op; attributes num_groups, epsilon, activation
// "Relu" or absent, block): the channels split into num_groups groups of C / G channels, each
// (image, group) normalized over its channels and pixels, then * scale[c] + bias[c] per channel,
// then the activation. PyTorch exports GroupNorm (and ONNX's GroupNormalization is imported) as
// Reshape + InstanceNormalization + Reshape + Mul + Add, which forces the activation out of a
// conv chain's blocked layout twice per norm (BiT: 97 reorders); graph/passes/group_norm_fusion.h
// makes this op of it, and graph/passes/blocked_layout.h runs it on the blocked tensor.
//
// X is [N, C, D1, ...] (a group is C / G * D1 * ... contiguous floats: ops/norm_rows.h's row
// loops), or with `block` = B channel-blocked [N, ceil(C/B), H, W, B] with scale and bias giving C
// (padding lanes zero in X and Y). Blocked, a group's channels are lanes of one or more blocks:
// the work unit is a run of lcm(C / G, B) channels, whole groups and whole blocks, so units are
// independent and the team splits (image, unit) pairs. Per unit: per-lane sums, the group means,
// per-lane centred squares, the group variances, then one pass y = (x - mean) * a + b, with a and
// b the per-channel products (ops/norm_rows.h's lane loops, per ISA). Statistics in double.
#include <cmath>
#include <numeric>

#include "ops/norm_rows.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct GroupNormShape {
  int64_t images = 0, channels = 0, groups = 1, pixels = 1;
  int64_t block = 0;  // 0: NCHW
  int64_t unit = 0;   // blocked: channels per work unit, lcm(C / G, B)
  double eps = 1e-5;
  bool relu = false;
  int64_t per_group() const { return channels / groups; }
  int64_t blocks() const { return block ? (channels + block - 1) / block : 0; }
  int64_t units() const { return block ? (channels + unit - 1) / unit : groups; }
};

Result<GroupNormShape> shape_of(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 3, 3));
  static const char* kFields[] = {"X", "scale", "bias"};
  for (size_t i = 0; i < 3; ++i)
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, i, kFields[i], {DType::kF32}));
  GroupNormShape s;
  GRAPHI_ASSIGN_OR_RETURN(s.groups, graph::attr_int(v.node.attrs, v.where, "num_groups", 0));
  GRAPHI_ASSIGN_OR_RETURN(s.eps, graph::attr_float(v.node.attrs, v.where, "epsilon", 1e-5));
  GRAPHI_ASSIGN_OR_RETURN(s.block, graph::attr_int(v.node.attrs, v.where, "block", 0));
  GRAPHI_ASSIGN_OR_RETURN(std::string act,
                          graph::attr_string(v.node.attrs, v.where, "activation", ""));
  if (act != "" && act != "Relu")
    return Status::unsupported(v.where + ": attribute 'activation' = '" + act +
                               "' is not supported (Relu or none)");
  s.relu = act == "Relu";
  const TensorDesc& x = v.in(0);
  s.channels = v.in(1).numel();
  if (s.block != 0) {
    if (s.block < 1 || x.rank() != 5 || x.shape[4] != s.block ||
        x.shape[1] != (s.channels + s.block - 1) / s.block)
      return Status::invalid_graph(
          v.where + ": input X must be channel-blocked [N, ceil(C/B), H, W, B] with B = " +
          std::to_string(s.block) + " (attribute 'block') and C = " + std::to_string(s.channels) +
          " (the scale's length), got " + x.to_string());
    s.pixels = x.shape[2] * x.shape[3];
  } else {
    if (x.rank() < 3 || x.shape[1] != s.channels)
      return Status::invalid_graph(
          v.where + ": input X must be [N, C, D1, ...] with C = " + std::to_string(s.channels) +
          " (the scale's length), got " + x.to_string());
    for (int d = 2; d < x.rank(); ++d) s.pixels *= x.shape[static_cast<size_t>(d)];
  }
  s.images = x.shape[0];
  if (s.groups < 1 || s.channels % s.groups != 0)
    return Status::invalid_graph(
        v.where + ": attribute 'num_groups' = " + std::to_string(s.groups) + " must divide the " +
        std::to_string(s.channels) + " channels of X " + x.to_string());
  for (size_t i : {size_t{1}, size_t{2}})
    if (v.in(i).shape != Shape{s.channels})
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + kFields[i] +
                                   ") must be float32[" + std::to_string(s.channels) +
                                   "] (one value per channel), got " + v.in(i).to_string());
  if (s.block) s.unit = std::lcm(s.per_group(), s.block);
  return s;
}

Result<std::vector<TensorDesc>> infer_group_norm(const graph::InferContext& ctx) {
  const NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(shape_of(v).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_group_norm(const graph::Node&, std::span<const TensorDesc* const>,
                         std::span<const TensorDesc* const> out) {
  // Three reads (sums, centred squares, the affine step) and one write.
  return {6.0 * static_cast<double>(out[0]->numel()), 4.0 * static_cast<double>(out[0]->bytes())};
}

class GroupNormKernel final : public Kernel {
 public:
  const char* name() const override { return "group_norm_f32"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(s_, shape_of(NodeView::of_kernel(ctx)));
    // Per thread: the unit's per-lane sums (double) and its means, a and b (float).
    per_thread_ =
        s_.block
            ? (static_cast<size_t>(s_.unit) * (sizeof(double) + 3 * sizeof(float)) + 63) / 64 * 64
            : 0;
    team_size_ = std::max(ctx.team_size, 1);
    return Status::ok();
  }

  size_t scratch_bytes() const override { return per_thread_ * static_cast<size_t>(team_size_); }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* scale = static_cast<const float*>(io.inputs[1]);
    const auto* bias = static_cast<const float*>(io.inputs[2]);
    auto* y = static_cast<float*>(io.outputs[0]);
    auto [first, last] = team_range(s_.images * s_.units(), team.ithr, team.nthr);
    if (!s_.block) {
      for (int64_t r = first; r < last; ++r) plain_group(x, scale, bias, y, r);
      return;
    }
    if (static_cast<size_t>(team.ithr + 1) * per_thread_ > team.scratch_bytes) {
      team.fail("GroupNorm: the executor's scratch is smaller than the kernel asked for",
                /*internal=*/true);
      return;
    }
    char* mine = static_cast<char*>(team.scratch) + static_cast<size_t>(team.ithr) * per_thread_;
    for (int64_t r = first; r < last; ++r) blocked_unit(x, scale, bias, y, r, mine);
  }

 private:
  // NCHW: group r of image r / G is per_group * pixels contiguous floats.
  void plain_group(const float* x, const float* scale, const float* bias, float* y,
                   int64_t r) const noexcept {
    const NormRowFns& f = norm_row_fns();
    const int64_t len = s_.per_group() * s_.pixels;
    const float* xg = x + r * len;
    float* yg = y + r * len;
    const auto n = static_cast<double>(len);
    const auto mean = static_cast<float>(f.sum(xg, len) / n);
    const auto inv = static_cast<float>(1.0 / std::sqrt(f.sq_dev(xg, len, mean) / n + s_.eps));
    const int64_t c0 = r % s_.groups * s_.per_group();
    for (int64_t c = 0; c < s_.per_group(); ++c) {
      float* yc = yg + c * s_.pixels;
      f.affine(xg + c * s_.pixels, yc, s_.pixels, mean, inv, nullptr, scale[c0 + c], nullptr,
               bias[c0 + c]);
      if (s_.relu)
        for (int64_t k = 0; k < s_.pixels; ++k) yc[k] = yc[k] < 0.0f ? 0.0f : yc[k];
    }
  }

  // Blocked: unit u of image i covers channels [u * unit, min(C, (u + 1) * unit)).
  void blocked_unit(const float* x, const float* scale, const float* bias, float* y, int64_t r,
                    char* scratch) const noexcept {
    const NormRowFns& f = norm_row_fns();
    const int64_t B = s_.block, cpg = s_.per_group();
    const int64_t i = r / s_.units(), u = r % s_.units();
    const int64_t c0 = u * s_.unit, c1 = std::min(s_.channels, c0 + s_.unit);
    const int64_t b0 = c0 / B, b1 = (c1 + B - 1) / B, lanes = (b1 - b0) * B;
    auto* sums = reinterpret_cast<double*>(scratch);
    auto* mean = reinterpret_cast<float*>(sums + s_.unit);
    float* a = mean + s_.unit;
    float* b = a + s_.unit;
    const int64_t block_floats = s_.pixels * B;
    const float* xu = x + (i * s_.blocks() + b0) * block_floats;
    float* yu = y + (i * s_.blocks() + b0) * block_floats;
    const auto n = static_cast<double>(cpg * s_.pixels);
    // Per-lane sums -> each lane's group mean (padding lanes: 0, a = b = 0 keeps them 0).
    std::fill(sums, sums + lanes, 0.0);
    for (int64_t k = 0; k < b1 - b0; ++k)
      f.lane_sum(xu + k * block_floats, s_.pixels, B, sums + k * B);
    for (int64_t l = 0; l < lanes; ++l) mean[l] = 0.0f;
    for (int64_t g = 0; g < (c1 - c0) / cpg; ++g) {
      double t = 0;
      for (int64_t l = g * cpg; l < (g + 1) * cpg; ++l) t += sums[l];
      for (int64_t l = g * cpg; l < (g + 1) * cpg; ++l) mean[l] = static_cast<float>(t / n);
    }
    std::fill(sums, sums + lanes, 0.0);
    for (int64_t k = 0; k < b1 - b0; ++k)
      f.lane_sq_dev(xu + k * block_floats, s_.pixels, B, mean + k * B, sums + k * B);
    for (int64_t l = c1 - c0; l < lanes; ++l) a[l] = b[l] = 0.0f;
    for (int64_t g = 0; g < (c1 - c0) / cpg; ++g) {
      double t = 0;
      for (int64_t l = g * cpg; l < (g + 1) * cpg; ++l) t += sums[l];
      const double inv = 1.0 / std::sqrt(t / n + s_.eps);
      for (int64_t l = g * cpg; l < (g + 1) * cpg; ++l) {
        a[l] = static_cast<float>(inv * scale[c0 + l]);
        b[l] = bias[c0 + l];
      }
    }
    for (int64_t k = 0; k < b1 - b0; ++k)
      f.lane_affine(xu + k * block_floats, yu + k * block_floats, s_.pixels, B, mean + k * B,
                    a + k * B, b + k * B, s_.relu);
  }

  GroupNormShape s_;
  size_t per_thread_ = 0;
  int team_size_ = 1;
};

std::unique_ptr<Kernel> make_group_norm() { return std::make_unique<GroupNormKernel>(); }

}  // namespace

void register_group_norm_op(Registry& r) {
  r.add({"GroupNorm", infer_group_norm, cost_group_norm, false, {make_group_norm}});
}

}  // namespace graphi::ops
