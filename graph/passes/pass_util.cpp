#include "graph/passes/pass_util.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace graphi::graph::passes {

std::optional<ConstRef> resolve_const(const Graph& g, ValueId v) {
  ConstRef r;
  for (int depth = 0; depth < 8 && v != kNoId; ++depth) {
    const Value& val = g.value(v);
    if (val.kind == ValueKind::kConstant) {
      if (!val.data) return std::nullopt;
      r.value = v;
      return r;
    }
    if (val.producer == kNoId) return std::nullopt;
    const Node& n = g.node(val.producer);
    if (n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
    if (n.op == "Transpose") {
      if (val.desc.rank() != 2) return std::nullopt;
      auto perm = attr_ints(n.attrs, "", "perm", {1, 0});
      if (!perm.is_ok() || *perm != std::vector<int64_t>{1, 0}) return std::nullopt;
      r.transposed = !r.transposed;
    } else if (n.op != "Identity") {
      return std::nullopt;
    }
    v = n.inputs[0];
  }
  return std::nullopt;
}

bool same_const(const Graph& g, ValueId a, ValueId b) {
  if (a == b) return true;
  const Value &va = g.value(a), &vb = g.value(b);
  if (!va.data || !vb.data) return false;
  if (va.data == vb.data) return true;
  return va.desc == vb.desc && va.data->bytes() == vb.data->bytes() &&
         std::memcmp(va.data->data(), vb.data->data(), va.data->bytes()) == 0;
}

bool const_all_equal(const Graph& g, ValueId v, float x) {
  auto c = resolve_const(g, v);
  if (!c) return false;
  const Tensor& t = *g.value(c->value).data;
  if (t.dtype() != DType::kF32 || t.numel() < 1) return false;
  const float* p = t.data_as<float>();
  return std::all_of(p, p + t.numel(), [&](float e) { return e == x; });
}

std::optional<std::vector<int64_t>> const_ints(const Graph& g, ValueId v) {
  if (v == kNoId) return std::nullopt;
  auto c = resolve_const(g, v);
  if (!c) return std::nullopt;
  const Tensor& t = *g.value(c->value).data;
  if (t.desc().rank() > 1) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kI64)
      out.push_back(t.data_as<int64_t>()[i]);
    else if (t.dtype() == DType::kI32)
      out.push_back(t.data_as<int32_t>()[i]);
    else
      return std::nullopt;
  }
  return out;
}

std::optional<int> node_axis(const Node& n, int rank, int64_t fallback) {
  auto a = attr_int(n.attrs, "", "axis", fallback);
  if (!a.is_ok() || *a < -rank || *a >= rank) return std::nullopt;
  return static_cast<int>(*a < 0 ? *a + rank : *a);
}

std::optional<std::pair<int64_t, int64_t>> slice_range(const Graph& g, const Node& n, int axis) {
  if (n.op != "Slice" || n.inputs.empty() || n.inputs[0] == kNoId || n.outputs.size() != 1)
    return std::nullopt;
  const TensorDesc& in = g.value(n.inputs[0]).desc;
  const int rank = in.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.inputs.size() > 1) {
    auto s = const_ints(g, n.inputs[1]);
    auto e = n.inputs.size() > 2 ? const_ints(g, n.inputs[2]) : std::nullopt;
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (n.inputs.size() > 3 && n.inputs[3] != kNoId) {
      auto a = const_ints(g, n.inputs[3]);
      if (!a) return std::nullopt;
      axes = *a;
    }
    if (n.inputs.size() > 4 && n.inputs[4] != kNoId) {
      auto st = const_ints(g, n.inputs[4]);
      if (!st) return std::nullopt;
      steps = *st;
    }
  } else {
    auto s = attr_ints(n.attrs, "", "starts");
    auto e = attr_ints(n.attrs, "", "ends");
    auto a = attr_ints(n.attrs, "", "axes", {});
    auto st = attr_ints(n.attrs, "", "steps", {});
    if (!s.is_ok() || !e.is_ok() || !a.is_ok() || !st.is_ok()) return std::nullopt;
    starts = *s;
    ends = *e;
    axes = *a;
    steps = *st;
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1 ||
      steps[0] != 1)
    return std::nullopt;
  int64_t ax = axes[0] < 0 ? axes[0] + rank : axes[0];
  if (ax != axis) return std::nullopt;
  const int64_t dim = in.shape[axis];
  int64_t s = starts[0], e = ends[0];
  if (s < 0) s += dim;
  if (e < 0) e += dim;
  s = std::clamp<int64_t>(s, 0, dim);
  e = std::clamp<int64_t>(e, 0, dim);
  if (e <= s) return std::nullopt;
  return std::make_pair(s, e);
}

