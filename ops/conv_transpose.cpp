// ConvTranspose (ONNX semantics), 2-D on NCHW float32 (1-D arrives here as 2-D with a height of
// 1, rewritten by the ONNX importer): W [C, M/group, kH, kW], optional B [M]; strides, pads,
// dilations, group, output_padding. Output size per spatial dim:
//   stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end.
// Refused by name: auto_pad other than NOTSET and output_shape (PyTorch exports neither).
//
// BlockedConvTranspose: the patch up-sampler on nChw{B}c activations (graph/passes/
// blocked_layout.h), below.
//
// Kernels, in preference order: the patch up-sampler (kernel = stride, no pads: one GEMM and a
// scatter, below), oneDNN's deconvolution, and a scatter of each input element through the
// kernel window into its output plane (a thread owns whole (n, m) output planes, so it needs no
// synchronization).
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "ops/conv_algorithm.h"
#include "ops/onednn.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct TGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t m = 0, oh = 0, ow = 0;       // output
  int64_t kh = 0, kw = 0, group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t oph = 0, opw = 0;
  bool has_bias = false;
};

Result<std::vector<int64_t>> pair_attr(const NodeView& v, const char* name,
                                       std::vector<int64_t> dflt, size_t count, int64_t min) {
  GRAPHI_ASSIGN_OR_RETURN(auto a, graph::attr_ints(v.node.attrs, v.where, name, dflt));
  bool ok = a.size() == count;
  for (int64_t x : a) ok = ok && x >= min;
  if (!ok)
    return Status::invalid_graph(v.where + ": attribute '" + name + "' must be " +
                                 std::to_string(count) + " ints >= " + std::to_string(min) +
                                 ", got " + ints_to_string(a));
  return a;
}

Result<TGeometry> tgeometry(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 3, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "W", {DType::kF32}));
  const TensorDesc &x = v.in(0), &w = v.in(1);
  if (x.rank() != 4)
    return Status::unsupported(v.where + ": input X " + x.to_string() +
                               " is not supported: only 1-D and 2-D ConvTranspose (NCL, NCHW)");
  if (w.rank() != 4)
    return Status::invalid_graph(v.where + ": input W must be [C, M/group, kH, kW], got " +
                                 w.to_string());
  GRAPHI_ASSIGN_OR_RETURN(std::string auto_pad,
                          graph::attr_string(v.node.attrs, v.where, "auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET")
    return Status::unsupported(v.where + ": attribute 'auto_pad' = '" + auto_pad +
                               "' is not supported (only NOTSET); give explicit 'pads'");
  if (v.node.attrs.has("output_shape"))
    return Status::unsupported(v.where +
                               ": attribute 'output_shape' is not supported; give 'pads' and "
                               "'output_padding'");
  TGeometry g;
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.h = x.shape[2];
  g.w = x.shape[3];
  GRAPHI_ASSIGN_OR_RETURN(g.group, graph::attr_int(v.node.attrs, v.where, "group", 1));
  if (g.group < 1 || g.c % g.group != 0 || w.shape[0] != g.c)
    return Status::invalid_graph(v.where + ": W " + w.to_string() +
                                 " and group = " + std::to_string(g.group) + " do not fit X " +
                                 x.to_string() + " (W's dim 0 must be C, divisible by group)");
  g.m = w.shape[1] * g.group;
  g.kh = w.shape[2];
  g.kw = w.shape[3];
  if (v.node.attrs.has("kernel_shape")) {
    GRAPHI_ASSIGN_OR_RETURN(auto ks, graph::attr_ints(v.node.attrs, v.where, "kernel_shape"));
    if (ks != std::vector<int64_t>{g.kh, g.kw})
      return Status::invalid_graph(v.where + ": attribute 'kernel_shape' " + ints_to_string(ks) +
                                   " does not match W " + w.to_string());
  }
  GRAPHI_ASSIGN_OR_RETURN(auto st, pair_attr(v, "strides", {1, 1}, 2, 1));
  GRAPHI_ASSIGN_OR_RETURN(auto dl, pair_attr(v, "dilations", {1, 1}, 2, 1));
  GRAPHI_ASSIGN_OR_RETURN(auto pd, pair_attr(v, "pads", {0, 0, 0, 0}, 4, 0));
  GRAPHI_ASSIGN_OR_RETURN(auto op, pair_attr(v, "output_padding", {0, 0}, 2, 0));
  g.sh = st[0], g.sw = st[1], g.dh = dl[0], g.dw = dl[1];
  g.pt = pd[0], g.pl = pd[1], g.pb = pd[2], g.pr = pd[3];
  g.oph = op[0], g.opw = op[1];
  g.oh = g.sh * (g.h - 1) + g.oph + (g.kh - 1) * g.dh + 1 - g.pt - g.pb;
  g.ow = g.sw * (g.w - 1) + g.opw + (g.kw - 1) * g.dw + 1 - g.pl - g.pr;
  if (g.oh < 1 || g.ow < 1)
    return Status::invalid_graph(v.where + ": the output would be empty (" + std::to_string(g.oh) +
                                 " x " + std::to_string(g.ow) + ")");
  if (v.has_input(2)) {
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 2, "B", {DType::kF32}));
    if (v.in(2).numel() != g.m || v.in(2).rank() != 1)
      return Status::invalid_graph(v.where + ": input B must be [" + std::to_string(g.m) +
                                   "], got " + v.in(2).to_string());
    g.has_bias = true;
  }
  return g;
}

