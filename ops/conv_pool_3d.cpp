// Conv3D, ConvTranspose3D, MaxPool3D and AveragePool3D: ONNX Conv / ConvTranspose / MaxPool /
// AveragePool on a 5-D NCDHW input (video and volumetric models: nn.Conv3d, nn.ConvTranspose3d,
// F.max_pool3d, F.avg_pool3d), which the ONNX importer gives these names so that the 2-D graph
// passes (blocked layouts, merges) never see them; graph/passes/conv_fusion.h folds a Conv3D's
// batch norm into it and gives it its ReLU-like activation (attributes activation /
// activation_params, a oneDNN post-op). ONNX semantics: pads are [front, top, left, back,
// bottom, right]; both pools take dilations; auto_pad, ceil_mode and ConvTranspose's
// output_shape arrive as explicit pads and output_padding (graph/onnx/import_conv_pool.cpp).
//
// Kernels, in preference order: a oneDNN primitive (plain ncdhw for the caller; where oneDNN
// has no jit kernel for it, the activations staged through scratch in its own blocked layout),
// then a plain loop nest over output volumes split across the team.
//
// Conv3DNdhwc, ConvTranspose3DNdhwc, MaxPool3DNdhwc and AveragePool3DNdhwc are the same ops on
// channels-last tensors [N, D, H, W, C], the layout oneDNN's brgemm convolutions compute in on
// AVX-512 (graph/passes/blocked_layout.h keeps chains of them channels-last, transposing at the
// boundaries only, where onednn::prefers_channels_last_3d()). oneDNN only; an argument its fast
// kernels do not take channels-last is staged through scratch.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "ops/activations.h"
#include "ops/onednn.h"
#include "ops/pool_window.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

using Dims3 = std::array<int64_t, 3>;  // depth, height, width

// Geometry of one 3-D conv or pool.
struct Geometry3 {
  int64_t n = 0, c = 0, oc = 0;  // oc == c for pools
  Dims3 in{}, out{}, k{}, stride{1, 1, 1}, dil{1, 1, 1};
  Dims3 pad_begin{}, pad_end{};  // front, top, left / back, bottom, right
  int64_t group = 1;
  bool has_bias = false;
  bool has_sum = false;            // Conv3DNdhwc: input Z added before the activation
  ConvPostOp post;                 // Conv3D: attributes activation / activation_params
  bool count_include_pad = false;  // AveragePool3D only
  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
};

constexpr std::string_view kNdhwc = "Ndhwc";
bool is_channels_last(const graph::Node& node) {
  return node.op.size() > kNdhwc.size() &&
         node.op.compare(node.op.size() - kNdhwc.size(), kNdhwc.size(), kNdhwc) == 0;
}
// The op without its "Ndhwc" suffix.
std::string_view base_op(const graph::Node& node) {
  std::string_view op = node.op;
  if (is_channels_last(node)) op.remove_suffix(kNdhwc.size());
  return op;
}
bool is_conv3d(const graph::Node& node) { return base_op(node) == "Conv3D"; }
bool is_deconv3d(const graph::Node& node) { return base_op(node) == "ConvTranspose3D"; }
bool is_max3d(const graph::Node& node) { return base_op(node) == "MaxPool3D"; }

// The logical NCDHW desc of X (a channels-last [N, D, H, W, C] X permuted; an NCDHW X as is),
// in `storage`.
std::vector<const TensorDesc*> logical_inputs(const graph::Node& node,
                                              const std::vector<const TensorDesc*>& in,
                                              TensorDesc& storage) {
  std::vector<const TensorDesc*> out = in;
  if (!is_channels_last(node) || in.empty() || !in[0] || in[0]->rank() != 5) return out;
  const Shape& x = in[0]->shape;
  storage = TensorDesc{in[0]->dtype, {x[0], x[4], x[1], x[2], x[3]}};
  out[0] = &storage;
  return out;
}

Status check_x(const std::string& where, const TensorDesc* x) {
  if (!x) return Status::invalid_graph(where + ": missing input X");
  if (x->dtype != DType::kF32)
    return Status::invalid_graph(where + ": input X must be float32, got " + x->to_string());
  if (x->rank() != 5)
    return Status::invalid_graph(where + ": input X must be 5-D [N, C, D, H, W], got " +
                                 x->to_string());
  return Status::ok();
}

