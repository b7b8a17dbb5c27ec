// ChannelAffine(X, S, B) -> Y (graphi's own op, attribute `activation`: "Relu" or absent):
// Y = act(X * S[c] + B[c]) per channel c, in one pass. It is an inference BatchNormalization
// that no conv absorbs (the importer's Mul + Add) and the Relu after it, DenseNet's
// pre-activation before each conv: three passes over the concatenated features become one
// (graph/passes/channel_affine.h emits it). X is [N, C, H, W] with S and B [C, 1, 1] or
// [1, C, 1, 1], or channel-blocked [N, C/L, H, W, L] (graph/passes/blocked_layout.h) with S and B
// [1, C/L, 1, 1, L] (padding lanes zero, so padding lanes stay zero).
#include <immintrin.h>

#include <algorithm>

#include "ops/activations.h"  // SimdIsa, active_simd_isa()
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct AffineShape {
  int64_t outer = 0;     // N * channels (NCHW) or N * channel blocks (blocked)
  int64_t channels = 0;  // C, or blocks (per image)
  int64_t pixels = 0;    // H * W
  int64_t lanes = 1;     // 1 (NCHW) or L
  bool relu = false;
};

Result<AffineShape> shape_of(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 3, 3));
  const TensorDesc& x = v.in(0);
  if (x.dtype != DType::kF32 || (x.rank() != 4 && x.rank() != 5))
    return Status::invalid_graph(v.where +
                                 ": input X must be float32 [N, C, H, W] or blocked "
                                 "[N, C/L, H, W, L], got " +
                                 x.to_string());
  AffineShape s;
  s.lanes = x.rank() == 5 ? x.shape[4] : 1;
  s.channels = x.shape[1];
  s.outer = x.shape[0] * s.channels;
  s.pixels = x.shape[2] * x.shape[3];
  const Shape per_channel =
      x.rank() == 5 ? Shape{1, x.shape[1], 1, 1, x.shape[4]} : Shape{1, x.shape[1], 1, 1};
  for (size_t i : {size_t{1}, size_t{2}}) {
    const TensorDesc& d = v.in(i);
    const bool ok =
        d.dtype == DType::kF32 &&
        (d.shape == per_channel || (x.rank() == 4 && d.shape == Shape{x.shape[1], 1, 1}));
    if (!ok)
      return Status::invalid_graph(v.where + ": input " + (i == 1 ? "S" : "B") +
                                   " must be float32 " + shape_to_string(per_channel) +
                                   " (one value per channel of X " + x.to_string() + "), got " +
                                   d.to_string());
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string act,
                          graph::attr_string(v.node.attrs, v.where, "activation", ""));
  if (act != "" && act != "Relu")
    return Status::unsupported(v.where + ": attribute 'activation' = '" + act +
                               "' is not supported (Relu or none)");
  s.relu = act == "Relu";
  return s;
}

