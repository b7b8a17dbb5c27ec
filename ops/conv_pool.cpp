// Conv (2-D, NCHW: strides, pads, dilations, groups, optional bias), FusedConv (a Conv with
// attribute activation (ops/conv_activation.h: Relu, Clip, Swish, ...) applied to its output:
// made by graph/passes/conv_fusion.h, ONNX Runtime's contrib op name; an optional 4th input Z of
// the output's shape is added before the activation, as in ONNX Runtime's FusedConv: a residual
// connection, graph/passes/conv_fusion.h fuse_conv_sums), MaxPool and AveragePool
// (kernel_shape, strides, pads, count_include_pad). ONNX semantics; pads are
// [top, left, bottom, right]; both pools take dilations (AveragePool's from opset 19: graphi's
// loop); auto_pad other than NOTSET and ceil_mode are rejected as unsupported (the importer
// makes them explicit pads).
//
// Kernels, in preference order: a oneDNN primitive (constant conv weights pre-packed) that
// opens its own region, then a plain loop nest over output planes split across the team.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>

#include "ops/activations.h"
#include "ops/conv_algorithm.h"
#include "ops/conv_depthwise_direct.h"
#include "ops/onednn.h"
#include "ops/registry.h"
#include "ops/rnn/gemv_rows.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

// Geometry of one 2-D conv or pool, NCHW.
struct Geometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t oc = 0, oh = 0, ow = 0;      // output (oc == c for pools)
  int64_t kh = 0, kw = 0, group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool has_bias = false;
  bool has_sum = false;            // FusedConv / BlockedConv: input Z added before the activation
  bool sum_after = false;          // ... or after it (attribute sum_after_activation = 1)
  ConvPostOp post;                 // FusedConv / BlockedConv: the activation after it
  bool count_include_pad = false;  // AveragePool only
};

std::string ints_to_string(const std::vector<int64_t>& v) { return shape_to_string(v); }

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Blocked* ops (graph/passes/blocked_layout.h) hold activations as oneDNN's nChw{B}c:
// [N, C/B, H, W, B]. Their geometry is that of the plain op on the logical NCHW desc.
bool is_blocked(const graph::Node& node) { return node.op.rfind("Blocked", 0) == 0; }

// The logical NCHW desc of X (a 5-D blocked X folded back; a 4-D X as is), in `storage`. A
// blocked tensor's channels may be padded to a whole block (C = 24 held as two blocks of 16):
// a conv's C is the one its weights give (W [M, C/group, kH, kW]) when it fits X's blocks;
// a pool works on every lane, padding included (zero or finite, and dropped by FromBlocked).
Result<std::vector<const TensorDesc*>> logical_inputs(const graph::Node& node,
                                                      const std::vector<const TensorDesc*>& in,
                                                      const std::string& where,
                                                      TensorDesc& storage) {
  std::vector<const TensorDesc*> out = in;
  if (!is_blocked(node) || in.empty() || !in[0] || in[0]->rank() != 5) return out;
  GRAPHI_ASSIGN_OR_RETURN(int64_t b, layout_block(node, where));
  const Shape& x = in[0]->shape;
  if (x[4] != b)
    return Status::invalid_graph(where + ": blocked input X " + in[0]->to_string() +
                                 " does not end in the block " + std::to_string(b));
  int64_t c = x[1] * b;
  if ((node.op == "BlockedConv" || node.op == "BlockedConvDw" || node.op == "BlockedConvScaled") &&
      in.size() > 1 && in[1] && in[1]->rank() == 4) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t group, graph::attr_int(node.attrs, where, "group", 1));
    const int64_t cw = in[1]->shape[1] * group;
    if (cw > (x[1] - 1) * b && cw <= c) c = cw;
  }
  storage = TensorDesc{in[0]->dtype, {x[0], c, x[2], x[3]}};
  out[0] = &storage;
  return out;
}

Status check_input_x(const std::string& where, const TensorDesc* x) {
  if (!x) return Status::invalid_graph(where + ": missing input X");
  if (x->dtype != DType::kF32)
    return Status::invalid_graph(where + ": input X must be float32, got " + x->to_string());
  if (x->rank() != 4)
    return Status::unsupported(where + ": input X " + x->to_string() +
                               " is not supported: only the 2-D operation on a 4-D NCHW input");
  return Status::ok();
}

Status check_auto_pad(const graph::Node& node, const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(std::string auto_pad,
                          graph::attr_string(node.attrs, where, "auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET")
    return Status::unsupported(where + ": attribute 'auto_pad' = '" + auto_pad +
                               "' is not supported (only NOTSET); give explicit 'pads'");
  return Status::ok();
}

// strides, pads and dilations (when `with_dilations`), checked and stored in g.
Status read_window_attrs(const graph::Node& node, const std::string& where, Geometry& g,
                         bool with_dilations) {
  GRAPHI_ASSIGN_OR_RETURN(auto strides, graph::attr_ints(node.attrs, where, "strides", {1, 1}));
  GRAPHI_ASSIGN_OR_RETURN(auto pads, graph::attr_ints(node.attrs, where, "pads", {0, 0, 0, 0}));
  if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1)
    return Status::invalid_graph(where + ": attribute 'strides' must be 2 ints >= 1, got " +
                                 ints_to_string(strides));
  if (pads.size() != 4 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
    return Status::invalid_graph(
        where + ": attribute 'pads' must be 4 ints >= 0 [top, left, bottom, right], got " +
        ints_to_string(pads));
  g.sh = strides[0];
  g.sw = strides[1];
  g.pt = pads[0];
  g.pl = pads[1];
  g.pb = pads[2];
  g.pr = pads[3];
  if (with_dilations) {
    GRAPHI_ASSIGN_OR_RETURN(auto dil, graph::attr_ints(node.attrs, where, "dilations", {1, 1}));
    if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1)
      return Status::invalid_graph(where + ": attribute 'dilations' must be 2 ints >= 1, got " +
                                   ints_to_string(dil));
    g.dh = dil[0];
    g.dw = dil[1];
  }
  return Status::ok();
}

