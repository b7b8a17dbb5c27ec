#include "graph/passes/rnn_fusion.h"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

// ---------------------------------------------------------------------------------------------
// Affine expressions: a [B, N] value written as  sum_k left_k M_k + sum bias_j, where every M_k
// is a block of a constant matrix and every bias a block of a constant vector. This is what the
// gate pre-activations of any LSTM/GRU cell are, however they were written down: one GEMM per
// gate, one GEMM for all gates followed by Split or Slices, [x, h] concatenated, Gemm with
// transB and a bias input, MatMul by a transposed constant, biases added in any association.

// Element (k, j) is T'[r0 + k][c0 + j] with T' = trans ? T^T : T, T a 2-D f32 constant.
struct MatView {
  ValueId t = kNoId;
  bool trans = false;
  int64_t r0 = 0, c0 = 0, rows = 0, cols = 0;
  float at(const Graph& g, int64_t k, int64_t j) const {
    const Tensor& d = *g.value(t).data;
    const int64_t n = d.desc().shape[1];
    return trans ? d.data_as<float>()[(c0 + j) * n + r0 + k]
                 : d.data_as<float>()[(r0 + k) * n + c0 + j];
  }
};
// Element j is sign * t[c0 + j], t an f32 constant of shape [N] or [1, N]; or t's one element
// for every j when `scalar` (a constant added to a pre-activation: TensorFlow's forget_bias).
// sign is -1 for a constant subtracted.
struct BiasView {
  ValueId t = kNoId;
  int64_t c0 = 0;
  bool scalar = false;
  float sign = 1.0f;
  float at(const Graph& g, int64_t j) const {
    return sign * g.value(t).data->data_as<float>()[scalar ? 0 : c0 + j];
  }
};
struct Term {
  ValueId left = kNoId;
  MatView w;
};
struct Affine {
  std::vector<Term> terms;
  std::vector<BiasView> biases;
  std::vector<ValueId> others;  // summands that are not affine (the caller decides)
  std::vector<NodeId> nodes;    // the nodes that compute it
  int64_t cols = 0;

  // Adds `o`'s summands to this expression.
  void add(const Affine& o) {
    terms.insert(terms.end(), o.terms.begin(), o.terms.end());
    biases.insert(biases.end(), o.biases.begin(), o.biases.end());
    others.insert(others.end(), o.others.begin(), o.others.end());
    nodes.insert(nodes.end(), o.nodes.begin(), o.nodes.end());
  }
  const Term* term(ValueId left) const {
    for (const Term& t : terms)
      if (t.left == left) return &t;
    return nullptr;
  }
  // One term per left operand, nothing else.
  bool pure() const {
    if (!others.empty() || terms.empty()) return false;
    for (size_t i = 0; i < terms.size(); ++i)
      for (size_t j = i + 1; j < terms.size(); ++j)
        if (terms[i].left == terms[j].left) return false;
    return true;
  }
};

