// The odometer walk over a BroadcastPlan (ops/broadcast.h), shared by the binary elementwise
// loops and Pow.
#pragma once

#include <cstdint>

#include "ops/broadcast.h"

namespace graphi::ops {

// Walks output positions [begin, end) of `p`: one call run(pos, off_a, off_b, n) per stretch of
// the innermost merged dim (n outputs from pos; the operands start at element offsets off_a and
// off_b and step by p.a_strides[rank-1] and p.b_strides[rank-1], each 0 or 1), an odometer over
// the outer dims in between. A [B,H] + [H] add is B runs of length H. A plain template (no std::
// inside): the per-ISA loop TUs (ops/elementwise_loops.h) include this header after switching the
// target on, so the walk is compiled for their ISA and inlines their loops; instantiated with a
// TU's own lambda, each copy stays local to its TU. Do not include it from ops/elementwise_simd.h
// or anything a per-ISA TU includes before its target switch.
template <typename Run>
inline void for_each_broadcast_run(const BroadcastPlan& p, int64_t begin, int64_t end, Run&& run) {
  if (begin >= end) return;
  const int r = p.rank;
  const int64_t row = p.dims[r - 1], sa = p.a_strides[r - 1], sb = p.b_strides[r - 1];
  if (r == 1) {  // same shape, or a scalar operand: one flat run
    run(begin, begin * sa, begin * sb, end - begin);
    return;
  }
  int64_t idx[BroadcastPlan::kMaxRank];
  int64_t off_a = 0, off_b = 0, rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    off_a += idx[d] * p.a_strides[d];
    off_b += idx[d] * p.b_strides[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    const int64_t left_in_row = row - idx[r - 1];
    const int64_t n = left_in_row < end - pos ? left_in_row : end - pos;
    run(pos, off_a, off_b, n);
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
