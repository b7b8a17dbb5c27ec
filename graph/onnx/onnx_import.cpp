#include "graph/onnx/onnx_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graph/graph_builder.h"
#include "graph/onnx/onnx_attr_names.h"
#include "graph/onnx/onnx_fold.h"
#include "graph/onnx/onnx_proto.h"

namespace graphi::graph {

namespace {

using onnx::HostTensor;

constexpr int64_t kMinOpset = 6, kMaxOpset = 18;
constexpr int64_t kMinIr = 3, kMaxIr = 10;

// ONNX ops mapped onto graphi ops when their data is computed at run time (graph/onnx/ONNX.md).
const std::vector<std::string>& runtime_ops() {
  static const std::vector<std::string> kOps = {"Abs",
                                                "Acos",
                                                "Acosh",
                                                "Add",
                                                "And",
                                                "ArgMax",
                                                "ArgMin",
                                                "Asin",
                                                "Asinh",
                                                "Atan",
                                                "Atanh",
                                                "AveragePool",
                                                "BatchNormalization",
                                                "Cast",
                                                "Ceil",
                                                "Celu",
                                                "Clip",
                                                "Concat",
                                                "Conv",
                                                "ConvTranspose",
                                                "Cos",
                                                "Cosh",
                                                "CumSum",
                                                "DepthToSpace",
                                                "Div",
                                                "Dropout",
                                                "Einsum",
                                                "Elu",
                                                "Equal",
                                                "Erf",
                                                "Exp",
                                                "Expand",
                                                "Flatten",
                                                "Floor",
                                                "GRU",
                                                "Gather",
                                                "GatherElements",
                                                "GatherND",
                                                "Gemm",
                                                "GlobalAveragePool",
                                                "GlobalMaxPool",
                                                "Greater",
                                                "GreaterOrEqual",
                                                "HardSigmoid",
                                                "HardSwish",
                                                "Identity",
                                                "InstanceNormalization",
                                                "IsInf",
                                                "IsNaN",
                                                "LRN",
                                                "LSTM",
                                                "LayerNormalization",
                                                "LeakyRelu",
                                                "Less",
                                                "LessOrEqual",
                                                "Log",
                                                "LogSoftmax",
                                                "MatMul",
                                                "Max",
                                                "MaxPool",
                                                "Mean",
                                                "Min",
                                                "Mod",
                                                "Mul",
                                                "Neg",
                                                "Not",
                                                "OneHot",
                                                "Or",
                                                "PRelu",
                                                "Pad",
                                                "Pow",
                                                "RNN",
                                                "Reciprocal",
                                                "ReduceL1",
                                                "ReduceL2",
                                                "ReduceLogSum",
                                                "ReduceLogSumExp",
                                                "ReduceMax",
                                                "ReduceMean",
                                                "ReduceMin",
                                                "ReduceProd",
                                                "ReduceSum",
                                                "ReduceSumSquare",
                                                "Relu",
                                                "Reshape",
                                                "Resize",
                                                "Round",
                                                "Scatter",
                                                "ScatterElements",
                                                "ScatterND",
                                                "Selu",
                                                "Shrink",
                                                "Sigmoid",
                                                "Sign",
                                                "Sin",
                                                "Sinh",
                                                "Slice",
                                                "Softmax",
                                                "Softplus",
                                                "Softsign",
                                                "SpaceToDepth",
                                                "Split",
                                                "Sqrt",
                                                "Squeeze",
                                                "Sub",
                                                "Sum",
                                                "Tan",
                                                "Tanh",
                                                "ThresholdedRelu",
                                                "Tile",
                                                "TopK",
                                                "Transpose",
                                                "Unsqueeze",
                                                "Upsample",
                                                "Where",
                                                "Xor"};
  return kOps;
}

bool is_runtime_op(const std::string& op) {
  const auto& v = runtime_ops();
  return std::find(v.begin(), v.end(), op) != v.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::optional<DType> graphi_dtype(int32_t t) {
  switch (t) {
    case onnx::kFloat:
      return DType::kF32;
    case onnx::kInt32:
      return DType::kI32;
    case onnx::kInt64:
      return DType::kI64;
    default:
      return std::nullopt;
  }
}

int32_t onnx_type_of(DType d) {
  return d == DType::kF32 ? onnx::kFloat : d == DType::kI32 ? onnx::kInt32 : onnx::kInt64;
}

struct ValState {
  bool is_const = false;
  std::shared_ptr<const HostTensor> host;  // constants
  TensorDesc desc;                         // runtime values; constants once converted
  std::shared_ptr<const Tensor> tensor;    // graphi form of a constant, once made
  std::string graph_name;                  // name in the builder ("" = not added yet)
};

class Importer {
 public:
  Importer(const std::string& source, const ShapeInferencer& shapes, const ImportOptions& opts,
           onnx::Model& m)
      : src_(source), shapes_(shapes), opts_(opts), m_(m), b_(source) {}

  Result<Graph> run();

 private:
  Status check_versions();
  Status add_inputs();
  Result<std::vector<size_t>> topo_order();
  Status import_node(const onnx::Node& n);
  // Opset < 7 binary ops with broadcast = 1 align B at `axis`; rewrite to numpy broadcasting.
  Result<onnx::Node> legacy_broadcast(const onnx::Node& n, const std::string& where);
  Status translate(const onnx::Node& n, const std::string& where);
  // Conv/MaxPool/AveragePool with auto_pad SAME_UPPER, SAME_LOWER or VALID (tf2onnx writes
  // them): the same node with explicit pads, computed from the static input shape.
  Result<onnx::Node> explicit_pads(const onnx::Node& n, const std::string& where);
  // MaxPool/AveragePool with ceil_mode = 1: the same pool with ceil_mode = 0 and extra end
  // padding that yields the same windows (PyTorch's and ONNX's rule: a last window must start
  // inside the input or the begin padding).
  Result<onnx::Node> ceil_mode_as_pads(const onnx::Node& n, const std::string& where);
  // Conv, ConvTranspose, MaxPool, AveragePool on [N, C, L]: the 2-D op on [N, C, 1, L].
  Status translate_1d(const onnx::Node& n, const std::string& name,
                      const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                      const TensorDesc& x, const std::string& where);
  // LSTM/GRU/RNN with activations the fused sequence kernels do not run (ops/rnn/rnn_sequence.h:
  // only Sigmoid/Tanh gates for LSTM/GRU, Tanh/Relu/Sigmoid for RNN, no activation_alpha/beta):
  // unrolled over the time steps into plain graphi ops, with ONNX's semantics (graph/onnx/ONNX.md).
  static bool rnn_needs_unrolling(const onnx::Node& n);
  Status translate_rnn_unrolled(const onnx::Node& n, const std::string& name,
                                const std::vector<std::string>& ins, const std::string& where);
  Status add_outputs();

  std::string where_of(const onnx::Node& n) const {
    return src_ + ": node[" + std::to_string(n.index) + "] '" + n.name + "' (" + n.op + ")";
  }
  Status unsupported_op(const onnx::Node& n, const std::string& why = "") const;
  std::string fresh(const std::string& base);
  std::string node_name(const onnx::Node& n);
  // Outputs with trailing absent ones dropped and inner absent ones named.
  std::vector<std::string> outputs_of(const onnx::Node& n, const std::string& name);

  bool is_const(const std::string& v) const {
    auto it = vals_.find(v);
    return it != vals_.end() && it->second.is_const;
  }
  const HostTensor* host(const std::string& v) const {
    auto it = vals_.find(v);
    return it != vals_.end() && it->second.is_const ? it->second.host.get() : nullptr;
  }
  // Desc of a runtime value or of a constant convertible to graphi.
  Result<TensorDesc> desc_of(const std::string& v, const std::string& where);
  // Makes constant `v` a builder constant (once); returns its builder name.
  Result<std::string> ensure_graph_value(const std::string& v, const std::string& where);
  std::string add_const(const std::string& base, HostTensor t);  // a new importer constant
  std::string add_ints_const(const std::string& base, std::vector<int64_t> v);

  // Adds graphi node `op` after inferring its outputs; inputs are ONNX or importer value names.
  Status emit(const std::string& op, const std::string& name,
              const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
              Attributes attrs, const std::string& where, const onnx::Node* onnx_node);
  Result<Attributes> convert_attrs(const onnx::Node& n, const std::string& where,
                                   const std::set<std::string>& drop = {}) const;
  // Output shape of a shape-only op (Flatten/Squeeze/Unsqueeze) on a runtime value.
  Result<Shape> shape_after(const onnx::Node& n, const TensorDesc& in, const std::string& where);

  const std::string& src_;
  const ShapeInferencer& shapes_;
  const ImportOptions& opts_;
  onnx::Model& m_;
  GraphBuilder b_;
  int64_t opset_ = 0;
  std::unordered_map<std::string, ValState> vals_;
  std::unordered_set<std::string> names_;  // every ONNX value name and every name we made
  std::unordered_set<std::string> node_names_;
  std::unordered_set<std::string> graph_outputs_;
};

Status Importer::unsupported_op(const onnx::Node& n, const std::string& why) const {
  std::vector<std::string> fold_only;
  for (const std::string& op : onnx::foldable_ops())
    if (!is_runtime_op(op)) fold_only.push_back(op);
  const std::string domain = n.domain.empty() ? "ai.onnx" : n.domain;
  return Status::unsupported(
      where_of(n) + ": op type '" + n.op + "' (domain '" + domain + "'" +
      (n.domain.empty() || n.domain == "ai.onnx" ? ", opset " + std::to_string(opset_) : "") +
      ") is not supported" + (why.empty() ? "" : " " + why) +
      ". graphi runs these ONNX ops: " + join(runtime_ops()) +
      "; and evaluates these at import time when their inputs are constants or static shapes: " +
      join(fold_only) + " (see graph/onnx/ONNX.md)");
}

std::string Importer::fresh(const std::string& base) {
  std::string n = base;
  for (int k = 1; names_.count(n) || node_names_.count(n); ++k) n = base + "_" + std::to_string(k);
  names_.insert(n);
  return n;
}

std::string Importer::node_name(const onnx::Node& n) {
  std::string base = n.name.empty() ? n.op + "_" + std::to_string(n.index) : n.name;
  std::string name = base;
  for (int k = 1; node_names_.count(name); ++k) name = base + "_" + std::to_string(k);
  node_names_.insert(name);
  return name;
}

std::vector<std::string> Importer::outputs_of(const onnx::Node& n, const std::string& name) {
  std::vector<std::string> outs = n.outputs;
  while (!outs.empty() && outs.back().empty()) outs.pop_back();
  for (size_t k = 0; k < outs.size(); ++k)
    if (outs[k].empty()) outs[k] = fresh(name + "/unused_output" + std::to_string(k));
  return outs;
}

Result<TensorDesc> Importer::desc_of(const std::string& v, const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(std::string g, ensure_graph_value(v, where));
  (void)g;
  return vals_.at(v).desc;
}

Result<std::string> Importer::ensure_graph_value(const std::string& v, const std::string& where) {
  auto it = vals_.find(v);
  if (it == vals_.end()) return Status::internal(where + ": value '" + v + "' is unknown");
  ValState& s = it->second;
  if (!s.graph_name.empty()) return s.graph_name;
  const HostTensor& h = *s.host;
  // graphi has no bool dtype: ONNX BOOL tensors are float32 0/1 (ops/logic_ops.cpp).
  std::optional<DType> dt = h.type == onnx::kBool ? DType::kF32 : graphi_dtype(h.type);
  if (!dt)
    return Status::unsupported(where + ": value '" + v + "' is a constant " + h.desc() +
                               "; graphi ops take float32, int32 or int64 tensors");
  auto t = std::make_shared<Tensor>(TensorDesc{*dt, h.shape});
  const size_t n = h.numel();
  if (h.type == onnx::kBool) {
    float* p = t->data_as<float>();
    for (size_t k = 0; k < n; ++k) p[k] = h.i[k] != 0 ? 1.0f : 0.0f;
  } else if (*dt == DType::kF32) {
    float* p = t->data_as<float>();
    for (size_t k = 0; k < n; ++k) p[k] = static_cast<float>(h.f[k]);
  } else if (*dt == DType::kI32) {
    int32_t* p = t->data_as<int32_t>();
    for (size_t k = 0; k < n; ++k) p[k] = static_cast<int32_t>(h.i[k]);
  } else {
    int64_t* p = t->data_as<int64_t>();
    for (size_t k = 0; k < n; ++k) p[k] = h.i[k];
  }
  s.desc = t->desc();
  s.tensor = t;
  // A constant that is also a graph output gets its own name; the output is an Identity of it.
  s.graph_name = graph_outputs_.count(v) ? fresh(v + "/const") : v;
  b_.add_constant(s.graph_name, std::shared_ptr<const Tensor>(t));
  return s.graph_name;
}

std::string Importer::add_const(const std::string& base, HostTensor t) {
  const std::string name = fresh(base);
  ValState s;
  s.is_const = true;
  s.host = std::make_shared<HostTensor>(std::move(t));
  vals_[name] = std::move(s);
  return name;
}

std::string Importer::add_ints_const(const std::string& base, std::vector<int64_t> v) {
  HostTensor t = HostTensor::make(onnx::kInt64, {static_cast<int64_t>(v.size())});
  t.i = std::move(v);
  return add_const(base, std::move(t));
}

Result<Attributes> Importer::convert_attrs(const onnx::Node& n, const std::string& where,
                                           const std::set<std::string>& drop) const {
  Attributes out;
  for (const onnx::Attr& a : n.attrs) {
    if (drop.count(a.name)) continue;
    switch (a.type) {
      case onnx::kAttrInt:
        out.set(a.name, a.i);
        break;
      case onnx::kAttrFloat:
        out.set(a.name, static_cast<double>(a.f));
        break;
      case onnx::kAttrString:
        out.set(a.name, a.s);
        break;
      case onnx::kAttrInts:
        out.set(a.name, a.ints);
        break;
      case onnx::kAttrFloats:
        out.set(a.name, std::vector<double>(a.floats.begin(), a.floats.end()));
        break;
      case onnx::kAttrStrings: {
        // graphi has no string lists: one comma-separated string (ops/rnn/rnn_sequence.h).
        std::string s;
        for (const std::string& x : a.strings) s += (s.empty() ? "" : ",") + x;
        out.set(a.name, s);
        break;
      }
      default:
        return Status::unsupported(where + ": attribute '" + a.name + "' of type " +
                                   onnx::attr_type_name(a.type) + " is not supported");
    }
  }
  return out;
}

Status Importer::emit(const std::string& op, const std::string& name,
                      const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs, Attributes attrs,
                      const std::string& where, const onnx::Node* onnx_node) {
  std::vector<std::string> gin;
  std::vector<const TensorDesc*> descs;
  std::vector<const Tensor*> consts;
  for (const std::string& in : inputs) {
    if (in.empty()) {
      gin.emplace_back();
      continue;
    }
    GRAPHI_ASSIGN_OR_RETURN(std::string g, ensure_graph_value(in, where));
    gin.push_back(g);
  }
  for (const std::string& in : inputs) {
    if (in.empty()) {
      descs.push_back(nullptr);
      consts.push_back(nullptr);
    } else {
      const ValState& s = vals_.at(in);
      descs.push_back(&s.desc);
      consts.push_back(s.tensor.get());
    }
  }
  Node node{op, name, attrs, {}, {}};
  InferContext ctx{node, descs, consts, where, outputs.size()};
  Result<std::vector<TensorDesc>> out = shapes_.infer(ctx);
  if (!out.is_ok()) {
    if (onnx_node && out.status().code() == StatusCode::kUnsupported &&
        out.status().message().find("unknown op type") != std::string::npos)
      return unsupported_op(*onnx_node);
    const std::string& msg = out.status().message();
    if (msg.rfind(src_ + ":", 0) == 0) return out.status();
    return Status(out.status().code(), where + ": " + msg);
  }
  if (out->size() != outputs.size())
    return Status::invalid_graph(where + ": has " + std::to_string(outputs.size()) +
                                 " outputs, graphi's " + op + " produces " +
                                 std::to_string(out->size()));
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (vals_.count(outputs[k]))
      return Status::invalid_graph(where + ": output '" + outputs[k] + "' is already defined");
    ValState s;
    s.desc = (*out)[k];
    s.graph_name = outputs[k];
    vals_[outputs[k]] = std::move(s);
  }
  node_names_.insert(name);  // so later ONNX node names steer clear of generated ones
  b_.add_node(op, name, gin, outputs, std::move(attrs));
  return Status::ok();
}

Result<Shape> Importer::shape_after(const onnx::Node& n, const TensorDesc& in,
                                    const std::string& where) {
  HostTensor fake;
  fake.type = onnx_type_of(in.dtype);
  fake.shape = in.shape;
  std::vector<const HostTensor*> ins{&fake};
  for (size_t k = 1; k < n.inputs.size(); ++k) {
    if (n.inputs[k].empty()) {
      ins.push_back(nullptr);
      continue;
    }
    const HostTensor* h = host(n.inputs[k]);
    if (!h)
      return Status::unsupported(where + ": input " + std::to_string(k) + " ('" + n.inputs[k] +
                                 "') must be known at import time (a constant)");
    ins.push_back(h);
  }
  // The fake input has no data: fold only ops that look at shapes (checked by the caller).
  fake.f.clear();
  fake.i.clear();
  GRAPHI_ASSIGN_OR_RETURN(std::vector<HostTensor> r, onnx::fold_node(n, opset_, ins, where));
  return r.at(0).shape;
}

Status Importer::translate(const onnx::Node& n, const std::string& where) {
  const std::string& op = n.op;
  const std::string name = node_name(n);
  std::vector<std::string> outs = outputs_of(n, name);
  if (outs.empty()) return Status::invalid_graph(where + ": has no outputs");
  std::vector<std::string> ins = n.inputs;
  auto need = [&](size_t k) -> Status {
    if (k < ins.size() && !ins[k].empty()) return Status::ok();
    return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
  };

  if ((op == "LSTM" || op == "GRU" || op == "RNN") && rnn_needs_unrolling(n))
    return translate_rnn_unrolled(n, name, ins, where);
  if (op == "Identity" || op == "Dropout") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    if (outs.size() > 1)
      return Status::unsupported(where + ": Dropout's mask output is not supported");
    if (op == "Dropout" && ins.size() > 2 && !ins[2].empty()) {
      const HostTensor* t = host(ins[2]);
      if (!t || t->numel() != 1 || t->get_i(0) != 0)
        return Status::unsupported(where + ": Dropout in training mode is not supported");
    }
    return emit("Identity", name, {ins[0]}, outs, {}, where, &n);
  }
  if (op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    GRAPHI_ASSIGN_OR_RETURN(Shape s, shape_after(n, d, where));
    const std::string shape = add_ints_const(name + "/shape", s);
    return emit("Reshape", name, {ins[0], shape}, outs, {}, where, &n);
  }
  if (op == "Expand") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    const HostTensor* shape = host(ins[1]);
    if (!shape) return unsupported_op(n, "with a shape computed at run time");
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (shape->is_float()) return Status::invalid_graph(where + ": shape must be INT64");
    GRAPHI_ASSIGN_OR_RETURN(Shape out, onnx::broadcast_shapes(d.shape, shape->i, where));
    if (out == d.shape) return emit("Identity", name, {ins[0]}, outs, {}, where, &n);
    for (int64_t dim : out)
      if (dim < 1)
        return Status::unsupported(where + ": Expand to " + shape_to_string(out) +
                                   " is not supported (empty tensors)");
    return emit("Expand", name, {ins[0], ins[1]}, outs, {}, where, &n);  // ops/tile_expand.cpp
  }
  if (op == "Cast") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* to = n.attr("to");
    if (!to || to->type != onnx::kAttrInt)
      return Status::invalid_graph(where + ": missing attribute 'to'");
    const auto to_type = static_cast<int32_t>(to->i);
    if (to_type != onnx::kBool && graphi_dtype(to_type) == d.dtype)
      return emit("Identity", name, {ins[0]}, outs, {}, where, &n);
    if (to_type != onnx::kBool && !graphi_dtype(to_type))
      return Status::unsupported(where + ": Cast of a run-time " + d.to_string() + " to " +
                                 onnx::data_type_name(to_type) +
                                 " is not supported (graphi computes in float32, int32 and "
                                 "int64; BOOL is float32 0/1)");
    // A bool (float32 0/1) cast to FLOAT is an identity in graphi's Cast too (ops/cast_op.cpp).
    Attributes a;
    a.set("to", int64_t{to_type});
    return emit("Cast", name, {ins[0]}, outs, std::move(a), where, &n);
  }
  if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && ins.size() == 2 &&
      !ins[0].empty() && !ins[1].empty()) {
    // Integer operands at run time (index math on token ids): graphi's IntBinary
    // (ops/int_arith.cpp); graphi's Add..Div are float32.
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc a, desc_of(ins[0], where));
    if (a.dtype != DType::kF32) {
      Attributes attrs;
      attrs.set("op", op);
      return emit("IntBinary", name, ins, outs, std::move(attrs), where, &n);
    }
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    // Reshape, Transpose, Reshape (nn.PixelShuffle exports DepthToSpace, mode CRD).
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* bs = n.attr("blocksize");
    if (!bs || bs->type != onnx::kAttrInt || bs->i < 1)
      return Status::invalid_graph(where + ": attribute 'blocksize' (an int >= 1) is missing");
    const onnx::Attr* md = n.attr("mode");
    const std::string mode = md ? md->s : "DCR";
    if (d.rank() != 4)
      return Status::invalid_graph(where + ": input " + d.to_string() + " must be [N, C, H, W]");
    const int64_t b = bs->i, N = d.shape[0], C = d.shape[1], H = d.shape[2], W = d.shape[3];
    Shape s1, s2;
    std::vector<int64_t> perm;
    if (op == "DepthToSpace") {
      if (C % (b * b) != 0 || (mode != "DCR" && mode != "CRD"))
        return Status::invalid_graph(where + ": channels " + std::to_string(C) +
                                     " must divide by blocksize^2, mode must be DCR or CRD");
      if (mode == "DCR") {
        s1 = {N, b, b, C / (b * b), H, W};
        perm = {0, 3, 4, 1, 5, 2};
      } else {
        s1 = {N, C / (b * b), b, b, H, W};
        perm = {0, 1, 4, 2, 5, 3};
      }
      s2 = {N, C / (b * b), H * b, W * b};
    } else {
      if (H % b != 0 || W % b != 0)
        return Status::invalid_graph(where + ": H and W must divide by blocksize " +
                                     std::to_string(b));
      s1 = {N, C, H / b, b, W / b, b};
      perm = {0, 3, 5, 1, 2, 4};
      s2 = {N, C * b * b, H / b, W / b};
    }
    const std::string r1 = fresh(name + "/split"), t1 = fresh(name + "/transpose");
    GRAPHI_RETURN_IF_ERROR(
        emit("Reshape", r1, {ins[0], add_ints_const(r1 + "/shape", s1)}, {r1}, {}, where, &n));
    Attributes ta;
    ta.set("perm", perm);
    GRAPHI_RETURN_IF_ERROR(emit("Transpose", t1, {r1}, {t1}, std::move(ta), where, &n));
    return emit("Reshape", name, {t1, add_ints_const(name + "/shape", s2)}, outs, {}, where, &n);
  }
  if (op == "Celu") {
    // alpha * Elu(x / alpha) (alpha = 1: Elu itself).
    GRAPHI_RETURN_IF_ERROR(need(0));
    const onnx::Attr* al = n.attr("alpha");
    const double alpha = al ? al->f : 1.0;
    if (!(alpha > 0)) return Status::invalid_graph(where + ": attribute 'alpha' must be > 0");
    if (alpha == 1.0) return emit("Elu", name, {ins[0]}, outs, {}, where, &n);
    auto scalar = [&](const std::string& tag, double v) {
      HostTensor t = HostTensor::make(onnx::kFloat, {1});
      t.f[0] = v;
      return add_const(name + "/" + tag, std::move(t));
    };
    const std::string xs = fresh(name + "/scaled_in"), e = fresh(name + "/elu");
    GRAPHI_RETURN_IF_ERROR(emit("Div", xs, {ins[0], scalar("alpha", alpha)}, {xs}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Elu", e, {xs}, {e}, {}, where, &n));
    return emit("Mul", name, {e, scalar("alpha_out", alpha)}, outs, {}, where, &n);
  }
  if (op == "OneHot") {
    // Where(indices == k or indices == k - depth, on, off) with k = 0..depth-1 along `axis`.
    for (size_t k = 0; k < 3; ++k) GRAPHI_RETURN_IF_ERROR(need(k));
    const HostTensor* depth_t = host(ins[1]);
    if (!depth_t || depth_t->numel() != 1)
      return unsupported_op(n, "with a depth computed at run time (it must be a constant scalar)");
    // Bounded before the conversion (a NaN or 1e30 depth is undefined as an integer) and before
    // the two depth-long constants below are allocated (a corrupt 2^31 asked for 32 GiB).
    const double depth_f = depth_t->get_f(0);
    constexpr int64_t kMaxDepth = int64_t{1} << 24;
    if (!(depth_f >= 1 && depth_f <= static_cast<double>(kMaxDepth)))
      return Status::invalid_graph(where + ": input 1 (depth) is " + std::to_string(depth_f) +
                                   "; it must be in [1, " + std::to_string(kMaxDepth) + "]");
    const auto depth = static_cast<int64_t>(depth_f);
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : -1;
    const int64_t r = d.rank() + 1;
    if (axis < -r || axis >= r) return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += r;
    Shape ishape = d.shape, kshape(static_cast<size_t>(r), 1);
    ishape.insert(ishape.begin() + axis, 1);
    kshape[static_cast<size_t>(axis)] = depth;
    HostTensor ks = HostTensor::make(onnx_type_of(d.dtype), kshape),
               kn = HostTensor::make(onnx_type_of(d.dtype), kshape);
    for (int64_t k = 0; k < depth; ++k) {
      if (ks.is_float()) {
        ks.f[static_cast<size_t>(k)] = static_cast<double>(k);
        kn.f[static_cast<size_t>(k)] = static_cast<double>(k - depth);
      } else {
        ks.i[static_cast<size_t>(k)] = k;
        kn.i[static_cast<size_t>(k)] = k - depth;
      }
    }
    const std::string iu = fresh(name + "/indices"), e1 = fresh(name + "/eq"),
                      e2 = fresh(name + "/eq_neg"), m = fresh(name + "/mask"),
                      on = fresh(name + "/on"), off = fresh(name + "/off");
    GRAPHI_RETURN_IF_ERROR(
        emit("Reshape", iu, {ins[0], add_ints_const(iu + "/shape", ishape)}, {iu}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(
        emit("Equal", e1, {iu, add_const(name + "/k", std::move(ks))}, {e1}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(
        emit("Equal", e2, {iu, add_const(name + "/k_neg", std::move(kn))}, {e2}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Or", m, {e1, e2}, {m}, {}, where, &n));
    // values = [off, on]: two Slices (constant or run-time values alike).
    auto pick = [&](const std::string& out, int64_t at) {
      return emit(
          "Slice", out,
          {ins[2], add_ints_const(out + "/starts", {at}), add_ints_const(out + "/ends", {at + 1})},
          {out}, {}, where, &n);
    };
    GRAPHI_RETURN_IF_ERROR(pick(off, 0));
    GRAPHI_RETURN_IF_ERROR(pick(on, 1));
    return emit("Where", name, {m, on, off}, outs, {}, where, &n);
  }
  if (op == "Upsample") {
    // Opsets 7-9: Resize with asymmetric coordinates (and floor for nearest); scales as an
    // attribute (opset 7) or a constant input (opset 9).
    GRAPHI_RETURN_IF_ERROR(need(0));
    const onnx::Attr* md = n.attr("mode");
    const std::string mode = md ? md->s : "nearest";
    if (mode != "nearest" && mode != "linear" && mode != "bilinear")
      return Status::unsupported(where + ": attribute 'mode' = '" + mode + "' is not supported");
    std::string scales;
    if (ins.size() > 1 && !ins[1].empty()) {
      if (!host(ins[1])) return unsupported_op(n, "with scales computed at run time");
      scales = ins[1];
    } else {
      const onnx::Attr* sc = n.attr("scales");
      if (!sc || sc->type != onnx::kAttrFloats)
        return Status::invalid_graph(where + ": missing 'scales'");
      HostTensor t = HostTensor::make(onnx::kFloat, {static_cast<int64_t>(sc->floats.size())});
      for (size_t k = 0; k < sc->floats.size(); ++k) t.f[k] = sc->floats[k];
      scales = add_const(name + "/scales", std::move(t));
    }
    Attributes a;
    a.set("mode", std::string(mode == "nearest" ? "nearest" : "linear"));
    a.set("coordinate_transformation_mode", std::string("asymmetric"));
    a.set("nearest_mode", std::string("floor"));
    return emit("Resize", name, {ins[0], "", scales}, outs, std::move(a), where, &n);
  }
  if (op == "Scatter") {  // opsets 9-10: ScatterElements under its old name
    GRAPHI_ASSIGN_OR_RETURN(Attributes attrs, convert_attrs(n, where));
    return emit("ScatterElements", name, ins, outs, std::move(attrs), where, &n);
  }
  if (op == "PRelu") {
    // Relu(x) + slope * Min(x, 0): exact (one of the two terms is 0), slope broadcast as ONNX's
    // unidirectional rule allows (nn.PReLU exports [C, 1, 1]).
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    HostTensor zero = HostTensor::make(onnx::kFloat, {1});
    const std::string pos = fresh(name + "/relu"), neg = fresh(name + "/min"),
                      scaled = fresh(name + "/scaled");
    GRAPHI_RETURN_IF_ERROR(emit("Relu", pos, {ins[0]}, {pos}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Min", neg, {ins[0], add_const(name + "/zero", std::move(zero))},
                                {neg}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Mul", scaled, {ins[1], neg}, {scaled}, {}, where, &n));
    return emit("Add", name, {pos, scaled}, outs, {}, where, &n);
  }
  if (op == "HardSwish") {
    // x * HardSigmoid(x; 1/6, 1/2), which is ONNX's definition.
    GRAPHI_RETURN_IF_ERROR(need(0));
    Attributes a;
    a.set("alpha", 1.0 / 6.0);
    a.set("beta", 0.5);
    const std::string hs = fresh(name + "/hard_sigmoid");
    GRAPHI_RETURN_IF_ERROR(emit("HardSigmoid", hs, {ins[0]}, {hs}, std::move(a), where, &n));
    return emit("Mul", name, {ins[0], hs}, outs, {}, where, &n);
  }
  if ((op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool") &&
      !ins.empty() && !ins[0].empty()) {
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (d.rank() == 3) return translate_1d(n, name, ins, outs, d, where);
  }
  if (op == "Mean") {
    // Sum chain, then Div by the input count.
    std::vector<std::string> xs;
    for (const std::string& x : ins)
      if (!x.empty()) xs.push_back(x);
    if (xs.empty()) return Status::invalid_graph(where + ": no inputs");
    std::string acc = xs[0];
    for (size_t k = 1; k < xs.size(); ++k) {
      const std::string out = fresh(name + "/partial" + std::to_string(k));
      GRAPHI_RETURN_IF_ERROR(emit("Add", out, {acc, xs[k]}, {out}, {}, where, &n));
      acc = out;
    }
    HostTensor count = HostTensor::make(onnx::kFloat, {1});
    count.f[0] = static_cast<double>(xs.size());
    return emit("Div", name, {acc, add_const(name + "/count", std::move(count))}, outs, {}, where,
                &n);
  }
  if (op == "Sum" || op == "Max" || op == "Min") {
    const std::string bin = op == "Sum" ? "Add" : op;
    std::vector<std::string> xs;
    for (const std::string& x : ins)
      if (!x.empty()) xs.push_back(x);
    if (xs.empty()) return Status::invalid_graph(where + ": no inputs");
    if (xs.size() == 1) return emit("Identity", name, xs, outs, {}, where, &n);
    std::string acc = xs[0];
    for (size_t k = 1; k < xs.size(); ++k) {
      const bool last = k + 1 == xs.size();
      const std::string out = last ? outs[0] : fresh(name + "/partial" + std::to_string(k));
      GRAPHI_RETURN_IF_ERROR(emit(bin, last ? name : fresh(name + "/" + bin + std::to_string(k)),
                                  {acc, xs[k]}, {out}, {}, where, &n));
      acc = out;
    }
    return Status::ok();
  }
  if (op == "Gather") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    const HostTensor* idx = host(ins[1]);
    GRAPHI_ASSIGN_OR_RETURN(Attributes gather_attrs, convert_attrs(n, where));
    // Run-time indices (nn.Embedding): graphi's Gather op (ops/onnx_view_ops.cpp).
    if (!idx) return emit("Gather", name, ins, outs, std::move(gather_attrs), where, &n);
    if (idx->is_float()) return Status::invalid_graph(where + ": indices must be integers");
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : 0;
    const int64_t rank = d.rank();
    if (axis < -rank || axis >= rank) return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += rank;
    const int64_t dim = d.shape[static_cast<size_t>(axis)];
    std::vector<int64_t> v = idx->i;
    for (int64_t& x : v) {
      if (x < -dim || x >= dim)
        return Status::invalid_graph(where + ": index " + std::to_string(x) +
                                     " is out of range for axis " + std::to_string(axis) +
                                     " of size " + std::to_string(dim));
      if (x < 0) x += dim;
    }
    if (v.empty()) return Status::unsupported(where + ": empty indices");
    Shape out(d.shape.begin(), d.shape.begin() + axis);
    out.insert(out.end(), idx->shape.begin(), idx->shape.end());
    out.insert(out.end(), d.shape.begin() + axis + 1, d.shape.end());
    const int64_t step = v.size() > 1 ? v[1] - v[0] : 1;
    bool progression = step != 0;
    for (size_t k = 1; progression && k < v.size(); ++k) progression = v[k] - v[k - 1] == step;
    auto slice = [&](int64_t start, int64_t count, int64_t st, const std::string& out_name,
                     const std::string& node) {
      int64_t end = start + count * st;
      if (end < 0) end = -dim - 1;  // a negative step running past index 0
      return emit(
          "Slice", node,
          {ins[0], add_ints_const(node + "/starts", {start}), add_ints_const(node + "/ends", {end}),
           add_ints_const(node + "/axes", {axis}), add_ints_const(node + "/steps", {st})},
          {out_name}, {}, where, &n);
    };
    Shape sliced = d.shape;
    sliced[static_cast<size_t>(axis)] = static_cast<int64_t>(v.size());
    const bool same_shape = sliced == out;
    const std::string sliced_name = same_shape ? outs[0] : fresh(name + "/sliced");
    const std::string slice_node = same_shape ? name : fresh(name + "/slice");
    if (progression) {
      GRAPHI_RETURN_IF_ERROR(
          slice(v[0], static_cast<int64_t>(v.size()), step, sliced_name, slice_node));
    } else {  // irregular constant indices: graphi's Gather
      return emit("Gather", name, ins, outs, std::move(gather_attrs), where, &n);
    }
    if (same_shape) return Status::ok();
    return emit("Reshape", name, {sliced_name, add_ints_const(name + "/shape", out)}, outs, {},
                where, &n);
  }
  if ((op == "Softmax" || op == "LogSoftmax") && opset_ < 13) {
    // Opsets 1-12 flatten the input to 2-D at `axis` (default 1) and normalize each row.
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : 1;
    const int64_t rank = d.rank();
    if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
      return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += rank;
    Attributes a;
    a.set("axis", int64_t{-1});
    if (axis >= rank - 1) return emit(op, name, {ins[0]}, outs, a, where, &n);
    const Shape flat{shape_numel(Shape(d.shape.begin(), d.shape.begin() + axis)),
                     shape_numel(Shape(d.shape.begin() + axis, d.shape.end()))};
    const std::string x2 = fresh(name + "/flat"), y2 = fresh(name + "/flat_out");
    GRAPHI_RETURN_IF_ERROR(emit("Reshape", fresh(name + "/flatten"),
                                {ins[0], add_ints_const(name + "/flat_shape", flat)}, {x2}, {},
                                where, &n));
    GRAPHI_RETURN_IF_ERROR(emit(op, fresh(name + "/softmax"), {x2}, {y2}, a, where, &n));
    return emit("Reshape", name, {y2, add_ints_const(name + "/shape", d.shape)}, outs, {}, where,
                &n);
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (d.rank() < 3)
      return Status::invalid_graph(where + ": input " + d.to_string() + " has no spatial dims");
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>(d.shape.begin() + 2, d.shape.end()));
    return emit(op == "GlobalAveragePool" ? "AveragePool" : "MaxPool", name, {ins[0]}, outs, a,
                where, &n);
  }
  if (op == "BatchNormalization") {
    // Inference form with constant statistics: y = x * s + (B - mean * s), s = scale / sqrt(var +
    // eps).
    for (size_t k = 0; k < 5; ++k) GRAPHI_RETURN_IF_ERROR(need(k));
    const onnx::Attr* tm = n.attr("training_mode");
    const onnx::Attr* spatial = n.attr("spatial");
    if (outs.size() > 1 || (tm && tm->i != 0))
      return Status::unsupported(where +
                                 ": BatchNormalization in training mode (or with its "
                                 "running-statistics outputs) is not supported");
    if (spatial && spatial->i == 0)
      return Status::unsupported(where + ": BatchNormalization with spatial = 0 is not supported");
    const HostTensor *scale = host(ins[1]), *bias = host(ins[2]), *mean = host(ins[3]),
                     *var = host(ins[4]);
    if (!scale || !bias || !mean || !var)
      return unsupported_op(n, "with scale, B, mean or var computed at run time");
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (d.rank() < 2)
      return Status::invalid_graph(where + ": input " + d.to_string() + " has no channel dim");
    const int64_t c = d.shape[1];
    for (const HostTensor* t : {scale, bias, mean, var})
      if (!t->is_float() || static_cast<int64_t>(t->numel()) != c)
        return Status::invalid_graph(where + ": scale, B, mean and var must be float tensors of " +
                                     std::to_string(c) + " values, got " + t->desc());
    const onnx::Attr* eps_attr = n.attr("epsilon");
    const double eps = eps_attr ? eps_attr->f : 1e-5;
    Shape cshape(static_cast<size_t>(d.rank() - 1), 1);
    cshape[0] = c;
    HostTensor s = HostTensor::make(onnx::kFloat, cshape),
               b = HostTensor::make(onnx::kFloat, cshape);
    for (size_t k = 0; k < static_cast<size_t>(c); ++k) {
      s.f[k] = static_cast<float>(scale->f[k] / std::sqrt(var->f[k] + eps));
      b.f[k] = static_cast<float>(bias->f[k] - mean->f[k] * s.f[k]);
    }
    const std::string scaled = fresh(name + "/scaled");
    GRAPHI_RETURN_IF_ERROR(emit("Mul", fresh(name + "/scale"),
                                {ins[0], add_const(name + "/s", std::move(s))}, {scaled}, {}, where,
                                &n));
    return emit("Add", name, {scaled, add_const(name + "/b", std::move(b))}, outs, {}, where, &n);
  }
  if (op == "MaxPool" && outs.size() > 1)
    return Status::unsupported(where + ": MaxPool's Indices output is not supported");
  if (op == "Reshape") {
    const onnx::Attr* az = n.attr("allowzero");
    if (az && az->i != 0 && ins.size() > 1) {
      const HostTensor* s = host(ins[1]);
      if (s && std::find(s->i.begin(), s->i.end(), 0) != s->i.end())
        return Status::unsupported(
            where +
            ": Reshape with allowzero = 1 and a 0 in the shape (empty tensors) is not supported");
    }
  }
  if (op.rfind("Reduce", 0) == 0 && ins.size() > 1 && !ins[1].empty()) {
    // An empty constant axes input means "no axes" (graphi has no empty tensors): drop it;
    // the op then reduces everything, or nothing with noop_with_empty_axes = 1.
    const HostTensor* axes = host(ins[1]);
    if (axes && axes->numel() == 0) ins.resize(1);
  }
  if (op == "If" || op == "Loop" || op == "Scan" || op == "SequenceMap")
    return unsupported_op(n,
                          "(control flow: graphi graphs have no subgraphs; export without "
                          "data-dependent Python control flow, or unroll it)");
  // Everything else: graphi's op of the same name, attributes as they are.
  // Dropped: allowzero (checked above), Gemm's legacy broadcast, opset <= 6 leftovers.
  GRAPHI_ASSIGN_OR_RETURN(
      Attributes attrs,
      convert_attrs(n, where, {"allowzero", "broadcast", "is_test", "output_sequence"}));
  return emit(op, name, ins, outs, std::move(attrs), where, &n);
}

// INTS attribute `name` of n, or `count` copies of dflt when it is absent or empty.
std::vector<int64_t> ints_or(const onnx::Node& n, const char* name, int64_t dflt, size_t count) {
  const onnx::Attr* a = n.attr(name);
  std::vector<int64_t> v = a ? a->ints : std::vector<int64_t>{};
  if (v.empty()) v.assign(count, dflt);
  return v;
}

// `n` without attribute `drop` and with `pads` = pads.
onnx::Node with_pads(const onnx::Node& n, const char* drop, std::vector<int64_t> pads) {
  onnx::Node out = n;
  std::erase_if(out.attrs, [&](const onnx::Attr& a) { return a.name == drop || a.name == "pads"; });
  onnx::Attr p;
  p.name = "pads";
  p.type = onnx::kAttrInts;
  p.ints = std::move(pads);
  out.attrs.push_back(std::move(p));
  return out;
}

Result<onnx::Node> Importer::explicit_pads(const onnx::Node& n, const std::string& where) {
  const std::string mode = n.attr("auto_pad")->s;
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID")
    return Status::unsupported(where + ": attribute 'auto_pad' = '" + mode +
                               "' is not supported (NOTSET, SAME_UPPER, SAME_LOWER, VALID)");
  auto shape_of = [&](size_t k) -> Result<Shape> {
    if (k >= n.inputs.size() || n.inputs[k].empty() || !vals_.count(n.inputs[k]))
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
    if (const HostTensor* h = host(n.inputs[k])) return h->shape;
    return vals_.at(n.inputs[k]).desc.shape;
  };
  GRAPHI_ASSIGN_OR_RETURN(Shape x, shape_of(0));
  if (x.size() < 3)
    return Status::invalid_graph(where + ": input X " + shape_to_string(x) +
                                 " has no spatial dims");
  const size_t r = x.size() - 2;
  auto ints_attr = [&](const char* name, int64_t dflt) { return ints_or(n, name, dflt, r); };
  std::vector<int64_t> kernel = ints_attr("kernel_shape", 0);
  if (n.op == "Conv" && !n.attr("kernel_shape")) {
    GRAPHI_ASSIGN_OR_RETURN(Shape w, shape_of(1));
    if (w.size() != x.size())
      return Status::invalid_graph(where + ": W " + shape_to_string(w) + " does not match X " +
                                   shape_to_string(x));
    kernel.assign(w.begin() + 2, w.end());
  }
  const std::vector<int64_t> strides = ints_attr("strides", 1), dil = ints_attr("dilations", 1);
  if (kernel.size() != r || strides.size() != r || dil.size() != r)
    return Status::invalid_graph(where + ": kernel_shape, strides and dilations must have " +
                                 std::to_string(r) + " values");
  std::vector<int64_t> pads(2 * r, 0);
  for (size_t d = 0; mode != "VALID" && d < r; ++d) {
    if (strides[d] < 1) return Status::invalid_graph(where + ": strides must be >= 1");
    const int64_t in = x[d + 2], out = (in + strides[d] - 1) / strides[d];
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - in);
    const int64_t small = total / 2, big = total - small;
    pads[d] = mode == "SAME_UPPER" ? small : big;  // SAME_UPPER puts the extra pad at the end
    pads[d + r] = mode == "SAME_UPPER" ? big : small;
  }
  return with_pads(n, "auto_pad", pads);
}

Result<onnx::Node> Importer::ceil_mode_as_pads(const onnx::Node& n, const std::string& where) {
  if (n.inputs.empty() || n.inputs[0].empty() || !vals_.count(n.inputs[0]))
    return Status::invalid_graph(where + ": input 0 is missing");
  const HostTensor* h = host(n.inputs[0]);
  const Shape x = h ? h->shape : vals_.at(n.inputs[0]).desc.shape;
  if (x.size() < 3)
    return Status::invalid_graph(where + ": input X " + shape_to_string(x) +
                                 " has no spatial dims");
  const size_t r = x.size() - 2;
  auto ints_attr = [&](const char* name, int64_t dflt, size_t count) {
    return ints_or(n, name, dflt, count);
  };
  const std::vector<int64_t> k = ints_attr("kernel_shape", 0, r), st = ints_attr("strides", 1, r),
                             dil = ints_attr("dilations", 1, r);
  std::vector<int64_t> pads = ints_attr("pads", 0, 2 * r);
  if (k.size() != r || st.size() != r || dil.size() != r || pads.size() != 2 * r)
    return Status::invalid_graph(where +
                                 ": kernel_shape, strides, dilations and pads do not "
                                 "match the input's " +
                                 std::to_string(r) + " spatial dims");
  const onnx::Attr* cip = n.attr("count_include_pad");
  for (size_t d = 0; d < r; ++d) {
    if (st[d] < 1 || k[d] < 1)
      return Status::invalid_graph(where + ": bad kernel_shape or strides");
    const int64_t span = (k[d] - 1) * dil[d] + 1, padded = x[d + 2] + pads[d] + pads[d + r];
    if (padded < span) continue;  // the shape rule reports it
    int64_t out = (padded - span + st[d] - 1) / st[d] + 1;
    if ((out - 1) * st[d] >= x[d + 2] + pads[d])
      --out;  // the last window would start in the end pad
    const int64_t extra = (out - 1) * st[d] + span - padded;
    if (extra <= 0) continue;
    if (n.op == "AveragePool" && cip && cip->i != 0)
      return Status::unsupported(where +
                                 ": attribute 'ceil_mode' = 1 with count_include_pad = 1 "
                                 "is not supported when the last window runs past the padding");
    pads[d + r] += extra;
  }
  return with_pads(n, "ceil_mode", pads);
}

bool Importer::rnn_needs_unrolling(const onnx::Node& n) {
  for (const char* k : {"activation_alpha", "activation_beta"})
    if (const onnx::Attr* a = n.attr(k); a && !a->floats.empty()) return true;
  const onnx::Attr* acts = n.attr("activations");
  if (!acts) return false;
  const std::vector<std::string> lstm = {"sigmoid", "tanh", "tanh"}, gru = {"sigmoid", "tanh"};
  for (size_t k = 0; k < acts->strings.size(); ++k) {
    std::string a = acts->strings[k];
    for (char& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n.op == "LSTM" && a != lstm[k % 3]) return true;
    if (n.op == "GRU" && a != gru[k % 2]) return true;
    if (n.op == "RNN" && a != "tanh" && a != "relu" && a != "sigmoid") return true;
  }
  return false;
}

Status Importer::translate_rnn_unrolled(const onnx::Node& n, const std::string& name,
                                        const std::vector<std::string>& ins,
                                        const std::string& where) {
  const bool lstm = n.op == "LSTM", gru = n.op == "GRU";
  const int64_t G = lstm ? 4 : gru ? 3 : 1;
  const size_t per_dir = lstm ? 3 : gru ? 2 : 1;
  auto attr_i = [&](const char* k, int64_t d) {
    const onnx::Attr* a = n.attr(k);
    return a ? a->i : d;
  };
  auto in = [&](size_t k) { return k < ins.size() ? ins[k] : std::string(); };
  for (const onnx::Attr& a : n.attrs) {
    static const std::set<std::string> known = {
        "activations",         "activation_alpha", "activation_beta", "clip",
        "direction",           "hidden_size",      "input_forget",    "layout",
        "linear_before_reset", "output_sequence"};
    if (!known.count(a.name))
      return Status::invalid_graph(where + ": unknown attribute '" + a.name + "'");
  }
  const size_t max_outputs = lstm ? 3 : 2;
  if (n.outputs.size() > max_outputs)
    return Status::invalid_graph(where + ": " + n.op + " has 1 to " + std::to_string(max_outputs) +
                                 " outputs (Y, Y_h" + (lstm ? ", Y_c" : "") + "), got " +
                                 std::to_string(n.outputs.size()));
  const onnx::Attr* dir_a = n.attr("direction");
  const std::string direction = dir_a ? dir_a->s : "forward";
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return Status::invalid_graph(where + ": attribute 'direction' must be forward, reverse or " +
                                 "bidirectional, got '" + direction + "'");
  const int64_t D = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = attr_i("layout", 0);
  if (layout != 0 && layout != 1)
    return Status::invalid_graph(where + ": attribute 'layout' must be 0 or 1");
  const bool input_forget = lstm && attr_i("input_forget", 0) != 0;
  const bool lbr = gru && attr_i("linear_before_reset", 0) != 0;
  const onnx::Attr* clip_a = n.attr("clip");
  const double clip = clip_a ? clip_a->f : 0.0;
  if (clip_a && !(clip > 0.0))
    return Status::invalid_graph(where + ": attribute 'clip' must be positive");

  // Activations per direction, with activation_alpha / activation_beta consumed in order by the
  // activations that take them (as ONNX Runtime does); defaults as the ONNX operators'.
  struct Act {
    std::string name;
    double alpha = 0, beta = 0;
  };
  std::vector<std::string> names;
  if (const onnx::Attr* a = n.attr("activations")) names = a->strings;
  const std::vector<std::string> defaults =
      lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
            : std::vector<std::string>{"Tanh"};
  if (names.empty()) names = defaults;
  std::vector<float> alphas, betas;
  if (const onnx::Attr* a = n.attr("activation_alpha")) alphas = a->floats;
  if (const onnx::Attr* a = n.attr("activation_beta")) betas = a->floats;
  if (names.size() == per_dir && D == 2) {
    // Whether the second direction reuses the first one's alpha/beta or takes the next
    // values (ONNX Runtime) is not defined: refuse rather than guess.
    if (n.attr("activations") && (!alphas.empty() || !betas.empty()))
      return Status::unsupported(where + ": attribute 'activations' lists one direction's " +
                                 "functions for a bidirectional " + n.op +
                                 " together with activation_alpha/activation_beta; which values "
                                 "the second direction takes is ambiguous: list the functions "
                                 "of both directions");
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(D))
    return Status::invalid_graph(where + ": attribute 'activations' has " +
                                 std::to_string(names.size()) + " names; " + n.op + " needs " +
                                 std::to_string(per_dir) + " per direction");
  size_t ai = 0, bi = 0;
  std::vector<Act> acts;
  for (const std::string& raw : names) {
    Act a;
    for (char c : raw) a.name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    struct Default {
      const char* name;
      int params;  // 0: none, 1: alpha, 2: alpha and beta
      double alpha, beta;
    };
    static const Default kActs[] = {{"sigmoid", 0, 0, 0},
                                    {"tanh", 0, 0, 0},
                                    {"relu", 0, 0, 0},
                                    {"softsign", 0, 0, 0},
                                    {"softplus", 0, 0, 0},
                                    {"leakyrelu", 1, 0.01, 0},
                                    {"elu", 1, 1.0, 0},
                                    {"thresholdedrelu", 1, 1.0, 0},
                                    {"hardsigmoid", 2, 0.2, 0.5},
                                    {"affine", 2, 1.0, 0.0},
                                    {"scaledtanh", 2, 1.0, 1.0}};
    const Default* d = nullptr;
    for (const Default& k : kActs)
      if (a.name == k.name) d = &k;
    if (!d)
      return Status::unsupported(where + ": attribute 'activations': '" + raw +
                                 "' is not supported (Sigmoid, Tanh, Relu, Softsign, Softplus, "
                                 "LeakyRelu, Elu, ThresholdedRelu, HardSigmoid, Affine, "
                                 "ScaledTanh)");
    a.alpha = d->alpha;
    a.beta = d->beta;
    const bool has_alpha = d->params >= 1 && ai < alphas.size();
    const bool has_beta = d->params >= 2 && bi < betas.size();
    if (has_alpha) a.alpha = alphas[ai++];
    if (has_beta) a.beta = betas[bi++];
    // The spec says "defaults of the corresponding ONNX operators"; ONNX Runtime uses 0 for
    // these three. Rather than pick one, ask for the values.
    const bool ambiguous =
        a.name == "affine" || a.name == "scaledtanh" || a.name == "thresholdedrelu";
    if (ambiguous && (!has_alpha || (d->params >= 2 && !has_beta)))
      return Status::unsupported(where + ": attribute 'activations': '" + raw +
                                 "' without its activation_alpha" +
                                 (d->params >= 2 ? "/activation_beta" : "") +
                                 " values is not supported (its defaults are ambiguous: the "
                                 "ONNX operator's or ONNX Runtime's 0)");
    acts.push_back(a);
  }

  // Inputs and their shapes.
  for (size_t k = 0; k < 3; ++k)
    if (in(k).empty())
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(in(0), where));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc w, desc_of(in(1), where));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc r, desc_of(in(2), where));
  if (x.rank() != 3 || x.dtype != DType::kF32 || w.dtype != DType::kF32 || r.dtype != DType::kF32 ||
      r.rank() != 3)
    return Status::invalid_graph(where + ": X " + x.to_string() + ", W " + w.to_string() +
                                 " and R " + r.to_string() + " must be 3-D float32");
  const int64_t T = layout ? x.shape[1] : x.shape[0], B = layout ? x.shape[0] : x.shape[1],
                I = x.shape[2], H = attr_i("hidden_size", r.shape[2]);
  if (T < 1 || B < 1 || I < 1 || H < 1)
    return Status::invalid_graph(where + ": X " + x.to_string() + " with hidden_size " +
                                 std::to_string(H) + " has an empty dimension");
  // Each step becomes ~30 graphi nodes; 2048 steps load in about 3 s (engine::plan_memory grows
  // faster than linearly with the node count), so longer sequences are refused, not hung on.
  constexpr int64_t kMaxUnrolledSteps = 2048;
  if (T * D > kMaxUnrolledSteps)
    return Status::unsupported(where + ": " + n.op + " with these activations runs unrolled, " +
                               "and " + std::to_string(T) + " steps x " + std::to_string(D) +
                               " directions exceed the limit of " +
                               std::to_string(kMaxUnrolledSteps));
  auto expect = [&](size_t k, const char* field, const Shape& want) -> Status {
    if (in(k).empty()) return Status::ok();
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(in(k), where));
    if (d.shape == want && (k == 4 || d.dtype == DType::kF32)) return Status::ok();
    return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" + field + ") is " +
                                 d.to_string() + ", expected float32" + shape_to_string(want) +
                                 " (from X " + x.to_string() + ", hidden_size " +
                                 std::to_string(H) + ", direction " + direction + ")");
  };
  const Shape state = layout ? Shape{B, D, H} : Shape{D, B, H};
  GRAPHI_RETURN_IF_ERROR(expect(1, "W", {D, G * H, I}));
  GRAPHI_RETURN_IF_ERROR(expect(2, "R", {D, G * H, H}));
  GRAPHI_RETURN_IF_ERROR(expect(3, "B", {D, 2 * G * H}));
  GRAPHI_RETURN_IF_ERROR(expect(5, "initial_h", state));
  if (lstm) {
    GRAPHI_RETURN_IF_ERROR(expect(6, "initial_c", state));
    GRAPHI_RETURN_IF_ERROR(expect(7, "P", {D, 3 * H}));
  }
  if (!in(4).empty()) {
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(in(4), where));
    if (d.shape != Shape{B} || (d.dtype != DType::kI32 && d.dtype != DType::kI64))
      return Status::invalid_graph(where + ": input 4 (sequence_lens) is " + d.to_string() +
                                   ", expected int32 or int64[" + std::to_string(B) + "]");
  }

  // Plain-op builders. Every value and node gets a fresh name under the ONNX node's.
  int counter = 0;
  auto op = [&](const std::string& gop, const std::vector<std::string>& args,
                Attributes a = {}) -> Result<std::string> {
    const std::string v = fresh(name + "/" + gop + "_" + std::to_string(counter++));
    GRAPHI_RETURN_IF_ERROR(emit(gop, v, args, {v}, std::move(a), where, nullptr));
    return v;
  };
  // Distinct bases: fresh() probes base, base_1, base_2, ... (quadratic for a repeated base).
  auto scalar = [&](double v) {
    HostTensor t = HostTensor::make(onnx::kFloat, {1});
    t.f[0] = v;
    return add_const(name + "/c" + std::to_string(counter++), std::move(t));
  };
  auto ints = [&](std::vector<int64_t> v) {
    return add_ints_const(name + "/i" + std::to_string(counter++), std::move(v));
  };
  auto slice = [&](const std::string& v, int64_t axis, int64_t b, int64_t e) {
    return op("Slice", {v, ints({b}), ints({e}), ints({axis})});
  };
  auto reshape = [&](const std::string& v, std::vector<int64_t> shape) {
    return op("Reshape", {v, ints(std::move(shape))});
  };
  auto transpose = [&](const std::string& v, std::vector<int64_t> perm) {
    Attributes a;
    a.set("perm", perm);
    return op("Transpose", {v}, std::move(a));
  };
  auto concat = [&](const std::vector<std::string>& vs, int64_t axis) -> Result<std::string> {
    if (vs.size() == 1) return vs[0];
    Attributes a;
    a.set("axis", axis);
    return op("Concat", vs, std::move(a));
  };
  auto clipped = [&](const std::string& v) -> Result<std::string> {
    if (!clip_a) return v;
    Attributes a;
    a.set("min", -clip);
    a.set("max", clip);
    return op("Clip", {v}, std::move(a));
  };
  auto activate = [&](const Act& a, const std::string& v0) -> Result<std::string> {
    GRAPHI_ASSIGN_OR_RETURN(std::string v, clipped(v0));
    if (a.name == "sigmoid") return op("Sigmoid", {v});
    if (a.name == "tanh") return op("Tanh", {v});
    if (a.name == "relu") return op("Relu", {v});
    if (a.name == "softsign") return op("Softsign", {v});
    if (a.name == "softplus") return op("Softplus", {v});
    if (a.name == "affine") {
      GRAPHI_ASSIGN_OR_RETURN(std::string m, op("Mul", {v, scalar(a.alpha)}));
      return op("Add", {m, scalar(a.beta)});
    }
    if (a.name == "scaledtanh") {
      GRAPHI_ASSIGN_OR_RETURN(std::string m, op("Mul", {v, scalar(a.beta)}));
      GRAPHI_ASSIGN_OR_RETURN(std::string t, op("Tanh", {m}));
      return op("Mul", {t, scalar(a.alpha)});
    }
    Attributes at;
    at.set("alpha", a.alpha);
    if (a.name == "hardsigmoid") {
      at.set("beta", a.beta);
      return op("HardSigmoid", {v}, std::move(at));
    }
    if (a.name == "leakyrelu") return op("LeakyRelu", {v}, std::move(at));
    if (a.name == "elu") return op("Elu", {v}, std::move(at));
    return op("ThresholdedRelu", {v}, std::move(at));
  };

  // Time-major X and states.
  std::string X = in(0);
  if (layout) {
    GRAPHI_ASSIGN_OR_RETURN(X, transpose(X, {1, 0, 2}));
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string x2, reshape(X, {T * B, I}));
  std::string h0_all = in(5), c0_all = lstm ? in(6) : "";
  if (layout && !h0_all.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(h0_all, transpose(h0_all, {1, 0, 2}));
  }
  if (layout && !c0_all.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(c0_all, transpose(c0_all, {1, 0, 2}));
  }
  std::string zeros;
  {
    HostTensor t = HostTensor::make(onnx::kFloat, {B, H});
    zeros = add_const(name + "/zeros", std::move(t));
  }
  // mask_t = t < sequence_lens (float32 0/1, [B, 1]).
  std::string lens;
  if (!in(4).empty()) {
    Attributes a;
    a.set("to", int64_t{1});
    GRAPHI_ASSIGN_OR_RETURN(std::string lf, op("Cast", {in(4)}, std::move(a)));
    GRAPHI_ASSIGN_OR_RETURN(lens, reshape(lf, {B, 1}));
  }
  const std::string one = scalar(1.0);

  std::vector<std::string> y_dirs, h_dirs, c_dirs;
  const bool want_y = !n.outputs.empty() && !n.outputs[0].empty();
  for (int64_t d = 0; d < D; ++d) {
    const Act* f = &acts[static_cast<size_t>(d) * per_dir];
    auto dir_slice = [&](const std::string& v, std::vector<int64_t> shape) -> Result<std::string> {
      GRAPHI_ASSIGN_OR_RETURN(std::string s, slice(v, 0, d, d + 1));
      return reshape(s, std::move(shape));
    };
    // X W^T + Wb for every step at once: [T, B, G*H].
    GRAPHI_ASSIGN_OR_RETURN(std::string wd, dir_slice(in(1), {G * H, I}));
    GRAPHI_ASSIGN_OR_RETURN(std::string wt, transpose(wd, {1, 0}));
    GRAPHI_ASSIGN_OR_RETURN(std::string xw, op("MatMul", {x2, wt}));
    std::string wb, rb;
    if (!in(3).empty()) {
      GRAPHI_ASSIGN_OR_RETURN(std::string bd, dir_slice(in(3), {2 * G * H}));
      GRAPHI_ASSIGN_OR_RETURN(wb, slice(bd, 0, 0, G * H));
      GRAPHI_ASSIGN_OR_RETURN(rb, slice(bd, 0, G * H, 2 * G * H));
      GRAPHI_ASSIGN_OR_RETURN(xw, op("Add", {xw, wb}));
    }
    GRAPHI_ASSIGN_OR_RETURN(xw, reshape(xw, {T, B, G * H}));
    GRAPHI_ASSIGN_OR_RETURN(std::string rd, dir_slice(in(2), {G * H, H}));
    GRAPHI_ASSIGN_OR_RETURN(std::string rt, transpose(rd, {1, 0}));  // [H, G*H]
    std::string rt_zr, rt_h, rb_zr, rb_h;
    if (gru) {
      GRAPHI_ASSIGN_OR_RETURN(rt_zr, slice(rt, 1, 0, 2 * H));
      GRAPHI_ASSIGN_OR_RETURN(rt_h, slice(rt, 1, 2 * H, 3 * H));
      if (!rb.empty()) {
        GRAPHI_ASSIGN_OR_RETURN(rb_zr, slice(rb, 0, 0, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(rb_h, slice(rb, 0, 2 * H, 3 * H));
      }
    }
    std::string pi, po, pf;
    if (lstm && !in(7).empty()) {
      GRAPHI_ASSIGN_OR_RETURN(std::string pd, dir_slice(in(7), {3 * H}));
      GRAPHI_ASSIGN_OR_RETURN(pi, slice(pd, 0, 0, H));
      GRAPHI_ASSIGN_OR_RETURN(po, slice(pd, 0, H, 2 * H));
      GRAPHI_ASSIGN_OR_RETURN(pf, slice(pd, 0, 2 * H, 3 * H));
    }
    std::string h = zeros, c = zeros;
    if (!h0_all.empty()) {
      GRAPHI_ASSIGN_OR_RETURN(h, dir_slice(h0_all, {B, H}));
    }
    if (!c0_all.empty()) {
      GRAPHI_ASSIGN_OR_RETURN(c, dir_slice(c0_all, {B, H}));
    }
    auto add_opt = [&](const std::string& a, const std::string& b) -> Result<std::string> {
      if (b.empty()) return a;
      return op("Add", {a, b});
    };
    const bool reverse = direction == "reverse" || d == 1;
    std::vector<std::string> ys(static_cast<size_t>(T));
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = reverse ? T - 1 - k : k;
      GRAPHI_ASSIGN_OR_RETURN(std::string xt, slice(xw, 0, t, t + 1));
      GRAPHI_ASSIGN_OR_RETURN(xt, reshape(xt, {B, G * H}));
      std::string h_new, c_new;
      if (lstm) {
        GRAPHI_ASSIGN_OR_RETURN(std::string hr, op("MatMul", {h, rt}));
        GRAPHI_ASSIGN_OR_RETURN(hr, add_opt(hr, rb));
        GRAPHI_ASSIGN_OR_RETURN(std::string g, op("Add", {xt, hr}));
        GRAPHI_ASSIGN_OR_RETURN(std::string gi, slice(g, 1, 0, H));
        GRAPHI_ASSIGN_OR_RETURN(std::string go, slice(g, 1, H, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string gf, slice(g, 1, 2 * H, 3 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string gc, slice(g, 1, 3 * H, 4 * H));
        if (!pi.empty()) {
          GRAPHI_ASSIGN_OR_RETURN(std::string pci, op("Mul", {c, pi}));
          GRAPHI_ASSIGN_OR_RETURN(gi, op("Add", {gi, pci}));
          GRAPHI_ASSIGN_OR_RETURN(std::string pcf, op("Mul", {c, pf}));
          GRAPHI_ASSIGN_OR_RETURN(gf, op("Add", {gf, pcf}));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string ig, activate(f[0], gi));
        std::string fg;
        if (input_forget) {
          GRAPHI_ASSIGN_OR_RETURN(fg, op("Sub", {one, ig}));
        } else {
          GRAPHI_ASSIGN_OR_RETURN(fg, activate(f[0], gf));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string cg, activate(f[1], gc));
        GRAPHI_ASSIGN_OR_RETURN(std::string fc, op("Mul", {fg, c}));
        GRAPHI_ASSIGN_OR_RETURN(std::string icg, op("Mul", {ig, cg}));
        GRAPHI_ASSIGN_OR_RETURN(c_new, op("Add", {fc, icg}));
        if (!po.empty()) {
          GRAPHI_ASSIGN_OR_RETURN(std::string pco, op("Mul", {c_new, po}));
          GRAPHI_ASSIGN_OR_RETURN(go, op("Add", {go, pco}));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string og, activate(f[0], go));
        GRAPHI_ASSIGN_OR_RETURN(std::string hc, activate(f[2], c_new));
        GRAPHI_ASSIGN_OR_RETURN(h_new, op("Mul", {og, hc}));
      } else if (gru) {
        GRAPHI_ASSIGN_OR_RETURN(std::string hzr, op("MatMul", {h, rt_zr}));
        GRAPHI_ASSIGN_OR_RETURN(hzr, add_opt(hzr, rb_zr));
        GRAPHI_ASSIGN_OR_RETURN(std::string xzr, slice(xt, 1, 0, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string zr, op("Add", {xzr, hzr}));
        GRAPHI_ASSIGN_OR_RETURN(std::string gz, slice(zr, 1, 0, H));
        GRAPHI_ASSIGN_OR_RETURN(std::string gr, slice(zr, 1, H, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string z, activate(f[0], gz));
        GRAPHI_ASSIGN_OR_RETURN(std::string rg, activate(f[0], gr));
        GRAPHI_ASSIGN_OR_RETURN(std::string xh, slice(xt, 1, 2 * H, 3 * H));
        std::string hh;
        if (lbr) {
          GRAPHI_ASSIGN_OR_RETURN(std::string m, op("MatMul", {h, rt_h}));
          GRAPHI_ASSIGN_OR_RETURN(m, add_opt(m, rb_h));
          GRAPHI_ASSIGN_OR_RETURN(std::string rm, op("Mul", {rg, m}));
          GRAPHI_ASSIGN_OR_RETURN(hh, op("Add", {xh, rm}));
        } else {
          GRAPHI_ASSIGN_OR_RETURN(std::string rh, op("Mul", {rg, h}));
          GRAPHI_ASSIGN_OR_RETURN(std::string m, op("MatMul", {rh, rt_h}));
          GRAPHI_ASSIGN_OR_RETURN(m, add_opt(m, rb_h));
          GRAPHI_ASSIGN_OR_RETURN(hh, op("Add", {xh, m}));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string nh, activate(f[1], hh));
        GRAPHI_ASSIGN_OR_RETURN(std::string omz, op("Sub", {one, z}));
        GRAPHI_ASSIGN_OR_RETURN(std::string a1, op("Mul", {omz, nh}));
        GRAPHI_ASSIGN_OR_RETURN(std::string a2, op("Mul", {z, h}));
        GRAPHI_ASSIGN_OR_RETURN(h_new, op("Add", {a1, a2}));
      } else {
        GRAPHI_ASSIGN_OR_RETURN(std::string hr, op("MatMul", {h, rt}));
        GRAPHI_ASSIGN_OR_RETURN(hr, add_opt(hr, rb));
        GRAPHI_ASSIGN_OR_RETURN(std::string g, op("Add", {xt, hr}));
        GRAPHI_ASSIGN_OR_RETURN(h_new, activate(f[0], g));
      }
      std::string y = h_new;
      if (!lens.empty()) {
        // Past a sequence's length: the state stays, the output is 0 (ONNX).
        GRAPHI_ASSIGN_OR_RETURN(std::string m, op("Less", {scalar(static_cast<double>(t)), lens}));
        GRAPHI_ASSIGN_OR_RETURN(y, op("Where", {m, h_new, zeros}));
        GRAPHI_ASSIGN_OR_RETURN(h_new, op("Where", {m, h_new, h}));
        if (lstm) {
          GRAPHI_ASSIGN_OR_RETURN(c_new, op("Where", {m, c_new, c}));
        }
      }
      h = h_new;
      c = c_new;
      if (want_y) {
        GRAPHI_ASSIGN_OR_RETURN(ys[static_cast<size_t>(t)], reshape(y, {1, 1, B, H}));
      }
    }
    if (want_y) {
      GRAPHI_ASSIGN_OR_RETURN(std::string yd, concat(ys, 0));
      y_dirs.push_back(yd);
    }
    GRAPHI_ASSIGN_OR_RETURN(std::string hd, reshape(h, {1, B, H}));
    h_dirs.push_back(hd);
    if (lstm) {
      GRAPHI_ASSIGN_OR_RETURN(std::string cd, reshape(c, {1, B, H}));
      c_dirs.push_back(cd);
    }
  }
  // Outputs (only the ones the node names).
  const std::vector<std::vector<std::string>*> parts = {&y_dirs, &h_dirs, &c_dirs};
  for (size_t k = 0; k < n.outputs.size() && k < parts.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    GRAPHI_ASSIGN_OR_RETURN(std::string v, concat(*parts[k], k == 0 ? 1 : 0));
    if (layout) {
      GRAPHI_ASSIGN_OR_RETURN(v, transpose(v, k == 0 ? std::vector<int64_t>{2, 0, 1, 3}
                                                     : std::vector<int64_t>{1, 0, 2}));
    }
    GRAPHI_RETURN_IF_ERROR(emit("Identity", fresh(name + "/out" + std::to_string(k)), {v},
                                {n.outputs[k]}, {}, where, nullptr));
  }
  return Status::ok();
}

Status Importer::translate_1d(const onnx::Node& n, const std::string& name,
                              const std::vector<std::string>& ins,
                              const std::vector<std::string>& outs, const TensorDesc& x,
                              const std::string& where) {
  if (n.op == "MaxPool" && outs.size() > 1)
    return Status::unsupported(where + ": MaxPool's Indices output is not supported");
  // Inserts a dim of 1 before the last: constants are reshaped here, run-time values by a
  // Reshape node.
  auto unsqueeze = [&](const std::string& v, const std::string& tag) -> Result<std::string> {
    if (const HostTensor* h = host(v)) {
      HostTensor t = *h;
      if (t.shape.size() != 3)
        return Status::invalid_graph(where + ": input '" + v + "' " + h->desc() +
                                     " must have rank 3 for a 1-D " + n.op);
      t.shape.insert(t.shape.end() - 1, 1);
      return add_const(name + "/" + tag, std::move(t));
    }
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(v, where));
    if (d.rank() != 3)
      return Status::invalid_graph(where + ": input '" + v + "' " + d.to_string() +
                                   " must have rank 3 for a 1-D " + n.op);
    Shape s = d.shape;
    s.insert(s.end() - 1, 1);
    const std::string out = fresh(name + "/" + tag);
    GRAPHI_RETURN_IF_ERROR(
        emit("Reshape", out, {v, add_ints_const(out + "/shape", s)}, {out}, {}, where, &n));
    return out;
  };
  std::vector<std::string> ins2 = ins;
  GRAPHI_ASSIGN_OR_RETURN(ins2[0], unsqueeze(ins[0], "x2d"));
  if (n.op == "Conv" || n.op == "ConvTranspose") {
    if (ins.size() < 2 || ins[1].empty())
      return Status::invalid_graph(where + ": input 1 is missing");
    GRAPHI_ASSIGN_OR_RETURN(ins2[1], unsqueeze(ins[1], "w2d"));
  }
  GRAPHI_ASSIGN_OR_RETURN(Attributes attrs, convert_attrs(n, where));
  // 1-D window attributes -> 2-D with a height of 1.
  for (const onnx::Attr& a : n.attrs) {
    if (a.type != onnx::kAttrInts) continue;
    if (a.name == "kernel_shape" || a.name == "strides" || a.name == "dilations" ||
        a.name == "output_padding" || a.name == "output_shape") {
      if (a.ints.size() != 1)
        return Status::invalid_graph(where + ": attribute '" + a.name +
                                     "' must have 1 value for a 1-D " + n.op);
      attrs.set(a.name, std::vector<int64_t>{1, a.ints[0]});
    } else if (a.name == "pads") {
      if (a.ints.size() != 2)
        return Status::invalid_graph(where + ": attribute 'pads' must have 2 values for a 1-D " +
                                     n.op);
      attrs.set(a.name, std::vector<int64_t>{0, a.ints[0], 0, a.ints[1]});
    }
  }
  const std::string y2 = fresh(name + "/y2d");
  GRAPHI_RETURN_IF_ERROR(emit(n.op, fresh(name + "/2d"), ins2, {y2}, std::move(attrs), where, &n));
  Shape ys = vals_.at(y2).desc.shape;
  ys.erase(ys.end() - 2);
  (void)x;
  return emit("Reshape", name, {y2, add_ints_const(name + "/shape", ys)}, outs, {}, where, &n);
}

Result<onnx::Node> Importer::legacy_broadcast(const onnx::Node& n, const std::string& where) {
  onnx::Node out = n;
  const onnx::Attr* bc = n.attr("broadcast");
  const onnx::Attr* ax = n.attr("axis");
  std::erase_if(out.attrs,
                [](const onnx::Attr& a) { return a.name == "broadcast" || a.name == "axis"; });
  if (!bc || bc->i == 0 || !ax || n.inputs.size() < 2 || n.inputs[0].empty() || n.inputs[1].empty())
    return out;  // equal shapes, or B aligned with A's trailing dims: numpy does the same
  auto shape_of = [&](const std::string& v) -> Shape {
    const HostTensor* h = host(v);
    return h ? h->shape : vals_.at(v).desc.shape;
  };
  const Shape a = shape_of(n.inputs[0]), b = shape_of(n.inputs[1]);
  int64_t axis = ax->i;
  const auto ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    return Status::invalid_graph(where + ": legacy broadcast of B " + shape_to_string(b) +
                                 " at axis " + std::to_string(ax->i) + " does not fit A " +
                                 shape_to_string(a));
  Shape target = b;
  target.resize(static_cast<size_t>(ra - axis), 1);
  if (target == b) return out;
  if (const HostTensor* h = host(n.inputs[1])) {
    HostTensor t = *h;
    t.shape = target;
    out.inputs[1] = add_const(n.inputs[1] + "/aligned", std::move(t));
    return out;
  }
  const std::string name = fresh(n.inputs[1] + "/aligned");
  node_names_.insert(name);
  GRAPHI_RETURN_IF_ERROR(emit("Reshape", name,
                              {n.inputs[1], add_ints_const(name + "/shape", target)}, {name}, {},
                              where, &n));
  out.inputs[1] = name;
  return out;
}

Status Importer::import_node(const onnx::Node& node_in) {
  const std::string where = where_of(node_in);
  onnx::Node legacy;
  const onnx::Node* np = &node_in;
  if (opset_ < 7 && node_in.attr("broadcast") &&
      (node_in.op == "Add" || node_in.op == "Sub" || node_in.op == "Mul" || node_in.op == "Div" ||
       node_in.op == "Pow" || node_in.op == "Equal" || node_in.op == "Less" ||
       node_in.op == "Greater" || node_in.op == "And" || node_in.op == "Or" ||
       node_in.op == "Xor")) {
    for (const std::string& in : node_in.inputs)
      if (!in.empty() && !vals_.count(in))
        return Status::internal(where + ": input '" + in + "' is not defined");
    GRAPHI_ASSIGN_OR_RETURN(legacy, legacy_broadcast(node_in, where));
    np = &legacy;
  }
  onnx::Node padded;
  if ((np->op == "Conv" || np->op == "MaxPool" || np->op == "AveragePool") &&
      np->attr("auto_pad") && np->attr("auto_pad")->s != "NOTSET") {
    GRAPHI_ASSIGN_OR_RETURN(padded, explicit_pads(*np, where));
    np = &padded;
  }
  onnx::Node floored;
  if ((np->op == "MaxPool" || np->op == "AveragePool") && np->attr("ceil_mode") &&
      np->attr("ceil_mode")->i != 0) {
    GRAPHI_ASSIGN_OR_RETURN(floored, ceil_mode_as_pads(*np, where));
    np = &floored;
  }
  const onnx::Node& n = *np;
  if (!n.domain.empty() && n.domain != "ai.onnx") return unsupported_op(n);
  GRAPHI_RETURN_IF_ERROR(onnx::check_attr_names(node_in, where));
  if (opset_ == 0)
    return Status::invalid_graph(where +
                                 ": the node is of the default ONNX domain but the model "
                                 "imports no opset of it");
  for (const std::string& in : n.inputs)
    if (!in.empty() && !vals_.count(in))
      return Status::internal(where + ": input '" + in + "' is not defined");

  bool all_const = true;
  for (const std::string& in : n.inputs)
    if (!in.empty() && !is_const(in)) all_const = false;
  const bool shape_only =
      (n.op == "Shape" || n.op == "Size") && !n.inputs.empty() && !n.inputs[0].empty();
  if (shape_only && n.inputs.size() != 1)
    return Status::invalid_graph(where + ": " + n.op + " takes 1 input, the node has " +
                                 std::to_string(n.inputs.size()));
  if (onnx::is_foldable_op(n.op) && (all_const || shape_only)) {
    std::vector<const HostTensor*> ins;
    std::vector<HostTensor> fakes;
    fakes.reserve(n.inputs.size());  // ins points into fakes: it must never reallocate
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& in = n.inputs[k];
      if (in.empty()) {
        ins.push_back(nullptr);
      } else if (is_const(in)) {
        ins.push_back(host(in));
      } else {  // Shape/Size of a run-time value: only its desc matters
        HostTensor f;
        f.type = onnx_type_of(vals_.at(in).desc.dtype);
        f.shape = vals_.at(in).desc.shape;
        fakes.push_back(std::move(f));
        ins.push_back(&fakes.back());
      }
    }
    GRAPHI_ASSIGN_OR_RETURN(std::vector<HostTensor> outs, onnx::fold_node(n, opset_, ins, where));
    if (outs.size() < n.outputs.size())
      return Status::internal(where + ": folding produced " + std::to_string(outs.size()) +
                              " outputs");
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      if (vals_.count(n.outputs[k]))
        return Status::invalid_graph(where + ": output '" + n.outputs[k] + "' is already defined");
      ValState s;
      s.is_const = true;
      s.host = std::make_shared<HostTensor>(std::move(outs[k]));
      vals_[n.outputs[k]] = std::move(s);
    }
    return Status::ok();
  }
  if (!is_runtime_op(n.op)) {
    if (onnx::is_foldable_op(n.op)) {
      std::string runtime;
      for (const std::string& in : n.inputs)
        if (!in.empty() && !is_const(in)) runtime = in;
      return unsupported_op(n, "with inputs computed at run time (input '" + runtime +
                                   "'); graphi evaluates it only at import time");
    }
    // Maybe a custom op of the registry: pass through; the shape inferencer decides.
  }
  return translate(n, where);
}

Status Importer::check_versions() {
  if (m_.ir_version == 0)
    return Status::invalid_graph(src_ + ": no ir_version: not an ONNX model file");
  if (m_.ir_version < kMinIr || m_.ir_version > kMaxIr)
    return Status::unsupported(src_ + ": ONNX IR version " + std::to_string(m_.ir_version) +
                               " is not supported (graphi reads IR " + std::to_string(kMinIr) +
                               " to " + std::to_string(kMaxIr) + ")");
  if (!m_.has_graph) return Status::invalid_graph(src_ + ": the model has no graph");
  auto it = m_.opsets.find("");
  if (it == m_.opsets.end()) return Status::ok();  // only other domains: their nodes are refused
  opset_ = it->second;
  if (opset_ < kMinOpset || opset_ > kMaxOpset)
    return Status::unsupported(src_ + ": ONNX opset " + std::to_string(opset_) +
                               " is not supported (graphi imports opsets " +
                               std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                               "; convert with onnx.version_converter.convert_version(model, 14))");
  return Status::ok();
}

Status Importer::add_inputs() {
  const onnx::GraphProto& g = m_.graph;
  for (const auto& [name, t] : g.initializers) {
    if (vals_.count(name))
      return Status::invalid_graph(src_ + ": initializer '" + name + "' is defined twice");
    ValState s;
    s.is_const = true;
    s.host = t;
    vals_[name] = std::move(s);
  }
  std::set<std::string> used_dims, all_params;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const onnx::ValueInfo& v = g.inputs[k];
    const std::string what = src_ + ": graph input " + std::to_string(k) + " '" + v.name + "'";
    if (v.name.empty())
      return Status::invalid_graph(src_ + ": graph input " + std::to_string(k) + " has no name");
    if (vals_.count(v.name)) {
      if (vals_.at(v.name).is_const) continue;  // an initializer listed as input: a constant
      return Status::invalid_graph(what + " is declared twice");
    }
    if (auto c = opts_.constant_inputs.find(v.name); c != opts_.constant_inputs.end()) {
      const Tensor& t = c->second;
      if (v.is_tensor && graphi_dtype(v.elem_type) != t.dtype())
        return Status::invalid_argument(what + " has element type " +
                                        onnx::data_type_name(v.elem_type) +
                                        " but the value bound to it is " + t.desc().to_string());
      auto h = std::make_shared<HostTensor>(HostTensor::make(onnx_type_of(t.dtype()), t.shape()));
      for (size_t e = 0; e < h->numel(); ++e) {
        if (t.dtype() == DType::kF32)
          h->f[e] = t.data_as<float>()[e];
        else if (t.dtype() == DType::kI32)
          h->i[e] = t.data_as<int32_t>()[e];
        else
          h->i[e] = t.data_as<int64_t>()[e];
      }
      ValState s;
      s.is_const = true;
      s.host = h;
      vals_[v.name] = std::move(s);
      continue;
    }
    if (!v.is_tensor)
      return Status::unsupported(
          what + " is not a tensor (sequence, map and optional types are not supported)");
    std::optional<DType> dt = graphi_dtype(v.elem_type);
    if (!dt)
      return Status::unsupported(
          what + " has element type " + onnx::data_type_name(v.elem_type) +
          "; graphi inputs are FLOAT, INT32 or INT64" +
          (v.elem_type == onnx::kBool
               ? " (graphi has no bool tensors: pass a mask as float32 or int64 and compare "
                 "inside the model, e.g. mask = lengths_or_ids comparison)"
               : ""));
    if (!v.has_shape)
      return Status::unsupported(what + " has no shape; graphi needs static input shapes");
    Shape shape;
    for (size_t d = 0; d < v.dims.size(); ++d) {
      const onnx::Dim& dim = v.dims[d];
      if (dim.has_value) {
        if (dim.value < 1)
          return Status::unsupported(what + ": dim " + std::to_string(d) + " is " +
                                     std::to_string(dim.value) +
                                     " (empty tensors are not supported)");
        shape.push_back(dim.value);
      } else if (!dim.param.empty()) {
        all_params.insert(dim.param);
        auto o = opts_.dims.find(dim.param);
        if (o == opts_.dims.end())
          return Status::invalid_argument(
              what + ": dim " + std::to_string(d) + " is symbolic ('" + dim.param +
              "'); graphi needs static shapes: give its value with --dim " + dim.param +
              "=N (Python: dims={'" + dim.param + "': N}; C: graphi_options.dim_names/dim_values)");
        if (o->second < 1)
          return Status::invalid_argument(src_ + ": --dim " + dim.param + "=" +
                                          std::to_string(o->second) +
                                          ": the value must be at least 1");
        used_dims.insert(dim.param);
        shape.push_back(o->second);
      } else {
        return Status::unsupported(
            what + ": dim " + std::to_string(d) +
            " has neither a size nor a name; graphi needs static shapes "
            "(fix the model's input shape, e.g. with onnx.tools.update_model_dims)");
      }
    }
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (numel > (int64_t{1} << 40) / d)
        return Status::unsupported(what + ": shape " + shape_to_string(shape) + " is too large");
      numel *= d;
    }
    ValState s;
    s.desc = TensorDesc{*dt, shape};
    s.graph_name = v.name;
    vals_[v.name] = s;
    b_.add_input(v.name, s.desc);
  }
  for (const auto& bound : opts_.constant_inputs) {
    const std::string& name = bound.first;  // a named reference: lambdas capture it (C++17)
    if (!vals_.count(name) || !vals_.at(name).is_const ||
        !std::any_of(g.inputs.begin(), g.inputs.end(),
                     [&](const onnx::ValueInfo& v) { return v.name == name; }))
      return Status::invalid_argument(src_ + ": a constant value is bound to '" + name +
                                      "', which is not a graph input");
  }
  for (const auto& [name, value] : opts_.dims)
    if (!used_dims.count(name)) {
      std::vector<std::string> params(all_params.begin(), all_params.end());
      return Status::invalid_argument(
          src_ + ": --dim " + name + " names no symbolic dim of the model's inputs (" +
          (params.empty() ? std::string("it has none") : "it has: " + join(params)) + ")");
    }
  return Status::ok();
}