bool same_view(const Graph& g, const MatView& a, const MatView& b) {
  return a.trans == b.trans && a.r0 == b.r0 && a.c0 == b.c0 && a.rows == b.rows &&
         a.cols == b.cols && same_const(g, a.t, b.t);
}
bool same_biases(const Graph& g, const std::vector<BiasView>& a, const std::vector<BiasView>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].c0 != b[i].c0 || a[i].scalar != b[i].scalar || a[i].sign != b[i].sign ||
        !same_const(g, a[i].t, b[i].t))
      return false;
  return true;
}
// Same weights for `left_a` in `a` and `left_b` in `b` (both absent counts as the same).
bool same_term(const Graph& g, const Affine& a, ValueId left_a, const Affine& b, ValueId left_b) {
  const Term *ta = a.term(left_a), *tb = b.term(left_b);
  if (!ta || !tb) return !ta && !tb;
  return same_view(g, ta->w, tb->w);
}

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g) {}

  // Equal constants count as one value (an export may repeat the zero initial state per use).
  ValueId canon(ValueId v) const {
    const Value& val = g_.value(v);
    if (val.kind != ValueKind::kConstant || !val.data) return v;
    auto it = canon_.find(v);
    if (it != canon_.end()) return it->second;
    ValueId c = v;
    for (ValueId u = 0; u < v && c == v; ++u)
      if (g_.value(u).kind == ValueKind::kConstant && g_.value(u).desc == val.desc &&
          same_const(g_, u, v))
        c = canon(u);
    canon_[v] = c;
    return c;
  }

  const Node* producer(ValueId v) const {
    const Value& val = g_.value(v);
    return val.producer == kNoId ? nullptr : &g_.node(val.producer);
  }
  bool simple(const Node& n, const char* op, size_t ins) const {
    return n.op == op && n.inputs.size() == ins && n.outputs.size() == 1 &&
           std::none_of(n.inputs.begin(), n.inputs.end(), [](ValueId v) { return v == kNoId; });
  }
  bool is_f32(ValueId v, const Shape& shape) const {
    const TensorDesc& d = g_.value(v).desc;
    return d.dtype == DType::kF32 && d.shape == shape;
  }
  const Node* op_of(ValueId v, const char* op, size_t ins) const {
    const Node* p = producer(v);
    return p && simple(*p, op, ins) ? p : nullptr;
  }

  std::optional<BiasView> bias_of(ValueId v, int64_t n) const {
    auto c = resolve_const(g_, v);
    if (!c || c->transposed) return std::nullopt;
    const TensorDesc& d = g_.value(c->value).desc;
    if (d.dtype != DType::kF32 || (d.shape != Shape{n} && d.shape != Shape{1, n}))
      return std::nullopt;
    return BiasView{c->value, 0};
  }
  // A one-element f32 constant (shape [], [1] or [1, 1]) added to every column.
  std::optional<BiasView> scalar_bias_of(ValueId v) const {
    auto c = resolve_const(g_, v);
    if (!c) return std::nullopt;
    const TensorDesc& d = g_.value(c->value).desc;
    if (d.dtype != DType::kF32 || d.numel() != 1 || d.rank() > 2) return std::nullopt;
    return BiasView{c->value, 0, true};
  }
  // A constant summand of an Add producing a [B, n] pre-activation.
  std::optional<BiasView> addend_bias_of(ValueId v, int64_t n) const {
    auto b = bias_of(v, n);
    return b ? b : scalar_bias_of(v);
  }

  static bool shift(Affine& a, int64_t off, int64_t cols) {
    if (!a.others.empty()) return false;
    for (Term& t : a.terms) {
      t.w.c0 += off;
      t.w.cols = cols;
    }
    for (BiasView& b : a.biases)
      if (!b.scalar) b.c0 += off;
    a.cols = cols;
    return true;
  }

  // Columns [off, off + width) of v along axis 1 when v is a Split or Slice output; the node
  // and the sliced value.
  struct Piece {
    NodeId node = kNoId;
    ValueId whole = kNoId;
    int64_t off = 0;
  };
  std::optional<Piece> piece_of(ValueId v) const {
    const Node* p = producer(v);
    if (!p || p->inputs.empty() || p->inputs[0] == kNoId) return std::nullopt;
    const TensorDesc& in = g_.value(p->inputs[0]).desc;
    if (in.rank() != 2) return std::nullopt;
    Piece pc{g_.value(v).producer, p->inputs[0], 0};
    if (p->op == "Split") {
      auto axis = node_axis(*p, 2);
      if (!axis || *axis != 1) return std::nullopt;
      for (ValueId o : p->outputs) {
        if (o == v) return pc;
        pc.off += g_.value(o).desc.shape[1];
      }
      return std::nullopt;
    }
    if (p->op == "Slice") {
      auto r = slice_range(g_, *p, 1);
      if (!r) return std::nullopt;
      pc.off = r->first;
      return pc;
    }
    return std::nullopt;
  }

  // Bounds the work of one match attempt (Add trees over shared values could otherwise be
  // walked an exponential number of times).
  void start_match() const { steps_ = 0; }

  std::optional<Affine> affine(ValueId v, int depth = 0) const {
    if (++steps_ > kMaxSteps) return std::nullopt;
    const TensorDesc& d = g_.value(v).desc;
    if (d.dtype != DType::kF32 || d.rank() != 2) return std::nullopt;
    const int64_t B = d.shape[0], N = d.shape[1];
    Affine a;
    a.cols = N;
    const Node* p = producer(v);
    if (!p || depth > 64) {
      a.others.push_back(v);
      return a;
    }
    const NodeId pid = g_.value(v).producer;
    if (simple(*p, "Add", 2)) {
      Affine sum;
      sum.cols = N;
      for (ValueId u : p->inputs) {
        if (auto b = addend_bias_of(u, N)) {
          sum.biases.push_back(*b);
        } else if (is_f32(u, d.shape)) {
          auto s = affine(u, depth + 1);
          if (!s) return std::nullopt;
          sum.add(*s);
        } else {
          a.others.push_back(v);
          return a;
        }
      }
      sum.nodes.push_back(pid);
      return sum;
    }
    if (simple(*p, "Sub", 2) && is_f32(p->inputs[0], d.shape)) {
      // pre - constant: the constant is a bias with sign -1.
      if (auto b = addend_bias_of(p->inputs[1], N)) {
        auto s = affine(p->inputs[0], depth + 1);
        if (!s) return std::nullopt;
        b->sign = -1.0f;
        s->biases.push_back(*b);
        s->nodes.push_back(pid);
        return s;
      }
    }
    const bool gemm = p->op == "Gemm" && p->outputs.size() == 1 &&
                      (p->inputs.size() == 2 || p->inputs.size() == 3);
    if ((simple(*p, "MatMul", 2) || gemm) && p->inputs[0] != kNoId && p->inputs[1] != kNoId) {
      bool trans_b = false;
      if (gemm) {
        auto ta = attr_int(p->attrs, "", "transA", 0), tb = attr_int(p->attrs, "", "transB", 0);
        auto alpha = attr_float(p->attrs, "", "alpha", 1.0),
             beta = attr_float(p->attrs, "", "beta", 1.0);
        if (!ta.is_ok() || !tb.is_ok() || !alpha.is_ok() || !beta.is_ok() || *ta != 0 ||
            *alpha != 1.0 || *beta != 1.0)
          return leaf(v);
        trans_b = *tb != 0;
      }
      auto w = resolve_const(g_, p->inputs[1]);
      if (!w) return leaf(v);
      const TensorDesc& wd = g_.value(w->value).desc;
      const ValueId l = p->inputs[0];
      const TensorDesc& ld = g_.value(l).desc;
      if (wd.dtype != DType::kF32 || wd.rank() != 2 || ld.rank() != 2 || ld.dtype != DType::kF32)
        return leaf(v);
      const bool trans = w->transposed != trans_b;
      const int64_t K = ld.shape[1];
      if ((trans ? wd.shape[1] : wd.shape[0]) != K || (trans ? wd.shape[0] : wd.shape[1]) != N ||
          ld.shape[0] != B)
        return leaf(v);
      if (gemm && p->inputs.size() == 3 && p->inputs[2] != kNoId) {
        if (auto b = bias_of(p->inputs[2], N)) {
          a.biases.push_back(*b);
        } else if (is_f32(p->inputs[2], d.shape)) {
          // C computed at run time: tf2onnx's unrolled Keras cell, Gemm(x_t, W, C = h R).
          auto c = affine(p->inputs[2], depth + 1);
          if (!c) return std::nullopt;
          a.add(*c);
        } else {
          return leaf(v);
        }
      }
      // [x, h] W: one term per concatenated part, each with its block of rows.
      const Node* cat = producer(l);
      auto cat_axis = cat && cat->op == "Concat" ? node_axis(*cat, 2) : std::nullopt;
      if (cat_axis && *cat_axis == 1 && cat->inputs.size() > 1 &&
          std::none_of(cat->inputs.begin(), cat->inputs.end(),
                       [](ValueId u) { return u == kNoId; })) {
        int64_t r0 = 0;
        for (ValueId part : cat->inputs) {
          const int64_t rows = g_.value(part).desc.shape[1];
          a.terms.push_back({canon(part), {w->value, trans, r0, 0, rows, N}});
          r0 += rows;
        }
        a.nodes.push_back(g_.value(l).producer);
      } else {
        a.terms.push_back({canon(l), {w->value, trans, 0, 0, K, N}});
      }
      a.nodes.push_back(pid);
      return a;
    }
    if (auto pc = piece_of(v)) {
      auto whole = affine(pc->whole, depth + 1);
      if (!whole || !shift(*whole, pc->off, N)) return leaf(v);
      whole->nodes.push_back(pc->node);
      return whole;
    }
    return leaf(v);
  }

  static Affine leaf(ValueId v) {
    Affine a;
    a.others.push_back(v);
    return a;
  }

  // v = act(pre) with pre affine, or a column piece of act(pre) ([B, kH] activated, then split).
  struct Gate {
    Affine pre;
    std::vector<NodeId> nodes;
  };
  std::optional<Gate> gate(ValueId v, const char* act) const {
    Gate gt;
    const TensorDesc& d = g_.value(v).desc;
    if (d.rank() != 2) return std::nullopt;
    if (const Node* a = op_of(v, act, 1)) {
      auto pre = affine(a->inputs[0]);
      if (!pre) return std::nullopt;
      gt.pre = std::move(*pre);
      gt.nodes.push_back(g_.value(v).producer);
      return gt;
    }
    auto pc = piece_of(v);
    if (!pc) return std::nullopt;
    const Node* a = op_of(pc->whole, act, 1);
    if (!a) return std::nullopt;
    auto pre = affine(a->inputs[0]);
    if (!pre || !shift(*pre, pc->off, d.shape[1])) return std::nullopt;
    gt.pre = std::move(*pre);
    gt.nodes = {pc->node, g_.value(pc->whole).producer};
    return gt;
  }

  // Every value a cell node produces, other than `exits`, is read only inside the cell and is
  // not a graph output; no `entries` value is produced inside the cell.
  bool closed(std::vector<NodeId>& nodes, const std::vector<ValueId>& exits,
              const std::vector<ValueId>& entries) const {
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    std::unordered_set<NodeId> in(nodes.begin(), nodes.end());
    for (ValueId e : entries)
      if (g_.value(e).producer != kNoId && in.count(g_.value(e).producer)) return false;
    for (NodeId n : nodes)
      for (ValueId o : g_.node(n).outputs) {
        if (std::find(exits.begin(), exits.end(), o) != exits.end()) continue;
        if (g_.value(o).is_output) return false;
        for (NodeId c : g_.consumers(o))
          if (!in.count(c)) return false;
      }
    return true;
  }

  const Graph& g_;
  mutable std::unordered_map<ValueId, ValueId> canon_;
  static constexpr int kMaxSteps = 4096;
  mutable int steps_ = 0;
};

ValueId other(const Node& n, ValueId v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; }

// ---------------------------------------------------------------------------------------------
// LSTM:  c = f * c_prev + i * g,  h = o * tanh(c),  i f o = sigmoid(affine), g = tanh(affine).
// Roles are read off this dataflow (whatever order the gate columns are in); r = 0..3 is
// ONNX's i, o, f, c. Coupled input-forget gates (c = f * c_prev + (1 - f) * g, or
// (1 - i) * c_prev + i * g) become ONNX's input_forget = 1, which defines f = 1 - i.
struct LstmCell {
  std::vector<NodeId> nodes;
  std::array<Affine, 4> pre;
  std::array<ValueId, 2> lefts{kNoId, kNoId};  // x_t and h_prev, in some order
  ValueId c_prev = kNoId, c = kNoId, h = kNoId;
  NodeId tanh_c = kNoId, fc_mul = kNoId;
  std::array<ValueId, 3> peep{kNoId, kNoId, kNoId};  // peephole weights p_i, p_o, p_f (or none)
  bool input_forget = false;  // coupled gates: pre[2] (f) is empty, f = 1 - i
  bool negate_i = false;      // ONNX's i is 1 - sigmoid(pre[0]) = sigmoid(-pre[0])
  int64_t batch = 0, hidden = 0;
  int hp = -1;  // which of `lefts` is h_prev (set when chained)
  int pred = -1, succ = -1;
  bool conflict = false;
};

