// gather_channels: runs of channel Slices, Concats and channel shuffles composed into single
// ChannelGather copies (ops/channel_gather.cpp). ShuffleNet's unit is a chunk (two Slices, or
// one Split as PyTorch's exporters write torch.chunk), a branch, Concat, and the shuffle Reshape [N, g, C/g, H, W] + Transpose [0, 2, 1, 3,
// 4] + Reshape [N, C, H, W]: four copies of the activation per unit, none of which the blocked
// layout could keep in nChw16c. Here every such value is a list of (source value, channel) per
// channel, composed through the ops that made it; only the values something else reads (a conv,
// a graph output) are made, each by one ChannelGather from the values it draws from, and
// ChannelGather stays blocked (graph/passes/blocked_layout.h). The unit's next chunks then read
// the previous branch outputs directly: no Concat, no Transpose.
//   - Slice along axis 1 only, step 1, constant bounds, of a float32 [N, C, H, W] value;
//   - Split along axis 1 of such a value, when one of its pieces is read by one of these ops (a
//     Split whose pieces only feed convolutions, conv_merge's, stays a blocked Split);
//   - Concat along axis 1 of float32 [N, C, H, W] values (kept as a Concat, which the blocked
//     layout and the memory planner handle well, when something other than the ops above reads
//     it);
//   - Reshape [N, C, H, W] -> [N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, 4], Reshape back,
//     the two intermediate values read by nothing else.
// A value whose channels are exactly one other value's is replaced by that value. Graph inputs,
// outputs and their names are kept.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ChannelGatherResult {
  Graph graph;       // a copy of the input when nothing changed
  int gathers = 0;   // ChannelGather nodes made
  int composed = 0;  // Slice / Concat / shuffle nodes composed away
};

Result<ChannelGatherResult> gather_channels(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
