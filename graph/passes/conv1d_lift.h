// lift_conv1d_chains: the ops between 1-D convolutions run on their 4-D form.
// The importer runs a 1-D Conv as a 2-D one of height 1 between two Reshapes (x [N, C, L] ->
// [N, C, 1, L], y back to [N, C, L]: graph/onnx/import_conv_pool.cpp), so in a 1-D conv net
// (WaveNet, a TCN, a Conformer's convolution module, an audio front-end) every op between two
// convs reads the 3-D value: each conv pays two Reshape copies, and the blocked layout ends at
// every conv, two reorders more (a 6-layer WaveNet: 25 Reshapes and 24 reorders for 13 convs).
// This pass removes such Reshape pairs: starting from the 3-D outputs of Reshapes that drop the
// unit axis 2 of a 4-D value, the values that only element-wise ops, binary ops with constant
// or lifted operands, channel Splits / Concats, constant Pads, Slices and instance / group
// norms make from them are computed on [N, C, 1, L] instead, and a Reshape that puts the unit axis
// back reads the lifted value directly. A lifted value that something else reads (an op on the last
// axis, a Transpose, a graph output) gets one Reshape back to its 3-D name. Applied only where it
// removes at least one such pair; the graph's inputs, outputs and their names are kept.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct Conv1dLiftResult {
  Graph graph;      // a copy of the input when nothing changed
  int lifted = 0;   // ops now computed on the 4-D form
  int removed = 0;  // Reshapes dropped (minus the ones added back for 3-D readers)
};

Result<Conv1dLiftResult> lift_conv1d_chains(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
