// Numpy (ONNX multidirectional) broadcasting for elementwise kernels of 1 to 3 inputs: the output
// shape rule, and a loop plan that merges dims so common cases become one flat loop ([B,H] op
// [B,H], scalar operands) or a row loop ([B,H] op [H], the LSTM bias add) with unit-stride or
// held (stride 0) inner loops. ops/broadcast_walk.h walks a plan; the float binary loops are in
// ops/elementwise_loops.h. Users: Add/Sub/Mul/Div, Pow, the comparisons and logic ops, Where,
// Mod/IntBinary, Expand and Tile.
#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.h"

namespace graphi::ops {

// The broadcast shape of a and b (align right, dims equal or one of them 1). The error names
// both shapes: "<where>: cannot broadcast input A [2, 3] with input B [4]: dim 1 of the output
// would be 3 and 4".
Result<Shape> broadcast_shapes(const std::string& where, const Shape& a, const Shape& b);

// Output element i reads input k at an offset given by the plan, over a contiguous output, after
// merging dims. Dims of size 1 are dropped and adjacent dims merged when every input is
// contiguous (or broadcast) across them, so rank is the number of genuinely different stride
// patterns. The innermost stride of each input is 0 (broadcast) or 1.
struct BroadcastPlan {
  static constexpr int kMaxRank = 32;   // Tile of rank 16 interleaves 32 dims
  static constexpr int kMaxInputs = 3;  // Where's condition, X, Y
  int rank = 1;
  int inputs = 0;
  int64_t numel = 1;
  // Plain arrays, not std::array: the per-ISA loop TUs (ops/elementwise_loops.h) must not
  // instantiate std:: templates.
  int64_t dims[kMaxRank] = {1};  // outermost first
  // strides[k][d]: input k's step in elements along merged dim d; 0 where k is broadcast.
  int64_t strides[kMaxInputs][kMaxRank] = {};

  // Set by merge_periodic_inner only (the two-input float loops read it): input `periodic`
  // repeats a vector of `period` elements along the innermost merged dim, where its stride is 0
  // (its offset points at the vector's start); -1: no such input.
  int periodic = -1;
  int64_t period = 0;

  // Input k's step along the innermost merged dim: 0 or 1.
  int64_t inner_stride(int k) const { return strides[k][rank - 1]; }
};

// A two-input plan whose innermost dim is a short vector (period 1..16 dividing 16) that one
// input holds over the dim before it while the other walks both contiguously, e.g. a blocked
// [N, C/16, H, W, 16] times a per-channel [N, C/16, 1, 1, 16] (runs of 16 otherwise): merges the
// two dims into one long run and marks the vector input periodic. False (plan unchanged) when
// the plan is not of that form.
bool merge_periodic_inner(BroadcastPlan& p);

// Plan for an output of shape `out` (already the broadcast of the input shapes) reading
// `count` (1..kMaxInputs) inputs of shapes *inputs[k]. Fails only if the merged rank exceeds
// kMaxRank.
Result<BroadcastPlan> make_broadcast_plan(const std::string& where, const Shape& out,
                                          const Shape* const* inputs, int count);

// The same for one, two or three inputs.
inline Result<BroadcastPlan> make_broadcast_plan(const std::string& where, const Shape& out,
                                                 const Shape& a) {
  const Shape* in[] = {&a};
  return make_broadcast_plan(where, out, in, 1);
}
inline Result<BroadcastPlan> make_broadcast_plan(const std::string& where, const Shape& out,
                                                 const Shape& a, const Shape& b) {
  const Shape* in[] = {&a, &b};
  return make_broadcast_plan(where, out, in, 2);
}
inline Result<BroadcastPlan> make_broadcast_plan(const std::string& where, const Shape& out,
                                                 const Shape& a, const Shape& b, const Shape& c) {
  const Shape* in[] = {&a, &b, &c};
  return make_broadcast_plan(where, out, in, 3);
}

}  // namespace graphi::ops