Result<std::vector<size_t>> Importer::topo_order() {
  const auto& nodes = m_.graph.nodes;
  std::unordered_map<std::string, size_t> producer;
  for (const onnx::Node& n : nodes)
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      if (vals_.count(o))
        return Status::invalid_graph(where_of(n) + ": output '" + o +
                                     "' is also a graph input or initializer");
      if (!producer.emplace(o, n.index).second)
        return Status::invalid_graph(
            where_of(n) + ": output '" + o + "' is also produced by node[" +
            std::to_string(producer.at(o)) + "] '" + nodes[producer.at(o)].name + "'");
    }
  std::vector<std::vector<size_t>> users(nodes.size());
  std::vector<size_t> pending(nodes.size(), 0);
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) {
      if (in.empty() || vals_.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end())
        return Status::invalid_graph(where_of(n) + ": input '" + in +
                                     "' is not a graph input, an initializer or any node's output");
      users[p->second].push_back(n.index);
      ++pending[n.index];
    }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (pending[k] == 0) ready.push(k);
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t k = ready.top();
    ready.pop();
    order.push_back(k);
    for (size_t u : users[k])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() == nodes.size()) return order;
  // A cycle: walk back from a stuck node through stuck producers until a node repeats.
  size_t at = 0;
  while (pending[at] == 0) ++at;
  std::vector<size_t> path;
  std::vector<int> seen(nodes.size(), -1);
  while (seen[at] < 0) {
    seen[at] = static_cast<int>(path.size());
    path.push_back(at);
    for (const std::string& in : nodes[at].inputs) {
      auto p = producer.find(in);
      if (!in.empty() && !vals_.count(in) && p != producer.end() && pending[p->second] > 0) {
        at = p->second;
        break;
      }
    }
  }
  std::string cycle;
  for (size_t k = static_cast<size_t>(seen[at]); k < path.size(); ++k)
    cycle = "node[" + std::to_string(path[k]) + "] '" + nodes[path[k]].name + "' (" +
            nodes[path[k]].op + ")" + (cycle.empty() ? "" : " -> ") + cycle;
  return Status::invalid_graph(src_ + ": the graph has a cycle: " + cycle);
}

