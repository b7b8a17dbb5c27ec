#include "graph/batch_split.h"

#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace graphi::graph {

namespace {

// Ops that treat every element (or every sample) on its own; the shape check decides the rest
// (a Pad, Resize, Tile or MatMul that touched dim 0 changes it).
const std::set<std::string>& per_sample_ops() {
  static const std::set<std::string> ops = {
      // element-wise
      "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil",
      "Clip", "Cos", "Cosh", "Div", "Dropout", "Elu", "Equal", "Erf", "Exp", "Floor", "Gelu",
      "Greater", "GreaterOrEqual", "HardSigmoid", "Identity", "IntBinary", "IsInf", "IsNaN",
      "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Min", "Mod", "Mul", "Neg", "Not", "Or",
      "Pow", "QuantizeDequantize", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid",
      "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Sub", "Tan", "Tanh",
      "ThresholdedRelu", "Where", "Xor",
      // per sample: convolutions, pools, normalizations over channels / space, products
      "AveragePool", "AveragePool3D", "AveragePool3DNdhwc", "BatchNormalization", "CenterCropPad",
      "ChannelAffine", "Col2Im", "Conv", "Conv3D", "Conv3DNdhwc", "ConvTranspose",
      "ConvTranspose3D", "ConvTranspose3DNdhwc", "FusedConv", "GridSample", "GroupNorm",
      "InstanceNormalization", "LRN", "LpPool", "MaxPool", "MaxPool3D", "MaxPool3DNdhwc", "Pad",
      "Resize", "MatMul", "MatMulBias", "Gemm", "Reshape", "Expand", "Tile", "Det"};
  return ops;
}

// Ops along one axis ("axis" attribute, its default here): fine off dim 0.
const std::unordered_map<std::string, int64_t>& axis_ops() {
  static const std::unordered_map<std::string, int64_t> ops = {
      {"Softmax", -1}, {"LogSoftmax", -1}, {"LayerNormalization", -1},
      {"Concat", 0},   {"Split", 0},       {"GatherElements", 0},
      {"TopK", -1},    {"ArgMax", 0},      {"ArgMin", 0}};
  return ops;
}

bool is_reduce(const std::string& op) { return op.rfind("Reduce", 0) == 0; }

int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// An ints operand given as attribute `attr` or as constant input `index`; nullopt if neither.
std::optional<std::vector<int64_t>> ints_operand(const Graph& g, const Node& n, size_t index,
                                                 const std::string& attr) {
  if (n.attrs.has(attr)) {
    Result<std::vector<int64_t>> v = attr_ints(n.attrs, n.where(), attr);
    if (v.is_ok()) return *v;
    return std::nullopt;
  }
  if (index >= n.inputs.size() || n.inputs[index] == kNoId) return std::nullopt;
  const Value& v = g.value(n.inputs[index]);
  if (v.kind != ValueKind::kConstant || !v.data) return std::nullopt;
  std::vector<int64_t> out;
  if (v.desc.dtype == DType::kI64) {
    const int64_t* p = v.data->data_as<int64_t>();
    out.assign(p, p + v.data->numel());
  } else if (v.desc.dtype == DType::kI32) {
    const int32_t* p = v.data->data_as<int32_t>();
    out.assign(p, p + v.data->numel());
  } else {
    return std::nullopt;
  }
  return out;
}

}  // namespace

