// The window of an N-D pooling op (1 to 3 spatial dims) in ONNX's attributes, for the loop
// kernels of ops/pool_nd.cpp (MaxPoolWithIndices, LpPool) and the output shape of MaxUnpool
// (ops/max_unpool.cpp). ops/ code only.
#pragma once

#include <array>
#include <string>

#include "graph/graph.h"

namespace graphi::ops {

// X [N, C, D1..Dk] seen as [N, C, 1.., D1..Dk] with 3 spatial dims: a 1-D or 2-D window gets
// leading dims of size 1 (kernel 1, stride 1, no pads), so one 3-deep loop nest serves every k.
struct PoolWindow {
  using Dims = std::array<int64_t, 3>;
  int k = 0;  // spatial dims of X
  int64_t n = 0, c = 0;
  Dims in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dil{1, 1, 1};
  Dims pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
};

// INTS attribute `name` of `count` values >= `min`, or `count` copies of `dflt` when absent;
// `what` says what the values are, for the error ("... must be 3 ints >= 1 (depth, height,
// width), got [...]"). Also the window attributes of ops/conv_pool_3d.cpp.
Result<std::vector<int64_t>> window_ints(const graph::Node& node, const std::string& where,
                                         const char* name, size_t count, int64_t dflt, int64_t min,
                                         const char* what);

// Reads kernel_shape (required), strides, pads ([begin..., end...]) and, when `with_dilations`,
// dilations of `node` for a float32 X of rank 3 to 5, and computes the output dims
// floor((in + pad_begin + pad_end - ((kernel - 1) * dilation + 1)) / stride) + 1. auto_pad must
// be NOTSET and ceil_mode 0 (the importer makes both explicit pads). Errors name the node, the
// attribute and the values: a wrong count, values < 1 (pads < 0), a dilated kernel larger than
// the padded input, a pad as large as the dilated kernel (a window wholly in the padding), or
// window arithmetic that overflows int64.
Result<PoolWindow> read_pool_window(const graph::Node& node, const TensorDesc& x,
                                    const std::string& where, bool with_dilations);

}  // namespace graphi::ops