// Output size from the window; errors when the (dilated) kernel is larger than the padded input.
Status output_size(const std::string& where, Geometry& g) {
  // Corrupt dilations or pads (e.g. 2^62) must not overflow int64 in the window arithmetic.
  int64_t ekh, ekw, ph, pw;
  if (__builtin_mul_overflow(g.dh, g.kh - 1, &ekh) ||
      __builtin_mul_overflow(g.dw, g.kw - 1, &ekw) || __builtin_add_overflow(g.h, g.pt, &ph) ||
      __builtin_add_overflow(ph, g.pb, &ph) || __builtin_add_overflow(g.w, g.pl, &pw) ||
      __builtin_add_overflow(pw, g.pr, &pw))
    return Status::invalid_graph(where + ": dilations " + shape_to_string({g.dh, g.dw}) +
                                 " or pads " + shape_to_string({g.pt, g.pl, g.pb, g.pr}) +
                                 " overflow int64 with kernel " + shape_to_string({g.kh, g.kw}) +
                                 " and input " + shape_to_string({g.h, g.w}));
  ekh += 1;
  ekw += 1;
  if (ekh > ph || ekw > pw)
    return Status::invalid_graph(where + ": kernel " + shape_to_string({ekh, ekw}) +
                                 (g.dh > 1 || g.dw > 1 ? " (dilated)" : "") +
                                 " is larger than the padded input " + shape_to_string({ph, pw}) +
                                 " (input " + shape_to_string({g.h, g.w}) + " plus pads)");
  g.oh = (ph - ekh) / g.sh + 1;
  g.ow = (pw - ekw) / g.sw + 1;
  return Status::ok();
}

Result<Geometry> conv_geometry(const graph::Node& node, const std::vector<const TensorDesc*>& in,
                               const std::string& where) {
  const bool scaled = node.op == "BlockedConvScaled";
  const size_t max_inputs = node.op == "Conv" ? 3 : scaled ? 5 : 4;
  if (in.size() < 2 || in.size() > max_inputs || !in[1] || (scaled && (in.size() != 5 || !in[4])))
    return Status::invalid_graph(where + ": " + node.op + " takes inputs X, W and an optional B" +
                                 (scaled            ? ", Z and the input-channel scale S"
                                  : max_inputs == 4 ? " and Z"
                                                    : "") +
                                 ", got " + std::to_string(in.size()) + " inputs");
  GRAPHI_RETURN_IF_ERROR(check_input_x(where, in[0]));
  GRAPHI_RETURN_IF_ERROR(check_auto_pad(node, where));
  const TensorDesc& x = *in[0];
  const TensorDesc& w = *in[1];
  if (w.dtype != DType::kF32)
    return Status::invalid_graph(where + ": input W must be float32, got " + w.to_string());
  if (w.rank() != 4)
    return Status::invalid_graph(where + ": input W must be 4-D [M, C/group, kH, kW], got " +
                                 w.to_string());
  Geometry g;
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.h = x.shape[2];
  g.w = x.shape[3];
  g.oc = w.shape[0];
  g.kh = w.shape[2];
  g.kw = w.shape[3];
  GRAPHI_ASSIGN_OR_RETURN(g.group, graph::attr_int(node.attrs, where, "group", 1));
  if (g.group < 1)
    return Status::invalid_graph(where + ": attribute 'group' must be >= 1, got " +
                                 std::to_string(g.group));
  if (g.c % g.group != 0)
    return Status::invalid_graph(where + ": input channels C = " + std::to_string(g.c) + " of X " +
                                 x.to_string() +
                                 " are not divisible by group = " + std::to_string(g.group));
  if (g.oc % g.group != 0)
    return Status::invalid_graph(where + ": output channels M = " + std::to_string(g.oc) +
                                 " of W " + w.to_string() +
                                 " are not divisible by group = " + std::to_string(g.group));
  if (w.shape[1] != g.c / g.group)
    return Status::invalid_graph(where + ": W " + w.to_string() + " has " +
                                 std::to_string(w.shape[1]) + " input channels per group, but X " +
                                 x.to_string() + " with group = " + std::to_string(g.group) +
                                 " has " + std::to_string(g.c / g.group));
  if (node.attrs.has("kernel_shape")) {
    GRAPHI_ASSIGN_OR_RETURN(auto ks, graph::attr_ints(node.attrs, where, "kernel_shape"));
    if (ks != std::vector<int64_t>{g.kh, g.kw})
      return Status::invalid_graph(where + ": attribute 'kernel_shape' " + ints_to_string(ks) +
                                   " does not match W " + w.to_string());
  }
  g.has_sum = in.size() >= 4 && in[3];
  // y = act(conv + b) + Z (graph/passes/conv_fusion.h fuse_conv_sums: DarkNet's and YOLO's
  // residual Add after the conv's activation).
  GRAPHI_ASSIGN_OR_RETURN(int64_t sum_after,
                          graph::attr_int(node.attrs, where, "sum_after_activation", 0));
  g.sum_after = g.has_sum && sum_after != 0;
  if (scaled) {
    // S scales X's channels, per image: [N, C, 1, 1], or blocked [N, ceil(C/B), 1, 1, B] (the
    // same bytes, padded); the kernel folds it into W, so the convolution is a 1x1 one.
    const TensorDesc& sc = *in[4];
    const bool plain = sc.shape == Shape{g.n, g.c, 1, 1};
    const bool blocked = sc.rank() == 5 && sc.shape[0] == g.n && sc.shape[2] == 1 &&
                         sc.shape[3] == 1 && sc.shape[1] * sc.shape[4] >= g.c &&
                         (sc.shape[1] - 1) * sc.shape[4] < g.c;
    if (sc.dtype != DType::kF32 || (!plain && !blocked))
      return Status::invalid_graph(where + ": input S must be float32[" + std::to_string(g.n) +
                                   ", " + std::to_string(g.c) +
                                   ", 1, 1] (one scale per image and input channel) or its "
                                   "blocked form, got " +
                                   sc.to_string());
    if (g.kh != 1 || g.kw != 1 || g.group != 1)
      return Status::invalid_graph(where + ": " + node.op +
                                   " scales the weights of a 1x1 convolution (group 1), got "
                                   "kernel " +
                                   ints_to_string({g.kh, g.kw}) + ", group " +
                                   std::to_string(g.group));
  }
  if (in.size() >= 3 && in[2]) {
    const TensorDesc& b = *in[2];
    if (b.dtype != DType::kF32 || b.shape != Shape{g.oc})
      return Status::invalid_graph(where + ": input B must be float32[" + std::to_string(g.oc) +
                                   "] (one bias per output channel), got " + b.to_string());
    g.has_bias = true;
  }
  if (node.op != "Conv") {
    GRAPHI_ASSIGN_OR_RETURN(g.post, conv_post_op(node, where));
    if (g.post.kind == ConvActivation::kNone && node.op == "FusedConv" && !g.has_sum)
      return Status::invalid_graph(where +
                                   ": FusedConv needs attribute 'activation' or an input Z");
  }
  if (node.op == "BlockedConv" && g.group != 1 && !(g.group == g.c && g.group == g.oc)) {
    // Or groups of whole channel blocks in and out (graph/passes/blocked_layout.cpp).
    GRAPHI_ASSIGN_OR_RETURN(int64_t b, layout_block(node, where));
    if ((g.c / g.group) % b != 0 || (g.oc / g.group) % b != 0)
      return Status::unsupported(
          where + ": BlockedConv takes group = 1, depthwise (group = C = M) or groups of whole " +
          std::to_string(b) + "-channel blocks, got group " + std::to_string(g.group) +
          " with C = " + std::to_string(g.c) + ", M = " + std::to_string(g.oc));
  }
  GRAPHI_RETURN_IF_ERROR(read_window_attrs(node, where, g, true));
  GRAPHI_RETURN_IF_ERROR(output_size(where, g));
  return g;
}

