#include "graph/passes/transpose_sink.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

using Perm = std::vector<int64_t>;

// A value held as base transposed by perm (y.shape[k] = base.shape[perm[k]]).
struct Held {
  std::string base;
  Perm perm;
};

bool is_identity(const Perm& p) {
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != static_cast<int64_t>(k)) return false;
  return true;
}

Perm inverse(const Perm& p) {
  Perm inv(p.size());
  for (size_t k = 0; k < p.size(); ++k) inv[static_cast<size_t>(p[k])] = static_cast<int64_t>(k);
  return inv;
}

// The Transpose's permutation (reversed dims when the attribute is absent), or nullopt when it
// is not one of `rank` dims.
std::optional<Perm> transpose_perm(const Node& n, size_t rank) {
  Perm p(rank);
  if (!n.attrs.has("perm")) {
    for (size_t k = 0; k < rank; ++k) p[k] = static_cast<int64_t>(rank - 1 - k);
    return p;
  }
  auto a = attr_ints(n.attrs, n.name, "perm");
  if (!a.is_ok() || a->size() != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  for (int64_t v : *a) {
    if (v < 0 || v >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(v)])
      return std::nullopt;
    seen[static_cast<size_t>(v)] = true;
  }
  return *a;
}

// t (rank <= perm's, broadcast from the right) as the operand that, transposed by perm, gives
// t: transpose(t padded to full rank, inverse(perm)).
Tensor untransposed(const Tensor& t, const Perm& perm) {
  const size_t r = perm.size();
  Shape full(r, 1);
  std::copy(t.shape().begin(), t.shape().end(),
            full.end() - static_cast<ptrdiff_t>(t.shape().size()));
  const Perm inv = inverse(perm);
  Shape out(r);
  for (size_t j = 0; j < r; ++j) out[j] = full[static_cast<size_t>(inv[j])];
  Tensor o(TensorDesc{t.dtype(), out});
  const size_t es = dtype_size(t.dtype());
  // Strides of `full` (row-major); out[j] runs along full's axis inv[j].
  std::vector<int64_t> stride(r, 1);
  for (size_t k = r - 1; k-- > 0;) stride[k] = stride[k + 1] * full[k + 1];
  std::vector<int64_t> idx(r, 0);
  const auto* src = static_cast<const unsigned char*>(t.data());
  auto* dst = static_cast<unsigned char*>(o.data());
  for (int64_t e = 0; e < o.numel(); ++e) {
    int64_t off = 0;
    for (size_t j = 0; j < r; ++j) off += idx[j] * stride[static_cast<size_t>(inv[j])];
    std::memcpy(dst + static_cast<size_t>(e) * es, src + static_cast<size_t>(off) * es, es);
    for (size_t j = r; j-- > 0;) {
      if (++idx[j] < out[j]) break;
      idx[j] = 0;
    }
  }
  return o;
}

bool binary_op(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {"Add", "Sub", "Mul", "Div",
                                                       "Max", "Min", "Pow", "PRelu"};
  return kOps.count(op) > 0;
}

bool reduce_op(const std::string& op) {
  return op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin";
}

}  // namespace

