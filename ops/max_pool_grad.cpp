// MaxPoolGrad(X, dY) -> dX: the gradient of a 2-D (NCHW) MaxPool with any kernel_shape, strides
// and pads (dilations 1, ceil_mode 0), for windows that overlap or are padded (GoogleNet's 3x3
// stride-1 and stride-2 pools), which the composed rule of ops/gradients.cpp cannot express.
// A gradient-only op: the MaxPool rule emits it. Each output position's dy goes to the FIRST
// maximum of its window in row-major order (padding never wins), as PyTorch's CPU max_pool2d
// records its index; positions in several windows add up. Planes (n, c) are independent, so the
// team splits them without atomics. Attribute relu_input (default 0): X is a Relu's output that
// feeds only this pool, and dX is the gradient at the Relu's INPUT: a window whose maximum is not
// > 0 passes nothing (ReluGrad's zero at y <= 0, and for NaN), so the Relu needs no pass of its own
// (the Relu rule of ops/gradients.cpp then passes dX through).
#include <immintrin.h>

#include <limits>

#include "ops/activations.h"  // active_simd_isa
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct PoolGeom {
  int64_t planes = 0, H = 0, W = 0, OH = 0, OW = 0;
  bool relu_input = false;
  std::vector<int64_t> kernel, strides, pads;
};

Result<PoolGeom> pool_geom(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "dY", {DType::kF32}));
  const TensorDesc &x = v.in(0), &dy = v.in(1);
  if (x.rank() != 4 || dy.rank() != 4 || x.shape[0] != dy.shape[0] || x.shape[1] != dy.shape[1])
    return Status::invalid_graph(v.where + ": X and dY must be NCHW with equal N and C, got " +
                                 x.to_string() + " and " + dy.to_string());
  PoolGeom g;
  const auto& a = v.node.attrs;
  GRAPHI_ASSIGN_OR_RETURN(g.kernel, graph::attr_ints(a, v.where, "kernel_shape"));
  GRAPHI_ASSIGN_OR_RETURN(g.strides, graph::attr_ints(a, v.where, "strides", {1, 1}));
  GRAPHI_ASSIGN_OR_RETURN(g.pads, graph::attr_ints(a, v.where, "pads", {0, 0, 0, 0}));
  if (g.kernel.size() != 2 || g.strides.size() != 2 || g.pads.size() != 4 || g.kernel[0] < 1 ||
      g.kernel[1] < 1 || g.strides[0] < 1 || g.strides[1] < 1)
    return Status::invalid_graph(v.where +
                                 ": kernel_shape and strides must be 2 ints >= 1, pads 4 ints");
  g.planes = x.shape[0] * x.shape[1];
  g.H = x.shape[2];
  g.W = x.shape[3];
  g.OH = dy.shape[2];
  g.OW = dy.shape[3];
  GRAPHI_ASSIGN_OR_RETURN(int64_t relu, graph::attr_int(a, v.where, "relu_input", 0));
  if (relu != 0 && relu != 1)
    return Status::invalid_graph(v.where + ": attribute 'relu_input' must be 0 or 1, got " +
                                 std::to_string(relu));
  g.relu_input = relu == 1;
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.shape[2 + d], out = dy.shape[2 + d];
    const int64_t want = (in + g.pads[d] + g.pads[2 + d] - g.kernel[d]) / g.strides[d] + 1;
    if (out != want)
      return Status::invalid_graph(v.where + ": dY's spatial size " + dy.to_string() +
                                   " is not the MaxPool output of X " + x.to_string());
  }
  return g;
}

