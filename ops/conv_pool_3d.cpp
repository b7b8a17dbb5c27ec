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
#include <algorithm>
#include <array>
#include <limits>

#include "ops/onednn.h"
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
  ConvPostOp post;                 // Conv3D: attributes activation / activation_params
  bool count_include_pad = false;  // AveragePool3D only
  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
};

bool is_conv3d(const graph::Node& node) { return node.op == "Conv3D"; }
bool is_deconv3d(const graph::Node& node) { return node.op == "ConvTranspose3D"; }

Status check_x(const std::string& where, const TensorDesc* x) {
  if (!x) return Status::invalid_graph(where + ": missing input X");
  if (x->dtype != DType::kF32)
    return Status::invalid_graph(where + ": input X must be float32, got " + x->to_string());
  if (x->rank() != 5)
    return Status::invalid_graph(where + ": input X must be 5-D [N, C, D, H, W], got " +
                                 x->to_string());
  return Status::ok();
}

// An INTS attribute of `count` values >= `min`, or `dflt` when absent.
Result<std::vector<int64_t>> ints_attr(const graph::Node& node, const std::string& where,
                                       const char* name, size_t count, int64_t dflt, int64_t min,
                                       const char* what) {
  GRAPHI_ASSIGN_OR_RETURN(
      auto v, graph::attr_ints(node.attrs, where, name, std::vector<int64_t>(count, dflt)));
  bool ok = v.size() == count;
  for (int64_t x : v) ok = ok && x >= min;
  if (!ok)
    return Status::invalid_graph(where + ": attribute '" + name + "' must be " +
                                 std::to_string(count) + " ints >= " + std::to_string(min) + " " +
                                 what + ", got " + shape_to_string(v));
  return v;
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
                          ints_attr(node, where, "strides", 3, 1, 1, "[depth, height, width]"));
  GRAPHI_ASSIGN_OR_RETURN(auto pads, ints_attr(node, where, "pads", 6, 0, 0,
                                               "[front, top, left, back, bottom, right]"));
  std::vector<int64_t> dil{1, 1, 1};
  if (with_dilations) {
    GRAPHI_ASSIGN_OR_RETURN(dil,
                            ints_attr(node, where, "dilations", 3, 1, 1, "[depth, height, width]"));
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
  if (in.size() < 2 || in.size() > 3 || !in[1])
    return Status::invalid_graph(where + ": Conv takes inputs X, W and an optional B, got " +
                                 std::to_string(in.size()) + " inputs");
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
  if (in.size() == 3 && in[2]) {
    const TensorDesc& b = *in[2];
    if (b.dtype != DType::kF32 || b.shape != Shape{g.oc})
      return Status::invalid_graph(where + ": input B must be float32[" + std::to_string(g.oc) +
                                   "] (one bias per output channel), got " + b.to_string());
    g.has_bias = true;
  }
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
                          ints_attr(node, where, "strides", 3, 1, 1, "[depth, height, width]"));
  GRAPHI_ASSIGN_OR_RETURN(auto pads, ints_attr(node, where, "pads", 6, 0, 0,
                                               "[front, top, left, back, bottom, right]"));
  GRAPHI_ASSIGN_OR_RETURN(auto dil,
                          ints_attr(node, where, "dilations", 3, 1, 1, "[depth, height, width]"));
  GRAPHI_ASSIGN_OR_RETURN(
      auto out_pad, ints_attr(node, where, "output_padding", 3, 0, 0, "[depth, height, width]"));
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
  const bool is_max = node.op == "MaxPool3D";
  const TensorDesc& x = *in[0];
  Geometry3 g;
  g.n = x.shape[0];
  g.c = g.oc = x.shape[1];
  if (!node.attrs.has("kernel_shape"))
    return Status::invalid_graph(where + ": attribute 'kernel_shape' is missing");
  GRAPHI_ASSIGN_OR_RETURN(
      auto ks, ints_attr(node, where, "kernel_shape", 3, 0, 1, "[depth, height, width]"));
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
  if (is_deconv3d(ctx.node)) {
    GRAPHI_ASSIGN_OR_RETURN(Deconv3d d, deconv3d_geometry(ctx.node, ctx.inputs, ctx.where));
    return std::vector<TensorDesc>{
        TensorDesc{DType::kF32, {d.g.n, d.g.oc, d.g.out[0], d.g.out[1], d.g.out[2]}}};
  }
  GRAPHI_ASSIGN_OR_RETURN(Geometry3 g,
                          is_conv3d(ctx.node)
                              ? conv3d_geometry(ctx.node, ctx.inputs, ctx.where)
                              : pool3d_geometry(ctx.node, ctx.inputs, ctx.num_outputs, ctx.where));
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
// oneDNN's own layouts.
class OnednnConv3DKernel final : public Kernel {
 public:
  explicit OnednnConv3DKernel(bool transpose) : transpose_(transpose) {}
  const char* name() const override {
    return transpose_ ? "convtranspose3d_onednn" : "conv3d_onednn";
  }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }

  Status init(const KernelContext& ctx) override {
    if (transpose_) return init_transpose(ctx);
    GRAPHI_ASSIGN_OR_RETURN(g_, conv3d_geometry(ctx.node, ctx.inputs, ctx.where));
    onednn::ConvSpec s;
    s.n = g_.n;
    s.c = g_.c;
    s.oc = g_.oc;
    s.group = g_.group;
    s.has_bias = g_.has_bias;
    s.post = g_.post;
    set_window(s, g_, g_.in, g_.out);
    if (const Tensor* w = ctx.constant(1)) s.const_weights = w->data_as<float>();
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
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]),
                        static_cast<const float*>(io.inputs[1]), bias, y, team.scratch, team.nthr,
                        team.scratch_bytes))
      onednn::fail_output(name(), y, g_.n * g_.oc * g_.out_volume());
  }

 private:
  Status init_transpose(const KernelContext& ctx) {
    GRAPHI_ASSIGN_OR_RETURN(Deconv3d d, deconv3d_geometry(ctx.node, ctx.inputs, ctx.where));
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
    s.staged = true;
    GRAPHI_ASSIGN_OR_RETURN(prim_, onednn::make_deconv(s, ctx.team_size, false));
    return Status::ok();
  }

  bool transpose_;
  Geometry3 g_;
  std::unique_ptr<onednn::Primitive> prim_;
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
    GRAPHI_ASSIGN_OR_RETURN(g_,
                            pool3d_geometry(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    onednn::PoolSpec s;
    s.kind = ctx.node.op == "MaxPool3D" ? onednn::PoolKind::kMax
             : g_.count_include_pad     ? onednn::PoolKind::kAvgIncludePad
                                        : onednn::PoolKind::kAvgExcludePad;
    // As in 2-D (ops/conv_pool.cpp): dilated average pooling runs graphi's loop.
    if (s.kind != onednn::PoolKind::kMax && g_.dil != Dims3{1, 1, 1})
      return Status::unsupported("oneDNN pooling here: no dilated average pooling");
    s.n = g_.n;
    s.c = g_.c;
    set_window(s, g_, g_.in, g_.out);
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
  r.add(OpDef{
      "Conv3D",
      infer_conv_pool_3d,
      cost_conv_pool_3d,
      false,
      {[]() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnConv3DKernel>(false); },
       []() -> std::unique_ptr<Kernel> { return std::make_unique<RefConv3DKernel>(); }}});
  r.add(OpDef{
      "ConvTranspose3D",
      infer_conv_pool_3d,
      cost_conv_pool_3d,
      false,
      {[]() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnConv3DKernel>(true); },
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
}

}  // namespace graphi::ops
