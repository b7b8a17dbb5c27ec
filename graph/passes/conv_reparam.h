// reparameterize_conv_branches: parallel branches that are summed become one convolution
// ("structural re-parameterization", the step RepVGG, MobileOne, ACNet and DBB take before they
// deploy). Exported in their training form, those models sum, before each activation, several
// convolutions of the same input (MobileOne-S0: four 3x3 depthwise convs, a 1x1 one and a
// BatchNormalization of the input itself; RepVGG: a 3x3, a 1x1 and a BatchNormalization). Every
// branch is linear in the input, so their sum is one convolution whose kernel is the branches'
// kernels, each placed at its own offset in the largest window, added up; the identity branch is
// a one at the centre tap of each channel's own input channel; biases and constants add up.
// One convolution then reads the input once instead of once per branch, and the Adds go.
//
// A tree of Add nodes (inner sums read only by the next Add, same shape as the root) is split
// into its summands. Summands of one input X merge: Conv nodes of X (constant f32 weights, an
// optional constant bias, auto_pad NOTSET, dilation 1, the same strides, group and weight shape
// but the kernel), X itself (stride 1, as many output as input channels, same shape), either of
// them through a Mul by a per-channel or scalar constant (an unfolded BatchNormalization), and
// constants broadcast per channel. The X with the most convolutions is taken; what else the tree
// sums (another value, a Conv that does not match) is added after the new convolution. The
// merged window may be larger than every member's (1x3 + 3x1 -> 3x3): it is made only when its
// taps are at most twice the members' together.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ConvReparamResult {
  Graph graph;       // a copy of the input when nothing changed
  int merged = 0;    // sums that became one convolution
  int branches = 0;  // Conv / identity branches they replaced
};

Result<ConvReparamResult> reparameterize_conv_branches(const Graph& g,
                                                       const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
