// Numpy (ONNX multidirectional) broadcasting for binary elementwise kernels: the output shape
// rule, and a loop plan that merges dims so common cases become one flat loop ([B,H] op [B,H],
// scalar operands) or a row loop ([B,H] op [H], the LSTM bias add) with unit-stride inner loops.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "graph/tensor.h"

namespace graphi::ops {

// The broadcast shape of a and b (align right, dims equal or one of them 1). The error names
// both shapes: "<where>: cannot broadcast A [2, 3] with B [4]: dim 1 of the output is 3 vs 4".
Result<Shape> broadcast_shapes(const std::string& where, const Shape& a, const Shape& b);

// out[i] = f(a[off_a(i)], b[off_b(i)]) over a contiguous output, after merging dims. Dims of
// size 1 are dropped and adjacent dims merged when both operands are contiguous (or both
// broadcast) across them, so rank is the number of genuinely different stride patterns.
// The innermost stride of each operand is 0 (broadcast) or 1.
struct BroadcastPlan {
  static constexpr int kMaxRank = 16;
  int rank = 1;
  int64_t numel = 1;
  std::array<int64_t, kMaxRank> dims{};       // outermost first
  std::array<int64_t, kMaxRank> a_strides{};  // in elements; 0 where a is broadcast
  std::array<int64_t, kMaxRank> b_strides{};
};

// Plan for an output of shape `out` (already the broadcast of a and b). Fails only if the merged
// rank exceeds kMaxRank.
Result<BroadcastPlan> make_broadcast_plan(const std::string& where, const Shape& out,
                                          const Shape& a, const Shape& b);

// Calls inner(dst, a, b, n, a_step, b_step) for every maximal run of contiguous output
// positions in [begin, end) that lies in one innermost row; a_step/b_step are 0 or 1. Runs of
// one row are as long as the innermost merged dim, so a [B,H] + [H] add is B calls of length H.
template <typename T, typename Inner>
inline void for_each_broadcast_run(const BroadcastPlan& p, const T* a, const T* b, T* dst,
                                   int64_t begin, int64_t end, Inner&& inner) {
  if (begin >= end) return;
  const int r = p.rank;
  std::array<int64_t, BroadcastPlan::kMaxRank> idx{};
  int64_t off_a = 0, off_b = 0, rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    off_a += idx[d] * p.a_strides[d];
    off_b += idx[d] * p.b_strides[d];
  }
  const int64_t row = p.dims[r - 1];
  const int64_t sa = p.a_strides[r - 1], sb = p.b_strides[r - 1];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = std::min(row - idx[r - 1], end - pos);
    inner(dst + pos, a + off_a, b + off_b, n, sa, sb);
    pos += n;
    if (pos >= end) break;
    // The run ended at a row boundary (idx + n == row): rewind the inner dim, carry outward.
    off_a -= idx[r - 1] * sa;
    off_b -= idx[r - 1] * sb;
    idx[r - 1] = 0;
    for (int d = r - 2; d >= 0; --d) {
      off_a += p.a_strides[d];
      off_b += p.b_strides[d];
      if (++idx[d] < p.dims[d]) break;
      off_a -= idx[d] * p.a_strides[d];
      off_b -= idx[d] * p.b_strides[d];
      idx[d] = 0;
    }
  }
}

}  // namespace graphi::ops