// x when v = 1 - x (Sub from an all-ones constant, same shape as x), else kNoId.
ValueId one_minus(const Matcher& m, ValueId v) {
  const Node* s = m.op_of(v, "Sub", 2);
  if (!s || !const_all_equal(m.g_, s->inputs[0], 1.0f) ||
      m.g_.value(v).desc != m.g_.value(s->inputs[1]).desc)
    return kNoId;
  return s->inputs[1];
}

// The i and f of c = f * c_prev + i * g, given the operand `iv` multiplying g and `fv`
// multiplying c_prev: two sigmoid gates, or one sigmoid gate s and 1 - s (coupled; ONNX's
// input_forget = 1 computes f = 1 - i after the activation, as ONNX Runtime does). With
// iv = 1 - s, ONNX's i is 1 - sigmoid(pre_s) = sigmoid(-pre_s): s's weights and bias negated.
struct InputForget {
  Matcher::Gate i;
  std::optional<Matcher::Gate> f;  // none when coupled
  bool negate_i = false;
  NodeId sub = kNoId;  // the 1 - s node of a coupled cell
};
std::optional<InputForget> input_forget_gates(const Matcher& m, ValueId iv, ValueId fv) {
  const Graph& g = m.g_;
  if (auto i = m.gate(iv, "Sigmoid")) {
    if (auto f = m.gate(fv, "Sigmoid")) return InputForget{std::move(*i), std::move(*f)};
    if (one_minus(m, fv) == iv)  // (1 - i) * c_prev + i * g
      return InputForget{std::move(*i), std::nullopt, false, g.value(fv).producer};
    return std::nullopt;
  }
  if (one_minus(m, iv) != fv) return std::nullopt;
  auto f = m.gate(fv, "Sigmoid");  // f * c_prev + (1 - f) * g
  if (!f) return std::nullopt;
  return InputForget{std::move(*f), std::nullopt, true, g.value(iv).producer};
}

std::optional<LstmCell> match_lstm(const Matcher& m, NodeId tanh_id) {
  const Graph& g = m.g_;
  m.start_match();
  const Node& tn = g.node(tanh_id);
  if (!m.simple(tn, "Tanh", 1)) return std::nullopt;
  const ValueId c = tn.inputs[0], tc = tn.outputs[0];
  const TensorDesc& cd = g.value(c).desc;
  if (cd.dtype != DType::kF32 || cd.rank() != 2) return std::nullopt;
  const Shape bh = cd.shape;
  const Node* ca = m.op_of(c, "Add", 2);
  auto tcs = g.consumers(tc);
  if (!ca || tcs.size() != 1 || g.value(tc).is_output) return std::nullopt;
  const Node& hm = g.node(tcs[0]);
  if (!m.simple(hm, "Mul", 2) || !m.is_f32(hm.outputs[0], bh) || hm.inputs[0] == hm.inputs[1])
    return std::nullopt;
  auto o = m.gate(other(hm, tc), "Sigmoid");
  if (!o) return std::nullopt;
  for (int fc_first = 0; fc_first < 2; ++fc_first) {
    const Node* fc = m.op_of(ca->inputs[fc_first], "Mul", 2);
    const Node* ig = m.op_of(ca->inputs[1 - fc_first], "Mul", 2);
    if (!fc || !ig || !m.is_f32(ca->inputs[0], bh) || !m.is_f32(ca->inputs[1], bh)) continue;
    for (int gk = 0; gk < 2; ++gk) {
      auto gg = m.gate(ig->inputs[gk], "Tanh");
      if (!gg) continue;
      for (int fk = 0; fk < 2; ++fk) {
        auto itf = input_forget_gates(m, ig->inputs[1 - gk], fc->inputs[fk]);
        const ValueId c_prev = m.canon(fc->inputs[1 - fk]);
        if (!itf || !m.is_f32(c_prev, bh)) continue;
        const Matcher::Gate& i = itf->i;
        // A coupled cell's f slot stays empty (input_forget ignores ONNX's f weights).
        const Matcher::Gate f = itf->f ? *itf->f : Matcher::Gate{};
        LstmCell cell;
        cell.input_forget = !itf->f;
        cell.negate_i = itf->negate_i;
        cell.batch = bh[0];
        cell.hidden = bh[1];
        cell.c_prev = c_prev;
        cell.c = c;
        cell.h = hm.outputs[0];
        cell.tanh_c = tanh_id;
        cell.fc_mul = g.value(ca->inputs[fc_first]).producer;
        cell.pre = {i.pre, o->pre, f.pre, gg->pre};
        cell.nodes = {tanh_id, tcs[0], g.value(c).producer, cell.fc_mul,
                      g.value(ca->inputs[1 - fc_first]).producer};
        if (itf->sub != kNoId) cell.nodes.push_back(itf->sub);
        for (const Matcher::Gate* gt : std::array<const Matcher::Gate*, 4>{&i, &*o, &f, &*gg}) {
          cell.nodes.insert(cell.nodes.end(), gt->nodes.begin(), gt->nodes.end());
          cell.nodes.insert(cell.nodes.end(), gt->pre.nodes.begin(), gt->pre.nodes.end());
        }
        // Peepholes: i and f may add p * c_prev, o may add p * c (p a constant [H] / [1, H]).
        bool ok = true;
        for (int r = 0; r < 3 && ok; ++r) {
          Affine& a = cell.pre[r];
          if (a.others.empty()) continue;
          const Node* pm = a.others.size() == 1 ? m.op_of(a.others[0], "Mul", 2) : nullptr;
          const ValueId state = r == 1 ? c : c_prev;
          ok = pm != nullptr;
          for (int k = 0; k < 2 && ok && cell.peep[r] == kNoId; ++k) {
            auto pv = m.bias_of(pm->inputs[k], cell.hidden);
            if (pv && m.canon(pm->inputs[1 - k]) == state) cell.peep[r] = pv->t;
          }
          ok = ok && cell.peep[r] != kNoId;
          if (ok) {
            cell.nodes.push_back(g.value(a.others[0]).producer);
            a.others.clear();
          }
        }
        std::vector<ValueId> lefts;
        for (int r = 0; r < 4; ++r) {
          if (r == 2 && cell.input_forget) continue;
          const Affine& a = cell.pre[r];
          ok = ok && a.pure() && a.cols == cell.hidden;
          for (const Term& t : a.terms)
            if (std::find(lefts.begin(), lefts.end(), t.left) == lefts.end())
              lefts.push_back(t.left);
        }
        if (!ok || lefts.size() != 2) continue;
        for (ValueId l : lefts)
          ok = ok && g.value(l).desc.rank() == 2 && g.value(l).desc.shape[0] == cell.batch;
        cell.lefts = {lefts[0], lefts[1]};
        if (!ok) continue;
        if (!m.closed(cell.nodes, {c, cell.h}, {lefts[0], lefts[1], c_prev})) continue;
        return cell;
      }
    }
  }
  return std::nullopt;
}

