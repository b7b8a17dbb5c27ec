#include "graph/passes/conv_reparam.h"

#include <algorithm>
#include <numeric>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

// A merged window may hold at most this many times the members' taps together (identity: one).
constexpr int64_t kMaxTapGrowth = 2;

// The geometry a Conv brings: its input, strides, pads, group and weights.
struct ConvGeom {
  ValueId x = kNoId, w = kNoId, b = kNoId;
  std::vector<int64_t> strides, pads;
  int64_t group = 1;
};

// One summand of the tree: `value` as the Add reads it, through an optional Mul by `scale`
// (kNoId: 1) of `inner`, which a Conv node produces (`conv`, parsed once into `geom`) or which
// is the branch's input.
struct Summand {
  ValueId value = kNoId, inner = kNoId, scale = kNoId;
  NodeId mul = kNoId, conv = kNoId;
  ConvGeom geom;
};

bool const_f32(const Value& v) { return v.data != nullptr && v.desc.dtype == DType::kF32; }

// One value per channel of an output of shape s (axis 1), as broadcasting reads constant c:
// a scalar, or c's dims right-aligned with s all 1 but the channel one. Empty: not so.
std::vector<float> per_channel(const Value& c, const Shape& s) {
  if (!const_f32(c) || c.desc.rank() > static_cast<int>(s.size())) return {};
  const int64_t m = s[1];
  const float* p = c.data->data_as<float>();
  if (c.desc.numel() == 1) return std::vector<float>(static_cast<size_t>(m), p[0]);
  const size_t lead = s.size() - c.desc.shape.size();
  for (size_t i = 0; i < c.desc.shape.size(); ++i)
    if (c.desc.shape[i] != (i + lead == 1 ? m : 1)) return {};
  if (lead > 1) return {};  // the channel axis is not among c's dims
  return std::vector<float>(p, p + m);
}

