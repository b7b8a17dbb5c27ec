// trim_conv_taps: kernel taps that never meet the input, cut from a convolution. A dilated
// convolution on a small image can place some taps (often all but the centre) in the zero padding
// for every output position: DeepLabV3's ASPP convolutions (3x3, dilation and pads 12 / 24 / 36)
// on a 14x14 feature map. Those taps add zeros, and oneDNN 2.6 has no optimized kernel for a
// dilated kernel larger than its padded input, so they ran its reference code (650 ms each for a
// 960 -> 256 conv at 14x14, 2 threads). Per spatial dim, the taps k with no output position o for
// which o * stride - pad_begin + k * dilation lands in [0, size) are cut from the ends of the
// kernel, the pads shrink by what was cut (so the output shape stays), and a dim left with one
// tap gets dilation 1: the ASPP convs at 24 and 36 become 1x1 convs, exactly.
//
// Applies to Conv nodes (any spatial rank, any group) with auto_pad NOTSET, constant f32
// weights and a static input shape. Only taps at the kernel's ends are cut (the valid taps of a
// dim are a contiguous range anyway); a cut that would leave a negative pad is not made.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ConvTrimResult {
  Graph graph;      // a copy of the input when nothing changed
  int trimmed = 0;  // convolutions whose kernel lost taps
};

Result<ConvTrimResult> trim_conv_taps(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
