// to_blocked_layout: runs chains of convolutions in oneDNN's channel-blocked layout nChw{B}c
// (B = 16, or 8 when a channel count is a multiple of 8 only), held as [N, C/B, H, W, B], with
// reorders only at the boundaries. oneDNN's direct/brgemm convolutions and pools want nChw16c
// (their "any" format on AVX-512); fed NCHW they fall back to slower kernels or reorder on every
// call. Rewrites, in topological order:
// - Conv / FusedConv with group 1 or depthwise (group = C = M: oneDNN's jit depthwise kernels
//   are blocked-only) -> BlockedConv (activation kept): a blocked X keeps its B (M must be a
//   multiple of it); a plain X gets B from M and is read through a ToBlocked when C is a
//   multiple of B, directly when C < 8 and group 1 (the first layer: oneDNN reads NCHW and
//   writes blocked); anything else, and a conv whose weights are not constant (a training
//   step's: its gradient ops read NCHW), stays a plain Conv;
// - MaxPool / AveragePool of a blocked X -> BlockedMaxPool / BlockedAveragePool;
// - an element-wise unary op of a blocked X (Relu, Sigmoid, Tanh, HardSigmoid, Clip with
//   scalar bounds, ...), Add / Sub / Mul / Div of two same-shape inputs, one blocked (the other
//   blocked, or plain with C a multiple of B, which gets a ToBlocked), Concat on axis 1 of blocked
//   inputs of the same
//   B -> the same op on the 5-D tensors (elementwise ops and a Concat on the channel-block axis
//   are layout-agnostic there);
// - a FromBlocked back to NCHW, under the original name, for every blocked value a plain node
//   reads or the graph outputs.
// Values and graph inputs/outputs keep their names; each blocked value is named NAME/nChw{B}c.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct BlockedLayoutResult {
  Graph graph;          // a copy of the input when nothing changed
  int blocked_ops = 0;  // ops now running on blocked tensors
  int reorders = 0;     // ToBlocked + FromBlocked nodes added
};

Result<BlockedLayoutResult> to_blocked_layout(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