Result<std::vector<TensorDesc>> infer_channel_affine(const graph::InferContext& ctx) {
  const NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(shape_of(v).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_channel_affine(const graph::Node&, std::span<const TensorDesc* const>,
                             std::span<const TensorDesc* const> out) {
  return {2.0 * static_cast<double>(out[0]->numel()), 2.0 * static_cast<double>(out[0]->bytes())};
}

// Rows r in [first, last): row r is one plane (NCHW, one scale) or one channel block's
// pixels * L values (one vector of L scales).
template <bool kRelu>
void affine_rows(const float* x, const float* s, const float* b, float* y, int64_t first,
                 int64_t last, const AffineShape& sh) {
  const int64_t lanes = sh.lanes;
  for (int64_t r = first; r < last; ++r) {
    const int64_t c0 = (r % sh.channels) * lanes;
    const float* xr = x + r * sh.pixels * lanes;
    float* yr = y + r * sh.pixels * lanes;
    for (int64_t p = 0; p < sh.pixels; ++p)
      for (int64_t l = 0; l < lanes; ++l) {
        const float v = xr[p * lanes + l] * s[c0 + l] + b[c0 + l];
        yr[p * lanes + l] = kRelu ? (v < 0.0f ? 0.0f : v) : v;
      }
  }
}

// The blocked layout's 16-lane rows on AVX-512 (x * s + b, then max(0, v) when `relu`: MAXPS
// returns its second operand when one is NaN, so a NaN stays NaN, as in graphi's Relu).
__attribute__((target("avx512f"))) void affine_rows16_avx512(const float* x, const float* s,
                                                             const float* b, float* y,
                                                             int64_t first, int64_t last,
                                                             int64_t channels, int64_t pixels,
                                                             bool relu) noexcept {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t r = first; r < last; ++r) {
    const int64_t c0 = (r % channels) * 16;
    const __m512 sv = _mm512_loadu_ps(s + c0), bv = _mm512_loadu_ps(b + c0);
    const float* xr = x + r * pixels * 16;
    float* yr = y + r * pixels * 16;
    if (relu)
      for (int64_t p = 0; p < pixels; ++p)
        _mm512_storeu_ps(
            yr + p * 16,
            _mm512_max_ps(zero, _mm512_fmadd_ps(_mm512_loadu_ps(xr + p * 16), sv, bv)));
    else
      for (int64_t p = 0; p < pixels; ++p)
        _mm512_storeu_ps(yr + p * 16, _mm512_fmadd_ps(_mm512_loadu_ps(xr + p * 16), sv, bv));
  }
}

// NCHW rows (one plane of one channel, one scale and shift): the pixels in 16-lane vectors, a
// masked tail (the generic loop above, with its per-pixel lane loop, took ~2.5 ns a value:
// BiT's GroupNorm affine over [1, 256, 56, 56] 2 ms on one core).
__attribute__((target("avx512f"))) void affine_planes_avx512(const float* x, const float* s,
                                                             const float* b, float* y,
                                                             int64_t first, int64_t last,
                                                             int64_t channels, int64_t pixels,
                                                             bool relu) noexcept {
  const __m512 zero = _mm512_setzero_ps();
  const int64_t body = pixels / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (pixels - body)) - 1u);
  for (int64_t r = first; r < last; ++r) {
    const __m512 sv = _mm512_set1_ps(s[r % channels]), bv = _mm512_set1_ps(b[r % channels]);
    const float* xr = x + r * pixels;
    float* yr = y + r * pixels;
    for (int64_t p = 0; p < body; p += 16) {
      __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(xr + p), sv, bv);
      _mm512_storeu_ps(yr + p, relu ? _mm512_max_ps(zero, v) : v);
    }
    if (tail) {
      __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, xr + body), sv, bv);
      _mm512_mask_storeu_ps(yr + body, tail, relu ? _mm512_max_ps(zero, v) : v);
    }
  }
}

class ChannelAffineKernel final : public Kernel {
 public:
  const char* name() const override { return "channel_affine"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(shape_, shape_of(NodeView::of_kernel(ctx)));
    avx512_ = active_simd_isa() == SimdIsa::kAvx512;
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* x = static_cast<const float*>(io.inputs[0]);
    const float* s = static_cast<const float*>(io.inputs[1]);
    const float* b = static_cast<const float*>(io.inputs[2]);
    float* y = static_cast<float*>(io.outputs[0]);
    auto [r0, r1] = team_range(shape_.outer, team.ithr, team.nthr);
    const bool relu = shape_.relu;
    if (avx512_ && shape_.lanes == 16)
      affine_rows16_avx512(x, s, b, y, r0, r1, shape_.channels, shape_.pixels, relu);
    else if (avx512_ && shape_.lanes == 1)
      affine_planes_avx512(x, s, b, y, r0, r1, shape_.channels, shape_.pixels, relu);
    else if (relu)
      affine_rows<true>(x, s, b, y, r0, r1, shape_);
    else
      affine_rows<false>(x, s, b, y, r0, r1, shape_);
  }

 private:
  AffineShape shape_;
  bool avx512_ = false;
};

std::unique_ptr<Kernel> make_channel_affine() { return std::make_unique<ChannelAffineKernel>(); }

}  // namespace

void register_channel_affine_op(Registry& r) {
  r.add({"ChannelAffine", infer_channel_affine, cost_channel_affine, false, {make_channel_affine}});
}

}  // namespace graphi::ops