// strides, pads and dilations (when `with_dilations`) into g, then the output size.
Status read_window(const graph::Node& node, const std::string& where, bool with_dilations,
                   Geometry3& g) {
  GRAPHI_ASSIGN_OR_RETURN(std::string auto_pad,
                          graph::attr_string(node.attrs, where, "auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET")
    return Status::unsupported(where + ": attribute 'auto_pad' = '" + auto_pad +
                               "' is not supported (only NOTSET); give explicit 'pads'");
  GRAPHI_ASSIGN_OR_RETURN(auto strides,
                          window_ints(node, where, "strides", 3, 1, 1, "depth, height, width"));
  GRAPHI_ASSIGN_OR_RETURN(auto pads, window_ints(node, where, "pads", 6, 0, 0,
                                                 "front, top, left, back, bottom, right"));
  std::vector<int64_t> dil{1, 1, 1};
  if (with_dilations) {
    GRAPHI_ASSIGN_OR_RETURN(dil,
                            window_ints(node, where, "dilations", 3, 1, 1, "depth, height, width"));
  }
  for (size_t a = 0; a < 3; ++a) {
    g.stride[a] = strides[a];
    g.dil[a] = dil[a];
    g.pad_begin[a] = pads[a];
    g.pad_end[a] = pads[a + 3];
    // Corrupt dilations or pads (e.g. 2^62) must not overflow int64 in the window arithmetic.
    int64_t span, padded;
    if (__builtin_mul_overflow(g.dil[a], g.k[a] - 1, &span) ||
        __builtin_add_overflow(g.in[a], g.pad_begin[a], &padded) ||
        __builtin_add_overflow(padded, g.pad_end[a], &padded))
      return Status::invalid_graph(where + ": dilations " + shape_to_string(dil) + " or pads " +
                                   shape_to_string(pads) + " overflow int64 with kernel " +
                                   shape_to_string({g.k[0], g.k[1], g.k[2]}));
    span += 1;
    if (span > padded)
      return Status::invalid_graph(
          where + ": kernel " + shape_to_string({g.k[0], g.k[1], g.k[2]}) +
          (g.dil[a] > 1 ? " (dilated)" : "") + " is larger than the padded input along dim " +
          std::to_string(a + 2) + " (" + std::to_string(g.in[a]) + " plus pads " +
          std::to_string(g.pad_begin[a]) + " and " + std::to_string(g.pad_end[a]) + ")");
    g.out[a] = (padded - span) / g.stride[a] + 1;
  }
  return Status::ok();
}

Result<Geometry3> conv3d_geometry(const graph::Node& node, const std::vector<const TensorDesc*>& in,
                                  const std::string& where) {
  // Conv3DNdhwc may take a 4th input Z (graph/passes/conv_fusion.h fuse_conv_sums: a residual
  // sum), added before the activation.
  const size_t max_inputs = is_channels_last(node) ? 4 : 3;
  if (in.size() < 2 || in.size() > max_inputs || !in[1])
    return Status::invalid_graph(where + ": Conv takes inputs X, W and an optional B" +
                                 (max_inputs == 4 ? std::string(" and Z") : std::string()) +
                                 ", got " + std::to_string(in.size()) + " inputs");
  GRAPHI_RETURN_IF_ERROR(check_x(where, in[0]));
  const TensorDesc& x = *in[0];
  const TensorDesc& w = *in[1];
  if (w.dtype != DType::kF32 || w.rank() != 5)
    return Status::invalid_graph(
        where + ": input W must be float32 [M, C/group, kD, kH, kW], got " + w.to_string());
  Geometry3 g;
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.oc = w.shape[0];
  for (size_t a = 0; a < 3; ++a) {
    g.in[a] = x.shape[a + 2];
    g.k[a] = w.shape[a + 2];
  }
  GRAPHI_ASSIGN_OR_RETURN(g.group, graph::attr_int(node.attrs, where, "group", 1));
  if (g.group < 1 || g.c % g.group != 0 || g.oc % g.group != 0)
    return Status::invalid_graph(where + ": attribute 'group' = " + std::to_string(g.group) +
                                 " must be >= 1 and divide the input channels of X " +
                                 x.to_string() + " and the output channels of W " + w.to_string());
  if (w.shape[1] != g.c / g.group)
    return Status::invalid_graph(where + ": W " + w.to_string() + " has " +
                                 std::to_string(w.shape[1]) + " input channels per group, but X " +
                                 x.to_string() + " with group = " + std::to_string(g.group) +
                                 " has " + std::to_string(g.c / g.group));
  if (node.attrs.has("kernel_shape")) {
    GRAPHI_ASSIGN_OR_RETURN(auto ks, graph::attr_ints(node.attrs, where, "kernel_shape"));
    if (ks != std::vector<int64_t>{g.k[0], g.k[1], g.k[2]})
      return Status::invalid_graph(where + ": attribute 'kernel_shape' " + shape_to_string(ks) +
                                   " does not match W " + w.to_string());
  }
  if (in.size() >= 3 && in[2]) {
    const TensorDesc& b = *in[2];
    if (b.dtype != DType::kF32 || b.shape != Shape{g.oc})
      return Status::invalid_graph(where + ": input B must be float32[" + std::to_string(g.oc) +
                                   "] (one bias per output channel), got " + b.to_string());
    g.has_bias = true;
  }
  g.has_sum = in.size() == 4 && in[3];
  // Set by graph/passes/conv_fusion.h: activations oneDNN applies as a post-op.
  GRAPHI_ASSIGN_OR_RETURN(g.post, conv_post_op(node, where));
  GRAPHI_RETURN_IF_ERROR(read_window(node, where, true, g));
  return g;
}

// ConvTranspose3D: X [N, C, D, H, W], W [C, M/group, kD, kH, kW], optional B [M]; per spatial
// dim out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end.
// g.c / g.oc are C / M, g.in / g.out X's and Y's spatial dims.
struct Deconv3d {
  Geometry3 g;
  Dims3 out_pad{};
};

Result<Deconv3d> deconv3d_geometry(const graph::Node& node,
                                   const std::vector<const TensorDesc*>& in,
                                   const std::string& where) {
  if (in.size() < 2 || in.size() > 3 || !in[1])
    return Status::invalid_graph(where +
                                 ": ConvTranspose takes inputs X, W and an optional B, got " +
                                 std::to_string(in.size()) + " inputs");
  GRAPHI_RETURN_IF_ERROR(check_x(where, in[0]));
  if (node.attrs.has("output_shape"))
    return Status::unsupported(where +
                               ": attribute 'output_shape' is not supported; give 'pads' "
                               "and 'output_padding'");
  GRAPHI_ASSIGN_OR_RETURN(std::string auto_pad,
                          graph::attr_string(node.attrs, where, "auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET")
    return Status::unsupported(where + ": attribute 'auto_pad' = '" + auto_pad +
                               "' is not supported (only NOTSET); give explicit 'pads'");
  const TensorDesc& x = *in[0];
  const TensorDesc& w = *in[1];
  if (w.dtype != DType::kF32 || w.rank() != 5)
    return Status::invalid_graph(
        where + ": input W must be float32 [C, M/group, kD, kH, kW], got " + w.to_string());
  Deconv3d r;
  Geometry3& g = r.g;
  g.n = x.shape[0];
  g.c = x.shape[1];
  GRAPHI_ASSIGN_OR_RETURN(g.group, graph::attr_int(node.attrs, where, "group", 1));
  if (g.group < 1 || g.c % g.group != 0)
    return Status::invalid_graph(where + ": attribute 'group' = " + std::to_string(g.group) +
                                 " must be >= 1 and divide the input channels of X " +
                                 x.to_string());
  if (w.shape[0] != g.c)
    return Status::invalid_graph(where + ": W " + w.to_string() + " must have X's " +
                                 std::to_string(g.c) + " input channels first, X is " +
                                 x.to_string());
  g.oc = w.shape[1] * g.group;
  for (size_t a = 0; a < 3; ++a) {
    g.in[a] = x.shape[a + 2];
    g.k[a] = w.shape[a + 2];
  }
  if (node.attrs.has("kernel_shape")) {
    GRAPHI_ASSIGN_OR_RETURN(auto ks, graph::attr_ints(node.attrs, where, "kernel_shape"));
    if (ks != std::vector<int64_t>{g.k[0], g.k[1], g.k[2]})
      return Status::invalid_graph(where + ": attribute 'kernel_shape' " + shape_to_string(ks) +
                                   " does not match W " + w.to_string());
  }
  if (in.size() == 3 && in[2]) {
    const TensorDesc& b = *in[2];
    if (b.dtype != DType::kF32 || b.shape != Shape{g.oc})
      return Status::invalid_graph(where + ": input B must be float32[" + std::to_string(g.oc) +
                                   "] (one bias per output channel), got " + b.to_string());
    g.has_bias = true;
  }
  GRAPHI_ASSIGN_OR_RETURN(auto strides,
                          window_ints(node, where, "strides", 3, 1, 1, "depth, height, width"));
  GRAPHI_ASSIGN_OR_RETURN(auto pads, window_ints(node, where, "pads", 6, 0, 0,
                                                 "front, top, left, back, bottom, right"));
  GRAPHI_ASSIGN_OR_RETURN(auto dil,
                          window_ints(node, where, "dilations", 3, 1, 1, "depth, height, width"));
  GRAPHI_ASSIGN_OR_RETURN(
      auto out_pad, window_ints(node, where, "output_padding", 3, 0, 0, "depth, height, width"));
  for (size_t a = 0; a < 3; ++a) {
    g.stride[a] = strides[a];
    g.dil[a] = dil[a];
    g.pad_begin[a] = pads[a];
    g.pad_end[a] = pads[a + 3];
    r.out_pad[a] = out_pad[a];
    // Corrupt attributes (e.g. 2^62) must not overflow int64.
    int64_t full, span;
    if (__builtin_mul_overflow(g.stride[a], g.in[a] - 1, &full) ||
        __builtin_mul_overflow(g.dil[a], g.k[a] - 1, &span) ||
        __builtin_add_overflow(full, span + 1, &full) ||
        __builtin_add_overflow(full, r.out_pad[a], &full) || full > (int64_t{1} << 40))
      return Status::invalid_graph(where + ": strides " + shape_to_string(strides) +
                                   ", dilations " + shape_to_string(dil) + " or output_padding " +
                                   shape_to_string(out_pad) + " overflow with input " +
                                   x.to_string());
    g.out[a] = full - g.pad_begin[a] - g.pad_end[a];
    if (g.out[a] < 1)
      return Status::invalid_graph(where + ": pads " + shape_to_string(pads) +
                                   " leave no output along dim " + std::to_string(a + 2) +
                                   " (the full output is " + std::to_string(full) + ")");
  }
  return r;
}

Result<Geometry3> pool3d_geometry(const graph::Node& node, const std::vector<const TensorDesc*>& in,
                                  size_t num_outputs, const std::string& where) {
  if (in.size() != 1)
    return Status::invalid_graph(where + ": the pool takes exactly 1 input X, got " +
                                 std::to_string(in.size()));
  GRAPHI_RETURN_IF_ERROR(check_x(where, in[0]));
  if (num_outputs != 1)
    return Status::unsupported(where + ": the Indices output is not supported (only Y), got " +
                               std::to_string(num_outputs) +
                               " outputs; graphi's MaxPoolWithIndices computes both");
  GRAPHI_ASSIGN_OR_RETURN(int64_t ceil_mode, graph::attr_int(node.attrs, where, "ceil_mode", 0));
  if (ceil_mode != 0)
    return Status::unsupported(where + ": attribute 'ceil_mode' = " + std::to_string(ceil_mode) +
                               " is not supported (only 0)");
  const bool is_max = is_max3d(node);
  const TensorDesc& x = *in[0];
  Geometry3 g;
  g.n = x.shape[0];
  g.c = g.oc = x.shape[1];
  if (!node.attrs.has("kernel_shape"))
    return Status::invalid_graph(where + ": attribute 'kernel_shape' is missing");
  GRAPHI_ASSIGN_OR_RETURN(
      auto ks, window_ints(node, where, "kernel_shape", 3, 0, 1, "depth, height, width"));
  for (size_t a = 0; a < 3; ++a) {
    g.in[a] = x.shape[a + 2];
    g.k[a] = ks[a];
  }
  if (!is_max) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t cip,
                            graph::attr_int(node.attrs, where, "count_include_pad", 0));
    if (cip != 0 && cip != 1)
      return Status::invalid_graph(where + ": attribute 'count_include_pad' must be 0 or 1, got " +
                                   std::to_string(cip));
    g.count_include_pad = cip == 1;
  }
  GRAPHI_RETURN_IF_ERROR(read_window(node, where, true, g));
  // The dilated kernel's span (read_window checked it for overflow): a pad that reaches it would
  // put a whole window in the padding.
  const bool dilated = g.dil != Dims3{1, 1, 1};
  Dims3 span;
  for (size_t a = 0; a < 3; ++a) span[a] = (g.k[a] - 1) * g.dil[a] + 1;
  for (size_t a = 0; a < 3; ++a)
    if (g.pad_begin[a] >= span[a] || g.pad_end[a] >= span[a])
      return Status::unsupported(where + ": pads must each be smaller than the " +
                                 (dilated ? "dilated " : "") + "kernel " +
                                 shape_to_string({span[0], span[1], span[2]}) +
                                 " (a window would lie entirely in padding)");
  return g;
}