// Same weights and biases, with h_prev at slot `hp_a` of a and `hp_b` of b.
bool same_lstm(const Graph& g, const LstmCell& a, int hp_a, const LstmCell& b, int hp_b) {
  if (a.batch != b.batch || a.hidden != b.hidden || a.input_forget != b.input_forget ||
      a.negate_i != b.negate_i)
    return false;
  for (int r = 0; r < 3; ++r)
    if ((a.peep[r] == kNoId) != (b.peep[r] == kNoId) ||
        (a.peep[r] != kNoId && !same_const(g, a.peep[r], b.peep[r])))
      return false;
  for (int r = 0; r < 4; ++r)
    if (!same_term(g, a.pre[r], a.lefts[hp_a], b.pre[r], b.lefts[hp_b]) ||
        !same_term(g, a.pre[r], a.lefts[1 - hp_a], b.pre[r], b.lefts[1 - hp_b]) ||
        !same_biases(g, a.pre[r].biases, b.pre[r].biases))
      return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// GRU:  h = n + z * (h_prev - n)  or  h = (1 - z) * n + z * h_prev  (operands in any order;
// also with z and 1 - z swapped, as Chung et al. write it: then ONNX's z is sigmoid(-pre)),
// z, r = sigmoid(affine), n = tanh(x W_n + b + (r * h_prev) R_n)  (canonical) or
// n = tanh(x W_n + b + r * (h_prev R_n + Rb))  (linear before reset).
struct GruCell {
  std::vector<NodeId> nodes;
  Affine z, r, n;  // n: the part of n's pre-activation outside r's reach
  Affine nh;       // lbr: h_prev R_n + Rb; canonical: one term on r * h_prev
  ValueId x = kNoId, hp = kNoId, h = kNoId, rh = kNoId;
  bool lbr = false;
  bool negate_z = false;  // h = z * n + (1 - z) * h_prev: ONNX's z is 1 - z = sigmoid(-pre)
  int64_t batch = 0, hidden = 0;
  int pred = -1, succ = -1;
  bool conflict = false;
};

std::optional<GruCell> gru_from(const Matcher& m, ValueId h, ValueId z_v, ValueId n_v, ValueId hp,
                                std::vector<NodeId> nodes, bool negate_z) {
  const Graph& g = m.g_;
  GruCell c;
  c.negate_z = negate_z;
  hp = m.canon(hp);
  c.h = h;
  c.hp = hp;
  c.batch = g.value(h).desc.shape[0];
  c.hidden = g.value(h).desc.shape[1];
  if (!m.is_f32(hp, g.value(h).desc.shape)) return std::nullopt;
  auto z = m.gate(z_v, "Sigmoid");
  auto n = m.gate(n_v, "Tanh");
  if (!z || !n) return std::nullopt;
  c.z = z->pre;
  c.n = n->pre;
  nodes.insert(nodes.end(), z->nodes.begin(), z->nodes.end());
  nodes.insert(nodes.end(), z->pre.nodes.begin(), z->pre.nodes.end());
  nodes.insert(nodes.end(), n->nodes.begin(), n->nodes.end());
  nodes.insert(nodes.end(), n->pre.nodes.begin(), n->pre.nodes.end());
  std::optional<Matcher::Gate> r;
  if (c.n.others.size() == 1 && c.n.terms.size() == 1) {
    // Linear before reset: the odd summand is r * (h_prev R_n + Rb).
    const Node* mul = m.op_of(c.n.others[0], "Mul", 2);
    if (!mul) return std::nullopt;
    for (int k = 0; k < 2 && !r; ++k) {
      auto rr = m.gate(mul->inputs[k], "Sigmoid");
      auto nh = rr ? m.affine(mul->inputs[1 - k]) : std::nullopt;
      if (!nh || !nh->pure() || nh->terms.size() != 1 || nh->terms[0].left != hp ||
          nh->cols != c.hidden)
        continue;
      r = rr;
      c.nh = *nh;
      nodes.insert(nodes.end(), nh->nodes.begin(), nh->nodes.end());
    }
    if (!r) return std::nullopt;
    c.lbr = true;
    nodes.push_back(g.value(c.n.others[0]).producer);
    c.n.others.clear();
  } else if (c.n.others.empty() && c.n.terms.size() == 2) {
    // Canonical: one term's left operand is r * h_prev.
    for (int k = 0; k < 2 && !r; ++k) {
      const Node* mul = m.op_of(c.n.terms[k].left, "Mul", 2);
      if (!mul) continue;
      const int hk = m.canon(mul->inputs[0]) == hp ? 0 : m.canon(mul->inputs[1]) == hp ? 1 : -1;
      if (hk < 0) continue;
      r = m.gate(mul->inputs[1 - hk], "Sigmoid");
      if (!r) continue;
      c.rh = c.n.terms[k].left;
      c.nh.terms = {c.n.terms[k]};
      c.nh.cols = c.hidden;
      c.n.terms.erase(c.n.terms.begin() + k);
      nodes.push_back(g.value(c.rh).producer);
    }
    if (!r) return std::nullopt;
  } else {
    return std::nullopt;
  }
  c.r = r->pre;
  nodes.insert(nodes.end(), r->nodes.begin(), r->nodes.end());
  nodes.insert(nodes.end(), r->pre.nodes.begin(), r->pre.nodes.end());
  if (!c.n.pure() || c.n.terms.size() != 1 || c.n.terms[0].left == hp) return std::nullopt;
  c.x = c.n.terms[0].left;
  for (const Affine* a : {&c.z, &c.r}) {
    if (!a->pure() || a->cols != c.hidden) return std::nullopt;
    for (const Term& t : a->terms)
      if (t.left != c.x && t.left != hp) return std::nullopt;
  }
  if (c.n.cols != c.hidden || g.value(c.x).desc.rank() != 2 ||
      g.value(c.x).desc.shape[0] != c.batch)
    return std::nullopt;
  if (!m.closed(nodes, {h}, {c.x, hp})) return std::nullopt;
  c.nodes = std::move(nodes);
  return c;
}

std::optional<GruCell> match_gru(const Matcher& m, NodeId add_id) {
  const Graph& g = m.g_;
  m.start_match();
  const Node& add = g.node(add_id);
  if (!m.simple(add, "Add", 2)) return std::nullopt;
  const ValueId h = add.outputs[0];
  const TensorDesc& hd = g.value(h).desc;
  if (hd.dtype != DType::kF32 || hd.rank() != 2) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const ValueId a = add.inputs[k], b = add.inputs[1 - k];
    if (!m.is_f32(a, hd.shape) || !m.is_f32(b, hd.shape)) return std::nullopt;
    // n + z * (h_prev - n)
    if (const Node* mz = m.op_of(b, "Mul", 2)) {
      for (int zk = 0; zk < 2; ++zk) {
        const Node* sub = m.op_of(mz->inputs[1 - zk], "Sub", 2);
        if (!sub || sub->inputs[1] != a || sub->inputs[0] == a) continue;
        const std::vector<NodeId> nodes{add_id, g.value(b).producer,
                                        g.value(mz->inputs[1 - zk]).producer};
        auto c = gru_from(m, h, mz->inputs[zk], a, sub->inputs[0], nodes, false);
        if (!c)  // h_prev + z * (n - h_prev)
          c = gru_from(m, h, mz->inputs[zk], sub->inputs[0], a, nodes, true);
        if (c) return c;
      }
    }
    // (1 - z) * n + z * h_prev
    const Node* m1 = m.op_of(a, "Mul", 2);
    const Node* m2 = m.op_of(b, "Mul", 2);
    if (!m1 || !m2) continue;
    for (int j = 0; j < 2; ++j) {
      const Node* s = m.op_of(m1->inputs[j], "Sub", 2);
      if (!s || !const_all_equal(g, s->inputs[0], 1.0f)) continue;
      const ValueId z = s->inputs[1], n = m1->inputs[1 - j];
      if (m2->inputs[0] != z && m2->inputs[1] != z) continue;
      const std::vector<NodeId> nodes{add_id, g.value(a).producer, g.value(b).producer,
                                      g.value(m1->inputs[j]).producer};
      auto c = gru_from(m, h, z, n, other(*m2, z), nodes, false);
      if (!c)  // (1 - z) * h_prev + z * n
        c = gru_from(m, h, z, other(*m2, z), n, nodes, true);
      if (c) return c;
    }
  }
  return std::nullopt;
}

