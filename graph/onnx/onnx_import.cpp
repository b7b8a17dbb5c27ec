#include "graph/onnx/onnx_import.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <string_view>
#include <unordered_map>

#include "graph/format.h"
#include "graph/memory_budget.h"
#include "graph/onnx/import_internal.h"
#include "graph/onnx/onnx_attr_names.h"
#include "graph/onnx/onnx_external_data.h"
#include "graph/onnx/onnx_fold.h"
#include "graph/onnx/onnx_fold_internal.h"

namespace graphi::graph {

namespace onnx_import {

namespace {

// Opsets 19-22 change no float32 semantics of the ops graphi maps except AveragePool's dilations,
// Pad's 'wrap' mode, Resize's 'half_pixel_symmetric' and the Gelu op (graph/onnx/ONNX.md); the
// rest of them add types (float8, int4, bfloat16, strings). PyTorch 2.x's TorchScript exporter
// writes opset 20 by default. IR 11 (onnx 1.18) adds float4 only. Opsets 23-28 (onnx 1.18-1.23,
// whose make_model writes 28): types (float4, float8e8m0, int2), attributes that matter only for
// them (Cast's round_mode, Range's stash_type, QuantizeLinear's precision), SpaceToDepth's CRD
// mode, Mod's fmod 0 on floats, and new ops (Swish, SwiGLU, RMSNormalization, Attention,
// RotaryEmbedding, TensorScatter, CumProd mapped; BitCast, LinearAttention, CausalConvWithState
// refused by name).
constexpr int64_t kMinOpset = 6, kMaxOpset = 28;
constexpr int64_t kMinIr = 3, kMaxIr = 14;

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
                                                "Attention",
                                                "AveragePool",
                                                "BatchNormalization",
                                                "Cast",
                                                "CastLike",
                                                "Ceil",
                                                "Celu",
                                                "CenterCropPad",
                                                "Clip",
                                                "Col2Im",
                                                "Concat",
                                                "Conv",
                                                "ConvTranspose",
                                                "Cos",
                                                "Cosh",
                                                "CumProd",
                                                "CumSum",
                                                "DFT",
                                                "DepthToSpace",
                                                "DequantizeLinear",
                                                "Det",
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
                                                "Gelu",
                                                "Gemm",
                                                "GlobalAveragePool",
                                                "GlobalLpPool",
                                                "GlobalMaxPool",
                                                "Greater",
                                                "GreaterOrEqual",
                                                "GridSample",
                                                "GroupNormalization",
                                                "HardSigmoid",
                                                "HardSwish",
                                                "Hardmax",
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
                                                "LpPool",
                                                "MatMul",
                                                "Max",
                                                "MaxPool",
                                                "MaxUnpool",
                                                "Mean",
                                                "MelWeightMatrix",
                                                "Min",
                                                "Mish",
                                                "Mod",
                                                "Mul",
                                                "Neg",
                                                "NegativeLogLikelihoodLoss",
                                                "Not",
                                                "OneHot",
                                                "Or",
                                                "PRelu",
                                                "Pad",
                                                "Pow",
                                                "QuantizeLinear",
                                                "RMSNormalization",
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
                                                "ReverseSequence",
                                                "RoiAlign",
                                                "RotaryEmbedding",
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
                                                "SoftmaxCrossEntropyLoss",
                                                "Softplus",
                                                "Softsign",
                                                "STFT",
                                                "SpaceToDepth",
                                                "Split",
                                                "Sqrt",
                                                "Squeeze",
                                                "Sub",
                                                "Sum",
                                                "SwiGLU",
                                                "Swish",
                                                "Tan",
                                                "Tanh",
                                                "TensorScatter",
                                                "ThresholdedRelu",
                                                "Tile",
                                                "TopK",
                                                "Transpose",
                                                "Trilu",
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

}  // namespace

std::optional<DType> graphi_dtype(int32_t t) {
  switch (t) {
    case onnx::kFloat:
    case onnx::kFloat16:  // held and computed as float32 (graph/float16.h)
    case onnx::kBfloat16:
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

Status Importer::unsupported_op(const onnx::Node& n, const std::string& why) const {
  const std::string domain = n.domain.empty() ? "ai.onnx" : n.domain;
  if (domain != "ai.onnx")  // the whole domain: listing the default domain's ops would not help
    return Status::unsupported(
        where_of(n) + ": op type '" + n.op + "' (domain '" + domain + "') is not supported: " +
        "graphi runs the ops of ONNX's default domain (ai.onnx) only (and com.microsoft's "
        "DynamicQuantizeLSTM and DynamicQuantizeMatMul)" +
        (domain == "ai.onnx.ml"
             ? " (ai.onnx.ml holds the classical-ML ops of converters such as skl2onnx: "
               "ZipMap, Scaler, LinearClassifier, ...)"
             : "") +
        " (see graph/onnx/ONNX.md)");
  const std::string head =
      where_of(n) + ": op type '" + n.op + "' (domain '" + domain + "'" +
      (n.domain.empty() || n.domain == "ai.onnx" ? ", opset " + std::to_string(opset_) : "") +
      ") is not supported";
  // A known op in a form graphi does not take: the reason, without the list of every op.
  if (!why.empty() && (is_runtime_op(n.op) || onnx::is_foldable_op(n.op) || n.op == "Loop" ||
                       n.op == "If" || n.op == "Scan"))
    return Status::unsupported(head + " " + why + " (see graph/onnx/ONNX.md)");
  std::vector<std::string> fold_only;
  for (const std::string& op : onnx::foldable_ops())
    if (!is_runtime_op(op)) fold_only.push_back(op);
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

bool Importer::is_read(const std::string& v) const {
  for (const onnx::Node& n : m_.graph.nodes) {
    for (const std::string& in : n.inputs)
      if (in == v) return true;
    for (const std::string& in : outer_reads(n))
      if (in == v) return true;
  }
  for (const onnx::ValueInfo& o : m_.graph.outputs)
    if (o.name == v) return true;
  return false;
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

Result<std::shared_ptr<Tensor>> graphi_tensor(const HostTensor& h, const std::string& what) {
  // graphi has no bool dtype: ONNX BOOL tensors are float32 0/1 (ops/logic_ops.cpp).
  std::optional<DType> dt = h.type == onnx::kBool ? DType::kF32 : graphi_dtype(h.type);
  if (!dt)
    return Status::unsupported(what + " " + h.desc() +
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
  return t;
}

namespace {

// The reverse of graphi_tensor for a float32, int32 or int64 value bound at import
// (ImportOptions::constant_inputs): the importer's host form, of the ONNX type of t's dtype.
std::shared_ptr<HostTensor> host_tensor(const Tensor& t) {
  auto h = std::make_shared<HostTensor>(HostTensor::make(onnx_type_of(t.dtype()), t.shape()));
  for (size_t e = 0; e < h->numel(); ++e) {
    if (t.dtype() == DType::kF32)
      h->f[e] = t.data_as<float>()[e];
    else if (t.dtype() == DType::kI32)
      h->i[e] = t.data_as<int32_t>()[e];
    else
      h->i[e] = t.data_as<int64_t>()[e];
  }
  return h;
}

// A bound float32 value of a FLOAT16 / BFLOAT16 input or initializer: that type, its values
// rounded to it, so folding computes what the file's types say (a no-op for other types).
std::shared_ptr<HostTensor> as_16bit_float(std::shared_ptr<HostTensor> h, int32_t type) {
  if (type != onnx::kFloat16 && type != onnx::kBfloat16) return h;
  h->type = type;
  onnx::fold_detail::fit_to_type(*h);
  return h;
}

}  // namespace

Result<std::string> Importer::ensure_graph_value(const std::string& v, const std::string& where) {
  auto it = vals_.find(v);
  if (it == vals_.end()) return Status::internal(where + ": value '" + v + "' is unknown");
  ValState& s = it->second;
  if (!s.graph_name.empty()) return s.graph_name;
  GRAPHI_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> t,
                          graphi_tensor(*s.host, where + ": value '" + v + "' is a constant"));
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

Status Importer::emit_reshape(const std::string& name, const std::string& in, const Shape& shape,
                              const std::vector<std::string>& outputs, const std::string& where,
                              const onnx::Node* onnx_node) {
  if (shape.empty()) {  // to a scalar: PyTorch 2's exports squeeze a full reduction's [1, ..., 1]
    Attributes a;
    a.set("shape", std::vector<int64_t>{});
    return emit("Reshape", name, {in}, outputs, std::move(a), where, onnx_node);
  }
  return emit("Reshape", name, {in, add_ints_const(name + "/shape", shape)}, outputs, {}, where,
              onnx_node);
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

Status Importer::NodeIn::need(size_t k) const {
  if (k < ins.size() && !ins[k].empty()) return Status::ok();
  return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
}

Status Importer::translate(const onnx::Node& n, const std::string& where) {
  const std::string& op = n.op;
  NodeIn io{n, where, node_name(n), {}, {}};
  io.outs = outputs_of(n, io.name);
  if (io.outs.empty()) return Status::invalid_graph(where + ": has no outputs");
  io.ins = n.inputs;
  // Resize's roi and scales given as empty tensors mean "absent" (ONNX: an empty scales when
  // sizes is given; roi matters only for tf_crop_and_resize); tf2onnx writes them that way.
  if (op == "Resize")
    for (size_t k = 1; k < 3 && k < io.ins.size(); ++k)
      if (!io.ins[k].empty() && is_const(io.ins[k]) && host(io.ins[k])->numel() == 0)
        io.ins[k].clear();
  // Op families that rewrite a node into other graphi ops (or refuse it); each leaves the nodes
  // it does not handle alone. Every op name belongs to one family.
  for (auto family :
       {&Importer::translate_recurrent, &Importer::translate_shape,
        &Importer::translate_elementwise, &Importer::translate_conv_pool,
        &Importer::translate_control_flow, &Importer::translate_loss, &Importer::translate_signal,
        &Importer::translate_attention, &Importer::translate_quantize})
    if (std::optional<Status> done = (this->*family)(io)) return *done;
  const std::string& name = io.name;
  const std::vector<std::string>& ins = io.ins;
  const std::vector<std::string>& outs = io.outs;
  // Everything else: graphi's op of the same name, attributes as they are.
  // Dropped: allowzero (checked above), Gemm's legacy broadcast, opset <= 6 leftovers.
  GRAPHI_ASSIGN_OR_RETURN(
      Attributes attrs,
      convert_attrs(n, where, {"allowzero", "broadcast", "is_test", "output_sequence"}));
  return emit(op, name, ins, outs, std::move(attrs), where, &n);
}

// Imported for another batch (ImportOptions::batch): a Reshape or Expand of a run-time value
// that now has the new batch on dim 0, to a constant shape whose dim-0 entry is the batch the
// file declares (x.view(8, 2, 58, h, w) traced at batch 8), gets the new batch there instead.
// graph/batch_split.h then checks that this kept the samples apart.
void Importer::rebatch_shape_operand(const onnx::Node& n) {
  if (opts_.batch < 1 || declared_batch_ < 1 || (n.op != "Reshape" && n.op != "Expand") ||
      n.inputs.size() < 2 || n.inputs[0].empty() || is_const(n.inputs[0]) || !is_const(n.inputs[1]))
    return;
  const Shape& x = vals_.at(n.inputs[0]).desc.shape;
  ValState& s = vals_.at(n.inputs[1]);
  const HostTensor* h = s.host.get();
  if (x.empty() || x[0] != opts_.batch || !h || h->is_float() || h->shape.size() != 1 ||
      h->i.empty() || h->i[0] != declared_batch_ || !s.graph_name.empty() || s.tensor)
    return;
  auto patched = std::make_shared<HostTensor>(*h);
  patched->i[0] = opts_.batch;
  s.host = std::move(patched);
}

Status Importer::import_node(const onnx::Node& node_in) {
  const std::string where = where_of(node_in);
  GRAPHI_RETURN_IF_ERROR(materialize_qdq_inputs(node_in));
  if (std::optional<Status> done = import_dynamic_quantize(node_in, where)) return *done;
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
  if ((np->op == "Conv" || np->op == "MaxPool" || np->op == "AveragePool" || np->op == "LpPool") &&
      np->attr("auto_pad") && np->attr("auto_pad")->s != "NOTSET") {
    GRAPHI_ASSIGN_OR_RETURN(padded, explicit_pads(*np, where));
    np = &padded;
  }
  if (np->op == "ConvTranspose" &&
      ((np->attr("auto_pad") && np->attr("auto_pad")->s != "NOTSET") || np->attr("output_shape"))) {
    GRAPHI_ASSIGN_OR_RETURN(padded, transpose_pads(*np, where));
    np = &padded;
  }
  onnx::Node floored;
  if ((np->op == "MaxPool" || np->op == "AveragePool" || np->op == "LpPool") &&
      np->attr("ceil_mode") && np->attr("ceil_mode")->i != 0) {
    GRAPHI_ASSIGN_OR_RETURN(floored, ceil_mode_as_pads(*np, where));
    np = &floored;
  }
  onnx::Node dequantized;  // its attributes are checked by the translation
  if (np->domain == "com.microsoft" && np->op == "DynamicQuantizeLSTM") {
    GRAPHI_ASSIGN_OR_RETURN(dequantized, dynamic_quantize_lstm_as_lstm(*np, where));
    np = &dequantized;
  }
  const onnx::Node& n = *np;
  if (!n.domain.empty() && n.domain != "ai.onnx") return unsupported_op(n);
  if (np != &dequantized) GRAPHI_RETURN_IF_ERROR(onnx::check_attr_names(node_in, where));
  if (opset_ == 0)
    return Status::invalid_graph(where +
                                 ": the node is of the default ONNX domain but the model "
                                 "imports no opset of it");
  if (std::optional<Status> done = translate_sequence(n, where)) return *done;
  for (const std::string& in : n.inputs)
    if (!in.empty() && !vals_.count(in))
      return Status::internal(where + ": input '" + in + "' is not defined");
  rebatch_shape_operand(n);

  if (std::optional<Status> done = import_empty_slice(n, where)) return *done;
  GRAPHI_ASSIGN_OR_RETURN(std::optional<onnx::Node> kept, without_empty_inputs(n, where));
  if (kept) return translate(*kept, where);
  GRAPHI_ASSIGN_OR_RETURN(std::optional<onnx::Node> split, without_empty_pieces(n, where));
  if (split) return translate(*split, where);

  bool all_const = true;
  for (const std::string& in : n.inputs)
    if (!in.empty() && !is_const(in)) all_const = false;
  const bool shape_only = (n.op == "Shape" || n.op == "Size" || n.op == "EyeLike") &&
                          !n.inputs.empty() && !n.inputs[0].empty();
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
    // A Constant's value is in the file; every other fold makes new elements, from the budget.
    const bool counted = n.op != "Constant";
    const int64_t left =
        counted ? std::max<int64_t>(fold_budget_ - folded_, 0) : onnx::kMaxFoldElements;
    GRAPHI_ASSIGN_OR_RETURN(std::vector<HostTensor> outs,
                            onnx::fold_node(n, opset_, ins, where, left));
    if (counted) {
      int64_t made = 0;
      for (const HostTensor& o : outs) made += static_cast<int64_t>(o.numel());
      if (made > left)  // several outputs (Split) each under the limit, together over it
        return Status::unsupported(
            where + ": its results have " + std::to_string(made) + " elements, more than the " +
            std::to_string(left) + " left of this model's import-time folding budget of " +
            std::to_string(fold_budget_) +
            " elements (4 times the elements of its constants, at least " +
            std::to_string(onnx::kMinFoldBudget) + "; graph/onnx/ONNX.md, Limits)");
      folded_ += made;
    }
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
    if (n.op == "DequantizeLinear") {  // int8 weights an Int8MatMul may take as they are
      DequantizedConstant d;
      d.q = n.inputs[0];
      d.scale = n.inputs[1];
      d.zero_point = n.inputs.size() > 2 ? n.inputs[2] : "";
      d.axis = n.attr("axis") ? n.attr("axis")->i : 1;
      d.blocked = n.attr("block_size") && n.attr("block_size")->i != 0;
      dequantized_constants_[n.outputs[0]] = d;
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
    return Status::invalid_graph(src_ + ": not an ONNX model (it has a graph but no ir_version)");
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
  // Symbolic dims that opts_.dims leaves open, from the shapes the caller will feed
  // (opts_.input_shapes, e.g. the CLI's --input files), where an input's rank matches: name ->
  // (value, the input it came from).
  std::map<std::string, std::pair<int64_t, std::string>> fed;
  for (const onnx::ValueInfo& v : g.inputs) {
    auto given = opts_.input_shapes.find(v.name);
    if (given == opts_.input_shapes.end() || !v.has_shape || given->second.size() != v.dims.size())
      continue;
    for (size_t d = 0; d < v.dims.size(); ++d) {
      const onnx::Dim& dim = v.dims[d];
      const int64_t value = given->second[d];
      if (dim.has_value || dim.param.empty() || opts_.dims.count(dim.param) || value < 1) continue;
      auto [it, added] = fed.emplace(dim.param, std::make_pair(value, v.name));
      if (!added && it->second.first != value)
        return Status::invalid_argument(
            src_ + ": symbolic dim '" + dim.param + "' is " + std::to_string(it->second.first) +
            " in input '" + it->second.second + "' but " + std::to_string(value) + " in input '" +
            v.name + "' as given; give its value with --dim " + dim.param + "=N");
    }
  }
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const onnx::ValueInfo& v = g.inputs[k];
    const std::string what = src_ + ": graph input " + std::to_string(k) + " '" + v.name + "'";
    if (v.name.empty())
      return Status::invalid_graph(src_ + ": graph input " + std::to_string(k) + " has no name");
    if (vals_.count(v.name)) {
      if (!vals_.at(v.name).is_const) return Status::invalid_graph(what + " is declared twice");
      GRAPHI_RETURN_IF_ERROR(initializer_input(v, what));
      continue;
    }
    if (auto c = opts_.constant_inputs.find(v.name); c != opts_.constant_inputs.end()) {
      const Tensor& t = c->second;
      if (v.is_tensor && graphi_dtype(v.elem_type) != t.dtype())
        return Status::invalid_argument(what + " has element type " +
                                        onnx::data_type_name(v.elem_type) +
                                        " but the value bound to it is " + t.desc().to_string());
      ValState s;
      s.is_const = true;
      s.host = as_16bit_float(host_tensor(t), v.is_tensor ? v.elem_type : onnx::kFloat);
      vals_[v.name] = std::move(s);
      continue;
    }
    if (!v.is_tensor)
      return Status::unsupported(
          what + " is not a tensor (sequence, map and optional types are not supported)");
    // A BOOL input (a padding mask) is fed as float32 0/1, graphi's form of a run-time bool
    // (graph/onnx/ONNX.md, Booleans); the metadata names it so front ends convert bool arrays.
    std::optional<DType> dt =
        v.elem_type == onnx::kBool ? std::optional<DType>(DType::kF32) : graphi_dtype(v.elem_type);
    if (!dt)
      return Status::unsupported(what + " has element type " + onnx::data_type_name(v.elem_type) +
                                 "; graphi inputs are FLOAT, FLOAT16, BFLOAT16, INT32, INT64 or "
                                 "BOOL");
    note_declared_type(v.name, v.elem_type);
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
        if (auto f = fed.find(dim.param); o == opts_.dims.end() && f != fed.end()) {
          shape.push_back(f->second.first);
          continue;
        }
        if (o == opts_.dims.end() && opts_.default_dim > 0) {
          shape.push_back(opts_.default_dim);
          continue;
        }
        if (o == opts_.dims.end()) {
          // A --dim the model has no dim of is most likely this one misspelt: say so too.
          std::string unknown;
          for (const auto& flag : opts_.dims) {
            const std::string& name = flag.first;  // a named reference: lambdas capture it
            const bool known = std::any_of(g.inputs.begin(), g.inputs.end(), [&](const auto& in) {
              return std::any_of(in.dims.begin(), in.dims.end(),
                                 [&](const onnx::Dim& x) { return x.param == name; });
            });
            if (!known) unknown += (unknown.empty() ? "" : ", ") + name;
          }
          return Status::invalid_argument(
              what + ": dim " + std::to_string(d) + " is symbolic ('" + dim.param +
              "'); graphi needs static shapes: give its value with --dim " + dim.param +
              "=N (Python: dims={'" + dim.param + "': N}; C: graphi_options.dim_names/dim_values)" +
              (unknown.empty() ? "" : "; the model has no symbolic dim named " + unknown));
        }
        if (o->second < 1)
          return Status::invalid_argument(src_ + ": --dim " + dim.param + "=" +
                                          std::to_string(o->second) +
                                          ": the value must be at least 1");
        used_dims.insert(dim.param);
        shape.push_back(o->second);
      } else if (auto given = opts_.input_shapes.find(v.name);
                 given != opts_.input_shapes.end() && given->second.size() == v.dims.size() &&
                 given->second[d] >= 1) {
        shape.push_back(given->second[d]);  // skl2onnx's unnamed batch dim, from the input file
      } else {
        return Status::unsupported(
            what + ": dim " + std::to_string(d) +
            " has neither a size nor a name; graphi needs static shapes: feed the input from a "
            "file (graphi run --input " +
            v.name + "=FILE.npy; Python: input_shapes={'" + v.name +
            "': (...)}) or fix the model's input shape, e.g. with "
            "onnx.tools.update_model_dims");
      }
    }
    if (opts_.batch >= 1 && !shape.empty()) {
      // The batch the file declares (-1: the inputs disagree), for the shape constants below.
      declared_batch_ = declared_batch_ == 0 || declared_batch_ == shape[0] ? shape[0] : -1;
      shape[0] = opts_.batch;
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
  for (const std::string& name : opts_.override_initializers)
    if (std::any_of(g.initializers.begin(), g.initializers.end(),
                    [&](const auto& init) { return init.first == name; }) &&
        !std::any_of(g.inputs.begin(), g.inputs.end(),
                     [&](const onnx::ValueInfo& v) { return v.name == name; }))
      return Status::invalid_argument(
          src_ + ": initializer '" + name +
          "' is not a graph input: ONNX makes it a constant, which the caller cannot feed (only "
          "an initializer also listed as a graph input may be overridden)");
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

Status Importer::initializer_input(const onnx::ValueInfo& v, const std::string& what) {
  ValState& s = vals_.at(v.name);
  const HostTensor& init = *s.host;
  if (auto c = opts_.constant_inputs.find(v.name); c != opts_.constant_inputs.end()) {
    // A value bound at import replaces the initializer (and folds like it).
    const Tensor& t = c->second;
    const std::optional<DType> dt =
        init.type == onnx::kBool ? std::optional<DType>(DType::kF32) : graphi_dtype(init.type);
    if (dt != t.dtype() || init.type == onnx::kBool)
      return Status::invalid_argument(what + " is an initializer " + init.desc() +
                                      "; the value bound to it is " + t.desc().to_string());
    // init.type is t's (checked above), or FLOAT16 / BFLOAT16.
    s.host = as_16bit_float(host_tensor(t), init.type);
    return Status::ok();
  }
  if (!opts_.override_initializers.count(v.name)) return Status::ok();  // a constant
  // A run-time input of the initializer's dtype and shape; the initializer is its default.
  GRAPHI_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> t,
                          graphi_tensor(init, what + " is an initializer"));
  note_declared_type(v.name, init.type);
  if (t->numel() == 0)
    return Status::unsupported(what + " is an empty initializer " + init.desc() +
                               " (empty tensors are not supported)");
  if (opts_.initializer_defaults) (*opts_.initializer_defaults)[v.name] = *t;
  ValState in;
  in.desc = t->desc();
  in.graph_name = v.name;
  s = in;
  b_.add_input(v.name, in.desc);
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
  for (const onnx::Node& n : nodes) {
    std::vector<std::string> reads = n.inputs;
    for (const std::string& v : outer_reads(n)) reads.push_back(v);  // an If's branches'
    for (const std::string& in : reads) {
      if (in.empty() || vals_.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end())
        return Status::invalid_graph(where_of(n) + ": input '" + in +
                                     "' is not a graph input, an initializer or any node's output");
      users[p->second].push_back(n.index);
      ++pending[n.index];
    }
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
    std::vector<std::string> reads = nodes[at].inputs;
    for (const std::string& v : outer_reads(nodes[at])) reads.push_back(v);
    for (const std::string& in : reads) {
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
  std::set<std::string> added;
  // Graph output `name`; a BOOL / FLOAT16 / BFLOAT16 one is named in the metadata.
  auto output = [&](const std::string& name, int32_t elem_type) {
    b_.add_output(name);
    note_declared_type(name, elem_type);
  };
  // An Identity copy of `from` under a fresh name made from `base` ('y_1'), as an output.
  auto output_copy = [&](const std::string& from, const std::string& base, int32_t elem_type) {
    const std::string copy = fresh(base);
    node_names_.insert(copy);
    b_.add_node("Identity", copy, {from}, {copy});
    output(copy, elem_type);
  };
  for (const onnx::ValueInfo& o : g.outputs) {
    auto it = vals_.find(o.name);
    if (it == vals_.end() && seqs_.count(o.name))
      return Status::unsupported(src_ + ": graph output '" + o.name +
                                 "' is a sequence of tensors; graphi's outputs are tensors");
    if (it == vals_.end())
      return Status::invalid_graph(src_ + ": graph output '" + o.name +
                                   "' is not produced by any node");
    if (it->second.empty)
      return Status::unsupported(src_ + ": graph output '" + o.name +
                                 "' is an empty slice; graphi has no empty tensors");
    const int32_t type = o.is_tensor ? o.elem_type : onnx::kFloat;  // as the file declares it
    if (!added.insert(o.name).second) {
      // The same value listed again (PyTorch's `return y, y`; ONNX Runtime returns it twice): a
      // copy under a fresh name ('y_1'), so every listed output has a place of its own.
      output_copy(it->second.graph_name, o.name, type);
      continue;
    }
    if (it->second.is_const || it->second.graph_name != o.name) {
      // A folded (constant) output, or a graph input: an Identity names it.
      const std::string where = src_ + ": graph output '" + o.name + "'";
      GRAPHI_ASSIGN_OR_RETURN(std::string from, ensure_graph_value(o.name, where));
      if (from == o.name) {
        // A graph input that is also an output (ONNX Runtime passes it through): graphi's
        // outputs are computed by nodes, so a copy under a fresh name ('x_1') is the output.
        output_copy(from, o.name, type);
        continue;
      }
      Node node{"Identity", fresh(o.name + "/identity"), {}, {}, {}};
      node_names_.insert(node.name);
      b_.add_node("Identity", node.name, {from}, {o.name});
      it->second.graph_name = o.name;
    }
    output(o.name, type);
  }
  auto list = [&](const char* key, const std::vector<std::string>& names) {
    std::string all;
    for (const std::string& v : names) all += (all.empty() ? "" : ",") + v;
    if (!all.empty()) b_.set_metadata(key, all);
  };
  list(kBoolValuesKey, bool_values_);
  list(kFloat16ValuesKey, float16_values_);
  list(kBfloat16ValuesKey, bfloat16_values_);
  // Declared shapes of the outputs: finish() checks them against inference. Only fully static
  // declarations: beside a symbolic dim an exporter may leave another dim at its export-time
  // value (torch.onnx's dynamo path declares [4, 'batch', 37] for a sequence exported at T = 4),
  // which ONNX Runtime only warns about, so such a declaration is not binding here either.
  auto declare = [&](const onnx::ValueInfo& v) {
    auto it = vals_.find(v.name);
    if (it == vals_.end() || it->second.is_const || it->second.graph_name != v.name) return;
    if (!v.is_tensor || !v.has_shape) return;
    std::optional<DType> dt = graphi_dtype(v.elem_type);
    if (!dt) return;
    Shape s;
    for (const onnx::Dim& d : v.dims) {
      if (!d.has_value) return;
      s.push_back(d.value);
    }
    b_.declare(v.name, TensorDesc{*dt, s});
  };
  if (opts_.batch < 1)
    for (const onnx::ValueInfo& v : g.outputs) declare(v);
  return Status::ok();
}

Result<Graph> Importer::run() {
  report("import", 0, m_.graph.nodes.size());
  GRAPHI_RETURN_IF_ERROR(check_versions());
  for (const onnx::ValueInfo& o : m_.graph.outputs) graph_outputs_.insert(o.name);
  for (const auto& [name, t] : m_.graph.initializers) names_.insert(name);
  for (const onnx::ValueInfo& v : m_.graph.inputs) names_.insert(v.name);
  for (const onnx::Node& n : m_.graph.nodes) {
    for (const auto* list : {&n.inputs, &n.outputs})
      for (const std::string& v : *list) names_.insert(v);
    std::set<std::string> defined, read;  // an If's branches
    subgraph_names(n, &defined, &read);
    names_.insert(defined.begin(), defined.end());
    names_.insert(read.begin(), read.end());
  }
  GRAPHI_RETURN_IF_ERROR(add_inputs());
  // Folding may produce 4 times the elements of the model's own constants (a chain of weight
  // transforms: DequantizeLinear, Transpose, Reshape), at least kMinFoldBudget.
  int64_t held = 0;
  for (const auto& [name, t] : m_.graph.initializers) held += static_cast<int64_t>(t->numel());
  for (const onnx::Node& n : m_.graph.nodes)
    if (n.op == "Constant")
      for (const onnx::Attr& a : n.attrs)
        held += static_cast<int64_t>(a.t ? a.t->numel() : a.floats.size() + a.ints.size());
  fold_budget_ = std::max(onnx::kMinFoldBudget, 4 * held);
  GRAPHI_ASSIGN_OR_RETURN(std::vector<size_t> order, topo_order());
  const size_t total = order.size();
  for (size_t done = 0; done < total; ++done) {
    if (done > 0 && done % 1024 == 0) report("import", done, total);
    GRAPHI_RETURN_IF_ERROR(import_node(m_.graph.nodes[order[done]]));
  }
  report("import", total, total);
  for (const onnx::ValueInfo& o : m_.graph.outputs) GRAPHI_RETURN_IF_ERROR(materialize_qdq(o.name));
  GRAPHI_RETURN_IF_ERROR(add_outputs());
  std::string producer = m_.producer_name;
  if (!m_.producer_version.empty()) producer += (producer.empty() ? "" : " ") + m_.producer_version;
  b_.set_metadata("format", "onnx");
  if (!producer.empty()) b_.set_metadata("producer", producer);
  if (!m_.doc.empty()) b_.set_metadata("description", m_.doc);
  b_.set_metadata("onnx_ir_version", std::to_string(m_.ir_version));
  b_.set_metadata("onnx_opset", std::to_string(opset_));
  for (const auto& [k, v] : m_.metadata) b_.set_metadata("onnx:" + k, v);
  report("validate", 0, 1);
  Result<Graph> g = b_.finish(shapes_);
  report("validate", 1, 1);
  return g;
}

void Importer::note_declared_type(const std::string& name, int32_t elem_type) {
  std::vector<std::string>* list = elem_type == onnx::kBool       ? &bool_values_
                                   : elem_type == onnx::kFloat16  ? &float16_values_
                                   : elem_type == onnx::kBfloat16 ? &bfloat16_values_
                                                                  : nullptr;
  // Once: an output may be an input too.
  if (list && std::find(list->begin(), list->end(), name) == list->end()) list->push_back(name);
}

}  // namespace onnx_import

namespace {

// The comma-separated names under metadata `key` (kBoolValuesKey and the like).
std::vector<std::string> metadata_names(const Graph& g, const char* key) {
  std::vector<std::string> names;
  auto it = g.metadata().find(key);
  if (it == g.metadata().end()) return names;
  const std::string& list = it->second;
  for (size_t p = 0; p <= list.size();) {
    const size_t q = std::min(list.find(',', p), list.size());
    if (q > p) names.push_back(list.substr(p, q - p));
    p = q + 1;
  }
  return names;
}

}  // namespace

std::vector<std::string> bool_values(const Graph& g) { return metadata_names(g, kBoolValuesKey); }
std::vector<std::string> float16_values(const Graph& g) {
  return metadata_names(g, kFloat16ValuesKey);
}
std::vector<std::string> bfloat16_values(const Graph& g) {
  return metadata_names(g, kBfloat16ValuesKey);
}

namespace {

using onnx::HostTensor;
using onnx_import::graphi_dtype;

// What the start of `b` is when it cannot be an ONNX ModelProto: an empty file, a known file
// type, text, or a first protobuf key no ModelProto has (an ONNX writer emits ModelProto's
// fields in field-number order, ir_version first). nullopt when it may be a model. `strict`
// also reports a first field number ModelProto does not define (legal protobuf: used only
// once decoding has failed anyway).
std::optional<std::string> not_a_model(std::span<const std::byte> b, bool strict) {
  if (b.empty()) return "empty file";
  auto starts = [&](std::string_view magic) {
    return b.size() >= magic.size() && std::memcmp(b.data(), magic.data(), magic.size()) == 0;
  };
  if (b.size() >= sizeof kGraphiMagic && has_graphi_magic(b))
    return "a .graphi file: name it .graphi";
  static const std::pair<std::string_view, const char*> kKnown[] = {
      {"\x89PNG\r\n\x1a\n", "a PNG image"},
      {"\xff\xd8\xff", "a JPEG image"},
      {"PK\x03\x04",
       "a zip archive (PyTorch .pt/.pth files are zip archives: export with "
       "torch.onnx.export)"},
      {"\x93NUMPY", "a NumPy .npy array"},
      {"\x1f\x8b", "a gzip file: decompress it first"},
      {"\x7f"
       "ELF",
       "an ELF executable"},
      {"%PDF", "a PDF document"}};
  for (const auto& [magic, what] : kKnown)
    if (starts(magic)) return std::string(what);
  // Text: a model's first byte is a field key (0x08 for ir_version) and its lengths soon have
  // the high bit set, so 64 printable ASCII bytes are never the start of a real model.
  const size_t head = std::min<size_t>(b.size(), 64);
  bool text = true;
  for (size_t k = 0; k < head && text; ++k) {
    const auto c = static_cast<unsigned char>(b[k]);
    text = (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\r';
  }
  if (text) {
    std::string line;
    for (size_t k = 0; k < head && line.size() < 40; ++k) {
      const auto c = static_cast<char>(b[k]);
      if (c == '\n' || c == '\r') break;
      line += c;
    }
    return "the file is text, starting \"" + line + (line.size() == 40 ? "...\"" : "\"");
  }
  // The first protobuf key (a varint): field number and wire type.
  uint64_t key = 0;
  size_t k = 0;
  for (int shift = 0; k < b.size() && shift < 64; shift += 7) {
    const auto c = static_cast<uint8_t>(b[k++]);
    key |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) break;
  }
  const uint64_t field = key >> 3, wire = key & 7;
  const std::string found = "it starts with protobuf field " + std::to_string(field) +
                            ", wire type " + std::to_string(wire) +
                            "; an ONNX model starts with field 1 (ir_version, a varint)";
  if (field == 0 || wire == 3 || wire == 4 || wire > 5) return found;
  // ModelProto (onnx.proto): 1 ir_version and 5 model_version are varints; 2-4, 6-8, 14, 20
  // and 25 length-delimited.
  static const std::map<uint64_t, uint64_t> kModelFields = {
      {1, 0}, {2, 2}, {3, 2}, {4, 2}, {5, 0}, {6, 2}, {7, 2}, {8, 2}, {14, 2}, {20, 2}, {25, 2}};
  auto it = kModelFields.find(field);
  if (it != kModelFields.end()) return it->second == wire ? std::nullopt : std::optional(found);
  return strict ? std::optional(found) : std::nullopt;
}

// `max_memory` (0: the available memory) bounds the file's size: it is read whole.
Result<std::vector<std::byte>> read_file(const std::string& path, uint64_t max_memory) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return Status::io_error(path + ": cannot open file");
  const std::streamoff size = f.tellg();
  if (size < 0) return Status::io_error(path + ": cannot read file");
  GRAPHI_RETURN_IF_ERROR(
      check_memory(static_cast<uint64_t>(size), max_memory, path + ": reading the file"));
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  f.seekg(0);
  if (size > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), size))
    return Status::io_error(path + ": read error");
  return bytes;
}

}  // namespace

namespace {

// Decodes `bytes` (released once decoded when `owned` is given: a large model's weights then
// exist as file bytes or as decoded tensors, not both) and imports the model.
Result<Graph> import_bytes(std::span<const std::byte> bytes, std::vector<std::byte>* owned,
                           const std::string& source, const ShapeInferencer& shapes,
                           const ImportOptions& options, const onnx::DecodeOptions& decode = {}) {
  // A file that is clearly something else says so first; the decoder's reason follows.
  auto not_model = [&](const std::string& what, const Result<onnx::Model>* m) {
    return Status::invalid_graph(source + ": not an ONNX model (" + what + ")" +
                                 (m && !m->is_ok() ? "; " + m->status().message() : ""));
  };
  if (bytes.empty()) return not_model("empty file", nullptr);
  const std::optional<std::string> other = not_a_model(bytes, false);
  if (options.progress) options.progress(LoadProgress{"parse", 0, bytes.size()});
  Result<onnx::Model> m = onnx::decode_model(bytes, decode);
  if (other) return not_model(*other, &m);
  if (!m.is_ok()) {
    if (std::optional<std::string> odd = not_a_model(bytes, true)) return not_model(*odd, &m);
    return m.status().with_context(source);
  }
  if (m->ir_version == 0 && !m->has_graph)
    return not_model("it decodes as protobuf but has neither ir_version nor graph", nullptr);
  if (options.progress) options.progress(LoadProgress{"parse", bytes.size(), bytes.size()});
  if (owned) std::vector<std::byte>().swap(*owned);
  onnx_import::Importer imp(source, shapes, options, *m);
  return imp.run();
}

}  // namespace

Result<Graph> import_onnx_bytes(std::span<const std::byte> bytes, const std::string& source,
                                const ShapeInferencer& shapes, const ImportOptions& options) {
  return import_bytes(bytes, nullptr, source, shapes, options);
}

Result<Graph> import_onnx_file(const std::string& path, const ShapeInferencer& shapes,
                               const ImportOptions& options) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, read_file(path, options.max_memory));
  // External data is looked up next to the model, and nowhere else (onnx_external_data.h).
  std::string dir;
  try {
    dir = std::filesystem::path(path).parent_path().string();
  } catch (const std::exception&) {
  }
  onnx::ExternalDataReader external(dir, options.max_memory);
  onnx::DecodeOptions decode;
  decode.external = &external;
  return import_bytes(std::span<const std::byte>(bytes), &bytes, path, shapes, options, decode);
}

bool DeclaredSignature::dynamic() const {
  return std::any_of(inputs.begin(), inputs.end(), [](const DeclaredValue& v) {
    return std::find(v.shape.begin(), v.shape.end(), -1) != v.shape.end();
  });
}

Result<DeclaredSignature> read_onnx_signature(const std::string& path,
                                              const std::set<std::string>& override_initializers) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, read_file(path, 0));
  onnx::DecodeOptions decode;
  decode.signature_only = true;
  Result<onnx::Model> m = onnx::decode_model(bytes, decode);
  if (!m.is_ok()) return m.status().with_context(path);
  if (!m->has_graph) return Status::invalid_graph(path + ": not an ONNX model (it has no graph)");
  std::set<std::string> initializers;
  for (const auto& [name, t] : m->graph.initializers) initializers.insert(name);
  auto declared = [&](const onnx::ValueInfo& v, const char* kind,
                      size_t i) -> Result<DeclaredValue> {
    const std::string what =
        path + ": graph " + kind + " " + std::to_string(i) + " '" + v.name + "'";
    DeclaredValue d;
    d.name = v.name;
    d.is_bool = v.elem_type == onnx::kBool;
    d.is_float16 = v.elem_type == onnx::kFloat16;
    d.is_bfloat16 = v.elem_type == onnx::kBfloat16;
    std::optional<DType> dt =
        d.is_bool ? std::optional<DType>(DType::kF32) : onnx_import::graphi_dtype(v.elem_type);
    if (!dt)
      return Status::unsupported(what + " has element type " + onnx::data_type_name(v.elem_type) +
                                 "; graphi inputs and outputs are FLOAT, FLOAT16, BFLOAT16, INT32, "
                                 "INT64 or BOOL");
    d.dtype = *dt;
    d.has_shape = v.has_shape;
    for (const onnx::Dim& dim : v.dims) {
      d.shape.push_back(dim.has_value ? dim.value : -1);
      d.dim_names.push_back(dim.has_value ? "" : dim.param);
    }
    return d;
  };
  DeclaredSignature sig;
  for (size_t i = 0; i < m->graph.inputs.size(); ++i) {
    const onnx::ValueInfo& v = m->graph.inputs[i];
    if (initializers.count(v.name) && !override_initializers.count(v.name)) continue;
    GRAPHI_ASSIGN_OR_RETURN(DeclaredValue d, declared(v, "input", i));
    sig.inputs.push_back(std::move(d));
  }
  for (size_t i = 0; i < m->graph.outputs.size(); ++i) {
    GRAPHI_ASSIGN_OR_RETURN(DeclaredValue d, declared(m->graph.outputs[i], "output", i));
    sig.outputs.push_back(std::move(d));
  }
  return sig;
}

Result<Tensor> read_onnx_tensor_file(const std::string& path, std::string* name) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, read_file(path, 0));
  Result<HostTensor> h = onnx::decode_tensor(bytes, name);
  if (!h.is_ok()) return h.status().with_context(path);
  // BOOL as float32 0/1, graphi's form of a bool (ops/logic_ops.cpp).
  const bool is_bool = h->type == onnx::kBool;
  std::optional<DType> dt = is_bool ? std::optional<DType>(DType::kF32) : graphi_dtype(h->type);
  if (!dt)
    return Status::unsupported(
        path + ": tensor of type " + h->desc() +
        "; graphi tensors are FLOAT, FLOAT16, BFLOAT16 (as float32), INT32 or "
        "INT64 (BOOL as float32 0/1)");
  Tensor t(TensorDesc{*dt, h->shape});
  for (size_t k = 0; k < h->numel(); ++k) {
    if (is_bool)
      t.data_as<float>()[k] = h->i[k] != 0 ? 1.0f : 0.0f;
    else if (*dt == DType::kF32)
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