Result<std::vector<TensorDesc>> infer_conv_pool_3d(const graph::InferContext& ctx) {
  if ((is_conv3d(ctx.node) || is_deconv3d(ctx.node)) && ctx.num_outputs != 1)
    return Status::invalid_graph(ctx.where + ": the convolution has exactly 1 output, got " +
                                 std::to_string(ctx.num_outputs));
  TensorDesc logical;
  const auto in = logical_inputs(ctx.node, ctx.inputs, logical);
  Geometry3 g;
  if (is_deconv3d(ctx.node)) {
    GRAPHI_ASSIGN_OR_RETURN(Deconv3d d, deconv3d_geometry(ctx.node, in, ctx.where));
    g = d.g;
  } else {
    GRAPHI_ASSIGN_OR_RETURN(g, is_conv3d(ctx.node)
                                   ? conv3d_geometry(ctx.node, in, ctx.where)
                                   : pool3d_geometry(ctx.node, in, ctx.num_outputs, ctx.where));
  }
  if (is_channels_last(ctx.node)) {
    TensorDesc y{DType::kF32, {g.n, g.out[0], g.out[1], g.out[2], g.oc}};
    if (g.has_sum && *ctx.inputs[3] != y)
      return Status::invalid_graph(ctx.where + ": input Z " + ctx.inputs[3]->to_string() +
                                   " must have the output's shape and dtype " + y.to_string());
    return std::vector<TensorDesc>{std::move(y)};
  }
  return std::vector<TensorDesc>{
      TensorDesc{DType::kF32, {g.n, g.oc, g.out[0], g.out[1], g.out[2]}}};
}