Status Importer::add_outputs() {
  const onnx::GraphProto& g = m_.graph;
  if (g.outputs.empty()) return Status::invalid_graph(src_ + ": the graph declares no outputs");
  for (const onnx::ValueInfo& o : g.outputs) {
    auto it = vals_.find(o.name);
    if (it == vals_.end())
      return Status::invalid_graph(src_ + ": graph output '" + o.name +
                                   "' is not produced by any node");
    if (it->second.is_const || it->second.graph_name != o.name) {
      // A folded (constant) output, or a graph input: an Identity names it.
      const std::string where = src_ + ": graph output '" + o.name + "'";
      GRAPHI_ASSIGN_OR_RETURN(std::string from, ensure_graph_value(o.name, where));
      if (from == o.name) {  // an input that is also an output
        return Status::unsupported(
            where + " is also a graph input; graphi needs outputs computed by nodes");
      }
      Node node{"Identity", fresh(o.name + "/identity"), {}, {}, {}};
      node_names_.insert(node.name);
      b_.add_node("Identity", node.name, {from}, {o.name});
      it->second.graph_name = o.name;
    }
    b_.add_output(o.name);
  }
  // Declared shapes of runtime values: finish() checks them against inference.
  auto declare = [&](const onnx::ValueInfo& v) {
    auto it = vals_.find(v.name);
    if (it == vals_.end() || it->second.is_const || it->second.graph_name != v.name) return;
    if (!v.is_tensor || !v.has_shape) return;
    std::optional<DType> dt = graphi_dtype(v.elem_type);
    if (!dt) return;
    Shape s;
    for (const onnx::Dim& d : v.dims) {
      if (d.has_value) {
        s.push_back(d.value);
      } else {
        auto o = opts_.dims.find(d.param);
        if (d.param.empty() || o == opts_.dims.end()) return;
        s.push_back(o->second);
      }
    }
    b_.declare(v.name, TensorDesc{*dt, s});
  };
  for (const onnx::ValueInfo& v : g.outputs) declare(v);
  return Status::ok();
}

