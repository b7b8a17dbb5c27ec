// LayerNormalization (ONNX opset 17: normalize over dims [axis, rank), then * Scale + B) and
// InstanceNormalization (normalize each (n, c) plane over the spatial dims, then * scale[c] +
// B[c]). Both are "rows of `len` elements, mean and variance per row": two passes (mean, then
// the centred sum of squares) of ops/norm_rows.h, whose float partial sums of at most 16
// elements per lane are added in double, so long rows keep float accuracy. LayerNormalization's
// optional Mean and InvStdDev outputs (shape X.shape[:axis] followed by ones) are written when the
// node declares them.
#include <cmath>

#include "ops/norm_rows.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Norm { kLayer, kInstance };

struct NormGeometry {
  int64_t rows = 1, len = 1;
  int64_t channels = 1;  // InstanceNorm: row r has channel r % channels
  bool has_bias = false;
  bool scalar_scale = false, scalar_bias = false;  // LayerNorm: one value for the whole row
  double eps = 1e-5;
  int axis = -1;  // LayerNorm: first normalized dim
};

Result<NormGeometry> norm_geometry(Norm kind, const NodeView& v, size_t outputs) {
  if (outputs < 1 || outputs > (kind == Norm::kLayer ? 3u : 1u))
    return Status::invalid_graph(v.where + ": has " + std::to_string(outputs) + " outputs (Y" +
                                 (kind == Norm::kLayer ? ", Mean, InvStdDev" : "") + ")");
  NormGeometry g;
  g.axis = -1;
  GRAPHI_ASSIGN_OR_RETURN(g.eps, graph::attr_float(v.node.attrs, v.where, "epsilon", 1e-5));
  if (kind == Norm::kLayer) {
    GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 3, 2));
  } else {
    GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 3, 3));
  }
  static const char* kFields[] = {"X", "Scale", "B"};
  for (size_t i = 0; i < v.inputs.size(); ++i)
    if (v.has_input(i)) GRAPHI_RETURN_IF_ERROR(expect_dtype(v, i, kFields[i], {DType::kF32}));
  const TensorDesc& x = v.in(0);
  g.has_bias = v.has_input(2);
  if (kind == Norm::kLayer) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, graph::attr_int(v.node.attrs, v.where, "axis", -1));
    GRAPHI_ASSIGN_OR_RETURN(int axis, normalize_axis(v, "axis", axis_attr, x));
    g.axis = axis;
    for (int d = 0; d < axis; ++d) g.rows *= x.shape[static_cast<size_t>(d)];
    for (int d = axis; d < x.rank(); ++d) g.len *= x.shape[static_cast<size_t>(d)];
    for (size_t i = 1; i < 3; ++i) {
      if (!v.has_input(i)) continue;
      const int64_t n = v.in(i).numel();
      if (n != g.len && n != 1)
        return Status::unsupported(v.where + ": input " + std::to_string(i) + " (" + kFields[i] +
                                   ") " + v.in(i).to_string() + " must have the " +
                                   std::to_string(g.len) +
                                   " elements of the normalized dims (or 1)");
      (i == 1 ? g.scalar_scale : g.scalar_bias) = n == 1;
    }
  } else {
    if (x.rank() < 3)
      return Status::invalid_graph(v.where + ": input X " + x.to_string() +
                                   " must be [N, C, D1, ...] (rank >= 3)");
    g.channels = x.shape[1];
    g.rows = x.shape[0] * x.shape[1];
    for (int d = 2; d < x.rank(); ++d) g.len *= x.shape[static_cast<size_t>(d)];
    for (size_t i = 1; i < 3; ++i)
      if (v.in(i).numel() != g.channels || v.in(i).rank() != 1)
        return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + kFields[i] +
                                     ") must be [" + std::to_string(g.channels) + "], got " +
                                     v.in(i).to_string());
  }
  return g;
}

template <Norm K>
Result<std::vector<TensorDesc>> infer_norm(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(NormGeometry g, norm_geometry(K, v, ctx.num_outputs));
  std::vector<TensorDesc> out{v.in(0)};
  if (ctx.num_outputs > 1) {  // Mean, InvStdDev: [d0 .. d(axis-1), 1, ..., 1]
    Shape s = v.in(0).shape;
    for (size_t d = static_cast<size_t>(g.axis); d < s.size(); ++d) s[d] = 1;
    for (size_t k = 1; k < ctx.num_outputs; ++k) out.push_back(TensorDesc{DType::kF32, s});
  }
  return out;
}

CostHint cost_norm(const graph::Node&, std::span<const TensorDesc* const> in,
                   std::span<const TensorDesc* const> out) {
  return {8.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class NormKernel final : public Kernel {
 public:
  explicit NormKernel(Norm k) : kind_(k) {}
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, norm_geometry(kind_, NodeView::of_kernel(ctx), ctx.outputs.size()));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(g_.rows, team.ithr, team.nthr);
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* scale = static_cast<const float*>(io.inputs[1]);
    const auto* bias = g_.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    auto* y = static_cast<float*>(io.outputs[0]);
    auto* mean_out = io.outputs.size() > 1 ? static_cast<float*>(io.outputs[1]) : nullptr;
    auto* inv_out = io.outputs.size() > 2 ? static_cast<float*>(io.outputs[2]) : nullptr;
    const NormRowFns& f = norm_row_fns();
    const double len = static_cast<double>(g_.len);
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * g_.len;
      float* yr = y + r * g_.len;
      const auto m = static_cast<float>(f.sum(xr, g_.len) / len);
      const double inv = 1.0 / std::sqrt(f.sq_dev(xr, g_.len, m) / len + g_.eps);
      if (mean_out) mean_out[r] = m;
      if (inv_out) inv_out[r] = static_cast<float>(inv);
      if (kind_ == Norm::kInstance) {
        const int64_t c = r % g_.channels;
        f.affine(xr, yr, g_.len, m, static_cast<float>(inv), nullptr, scale[c], nullptr, bias[c]);
      } else {
        f.affine(xr, yr, g_.len, m, static_cast<float>(inv), g_.scalar_scale ? nullptr : scale,
                 scale[0], bias && !g_.scalar_bias ? bias : nullptr, bias ? bias[0] : 0.0f);
      }
    }
  }
  const char* name() const override {
    return kind_ == Norm::kLayer ? "layer_norm_f32" : "instance_norm_f32";
  }

 private:
  Norm kind_;
  NormGeometry g_;
};

template <Norm K>
std::unique_ptr<Kernel> make_norm() {
  return std::make_unique<NormKernel>(K);
}

}  // namespace

void register_norm_ops(Registry& r) {
  r.add({"LayerNormalization",
         infer_norm<Norm::kLayer>,
         cost_norm,
         false,
         {make_norm<Norm::kLayer>}});
  r.add({"InstanceNormalization",
         infer_norm<Norm::kInstance>,
         cost_norm,
         false,
         {make_norm<Norm::kInstance>}});
}

}  // namespace graphi::ops