CostHint cost_conv_pool_3d(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                           std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const double out = static_cast<double>(outputs[0]->numel());
  if (is_conv3d(node)) {
    const TensorDesc& w = *inputs[1];  // [M, C/group, kD, kH, kW]
    c.flops = 2.0 * out * static_cast<double>(w.numel()) / static_cast<double>(w.shape[0]);
    if (inputs.size() >= 3 && inputs[2]) c.flops += out;
    if (inputs.size() >= 4 && inputs[3]) c.flops += out;  // Z
  } else if (is_deconv3d(node)) {
    const TensorDesc& w = *inputs[1];  // [C, M/group, kD, kH, kW]: each input element to M/group
    c.flops = 2.0 * static_cast<double>(inputs[0]->numel()) * static_cast<double>(w.numel()) /
              static_cast<double>(w.shape[0]);
    if (inputs.size() >= 3 && inputs[2]) c.flops += out;
  } else {
    const graph::Attribute* ks = node.attrs.find("kernel_shape");
    const auto* k = ks ? std::get_if<std::vector<int64_t>>(ks) : nullptr;
    double window = 1;
    if (k)
      for (int64_t v : *k) window *= static_cast<double>(v);
    c.flops = out * window;
  }
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  c.bytes += static_cast<double>(outputs[0]->bytes());
  return c;
}

// The window fields of a oneDNN ConvSpec or PoolSpec (the same names): src spatial dims `src`,
// dst spatial dims `dst`.
template <typename Spec>
void set_window(Spec& s, const Geometry3& g, const Dims3& src, const Dims3& dst) {
  s.d = src[0], s.h = src[1], s.w = src[2];
  s.od = dst[0], s.oh = dst[1], s.ow = dst[2];
  s.kd = g.k[0], s.kh = g.k[1], s.kw = g.k[2];
  s.stride_d = g.stride[0], s.stride_h = g.stride[1], s.stride_w = g.stride[2];
  s.dilation_d = g.dil[0], s.dilation_h = g.dil[1], s.dilation_w = g.dil[2];
  s.pad_front = g.pad_begin[0], s.pad_top = g.pad_begin[1], s.pad_left = g.pad_begin[2];
  s.pad_back = g.pad_end[0], s.pad_bottom = g.pad_end[1], s.pad_right = g.pad_end[2];
}

// ---------------------------------------------------------------------------------------------
// Conv3D on oneDNN's convolution; ConvTranspose3D (`transpose`) on its deconvolution (group 1),
// described by the convolution it reverses, activations and weights staged through scratch in
// oneDNN's own layouts. The *Ndhwc variants take and give channels-last activations (constant
// weights packed once; activations staged only where oneDNN has no fast kernel for them).
class OnednnConv3DKernel final : public Kernel {
 public:
  OnednnConv3DKernel(bool transpose, bool channels_last)
      : transpose_(transpose), channels_last_(channels_last) {}
  const char* name() const override {
    if (channels_last_) return transpose_ ? "convtranspose3d_onednn_ndhwc" : "conv3d_onednn_ndhwc";
    return transpose_ ? "convtranspose3d_onednn" : "conv3d_onednn";
  }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }

  Status init(const KernelContext& ctx) override {
    TensorDesc logical;
    const auto in = logical_inputs(ctx.node, ctx.inputs, logical);
    if (transpose_) return init_transpose(ctx, in);
    GRAPHI_ASSIGN_OR_RETURN(g_, conv3d_geometry(ctx.node, in, ctx.where));
    onednn::ConvSpec s;
    s.n = g_.n;
    s.c = g_.c;
    s.oc = g_.oc;
    s.group = g_.group;
    s.has_bias = g_.has_bias;
    s.post = g_.post;
    set_window(s, g_, g_.in, g_.out);
    if (const Tensor* w = ctx.constant(1)) s.const_weights = w->data_as<float>();
    if (channels_last_) {
      s.channels_last = true;
      s.sum_input = g_.has_sum;
      return make_channels_last(s, ctx.team_size, onednn::make_conv);
    }
    // oneDNN serves ncdhw directly with a jit kernel for some shapes (few input channels); its
    // other ncdhw paths are im2col + GEMM and the reference code, where its own blocked layout
    // (reached through scratch) is faster. Weights given every run are staged too.
    s.staged = !s.const_weights;
    Result<std::unique_ptr<onednn::Primitive>> plain = onednn::make_conv(s, ctx.team_size, false);
    const bool plain_jit = plain.is_ok() && (*plain)->impl_name().find("gemm") == std::string::npos;
    if (!plain_jit) {
      s.staged = true;
      Result<std::unique_ptr<onednn::Primitive>> staged =
          onednn::make_conv(s, ctx.team_size, false);
      if (staged.is_ok()) plain = std::move(staged);
    }
    GRAPHI_ASSIGN_OR_RETURN(prim_, std::move(plain));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    const float* bias = g_.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    const float* z = g_.has_sum ? static_cast<const float*>(io.inputs[3]) : nullptr;
    const int64_t count = g_.n * g_.oc * g_.out_volume();
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]),
                        static_cast<const float*>(io.inputs[1]), bias, y, team.scratch, team.nthr,
                        team.scratch_bytes, sum_in_prim_ ? z : nullptr)) {
      onednn::fail_output(name(), y, count);
      return;
    }
    if (z && !sum_in_prim_)
      for (int64_t i = 0; i < count; ++i) y[i] = g_.post.apply(y[i] + z[i]);
  }

 private:
  // oneDNN's kernel on the channels-last activations as they are, or (where it has only its
  // reference code for them) staged through scratch into its own layouts. Z and the activation
  // after it are oneDNN post-ops, except on its im2col + GEMM convolutions, whose binary post-op
  // on ndhwc gave wrong sums in oneDNN 2.6 (depthwise and 1-channel convs, caught by
  // tests/ops/test_conv_pool_3d.cpp): there the run adds Z and applies the activation after.
  Status make_channels_last(
      onednn::ConvSpec s, int team_size,
      Result<std::unique_ptr<onednn::Primitive>> (*make)(const onednn::ConvSpec&, int, bool)) {
    s.staged = !s.const_weights;  // weights given every run go through scratch
    Result<std::unique_ptr<onednn::Primitive>> direct = make(s, team_size, false);
    if (direct.is_ok() &&
        (!s.sum_input || (*direct)->impl_name().find("gemm") == std::string::npos)) {
      prim_ = std::move(*direct);
      return Status::ok();
    }
    if (s.sum_input) {
      sum_in_prim_ = false;
      s.sum_input = false;
      s.post = ConvPostOp{};
    }
    direct = make(s, team_size, false);
    if (!direct.is_ok()) {
      s.staged = true;
      direct = make(s, team_size, true);
    }
    GRAPHI_ASSIGN_OR_RETURN(prim_, std::move(direct));
    return Status::ok();
  }

  Status init_transpose(const KernelContext& ctx, const std::vector<const TensorDesc*>& in) {
    GRAPHI_ASSIGN_OR_RETURN(Deconv3d d, deconv3d_geometry(ctx.node, in, ctx.where));
    g_ = d.g;
    if (g_.group != 1) return Status::unsupported("oneDNN deconvolution here: group 1 only");
    onednn::ConvSpec s;
    s.n = g_.n;
    s.c = g_.oc;  // the reversed convolution's input is ConvTranspose's output
    s.oc = g_.c;
    s.has_bias = g_.has_bias;
    set_window(s, g_, g_.out, g_.in);
    // output_padding extends the output at the end: the reversed convolution's end pads shrink.
    s.pad_back -= d.out_pad[0];
    s.pad_bottom -= d.out_pad[1];
    s.pad_right -= d.out_pad[2];
    if (s.pad_back < 0 || s.pad_bottom < 0 || s.pad_right < 0)
      return Status::unsupported("output_padding beyond the end pads");
    if (channels_last_) {
      s.channels_last = true;
      if (const Tensor* w = ctx.constant(1)) s.const_weights = w->data_as<float>();
      return make_channels_last(s, ctx.team_size, onednn::make_deconv);
    }
    s.staged = true;
    GRAPHI_ASSIGN_OR_RETURN(prim_, onednn::make_deconv(s, ctx.team_size, false));
    return Status::ok();
  }

  bool transpose_;
  bool channels_last_;
  bool sum_in_prim_ = true;  // Z (has_sum) is the primitive's binary post-op
  Geometry3 g_;
  std::unique_ptr<onednn::Primitive> prim_;
};