// Scratch regions of the patch kernels: oneDNN's scratchpad, then the patches, 64-byte aligned.
size_t align64(size_t n) { return (n + 63) / 64 * 64; }

bool is_patch(const TGeometry& g) {
  return g.group == 1 && g.kh == g.sh && g.kw == g.sw && g.dh == 1 && g.dw == 1 && !g.pt && !g.pl &&
         !g.pb && !g.pr && !g.oph && !g.opw;
}

// BlockedConvTranspose (graph/passes/blocked_layout.h): X as nChw{B}c [N, ceil(C/B), H, W, B]
// (C from W's dim 0, padding lanes zero), the geometry that of ConvTranspose on [N, C, H, W];
// only the patch up-sampler. `b` gets B.
Result<TGeometry> blocked_tgeometry(const NodeView& v, int64_t* b) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 3, 2));
  GRAPHI_ASSIGN_OR_RETURN(*b, layout_block(v.node, v.where));
  const TensorDesc &x = v.in(0), &w = v.in(1);
  if (x.rank() != 5 || x.shape[4] != *b || w.rank() != 4 ||
      x.shape[1] != (w.shape[0] + *b - 1) / *b)
    return Status::invalid_graph(v.where + ": blocked input X " + x.to_string() +
                                 " does not hold the C = W's dim 0 channels of W " + w.to_string() +
                                 " in blocks of " + std::to_string(*b));
  const TensorDesc logical{x.dtype, {x.shape[0], w.shape[0], x.shape[2], x.shape[3]}};
  std::vector<const TensorDesc*> in(v.inputs.begin(), v.inputs.end());
  in[0] = &logical;
  GRAPHI_ASSIGN_OR_RETURN(TGeometry g, tgeometry(NodeView{v.node, in, v.const_inputs, v.where}));
  if (!is_patch(g))
    return Status::unsupported(v.where +
                               ": BlockedConvTranspose runs the patch up-sampler only (group 1, "
                               "kernel = strides, no pads, dilations or output_padding)");
  return g;
}

Result<std::vector<TensorDesc>> infer_conv_transpose(const graph::InferContext& ctx) {
  if (ctx.node.op == "BlockedConvTranspose") {
    int64_t b = 0;
    GRAPHI_ASSIGN_OR_RETURN(TGeometry g, blocked_tgeometry(NodeView::of(ctx), &b));
    return std::vector<TensorDesc>{
        TensorDesc{DType::kF32, {g.n, (g.m + b - 1) / b, g.oh, g.ow, b}}};
  }
  GRAPHI_ASSIGN_OR_RETURN(TGeometry g, tgeometry(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {g.n, g.m, g.oh, g.ow}}};
}

CostHint cost_conv_transpose(const graph::Node&, std::span<const TensorDesc* const> in,
                             std::span<const TensorDesc* const> out) {
  const TensorDesc& w = *in[1];
  return {2.0 * static_cast<double>(in[0]->numel() * w.shape[1] * w.shape[2] * w.shape[3]),
          static_cast<double>(in[0]->bytes() + w.bytes() + out[0]->bytes())};
}

class ConvTransposeKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, tgeometry(NodeView::of_kernel(ctx)));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* w = static_cast<const float*>(io.inputs[1]);
    const auto* b = g_.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    auto* y = static_cast<float*>(io.outputs[0]);
    const int64_t cg = g_.c / g_.group, mg = g_.m / g_.group;
    const int64_t plane = g_.oh * g_.ow;
    auto [begin, end] = team_range(g_.n * g_.m, team.ithr, team.nthr);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / g_.m, m = p % g_.m, grp = m / mg, mi = m % mg;
      float* yp = y + p * plane;
      const float bias = b ? b[m] : 0.0f;
      for (int64_t k = 0; k < plane; ++k) yp[k] = bias;
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int64_t c = grp * cg + ci;
        const float* xp = x + (n * g_.c + c) * g_.h * g_.w;
        const float* wp = w + (c * mg + mi) * g_.kh * g_.kw;
        for (int64_t kh = 0; kh < g_.kh; ++kh)
          for (int64_t kw = 0; kw < g_.kw; ++kw) {
            const float wv = wp[kh * g_.kw + kw];
            for (int64_t ih = 0; ih < g_.h; ++ih) {
              const int64_t oh = ih * g_.sh - g_.pt + kh * g_.dh;
              if (oh < 0 || oh >= g_.oh) continue;
              for (int64_t iw = 0; iw < g_.w; ++iw) {
                const int64_t ow = iw * g_.sw - g_.pl + kw * g_.dw;
                if (ow < 0 || ow >= g_.ow) continue;
                yp[oh * g_.ow + ow] += xp[ih * g_.w + iw] * wv;
              }
            }
          }
      }
    }
  }
  const char* name() const override { return "conv_transpose_scatter"; }

 private:
  TGeometry g_;
};

// oneDNN's deconvolution (created once at init; the weights are read in place every run): the
// Conv gradient's dX. Declines groups, output_padding beyond the bottom/right pads (oneDNN has
// no negative padding here) and shapes oneDNN serves only with its reference code; the scatter
// kernel below takes those.
class OnednnConvTransposeKernel final : public Kernel {
 public:
  const char* name() const override { return "conv_transpose_onednn"; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, tgeometry(NodeView::of_kernel(ctx)));
    if (g_.group != 1) return Status::unsupported("group " + std::to_string(g_.group));
    if (g_.oph > g_.pb || g_.opw > g_.pr)
      return Status::unsupported("output_padding beyond the bottom/right pads");
    onednn::ConvSpec s;  // the convolution from Y [n, m, oh, ow] to X [n, c, h, w]
    s.n = g_.n;
    s.c = g_.m;
    s.h = g_.oh;
    s.w = g_.ow;
    s.oc = g_.c;
    s.oh = g_.h;
    s.ow = g_.w;
    s.kh = g_.kh;
    s.kw = g_.kw;
    s.stride_h = g_.sh;
    s.stride_w = g_.sw;
    s.dilation_h = g_.dh;
    s.dilation_w = g_.dw;
    s.pad_top = g_.pt;
    s.pad_left = g_.pl;
    s.pad_bottom = g_.pb - g_.oph;  // output_padding extends the output at the bottom/right
    s.pad_right = g_.pr - g_.opw;
    s.has_bias = g_.has_bias;
    s.staged = true;  // oneDNN's blocked layouts through scratch (nchw im2col + GEMM is slower)
    GRAPHI_ASSIGN_OR_RETURN(
        prim_, make_fastest_conv(s, ctx.team_size, false, onednn::make_deconv, "deconv"));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    const float* bias = g_.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]),
                        static_cast<const float*>(io.inputs[1]), bias, y, team.scratch, team.nthr,
                        team.scratch_bytes)) {
      onednn::fail_output(name(), y, g_.n * g_.m * g_.oh * g_.ow);
    }
  }

 private:
  TGeometry g_;
  std::unique_ptr<onednn::Primitive> prim_;
};