bool same_gru(const Graph& g, const GruCell& a, const GruCell& b) {
  if (a.lbr != b.lbr || a.negate_z != b.negate_z || a.batch != b.batch || a.hidden != b.hidden)
    return false;
  for (auto part : {&GruCell::z, &GruCell::r})
    if (!same_term(g, a.*part, a.x, b.*part, b.x) || !same_term(g, a.*part, a.hp, b.*part, b.hp) ||
        !same_biases(g, (a.*part).biases, (b.*part).biases))
      return false;
  return same_term(g, a.n, a.x, b.n, b.x) && same_biases(g, a.n.biases, b.n.biases) &&
         same_view(g, a.nh.terms[0].w, b.nh.terms[0].w) && same_biases(g, a.nh.biases, b.nh.biases);
}

// ---------------------------------------------------------------------------------------------
// ONNX weights from the matched terms.

// [1, G*H, in]: row block r holds terms[r] transposed (zeros where a gate has no such term).
Tensor onnx_weight(const Graph& g, const std::vector<const Term*>& terms, int64_t H, int64_t in) {
  const int64_t G = static_cast<int64_t>(terms.size());
  Tensor t(TensorDesc{DType::kF32, {1, G * H, in}});
  float* dst = t.data_as<float>();
  for (int64_t r = 0; r < G; ++r)
    if (terms[r])
      for (int64_t j = 0; j < H; ++j)
        for (int64_t k = 0; k < in; ++k) dst[(r * H + j) * in + k] = terms[r]->w.at(g, k, j);
  return t;
}

// [1, G*H]: block r is the sum of biases[r].
Tensor onnx_bias(const Graph& g, const std::vector<const std::vector<BiasView>*>& biases,
                 int64_t H) {
  const int64_t G = static_cast<int64_t>(biases.size());
  Tensor t(TensorDesc{DType::kF32, {1, G * H}});  // zero-filled
  for (int64_t r = 0; r < G; ++r)
    if (biases[r])
      for (const BiasView& b : *biases[r])
        for (int64_t j = 0; j < H; ++j) t.data_as<float>()[r * H + j] += b.at(g, j);
  return t;
}

// One chain of cells to replace by a sequence op, whatever the cell type.
struct Seq {
  std::string op;  // "LSTM" or "GRU"
  std::vector<NodeId> nodes;
  std::vector<ValueId> xs, hs;  // x_t and h_t, t = 0 .. T-1
  ValueId h_init = kNoId, c_init = kNoId, c_last = kNoId;
  int64_t batch = 0, hidden = 0, input = 0;
  Tensor W, R, B;
  std::optional<Tensor> P;  // LSTM peepholes [1, 3H] (i, o, f)
  Attributes attrs;
};

// Gate block r of s's W, R, B (Wb and Rb) and peepholes P (blocks i, o, f) negated: ONNX's gate
// is then sigmoid(-pre), i.e. 1 - the matched cell's gate.
void negate_gate(Seq& s, int64_t r) {
  const int64_t H = s.hidden, G = s.W.desc().shape[1] / H;
  for (Tensor* t : {&s.W, &s.R}) {
    const int64_t in = t->desc().shape[2];
    float* block = t->data_as<float>() + r * H * in;
    for (int64_t k = 0; k < H * in; ++k) block[k] = -block[k];
  }
  for (int64_t half = 0; half < 2; ++half) {
    float* b = s.B.data_as<float>() + (half * G + r) * H;
    for (int64_t j = 0; j < H; ++j) b[j] = -b[j];
  }
  if (s.P && r < 3)
    for (int64_t j = 0; j < H; ++j) s.P->data_as<float>()[r * H + j] *= -1.0f;
}

template <typename Cell>
std::vector<std::vector<int>> chains_of(std::vector<Cell>& cells) {
  std::vector<std::vector<int>> out;
  for (size_t h = 0; h < cells.size(); ++h) {
    if (cells[h].pred >= 0) continue;
    std::vector<int> chain;
    bool ok = true;
    for (int i = static_cast<int>(h); i >= 0; i = cells[i].succ) {
      chain.push_back(i);
      ok = ok && !cells[i].conflict;
      if (chain.size() > cells.size()) return out;  // a cycle cannot happen in a DAG
    }
    if (ok) out.push_back(std::move(chain));
  }
  return out;
}

// Every match of `match` (a cell, as std::optional) whose nodes no earlier match and no `used`
// node has, in node order.
template <typename Cell, typename Match>
std::vector<Cell> collect_cells(const Graph& g, const std::vector<bool>& used, Match match) {
  std::vector<Cell> cells;
  std::vector<bool> taken = used;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (taken[n]) continue;
    std::optional<Cell> c = match(n);
    if (!c || std::any_of(c->nodes.begin(), c->nodes.end(), [&](NodeId x) { return taken[x]; }))
      continue;
    for (NodeId x : c->nodes) taken[x] = true;
    cells.push_back(std::move(*c));
  }
  return cells;
}

// Makes cells[p] the predecessor of cells[j]; a second successor marks p as a conflict (a
// fork is no chain).
template <typename Cell>
void link_cells(std::vector<Cell>& cells, int p, int j) {
  cells[j].pred = p;
  if (cells[p].succ >= 0) cells[p].conflict = true;
  cells[p].succ = j;
}

// For cells whose two left operands are x_t and h_prev in unknown order: links p -> j when j's
// left operand `hp` is p's h and `same(p, side, j, hp)` finds p's weights equal with h_prev on
// some side; fixes both cells' hp.
template <typename Cell, typename Same>
bool link_by_h_prev(std::vector<Cell>& cells, int p, int j, int hp, Same same) {
  Cell& cp = cells[p];
  Cell& cj = cells[j];
  int hp_prev = -1;
  for (int s = 0; s < 2 && hp_prev < 0; ++s)
    if ((cp.hp < 0 || cp.hp == s) && same(cp, s, cj, hp)) hp_prev = s;
  if (hp_prev < 0 || (cj.hp >= 0 && cj.hp != hp)) return false;
  cp.hp = hp_prev;
  cj.hp = hp;
  link_cells(cells, p, j);
  return true;
}

// The chain's nodes, per-step inputs (x_of(cell)) and outputs into s.
template <typename Cell, typename XOf>
void add_chain_steps(Seq& s, const std::vector<Cell>& cells, const std::vector<int>& chain,
                     XOf x_of) {
  for (int i : chain) {
    s.nodes.insert(s.nodes.end(), cells[i].nodes.begin(), cells[i].nodes.end());
    s.xs.push_back(x_of(cells[i]));
    s.hs.push_back(cells[i].h);
  }
}

