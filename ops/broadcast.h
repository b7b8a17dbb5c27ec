// Numpy (ONNX multidirectional) broadcasting for binary elementwise kernels: the output shape
// rule, and a loop plan that merges dims so common cases become one flat loop ([B,H] op [B,H],
// scalar operands) or a row loop ([B,H] op [H], the LSTM bias add) with unit-stride inner loops.
// ops/broadcast_walk.h walks a plan; the elementwise loops are in ops/elementwise_loops.h.
#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.h"

namespace graphi::ops {

// The broadcast shape of a and b (align right, dims equal or one of them 1). The error names
// both shapes: "<where>: cannot broadcast input A [2, 3] with input B [4]: dim 1 of the output
// would be 3 and 4".
Result<Shape> broadcast_shapes(const std::string& where, const Shape& a, const Shape& b);

// out[i] = f(a[off_a(i)], b[off_b(i)]) over a contiguous output, after merging dims. Dims of
// size 1 are dropped and adjacent dims merged when both operands are contiguous (or both
// broadcast) across them, so rank is the number of genuinely different stride patterns.
// The innermost stride of each operand is 0 (broadcast) or 1.
struct BroadcastPlan {
  static constexpr int kMaxRank = 16;
  int rank = 1;
  int64_t numel = 1;
  // Plain arrays, not std::array: the per-ISA loop TUs (ops/elementwise_loops.h) must not
  // instantiate std:: templates.
  int64_t dims[kMaxRank] = {1};       // outermost first
  int64_t a_strides[kMaxRank] = {0};  // in elements; 0 where a is broadcast
  int64_t b_strides[kMaxRank] = {0};
};

// Plan for an output of shape `out` (already the broadcast of a and b). Fails only if the merged
// rank exceeds kMaxRank.
Result<BroadcastPlan> make_broadcast_plan(const std::string& where, const Shape& out,
                                          const Shape& a, const Shape& b);

}  // namespace graphi::ops