// ConvTranspose as one GEMM per image and a rearrangement (group 1, constant weights): every
// input pixel's contribution is P[n, (m, a, b), i*W + j] = sum_c W[c, (m, a, b)] X[n, c, i, j]
// (W transposed once at init, X as it is; oneDNN's matmul), and Y[n, m, oy, ox] is the bias plus
// the P entries whose tap (a, b) lands on (oy, ox): oy = i*sh - pt + a*dh, ox = j*sw - pl + b*dw.
// - The U-Net / FCN up-sampler (kernel = stride, no pads, no dilation, no output_padding): each
//   output is one P entry, a shuffle ("conv_transpose_patch_matmul"). oneDNN's deconvolution
//   computes it as a strided backward-data convolution at a fraction of the FMA rate (a U-Net's
//   64 -> 32 2x2 stride-2 up-sampler at 32x32: ~2.5 ms against ~0.2 ms here, 2 threads).
// - Any other with few channels (fewer than 16 in or out: a decoder's or a DCGAN generator's
//   head, 8 -> 3 at 32x32): the taps that land on each output row are summed (col2im, as ONNX
//   Runtime and PyTorch run every ConvTranspose; "conv_transpose_col2im"). oneDNN's kernels
//   want whole channel blocks there (8 -> 3, 3x3 stride 2, batch 3: 0.22 ms against 0.04 in ORT).
//   P must fit in 16 MiB; wider layers go to oneDNN.
class GemmConvTransposeKernel final : public Kernel {
 public:
  const char* name() const override {
    return patch_ ? "conv_transpose_patch_matmul" : "conv_transpose_col2im";
  }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override {
    return prim_ ? align64(prim_->scratch_bytes()) + patch_bytes_ : 0;
  }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, tgeometry(NodeView::of_kernel(ctx)));
    patch_ = is_patch(g_);
    const int64_t hw = g_.h * g_.w, mk = g_.m * g_.kh * g_.kw;
    if (!patch_) {
      if (g_.group != 1) return Status::unsupported("group " + std::to_string(g_.group));
      if (std::min(g_.c, g_.m) >= 16)
        return Status::unsupported("16 or more channels in and out (oneDNN's kernels)");
      if (g_.n * hw * mk > (int64_t{4} << 20))
        return Status::unsupported("the patches would take over 16 MiB");
    }
    const Tensor* w = ctx.constant(1);
    if (!w) return Status::unsupported("weights given at run time");
    wt_.resize(static_cast<size_t>(mk * g_.c));  // W^T: [M*kh*kw, C]
    for (int64_t c = 0; c < g_.c; ++c)
      for (int64_t r = 0; r < mk; ++r) wt_[r * g_.c + c] = w->data_as<float>()[c * mk + r];
    onednn::MatMulSpec s;
    s.src = {{1, mk, g_.c}, {}};
    s.weights = {{g_.n, g_.c, hw}, {}};  // X, given every run
    s.dst = {{g_.n, mk, hw}, {}};
    GRAPHI_ASSIGN_OR_RETURN(prim_, onednn::make_matmul(s, ctx.team_size));
    patch_bytes_ = align64(static_cast<size_t>(g_.n * hw * mk) * sizeof(float));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    char* scratch = static_cast<char*>(team.scratch);
    float* patches = reinterpret_cast<float*>(scratch + align64(prim_->scratch_bytes()));
    if (!prim_->execute(wt_.data(), static_cast<const float*>(io.inputs[0]), nullptr, patches,
                        scratch, team.nthr, align64(prim_->scratch_bytes()))) {
      onednn::fail_output(name(), y, g_.n * g_.m * g_.oh * g_.ow);
      return;
    }
    const float* b = g_.has_bias ? static_cast<const float*>(io.inputs[2]) : nullptr;
    // Output rows (n, m, oy) split over the team; each reads its patches' (a, b) entries.
    const int64_t rows = g_.n * g_.m * g_.oh;
