#include "ops/broadcast.h"

#include <algorithm>
#include <vector>

namespace graphi::ops {

Result<Shape> broadcast_shapes(const std::string& where, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {  // i counts from the right
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return Status::invalid_graph(where + ": cannot broadcast input A " + shape_to_string(a) +
                                   " with input B " + shape_to_string(b) + ": dim " +
                                   std::to_string(rank - 1 - i) + " of the output would be " +
                                   std::to_string(da) + " and " + std::to_string(db));
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Result<BroadcastPlan> make_broadcast_plan(const std::string& where, const Shape& out,
                                          const Shape& a, const Shape& b) {
  const size_t rank = out.size();
  // Operand strides over the output's dims (leading dims padded with 1, stride 0 if broadcast).
  auto strides_of = [&](const Shape& s) {
    std::vector<int64_t> st(rank, 0);
    int64_t step = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t d = s.size() - 1 - i, od = rank - 1 - i;
      st[od] = s[d] == 1 ? 0 : step;
      step *= s[d];
    }
    return st;
  };
  const std::vector<int64_t> sa = strides_of(a), sb = strides_of(b);

  BroadcastPlan p;
  p.numel = shape_numel(out);
  int r = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // contributes nothing to any offset
    // Merge into the previous dim when both operands step through the pair as one dim.
    if (r > 0 && p.a_strides[r - 1] == sa[d] * out[d] && p.b_strides[r - 1] == sb[d] * out[d]) {
      p.dims[r - 1] *= out[d];
      p.a_strides[r - 1] = sa[d];
      p.b_strides[r - 1] = sb[d];
      continue;
    }
    if (r == BroadcastPlan::kMaxRank)
      return Status::unsupported(where + ": broadcasting " + shape_to_string(a) + " with " +
                                 shape_to_string(b) + " needs more than " +
                                 std::to_string(BroadcastPlan::kMaxRank) + " loop dims");
    p.dims[r] = out[d];
    p.a_strides[r] = sa[d];
    p.b_strides[r] = sb[d];
    ++r;
  }
  if (r == 0) {  // a single element
    p.dims[0] = 1;
    p.a_strides[0] = p.b_strides[0] = 0;
    r = 1;
  }
  p.rank = r;
  return p;
}

}  // namespace graphi::ops