bool is_conv(const graph::Node& node) {
  return node.op == "Conv" || node.op == "FusedConv" || node.op == "BlockedConv" ||
         node.op == "BlockedConvScaled";
}

// BlockedConvDw (graph/passes/conv_fusion.h fuse_conv_depthwise): inputs X, W, B (optional),
// Wdw, Bdw (optional); a 1x1 conv (stride 1, no pads, group 1, its attributes) and the 3x3
// depthwise conv after it (pads 1, strides 'dw_strides', activation 'dw_activation' /
// 'dw_activation_params'). The geometries of both.
struct DwGeometries {
  Geometry pw, dw;
};

Result<DwGeometries> conv_dw_geometry(const graph::Node& node,
                                      const std::vector<const TensorDesc*>& in,
                                      const std::string& where) {
  if (in.size() != 5 || !in[3])
    return Status::invalid_graph(where + ": " + node.op +
                                 " takes inputs X, W, B, Wdw, Bdw (B and Bdw may be empty), got " +
                                 std::to_string(in.size()) + " inputs");
  DwGeometries g;
  GRAPHI_ASSIGN_OR_RETURN(g.pw, conv_geometry(node, {in[0], in[1], in[2]}, where));
  const Geometry& p = g.pw;
  if (p.kh != 1 || p.kw != 1 || p.group != 1 || p.sh != 1 || p.sw != 1 || p.pt || p.pl || p.pb ||
      p.pr)
    return Status::invalid_graph(where + ": " + node.op +
                                 " fuses a 1x1 convolution (stride 1, no pads, group 1), got "
                                 "kernel " +
                                 ints_to_string({p.kh, p.kw}) + ", group " +
                                 std::to_string(p.group));
  const TensorDesc& wd = *in[3];
  if (wd.dtype != DType::kF32 || wd.shape != Shape{p.oc, 1, 3, 3})
    return Status::invalid_graph(where + ": input Wdw must be float32[" + std::to_string(p.oc) +
                                 ", 1, 3, 3] (a 3x3 depthwise conv), got " + wd.to_string());
  Geometry& d = g.dw;
  d.n = p.n;
  d.c = d.oc = d.group = p.oc;
  d.h = p.oh;
  d.w = p.ow;
  d.kh = d.kw = 3;
  d.pt = d.pl = d.pb = d.pr = 1;
  GRAPHI_ASSIGN_OR_RETURN(auto strides, graph::attr_ints(node.attrs, where, "dw_strides", {1, 1}));
  if (strides.size() != 2 || strides[0] != strides[1] || strides[0] < 1 || strides[0] > 2)
    return Status::invalid_graph(where + ": attribute 'dw_strides' must be [1, 1] or [2, 2], got " +
                                 ints_to_string(strides));
  d.sh = d.sw = strides[0];
  if (in[4]) {
    if (in[4]->dtype != DType::kF32 || in[4]->shape != Shape{p.oc})
      return Status::invalid_graph(where + ": input Bdw must be float32[" + std::to_string(p.oc) +
                                   "], got " + in[4]->to_string());
    d.has_bias = true;
  }
  GRAPHI_ASSIGN_OR_RETURN(d.post, conv_post_op(node, where, "dw_"));
  GRAPHI_RETURN_IF_ERROR(output_size(where, d));
  return g;
}

Result<std::vector<TensorDesc>> infer_conv_dw(const graph::InferContext& ctx) {
  if (ctx.num_outputs != 1)
    return Status::invalid_graph(ctx.where + ": " + ctx.node.op + " has exactly 1 output, got " +
                                 std::to_string(ctx.num_outputs));
  TensorDesc logical;
  GRAPHI_ASSIGN_OR_RETURN(auto in, logical_inputs(ctx.node, ctx.inputs, ctx.where, logical));
  GRAPHI_ASSIGN_OR_RETURN(DwGeometries g, conv_dw_geometry(ctx.node, in, ctx.where));
  GRAPHI_ASSIGN_OR_RETURN(int64_t b, layout_block(ctx.node, ctx.where));
  return std::vector<TensorDesc>{
      TensorDesc{DType::kF32, {g.dw.n, (g.dw.oc + b - 1) / b, g.dw.oh, g.dw.ow, b}}};
}

// Both convolutions' multiply-adds; the bytes of X, the weights and Y (the intermediate stays
// in cache: what the fusion is for).
CostHint cost_conv_dw(const graph::Node&, std::span<const TensorDesc* const> inputs,
                      std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const TensorDesc& x = *inputs[0];
  const TensorDesc& w = *inputs[1];
  const TensorDesc& y = *outputs[0];
  const double mid = static_cast<double>(x.shape[0] * x.shape[2] * x.shape[3]) *
                     static_cast<double>(w.shape[0]);  // the 1x1 conv's outputs
  c.flops =
      2.0 * mid * static_cast<double>(w.shape[1]) + 2.0 * 9.0 * static_cast<double>(y.numel());
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  c.bytes += static_cast<double>(y.bytes());
  return c;
}

