#include "graph/passes/conv1d_lift.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

Shape with_unit_axis(const Shape& s) { return {s[0], s[1], 1, s[2]}; }

// A Reshape between [N, C, L] and [N, C, 1, L]: `adds` the unit axis (3-D -> 4-D, the importer's
// x of a 1-D conv) or drops it (4-D -> 3-D, its y).
bool unit_axis_reshape(const Graph& g, const Node& n, bool adds) {
  if (n.op != "Reshape" || n.inputs.empty() || n.inputs[0] == kNoId || n.outputs.size() != 1)
    return false;
  const TensorDesc& x = g.value(n.inputs[0]).desc;
  const TensorDesc& y = g.value(n.outputs[0]).desc;
  const TensorDesc& d3 = adds ? x : y;
  const TensorDesc& d4 = adds ? y : x;
  return d3.rank() == 3 && d4.rank() == 4 && with_unit_axis(d3.shape) == d4.shape;
}

// A Slice's axes for a 3-D input, normalized: its constant input 3, or 0, 1, ... for as many as
// its starts (input 1); nullopt when they are not constants (or the Slice is in attribute form).
std::optional<std::vector<int64_t>> slice_axes(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3 || n.inputs[1] == kNoId || n.inputs[2] == kNoId) return std::nullopt;
  const auto starts = const_ints(g, n.inputs[1]);
  if (!starts || !const_ints(g, n.inputs[2])) return std::nullopt;
  if (n.inputs.size() > 4 && n.inputs[4] != kNoId && !const_ints(g, n.inputs[4]))
    return std::nullopt;
  std::vector<int64_t> axes;
  if (n.inputs.size() > 3 && n.inputs[3] != kNoId) {
    const auto a = const_ints(g, n.inputs[3]);
    if (!a) return std::nullopt;
    axes = *a;
  } else {
    for (size_t d = 0; d < starts->size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  for (int64_t& a : axes) {
    if (a < 0) a += 3;
    if (a < 0 || a > 2) return std::nullopt;
  }
  return axes;
}

bool binary_op(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

// A constant that broadcasts against [N, C, L] (rank <= 3); lifted, it gets the unit axis too.
bool broadcast_constant(const Value& v) { return v.data != nullptr && v.desc.rank() <= 3; }

// Whether node n computes the same on the 4-D form of its lifted inputs: every output a 3-D
// value and its data inputs lifted (`lifted`) or constants it can lay out 4-D.
bool liftable(const Graph& g, const Node& n, const std::unordered_set<ValueId>& lifted) {
  if (n.inputs.empty() || n.inputs[0] == kNoId || n.outputs.empty()) return false;
  for (ValueId y : n.outputs)
    if (y == kNoId || g.value(y).desc.rank() != 3) return false;
  auto in = [&](ValueId v) { return v != kNoId && lifted.count(v) > 0; };
  if (elementwise_unary_op(n.op)) {
    // Extra inputs are scalars (Clip's bounds).
    return in(n.inputs[0]) && std::all_of(n.inputs.begin() + 1, n.inputs.end(), [&](ValueId v) {
             return v == kNoId || g.value(v).desc.numel() == 1;
           });
  }
  if (binary_op(n.op)) {
    if (n.inputs.size() != 2 || n.inputs[1] == kNoId) return false;
    const ValueId a = n.inputs[0], b = n.inputs[1];
    return (in(a) || in(b)) && (in(a) || broadcast_constant(g.value(a))) &&
           (in(b) || broadcast_constant(g.value(b)));
  }
  if (n.op == "Split") return in(n.inputs[0]) && node_axis(n, 3) == 1;
  if (n.op == "Concat")
    return node_axis(n, 3) == 1 && std::all_of(n.inputs.begin(), n.inputs.end(), in);
  if (n.op == "Pad") return in(n.inputs[0]) && pad_amounts(g, n, 3).has_value();
  // Per (image, group) statistics over the channels of the group and every position: the same
  // with a unit axis (scale and bias are per channel, any layout).
  if (n.op == "InstanceNormalization" || n.op == "GroupNorm")
    return in(n.inputs[0]) && std::all_of(n.inputs.begin() + 1, n.inputs.end(), [&](ValueId v) {
             return v == kNoId || g.value(v).data != nullptr;
           });
  // TorchScript's chunk(2, 1): two Slices along the channels.
  if (n.op == "Slice") return in(n.inputs[0]) && slice_axes(g, n).has_value();
  return false;
}

}  // namespace

Result<Conv1dLiftResult> lift_conv1d_chains(const Graph& g, const ShapeInferencer& shapes) {
  Conv1dLiftResult result;
  // The lifted values (`order`: as their producers come, so the rewrite is deterministic).
  std::unordered_set<ValueId> lifted;
  std::vector<ValueId> order;
  int exits = 0;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (unit_axis_reshape(g, n, false)) {
      lifted.insert(n.outputs[0]);
      order.push_back(n.outputs[0]);
    } else if (liftable(g, n, lifted)) {
      for (ValueId y : n.outputs) lifted.insert(y), order.push_back(y);
    } else if (unit_axis_reshape(g, n, true) && lifted.count(n.inputs[0]) &&
               !g.value(n.outputs[0]).is_output) {
      ++exits;
    }
  }
  if (exits == 0) {
    result.graph = g;
    return result;
  }

  Rewrite rw(g);
  std::unordered_map<ValueId, std::string> name4;  // lifted value -> its 4-D value's name
  std::unordered_map<ValueId, std::string> const4;
  // A binary op's operand: the lifted value, or the constant reshaped to rank 4 as it broadcasts
  // against [N, C, 1, L] (leading 1s to rank 3, then the unit axis before the last).
  auto operand = [&](ValueId v) -> std::string {
    if (lifted.count(v)) return name4.at(v);
    auto it = const4.find(v);
    if (it != const4.end()) return it->second;
    const Value& c = g.value(v);
    Shape s = c.desc.shape;
    while (s.size() < 3) s.insert(s.begin(), 1);
    s.insert(s.end() - 1, 1);
    Tensor t(TensorDesc{c.desc.dtype, s});
    std::memcpy(t.data(), c.data->data(), t.bytes());
    const std::string name = rw.fresh(c.name + "/4d");
    rw.add_constant(name, std::move(t));
    return const4.emplace(v, name).first->second;
  };
  auto name_of = [&](ValueId v) { return v == kNoId ? std::string() : g.value(v).name; };
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (unit_axis_reshape(g, n, false) && lifted.count(n.outputs[0])) {
      rw.remove(id);
      name4[n.outputs[0]] = g.value(n.inputs[0]).name;
      ++result.removed;
    } else if (!n.outputs.empty() && n.outputs[0] != kNoId && lifted.count(n.outputs[0])) {
      std::vector<std::string> in;
      Attributes attrs = n.attrs;
      if (binary_op(n.op)) {
        in = {operand(n.inputs[0]), operand(n.inputs[1])};
      } else if (n.op == "Pad") {
        // The 3-D amounts with a 0 before and after on the unit axis, as input 1.
        const PadAmounts p = *pad_amounts(g, n, 3);
        const std::vector<int64_t> pads = {p.begin[0], p.begin[1], 0, p.begin[2],
                                           p.end[0],   p.end[1],   0, p.end[2]};
        const std::string pads_name = rw.fresh(n.name + "/pads4d");
        rw.add_constant(pads_name, i64_tensor(pads));
        in = {name4.at(n.inputs[0]), pads_name};
        if (n.inputs.size() > 2 && n.inputs[2] != kNoId) in.push_back(name_of(n.inputs[2]));
      } else if (n.op == "Slice") {
        // The same starts / ends / steps; the axes after the channels move past the unit axis.
        std::vector<int64_t> axes = *slice_axes(g, n);
        for (int64_t& a : axes) a += a == 2 ? 1 : 0;
        const std::string axes_name = rw.fresh(n.name + "/axes4d");
        rw.add_constant(axes_name, i64_tensor(axes));
        in = {name4.at(n.inputs[0]), name_of(n.inputs[1]), name_of(n.inputs[2]), axes_name};
        if (n.inputs.size() > 4 && n.inputs[4] != kNoId) in.push_back(name_of(n.inputs[4]));
      } else {
        for (ValueId v : n.inputs) in.push_back(lifted.count(v) ? name4.at(v) : name_of(v));
        if (n.op == "Split" || n.op == "Concat") attrs.set("axis", int64_t{1});
      }
      std::vector<std::string> out;
      for (ValueId y : n.outputs) {
        name4[y] = rw.fresh(g.value(y).name + "/4d");
        out.push_back(name4[y]);
      }
      rw.remove(id);
      rw.add_node(n.op, n.name, in, out, std::move(attrs));
      ++result.lifted;
    } else if (unit_axis_reshape(g, n, true) && lifted.count(n.inputs[0]) &&
               !g.value(n.outputs[0]).is_output) {
      rw.remove(id);
      rw.replace_uses(n.outputs[0], name4.at(n.inputs[0]));
      ++result.removed;
    }
  }
  // Lifted values something else reads in 3-D (or the graph outputs): one Reshape back each.
  for (ValueId v : order) {
    bool plain_reader = g.value(v).is_output;
    for (NodeId c : g.consumers(v)) plain_reader = plain_reader || !rw.removed(c);
    if (!plain_reader) continue;
    const std::string shape_name = rw.fresh(g.value(v).name + "/shape3d");
    rw.add_constant(shape_name, i64_tensor(g.value(v).desc.shape));
    rw.add_node("Reshape", rw.fresh(g.value(v).name + "/to3d"), {name4.at(v), shape_name},
                {g.value(v).name});
    --result.removed;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  return result;
}

}  // namespace graphi::graph::passes