// ---------------------------------------------------------------------------------------------
// A depthwise Conv3DNdhwc (group = C = M: X3D's and channel-separated video nets' 3x3x3 convs).
// oneDNN 2.6 has no fast kernel for it (ndhwc: `jit:avx512_core` at ~2 GFLOP/s, ncdhw: im2col +
// a GEMM per group). Channels-last makes it a sum over the window taps of channel vectors: per
// output pixel and 16 channels, one vector load of X and of the (repacked) weights and one FMA
// per tap. The team splits the N * OD * OH output rows.

// One output row (all OW pixels, all C channels): y[ow][c] = act(bias[c] + z[ow][c] + sum over
// the taps inside X of x[id][ih][iw][c] * w[tap][c]). `wp` is [kD * kH * kW][cpad], cpad = C
// rounded up to 16, the padding zero.
struct DwRow {
  const float* x;  // image n of X: [D, H, W, C]
  const float* wp;
  const float* bias;  // [C] or nullptr
  const float* z;     // the row of Z: [OW, C], or nullptr
  float* y;           // the row: [OW, C]
  int64_t od, oh;
};

void dw_row_scalar(const Geometry3& g, int64_t cpad, const DwRow& r) noexcept {
  const int64_t c = g.c;
  for (int64_t ow = 0; ow < g.out[2]; ++ow)
    for (int64_t ch = 0; ch < c; ++ch) r.y[ow * c + ch] = r.bias ? r.bias[ch] : 0.0f;
  for (int64_t kz = 0; kz < g.k[0]; ++kz) {
    const int64_t iz = r.od * g.stride[0] - g.pad_begin[0] + kz * g.dil[0];
    if (iz < 0 || iz >= g.in[0]) continue;
    for (int64_t ky = 0; ky < g.k[1]; ++ky) {
      const int64_t iy = r.oh * g.stride[1] - g.pad_begin[1] + ky * g.dil[1];
      if (iy < 0 || iy >= g.in[1]) continue;
      for (int64_t kx = 0; kx < g.k[2]; ++kx) {
        const float* w = r.wp + ((kz * g.k[1] + ky) * g.k[2] + kx) * cpad;
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          const int64_t ix = ow * g.stride[2] - g.pad_begin[2] + kx * g.dil[2];
          if (ix < 0 || ix >= g.in[2]) continue;
          const float* xv = r.x + ((iz * g.in[1] + iy) * g.in[2] + ix) * c;
          float* yv = r.y + ow * c;
          for (int64_t ch = 0; ch < c; ++ch) yv[ch] += xv[ch] * w[ch];
        }
      }
    }
  }
  for (int64_t i = 0; i < g.out[2] * c; ++i) r.y[i] = g.post.apply(r.y[i] + (r.z ? r.z[i] : 0.0f));
}

// Bias is in acc already; adds Z, applies the activation and stores output pixel ow's 16
// channels from c0 (mask m).
__attribute__((target("avx512f"))) inline void dw_finish(const ConvPostOp& post, const DwRow& r,
                                                         int64_t c, __m512 acc, int64_t ow,
                                                         int64_t c0, __mmask16 m) noexcept {
  const __m512 zero = _mm512_setzero_ps();
  if (r.z) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, r.z + ow * c + c0));
  switch (post.kind) {
    case ConvActivation::kNone:
      break;
    case ConvActivation::kRelu:
      acc = _mm512_max_ps(acc, zero);
      break;
    case ConvActivation::kClip:
      acc =
          _mm512_min_ps(_mm512_set1_ps(post.beta), _mm512_max_ps(_mm512_set1_ps(post.alpha), acc));
      break;
    case ConvActivation::kLeakyRelu:
      acc = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(acc, zero, _CMP_GE_OQ),
                                 _mm512_mul_ps(acc, _mm512_set1_ps(post.alpha)), acc);
      break;
    default: {
      alignas(64) float v[16];
      _mm512_store_ps(v, acc);
      for (float& e : v) e = post.apply(e);
      acc = _mm512_load_ps(v);
    }
  }
  _mm512_mask_storeu_ps(r.y + ow * c + c0, m, acc);
}