// `num_outputs`: outputs the node declares (only Y is supported, not Indices).
Result<Geometry> pool_geometry(const graph::Node& node, const std::vector<const TensorDesc*>& in,
                               size_t num_outputs, const std::string& where) {
  if (in.size() != 1)
    return Status::invalid_graph(where + ": " + node.op + " takes exactly 1 input X, got " +
                                 std::to_string(in.size()));
  GRAPHI_RETURN_IF_ERROR(check_input_x(where, in[0]));
  GRAPHI_RETURN_IF_ERROR(check_auto_pad(node, where));
  if (num_outputs != 1)
    return Status::unsupported(where + ": the Indices output is not supported (only Y), got " +
                               std::to_string(num_outputs) +
                               " outputs; graphi's MaxPoolWithIndices computes both");
  GRAPHI_ASSIGN_OR_RETURN(int64_t ceil_mode, graph::attr_int(node.attrs, where, "ceil_mode", 0));
  if (ceil_mode != 0)
    return Status::unsupported(where + ": attribute 'ceil_mode' = " + std::to_string(ceil_mode) +
                               " is not supported (only 0)");
  const TensorDesc& x = *in[0];
  Geometry g;
  g.n = x.shape[0];
  g.c = g.oc = x.shape[1];
  g.h = x.shape[2];
  g.w = x.shape[3];
  GRAPHI_ASSIGN_OR_RETURN(auto ks, graph::attr_ints(node.attrs, where, "kernel_shape"));
  if (ks.size() != 2 || ks[0] < 1 || ks[1] < 1)
    return Status::invalid_graph(where + ": attribute 'kernel_shape' must be 2 ints >= 1, got " +
                                 ints_to_string(ks));
  g.kh = ks[0];
  g.kw = ks[1];
  if (ends_with(node.op, "AveragePool")) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t cip,
                            graph::attr_int(node.attrs, where, "count_include_pad", 0));
    if (cip != 0 && cip != 1)
      return Status::invalid_graph(where + ": attribute 'count_include_pad' must be 0 or 1, got " +
                                   std::to_string(cip));
    g.count_include_pad = cip == 1;
  }
  GRAPHI_RETURN_IF_ERROR(read_window_attrs(node, where, g, true));
  GRAPHI_RETURN_IF_ERROR(output_size(where, g));
  // The dilated kernel's span (output_size() checked it for overflow): a pad that reaches it
  // would put a whole window in the padding.
  const int64_t span_h = (g.kh - 1) * g.dh + 1, span_w = (g.kw - 1) * g.dw + 1;
  if (g.pt >= span_h || g.pb >= span_h || g.pl >= span_w || g.pr >= span_w)
    return Status::unsupported(
        where + ": pads " + ints_to_string({g.pt, g.pl, g.pb, g.pr}) +
        " must each be smaller than the " + (g.dh > 1 || g.dw > 1 ? "dilated " : "") + "kernel " +
        ints_to_string({span_h, span_w}) + " (a window would lie entirely in padding)");
  return g;
}

// A conv's output desc y, after checking that its input Z (when it has one) is y's desc.
Result<std::vector<TensorDesc>> with_sum_checked(const graph::InferContext& ctx, const Geometry& g,
                                                 TensorDesc y) {
  if (g.has_sum && *ctx.inputs[3] != y)
    return Status::invalid_graph(ctx.where + ": input Z " + ctx.inputs[3]->to_string() +
                                 " must have the output's shape and dtype " + y.to_string());
  return std::vector<TensorDesc>{std::move(y)};
}

Result<std::vector<TensorDesc>> infer_conv_pool(const graph::InferContext& ctx) {
  if (is_conv(ctx.node) && ctx.num_outputs != 1)
    return Status::invalid_graph(ctx.where + ": " + ctx.node.op + " has exactly 1 output, got " +
                                 std::to_string(ctx.num_outputs));
  TensorDesc logical;
  GRAPHI_ASSIGN_OR_RETURN(auto in, logical_inputs(ctx.node, ctx.inputs, ctx.where, logical));
  GRAPHI_ASSIGN_OR_RETURN(
      Geometry g, is_conv(ctx.node) ? conv_geometry(ctx.node, in, ctx.where)
                                    : pool_geometry(ctx.node, in, ctx.num_outputs, ctx.where));
  if (is_blocked(ctx.node)) {
    // Output channels that are no multiple of B are padded to a whole block (oneDNN writes
    // the padding lanes as zeros).
    GRAPHI_ASSIGN_OR_RETURN(int64_t b, layout_block(ctx.node, ctx.where));
    return with_sum_checked(ctx, g,
                            TensorDesc{DType::kF32, {g.n, (g.oc + b - 1) / b, g.oh, g.ow, b}});
  }
  return with_sum_checked(ctx, g, TensorDesc{DType::kF32, {g.n, g.oc, g.oh, g.ow}});
}

