// fold_pads: explicit zero padding that a convolution or an average pool can do itself.
// Exporters write padding as a separate Pad node: PyTorch's AvgPool2d goes out as a Pad (often
// of all-zero pads) + AveragePool, tf2onnx's asymmetric "SAME" padding as Pad + Conv. Each such
// Pad copies the whole tensor and is an op the blocked layout cannot keep in nChw16c, so the
// chain around it pays two reorders as well (DenseNet's transition: Pad, FromBlocked,
// ToBlocked x 6 in the next block).
//   - A Pad whose pads are all zero (any mode) is dropped: its readers read its input.
//   - A constant-mode Pad with fill value 0 and non-negative pads on the spatial dims only (not
//     N or C), read only by the data input of a Conv (auto_pad NOTSET) or of an AveragePool
//     (ceil_mode 0, auto_pad NOTSET, and count_include_pad 1 or no pads of its own), becomes
//     part of that node's `pads` (an AveragePool then counts the padding: count_include_pad 1,
//     the divisor explicit zeros had).
//   - A Slice that keeps a range of the last axis of a stride-1 Conv's output (nothing else
//     reading it) and crops only outputs of its padding makes the Conv's pads smaller instead
//     (a TCN's chomp, x[:, :, :-p] after a conv padded by p on both sides: a causal conv).
// MaxPool is left alone (its padding is -inf, not 0); the graph's inputs and outputs are kept.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct PadFoldResult {
  Graph graph;      // a copy of the input when nothing changed
  int removed = 0;  // all-zero Pads dropped
  int folded = 0;   // Pads absorbed into the Conv / AveragePool reading them
  int cropped = 0;  // Slices of a Conv's padded border taken out of its pads
};

Result<PadFoldResult> fold_pads(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