std::vector<Seq> lstm_chains(const Graph& g, const Matcher& m) {
  std::vector<LstmCell> cells = collect_cells<LstmCell>(g, std::vector<bool>(g.num_nodes(), false),
                                                        [&](NodeId n) { return match_lstm(m, n); });
  // Link t-1 -> t: t's c_prev is t-1's c, one of t's left operands is t-1's h (h_prev), and
  // both have the same weights with h_prev on the same side.
  std::unordered_map<ValueId, int> by_c;
  for (size_t i = 0; i < cells.size(); ++i) by_c[cells[i].c] = static_cast<int>(i);
  for (size_t j = 0; j < cells.size(); ++j) {
    auto it = by_c.find(cells[j].c_prev);
    if (it == by_c.end()) continue;
    const ValueId h_prev = cells[it->second].h;
    const int hp = cells[j].lefts[0] == h_prev ? 0 : cells[j].lefts[1] == h_prev ? 1 : -1;
    if (hp >= 0)
      link_by_h_prev(cells, it->second, static_cast<int>(j), hp,
                     [&](const LstmCell& a, int ha, const LstmCell& b, int hb) {
                       return same_lstm(g, a, ha, b, hb);
                     });
  }
  std::vector<Seq> seqs;
  for (const std::vector<int>& chain : chains_of(cells)) {
    LstmCell& head = cells[chain[0]];
    const int64_t H = head.hidden;
    if (head.hp < 0)  // a lone cell: h_prev is the [B, H] operand (either, if both are)
      head.hp = g.value(head.lefts[1]).desc.shape[1] == H ? 1 : 0;
    bool ok = g.value(head.lefts[head.hp]).desc.shape[1] == H;
    std::unordered_set<NodeId> members;
    for (int i : chain) members.insert(cells[i].nodes.begin(), cells[i].nodes.end());
    for (size_t t = 0; t + 1 < chain.size() && ok; ++t) {
      // An intermediate c_t feeds only its own cell (tanh, o's peephole) and the next one.
      const LstmCell& c = cells[chain[t]];
      const LstmCell& next = cells[chain[t + 1]];
      for (NodeId n : g.consumers(c.c))
        ok = ok && (std::binary_search(c.nodes.begin(), c.nodes.end(), n) ||
                    std::binary_search(next.nodes.begin(), next.nodes.end(), n));
      ok = ok && !g.value(c.c).is_output;
    }
    std::vector<ValueId> frontier{head.lefts[head.hp], head.c_prev};
    for (int i : chain) frontier.push_back(cells[i].lefts[1 - cells[i].hp]);
    if (!ok || !inputs_independent(g, frontier, members)) continue;
    Seq s;
    s.op = "LSTM";
    add_chain_steps(s, cells, chain, [](const LstmCell& c) { return c.lefts[1 - c.hp]; });
    const ValueId x0 = head.lefts[1 - head.hp], h0 = head.lefts[head.hp];
    s.h_init = h0;
    s.c_init = head.c_prev;
    s.c_last = cells[chain.back()].c;
    s.batch = head.batch;
    s.hidden = H;
    s.input = g.value(x0).desc.shape[1];
    std::vector<const Term*> wt, rt;
    std::vector<const std::vector<BiasView>*> bt;
    for (int r = 0; r < 4; ++r) {
      wt.push_back(head.pre[r].term(x0));
      rt.push_back(head.pre[r].term(h0));
      bt.push_back(&head.pre[r].biases);
    }
    for (int r = 0; r < 4; ++r) bt.push_back(nullptr);  // Rb = 0: the biases are summed in Wb
    s.W = onnx_weight(g, wt, H, s.input);
    s.R = onnx_weight(g, rt, H, H);
    s.B = onnx_bias(g, bt, H);
    if (std::any_of(head.peep.begin(), head.peep.end(), [](ValueId v) { return v != kNoId; })) {
      std::array<std::vector<BiasView>, 3> pv;
      for (int r = 0; r < 3; ++r)
        if (head.peep[r] != kNoId) pv[r].push_back({head.peep[r], 0});
      s.P = onnx_bias(g, {&pv[0], &pv[1], &pv[2]}, H);
    }
    // Coupled gates: ONNX's i is the matched i, or 1 - the matched f.
    if (head.negate_i) negate_gate(s, 0);
    s.attrs.set("hidden_size", H);
    if (head.input_forget) s.attrs.set("input_forget", int64_t{1});
    seqs.push_back(std::move(s));
  }
  return seqs;
}

std::vector<Seq> gru_chains(const Graph& g, const Matcher& m, const std::vector<bool>& used) {
  std::vector<GruCell> cells =
      collect_cells<GruCell>(g, used, [&](NodeId n) { return match_gru(m, n); });
  std::unordered_map<ValueId, int> by_h;
  for (size_t i = 0; i < cells.size(); ++i) by_h[cells[i].h] = static_cast<int>(i);
  for (size_t j = 0; j < cells.size(); ++j) {
    auto it = by_h.find(cells[j].hp);
    if (it != by_h.end() && same_gru(g, cells[it->second], cells[j]))
      link_cells(cells, it->second, static_cast<int>(j));
  }
  std::vector<Seq> seqs;
  for (const std::vector<int>& chain : chains_of(cells)) {
    const GruCell& c0 = cells[chain[0]];
    std::unordered_set<NodeId> members;
    std::vector<ValueId> frontier{c0.hp};
    for (int i : chain) {
      members.insert(cells[i].nodes.begin(), cells[i].nodes.end());
      frontier.push_back(cells[i].x);
    }
    if (!inputs_independent(g, frontier, members)) continue;
    const int64_t H = c0.hidden;
    Seq s;
    s.op = "GRU";
    add_chain_steps(s, cells, chain, [](const GruCell& c) { return c.x; });
    s.h_init = c0.hp;
    s.batch = c0.batch;
    s.hidden = H;
    s.input = g.value(c0.x).desc.shape[1];
    s.W = onnx_weight(g, {c0.z.term(c0.x), c0.r.term(c0.x), c0.n.term(c0.x)}, H, s.input);
    s.R = onnx_weight(g, {c0.z.term(c0.hp), c0.r.term(c0.hp), &c0.nh.terms[0]}, H, H);
    s.B = onnx_bias(g,
                    {&c0.z.biases, &c0.r.biases, &c0.n.biases, nullptr, nullptr,
                     c0.lbr ? &c0.nh.biases : nullptr},
                    H);
    // ONNX's z = 1 - z = sigmoid(-pre).
    if (c0.negate_z) negate_gate(s, 0);
    s.attrs.set("hidden_size", H);
    s.attrs.set("linear_before_reset", int64_t{c0.lbr ? 1 : 0});
    seqs.push_back(std::move(s));
  }
  return seqs;
}

// ---------------------------------------------------------------------------------------------
// Vanilla RNN:  h = act(x W + h_prev R + b),  act Tanh, Relu or Sigmoid. Only chains of at
// least two cells count (a lone act(affine) is any dense layer, or a gate of a rejected cell).
struct RnnCell {
  std::vector<NodeId> nodes;
  Affine pre;
  std::array<ValueId, 2> lefts{kNoId, kNoId};
  ValueId h = kNoId;
  std::string act;
  int64_t batch = 0, hidden = 0;
  int hp = -1, pred = -1, succ = -1;
  bool conflict = false;
};

std::optional<RnnCell> match_rnn(const Matcher& m, NodeId id) {
  const Graph& g = m.g_;
  m.start_match();
  const Node& a = g.node(id);
  if (!m.simple(a, "Tanh", 1) && !m.simple(a, "Relu", 1) && !m.simple(a, "Sigmoid", 1))
    return std::nullopt;
  RnnCell c;
  c.h = a.outputs[0];
  const TensorDesc& hd = g.value(c.h).desc;
  if (hd.dtype != DType::kF32 || hd.rank() != 2) return std::nullopt;
  c.batch = hd.shape[0];
  c.hidden = hd.shape[1];
  auto pre = m.affine(a.inputs[0]);
  if (!pre || !pre->pure() || pre->terms.size() != 2 || pre->cols != c.hidden) return std::nullopt;
  c.pre = std::move(*pre);
  c.act = a.op;
  c.lefts = {c.pre.terms[0].left, c.pre.terms[1].left};
  for (ValueId l : c.lefts)
    if (g.value(l).desc.rank() != 2 || g.value(l).desc.shape[0] != c.batch) return std::nullopt;
  c.nodes = c.pre.nodes;
  c.nodes.push_back(id);
  if (!m.closed(c.nodes, {c.h}, {c.lefts[0], c.lefts[1]})) return std::nullopt;
  return c;
}

bool same_rnn(const Graph& g, const RnnCell& a, int hp_a, const RnnCell& b, int hp_b) {
  return a.act == b.act && a.batch == b.batch && a.hidden == b.hidden &&
         same_term(g, a.pre, a.lefts[hp_a], b.pre, b.lefts[hp_b]) &&
         same_term(g, a.pre, a.lefts[1 - hp_a], b.pre, b.lefts[1 - hp_b]) &&
         same_biases(g, a.pre.biases, b.pre.biases);
}