namespace {

// Rows [s, e) of axis 0 of `whole`, in units of whole's [R, K] view.
RowBlock axis0_block(const Graph& g, ValueId whole, int64_t s, int64_t e) {
  const TensorDesc& d = g.value(whole).desc;
  const int64_t inner = d.numel() / d.shape[0] / d.shape.back();  // rows per index of axis 0
  return {whole, s * inner, (e - s) * inner};
}

// Where value v (rank >= 2, last dim K) sits inside a larger tensor along axis 0.
std::optional<RowBlock> axis0_piece(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.producer == kNoId) return std::nullopt;
  const Node& p = g.node(val.producer);
  if (p.inputs.empty() || p.inputs[0] == kNoId) return std::nullopt;
  const ValueId whole = p.inputs[0];
  const TensorDesc& wd = g.value(whole).desc;
  if (wd.rank() < 2 || wd.shape.back() != val.desc.shape.back() || wd.dtype != val.desc.dtype)
    return std::nullopt;
  if (p.op == "Split") {
    auto axis = node_axis(p, wd.rank());
    if (!axis || *axis != 0) return std::nullopt;
    int64_t s = 0;
    for (ValueId o : p.outputs) {
      const int64_t len = g.value(o).desc.shape[0];
      if (o == v) return axis0_block(g, whole, s, s + len);
      s += len;
    }
    return std::nullopt;
  }
  if (p.op == "Slice") {
    auto r = slice_range(g, p, 0);
    if (!r) return std::nullopt;
    return axis0_block(g, whole, r->first, r->second);
  }
  if (p.op == "Gather" && p.inputs.size() == 2 && p.inputs[1] != kNoId) {
    // x[t]: a constant scalar index along axis 0 (the result drops that axis).
    auto axis = node_axis(p, wd.rank());
    auto idx = const_ints(g, p.inputs[1]);
    if (!axis || *axis != 0 || !idx || idx->size() != 1 || g.value(p.inputs[1]).desc.rank() != 0 ||
        val.desc.rank() != wd.rank() - 1)
      return std::nullopt;
    int64_t t = (*idx)[0];
    if (t < 0) t += wd.shape[0];
    if (t < 0 || t >= wd.shape[0]) return std::nullopt;
    return axis0_block(g, whole, t, t + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<RowBlock> row_block(const Graph& g, ValueId a) {
  const Value& av = g.value(a);
  if (av.desc.rank() != 2) return std::nullopt;
  if (auto r = axis0_piece(g, a)) return r;
  // Reshape (or Squeeze / Flatten-like plumbing) of a [1, B, K] slice of a [T, B, K] tensor.
  if (av.producer == kNoId) return std::nullopt;
  const Node& p = g.node(av.producer);
  if ((p.op != "Reshape" && p.op != "Squeeze") || p.inputs.empty() || p.inputs[0] == kNoId)
    return std::nullopt;
  const TensorDesc& pd = g.value(p.inputs[0]).desc;
  if (pd.numel() != av.desc.numel() || pd.shape.back() != av.desc.shape.back()) return std::nullopt;
  return axis0_piece(g, p.inputs[0]);
}

namespace {

// One float of a constant scalar input i of n, or `dflt` when the input is absent.
std::optional<double> const_scalar(const Graph& g, const Node& n, size_t i, double dflt) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoId) return dflt;
  const Value& v = g.value(n.inputs[i]);
  if (!v.data || v.data->dtype() != DType::kF32 || v.data->numel() != 1) return std::nullopt;
  return static_cast<double>(v.data->data_as<float>()[0]);
}

}  // namespace

std::optional<std::pair<double, double>> clip_bounds(const Graph& g, const Node& n) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::optional<double> lo = const_scalar(g, n, 1, -kInf), hi = const_scalar(g, n, 2, kInf);
  if (n.inputs.size() == 1) {
    auto a = attr_float(n.attrs, n.name, "min", -kInf);
    auto b = attr_float(n.attrs, n.name, "max", kInf);
    if (!a.is_ok() || !b.is_ok()) return std::nullopt;
    lo = *a;
    hi = *b;
  }
  if (!lo || !hi || !(*lo <= *hi)) return std::nullopt;
  return std::pair{*lo, *hi};
}

