// Empty run-time slices. graphi has no zero-size tensors, but exporters write them where a
// shift or a window covers a whole dim: PyTorch's TorchScript exporter writes torch.roll(x, 0)
// (Swin-3D's shifted windows when the window spans the clip) as Concat(x[-0:], x[:-0]) with
// an empty Slice. A Slice with constant bounds whose result has a zero-length dim is therefore
// not emitted but recorded; a Concat drops such inputs (an empty piece adds nothing), and any
// other node reading one is refused, naming it.
#include <algorithm>
#include <limits>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

namespace {

// The length of a Slice along a dim of size `dim` (ONNX Slice semantics: negative bounds count
// from the end, then clamp; a negative step walks backwards).
int64_t slice_length(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

}  // namespace

std::optional<Status> Importer::import_empty_slice(const onnx::Node& n, const std::string& where) {
  if (n.op != "Slice" || n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1 ||
      is_const(n.inputs[0]) || vals_.at(n.inputs[0]).empty)
    return std::nullopt;
  // Bounds: inputs 1-4 from opset 10, attributes before; all must be constants here.
  std::vector<int64_t> starts, ends, axes, steps;
  auto ints = [&](size_t k, std::vector<int64_t>& out) {
    if (k >= n.inputs.size() || n.inputs[k].empty()) return true;
    if (!is_const(n.inputs[k])) return false;
    const HostTensor* t = host(n.inputs[k]);
    if (t->is_float()) return false;
    out = t->i;
    return true;
  };
  if (opset_ >= 10) {
    if (!ints(1, starts) || !ints(2, ends) || !ints(3, axes) || !ints(4, steps))
      return std::nullopt;
  } else {
    const onnx::Attr* s = n.attr("starts");
    const onnx::Attr* e = n.attr("ends");
    const onnx::Attr* a = n.attr("axes");
    if (!s || !e) return std::nullopt;
    starts = s->ints;
    ends = e->ints;
    if (a) axes = a->ints;
  }
  const Shape& shape = vals_.at(n.inputs[0]).desc.shape;
  const auto rank = static_cast<int64_t>(shape.size());
  if (axes.empty())
    for (int64_t d = 0; d < static_cast<int64_t>(starts.size()); ++d) axes.push_back(d);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || starts.size() != axes.size() || starts.size() != steps.size())
    return std::nullopt;  // malformed: the Slice's own checks say so
  bool empty = false;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis < 0 || axis >= rank || steps[k] == 0) return std::nullopt;
    if (slice_length(shape[static_cast<size_t>(axis)], starts[k], ends[k], steps[k]) == 0)
      empty = true;
  }
  if (!empty) return std::nullopt;
  if (vals_.count(n.outputs[0]))
    return Status::invalid_graph(where + ": output '" + n.outputs[0] + "' is already defined");
  ValState s;
  s.desc = vals_.at(n.inputs[0]).desc;
  s.empty = true;
  vals_[n.outputs[0]] = std::move(s);
  return Status::ok();
}

std::optional<onnx::Node> Importer::without_empty_inputs(const onnx::Node& n,
                                                         const std::string& where,
                                                         Status* refused) {
  bool any = false;
  for (const std::string& in : n.inputs)
    if (!in.empty() && vals_.at(in).empty) any = true;
  if (!any) return std::nullopt;
  if (n.op != "Concat") {
    for (const std::string& in : n.inputs)
      if (!in.empty() && vals_.at(in).empty)
        *refused = Status::unsupported(
            where + ": input '" + in +
            "' is an empty slice (a zero-length dim); graphi has no empty tensors and drops "
            "them only from a Concat");
    return std::nullopt;
  }
  onnx::Node kept = n;
  kept.inputs.clear();
  for (const std::string& in : n.inputs)
    if (!vals_.at(in).empty) kept.inputs.push_back(in);
  if (kept.inputs.empty()) {
    *refused = Status::unsupported(where +
                                   ": every input of the Concat is an empty slice; "
                                   "graphi has no empty tensors");
    return std::nullopt;
  }
  if (kept.inputs.size() == 1) {
    // One piece left: the Concat is that piece.
    kept.op = "Identity";
    kept.attrs.clear();
  }
  return kept;
}

}  // namespace graphi::graph::onnx_import
