// merge_sibling_convs ("horizontal fusion", as TensorRT and oneDNN's graph API do it): Conv /
// FusedConv nodes that read the same input with the same attributes and kernel shape, group 1,
// constant weights and at most 32 output channels each become one convolution over the weights
// concatenated along the output channels, followed by a channel Split that produces the
// original outputs (same names, so the consumers are untouched). PathNet's six 3x3 16-filter
// modules of a layer become one 96-filter convolution. A narrow convolution fills little of the
// kernel's register block per pass over its input; one wide one streams the input once. (Wider
// members, an inception block's 64- and 96-filter 1x1s, measured no faster merged: see the
// .cpp.)
//
// The chain after the members is merged too while every member's output feeds exactly one node
// of the same channel-wise op with the same attributes (element-wise unary ops, MaxPool,
// AveragePool, global pools; not graph outputs): PathNet's per-module ReLU (already a FusedConv
// post-op) and 2x2 max-pool then run once on the wide tensor, and the Split moves after them.
// When the parts (members of one width) are then summed by Adds, each once and nothing else
// reading them (PathNet sums its modules), Split + Adds become one SplitSum (ops/split_sum.cpp).
// Merging cannot make a cycle: every member reads only the shared input and constants.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ConvMergeResult {
  Graph graph;      // a copy of the input when nothing changed
  int groups = 0;   // merged convolutions created
  int members = 0;  // Conv / FusedConv nodes they replaced
  int sunk = 0;     // per-member channel-wise ops merged after them (per group, per op kind)
  int summed = 0;   // groups whose parts Adds summed: one SplitSum instead of Split + Adds
};

// `shapes` validates the rewritten graph (pass ops::Registry::get()).
Result<ConvMergeResult> merge_sibling_convs(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