NodeId sole_reader(const Graph& g, ValueId v) {
  if (g.value(v).is_output || g.consumers(v).size() != 1) return kNoId;
  return g.consumers(v)[0];
}

bool per_channel_constant(const Value& v, const Shape& x) {
  if (!v.data || v.desc.dtype != DType::kF32) return false;
  const Shape& s = v.desc.shape;
  if (x.size() == 5) return s == Shape{1, x[1], 1, 1, x[4]};
  if (x.size() == 4) return s == Shape{1, x[1], 1, 1} || s == Shape{x[1], 1, 1};
  return false;
}

ValueId other_operand(const Node& n, const std::string& op, ValueId known) {
  if (n.op != op || n.inputs.size() != 2 || n.outputs.size() != 1) return kNoId;
  if (n.inputs[0] == known) return n.inputs[1];
  if (n.inputs[1] == known) return n.inputs[0];
  return kNoId;
}

std::optional<double> float_scalar(const Graph& g, ValueId v) {
  if (v == kNoId) return std::nullopt;
  const Value& c = g.value(v);
  if (!c.data || c.desc.dtype != DType::kF32 || c.desc.numel() != 1) return std::nullopt;
  return static_cast<double>(c.data->data_as<float>()[0]);
}

std::optional<std::vector<int64_t>> reduction_axes(const Graph& g, const Node& n) {
  if (n.inputs.size() > 1 && n.inputs[1] != kNoId) return const_ints(g, n.inputs[1]);
  auto a = attr_ints(n.attrs, n.name, "axes", {});
  if (!a.is_ok()) return std::nullopt;
  return *a;
}

std::optional<PadAmounts> pad_amounts(const Graph& g, const Node& pad, int rank) {
  std::optional<std::vector<int64_t>> pads;
  if (pad.inputs.size() > 1 && pad.inputs[1] != kNoId) {
    pads = const_ints(g, pad.inputs[1]);
  } else {
    auto a = attr_ints(pad.attrs, "", "pads");
    if (a.is_ok()) pads = *a;
  }
  if (!pads) return std::nullopt;
  std::vector<int64_t> axes;
  if (pad.inputs.size() > 3 && pad.inputs[3] != kNoId) {
    auto a = const_ints(g, pad.inputs[3]);
    if (!a) return std::nullopt;
    axes = *a;
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads->size() != 2 * axes.size()) return std::nullopt;
  PadAmounts p;
  p.begin.assign(static_cast<size_t>(rank), 0);
  p.end.assign(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t d = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (d < 0 || d >= rank) return std::nullopt;
    p.begin[static_cast<size_t>(d)] = (*pads)[k];
    p.end[static_cast<size_t>(d)] = (*pads)[k + axes.size()];
  }
  return p;
}

bool elementwise_unary_op(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {"Relu",
                                                       "Sigmoid",
                                                       "Tanh",
                                                       "LeakyRelu",
                                                       "Elu",
                                                       "Selu",
                                                       "HardSigmoid",
                                                       "Clip",
                                                       "Softplus",
                                                       "Softsign",
                                                       "Exp",
                                                       "Neg",
                                                       "Abs",
                                                       "Sqrt",
                                                       "Erf",
                                                       "Gelu",
                                                       "QuantizeDequantize"};
  return kOps.count(op) > 0;
}

Tensor i64_tensor(const std::vector<int64_t>& v) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

bool inputs_independent(const Graph& g, std::vector<ValueId> frontier,
                        const std::unordered_set<NodeId>& members) {
  std::unordered_set<NodeId> seen;
  while (!frontier.empty()) {
    const ValueId v = frontier.back();
    frontier.pop_back();
    if (v == kNoId) continue;
    const NodeId p = g.value(v).producer;
    if (p == kNoId || !seen.insert(p).second) continue;
    if (members.count(p)) return false;
    for (ValueId in : g.node(p).inputs) frontier.push_back(in);
  }
  return true;
}

