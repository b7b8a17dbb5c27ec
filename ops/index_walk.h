// An odometer over an output shape that tracks the element offsets of up to 3 inputs, each with
// its own strides (0 on broadcast dims). Used by the ops that map output elements to input
// elements by index arithmetic: Where and the comparisons (ops/logic_ops.cpp), Expand and Tile
// (ops/tile_expand.cpp). Rank <= kMaxRank; plain arrays so run() never allocates.
#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.h"

namespace graphi::ops {

struct IndexWalk {
  static constexpr int kMaxRank = 12;
  static constexpr int kMaxInputs = 3;
  int rank = 0;
  int inputs = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxInputs][kMaxRank] = {};

  // Broadcast strides of input `k` of shape `in` against the output shape (numpy alignment).
  void set_broadcast(int k, const Shape& in) {
    int64_t st = 1;
    const int off = rank - static_cast<int>(in.size());
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t n = d >= off ? in[static_cast<size_t>(d - off)] : 1;
      strides[k][d] = n == 1 ? 0 : st;
      st *= n;
    }
  }

  // Calls f(i, off) for output elements i in [begin, end), off[k] = element offset of input k.
  template <typename F>
  void walk(int64_t begin, int64_t end, F&& f) const {
    if (begin >= end) return;
    int64_t c[kMaxRank] = {};
    int64_t off[kMaxInputs] = {};
    int64_t rem = begin;
    for (int d = rank - 1; d >= 0; --d) {
      c[d] = rem % dims[d];
      rem /= dims[d];
      for (int k = 0; k < inputs; ++k) off[k] += c[d] * strides[k][d];
    }
    for (int64_t i = begin; i < end; ++i) {
      f(i, static_cast<const int64_t*>(off));
      for (int d = rank - 1; d >= 0; --d) {
        for (int k = 0; k < inputs; ++k) off[k] += strides[k][d];
        if (++c[d] < dims[d]) break;
        for (int k = 0; k < inputs; ++k) off[k] -= strides[k][d] * dims[d];
        c[d] = 0;
      }
    }
  }
};

// An IndexWalk over `out` with `inputs` inputs (strides left 0). Fails if the rank is too large.
inline Result<IndexWalk> make_index_walk(const std::string& where, const Shape& out, int inputs) {
  if (out.size() > static_cast<size_t>(IndexWalk::kMaxRank))
    return Status::unsupported(where + ": rank " + std::to_string(out.size()) +
                               " is not supported (at most " + std::to_string(IndexWalk::kMaxRank) +
                               ")");
  IndexWalk w;
  w.rank = static_cast<int>(out.size());
  w.inputs = inputs;
  for (size_t d = 0; d < out.size(); ++d) w.dims[d] = out[d];
  return w;
}

}  // namespace graphi::ops