#pragma omp parallel num_threads(team.nthr)
    {
      auto [r0, r1] = team_range(rows, omp_get_thread_num(), omp_get_num_threads());
      for (int64_t r = r0; r < r1; ++r) {
        if (patch_)
          patch_row(patches, b, y, r);
        else
          col2im_row(patches, b, y, r);
      }
    }
  }

 private:
  void patch_row(const float* patches, const float* b, float* y, int64_t r) const noexcept {
    const int64_t hw = g_.h * g_.w, mk = g_.m * g_.kh * g_.kw;
    const int64_t oy = r % g_.oh, nm = r / g_.oh, m = nm % g_.m, n = nm / g_.m;
    const int64_t i = oy / g_.sh, a = oy % g_.sh;
    const float bias = b ? b[m] : 0.0f;
    const float* src = patches + (n * mk + (m * g_.kh + a) * g_.kw) * hw + i * g_.w;
    float* dst = y + r * g_.ow;
    for (int64_t bb = 0; bb < g_.kw; ++bb)
      for (int64_t j = 0; j < g_.w; ++j) dst[j * g_.kw + bb] = src[bb * hw + j] + bias;
  }

  // Output row oy of (n, m): the bias, then for each kernel row a whose taps land on it (input
  // row i = (oy + pt - a*dh) / sh) and each kernel column b, P's row segment added at stride sw.
  void col2im_row(const float* patches, const float* b, float* y, int64_t r) const noexcept {
    const int64_t hw = g_.h * g_.w, mk = g_.m * g_.kh * g_.kw;
    const int64_t oy = r % g_.oh, nm = r / g_.oh, m = nm % g_.m, n = nm / g_.m;
    float* dst = y + r * g_.ow;
    std::fill_n(dst, g_.ow, b ? b[m] : 0.0f);
    for (int64_t a = 0; a < g_.kh; ++a) {
      const int64_t t = oy + g_.pt - a * g_.dh;
      if (t < 0 || t % g_.sh != 0 || t / g_.sh >= g_.h) continue;
      const int64_t i = t / g_.sh;
      for (int64_t bb = 0; bb < g_.kw; ++bb) {
        const float* src = patches + (n * mk + (m * g_.kh + a) * g_.kw + bb) * hw + i * g_.w;
        const int64_t off = bb * g_.dw - g_.pl;  // ox = j * sw + off
        // j with 0 <= j * sw + off < ow
        const int64_t j0 = off >= 0 ? 0 : (-off + g_.sw - 1) / g_.sw;
        const int64_t j1 = std::min(g_.w, (g_.ow - off + g_.sw - 1) / g_.sw);
        for (int64_t j = j0; j < j1; ++j) dst[j * g_.sw + off] += src[j];
      }
    }
  }

  TGeometry g_;
  bool patch_ = false;
  std::vector<float> wt_;  // W^T, the GEMM's constant left operand
  std::unique_ptr<onednn::Primitive> prim_;
  size_t patch_bytes_ = 0;
};

