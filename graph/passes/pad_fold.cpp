#include "graph/passes/pad_fold.h"

#include <algorithm>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

// Constant mode with fill value 0: the `value` attribute (opset < 11) or a constant input 2.
bool pads_with_zeros(const Graph& g, const Node& pad) {
  auto mode = attr_string(pad.attrs, "", "mode", "constant");
  if (!mode.is_ok() || *mode != "constant") return false;
  if (pad.inputs.size() > 2 && pad.inputs[2] != kNoId) return const_all_equal(g, pad.inputs[2], 0);
  auto value = attr_float(pad.attrs, "", "value", 0.0);
  return value.is_ok() && *value == 0.0;
}

// The reader's `pads` with the Pad's spatial amounts added (ONNX order: every begin, then every
// end), or nullopt when the reader cannot take them.
std::optional<std::vector<int64_t>> merged_pads(const Node& reader, const PadAmounts& p) {
  const size_t spatial = p.begin.size() - 2;
  auto auto_pad = attr_string(reader.attrs, "", "auto_pad", "NOTSET");
  if (!auto_pad.is_ok() || *auto_pad != "NOTSET") return std::nullopt;
  auto own = attr_ints(reader.attrs, "", "pads", std::vector<int64_t>(2 * spatial, 0));
  if (!own.is_ok() || own->size() != 2 * spatial) return std::nullopt;
  if (reader.op == "AveragePool") {
    auto ceil_mode = attr_int(reader.attrs, "", "ceil_mode", 0);
    auto cip = attr_int(reader.attrs, "", "count_include_pad", 0);
    if (!ceil_mode.is_ok() || *ceil_mode != 0 || !cip.is_ok()) return std::nullopt;
    // Its own padding left out of the divisor cannot be told apart from the folded one.
    const bool own_pads = std::any_of(own->begin(), own->end(), [](int64_t v) { return v != 0; });
    if (*cip != 1 && own_pads) return std::nullopt;
  }
  std::vector<int64_t> out = *own;
  for (size_t d = 0; d < spatial; ++d) {
    out[d] += p.begin[d + 2];
    out[d + spatial] += p.end[d + 2];
  }
  return out;
}

// For a Slice reading a Conv's output: the Conv's pads with the cropped outputs' padding taken
// off, when the Slice keeps [start, end) of the last axis only, the Conv has stride 1 there and
// at least that much padding on each side (output j reads input from j - pad_left: dropping
// the first `start` outputs is `start` columns less left padding, the last ones right padding;
// a TCN's chomp, x[:, :, :-p] after a conv padded by p on both sides, is a causal conv).
std::optional<std::vector<int64_t>> cropped_pads(const Graph& g, const Node& slice,
                                                 const Node& conv) {
  const Value& y = g.value(conv.outputs[0]);
  const int rank = static_cast<int>(y.desc.rank());
  if (rank != 4) return std::nullopt;
  const auto range = slice_range(g, slice, rank - 1);
  auto auto_pad = attr_string(conv.attrs, "", "auto_pad", "NOTSET");
  auto strides = attr_ints(conv.attrs, "", "strides", {1, 1});
  auto pads = attr_ints(conv.attrs, "", "pads", {0, 0, 0, 0});
  if (!range || !auto_pad.is_ok() || *auto_pad != "NOTSET" || !strides.is_ok() ||
      strides->size() != 2 || (*strides)[1] != 1 || !pads.is_ok() || pads->size() != 4)
    return std::nullopt;
  const int64_t len = y.desc.shape[3], cut_left = range->first, cut_right = len - range->second;
  if (cut_left < 0 || cut_right < 0 || range->second <= range->first || cut_left > (*pads)[1] ||
      cut_right > (*pads)[3])
    return std::nullopt;
  std::vector<int64_t> out = *pads;
  out[1] -= cut_left;
  out[3] -= cut_right;
  return out;
}

}  // namespace