CostHint cost_conv_pool(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                        std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const TensorDesc& y = *outputs[0];
  const double out = static_cast<double>(y.numel());
  if (is_conv(node)) {
    const TensorDesc& w = *inputs[1];
    // Each output element: C/group * kH * kW multiply-adds (W is [M, C/group, kH, kW]).
    c.flops = 2.0 * out * static_cast<double>(w.shape[1] * w.shape[2] * w.shape[3]);
    if (inputs.size() >= 3 && inputs[2]) c.flops += out;                             // bias
    if (inputs.size() >= 4 && inputs[3]) c.flops += out;                             // Z
    if (inputs.size() == 5 && inputs[4]) c.flops += static_cast<double>(w.numel());  // W * S
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
  c.bytes += static_cast<double>(y.bytes());
  return c;
}

// oneDNN's reference code runs a convolution correctly but one to three orders of magnitude
// slower than its jit kernels (a dilated 3x3 960 -> 256 conv at 14x14: 650 ms against ~1 ms), so
// a model that lands there says so instead of being silently slow. The first few nodes are named.
void warn_reference_conv(const std::string& where, const onednn::ConvSpec& s) {
  static std::atomic<int> count{0};
  const int n = count.fetch_add(1);
  if (n >= 5) return;
  std::fprintf(stderr,
               "graphi: warning: %s: oneDNN has only its reference implementation for this "
               "convolution (%lldx%lld kernel, dilation %lldx%lld, stride %lldx%lld, group %lld, "
               "%lld -> %lld channels at %lldx%lld): correct but slow%s\n",
               where.c_str(), (long long)s.kh, (long long)s.kw, (long long)s.dilation_h,
               (long long)s.dilation_w, (long long)s.stride_h, (long long)s.stride_w,
               (long long)s.group, (long long)s.c, (long long)s.oc, (long long)s.h, (long long)s.w,
               n == 4 ? " (further ones not listed)" : "");
}

// "ref:any" is the reference code; "ref_fused_convolution:any:jit_1x1:...:jit_dw:..." is the
// depthwise fusion's wrapper around jit kernels.
bool is_reference(const std::string& impl) {
  return impl.rfind("ref", 0) == 0 && impl.find("jit") == std::string::npos &&
         impl.find("gemm") == std::string::npos && impl.find("brg") == std::string::npos;
}

// ---------------------------------------------------------------------------------------------
class OnednnConvKernel final : public Kernel {
 public:
  const char* name() const override { return "conv_onednn"; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override {
    return stage_bytes_ + (prim_ ? prim_->scratch_bytes() : 0);
  }

  Status init(const KernelContext& ctx) override {
    TensorDesc logical;
    GRAPHI_ASSIGN_OR_RETURN(auto in, logical_inputs(ctx.node, ctx.inputs, ctx.where, logical));
    const bool fused_dw = ctx.node.op == "BlockedConvDw";
    Geometry dw;
    if (fused_dw) {
      GRAPHI_ASSIGN_OR_RETURN(DwGeometries both, conv_dw_geometry(ctx.node, in, ctx.where));
      g_ = both.pw;
      dw = both.dw;
    } else {
      GRAPHI_ASSIGN_OR_RETURN(g_, conv_geometry(ctx.node, in, ctx.where));
    }
    outputs_ = ctx.outputs[0]->numel();
    onednn::ConvSpec s;
    const bool blocked = is_blocked(ctx.node);
    if (blocked) {
      GRAPHI_ASSIGN_OR_RETURN(s.dst_block, layout_block(ctx.node, ctx.where));
      s.src_block = ctx.inputs[0]->rank() == 5 ? s.dst_block : 0;
    }
    s.n = g_.n;
    s.c = g_.c;
    s.h = g_.h;
    s.w = g_.w;
    s.oc = g_.oc;
    s.oh = g_.oh;
    s.ow = g_.ow;
    s.kh = g_.kh;
    s.kw = g_.kw;
    s.group = g_.group;
    s.stride_h = g_.sh;
    s.stride_w = g_.sw;
    s.dilation_h = g_.dh;
    s.dilation_w = g_.dw;
    s.pad_top = g_.pt;
    s.pad_left = g_.pl;
    s.pad_bottom = g_.pb;
    s.pad_right = g_.pr;
    s.has_bias = g_.has_bias;
    s.sum_input = g_.has_sum;
    s.sum_after_post = g_.sum_after;
    s.post = g_.post;
    if (fused_dw) {
      const Tensor* wd = ctx.constant(3);
      const Tensor* bd = ctx.constant(4);
      if (!wd || (dw.has_bias && !bd))
        return Status::unsupported("the depthwise conv's weights or bias are given at run time");
      s.dw.stride = dw.sh;
      s.dw.weights = wd->data_as<float>();
      s.dw.bias = bd ? bd->data_as<float>() : nullptr;
      s.dw.post = dw.post;
    }
    // The activation of the output: the depthwise conv's when one is fused (the 1x1 conv's
    // then stays a oneDNN post-op: it applies before the depthwise conv reads the rows).
    ConvPostOp& out_post = fused_dw ? s.dw.post : s.post;
    after_post_ = out_post;
    // oneDNN 2.6's exp-based eltwise post-ops cost more than the convolution itself on the
    // memory-bound shapes (a 3x3 depthwise conv, 32 channels at 112x112, 2 threads: 52 us bare,
    // 172 us with swish, 55 with ReLU): Swish and Tanh, and Sigmoid where no padding lane would
    // turn 0 into 0.5, run as graphi's vectorized pass over the output after the primitive.
    const bool padded_out = blocked && g_.oc % s.dst_block != 0;
    act_after_ = out_post.kind == ConvActivation::kSwish ||
                 out_post.kind == ConvActivation::kTanh ||
                 (out_post.kind == ConvActivation::kSigmoid && !padded_out);
    if (act_after_) out_post = ConvPostOp{};
    // Z added after an activation graphi applies itself: both after the primitive.
    if (act_after_ && g_.sum_after) s.sum_input = false;
    if (const Tensor* w = ctx.constant(1)) s.const_weights = w->data_as<float>();
    scaled_ = ctx.node.op == "BlockedConvScaled";
    if (scaled_ && !s.const_weights)
      return Status::unsupported("the weights are given at run time (" + ctx.node.op +
                                 " scales constant ones)");
    s.input_scale = scaled_;  // W * S each run, from the packed W (graph/passes/conv_fusion.h)
    if (scaled_) {
      // Weights per image: a primitive for one image, run once per image.
      s.n = 1;
      images_ = g_.n;
      x_image_ = ctx.inputs[0]->numel() / g_.n;
      y_image_ = outputs_ / g_.n;
      s_image_ = ctx.inputs[4]->numel() / g_.n;
    }
    // Weights that change every run (training) cannot be packed once: oneDNN's own layouts are
    // reached through scratch instead (the weights every run; plain activations too).
    s.staged = !s.const_weights;
    // A blocked op has no other kernel: oneDNN's reference implementation is still correct.
    // Plain activations and constant weights: NCHW or oneDNN's own layouts, by measurement.
    GRAPHI_ASSIGN_OR_RETURN(
        prim_, !blocked && s.const_weights
                   ? make_fastest_plain_conv(s, ctx.team_size, blocked)
                   : make_fastest_conv(s, ctx.team_size, blocked, onednn::make_conv, "conv"));
    if (is_reference(prim_->impl_name()) && blocked && s.src_block && s.c % s.src_block != 0 &&
        s.group == 1 && s.const_weights && !scaled_ && !fused_dw) {
      // oneDNN 2.6 has no jit kernel for a blocked input whose channels pad its last block
      // unless the kernel is 3x3 with stride 1 (8 -> 8 channels, 5x5 at 32x32: 27 ms in its
      // reference code against 0.05 in ORT). The padding lanes are zero, so the same
      // convolution over all the block's lanes, with zero weights for the padding channels, is
      // exact and gets the jit kernel. The weights are packed at creation: the copy dies here.
      onednn::ConvSpec wide = s;
      wide.c = (s.c + s.src_block - 1) / s.src_block * s.src_block;
      std::vector<float> w(static_cast<size_t>(s.oc * wide.c * s.kh * s.kw), 0.0f);
      const int64_t taps = s.kh * s.kw;
      for (int64_t o = 0; o < s.oc; ++o)
        std::copy_n(s.const_weights + o * s.c * taps, s.c * taps, w.data() + o * wide.c * taps);
      wide.const_weights = w.data();
      auto widened = make_fastest_conv(wide, ctx.team_size, blocked, onednn::make_conv, "conv");
      // Only with the copy packed into the primitive (run() passes the model's own weights).
      if (widened.is_ok() && !is_reference((*widened)->impl_name()) && (*widened)->weights_packed())
        prim_ = std::move(*widened);
    }
    if (is_reference(prim_->impl_name()) && (g_.pt || g_.pb || g_.pl || g_.pr) && !scaled_ &&
        !fused_dw) {
      // oneDNN 2.6's jit kernels refuse some paddings (a dilated 1x3 conv with the left pad of
      // two taps, dilation 8: a causal TCN as PyTorch's dynamo exporter writes it, or Bai et
      // al.'s padding + chomp: 1.2-3 ms each in the reference code against 7 us in ORT). The
      // same convolution of the input copied into a zero-bordered buffer has no pads; where that
      // gets a jit kernel, run() copies the input there first (into scratch, every run).
      onednn::ConvSpec bare = s;
      bare.h = s.h + s.pad_top + s.pad_bottom;
      bare.w = s.w + s.pad_left + s.pad_right;
      bare.pad_top = bare.pad_bottom = bare.pad_left = bare.pad_right = 0;
      auto unpadded =
          !blocked && s.const_weights
              ? make_fastest_plain_conv(bare, ctx.team_size, blocked)
              : make_fastest_conv(bare, ctx.team_size, blocked, onednn::make_conv, "conv");
      if (unpadded.is_ok() && !is_reference((*unpadded)->impl_name())) {
        prim_ = std::move(*unpadded);
        const int64_t lanes = s.src_block ? s.src_block : 1;
        border_.lanes = lanes;
        border_.planes = g_.n * (lanes > 1 ? (g_.c + lanes - 1) / lanes : g_.c);
        border_.h = g_.h;
        border_.w = g_.w;
        border_.top = g_.pt;
        border_.left = g_.pl;
        border_.hp = bare.h;
        border_.wp = bare.w;
        stage_bytes_ =
            (static_cast<size_t>(border_.planes * bare.h * bare.w * lanes) * sizeof(float) + 63) /
            64 * 64;
      }
    }
    const bool depthwise = g_.group > 1 && g_.group == g_.c && g_.group == g_.oc;
    const Tensor* bias = g_.has_bias ? ctx.constant(2) : nullptr;
    if (is_reference(prim_->impl_name()) && blocked && depthwise && s.src_block == s.dst_block &&
        s.const_weights && (!g_.has_bias || bias) && !scaled_ && !fused_dw && !g_.sum_after) {
      // oneDNN's jit depthwise kernels take a few kernel sizes only: graphi's direct loop.
      DepthwiseGeometry dg{g_.n,  g_.c,  g_.h,  g_.w,  g_.oh, g_.ow, g_.kh,      g_.kw,
                           g_.sh, g_.sw, g_.dh, g_.dw, g_.pt, g_.pl, s.dst_block};
      direct_dw_ = std::make_unique<DepthwiseBlockedDirect>(
          dg, s.const_weights, bias ? bias->data_as<float>() : nullptr, after_post_);
      return Status::ok();
    }
    if (is_reference(prim_->impl_name())) warn_reference_conv(ctx.where, s);
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    const float* bias = g_.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    const float* z = g_.has_sum ? static_cast<const float*>(io.inputs[3]) : nullptr;
    if (direct_dw_) {
      const auto* x = static_cast<const float*>(io.inputs[0]);
#pragma omp parallel num_threads(team.nthr)
      {
        auto [i0, i1] =
            team_range(direct_dw_->items(), omp_get_thread_num(), omp_get_num_threads());
        direct_dw_->run(x, z, y, i0, i1);
      }
      return;
    }
    // Z the primitive did not add (a Winograd one: made without the sum and the activation).
    const float* z_after = z && !prim_->sums_input() ? z : nullptr;
    const float* x = static_cast<const float*>(io.inputs[0]);
    if (scaled_) {
      // BlockedConvScaled: the primitive takes image i's S where the weights go
      // (ConvSpec::input_scale); one image per call.
      const float* sc = static_cast<const float*>(io.inputs[4]);
      for (int64_t i = 0; i < images_; ++i)
        if (!prim_->execute(x + i * x_image_, sc + i * s_image_, bias, y + i * y_image_,
                            team.scratch, team.nthr, team.scratch_bytes,
                            z ? z + i * y_image_ : nullptr)) {
          onednn::fail_output(name(), y, outputs_);
          return;
        }
      if (act_after_) add_and_activate(y, nullptr, true, team.nthr);
      return;
    }
    void* scratch = team.scratch;
    size_t scratch_bytes = team.scratch_bytes;
    if (stage_bytes_) {
      float* staged = static_cast<float*>(team.scratch);
      copy_into_border(x, staged, team.nthr);
      x = staged;
      scratch = static_cast<char*>(team.scratch) + stage_bytes_;
      scratch_bytes -= stage_bytes_;
    }
    if (!prim_->execute(x, static_cast<const float*>(io.inputs[1]), bias, y, scratch, team.nthr,
                        scratch_bytes, z_after ? nullptr : z)) {
      onednn::fail_output(name(), y, outputs_);
      return;
    }
    if (z_after || act_after_) add_and_activate(y, z_after, z_after || act_after_, team.nthr);
  }

 private:
  // y = post(y + z), or post(y) + z with sum_after (z may be nullptr), over the whole output:
  // what the primitive left undone.
  // A Winograd primitive's channels are whole blocks (multiples of 16), and Swish and Tanh map
  // 0 to 0, so padding lanes stay zero.
  void add_and_activate(float* y, const float* z, bool activate, int nthr) const noexcept {
    const int64_t count = outputs_;
    const ConvPostOp post = after_post_;
    const bool z_last = g_.sum_after;  // y = act(y) + z instead of act(y + z)
#pragma omp parallel num_threads(nthr)
    {
      auto [i0, i1] = team_range(count, omp_get_thread_num(), omp_get_num_threads());
      if (z && !z_last)
        for (int64_t i = i0; i < i1; ++i) y[i] += z[i];
      if (!activate || post.kind == ConvActivation::kNone) {
        // the sum only
      } else if (post.kind == ConvActivation::kRelu) {
        for (int64_t i = i0; i < i1; ++i) y[i] = std::max(y[i], 0.0f);
      } else if (post.kind == ConvActivation::kSigmoid) {
        sigmoid_f32(y + i0, y + i0, i1 - i0);
      } else if (post.kind == ConvActivation::kSwish) {
        swish_f32(y + i0, y + i0, i1 - i0);  // one pass: x / (1 + exp(-x))
      } else if (post.kind == ConvActivation::kTanh) {
        tanh_f32(y + i0, y + i0, i1 - i0);
      } else {
        for (int64_t i = i0; i < i1; ++i) y[i] = post.apply(y[i]);
      }
      if (z && z_last)
        for (int64_t i = i0; i < i1; ++i) y[i] += z[i];
    }
  }

  // x [planes, h, w, lanes] into the zero-bordered [planes, hp, wp, lanes] at `xp`.
  void copy_into_border(const float* x, float* xp, int nthr) const noexcept {
    const Border b = border_;
    const int64_t row = b.w * b.lanes, prow = b.wp * b.lanes;
#pragma omp parallel num_threads(nthr)
    {
      auto [p0, p1] = team_range(b.planes * b.hp, omp_get_thread_num(), omp_get_num_threads());
      for (int64_t r = p0; r < p1; ++r) {
        const int64_t plane = r / b.hp, i = r % b.hp - b.top;
        float* dst = xp + r * prow;
        if (i < 0 || i >= b.h) {
          std::fill_n(dst, prow, 0.0f);
          continue;
        }
        const int64_t left = b.left * b.lanes;
        std::fill_n(dst, left, 0.0f);
        std::copy_n(x + (plane * b.h + i) * row, row, dst + left);
        std::fill_n(dst + left + row, prow - left - row, 0.0f);
      }
    }
  }

  // The input's geometry when the primitive reads a zero-bordered copy of it.
  struct Border {
    int64_t planes = 0, h = 0, w = 0, lanes = 1, top = 0, left = 0, hp = 0, wp = 0;
  };
  Border border_;
  size_t stage_bytes_ = 0;  // > 0: the copy's bytes at the start of scratch
  Geometry g_;
  int64_t outputs_ = 0;     // output elements (padding lanes included)
  bool act_after_ = false;  // the activation runs after the primitive (add_and_activate)
  bool scaled_ = false;     // BlockedConvScaled: input 4 scales the input channels, per image
  int64_t images_ = 1, x_image_ = 0, y_image_ = 0, s_image_ = 0;  // ... and its per-image steps
  ConvPostOp after_post_;  // the output's activation (the depthwise conv's in BlockedConvDw)
  std::unique_ptr<onednn::Primitive> prim_;
  std::unique_ptr<DepthwiseBlockedDirect> direct_dw_;  // instead of oneDNN's reference code
};

// A 1x1 convolution of 1x1 images (a squeeze-excitation's two convs after the global pool, any
// conv head on pooled features): a matrix-vector product per image, Y[n] = act(W X[n] + B + Z[n]).
// oneDNN's primitive costs ~10-15 us per call at these sizes (its team's fork/join and dispatch:
// the EfficientNet-like model's 34 SE convs took 0.4-0.5 ms), so the constant weights are packed
// once into 64-column panels and the team streams them through gemv_rows (ops/rnn/gemv_rows.h,
// as ops/gemm.cpp's GEMV kernel does). Plain [N, C, 1, 1] or blocked [N, ceil(C/B), 1, 1, B]
// (the same bytes, padded): padding lanes of the output are written as zeros.
class PixelConvKernel final : public Kernel {
 public:
  const char* name() const override { return "conv_1x1_pixel"; }

  Status init(const KernelContext& ctx) override {
    TensorDesc logical;
    GRAPHI_ASSIGN_OR_RETURN(auto in, logical_inputs(ctx.node, ctx.inputs, ctx.where, logical));
    GRAPHI_ASSIGN_OR_RETURN(g_, conv_geometry(ctx.node, in, ctx.where));
    if (g_.h != 1 || g_.w != 1 || g_.kh != 1 || g_.kw != 1 || g_.group != 1 || g_.pt || g_.pl ||
        g_.pb || g_.pr)
      return Status::unsupported("not a 1x1 convolution of 1x1 images");
    const Tensor* w = ctx.constant(1);
    if (!w) return Status::unsupported("weights given at run time");
    if (g_.c * g_.oc > (int64_t{1} << 20))
      return Status::unsupported("over 4 MiB of weights: oneDNN's primitive streams them as fast");
    const TensorDesc& x = *ctx.inputs[0];
    const TensorDesc& y = *ctx.outputs[0];
    xs_ = x.numel() / g_.n;  // per image: C, or the padded blocks
    ys_ = y.numel() / g_.n;
    panels_ = (ys_ + kPanel - 1) / kPanel;
    packed_.assign(static_cast<size_t>(panels_ * g_.c * kPanel), 0.0f);
    for (int64_t m = 0; m < g_.oc; ++m)
      for (int64_t c = 0; c < g_.c; ++c)
        packed_[static_cast<size_t>(((m / kPanel) * g_.c + c) * kPanel + m % kPanel)] =
            w->data_as<float>()[m * g_.c + c];
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* x = static_cast<const float*>(io.inputs[0]);
    const float* bias = g_.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    const float* z = g_.has_sum ? static_cast<const float*>(io.inputs[3]) : nullptr;
    float* y = static_cast<float*>(io.outputs[0]);
    auto [q0, q1] = team_range(panels_, team.ithr, team.nthr);
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t m0 = q * kPanel, m1 = std::min(ys_, m0 + kPanel);
      for (int64_t n0 = 0; n0 < g_.n; n0 += kGemvMaxRows)
        gemv_rows(packed_.data() + q * g_.c * kPanel, kPanel, x + n0 * xs_, xs_, y + n0 * ys_ + m0,
                  ys_, std::min(kGemvMaxRows, g_.n - n0), g_.c, m1 - m0, false);
      for (int64_t n = 0; n < g_.n; ++n)
        for (int64_t m = m0; m < m1; ++m) {
          float& v = y[n * ys_ + m];
          const float zv = z ? z[n * ys_ + m] : 0.0f;
          v = m < g_.oc ? (g_.sum_after ? g_.post.apply(v + (bias ? bias[m] : 0.0f)) + zv
                                        : g_.post.apply(v + (bias ? bias[m] : 0.0f) + zv))
                        : 0.0f;
        }
    }
  }

 private:
  static constexpr int64_t kPanel = 64;  // gemv_rows' four 16-float accumulators per row
  Geometry g_;
  int64_t xs_ = 0, ys_ = 0, panels_ = 0;
  std::vector<float> packed_;  // W as [panel][C][64], output channels past M zero
};

// Direct convolution; the team splits the N * M output planes.
class RefConvKernel final : public Kernel {
 public:
  const char* name() const override { return "conv_ref"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, conv_geometry(ctx.node, ctx.inputs, ctx.where));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const Geometry& g = g_;
    const float* x = static_cast<const float*>(io.inputs[0]);
    const float* w = static_cast<const float*>(io.inputs[1]);
    const float* bias = g.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    const float* z = g.has_sum ? static_cast<const float*>(io.inputs[3]) : nullptr;
    float* y = static_cast<float*>(io.outputs[0]);
    const int64_t cpg = g.c / g.group, mpg = g.oc / g.group;
    auto [p0, p1] = team_range(g.n * g.oc, team.ithr, team.nthr);
    for (int64_t plane = p0; plane < p1; ++plane) {
      const int64_t b = plane / g.oc, m = plane % g.oc, grp = m / mpg;
      float* yp = y + plane * g.oh * g.ow;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          float acc = bias ? bias[m] : 0.0f;
          for (int64_t ci = 0; ci < cpg; ++ci) {
            const float* xp = x + (b * g.c + grp * cpg + ci) * g.h * g.w;
            const float* wp = w + (m * cpg + ci) * g.kh * g.kw;
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
                if (ix < 0 || ix >= g.w) continue;
                acc += xp[iy * g.w + ix] * wp[ky * g.kw + kx];
              }
            }
          }
          const float zv = z ? z[plane * g.oh * g.ow + oy * g.ow + ox] : 0.0f;
          yp[oy * g.ow + ox] = g.sum_after ? g.post.apply(acc) + zv : g.post.apply(acc + zv);
        }
      }
    }
  }

 private:
  Geometry g_;
};