// The same with 16 channels per AVX-512 vector (a masked last vector when C % 16 != 0), each
// output vector accumulated in a register over all its taps, then bias, Z and the activation
// applied there (NaN as ConvPostOp::apply: Relu maps it to 0, Clip and LeakyRelu keep it).
// Inside the row, 4 output pixels at a time whose windows lie within X's width: 4 independent
// FMA chains sharing each weight load (one chain waits on the FMA latency at every tap).
__attribute__((target("avx512f"))) void dw_row_avx512(const Geometry3& g, int64_t cpad,
                                                      const DwRow& r) noexcept {
  const int64_t c = g.c, sw = g.stride[2], dw = g.dil[2], pw = g.pad_begin[2];
  const __m512 zero = _mm512_setzero_ps();
  // The whole window of output pixel ow lies within X's width.
  auto inside = [&](int64_t ow) {
    return ow * sw - pw >= 0 && ow * sw - pw + (g.k[2] - 1) * dw < g.in[2];
  };
  for (int64_t ow = 0; ow < g.out[2];) {
    const bool quad = ow + 3 < g.out[2] && inside(ow) && inside(ow + 3);
    for (int64_t c0 = 0; c0 < c; c0 += 16) {
      const __mmask16 m = c - c0 >= 16 ? static_cast<__mmask16>(0xffff)
                                       : static_cast<__mmask16>((1u << (c - c0)) - 1);
      const __m512 b = r.bias ? _mm512_maskz_loadu_ps(m, r.bias + c0) : zero;
      __m512 a0 = b, a1 = b, a2 = b, a3 = b;
      for (int64_t kz = 0; kz < g.k[0]; ++kz) {
        const int64_t iz = r.od * g.stride[0] - g.pad_begin[0] + kz * g.dil[0];
        if (iz < 0 || iz >= g.in[0]) continue;
        for (int64_t ky = 0; ky < g.k[1]; ++ky) {
          const int64_t iy = r.oh * g.stride[1] - g.pad_begin[1] + ky * g.dil[1];
          if (iy < 0 || iy >= g.in[1]) continue;
          const float* xrow = r.x + (iz * g.in[1] + iy) * g.in[2] * c + c0;
          const float* wrow = r.wp + (kz * g.k[1] + ky) * g.k[2] * cpad + c0;
          if (quad) {
            const float* x0 = xrow + (ow * sw - pw) * c;
            for (int64_t kx = 0; kx < g.k[2]; ++kx) {
              const __m512 w = _mm512_loadu_ps(wrow + kx * cpad);
              const float* xp = x0 + kx * dw * c;
              a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xp), w, a0);
              a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xp + sw * c), w, a1);
              a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xp + 2 * sw * c), w, a2);
              a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xp + 3 * sw * c), w, a3);
            }
            continue;
          }
          for (int64_t kx = 0; kx < g.k[2]; ++kx) {
            const int64_t ix = ow * sw - pw + kx * dw;
            if (ix < 0 || ix >= g.in[2]) continue;
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xrow + ix * c),
                                 _mm512_loadu_ps(wrow + kx * cpad), a0);
          }
        }
      }
      dw_finish(g.post, r, c, a0, ow, c0, m);
      if (quad) {
        dw_finish(g.post, r, c, a1, ow + 1, c0, m);
        dw_finish(g.post, r, c, a2, ow + 2, c0, m);
        dw_finish(g.post, r, c, a3, ow + 3, c0, m);
      }
    }
    ow += quad ? 4 : 1;
  }
}

class DepthwiseConv3DNdhwcKernel final : public Kernel {
 public:
  const char* name() const override { return "dwconv3d_ndhwc"; }

  Status init(const KernelContext& ctx) override {
    TensorDesc logical;
    const auto in = logical_inputs(ctx.node, ctx.inputs, logical);
    GRAPHI_ASSIGN_OR_RETURN(g_, conv3d_geometry(ctx.node, in, ctx.where));
    if (g_.group != g_.c || g_.oc != g_.c)
      return Status::unsupported("not a depthwise convolution (group = C = M)");
    const Tensor* w = ctx.constant(1);
    if (!w) return Status::unsupported("weights given every run");
    // [C, 1, kD, kH, kW] -> [kD * kH * kW][cpad]: a tap's channels contiguous.
    cpad_ = (g_.c + 15) / 16 * 16;
    const int64_t taps = g_.k[0] * g_.k[1] * g_.k[2];
    wp_.assign(static_cast<size_t>(taps * cpad_), 0.0f);
    const float* src = w->data_as<float>();
    for (int64_t ch = 0; ch < g_.c; ++ch)
      for (int64_t t = 0; t < taps; ++t)
        wp_[static_cast<size_t>(t * cpad_ + ch)] = src[ch * taps + t];
    avx512_ = active_simd_isa() == SimdIsa::kAvx512;
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const Geometry3& g = g_;
    const float* x = static_cast<const float*>(io.inputs[0]);
    const float* bias = g.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    const float* z = g.has_sum ? static_cast<const float*>(io.inputs[3]) : nullptr;
    float* y = static_cast<float*>(io.outputs[0]);
    const int64_t row = g.out[2] * g.c;  // one output row's floats
    auto [r0, r1] = team_range(g.n * g.out[0] * g.out[1], team.ithr, team.nthr);
    for (int64_t rr = r0; rr < r1; ++rr) {
      const int64_t img = rr / (g.out[0] * g.out[1]), od = rr / g.out[1] % g.out[0],
                    oh = rr % g.out[1];
      const DwRow r{x + img * g.in_volume() * g.c,
                    wp_.data(),
                    bias,
                    z ? z + rr * row : nullptr,
                    y + rr * row,
                    od,
                    oh};
      if (avx512_)
        dw_row_avx512(g, cpad_, r);
      else
        dw_row_scalar(g, cpad_, r);
    }
  }

 private:
  Geometry3 g_;
  int64_t cpad_ = 0;
  std::vector<float> wp_;
  bool avx512_ = false;
};

