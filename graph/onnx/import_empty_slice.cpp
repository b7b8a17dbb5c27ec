// Empty run-time slices. graphi has no zero-size tensors, but exporters write them where a
// shift or a window covers a whole dim: PyTorch's TorchScript exporter writes torch.roll(x, 0)
// (Swin-3D's shifted windows when the window spans the clip) as Concat(x[-0:], x[:-0]) with
// an empty Slice. A Slice with constant bounds whose result has a zero-length dim is therefore
// not emitted but recorded; a Concat drops such inputs (an empty piece adds nothing), and any
// other node reading one is refused, naming it. A Split's zero-size pieces are recorded the
// same way.
#include "graph/onnx/import_internal.h"
#include "graph/onnx/onnx_fold.h"

namespace graphi::graph::onnx_import {

std::optional<Status> Importer::import_empty_slice(const onnx::Node& n, const std::string& where) {
  if (n.op != "Slice" || n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1 ||
      is_const(n.inputs[0]) || vals_.at(n.inputs[0]).empty)
    return std::nullopt;
  // The bounds (inputs 1-4 from opset 10, attributes before) must be constants here; the data
  // (input 0) is not read.
  std::vector<const onnx::HostTensor*> ins(n.inputs.size(), nullptr);
  for (size_t k = 1; k < n.inputs.size(); ++k) {
    if (n.inputs[k].empty()) continue;
    if (!is_const(n.inputs[k])) return std::nullopt;
    ins[k] = host(n.inputs[k]);
  }
  const TensorDesc& x = vals_.at(n.inputs[0]).desc;
  Result<Shape> out = onnx::slice_shape(n, opset_, ins, x.shape, where);
  // Malformed bounds: the Slice's own import says so.
  if (!out.is_ok() || shape_numel(*out) != 0) return std::nullopt;
  if (vals_.count(n.outputs[0]))
    return Status::invalid_graph(where + ": output '" + n.outputs[0] + "' is already defined");
  ValState s;
  s.desc = x;
  s.empty = true;
  vals_[n.outputs[0]] = std::move(s);
  return Status::ok();
}

Result<std::optional<onnx::Node>> Importer::without_empty_inputs(const onnx::Node& n,
                                                                 const std::string& where) {
  bool any = false;
  for (const std::string& in : n.inputs)
    if (!in.empty() && vals_.at(in).empty) any = true;
  if (!any) return std::optional<onnx::Node>();
  if (n.op != "Concat") {
    for (const std::string& in : n.inputs)
      if (!in.empty() && vals_.at(in).empty)
        return Status::unsupported(
            where + ": input '" + in +
            "' is empty (a zero-length dim: an empty Slice or Split piece); graphi has no "
            "empty tensors and drops "
            "them only from a Concat");
  }
  onnx::Node kept = n;
  kept.inputs.clear();
  for (const std::string& in : n.inputs)
    if (!vals_.at(in).empty) kept.inputs.push_back(in);
  if (kept.inputs.empty())
    return Status::unsupported(where +
                               ": every input of the Concat is an empty slice; "
                               "graphi has no empty tensors");
  if (kept.inputs.size() == 1) {
    // One piece left: the Concat is that piece.
    kept.op = "Identity";
    kept.attrs.clear();
  }
  return std::optional<onnx::Node>(std::move(kept));
}

Result<std::optional<onnx::Node>> Importer::without_empty_pieces(const onnx::Node& n,
                                                                 const std::string& where) {
  if (n.op != "Split" || n.inputs.empty() || n.inputs[0].empty() || is_const(n.inputs[0]) ||
      vals_.at(n.inputs[0]).empty)
    return std::optional<onnx::Node>();
  const bool as_input = n.inputs.size() > 1 && !n.inputs[1].empty();
  std::vector<int64_t> sizes;
  if (as_input) {
    if (!is_const(n.inputs[1])) return std::optional<onnx::Node>();
    sizes = host(n.inputs[1])->i;
  } else if (const onnx::Attr* a = n.attr("split")) {
    sizes = a->ints;
  }
  // Malformed sizes (negative, a count unlike the outputs'): the Split's own import says so.
  if (sizes.size() != n.outputs.size() ||
      std::none_of(sizes.begin(), sizes.end(), [](int64_t v) { return v == 0; }) ||
      std::any_of(sizes.begin(), sizes.end(), [](int64_t v) { return v < 0; }))
    return std::optional<onnx::Node>();
  onnx::Node kept = n;
  kept.outputs.clear();
  std::vector<int64_t> left;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] > 0) {
      kept.outputs.push_back(n.outputs[k]);
      left.push_back(sizes[k]);
      continue;
    }
    if (n.outputs[k].empty()) continue;
    if (vals_.count(n.outputs[k]))
      return Status::invalid_graph(where + ": output '" + n.outputs[k] + "' is already defined");
    ValState e;
    e.desc = vals_.at(n.inputs[0]).desc;
    e.empty = true;
    vals_[n.outputs[k]] = std::move(e);
  }
  if (left.empty())
    return Status::unsupported(where +
                               ": every piece of the Split is empty; graphi has no "
                               "empty tensors");
  if (left.size() == 1) {  // one piece left: the whole input
    kept.op = "Identity";
    kept.inputs.resize(1);
    kept.attrs.clear();
    return std::optional<onnx::Node>(std::move(kept));
  }
  if (as_input) {
    onnx::HostTensor t;
    t.type = onnx::kInt64;
    t.shape = {static_cast<int64_t>(left.size())};
    t.i = left;
    kept.inputs[1] = add_const(n.name.empty() ? "split" : n.name + "/split", std::move(t));
  } else {
    for (onnx::Attr& a : kept.attrs)
      if (a.name == "split") a.ints = left;
  }
  return std::optional<onnx::Node>(std::move(kept));
}

}  // namespace graphi::graph::onnx_import