// ---------------------------------------------------------------------------------------------
class OnednnPoolKernel final : public Kernel {
 public:
  explicit OnednnPoolKernel(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }

  Status init(const KernelContext& ctx) override {
    TensorDesc logical;
    GRAPHI_ASSIGN_OR_RETURN(auto in, logical_inputs(ctx.node, ctx.inputs, ctx.where, logical));
    GRAPHI_ASSIGN_OR_RETURN(g_, pool_geometry(ctx.node, in, ctx.outputs.size(), ctx.where));
    onednn::PoolSpec s;
    const bool blocked = is_blocked(ctx.node);
    if (blocked) {
      GRAPHI_ASSIGN_OR_RETURN(s.block, layout_block(ctx.node, ctx.where));
    }
    s.kind = ends_with(ctx.node.op, "MaxPool") ? onednn::PoolKind::kMax
             : g_.count_include_pad            ? onednn::PoolKind::kAvgIncludePad
                                               : onednn::PoolKind::kAvgExcludePad;
    // oneDNN 2.6 offers only its reference code for dilated windows (pooling_v2), and which
    // taps its exclude-pad divisor counts there is not checked here: graphi's loop runs them.
    if (s.kind != onednn::PoolKind::kMax && (g_.dh > 1 || g_.dw > 1))
      return Status::unsupported("oneDNN pooling here: no dilated average pooling");
    s.n = g_.n;
    s.c = g_.c;
    s.h = g_.h;
    s.w = g_.w;
    s.oh = g_.oh;
    s.ow = g_.ow;
    s.kh = g_.kh;
    s.kw = g_.kw;
    s.stride_h = g_.sh;
    s.stride_w = g_.sw;
    s.pad_top = g_.pt;
    s.pad_left = g_.pl;
    s.pad_bottom = g_.pb;
    s.pad_right = g_.pr;
    s.dilation_h = g_.dh;
    s.dilation_w = g_.dw;
    GRAPHI_ASSIGN_OR_RETURN(prim_, onednn::make_pool(s, ctx.team_size, blocked));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]), nullptr, nullptr, y, team.scratch,
                        team.nthr, team.scratch_bytes))
      onednn::fail_output(name_, y, g_.n * g_.c * g_.oh * g_.ow);
  }

 private:
  const char* name_;
  Geometry g_;
  std::unique_ptr<onednn::Primitive> prim_;
};