// Direct convolution; the team splits the N * M output volumes.
class RefConv3DKernel final : public Kernel {
 public:
  const char* name() const override { return "conv3d_ref"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, conv3d_geometry(ctx.node, ctx.inputs, ctx.where));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const Geometry3& g = g_;
    const float* x = static_cast<const float*>(io.inputs[0]);
    const float* w = static_cast<const float*>(io.inputs[1]);
    const float* bias = g.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    float* y = static_cast<float*>(io.outputs[0]);
    const int64_t cpg = g.c / g.group, mpg = g.oc / g.group;
    const int64_t kvol = g.k[0] * g.k[1] * g.k[2];
    auto [p0, p1] = team_range(g.n * g.oc, team.ithr, team.nthr);
    for (int64_t vol = p0; vol < p1; ++vol) {
      const int64_t b = vol / g.oc, m = vol % g.oc, grp = m / mpg;
      float* yv = y + vol * g.out_volume();
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oy = 0; oy < g.out[1]; ++oy)
          for (int64_t ox = 0; ox < g.out[2]; ++ox) {
            float acc = bias ? bias[m] : 0.0f;
            for (int64_t ci = 0; ci < cpg; ++ci) {
              const float* xv = x + (b * g.c + grp * cpg + ci) * g.in_volume();
              const float* wk = w + (m * cpg + ci) * kvol;
              for (int64_t kz = 0; kz < g.k[0]; ++kz) {
                const int64_t iz = od * g.stride[0] - g.pad_begin[0] + kz * g.dil[0];
                if (iz < 0 || iz >= g.in[0]) continue;
                for (int64_t ky = 0; ky < g.k[1]; ++ky) {
                  const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dil[1];
                  if (iy < 0 || iy >= g.in[1]) continue;
                  for (int64_t kx = 0; kx < g.k[2]; ++kx) {
                    const int64_t ix = ox * g.stride[2] - g.pad_begin[2] + kx * g.dil[2];
                    if (ix < 0 || ix >= g.in[2]) continue;
                    acc += xv[(iz * g.in[1] + iy) * g.in[2] + ix] *
                           wk[(kz * g.k[1] + ky) * g.k[2] + kx];
                  }
                }
              }
            }
            yv[(od * g.out[1] + oy) * g.out[2] + ox] = g.post.apply(acc);
          }
    }
  }

 private:
  Geometry3 g_;
};

// Each input element scattered through the kernel window into its output volume; a thread owns
// whole (n, m) output volumes, so it needs no synchronization.
class RefConvTranspose3DKernel final : public Kernel {
 public:
  const char* name() const override { return "convtranspose3d_ref"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(Deconv3d d, deconv3d_geometry(ctx.node, ctx.inputs, ctx.where));
    g_ = d.g;
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const Geometry3& g = g_;
    const float* x = static_cast<const float*>(io.inputs[0]);
    const float* w = static_cast<const float*>(io.inputs[1]);
    const float* bias = g.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    float* y = static_cast<float*>(io.outputs[0]);
    const int64_t cpg = g.c / g.group, mpg = g.oc / g.group;
    const int64_t kvol = g.k[0] * g.k[1] * g.k[2];
    auto [p0, p1] = team_range(g.n * g.oc, team.ithr, team.nthr);
    for (int64_t vol = p0; vol < p1; ++vol) {
      const int64_t b = vol / g.oc, m = vol % g.oc, grp = m / mpg;
      float* yv = y + vol * g.out_volume();
      std::fill(yv, yv + g.out_volume(), bias ? bias[m] : 0.0f);
      for (int64_t ci = grp * cpg; ci < (grp + 1) * cpg; ++ci) {
        const float* xv = x + (b * g.c + ci) * g.in_volume();
        const float* wk = w + (ci * mpg + m % mpg) * kvol;
        for (int64_t iz = 0; iz < g.in[0]; ++iz)
          for (int64_t iy = 0; iy < g.in[1]; ++iy)
            for (int64_t ix = 0; ix < g.in[2]; ++ix) {
              const float v = xv[(iz * g.in[1] + iy) * g.in[2] + ix];
              for (int64_t kz = 0; kz < g.k[0]; ++kz) {
                const int64_t oz = iz * g.stride[0] - g.pad_begin[0] + kz * g.dil[0];
                if (oz < 0 || oz >= g.out[0]) continue;
                for (int64_t ky = 0; ky < g.k[1]; ++ky) {
                  const int64_t oy = iy * g.stride[1] - g.pad_begin[1] + ky * g.dil[1];
                  if (oy < 0 || oy >= g.out[1]) continue;
                  for (int64_t kx = 0; kx < g.k[2]; ++kx) {
                    const int64_t ox = ix * g.stride[2] - g.pad_begin[2] + kx * g.dil[2];
                    if (ox < 0 || ox >= g.out[2]) continue;
                    yv[(oz * g.out[1] + oy) * g.out[2] + ox] +=
                        v * wk[(kz * g.k[1] + ky) * g.k[2] + kx];
                  }
                }
              }
            }
      }
    }
  }

 private:
  Geometry3 g_;
};

// ---------------------------------------------------------------------------------------------
class OnednnPool3DKernel final : public Kernel {
 public:
  explicit OnednnPool3DKernel(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }

  Status init(const KernelContext& ctx) override {
    TensorDesc logical;
    const auto in = logical_inputs(ctx.node, ctx.inputs, logical);
    GRAPHI_ASSIGN_OR_RETURN(g_, pool3d_geometry(ctx.node, in, ctx.outputs.size(), ctx.where));
    onednn::PoolSpec s;
    s.kind = is_max3d(ctx.node)     ? onednn::PoolKind::kMax
             : g_.count_include_pad ? onednn::PoolKind::kAvgIncludePad
                                    : onednn::PoolKind::kAvgExcludePad;
    // As in 2-D (ops/conv_pool.cpp): dilated average pooling runs graphi's loop (blocked_layout
    // keeps such a pool NCDHW).
    if (s.kind != onednn::PoolKind::kMax && g_.dil != Dims3{1, 1, 1})
      return Status::unsupported("oneDNN pooling here: no dilated average pooling");
    s.n = g_.n;
    s.c = g_.c;
    set_window(s, g_, g_.in, g_.out);
    if (is_channels_last(ctx.node)) {
      // oneDNN's jit pooling reads ndhwc; staged where it has only its reference code for it.
      s.channels_last = true;
      Result<std::unique_ptr<onednn::Primitive>> direct =
          onednn::make_pool(s, ctx.team_size, false);
      if (!direct.is_ok()) {
        s.staged = true;
        direct = onednn::make_pool(s, ctx.team_size, true);
      }
      GRAPHI_ASSIGN_OR_RETURN(prim_, std::move(direct));
      return Status::ok();
    }
    // oneDNN 2.6's jit pooling on ncdhw took 4 ms for a 1x2x2 max pool of [1, 32, 8, 56, 56]
    // here, its nCdhw16c pooling with the two reorders through scratch ~20x less: both are made
    // and the faster one (best of interleaved runs) kept; staged where it cannot be measured.
    Result<std::unique_ptr<onednn::Primitive>> plain = onednn::make_pool(s, ctx.team_size, false);
    s.staged = true;
    Result<std::unique_ptr<onednn::Primitive>> staged = onednn::make_pool(s, ctx.team_size, false);
    if (plain.is_ok() && staged.is_ok()) {
      const std::vector<double> ms = onednn::best_run_ms({plain->get(), staged->get()}, 3, 2.0, 20);
      prim_ = ms.size() == 2 && ms[0] < ms[1] ? std::move(*plain) : std::move(*staged);
      return Status::ok();
    }
    GRAPHI_ASSIGN_OR_RETURN(prim_, staged.is_ok() ? std::move(staged) : std::move(plain));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]), nullptr, nullptr, y, team.scratch,
                        team.nthr, team.scratch_bytes))
      onednn::fail_output(name_, y, g_.n * g_.c * g_.out_volume());
  }

 private:
  const char* name_;
  Geometry3 g_;
  std::unique_ptr<onednn::Primitive> prim_;
};

// Window loops; the team splits the N * C volumes.
class RefPool3DKernel final : public Kernel {
 public:
  RefPool3DKernel(const char* name, bool is_max) : name_(name), is_max_(is_max) {}
  const char* name() const override { return name_; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_,
                            pool3d_geometry(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const Geometry3& g = g_;
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    auto [p0, p1] = team_range(g.n * g.c, team.ithr, team.nthr);
    for (int64_t vol = p0; vol < p1; ++vol) {
      const float* xv = x + vol * g.in_volume();
      float* yv = y + vol * g.out_volume();
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oy = 0; oy < g.out[1]; ++oy)
          for (int64_t ox = 0; ox < g.out[2]; ++ox) {
            float acc = is_max_ ? -std::numeric_limits<float>::infinity() : 0.0f;
            int64_t count = 0;  // taps inside the input
            for (int64_t kz = 0; kz < g.k[0]; ++kz) {
              const int64_t iz = od * g.stride[0] - g.pad_begin[0] + kz * g.dil[0];
              if (iz < 0 || iz >= g.in[0]) continue;
              for (int64_t ky = 0; ky < g.k[1]; ++ky) {
                const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dil[1];
                if (iy < 0 || iy >= g.in[1]) continue;
                for (int64_t kx = 0; kx < g.k[2]; ++kx) {
                  const int64_t ix = ox * g.stride[2] - g.pad_begin[2] + kx * g.dil[2];
                  if (ix < 0 || ix >= g.in[2]) continue;
                  const float v = xv[(iz * g.in[1] + iy) * g.in[2] + ix];
                  acc = is_max_ ? std::max(acc, v) : acc + v;
                  ++count;
                }
              }
            }
            // Without ceil_mode a window never leaves the padded input, so include-pad divides
            // by the whole kernel; exclude-pad counts the real elements only.
            if (!is_max_)
              acc /= static_cast<float>(g.count_include_pad ? g.k[0] * g.k[1] * g.k[2] : count);
            yv[(od * g.out[1] + oy) * g.out[2] + ox] = acc;
          }
    }
  }

 private:
  const char* name_;
  bool is_max_;
  Geometry3 g_;
};

}  // namespace

void register_conv_pool_3d_ops(Registry& r) {
  r.add(OpDef{"Conv3D",
              infer_conv_pool_3d,
              cost_conv_pool_3d,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                 return std::make_unique<OnednnConv3DKernel>(false, false);
               },
               []() -> std::unique_ptr<Kernel> { return std::make_unique<RefConv3DKernel>(); }}});
  r.add(OpDef{
      "ConvTranspose3D",
      infer_conv_pool_3d,
      cost_conv_pool_3d,
      false,
      {[]() -> std::unique_ptr<Kernel> {
         return std::make_unique<OnednnConv3DKernel>(true, false);
       },
       []() -> std::unique_ptr<Kernel> { return std::make_unique<RefConvTranspose3DKernel>(); }}});
  r.add(OpDef{"MaxPool3D",
              infer_conv_pool_3d,
              cost_conv_pool_3d,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                 return std::make_unique<OnednnPool3DKernel>("maxpool3d_onednn");
               },
               []() -> std::unique_ptr<Kernel> {
                 return std::make_unique<RefPool3DKernel>("maxpool3d_ref", true);
               }}});
  r.add(OpDef{"AveragePool3D",
              infer_conv_pool_3d,
              cost_conv_pool_3d,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                 return std::make_unique<OnednnPool3DKernel>("avgpool3d_onednn");
               },
               []() -> std::unique_ptr<Kernel> {
                 return std::make_unique<RefPool3DKernel>("avgpool3d_ref", false);
               }}});
  // The channels-last variants of graph/passes/blocked_layout.h: oneDNN only (its reference
  // implementation where it has nothing else: slow but correct).
  r.add(OpDef{
      "Conv3DNdhwc",
      infer_conv_pool_3d,
      cost_conv_pool_3d,
      false,
      {[]() -> std::unique_ptr<Kernel> { return std::make_unique<DepthwiseConv3DNdhwcKernel>(); },
       []() -> std::unique_ptr<Kernel> {
         return std::make_unique<OnednnConv3DKernel>(false, true);
       }}});
  r.add(OpDef{"ConvTranspose3DNdhwc",
              infer_conv_pool_3d,
              cost_conv_pool_3d,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                return std::make_unique<OnednnConv3DKernel>(true, true);
              }}});
  r.add(OpDef{"MaxPool3DNdhwc",
              infer_conv_pool_3d,
              cost_conv_pool_3d,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                return std::make_unique<OnednnPool3DKernel>("maxpool3d_onednn_ndhwc");
              }}});
  r.add(OpDef{"AveragePool3DNdhwc",
              infer_conv_pool_3d,
              cost_conv_pool_3d,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                return std::make_unique<OnednnPool3DKernel>("avgpool3d_onednn_ndhwc");
              }}});
}

}  // namespace graphi::ops
