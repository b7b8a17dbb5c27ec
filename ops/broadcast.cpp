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
                                          const Shape* const* inputs, int count) {
  const int m = count;
  if (m < 1 || m > BroadcastPlan::kMaxInputs)
    return Status::unsupported(where + ": a broadcast plan reads 1 to " +
                               std::to_string(BroadcastPlan::kMaxInputs) + " inputs, not " +
                               std::to_string(m));
  const size_t rank = out.size();
  // Input strides over the output's dims (leading dims padded with 1, stride 0 if broadcast).
  std::vector<std::vector<int64_t>> st;
  for (int k = 0; k < m; ++k) {
    const Shape* s = inputs[k];
    std::vector<int64_t>& v = st.emplace_back(rank, 0);
    int64_t step = 1;
    for (size_t i = 0; i < s->size(); ++i) {
      const size_t d = s->size() - 1 - i, od = rank - 1 - i;
      v[od] = (*s)[d] == 1 ? 0 : step;
      step *= (*s)[d];
    }
  }

  BroadcastPlan p;
  p.inputs = m;
  p.numel = shape_numel(out);
  int r = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // contributes nothing to any offset
    // Merge into the previous dim when every input steps through the pair as one dim.
    bool merge = r > 0;
    for (int k = 0; k < m && merge; ++k) merge = p.strides[k][r - 1] == st[k][d] * out[d];
    if (merge) {
      p.dims[r - 1] *= out[d];
      for (int k = 0; k < m; ++k) p.strides[k][r - 1] = st[k][d];
      continue;
    }
    if (r == BroadcastPlan::kMaxRank) {
      std::string shapes;
      for (int k = 0; k < m; ++k) shapes += (k ? " with " : "") + shape_to_string(*inputs[k]);
      return Status::unsupported(where + ": broadcasting " + shapes + " to " +
                                 shape_to_string(out) + " needs more than " +
                                 std::to_string(BroadcastPlan::kMaxRank) + " loop dims");
    }
    p.dims[r] = out[d];
    for (int k = 0; k < m; ++k) p.strides[k][r] = st[k][d];
    ++r;
  }
  if (r == 0) {  // a single element (strides stay 0)
    p.dims[0] = 1;
    r = 1;
  }
  p.rank = r;
  return p;
}

bool merge_periodic_inner(BroadcastPlan& p) {
  const int r = p.rank;
  if (p.inputs != 2 || r < 2) return false;
  const int64_t row = p.dims[r - 1];
  if (row > 16 || 16 % row != 0 || p.dims[r - 2] < 2) return false;
  for (int k = 0; k < 2; ++k) {
    const int j = 1 - k;
    if (p.strides[k][r - 1] == 1 && p.strides[k][r - 2] == 0 && p.strides[j][r - 1] == 1 &&
        p.strides[j][r - 2] == row) {
      p.dims[r - 2] *= row;
      p.strides[j][r - 2] = 1;
      p.strides[k][r - 2] = 0;
      p.rank = r - 1;
      p.periodic = k;
      p.period = row;
      return true;
    }
  }
  return false;
}

}  // namespace graphi::ops
