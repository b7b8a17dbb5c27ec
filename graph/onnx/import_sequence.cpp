// ONNX import, sequences of tensors: graphi graphs hold tensors only, so a sequence lives in the
// importer as the list of its elements' value names, and every sequence op must be resolvable
// at import time. SplitToSequence becomes a Split (constant sizes; keepdims = 0 adds Reshapes),
// SequenceConstruct / SequenceEmpty / SequenceInsert / SequenceErase edit the list (constant
// positions), SequenceAt with a constant position names one element (an Identity),
// SequenceLength folds to a constant, ConcatFromSequence becomes a Concat (new_axis = 1: each
// element reshaped first). This is what torch.onnx's dynamo exporter with optimize=False writes
// for `x[t]` loops, `torch.split` and `torch.stack` over lists.
#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

namespace {

bool is_sequence_op(const std::string& op) {
  return op == "SplitToSequence" || op == "SequenceConstruct" || op == "SequenceEmpty" ||
         op == "SequenceInsert" || op == "SequenceErase" || op == "SequenceAt" ||
         op == "SequenceLength" || op == "ConcatFromSequence";
}

}  // namespace

Result<int64_t> Importer::const_position(const onnx::Node& n, size_t k, int64_t size, bool insert,
                                         const std::string& where) {
  const HostTensor* h = host(n.inputs[k]);
  if (!h || h->is_float() || h->numel() != 1)
    return Status::unsupported(where + ": input " + std::to_string(k) + " (position) '" +
                               n.inputs[k] +
                               "' must be a constant integer scalar (graphi resolves sequences "
                               "at import time)");
  int64_t p = h->i[0];
  const int64_t hi = insert ? size : size - 1;  // Insert may append at position `size`
  if (p < -size || p > hi)
    return Status::invalid_graph(where + ": position " + std::to_string(p) +
                                 " is out of range for a sequence of " + std::to_string(size) +
                                 " tensors");
  return p < 0 ? p + size : p;
}