std::optional<ConvGeom> conv_geom(const Graph& g, const Node& n, int rank) {
  if (n.op != "Conv" || n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.size() != 1 ||
      n.inputs[0] == kNoId || n.inputs[1] == kNoId)
    return std::nullopt;
  const int spatial = rank - 2;
  auto auto_pad = attr_string(n.attrs, n.name, "auto_pad", "NOTSET");
  auto pads = attr_ints(n.attrs, n.name, "pads", std::vector<int64_t>(2 * spatial, 0));
  auto strides = attr_ints(n.attrs, n.name, "strides", std::vector<int64_t>(spatial, 1));
  auto dil = attr_ints(n.attrs, n.name, "dilations", std::vector<int64_t>(spatial, 1));
  auto group = attr_int(n.attrs, n.name, "group", 1);
  if (!auto_pad.is_ok() || *auto_pad != "NOTSET" || !pads.is_ok() ||
      pads->size() != static_cast<size_t>(2 * spatial) || !strides.is_ok() ||
      strides->size() != static_cast<size_t>(spatial) || !dil.is_ok() || !group.is_ok() ||
      std::any_of(dil->begin(), dil->end(), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  const Value& w = g.value(n.inputs[1]);
  if (!const_f32(w) || w.desc.rank() != rank || g.value(n.inputs[0]).desc.rank() != rank ||
      g.value(n.inputs[0]).desc.dtype != DType::kF32)
    return std::nullopt;
  ConvGeom c;
  c.x = n.inputs[0];
  c.w = n.inputs[1];
  if (n.inputs.size() == 3 && n.inputs[2] != kNoId) {
    c.b = n.inputs[2];
    const Value& b = g.value(c.b);
    if (!const_f32(b) || b.desc.rank() != 1 || b.desc.shape[0] != w.desc.shape[0])
      return std::nullopt;
  }
  c.strides = *strides;
  c.pads = *pads;
  c.group = *group;
  return c;
}

// v is read by nothing but `readers` and is no graph output.
bool read_only_by(const Graph& g, ValueId v, const std::vector<NodeId>& readers) {
  if (g.value(v).is_output) return false;
  for (NodeId c : g.consumers(v))
    if (std::find(readers.begin(), readers.end(), c) == readers.end()) return false;
  return true;
}

class Reparam {
 public:
  Reparam(const Graph& g, Rewrite& rw) : g_(g), rw_(rw) {}

  // Rewrites the tree of Adds rooted at `root` when it sums mergeable branches; its Add nodes
  // are added to `taken` then.
  bool try_root(NodeId root, std::vector<bool>& taken, int* branches) {
    const Node& r = g_.node(root);
    shape_ = g_.value(r.outputs[0]).desc.shape;
    const int rank = static_cast<int>(shape_.size());
    if (rank < 3 || g_.value(r.outputs[0]).desc.dtype != DType::kF32) return false;
    adds_.clear();
    leaves_.clear();
    expand(root, taken);
    // Summands and constants.
    std::vector<Summand> parts, others;
    std::vector<double> bias(static_cast<size_t>(shape_[1]), 0.0);
    for (ValueId v : leaves_) {
      if (g_.value(v).data) {
        std::vector<float> c = per_channel(g_.value(v), shape_);
        if (!c.empty()) {
          for (size_t m = 0; m < c.size(); ++m) bias[m] += c[m];
          continue;
        }
      }
      parts.push_back(summand(v, rank));
    }
    // The input with the most convolutions among the summands.
    ValueId x = kNoId;
    size_t best = 0;
    for (const Summand& s : parts) {
      if (s.conv == kNoId) continue;
      const ValueId sx = g_.node(s.conv).inputs[0];
      const size_t n =
          static_cast<size_t>(std::count_if(parts.begin(), parts.end(), [&](const Summand& o) {
            return o.conv != kNoId && g_.node(o.conv).inputs[0] == sx;
          }));
      if (n > best) best = n, x = sx;
    }
    if (x == kNoId) return false;
    // Convs of x with the first one's strides, group and weight shape but the kernel.
    std::vector<Summand> convs, idents;
    std::optional<ConvGeom> ref;
    for (const Summand& s : parts) {
      const ConvGeom* c = s.conv != kNoId ? &s.geom : nullptr;
      if (c && c->x == x) {
        const Shape& ws = g_.value(c->w).desc.shape;
        if (!ref ||
            (c->strides == ref->strides && c->group == ref->group &&
             ws[0] == g_.value(ref->w).desc.shape[0] && ws[1] == g_.value(ref->w).desc.shape[1])) {
          if (!ref) ref = *c;
          convs.push_back(s);
          continue;
        }
      }
      if (s.conv == kNoId && s.inner == x) {
        idents.push_back(s);
        continue;
      }
      others.push_back(s);
    }
    const Shape& xs = g_.value(x).desc.shape;
    const Shape& ws0 = g_.value(ref->w).desc.shape;
    const int spatial = rank - 2;
    const bool unit_stride =
        std::all_of(ref->strides.begin(), ref->strides.end(), [](int64_t s) { return s == 1; });
    if (!idents.empty() && (!unit_stride || xs != shape_ || ws0[0] != xs[1])) {
      for (const Summand& s : idents) others.push_back(s);
      idents.clear();
    }
    if (convs.size() + idents.size() < 2) return false;
    // The merged window per spatial dim: begin pad P = the largest member pad, K covering every
    // member's taps at offset P - pad.
    std::vector<int64_t> lo(static_cast<size_t>(spatial), 0), hi(static_cast<size_t>(spatial));
    for (int d = 0; d < spatial; ++d) hi[d] = idents.empty() ? INT64_MIN : 0;
    int64_t member_taps = static_cast<int64_t>(idents.size());
    for (const Summand& s : convs) {
      const ConvGeom& c = s.geom;
      const Shape& ws = g_.value(c.w).desc.shape;
      int64_t taps = 1;
      for (int d = 0; d < spatial; ++d) {
        lo[d] = std::max(lo[d], c.pads[d]);
        hi[d] = std::max(hi[d], ws[d + 2] - 1 - c.pads[d]);
        taps *= ws[d + 2];
      }
      member_taps += taps;
    }
    Shape ks(static_cast<size_t>(spatial));
    std::vector<int64_t> pads(static_cast<size_t>(2 * spatial));
    int64_t merged_taps = 1;
    for (int d = 0; d < spatial; ++d) {
      ks[d] = lo[d] + hi[d] + 1;
      if (ks[d] < 1) return false;
      merged_taps *= ks[d];
      const int64_t in = xs[d + 2], out = shape_[d + 2], st = ref->strides[d];
      pads[d] = lo[d];
      pads[d + spatial] = std::max<int64_t>(0, (out - 1) * st + ks[d] - in - lo[d]);
      if ((in + pads[d] + pads[d + spatial] - ks[d]) / st + 1 != out) return false;
    }
    if (merged_taps > kMaxTapGrowth * member_taps) return false;

    // The merged weights [M, C/g, K...] and bias.
    const int64_t m_out = ws0[0], cg = ws0[1];
    Shape wshape{m_out, cg};
    wshape.insert(wshape.end(), ks.begin(), ks.end());
    Tensor w(TensorDesc{DType::kF32, wshape});
    float* wp = w.data_as<float>();
    std::vector<int64_t> kstride(static_cast<size_t>(spatial), 1);  // row-major strides of ks
    for (int d = spatial - 2; d >= 0; --d) kstride[d] = kstride[d + 1] * ks[d + 1];
    for (const Summand& s : convs) {
      const ConvGeom& c = s.geom;
      const Shape& ws = g_.value(c.w).desc.shape;
      const std::vector<float> scale = scale_of(s);
      const float* sp = g_.value(c.w).data->data_as<float>();
      int64_t taps = 1;
      for (int d = 0; d < spatial; ++d) taps *= ws[d + 2];
      for (int64_t t = 0; t < taps; ++t) {
        int64_t dst = 0, rest = t;  // tap t of the member at its offset in the merged window
        for (int d = spatial - 1; d >= 0; --d) {
          dst += (rest % ws[d + 2] + lo[d] - c.pads[d]) * kstride[d];
          rest /= ws[d + 2];
        }
        for (int64_t m = 0; m < m_out; ++m)
          for (int64_t ci = 0; ci < cg; ++ci)
            wp[(m * cg + ci) * merged_taps + dst] += scale[m] * sp[(m * cg + ci) * taps + t];
      }
      if (c.b != kNoId) {
        const float* bp = g_.value(c.b).data->data_as<float>();
        for (int64_t m = 0; m < m_out; ++m) bias[m] += static_cast<double>(scale[m]) * bp[m];
      }
    }
    int64_t centre = 0;
    for (int d = 0; d < spatial; ++d) centre += lo[d] * kstride[d];
    for (const Summand& s : idents) {
      const std::vector<float> scale = scale_of(s);
      for (int64_t m = 0; m < m_out; ++m) wp[(m * cg + m % cg) * merged_taps + centre] += scale[m];
    }
    Tensor b(TensorDesc{DType::kF32, {m_out}});
    for (int64_t m = 0; m < m_out; ++m) b.data_as<float>()[m] = static_cast<float>(bias[m]);

    // The new Conv, then the Adds of what did not merge; the root's value keeps its name.
    Attributes a = g_.node(convs[0].conv).attrs;
    a.set("kernel_shape", std::vector<int64_t>(ks.begin(), ks.end()));
    a.set("pads", pads);
    a.set("dilations", std::vector<int64_t>(static_cast<size_t>(spatial), 1));
    a.set("strides", ref->strides);
    a.set("group", ref->group);
    const std::string base = r.name.empty() ? "reparam" : r.name;
    const std::string wn = rw_.fresh(base + "/reparam_W"), bn = rw_.fresh(base + "/reparam_B");
    rw_.add_constant(wn, std::move(w));
    rw_.add_constant(bn, std::move(b));
    const std::string out = g_.value(r.outputs[0]).name;
    std::string acc = others.empty() ? out : rw_.fresh(base + "/reparam");
    rw_.add_node("Conv", rw_.fresh(base + "/reparam_conv"), {g_.value(x).name, wn, bn}, {acc}, a);
    for (size_t i = 0; i < others.size(); ++i) {
      const std::string next = i + 1 == others.size() ? out : rw_.fresh(base + "/reparam_sum");
      rw_.add_node("Add", rw_.fresh(base + "/reparam_add"), {acc, g_.value(others[i].value).name},
                   {next});
      acc = next;
    }
    for (NodeId id : adds_) {
      rw_.remove(id);
      taken[id] = true;
    }
    for (const std::vector<Summand>* list : {&convs, &idents})
      for (const Summand& s : *list) {
        if (s.mul != kNoId) rw_.remove(s.mul);
        if (s.conv != kNoId) rw_.remove(s.conv);
      }
    *branches += static_cast<int>(convs.size() + idents.size());
    return true;
  }

 private:
  // The Adds under `id` whose sums only the tree reads, and the leaves they sum.
  void expand(NodeId id, const std::vector<bool>& taken) {
    adds_.push_back(id);
    const Node& n = g_.node(id);
    for (ValueId v : n.inputs) {
      const Value& val = g_.value(v);
      const NodeId p = val.producer;
      if (p != kNoId && !taken[p] && is_add(g_.node(p)) && !val.is_output &&
          g_.consumers(v).size() == 1 && n.inputs[0] != n.inputs[1] && val.desc.shape == shape_)
        expand(p, taken);
      else
        leaves_.push_back(v);
    }
  }

  static bool is_add(const Node& n) {
    return n.op == "Add" && n.inputs.size() == 2 && n.outputs.size() == 1 && n.inputs[0] != kNoId &&
           n.inputs[1] != kNoId;
  }

  // A summand: v as it is, or v = Mul(inner, per-channel constant) read only by the tree; inner
  // from a Conv read only by that (or by the tree).
  Summand summand(ValueId v, int rank) const {
    Summand s;
    s.value = s.inner = v;
    if (g_.value(v).desc.shape != shape_) return s;
    const bool once = std::count(leaves_.begin(), leaves_.end(), v) == 1;
    const NodeId p = g_.value(v).producer;
    if (once && p != kNoId && g_.node(p).op == "Mul" && g_.node(p).inputs.size() == 2 &&
        read_only_by(g_, v, adds_)) {
      const Node& mul = g_.node(p);
      for (int k = 0; k < 2; ++k) {
        const ValueId c = mul.inputs[k], u = mul.inputs[1 - k];
        if (c == kNoId || u == kNoId || g_.value(u).data || g_.value(u).desc.shape != shape_ ||
            per_channel(g_.value(c), shape_).empty())
          continue;
        s.mul = p;
        s.scale = c;
        s.inner = u;
        break;
      }
    }
    const NodeId q = g_.value(s.inner).producer;
    if (q == kNoId || (s.mul == kNoId && !once) ||
        !read_only_by(g_, s.inner, s.mul != kNoId ? std::vector<NodeId>{s.mul} : adds_))
      return s;
    if (std::optional<ConvGeom> c = conv_geom(g_, g_.node(q), rank)) {
      s.conv = q;
      s.geom = std::move(*c);
    }
    return s;
  }

  std::vector<float> scale_of(const Summand& s) const {
    if (s.scale == kNoId) return std::vector<float>(static_cast<size_t>(shape_[1]), 1.0f);
    return per_channel(g_.value(s.scale), shape_);
  }

  const Graph& g_;
  Rewrite& rw_;
  Shape shape_;
  std::vector<NodeId> adds_;
  std::vector<ValueId> leaves_;
};

}  // namespace

Result<ConvReparamResult> reparameterize_conv_branches(const Graph& g,
                                                       const ShapeInferencer& shapes) {
  ConvReparamResult result;
  Rewrite rw(g);
  Reparam rp(g, rw);
  std::vector<bool> taken(g.num_nodes(), false);
  // Roots first: a consumer has a larger id than its producers, so the widest tree is tried
  // before the sums inside it.
  for (NodeId id = g.num_nodes(); id-- > 0;) {
    const Node& n = g.node(id);
    if (taken[id] || n.op != "Add" || n.inputs.size() != 2 || n.outputs.size() != 1 ||
        n.inputs[0] == kNoId || n.inputs[1] == kNoId)
      continue;
    if (rp.try_root(id, taken, &result.branches)) ++result.merged;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.merged, shapes));
  return result;
}

}  // namespace graphi::graph::passes