Result<TransposeSinkResult> sink_transposes(const Graph& g, const ShapeInferencer& shapes) {
  TransposeSinkResult result;
  for (const Node& n : g.nodes()) result.transposes += n.op == "Transpose";
  if (result.transposes == 0) {
    result.graph = g;
    return result;
  }
  Rewrite rw(g);
  std::unordered_map<ValueId, Held> held;
  std::unordered_set<ValueId> made;  // held values a Transpose was emitted for
  std::unordered_set<std::string> node_names;
  for (const Node& n : g.nodes()) node_names.insert(n.name);
  auto node_name = [&](const std::string& want) {
    std::string s = want;
    for (int k = 1; node_names.count(s); ++k) s = want + "_" + std::to_string(k);
    node_names.insert(s);
    return s;
  };
  int emitted = 0, held_transposes = 0;  // Transposes made, and removed into held values
  // Makes held value v under its own name (a Transpose of its base, or the base itself).
  auto make = [&](ValueId v) {
    if (!held.count(v) || made.count(v)) return;
    made.insert(v);
    const Held& h = held.at(v);
    const std::string& name = g.value(v).name;
    if (is_identity(h.perm) && !g.value(v).is_output) {
      rw.replace_uses(v, h.base);
      return;
    }
    Attributes a;
    if (is_identity(h.perm)) {
      rw.add_node("Identity", node_name(name + "/same"), {h.base}, {name});
      return;
    }
    a.set("perm", h.perm);
    rw.add_node("Transpose", node_name(name + "/transposed"), {h.base}, {name}, a);
    ++emitted;
  };
  auto is_scalar = [&](ValueId v) { return g.value(v).desc.numel() == 1; };

  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    const bool one_out = n.outputs.size() == 1 && n.outputs[0] != kNoId;
    const ValueId y = one_out ? n.outputs[0] : kNoId;
    // A Transpose: composed with a held input, else held itself.
    if (n.op == "Transpose" && one_out && n.inputs.size() == 1 && n.inputs[0] != kNoId) {
      const ValueId x = n.inputs[0];
      auto p = transpose_perm(n, g.value(x).desc.shape.size());
      if (p) {
        Held h{g.value(x).name, *p};
        if (auto it = held.find(x); it != held.end()) {
          h.base = it->second.base;
          for (size_t k = 0; k < p->size(); ++k)
            h.perm[k] = it->second.perm[static_cast<size_t>((*p)[k])];
        }
        rw.remove(id);
        held[y] = std::move(h);
        ++held_transposes;
        continue;
      }
    }
    // An op that commutes with the permutation of its held input(s).
    std::optional<Perm> perm;
    bool ok = one_out && !n.inputs.empty();
    for (ValueId v : n.inputs) {
      auto it = v == kNoId ? held.end() : held.find(v);
      if (it == held.end()) continue;
      if (perm && *perm != it->second.perm) ok = false;
      perm = it->second.perm;
    }
    ok = ok && perm && g.value(y).desc.shape.size() == perm->size();
    std::vector<std::string> ins;
    Attributes attrs = n.attrs;
    if (ok && elementwise_unary_op(n.op)) {
      ok = held.count(n.inputs[0]) > 0;
      for (size_t k = 1; ok && k < n.inputs.size(); ++k)
        ok = n.inputs[k] == kNoId || is_scalar(n.inputs[k]);
    } else if (ok && binary_op(n.op) && n.inputs.size() == 2) {
      for (ValueId v : n.inputs) {
        if (held.count(v) || is_scalar(v)) continue;
        const Value& c = g.value(v);
        ok = ok && c.kind == ValueKind::kConstant && c.data && c.desc.shape.size() <= perm->size();
      }
    } else if (ok && reduce_op(n.op) && !n.inputs.empty() && n.inputs.size() <= 2 &&
               held.count(n.inputs[0])) {
      // The axes: the attribute, or a constant input 1 (opset 18's reductions).
      const bool axes_input = n.inputs.size() == 2 && n.inputs[1] != kNoId;
      auto keep = attr_int(n.attrs, n.name, "keepdims", 1);
      const auto axes = reduction_axes(g, n);
      ok = keep.is_ok() && *keep == 1 && axes.has_value();
      if (ok && !axes->empty()) {
        std::vector<int64_t> moved;
        const int64_t r = static_cast<int64_t>(perm->size());
        for (int64_t a : *axes) {
          const int64_t k = a < 0 ? a + r : a;
          if (k < 0 || k >= r)
            ok = false;
          else
            moved.push_back((*perm)[static_cast<size_t>(k)]);
        }
        std::sort(moved.begin(), moved.end());
        if (axes_input) {
          const std::string c = rw.fresh(n.name + "/axes");
          rw.add_constant(c, i64_tensor(moved));
          ins = {held.at(n.inputs[0]).base, c};
        } else {
          attrs.set("axes", moved);
        }
      } else if (ok && axes_input) {
        ok = false;  // opset 18's empty axes input: all axes or none (noop_with_empty_axes)
      }
    } else if (ok && n.op == "Pad" && n.inputs.size() >= 2 && n.inputs.size() <= 3 &&
               held.count(n.inputs[0]) && n.inputs[1] != kNoId) {
      auto pads = const_ints(g, n.inputs[1]);
      const size_t r = perm->size();
      ok = pads && pads->size() == 2 * r &&
           (n.inputs.size() < 3 || n.inputs[2] == kNoId || is_scalar(n.inputs[2]));
      if (ok) {
        std::vector<int64_t> moved(2 * r);
        for (size_t k = 0; k < r; ++k) {
          moved[static_cast<size_t>((*perm)[k])] = (*pads)[k];
          moved[static_cast<size_t>((*perm)[k]) + r] = (*pads)[k + r];
        }
        const std::string c = rw.fresh(n.name + "/pads");
        rw.add_constant(c, i64_tensor(moved));
        ins = {held.at(n.inputs[0]).base, c};
        if (n.inputs.size() == 3 && n.inputs[2] != kNoId) ins.push_back(g.value(n.inputs[2]).name);
      }
    } else {
      ok = false;
    }
    if (ok) {
      if (ins.empty()) {
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          const ValueId v = n.inputs[k];
          if (v == kNoId) {
            ins.push_back("");
          } else if (auto it = held.find(v); it != held.end()) {
            ins.push_back(it->second.base);
          } else if (is_scalar(v) || !binary_op(n.op)) {
            ins.push_back(g.value(v).name);
          } else {  // a constant operand, permuted to meet the untransposed value
            const std::string c = rw.fresh(g.value(v).name + "/untransposed");
            rw.add_constant(c, untransposed(*g.value(v).data, *perm));
            ins.push_back(c);
          }
        }
      }
      const std::string base = rw.fresh(g.value(y).name + "/untransposed");
      rw.remove(id);
      rw.add_node(n.op, n.name, ins, {base}, std::move(attrs));
      held[y] = Held{base, *perm};
      continue;
    }
    // Any other reader gets its held inputs made.
    for (ValueId v : n.inputs)
      if (v != kNoId) make(v);
  }
  for (ValueId v : g.outputs()) make(v);
  if (emitted >= held_transposes) {  // nothing cancelled
    result.graph = g;
    return result;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  int after = 0;
  for (const Node& n : result.graph.nodes()) after += n.op == "Transpose";
  result.removed = result.transposes - after;
  return result;
}

}  // namespace graphi::graph::passes