Result<Graph> Importer::run() {
  GRAPHI_RETURN_IF_ERROR(check_versions());
  for (const onnx::ValueInfo& o : m_.graph.outputs) graph_outputs_.insert(o.name);
  for (const auto& [name, t] : m_.graph.initializers) names_.insert(name);
  for (const onnx::ValueInfo& v : m_.graph.inputs) names_.insert(v.name);
  for (const onnx::Node& n : m_.graph.nodes)
    for (const auto* list : {&n.inputs, &n.outputs})
      for (const std::string& v : *list) names_.insert(v);
  GRAPHI_RETURN_IF_ERROR(add_inputs());
  GRAPHI_ASSIGN_OR_RETURN(std::vector<size_t> order, topo_order());
  for (size_t k : order) GRAPHI_RETURN_IF_ERROR(import_node(m_.graph.nodes[k]));
  GRAPHI_RETURN_IF_ERROR(add_outputs());
  std::string producer = m_.producer_name;
  if (!m_.producer_version.empty()) producer += (producer.empty() ? "" : " ") + m_.producer_version;
  b_.set_metadata("format", "onnx");
  if (!producer.empty()) b_.set_metadata("producer", producer);
  if (!m_.doc.empty()) b_.set_metadata("description", m_.doc);
  b_.set_metadata("onnx_ir_version", std::to_string(m_.ir_version));
  b_.set_metadata("onnx_opset", std::to_string(opset_));
  for (const auto& [k, v] : m_.metadata) b_.set_metadata("onnx:" + k, v);
  return b_.finish(shapes_);
}