Rewrite::Rewrite(const Graph& g) : g_(g), removed_(g.num_nodes(), false) {
  for (const Value& v : g.values()) names_.insert(v.name);
  for (const Node& n : g.nodes()) names_.insert(n.name);
}

std::string Rewrite::fresh(const std::string& want) {
  std::string name = want;
  for (int k = 1; names_.count(name); ++k) name = want + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

void Rewrite::add_constant(const std::string& name, std::shared_ptr<const Tensor> t) {
  names_.insert(name);
  constants_.emplace_back(name, std::move(t));
}

void Rewrite::add_constant(const std::string& name, Tensor t) {
  add_constant(name, std::make_shared<const Tensor>(std::move(t)));
}

void Rewrite::add_split(const std::string& base, const std::string& input,
                        const std::vector<std::string>& outputs, int64_t axis,
                        const std::vector<int64_t>& sizes) {
  Attributes a;
  a.set("axis", axis);
  a.set("split", sizes);
  add_node("Split", fresh(base + "/split"), {input}, outputs, std::move(a));
}

void Rewrite::add_node(const std::string& op, const std::string& name,
                       const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs, Attributes attrs) {
  names_.insert(name);
  for (const std::string& o : outputs) names_.insert(o);
  nodes_.push_back({op, name, inputs, outputs, std::move(attrs)});
}

Result<Graph> Rewrite::finish(const ShapeInferencer& shapes) const {
  // Values still read: graph outputs, new nodes' inputs, then (walking the kept nodes from the
  // last to the first, so consumers come before producers) the inputs of every live node.
  auto name_of = [&](const std::string& name) {
    std::string n = name;
    for (int k = 0; k < 64; ++k) {  // substitutions may chain
      auto it = subst_.find(n);
      if (it == subst_.end()) break;
      n = it->second;
    }
    return n;
  };
  std::unordered_set<std::string> used;
  for (ValueId v : g_.outputs()) used.insert(g_.value(v).name);
  for (const NewNode& n : nodes_)
    for (const std::string& in : n.inputs) used.insert(name_of(in));
  std::vector<bool> keep(g_.num_nodes(), false);
  for (size_t i = g_.num_nodes(); i-- > 0;) {
    if (removed_[i]) continue;
    const Node& n = g_.node(static_cast<NodeId>(i));
    bool live = true, was_dead = true;
    for (ValueId o : n.outputs) {
      was_dead = was_dead && g_.consumers(o).empty() && !g_.value(o).is_output;
    }
    if (!was_dead) {
      live = false;
      for (ValueId o : n.outputs) live = live || used.count(g_.value(o).name);
    }
    if (!live) continue;
    keep[i] = true;
    for (ValueId in : n.inputs)
      if (in != kNoId) used.insert(name_of(g_.value(in).name));
  }
  GraphBuilder b(g_.source());
  for (ValueId id = 0; id < g_.num_values(); ++id) {
    const Value& v = g_.value(id);
    if (v.kind == ValueKind::kInput) b.add_input(v.name, v.desc);
    if (v.kind == ValueKind::kConstant && used.count(v.name)) b.add_constant(v.name, v.data);
  }
  for (const auto& [name, t] : constants_) b.add_constant(name, t);
  for (NodeId id = 0; id < g_.num_nodes(); ++id) {
    if (!keep[id]) continue;
    const Node& n = g_.node(id);
    std::vector<std::string> ins, outs;
    for (ValueId v : n.inputs)
      ins.push_back(v == kNoId ? std::string() : name_of(g_.value(v).name));
    for (ValueId v : n.outputs) outs.push_back(g_.value(v).name);
    b.add_node(n.op, n.name, ins, outs, n.attrs);
  }
  for (const NewNode& n : nodes_) {
    std::vector<std::string> ins;
    for (const std::string& in : n.inputs) ins.push_back(in.empty() ? in : name_of(in));
    b.add_node(n.op, n.name, ins, n.outputs, n.attrs);
  }
  for (ValueId v : g_.outputs()) b.add_output(g_.value(v).name);
  for (const auto& [k, v] : g_.metadata()) b.set_metadata(k, v);
  return b.finish(shapes);
}

}  // namespace graphi::graph::passes