Result<PadFoldResult> fold_pads(const Graph& g, const ShapeInferencer& shapes) {
  PadFoldResult result;
  Rewrite rw(g);
  // A crop of a Conv's padded border: the Conv without that padding. First, so that a Pad
  // before such a Conv (below) leaves it alone.
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& crop = g.node(id);
    if (crop.op != "Slice" || crop.inputs.empty() || crop.inputs[0] == kNoId ||
        crop.outputs.size() != 1)
      continue;
    const NodeId c = g.value(crop.inputs[0]).producer;
    if (c == kNoId || rw.removed(c) || sole_reader(g, crop.inputs[0]) != id) continue;
    const Node& conv = g.node(c);
    if (conv.op != "Conv" || conv.outputs.size() != 1) continue;
    const auto pads = cropped_pads(g, crop, conv);
    if (!pads) continue;
    Attributes attrs = conv.attrs;
    attrs.set("pads", *pads);
    std::vector<std::string> inputs;
    for (ValueId v : conv.inputs) inputs.push_back(v == kNoId ? "" : g.value(v).name);
    rw.remove(c);
    rw.remove(id);
    rw.add_node(conv.op, conv.name, inputs, {g.value(crop.outputs[0]).name}, attrs);
    ++result.cropped;
  }
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& pad = g.node(id);
    if (pad.op != "Pad" || pad.inputs.empty() || pad.inputs[0] == kNoId || pad.outputs.size() != 1)
      continue;
    const ValueId x = pad.inputs[0], y = pad.outputs[0];
    if (g.value(y).is_output) continue;
    const int rank = static_cast<int>(g.value(x).desc.rank());
    const auto p = pad_amounts(g, pad, rank);
    if (!p) continue;
    const auto nonzero = [](const std::vector<int64_t>& v) {
      return std::any_of(v.begin(), v.end(), [](int64_t e) { return e != 0; });
    };
    if (!nonzero(p->begin) && !nonzero(p->end)) {
      rw.remove(id);
      rw.replace_uses(y, g.value(x).name);
      ++result.removed;
      continue;
    }
    // Folding: zeros on the spatial dims only, into the data input of the one node reading it.
    const auto readers = g.consumers(y);
    if (rank < 3 || readers.size() != 1 || !pads_with_zeros(g, pad)) continue;
    if (p->begin[0] || p->begin[1] || p->end[0] || p->end[1]) continue;
    if (std::any_of(p->begin.begin(), p->begin.end(), [](int64_t e) { return e < 0; }) ||
        std::any_of(p->end.begin(), p->end.end(), [](int64_t e) { return e < 0; }))
      continue;
    const Node& reader = g.node(readers[0]);
    if ((reader.op != "Conv" && reader.op != "AveragePool") || reader.inputs.empty() ||
        reader.inputs[0] != y || std::count(reader.inputs.begin(), reader.inputs.end(), y) != 1 ||
        rw.removed(readers[0]))
      continue;
    const auto pads = merged_pads(reader, *p);
    if (!pads) continue;
    Attributes attrs = reader.attrs;
    attrs.set("pads", *pads);
    if (reader.op == "AveragePool") attrs.set("count_include_pad", int64_t{1});
    std::vector<std::string> inputs;
    for (ValueId v : reader.inputs) inputs.push_back(v == kNoId ? "" : g.value(v).name);
    inputs[0] = g.value(x).name;
    std::vector<std::string> outputs;
    for (ValueId v : reader.outputs) outputs.push_back(g.value(v).name);
    rw.remove(id);
    rw.remove(readers[0]);
    rw.add_node(reader.op, reader.name, inputs, outputs, attrs);
    ++result.folded;
  }
  GRAPHI_ASSIGN_OR_RETURN(
      result.graph, rw.finish_or_copy(result.removed + result.folded + result.cropped, shapes));
  return result;
}

}  // namespace graphi::graph::passes