Result<std::vector<TensorDesc>> infer_max_pool_grad(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(pool_geom(v).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_max_pool_grad(const graph::Node& node, std::span<const TensorDesc* const> in,
                            std::span<const TensorDesc* const> out) {
  (void)node;
  return {static_cast<double>(in[1]->numel()) * 9,
          static_cast<double>(in[0]->bytes() + in[1]->bytes() + out[0]->bytes())};
}

// One row of 2x2 windows (PathNet's pools), the scalar rule of tiling_plane below on 16
// windows per step: rows a and b hold 2 * n inputs, dy n gradients; da and db get dy at each
// window's first maximum (the running-max chain v0 < v1 < v2 < v3 with strict compares, so
// ties and NaNs resolve exactly as the scalar loop does) and 0 elsewhere. Returns the windows
// done (a multiple of 16); the caller finishes the row.
__attribute__((target("avx512f"))) int64_t pool2x2_grad_row_avx512(const float* a, const float* b,
                                                                   const float* dy, float* da,
                                                                   float* db, int64_t n,
                                                                   bool relu_input) noexcept {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512 zero = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 a0 = _mm512_loadu_ps(a + 2 * i), a1 = _mm512_loadu_ps(a + 2 * i + 16);
    const __m512 b0 = _mm512_loadu_ps(b + 2 * i), b1 = _mm512_loadu_ps(b + 2 * i + 16);
    const __m512 v0 = _mm512_permutex2var_ps(a0, even, a1),
                 v1 = _mm512_permutex2var_ps(a0, odd, a1);
    const __m512 v2 = _mm512_permutex2var_ps(b0, even, b1),
                 v3 = _mm512_permutex2var_ps(b0, odd, b1);
    const __mmask16 c1 = _mm512_cmp_ps_mask(v1, v0, _CMP_GT_OQ);
    const __m512 m1 = _mm512_mask_blend_ps(c1, v0, v1);
    const __mmask16 c2 = _mm512_cmp_ps_mask(v2, m1, _CMP_GT_OQ);
    const __m512 m2 = _mm512_mask_blend_ps(c2, m1, v2);
    const __mmask16 c3 = _mm512_cmp_ps_mask(v3, m2, _CMP_GT_OQ);
    const __m512 m3 = _mm512_mask_blend_ps(c3, m2, v3);
    const __mmask16 pass =
        relu_input ? _mm512_cmp_ps_mask(m3, zero, _CMP_GT_OQ) : __mmask16(0xFFFF);
    const __m512 g = _mm512_maskz_loadu_ps(pass, dy + i);
    const __mmask16 k3 = c3, k2 = c2 & ~c3, k1 = c1 & ~(c2 | c3), k0 = ~(c1 | c2 | c3);
    const __m512 g0 = _mm512_maskz_mov_ps(k0, g), g1 = _mm512_maskz_mov_ps(k1, g);
    const __m512 g2 = _mm512_maskz_mov_ps(k2, g), g3 = _mm512_maskz_mov_ps(k3, g);
    _mm512_storeu_ps(da + 2 * i, _mm512_permutex2var_ps(g0, lo, g1));
    _mm512_storeu_ps(da + 2 * i + 16, _mm512_permutex2var_ps(g0, hi, g1));
    _mm512_storeu_ps(db + 2 * i, _mm512_permutex2var_ps(g2, lo, g3));
    _mm512_storeu_ps(db + 2 * i + 16, _mm512_permutex2var_ps(g2, hi, g3));
  }
  return i;
}

class MaxPoolGradKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, pool_geom(NodeView::of_kernel(ctx)));
    tiling_ = g_.kernel == g_.strides && g_.pads == std::vector<int64_t>{0, 0, 0, 0} &&
              g_.H == g_.OH * g_.kernel[0] && g_.W == g_.OW * g_.kernel[1];
    avx512_ = active_simd_isa() == SimdIsa::kAvx512;
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* dy = static_cast<const float*>(io.inputs[1]);
    auto* dx = static_cast<float*>(io.outputs[0]);
    const int64_t kh = g_.kernel[0], kw = g_.kernel[1], sh = g_.strides[0], sw = g_.strides[1];
    auto [begin, end] = team_range(g_.planes, team.ithr, team.nthr);
    if (tiling_) {
      for (int64_t p = begin; p < end; ++p)
        tiling_plane(x + p * g_.H * g_.W, dy + p * g_.OH * g_.OW, dx + p * g_.H * g_.W);
      return;
    }
    for (int64_t p = begin; p < end; ++p) {
      const float* xp = x + p * g_.H * g_.W;
      const float* dyp = dy + p * g_.OH * g_.OW;
      float* dxp = dx + p * g_.H * g_.W;
      for (int64_t i = 0; i < g_.H * g_.W; ++i) dxp[i] = 0.0f;
      for (int64_t oh = 0; oh < g_.OH; ++oh)
        for (int64_t ow = 0; ow < g_.OW; ++ow) {
          const int64_t h0 = oh * sh - g_.pads[0], w0 = ow * sw - g_.pads[1];
          if (kh == 3 && kw == 3 && h0 >= 0 && w0 >= 0 && h0 + 3 <= g_.H && w0 + 3 <= g_.W) {
            // An interior 3x3 window (GoogleNet's pools): no bounds, unrolled.
            const float* r = xp + h0 * g_.W + w0;
            int64_t best = 0;
            float m = r[0];
            for (int64_t dh = 0; dh < 3; ++dh)
              for (int64_t dw = 0; dw < 3; ++dw)
                if (r[dh * g_.W + dw] > m) {
                  m = r[dh * g_.W + dw];
                  best = dh * g_.W + dw;
                }
            if (!g_.relu_input || m > 0.0f) dxp[h0 * g_.W + w0 + best] += dyp[oh * g_.OW + ow];
            continue;
          }
          int64_t best = -1;
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h0 + kh, g_.H); ++h)
            for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w0 + kw, g_.W); ++w) {
              const float val = xp[h * g_.W + w];
              if (best < 0 || val > m) {
                m = val;
                best = h * g_.W + w;
              }
            }
          if (best >= 0 && (!g_.relu_input || m > 0.0f)) dxp[best] += dyp[oh * g_.OW + ow];
        }
    }
  }
  const char* name() const override { return "max_pool_grad"; }

 private:
  // Windows that tile the plane (kernel = strides, no pads, the plane a whole number of
  // windows; PathNet's 2x2 pools): every input position is in exactly one window, so each
  // window writes dy at its first maximum and 0 elsewhere, with no zero fill and no bounds.
  void tiling_plane(const float* xp, const float* dyp, float* dxp) const noexcept {
    const int64_t kh = g_.kernel[0], kw = g_.kernel[1], W = g_.W;
    const bool vec2x2 = avx512_ && kh == 2 && kw == 2;
    for (int64_t oh = 0; oh < g_.OH; ++oh) {
      const float* xr = xp + oh * kh * W;
      float* dr = dxp + oh * kh * W;
      const int64_t done = vec2x2 ? pool2x2_grad_row_avx512(xr, xr + W, dyp + oh * g_.OW, dr,
                                                            dr + W, g_.OW, g_.relu_input)
                                  : 0;
      for (int64_t ow = done; ow < g_.OW; ++ow) {
        const int64_t w0 = ow * kw;
        if (kh == 2 && kw == 2) {
          const float v[4] = {xr[w0], xr[w0 + 1], xr[W + w0], xr[W + w0 + 1]};
          int best = 0;
          for (int q = 1; q < 4; ++q)
            if (v[q] > v[best]) best = q;
          const float g = !g_.relu_input || v[best] > 0.0f ? dyp[oh * g_.OW + ow] : 0.0f;
          dr[w0] = best == 0 ? g : 0.0f;
          dr[w0 + 1] = best == 1 ? g : 0.0f;
          dr[W + w0] = best == 2 ? g : 0.0f;
          dr[W + w0 + 1] = best == 3 ? g : 0.0f;
          continue;
        }
        int64_t best = w0;
        for (int64_t h = 0; h < kh; ++h)
          for (int64_t w = w0; w < w0 + kw; ++w) {
            if (xr[h * W + w] > xr[best]) best = h * W + w;
            dr[h * W + w] = 0.0f;
          }
        dr[best] = !g_.relu_input || xr[best] > 0.0f ? dyp[oh * g_.OW + ow] : 0.0f;
      }
    }
  }

  PoolGeom g_;
  bool tiling_ = false;
  bool avx512_ = false;  // the 2x2 tiling rows on pool2x2_grad_row_avx512 (GRAPHI_SIMD honoured)
};

std::unique_ptr<Kernel> make_max_pool_grad() { return std::make_unique<MaxPoolGradKernel>(); }

}  // namespace

void register_max_pool_grad_op(Registry& r) {
  r.add({"MaxPoolGrad", infer_max_pool_grad, cost_max_pool_grad, false, {make_max_pool_grad}});
}

}  // namespace graphi::ops
