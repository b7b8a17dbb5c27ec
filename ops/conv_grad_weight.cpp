// ConvGradWeight(X, dY) -> dW: the weight gradient of a 2-D (NCHW) Conv with group 1, attributes
// strides, pads, dilations (as the Conv's) and kernel_shape [kH, kW] (required):
//   dW[o, c, kh, kw] = sum over n, oh, ow of dY[n, o, oh, ow] * X[n, c, oh*s - p + kh*d, ...].
// A gradient-only op: the Conv rule of ops/gradients.cpp emits it. oneDNN's convolution
// backward-weights primitive (created once at init) runs it; a direct loop takes the shapes
// oneDNN serves only with its reference code.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>

#include "ops/conv_algorithm.h"
#include "ops/onednn.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct GradGeom {
  onednn::ConvSpec s;  // the forward convolution X -> Y
};

Result<GradGeom> grad_geom(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "dY", {DType::kF32}));
  const TensorDesc &x = v.in(0), &dy = v.in(1);
  if (x.rank() != 4 || dy.rank() != 4 || x.shape[0] != dy.shape[0])
    return Status::invalid_graph(v.where + ": X and dY must be NCHW with equal N, got " +
                                 x.to_string() + " and " + dy.to_string());
  const auto& a = v.node.attrs;
  GRAPHI_ASSIGN_OR_RETURN(int64_t group, graph::attr_int(a, v.where, "group", 1));
  if (group != 1)
    return Status::unsupported(v.where + ": attribute 'group' = " + std::to_string(group) +
                               " is not supported (only 1)");
  GRAPHI_ASSIGN_OR_RETURN(auto k, graph::attr_ints(a, v.where, "kernel_shape"));
  GRAPHI_ASSIGN_OR_RETURN(auto st, graph::attr_ints(a, v.where, "strides", {1, 1}));
  GRAPHI_ASSIGN_OR_RETURN(auto dl, graph::attr_ints(a, v.where, "dilations", {1, 1}));
  GRAPHI_ASSIGN_OR_RETURN(auto pd, graph::attr_ints(a, v.where, "pads", {0, 0, 0, 0}));
  bool ok = k.size() == 2 && st.size() == 2 && dl.size() == 2 && pd.size() == 4;
  for (size_t i = 0; ok && i < 2; ++i) ok = k[i] >= 1 && st[i] >= 1 && dl[i] >= 1;
  for (size_t i = 0; ok && i < 4; ++i) ok = pd[i] >= 0;
  if (!ok)
    return Status::invalid_graph(v.where +
                                 ": kernel_shape, strides, dilations need 2 ints >= 1 and pads "
                                 "4 ints >= 0, got kernel_shape " +
                                 ints_to_string(k) + ", strides " + ints_to_string(st) +
                                 ", dilations " + ints_to_string(dl) + ", pads " +
                                 ints_to_string(pd));
  GradGeom g;
  onednn::ConvSpec& s = g.s;
  s.n = x.shape[0], s.c = x.shape[1], s.h = x.shape[2], s.w = x.shape[3];
  s.oc = dy.shape[1], s.oh = dy.shape[2], s.ow = dy.shape[3];
  s.kh = k[0], s.kw = k[1];
  s.stride_h = st[0], s.stride_w = st[1], s.dilation_h = dl[0], s.dilation_w = dl[1];
  s.pad_top = pd[0], s.pad_left = pd[1], s.pad_bottom = pd[2], s.pad_right = pd[3];
  const int64_t oh = (s.h + pd[0] + pd[2] - (k[0] - 1) * dl[0] - 1) / st[0] + 1;
  const int64_t ow = (s.w + pd[1] + pd[3] - (k[1] - 1) * dl[1] - 1) / st[1] + 1;
  if (oh != s.oh || ow != s.ow)
    return Status::invalid_graph(
        v.where + ": dY " + dy.to_string() + " is not the Conv output of X " + x.to_string() +
        " with these attributes (spatial " + std::to_string(oh) + " x " + std::to_string(ow) + ")");
  return g;
}