// The patch up-sampler on nChw{B}c activations (BlockedConvTranspose): X [N, ceil(C/B), H, W, B]
// -> Y [N, ceil(M/B), H*kh, W*kw, B]. Each input pixel's kh x kw output patch is a 1x1
// convolution to kh*kw*Mp channels ordered (a, b, m), M padded to whole blocks Mp, which oneDNN's
// jit 1x1 kernel runs in nChw{B}c into scratch P; a shuffle then moves every B-lane vector
// P[n, (a*kw + b)*Mp/B + mb, i, j] to Y[n, mb, i*kh + a, j*kw + b] (a U-Net's decoder keeps its
// blocked layout: no FromBlocked / ToBlocked around the up-sampler and the Concat after it).
// Padding lanes (m >= M) get zero weights and bias, so they stay zero.
class BlockedPatchConvTransposeKernel final : public Kernel {
 public:
  const char* name() const override { return "conv_transpose_patch_blocked"; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override {
    return prim_ ? align64(prim_->scratch_bytes()) + patch_bytes_ : 0;
  }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, blocked_tgeometry(NodeView::of_kernel(ctx), &b_));
    const Tensor* w = ctx.constant(1);
    if (!w) return Status::unsupported("weights given at run time");
    const Tensor* bias = ctx.inputs.size() > 2 && ctx.inputs[2] ? ctx.constant(2) : nullptr;
    if (ctx.inputs.size() > 2 && ctx.inputs[2] && !bias)
      return Status::unsupported("bias given at run time");
    mp_ = (g_.m + b_ - 1) / b_ * b_;
    const int64_t k = g_.kh * g_.kw, c = g_.c, m = g_.m;
    // W [C, M, kh, kw] -> the 1x1 conv's [k * Mp, C, 1, 1], output channel (a*kw + b)*Mp + m.
    wc_.assign(static_cast<size_t>(k * mp_ * c), 0.0f);
    bc_.assign(static_cast<size_t>(k * mp_), 0.0f);
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t mi = 0; mi < m; ++mi)
        for (int64_t ab = 0; ab < k; ++ab)
          wc_[static_cast<size_t>((ab * mp_ + mi) * c + ci)] =
              w->data_as<float>()[(ci * m + mi) * k + ab];
    if (bias)
      for (int64_t ab = 0; ab < k; ++ab)
        std::copy(bias->data_as<float>(), bias->data_as<float>() + m, &bc_[ab * mp_]);
    onednn::ConvSpec s;
    s.n = g_.n;
    s.c = c;
    s.h = s.oh = g_.h;
    s.w = s.ow = g_.w;
    s.oc = k * mp_;
    s.kh = s.kw = 1;
    s.has_bias = true;
    s.src_block = s.dst_block = static_cast<int>(b_);
    s.const_weights = wc_.data();
    GRAPHI_ASSIGN_OR_RETURN(prim_, onednn::make_conv(s, ctx.team_size));
    patch_bytes_ = align64(static_cast<size_t>(g_.n * k * mp_ * g_.h * g_.w) * sizeof(float));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    char* scratch = static_cast<char*>(team.scratch);
    float* p = reinterpret_cast<float*>(scratch + align64(prim_->scratch_bytes()));
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]), nullptr, bc_.data(), p, scratch,
                        team.nthr, align64(prim_->scratch_bytes()))) {
      onednn::fail_output(name(), y, g_.n * mp_ * g_.oh * g_.ow);
      return;
    }
    const int64_t mb = mp_ / b_, hw = g_.h * g_.w, k = g_.kh * g_.kw, b = b_;
    const size_t vec = static_cast<size_t>(b) * sizeof(float);
    // Output rows (n, mb, oy) split over the team; each row reads kw vectors per input pixel.
    const int64_t rows = g_.n * mb * g_.oh;
#pragma omp parallel num_threads(team.nthr)
    {
      auto [r0, r1] = team_range(rows, omp_get_thread_num(), omp_get_num_threads());
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t oy = r % g_.oh, nm = r / g_.oh, blk = nm % mb, n = nm / mb;
        const int64_t i = oy / g_.sh, a = oy % g_.sh;
        float* dst = y + r * g_.ow * b;
        for (int64_t bb = 0; bb < g_.kw; ++bb) {
          const float* src = p + ((n * k * mb + (a * g_.kw + bb) * mb + blk) * hw + i * g_.w) * b;
          for (int64_t j = 0; j < g_.w; ++j)
            std::memcpy(dst + (j * g_.kw + bb) * b, src + j * b, vec);
        }
      }
    }
  }

 private:
  TGeometry g_;
  int64_t b_ = 16, mp_ = 0;
  std::vector<float> wc_, bc_;  // the 1x1 conv's weights [k * Mp, C] and bias [k * Mp]
  std::unique_ptr<onednn::Primitive> prim_;
  size_t patch_bytes_ = 0;
};

std::unique_ptr<Kernel> make_conv_transpose() { return std::make_unique<ConvTransposeKernel>(); }
std::unique_ptr<Kernel> make_patch_conv_transpose() {
  return std::make_unique<GemmConvTransposeKernel>();
}
std::unique_ptr<Kernel> make_onednn_conv_transpose() {
  return std::make_unique<OnednnConvTransposeKernel>();
}

}  // namespace

void register_conv_transpose_op(Registry& r) {
  r.add({"ConvTranspose",
         infer_conv_transpose,
         cost_conv_transpose,
         false,
         {make_patch_conv_transpose, make_onednn_conv_transpose, make_conv_transpose}});
  r.add({"BlockedConvTranspose",
         infer_conv_transpose,
         cost_conv_transpose,
         false,
         {[]() -> std::unique_ptr<Kernel> {
           return std::make_unique<BlockedPatchConvTransposeKernel>();
         }}});
}

}  // namespace graphi::ops