std::optional<Status> Importer::translate_sequence(const onnx::Node& n, const std::string& where) {
  if (!is_sequence_op(n.op)) {
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (seqs_.count(n.inputs[k]))
        return Status::unsupported(
            where + ": input " + std::to_string(k) + " '" + n.inputs[k] +
            "' is a sequence of tensors; graphi takes sequences only through SequenceAt, "
            "SequenceLength, ConcatFromSequence, SequenceInsert and SequenceErase");
    return std::nullopt;
  }
  auto tensor_in = [&](size_t k) -> Status {
    if (k >= n.inputs.size() || n.inputs[k].empty())
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
    if (!vals_.count(n.inputs[k]))
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " '" + n.inputs[k] +
                                   "' is not a tensor defined before this node");
    return Status::ok();
  };
  auto seq_in = [&](size_t k) -> Result<std::vector<std::string>> {
    if (k >= n.inputs.size() || !seqs_.count(n.inputs[k]))
      return Status::invalid_graph(where + ": input " + std::to_string(k) +
                                   " must be a sequence made earlier in the graph");
    return seqs_.at(n.inputs[k]);
  };
  if (n.outputs.size() != 1 || n.outputs[0].empty())
    return Status::invalid_graph(where + ": must have one output");
  const std::string& out = n.outputs[0];
  if (vals_.count(out) || seqs_.count(out))
    return Status::invalid_graph(where + ": output '" + out + "' is already defined");
  const std::string name = node_name(n);
  const onnx::Attr* axis_attr = n.attr("axis");

  if (n.op == "SequenceEmpty") {
    seqs_[out] = {};
    return Status::ok();
  }
  if (n.op == "SequenceConstruct") {
    for (size_t k = 0; k < n.inputs.size(); ++k) GRAPHI_RETURN_IF_ERROR(tensor_in(k));
    seqs_[out] = n.inputs;
    return Status::ok();
  }
  if (n.op == "SequenceLength") {
    GRAPHI_ASSIGN_OR_RETURN(std::vector<std::string> s, seq_in(0));
    HostTensor t = HostTensor::make(onnx::kInt64, {});
    t.i[0] = static_cast<int64_t>(s.size());
    ValState v;
    v.is_const = true;
    v.host = std::make_shared<HostTensor>(std::move(t));
    vals_[out] = std::move(v);
    return Status::ok();
  }
  if (n.op == "SequenceInsert" || n.op == "SequenceErase") {
    GRAPHI_ASSIGN_OR_RETURN(std::vector<std::string> s, seq_in(0));
    const bool insert = n.op == "SequenceInsert";
    if (insert) GRAPHI_RETURN_IF_ERROR(tensor_in(1));
    const size_t pos_input = insert ? 2 : 1;
    const auto size = static_cast<int64_t>(s.size());
    if (!insert && size == 0) return Status::invalid_graph(where + ": the sequence is empty");
    int64_t p = insert ? size : size - 1;  // defaults: append, erase the last
    if (pos_input < n.inputs.size() && !n.inputs[pos_input].empty()) {
      GRAPHI_ASSIGN_OR_RETURN(p, const_position(n, pos_input, size, insert, where));
    }
    if (insert)
      s.insert(s.begin() + p, n.inputs[1]);
    else
      s.erase(s.begin() + p);
    seqs_[out] = std::move(s);
    return Status::ok();
  }
  if (n.op == "SequenceAt") {
    GRAPHI_ASSIGN_OR_RETURN(std::vector<std::string> s, seq_in(0));
    GRAPHI_RETURN_IF_ERROR(tensor_in(1));
    GRAPHI_ASSIGN_OR_RETURN(int64_t p,
                            const_position(n, 1, static_cast<int64_t>(s.size()), false, where));
    const std::string& elem = s[static_cast<size_t>(p)];
    if (is_const(elem)) {  // a constant element stays a constant
      ValState v;
      v.is_const = true;
      v.host = vals_.at(elem).host;
      vals_[out] = std::move(v);
      return Status::ok();
    }
    return emit("Identity", name, {elem}, {out}, {}, where, &n);
  }
  if (n.op == "SplitToSequence") {
    GRAPHI_RETURN_IF_ERROR(tensor_in(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(n.inputs[0], where));
    if (x.rank() == 0) return Status::invalid_graph(where + ": cannot split a scalar");
    int64_t axis = axis_attr ? axis_attr->i : 0;
    if (axis < -x.rank() || axis >= x.rank())
      return Status::invalid_graph(where + ": attribute 'axis' = " + std::to_string(axis) +
                                   " is out of range for input " + x.to_string());
    if (axis < 0) axis += x.rank();
    const int64_t dim = x.shape[static_cast<size_t>(axis)];
    const onnx::Attr* kd = n.attr("keepdims");
    const bool has_split = n.inputs.size() > 1 && !n.inputs[1].empty();
    std::vector<int64_t> sizes;
    if (!has_split) {
      sizes.assign(static_cast<size_t>(dim), 1);
    } else {
      const HostTensor* sp = host(n.inputs[1]);
      if (!sp || sp->is_float())
        return Status::unsupported(where + ": input 1 (split) '" + n.inputs[1] +
                                   "' must be a constant integer tensor (graphi resolves "
                                   "sequences at import time)");
      if (sp->shape.empty()) {  // one size: equal chunks, the last one smaller
        const int64_t c = sp->i[0];
        if (c <= 0) return Status::invalid_graph(where + ": split size must be > 0");
        for (int64_t at = 0; at < dim; at += c) sizes.push_back(std::min(c, dim - at));
      } else {
        sizes = sp->i;
        int64_t sum = 0;
        for (int64_t v : sizes) sum += v;
        if (sum != dim)
          return Status::invalid_graph(where + ": split sizes add up to " + std::to_string(sum) +
                                       ", axis " + std::to_string(axis) + " of input " +
                                       x.to_string() + " has " + std::to_string(dim));
      }
    }
    if (sizes.empty()) return Status::unsupported(where + ": splits an empty axis");
    const bool squeeze = !has_split && kd && kd->i == 0;
    std::vector<std::string> pieces, elems;
    for (size_t k = 0; k < sizes.size(); ++k)
      pieces.push_back(fresh(out + "/" + std::to_string(k)));
    if (pieces.size() == 1) {
      GRAPHI_RETURN_IF_ERROR(emit("Identity", name, {n.inputs[0]}, pieces, {}, where, &n));
    } else {
      Attributes a;
      a.set("axis", axis);
      a.set("split", sizes);
      GRAPHI_RETURN_IF_ERROR(emit("Split", name, {n.inputs[0]}, pieces, std::move(a), where, &n));
    }
    for (const std::string& p : pieces) {
      if (!squeeze) {
        elems.push_back(p);
        continue;
      }
      Shape s = x.shape;
      s.erase(s.begin() + axis);
      const std::string e = fresh(p + "/squeezed");
      GRAPHI_RETURN_IF_ERROR(emit_reshape(e, p, s, {e}, where, &n));
      elems.push_back(e);
    }
    seqs_[out] = std::move(elems);
    return Status::ok();
  }
  // ConcatFromSequence
  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::string> s, seq_in(0));
  if (s.empty()) return Status::invalid_graph(where + ": the sequence is empty");
  if (!axis_attr) return Status::invalid_graph(where + ": missing attribute 'axis'");
  const onnx::Attr* na = n.attr("new_axis");
  const bool new_axis = na && na->i != 0;
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc first, desc_of(s[0], where));
  const int64_t rank = first.rank() + (new_axis ? 1 : 0);
  int64_t axis = axis_attr->i;
  if (axis < -rank || axis >= rank)
    return Status::invalid_graph(where + ": attribute 'axis' = " + std::to_string(axis) +
                                 " is out of range for elements " + first.to_string());
  if (axis < 0) axis += rank;
  std::vector<std::string> parts;
  for (size_t k = 0; k < s.size(); ++k) {
    if (!new_axis) {
      parts.push_back(s[k]);
      continue;
    }
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(s[k], where));
    Shape sh = d.shape;
    sh.insert(sh.begin() + axis, 1);
    const std::string e = fresh(name + "/stacked" + std::to_string(k));
    GRAPHI_RETURN_IF_ERROR(emit_reshape(e, s[k], sh, {e}, where, &n));
    parts.push_back(e);
  }
  if (parts.size() == 1) return emit("Identity", name, parts, {out}, {}, where, &n);
  Attributes a;
  a.set("axis", axis);
  return emit("Concat", name, parts, {out}, std::move(a), where, &n);
}

}  // namespace graphi::graph::onnx_import