Result<std::vector<TensorDesc>> infer_conv_grad_weight(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(GradGeom g, grad_geom(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {g.s.oc, g.s.c, g.s.kh, g.s.kw}}};
}

CostHint cost_conv_grad_weight(const graph::Node&, std::span<const TensorDesc* const> in,
                               std::span<const TensorDesc* const> out) {
  const TensorDesc& w = *out[0];
  return {2.0 * static_cast<double>(in[1]->numel() * w.shape[1] * w.shape[2] * w.shape[3]),
          static_cast<double>(in[0]->bytes() + in[1]->bytes() + w.bytes())};
}

// The definition as a loop; a thread owns whole (o, c) kernel planes.
class ConvGradWeightKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, grad_geom(NodeView::of_kernel(ctx)));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const onednn::ConvSpec& s = g_.s;
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* dy = static_cast<const float*>(io.inputs[1]);
    auto* dw = static_cast<float*>(io.outputs[0]);
    auto [begin, end] = team_range(s.oc * s.c, team.ithr, team.nthr);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t o = p / s.c, c = p % s.c;
      for (int64_t kh = 0; kh < s.kh; ++kh)
        for (int64_t kw = 0; kw < s.kw; ++kw) {
          float acc = 0.0f;
          for (int64_t n = 0; n < s.n; ++n) {
            const float* xp = x + (n * s.c + c) * s.h * s.w;
            const float* yp = dy + (n * s.oc + o) * s.oh * s.ow;
            for (int64_t oh = 0; oh < s.oh; ++oh) {
              const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
              if (ih < 0 || ih >= s.h) continue;
              for (int64_t ow = 0; ow < s.ow; ++ow) {
                const int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
                if (iw < 0 || iw >= s.w) continue;
                acc += yp[oh * s.ow + ow] * xp[ih * s.w + iw];
              }
            }
          }
          dw[(p * s.kh + kh) * s.kw + kw] = acc;
        }
    }
  }
  const char* name() const override { return "conv_grad_weight_direct"; }

 private:
  GradGeom g_;
};

// oneDNN's convolution backward-weights, created once at init; X and dY are read in place.
class OnednnConvGradWeightKernel final : public Kernel {
 public:
  const char* name() const override { return "conv_grad_weight_onednn"; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, grad_geom(NodeView::of_kernel(ctx)));
    onednn::ConvSpec s = g_.s;
    s.staged = true;  // oneDNN's blocked layouts through scratch (nchw im2col + GEMM is slower)
    GRAPHI_ASSIGN_OR_RETURN(
        prim_, make_fastest_conv(s, ctx.team_size, false, onednn::make_conv_bwd_weights,
                                 "conv_bwd_weights"));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* dw = static_cast<float*>(io.outputs[0]);
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]),
                        static_cast<const float*>(io.inputs[1]), nullptr, dw, team.scratch)) {
      std::fprintf(stderr, "graphi: %s: oneDNN execution failed; output set to NaN\n", name());
      std::fill(dw, dw + g_.s.oc * g_.s.c * g_.s.kh * g_.s.kw,
                std::numeric_limits<float>::quiet_NaN());
    }
  }

 private:
  GradGeom g_;
  std::unique_ptr<onednn::Primitive> prim_;
};

std::unique_ptr<Kernel> make_conv_grad_weight() { return std::make_unique<ConvGradWeightKernel>(); }
std::unique_ptr<Kernel> make_onednn_conv_grad_weight() {
  return std::make_unique<OnednnConvGradWeightKernel>();
}

}  // namespace

void register_conv_grad_weight_op(Registry& r) {
  r.add({"ConvGradWeight",
         infer_conv_grad_weight,
         cost_conv_grad_weight,
         false,
         {make_onednn_conv_grad_weight, make_conv_grad_weight}});
}

}  // namespace graphi::ops