std::vector<Seq> rnn_chains(const Graph& g, const Matcher& m, const std::vector<bool>& used) {
  std::vector<RnnCell> cells =
      collect_cells<RnnCell>(g, used, [&](NodeId n) { return match_rnn(m, n); });
  std::unordered_map<ValueId, int> by_h;
  for (size_t i = 0; i < cells.size(); ++i) by_h[cells[i].h] = static_cast<int>(i);
  for (size_t j = 0; j < cells.size(); ++j) {
    for (int hp = 0; hp < 2 && cells[j].pred < 0; ++hp) {
      auto it = by_h.find(cells[j].lefts[hp]);
      if (it == by_h.end() || static_cast<size_t>(it->second) == j) continue;
      link_by_h_prev(cells, it->second, static_cast<int>(j), hp,
                     [&](const RnnCell& a, int ha, const RnnCell& b, int hb) {
                       return same_rnn(g, a, ha, b, hb);
                     });
    }
  }
  std::vector<Seq> seqs;
  for (const std::vector<int>& chain : chains_of(cells)) {
    if (chain.size() < 2) continue;
    const RnnCell& c0 = cells[chain[0]];
    const int64_t H = c0.hidden;
    const ValueId h0 = c0.lefts[c0.hp], x0 = c0.lefts[1 - c0.hp];
    if (g.value(h0).desc.shape[1] != H) continue;
    std::unordered_set<NodeId> members;
    std::vector<ValueId> frontier{h0};
    for (int i : chain) {
      members.insert(cells[i].nodes.begin(), cells[i].nodes.end());
      frontier.push_back(cells[i].lefts[1 - cells[i].hp]);
    }
    if (!inputs_independent(g, frontier, members)) continue;
    Seq s;
    s.op = "RNN";
    add_chain_steps(s, cells, chain, [](const RnnCell& c) { return c.lefts[1 - c.hp]; });
    s.h_init = h0;
    s.batch = c0.batch;
    s.hidden = H;
    s.input = g.value(x0).desc.shape[1];
    s.W = onnx_weight(g, {c0.pre.term(x0)}, H, s.input);
    s.R = onnx_weight(g, {c0.pre.term(h0)}, H, H);
    s.B = onnx_bias(g, {&c0.pre.biases, nullptr}, H);
    s.attrs.set("hidden_size", H);
    s.attrs.set("activations", c0.act);
    seqs.push_back(std::move(s));
  }
  return seqs;
}

// The original values the new sequence ops read: initial states, and the x_t of chains whose X
// is built step by step (neither another chain's Y nor row blocks of one tensor).
std::unordered_set<ValueId> seq_reads(const std::vector<Seq>& seqs,
                                      const std::vector<int>& x_from_chain,
                                      const std::vector<std::optional<RowBlock>>& x_rows) {
  std::unordered_set<ValueId> out;
  for (size_t k = 0; k < seqs.size(); ++k) {
    out.insert(seqs[k].h_init);
    if (seqs[k].c_init != kNoId) out.insert(seqs[k].c_init);
    if (x_from_chain[k] < 0 && !x_rows[k]) out.insert(seqs[k].xs.begin(), seqs[k].xs.end());
  }
  return out;
}

}  // namespace