Status check_batch_split(const Graph& full, const Graph& slice, int64_t batch, int64_t slice_size) {
  auto refuse = [](const std::string& why) { return Status::unsupported(why); };
  if (batch < 2 || slice_size < 1 || batch % slice_size != 0 || slice_size == batch)
    return refuse("batch " + std::to_string(batch) + " in slices of " + std::to_string(slice_size) +
                  " is no split");
  if (full.num_nodes() != slice.num_nodes() || full.num_values() != slice.num_values())
    return refuse("the graph imported for " + std::to_string(slice_size) +
                  " sample(s) has other nodes or values");
  std::unordered_map<std::string, const Node*> slice_nodes;
  for (const Node& n : slice.nodes()) slice_nodes[n.name] = &n;
  auto slice_value = [&](const std::string& name) -> const Value* {
    std::optional<ValueId> id = slice.find_value(name);
    return id ? &slice.value(*id) : nullptr;
  };

  std::vector<bool> batched(full.num_values(), false);
  for (ValueId id : full.inputs()) batched[id] = true;
  for (const Node& n : full.nodes()) {
    bool any = false;
    for (ValueId in : n.inputs) any = any || (in != kNoId && batched[in]);
    for (ValueId out : n.outputs) batched[out] = any;
  }
  for (ValueId id : full.outputs())
    if (!batched[id])
      return refuse("output '" + full.value(id).name + "' does not depend on the inputs");

  // Values: shapes (and small constants' data).
  for (ValueId id = 0; id < full.num_values(); ++id) {
    const Value& a = full.value(id);
    const Value* b = slice_value(a.name);
    if (!b || b->kind != a.kind || b->desc.dtype != a.desc.dtype)
      return refuse("value '" + a.name + "' differs between the two imports");
    if (batched[id]) {
      TensorDesc want = a.desc;
      if (want.shape.empty() || want.shape[0] != batch)
        return refuse("value '" + a.name + "' " + a.desc.to_string() +
                      " does not keep the batch on dim 0");
      want.shape[0] = slice_size;
      if (b->desc != want)
        return refuse("value '" + a.name + "' is " + a.desc.to_string() + " for the batch but " +
                      b->desc.to_string() + " for a slice");
      continue;
    }
    if (b->desc != a.desc)
      return refuse("value '" + a.name + "' is " + a.desc.to_string() + " for the batch but " +
                    b->desc.to_string() + " for a slice");
    if (a.kind != ValueKind::kConstant || !a.data || !b->data || a.data == b->data) continue;
    if (a.data->bytes() > (size_t{64} << 10)) continue;  // weights from the file
    if (std::memcmp(a.data->data(), b->data->data(), a.data->bytes()) == 0) continue;
    // A Reshape's / Expand's shape operand may differ in its dim-0 entry: batch vs slice.
    bool shape_operand = a.desc.dtype == DType::kI64 && a.desc.rank() == 1 && a.desc.numel() >= 1;
    for (NodeId c : full.consumers(id)) {
      const Node& n = full.node(c);
      shape_operand = shape_operand && (n.op == "Reshape" || n.op == "Expand") &&
                      n.inputs.size() > 1 && n.inputs[1] == id;
    }
    if (shape_operand) {
      const int64_t* x = a.data->data_as<int64_t>();
      const int64_t* y = b->data->data_as<int64_t>();
      bool rest_equal = x[0] == batch && y[0] == slice_size;
      for (int64_t i = 1; i < a.desc.numel(); ++i) rest_equal = rest_equal && x[i] == y[i];
      if (rest_equal) continue;
    }
    return refuse("constant '" + a.name + "' depends on the batch size");
  }

  // Nodes: the same ones, and ops that keep the samples apart.
  for (const Node& n : full.nodes()) {
    auto it = slice_nodes.find(n.name);
    if (it == slice_nodes.end() || it->second->op != n.op || !(it->second->attrs == n.attrs))
      return refuse(n.where() + " differs between the two imports");
    bool any = false;
    for (ValueId in : n.inputs) any = any || (in != kNoId && batched[in]);
    if (!any) continue;  // constant work
    const int64_t rank = n.inputs[0] != kNoId ? full.value(n.inputs[0]).desc.rank() : 0;
    const bool data_batched = n.inputs[0] != kNoId && batched[n.inputs[0]];
    if (per_sample_ops().count(n.op)) continue;
    if (auto a = axis_ops().find(n.op); a != axis_ops().end()) {
      Result<int64_t> axis = attr_int(n.attrs, n.where(), "axis", a->second);
      if (axis.is_ok() && normalized(*axis, rank) != 0) continue;
      return refuse(n.where() + " works along the batch axis");
    }
    if (n.op == "Gather") {  // an embedding lookup of batched indices is per sample too
      Result<int64_t> axis = attr_int(n.attrs, n.where(), "axis", 0);
      if (!data_batched || (axis.is_ok() && normalized(*axis, rank) != 0)) continue;
      return refuse(n.where() + " gathers along the batch axis");
    }
    if (n.op == "CumSum" || n.op == "CumProd") {
      std::optional<std::vector<int64_t>> axis = ints_operand(full, n, 1, "axis");
      if (axis && axis->size() == 1 && normalized((*axis)[0], rank) != 0) continue;
      return refuse(n.where() + " runs along the batch axis");
    }
    if (n.op == "Transpose") {
      std::optional<std::vector<int64_t>> perm = ints_operand(full, n, 99, "perm");
      if (perm && !perm->empty() && (*perm)[0] == 0) continue;
      return refuse(n.where() + " moves the batch axis");
    }
    if (n.op == "Slice" || is_reduce(n.op)) {
      std::optional<std::vector<int64_t>> axes =
          ints_operand(full, n, n.op == "Slice" ? 3 : 1, "axes");
      bool off_batch = axes.has_value() && !axes->empty();
      if (axes)
        for (int64_t ax : *axes) off_batch = off_batch && normalized(ax, rank) != 0;
      if (off_batch) continue;
      return refuse(n.where() + (n.op == "Slice" ? " slices" : " reduces") +
                    " along the batch axis (or names no axes)");
    }
    return refuse(n.where() + " is not known to keep the samples apart");
  }
  return Status::ok();
}

}  // namespace graphi::graph