// Window loops; the team splits the N * C planes.
class RefPoolKernel final : public Kernel {
 public:
  RefPoolKernel(const char* name, bool is_max) : name_(name), is_max_(is_max) {}
  const char* name() const override { return name_; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, pool_geometry(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const Geometry& g = g_;
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    auto [p0, p1] = team_range(g.n * g.c, team.ithr, team.nthr);
    for (int64_t plane = p0; plane < p1; ++plane) {
      const float* xp = x + plane * g.h * g.w;
      float* yp = y + plane * g.oh * g.ow;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t y0 = oy * g.sh - g.pt, x0 = ox * g.sw - g.pl;
          float acc = is_max_ ? -std::numeric_limits<float>::infinity() : 0.0f;
          int64_t count = 0;  // taps inside the input
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            const int64_t iy = y0 + ky * g.dh;
            if (iy < 0 || iy >= g.h) continue;
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t ix = x0 + kx * g.dw;
              if (ix < 0 || ix >= g.w) continue;
              acc = is_max_ ? std::max(acc, xp[iy * g.w + ix]) : acc + xp[iy * g.w + ix];
              ++count;
            }
          }
          if (!is_max_) {
            // Without ceil_mode a window never leaves the padded input, so include-pad
            // divides by the whole kernel (its taps, dilated or not); exclude-pad counts the
            // real elements only.
            acc /= static_cast<float>(g.count_include_pad ? g.kh * g.kw : count);
          }
          yp[oy * g.ow + ox] = acc;
        }
      }
    }
  }

 private:
  const char* name_;
  bool is_max_;
  Geometry g_;
};

}  // namespace

