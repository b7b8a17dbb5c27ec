#include "ops/conv_depthwise_direct.h"

#include <algorithm>

namespace graphi::ops {

DepthwiseBlockedDirect::DepthwiseBlockedDirect(const DepthwiseGeometry& g, const float* weights,
                                               const float* bias, ConvPostOp post)
    : g_(g), blocks_((g.c + g.block - 1) / g.block), post_(post) {
  const int64_t B = g.block, taps = g.kh * g.kw;
  w_.assign(static_cast<size_t>(blocks_ * taps * B), 0.0f);
  b_.assign(static_cast<size_t>(blocks_ * B), 0.0f);
  for (int64_t ch = 0; ch < g.c; ++ch) {
    const int64_t cb = ch / B, lane = ch % B;
    for (int64_t t = 0; t < taps; ++t)
      w_[static_cast<size_t>((cb * taps + t) * B + lane)] = weights[ch * taps + t];
    if (bias) b_[static_cast<size_t>(cb * B + lane)] = bias[ch];
  }
}

void DepthwiseBlockedDirect::run(const float* x, const float* z, float* y, int64_t begin,
                                 int64_t end) const noexcept {
  const DepthwiseGeometry& g = g_;
  const int64_t B = g.block, taps = g.kh * g.kw;
  constexpr int64_t kMaxBlock = 16;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t oy = item % g.oh, nb = item / g.oh;  // nb = image * blocks + block
    const int64_t cb = nb % blocks_;
    const float* xb = x + nb * g.h * g.w * B;
    const float* wb = w_.data() + cb * taps * B;
    const float* bb = b_.data() + cb * B;
    float* yrow = y + (nb * g.oh + oy) * g.ow * B;
    const float* zrow = z ? z + (nb * g.oh + oy) * g.ow * B : nullptr;
    // Lanes past C in the last block are padding: written as zeros.
    const int64_t live = std::min(B, g.c - cb * B);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      float acc[kMaxBlock];
      for (int64_t l = 0; l < B; ++l) acc[l] = bb[l];
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
          if (ix < 0 || ix >= g.w) continue;
          const float* xp = xb + (iy * g.w + ix) * B;
          const float* wp = wb + (ky * g.kw + kx) * B;
#pragma omp simd
          for (int64_t l = 0; l < B; ++l) acc[l] += xp[l] * wp[l];
        }
      }
      float* yp = yrow + ox * B;
      for (int64_t l = 0; l < B; ++l) {
        float v = acc[l] + (zrow ? zrow[ox * B + l] : 0.0f);
        v = post_.kind == ConvActivation::kNone ? v : post_.apply(v);
        yp[l] = l < live ? v : 0.0f;
      }
    }
  }
}

}  // namespace graphi::ops
