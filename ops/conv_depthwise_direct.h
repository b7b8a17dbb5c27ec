// A direct depthwise convolution on channel-blocked tensors ([N, C/B, H, W, B], B = 8 or 16),
// for the shapes oneDNN 2.6 runs only in its reference code: its jit depthwise kernels take a
// few kernel sizes (3x3, 5x5, ...), so a Conformer's 1-D depthwise conv of width 31 (a 1x31
// kernel over [1, 384, 1, 49]) took 12.6 ms there against ORT's 0.12. Any kernel size, stride,
// dilation and padding; bias, the residual input Z and the activation applied in the same pass;
// the output's padding lanes written as zeros. Each (image, channel block, output row) is one
// work item; the B lanes of a pixel are one vector.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/conv_activation.h"

namespace graphi::ops {

struct DepthwiseGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  int64_t block = 16;
};

class DepthwiseBlockedDirect {
 public:
  // weights: [C, 1, kh, kw] (PyTorch's layout), packed here as [C/B, kh, kw, B]; bias: [C] or
  // nullptr.
  DepthwiseBlockedDirect(const DepthwiseGeometry& g, const float* weights, const float* bias,
                         ConvPostOp post);
  // Work items [begin, end) of items() (a team splits them).
  void run(const float* x, const float* z, float* y, int64_t begin, int64_t end) const noexcept;
  int64_t items() const { return g_.n * blocks_ * g_.oh; }

 private:
  DepthwiseGeometry g_;
  int64_t blocks_ = 0;
  std::vector<float> w_, b_;  // packed weights, bias per padded channel
  ConvPostOp post_;
};

}  // namespace graphi::ops
