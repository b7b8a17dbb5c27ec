// The walks over a BroadcastPlan (ops/broadcast.h): per run (the float binary loops, Pow) and per
// element with the inner strides fixed at compile time (comparisons, logic, Where, integer
// arithmetic, Expand, Tile).
#pragma once

#include <cstdint>

#include "ops/broadcast.h"

namespace graphi::ops {

// Walks output positions [begin, end) of `p`: one call run(pos, off, n) per stretch of the
// innermost merged dim (n outputs from pos; input k starts at element offset off[k] and steps by
// p.inner_stride(k), 0 or 1), an odometer over the outer dims in between. A [B,H] + [H] add is B
// runs of length H. A plain template (no std:: inside): the per-ISA loop TUs
// (ops/elementwise_loops.h) include this header after switching the target on, so the walk is
// compiled for their ISA and inlines their loops; instantiated with a TU's own lambda, each copy
// stays local to its TU. Do not include it from ops/elementwise_simd.h or anything a per-ISA TU
// includes before its target switch.
template <typename Run>
inline void for_each_broadcast_run(const BroadcastPlan& p, int64_t begin, int64_t end, Run&& run) {
  if (begin >= end) return;
  const int r = p.rank, m = p.inputs;
  int64_t off[BroadcastPlan::kMaxInputs] = {};
  if (r == 1) {  // same shapes, or scalar inputs: one flat run
    for (int k = 0; k < m; ++k) off[k] = begin * p.strides[k][0];
    run(begin, static_cast<const int64_t*>(off), end - begin);
    return;
  }
  const int64_t row = p.dims[r - 1];
  int64_t idx[BroadcastPlan::kMaxRank];
  int64_t rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    for (int k = 0; k < m; ++k) off[k] += idx[d] * p.strides[k][d];
  }
  int64_t pos = begin;
  while (pos < end) {
    const int64_t left_in_row = row - idx[r - 1];
    const int64_t n = left_in_row < end - pos ? left_in_row : end - pos;
    run(pos, static_cast<const int64_t*>(off), n);
    pos += n;
    if (pos >= end) break;
    // The run ended at a row boundary (idx + n == row): rewind the inner dim, carry outward.
    for (int k = 0; k < m; ++k) off[k] -= idx[r - 1] * p.strides[k][r - 1];
    idx[r - 1] = 0;
    for (int d = r - 2; d >= 0; --d) {
      for (int k = 0; k < m; ++k) off[k] += p.strides[k][d];
      if (++idx[d] < p.dims[d]) break;
      for (int k = 0; k < m; ++k) off[k] -= idx[d] * p.strides[k][d];
      idx[d] = 0;
    }
  }
}

namespace broadcast_detail {

// One run of n elements; bit k of Mask says input k steps by 1 (else it is held).
template <int N, unsigned Mask, typename Elem>
inline void elements_of_run(int64_t pos, const int64_t* off, int64_t n, Elem& elem) {
  int64_t base[N];
  for (int k = 0; k < N; ++k) base[k] = off[k];
  for (int64_t i = 0; i < n; ++i) {
    int64_t o[N];
    for (int k = 0; k < N; ++k) o[k] = (Mask >> k) & 1u ? base[k] + i : base[k];
    elem(pos + i, static_cast<const int64_t*>(o));
  }
}

template <int N, unsigned Mask, typename Elem>
inline void dispatch_run(unsigned mask, int64_t pos, const int64_t* off, int64_t n, Elem& elem) {
  if constexpr (Mask + 1 < (1u << N)) {
    if (mask != Mask) return dispatch_run<N, Mask + 1>(mask, pos, off, n, elem);
  }
  elements_of_run<N, Mask>(pos, off, n, elem);
}

}  // namespace broadcast_detail

// Calls elem(i, off) for every output position i in [begin, end) of `p` (which must read N
// inputs), off[k] = input k's element offset. The inner loop of each run is instantiated for
// each pattern of inner strides (2^N copies), so it is unit-stride or held per input and the
// compiler can vectorize it; the odometer runs once per run, not per element.
template <int N, typename Elem>
inline void for_each_broadcast_element(const BroadcastPlan& p, int64_t begin, int64_t end,
                                       Elem&& elem) {
  static_assert(N >= 1 && N <= BroadcastPlan::kMaxInputs);
  unsigned mask = 0;
  for (int k = 0; k < N; ++k)
    if (p.inner_stride(k) != 0) mask |= 1u << k;
  for_each_broadcast_run(p, begin, end, [&](int64_t pos, const int64_t* off, int64_t n) {
    broadcast_detail::dispatch_run<N, 0>(mask, pos, off, n, elem);
  });
}

}  // namespace graphi::ops
