// to_blocked_layout: runs chains of convolutions in oneDNN's channel-blocked layout nChw{B}c
// (B = 16 where oneDNN's kernels are AVX-512 ones, 8 on AVX2: `block`, which the engine takes
// from oneDNN's ISA), held as [N, ceil(C/B), H, W, B], with reorders only at the boundaries.
// oneDNN's direct/brgemm convolutions and pools want it (their "any" format); fed NCHW they
// fall back to im2col + GEMM (and depthwise ones to a GEMM per group) or reorder on every call.
// A channel count that is no multiple of B is padded to whole blocks, as oneDNN pads its own
// blocked memory: the padding lanes are zero (oneDNN zeroes them in every primitive's output,
// ToBlocked writes zeros), and only ops that keep them zero stay blocked on such a value.
// Rewrites, in topological order:
// - Conv / FusedConv with constant weights, group 1 or depthwise (group = C = M: oneDNN's jit
//   depthwise kernels are blocked-only) -> BlockedConv (activation kept): a blocked X as is, a
//   plain X through a ToBlocked, or directly when it has fewer than 8 channels and group 1 (the
//   first layer: oneDNN reads NCHW and writes blocked); a conv with a plain X and fewer than 8
//   outputs (a read-out), and one whose weights are not constant (a training step's: its
//   gradient ops read NCHW), stays a plain Conv;
// - MaxPool / AveragePool of a blocked X (or of a plain X another node reads blocked anyway)
//   -> BlockedMaxPool / BlockedAveragePool;
// - an element-wise unary op of a blocked X (Relu, Sigmoid, Tanh, HardSigmoid, Clip with
//   scalar bounds, ...; on a padded X only those with f(0) = 0), Add / Sub / Mul / Div of two
//   inputs of the output's shape or one per channel ([N or 1, C, 1, 1]), one blocked (the other
//   gets a ToBlocked; no Div on a padded value), Concat on axis 1 of unpadded blocked inputs ->
//   the same op on the 5-D tensors (elementwise ops and a Concat on the channel-block axis are
//   layout-agnostic there); a channel Split / SplitSum into whole blocks the same on axis 1;
// - 3-D, with `ndhwc` (onednn::prefers_channels_last_3d(): oneDNN's brgemm convolutions on
//   AVX-512 compute channels-last, and fed NCDHW it reorders every call): chains of Conv3D
//   (constant weights, group 1 or depthwise), MaxPool3D / AveragePool3D and ConvTranspose3D
//   (constant weights, group 1) -> Conv3DNdhwc / MaxPool3DNdhwc / AveragePool3DNdhwc /
//   ConvTranspose3DNdhwc on [N, D, H, W, C] (ops/conv_pool_3d.cpp), with the element-wise ops
//   above (binary operands of the output's shape or one value per channel) and a channel
//   Concat (axis 4) between them; the boundaries are Transposes;
// - a FromBlocked back to NCHW (attribute channels: the padding dropped), under the original
//   name, for every blocked value a plain node reads or the graph outputs (3-D: a Transpose).
// Values and graph inputs/outputs keep their names; each blocked value is named NAME/nChw{B}c
// (3-D: NAME/ndhwc).
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct BlockedLayoutResult {
  Graph graph;          // a copy of the input when nothing changed
  int blocked_ops = 0;  // ops now running on blocked tensors
  int reorders = 0;     // ToBlocked + FromBlocked nodes added
};

Result<BlockedLayoutResult> to_blocked_layout(const Graph& g, const ShapeInferencer& shapes,
                                              int block = 16, bool ndhwc = false);

}  // namespace graphi::graph::passes