Result<std::vector<std::byte>> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return Status::io_error(path + ": cannot open file");
  const std::streamoff size = f.tellg();
  if (size < 0) return Status::io_error(path + ": cannot read file");
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  f.seekg(0);
  if (size > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), size))
    return Status::io_error(path + ": read error");
  return bytes;
}

}  // namespace

Result<Graph> import_onnx_bytes(std::span<const std::byte> bytes, const std::string& source,
                                const ShapeInferencer& shapes, const ImportOptions& options) {
  if (bytes.empty()) return Status::invalid_graph(source + ": empty file, not an ONNX model");
  Result<onnx::Model> m = onnx::decode_model(bytes);
  if (!m.is_ok()) return m.status().with_context(source);
  Importer imp(source, shapes, options, *m);
  return imp.run();
}

Result<Graph> import_onnx_file(const std::string& path, const ShapeInferencer& shapes,
                               const ImportOptions& options) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, read_file(path));
  return import_onnx_bytes(bytes, path, shapes, options);
}

Result<Tensor> read_onnx_tensor_file(const std::string& path, std::string* name) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, read_file(path));
  Result<HostTensor> h = onnx::decode_tensor(bytes, name);
  if (!h.is_ok()) return h.status().with_context(path);
  std::optional<DType> dt = graphi_dtype(h->type);
  if (!dt)
    return Status::unsupported(path + ": tensor of type " + h->desc() +
                               "; graphi tensors are FLOAT, INT32 or INT64");
  Tensor t(TensorDesc{*dt, h->shape});
  for (size_t k = 0; k < h->numel(); ++k) {
    if (*dt == DType::kF32)
      t.data_as<float>()[k] = static_cast<float>(h->f[k]);
    else if (*dt == DType::kI32)
      t.data_as<int32_t>()[k] = static_cast<int32_t>(h->i[k]);
    else
      t.data_as<int64_t>()[k] = h->i[k];
  }
  return t;
}

bool looks_like_onnx_model(std::span<const std::byte> head) {
  if (head.size() < 2) return false;
  const auto b0 = static_cast<uint8_t>(head[0]), b1 = static_cast<uint8_t>(head[1]);
  if (b0 == 0x08) return b1 >= 1 && b1 <= 0x7f;  // ir_version, a small varint
  // producer_name, producer_version, domain, doc_string, graph, opset_import: length-delimited.
  return b0 == 0x12 || b0 == 0x1a || b0 == 0x22 || b0 == 0x32 || b0 == 0x3a || b0 == 0x42;
}

}  // namespace graphi::graph