void register_layout_reorder_ops(Registry& r);  // ops/layout_reorder.cpp

void register_conv_pool_ops(Registry& r) {
  for (const char* op : {"Conv", "FusedConv"})
    r.add(OpDef{op,
                infer_conv_pool,
                cost_conv_pool,
                false,
                {[]() -> std::unique_ptr<Kernel> { return std::make_unique<PixelConvKernel>(); },
                 []() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnConvKernel>(); },
                 []() -> std::unique_ptr<Kernel> { return std::make_unique<RefConvKernel>(); }}});
  r.add(OpDef{"MaxPool",
              infer_conv_pool,
              cost_conv_pool,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                 return std::make_unique<OnednnPoolKernel>("maxpool_onednn");
               },
               []() -> std::unique_ptr<Kernel> {
                 return std::make_unique<RefPoolKernel>("maxpool_ref", true);
               }}});
  r.add(OpDef{"AveragePool",
              infer_conv_pool,
              cost_conv_pool,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                 return std::make_unique<OnednnPoolKernel>("avgpool_onednn");
               },
               []() -> std::unique_ptr<Kernel> {
                 return std::make_unique<RefPoolKernel>("avgpool_ref", false);
               }}});
  // The nChw{B}c variants of graph/passes/blocked_layout.h: oneDNN only.
  r.add(OpDef{"BlockedConv",
              infer_conv_pool,
              cost_conv_pool,
              false,
              {[]() -> std::unique_ptr<Kernel> { return std::make_unique<PixelConvKernel>(); },
               []() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnConvKernel>(); }}});
  // A 1x1 BlockedConv whose input channels a run-time S scales per image (a squeeze-
  // excitation's gate; graph/passes/conv_fusion.h fuse_conv_input_scale): W * S each run.
  r.add(OpDef{"BlockedConvScaled",
              infer_conv_pool,
              cost_conv_pool,
              false,
              {[]() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnConvKernel>(); }}});
  // A 1x1 BlockedConv and the 3x3 depthwise one reading its output (graph/passes/conv_fusion.h
  // fuse_conv_depthwise): one oneDNN primitive with a depthwise post-op.
  r.add(
      OpDef{"BlockedConvDw", infer_conv_dw, cost_conv_dw, false, {[]() -> std::unique_ptr<Kernel> {
              return std::make_unique<OnednnConvKernel>();
            }}});
  r.add(OpDef{
      "BlockedMaxPool", infer_conv_pool, cost_conv_pool, false, {[]() -> std::unique_ptr<Kernel> {
        return std::make_unique<OnednnPoolKernel>("maxpool_onednn_blocked");
      }}});
  r.add(OpDef{"BlockedAveragePool",
              infer_conv_pool,
              cost_conv_pool,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                return std::make_unique<OnednnPoolKernel>("avgpool_onednn_blocked");
              }}});
  register_layout_reorder_ops(r);
}

}  // namespace graphi::ops