Result<RnnFusionResult> fuse_rnn_cells(const Graph& g, const ShapeInferencer& shapes) {
  Matcher m(g);
  std::vector<Seq> seqs = lstm_chains(g, m);
  {
    std::vector<bool> used(g.num_nodes(), false);
    for (const Seq& s : seqs)
      for (NodeId n : s.nodes) used[n] = true;
    for (Seq& s : gru_chains(g, m, used)) {
      for (NodeId n : s.nodes) used[n] = true;
      seqs.push_back(std::move(s));
    }
    for (Seq& s : rnn_chains(g, m, used)) seqs.push_back(std::move(s));
  }
  RnnFusionResult result;
  if (seqs.empty()) {
    result.graph = g;
    return result;
  }
  Rewrite rw(g);
  for (const Seq& q : seqs)
    for (NodeId n : q.nodes) rw.remove(n);
  const size_t K = seqs.size();
  // Where each chain's X comes from, cheapest first: another fused chain's Y (stacked layers),
  // one tensor whose consecutive row blocks the x_t are (a Split of x, or x[t] as Slice +
  // Reshape), else a Concat of the x_t reshaped to [1, B, I].
  std::vector<int> x_from_chain(K, -1);
  std::vector<std::optional<RowBlock>> x_rows(K);
  // A chain reading x's row blocks last to first (the backward half of a hand-written
  // bidirectional RNN) becomes direction = reverse over x as it is; its Y is in time order, so
  // chain step t is Y[T-1-t].
  std::vector<bool> reversed(K, false);
  std::vector<NodeId> y_concat(K, kNoId);
  for (size_t k = 0; k < K; ++k) {
    const auto& xs = seqs[k].xs;
    const int64_t B = seqs[k].batch, T = static_cast<int64_t>(xs.size());
    std::vector<RowBlock> rb;
    for (ValueId x : xs) {
      auto r = row_block(g, x);
      if (!r || r->rows != B || g.value(r->src).desc.shape.back() != seqs[k].input ||
          (!rb.empty() && r->src != rb[0].src))
        break;
      rb.push_back(*r);
    }
    if (T < 2 || static_cast<int64_t>(rb.size()) != T) continue;
    bool fwd = true, bwd = true;
    for (int64_t t = 1; t < T; ++t) {
      fwd = fwd && rb[t].off == rb[t - 1].off + B;
      bwd = bwd && rb[t].off == rb[t - 1].off - B;
    }
    if (fwd) x_rows[k] = RowBlock{rb[0].src, rb[0].off, T * B};
    if (bwd) x_rows[k] = RowBlock{rb[0].src, rb[T - 1].off, T * B};
    reversed[k] = bwd && !fwd;
  }
  for (size_t k = 0; k < K; ++k)
    for (size_t j = 0; j < K && x_from_chain[k] < 0; ++j)
      if (j != k && !reversed[j] && seqs[j].hs == seqs[k].xs) {
        x_from_chain[k] = static_cast<int>(j);
        x_rows[k].reset();
        reversed[k] = false;
      }
  // h_t in Y's order.
  auto y_order = [&](size_t k) {
    std::vector<ValueId> hs = seqs[k].hs;
    if (reversed[k]) std::reverse(hs.begin(), hs.end());
    return hs;
  };
  for (size_t k = 0; k < K; ++k) {
    // A Concat along axis 0 of exactly h_0 .. h_{T-1}, or of each h_t reshaped (PyTorch's
    // torch.stack), is Y itself in another shape.
    const std::vector<ValueId> hs = y_order(k);
    const int64_t T = static_cast<int64_t>(hs.size()), BH = seqs[k].batch * seqs[k].hidden;
    std::vector<NodeId> candidates;
    for (NodeId n : g.consumers(hs[0])) {
      candidates.push_back(n);
      for (ValueId o : g.node(n).outputs)
        for (NodeId c : g.consumers(o)) candidates.push_back(c);
    }
    for (NodeId n : candidates) {
      const Node& c = g.node(n);
      if (c.op != "Concat" || rw.removed(n) || static_cast<int64_t>(c.inputs.size()) != T ||
          T < 2 || c.inputs[0] == kNoId)
        continue;
      auto axis = node_axis(c, g.value(c.inputs[0]).desc.rank());
      if (!axis || *axis != 0) continue;
      std::vector<NodeId> wraps;
      bool ok = true;
      for (int64_t t = 0; t < T && ok; ++t) {
        const ValueId u = c.inputs[t];
        if (u == hs[t]) continue;
        const NodeId p = u == kNoId ? kNoId : g.value(u).producer;
        ok = p != kNoId && (g.node(p).op == "Reshape" || g.node(p).op == "Unsqueeze") &&
             !g.node(p).inputs.empty() && g.node(p).inputs[0] == hs[t] &&
             g.value(u).desc.numel() == BH && !g.value(u).is_output && g.consumers(u).size() == 1 &&
             !rw.removed(p);
        wraps.push_back(p);
      }
      if (!ok) continue;
      y_concat[k] = n;
      rw.remove(n);
      for (NodeId p : wraps) rw.remove(p);
      break;
    }
  }
  // A value the rewritten graph still reads (or returns) must be produced again: read by a kept
  // node, or by a new sequence op (a chain's initial state, or its x_t when fed step by step,
  // may be another chain's last h or c: one recurrence split where the weights change).
  const std::unordered_set<ValueId> read_by_seqs = seq_reads(seqs, x_from_chain, x_rows);
  auto still_used = [&](ValueId v) {
    auto cs = g.consumers(v);
    return g.value(v).is_output || read_by_seqs.count(v) ||
           std::any_of(cs.begin(), cs.end(), [&](NodeId n) { return !rw.removed(n); });
  };

  std::vector<std::string> y_names(K), bases(K);
  for (size_t k = 0; k < K; ++k) {
    std::string lower = seqs[k].op == "LSTM" ? "lstm" : seqs[k].op == "GRU" ? "gru" : "rnn";
    bases[k] = rw.fresh(lower + "_fused" + std::to_string(k));
    y_names[k] = rw.fresh(bases[k] + "/Y");
  }
  for (size_t k = 0; k < K; ++k) {
    Seq& q = seqs[k];
    const int64_t T = static_cast<int64_t>(q.xs.size()), B = q.batch, H = q.hidden, I = q.input;
    const bool lstm = q.op == "LSTM";
    const std::string& base = bases[k];
    auto name = [&](const std::string& what) { return rw.fresh(base + "/" + what); };
    auto reshape = [&](const std::string& in, const std::string& shape, const std::string& out) {
      rw.add_node("Reshape", rw.fresh(base + "/reshape"), {in, shape}, {out});
    };
    const std::string shape_x = name("shape_x"), shape_s = name("shape_state"),
                      shape_h = name("shape_h");
    rw.add_constant(shape_x, i64_tensor({1, B, I}));
    rw.add_constant(shape_s, i64_tensor({1, B, H}));
    rw.add_constant(shape_h, i64_tensor({B, H}));

    std::string X;
    if (x_from_chain[k] >= 0 || x_rows[k]) {
      const std::string shape_seq = name("shape_seq");
      rw.add_constant(shape_seq, i64_tensor({T, B, I}));
      X = name("X");
      std::string src =
          x_from_chain[k] >= 0 ? y_names[x_from_chain[k]] : g.value(x_rows[k]->src).name;
      if (x_from_chain[k] < 0) {
        const TensorDesc& sd = g.value(x_rows[k]->src).desc;
        const int64_t R = sd.numel() / I;
        if (x_rows[k]->off != 0 || x_rows[k]->rows != R) {
          // The steps read some of the rows: slice them off the [R, I] view first.
          const std::string shape_rows = name("shape_rows_x"), flat = name("x_rows"),
                            rows = name("x_steps");
          rw.add_constant(shape_rows, i64_tensor({R, I}));
          reshape(src, shape_rows, flat);
          Attributes sa;
          sa.set("starts", std::vector<int64_t>{x_rows[k]->off});
          sa.set("ends", std::vector<int64_t>{x_rows[k]->off + x_rows[k]->rows});
          sa.set("axes", std::vector<int64_t>{0});
          rw.add_node("Slice", rw.fresh(base + "/slice_x"), {flat}, {rows}, std::move(sa));
          src = rows;
        }
      }
      reshape(src, shape_seq, X);
    } else {
      std::vector<std::string> parts;
      for (ValueId v : q.xs) {
        parts.push_back(name("x"));
        reshape(g.value(v).name, shape_x, parts.back());
      }
      X = parts.front();
      if (T > 1) {
        X = name("X");
        Attributes a;
        a.set("axis", int64_t{0});
        rw.add_node("Concat", rw.fresh(base + "/concat_x"), parts, {X}, std::move(a));
      }
    }
    const std::string h0 = name("initial_h");
    reshape(g.value(q.h_init).name, shape_s, h0);
    std::string c0;
    if (lstm) {
      c0 = name("initial_c");
      reshape(g.value(q.c_init).name, shape_s, c0);
    }
    const std::string wn = name("W"), rn = name("R"), bn = name("B");
    rw.add_constant(wn, std::move(q.W));
    rw.add_constant(rn, std::move(q.R));
    rw.add_constant(bn, std::move(q.B));
    if (reversed[k]) q.attrs.set("direction", std::string("reverse"));
    const std::string& Y = y_names[k];
    const std::string Yh = name("Y_h");
    const std::string Yc = lstm ? name("Y_c") : std::string();
    std::vector<std::string> lstm_in{X, wn, rn, bn, "", h0, c0};
    if (q.P) {
      lstm_in.push_back(name("P"));
      rw.add_constant(lstm_in.back(), std::move(*q.P));
    }
    if (lstm)
      rw.add_node("LSTM", base, lstm_in, {Y, Yh, Yc}, q.attrs);
    else
      rw.add_node(q.op, base, {X, wn, rn, bn, "", h0}, {Y, Yh}, q.attrs);

    if (y_concat[k] != kNoId) {
      const ValueId out = g.node(y_concat[k]).outputs[0];
      const std::string shape_out = name("shape_y");
      rw.add_constant(shape_out, i64_tensor(g.value(out).desc.shape));
      reshape(Y, shape_out, g.value(out).name);
    }
    for (int64_t t = 0; t < T; ++t) {
      const ValueId h = q.hs[t];
      if (!still_used(h)) continue;
      if (t == T - 1) {
        reshape(Yh, shape_h, g.value(h).name);
        continue;
      }
      const int64_t at = reversed[k] ? T - 1 - t : t;  // Y's time index of chain step t
      Attributes sa;
      sa.set("starts", std::vector<int64_t>{at});
      sa.set("ends", std::vector<int64_t>{at + 1});
      sa.set("axes", std::vector<int64_t>{0});
      const std::string yt = name("y" + std::to_string(at));
      rw.add_node("Slice", rw.fresh(base + "/slice"), {Y}, {yt}, std::move(sa));
      reshape(yt, shape_h, g.value(h).name);
    }
    if (lstm && still_used(q.c_last)) reshape(Yc, shape_h, g.value(q.c_last).name);
    const bool gru = q.op == "GRU";
    (lstm ? result.lstm_cells : gru ? result.gru_cells : result.rnn_cells) += static_cast<int>(T);
    ++(lstm ? result.lstm_sequences : gru ? result.gru_sequences : result.rnn_sequences);
    result.cells += static_cast<int>(T);
    ++result.sequences;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  return result;
}

Result<RnnFusionResult> fuse_rnn_cells_for_training(const Graph& g, const ShapeInferencer& shapes,
                                                    const std::string& source) {
  GRAPHI_ASSIGN_OR_RETURN(RnnFusionResult fused, fuse_rnn_cells(g, shapes));
  for (const Node& n : fused.graph.nodes()) {
    if ((n.op != "LSTM" && n.op != "GRU" && n.op != "RNN") || n.inputs.empty()) continue;
    const Shape& xs = fused.graph.value(n.inputs[0]).desc.shape;
    if (!xs.empty() && xs[0] == 1)
      return Status::unsupported(
          source + ": fusing RNN cells for training: node '" + n.name +
          "' is a one-step sequence: the pass could not chain this layer's cells (something "
          "between the steps, e.g. a PhasedLSTM time gate), and one-step copies of shared "
          "weights would train apart; train the unfused graph");
  }
  return fused;
}

}  // namespace graphi::graph::passes
