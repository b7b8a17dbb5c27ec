#include "graph/passes/rnn_fusion.h"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "graph/graph_builder.h"

namespace graphi::graph::passes {
namespace {

// One matched cell. Gate roles r = 0..3 are ONNX's i, o, f, c; piece[r] is the Split output
// holding role r's columns.
struct Cell {
  std::vector<NodeId> nodes;
  std::array<NodeId, 2> mm{};     // the two MatMuls (x W and h_prev R, order unknown yet)
  std::array<ValueId, 2> left{};  // their left operands
  std::array<ValueId, 2> weight{};
  ValueId bias = kNoId, c_prev = kNoId, c = kNoId, h = kNoId;
  NodeId fc_mul = kNoId, tanh_c = kNoId;
  std::array<int, 4> piece{};
  int64_t batch = 0, hidden = 0;
  int r_slot = -1;  // which MatMul is h_prev R (set when chained)
  int pred = -1, succ = -1;
  bool conflict = false;
};

// One matched GRU cell; column offsets locate the z|r and h blocks in the Split pieces.
struct GruCell {
  std::vector<NodeId> nodes;
  ValueId x = kNoId, h_prev = kNoId, h = kNoId;
  ValueId W = kNoId, b = kNoId, R = kNoId, R_h = kNoId, Rb = kNoId;
  bool lbr = false;
  int zi = 0;  // z's piece in the Split of sigmoid(zr_pre)
  int64_t x_zr_col = 0, x_h_col = 0, h_zr_col = 0, h_h_col = 0;
  int64_t batch = 0, hidden = 0;
  int pred = -1, succ = -1;
  bool conflict = false;
  auto key() const { return std::tie(W, b, R, R_h, Rb, lbr, zi, x_zr_col, h_zr_col, batch, hidden); }
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g) {}

  const Node* producer(ValueId v) const {
    const Value& val = g_.value(v);
    return val.producer == kNoId ? nullptr : &g_.node(val.producer);
  }
  // Consumed by exactly one node (`by`) and not a graph output.
  bool only_feeds(ValueId v, NodeId by) const {
    auto cs = g_.consumers(v);
    return !g_.value(v).is_output && !cs.empty() &&
           std::all_of(cs.begin(), cs.end(), [&](NodeId n) { return n == by; });
  }
  std::optional<NodeId> sole_consumer(ValueId v) const {
    auto cs = g_.consumers(v);
    if (g_.value(v).is_output || cs.empty()) return std::nullopt;
    for (NodeId n : cs)
      if (n != cs[0]) return std::nullopt;
    return cs[0];
  }
  bool is_f32(ValueId v, const Shape& shape) const {
    const TensorDesc& d = g_.value(v).desc;
    return d.dtype == DType::kF32 && d.shape == shape;
  }
  bool is_const_f32(ValueId v) const {
    const Value& val = g_.value(v);
    return val.kind == ValueKind::kConstant && val.desc.dtype == DType::kF32 && val.data;
  }
  bool simple(const Node& n, const char* op, size_t ins) const {
    return n.op == op && n.inputs.size() == ins && n.outputs.size() == 1 &&
           std::none_of(n.inputs.begin(), n.inputs.end(), [](ValueId v) { return v == kNoId; });
  }

  std::optional<Cell> match(NodeId split_id) const {
    const Node& sp = g_.node(split_id);
    if (sp.op != "Split" || sp.inputs.size() != 1 || sp.outputs.size() != 4 ||
        sp.inputs[0] == kNoId)
      return std::nullopt;
    const ValueId gates = sp.inputs[0];
    const TensorDesc& gd = g_.value(gates).desc;
    if (gd.dtype != DType::kF32 || gd.rank() != 2 || gd.shape[1] % 4 != 0) return std::nullopt;
    auto axis = attr_int(sp.attrs, "", "axis", 0);
    if (!axis.is_ok() || (*axis != 1 && *axis != -1)) return std::nullopt;
    Cell c;
    c.batch = gd.shape[0];
    c.hidden = gd.shape[1] / 4;
    const int64_t B = c.batch, H = c.hidden;
    const Shape bh{B, H}, b4h{B, 4 * H};
    for (ValueId o : sp.outputs)
      if (!is_f32(o, bh)) return std::nullopt;
    if (!only_feeds(gates, split_id)) return std::nullopt;
    c.nodes.push_back(split_id);

    // The Add tree above the Split: leaves are the two MatMuls and the bias.
    std::vector<ValueId> leaves;
    std::vector<ValueId> stack{gates};
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      const Node* p = producer(v);
      if (p && simple(*p, "Add", 2) && is_f32(v, b4h) && (v == gates || sole_consumer(v))) {
        c.nodes.push_back(g_.value(v).producer);
        stack.push_back(p->inputs[0]);
        stack.push_back(p->inputs[1]);
        if (c.nodes.size() > 4) return std::nullopt;
      } else {
        leaves.push_back(v);
      }
    }
    if (v_is_root_leaf(leaves, gates) || leaves.size() != 3) return std::nullopt;
    int mms = 0;
    for (ValueId v : leaves) {
      const Node* p = producer(v);
      if (p && simple(*p, "MatMul", 2)) {
        if (mms == 2 || !is_f32(v, b4h) || !sole_consumer(v)) return std::nullopt;
        const ValueId l = p->inputs[0], w = p->inputs[1];
        const TensorDesc& wd = g_.value(w).desc;
        if (!is_const_f32(w) || wd.rank() != 2 || wd.shape[1] != 4 * H ||
            !is_f32(l, {B, wd.shape[0]}))
          return std::nullopt;
        c.mm[mms] = g_.value(v).producer;
        c.left[mms] = l;
        c.weight[mms] = w;
        ++mms;
        c.nodes.push_back(g_.value(v).producer);
      } else {
        if (c.bias != kNoId || !is_const_f32(v)) return std::nullopt;
        const Shape& s = g_.value(v).desc.shape;
        if (s != Shape{4 * H} && s != Shape{1, 4 * H}) return std::nullopt;
        c.bias = v;
      }
    }
    if (mms != 2 || c.bias == kNoId) return std::nullopt;

    // Activations: three Sigmoid, one Tanh (the candidate c~).
    std::array<ValueId, 4> act{};
    int tanh_piece = -1, sigmoids = 0;
    for (int k = 0; k < 4; ++k) {
      auto n = sole_consumer(sp.outputs[k]);
      if (!n) return std::nullopt;
      const Node& a = g_.node(*n);
      const bool sig = simple(a, "Sigmoid", 1), tanh = simple(a, "Tanh", 1);
      if (!sig && !tanh) return std::nullopt;
      if (tanh) {
        if (tanh_piece >= 0) return std::nullopt;
        tanh_piece = k;
      } else {
        ++sigmoids;
      }
      act[k] = a.outputs[0];
      c.nodes.push_back(*n);
    }
    if (tanh_piece < 0 || sigmoids != 3) return std::nullopt;
    c.piece[3] = tanh_piece;
    auto sigmoid_piece = [&](ValueId v) {
      for (int k = 0; k < 4; ++k)
        if (k != tanh_piece && act[k] == v) return k;
      return -1;
    };
    auto other = [](const Node& n, ValueId v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; };

    // i * c~
    auto ig_id = sole_consumer(act[tanh_piece]);
    if (!ig_id) return std::nullopt;
    const Node& ig = g_.node(*ig_id);
    if (!simple(ig, "Mul", 2) || !is_f32(ig.outputs[0], bh)) return std::nullopt;
    c.piece[0] = sigmoid_piece(other(ig, act[tanh_piece]));
    if (c.piece[0] < 0 || !only_feeds(act[c.piece[0]], *ig_id)) return std::nullopt;
    c.nodes.push_back(*ig_id);
    // c = f * c_prev + i * c~
    auto add_id = sole_consumer(ig.outputs[0]);
    if (!add_id) return std::nullopt;
    const Node& add = g_.node(*add_id);
    if (!simple(add, "Add", 2) || !is_f32(add.outputs[0], bh)) return std::nullopt;
    const ValueId fc = other(add, ig.outputs[0]);
    const Node* fcn = producer(fc);
    if (!fcn || !simple(*fcn, "Mul", 2) || !only_feeds(fc, *add_id) || !is_f32(fc, bh))
      return std::nullopt;
    c.fc_mul = g_.value(fc).producer;
    int f = sigmoid_piece(fcn->inputs[0]);
    ValueId c_prev = fcn->inputs[1];
    if (f < 0) {
      f = sigmoid_piece(fcn->inputs[1]);
      c_prev = fcn->inputs[0];
    }
    if (f < 0 || f == c.piece[0] || sigmoid_piece(c_prev) >= 0 || !is_f32(c_prev, bh) ||
        !only_feeds(act[f], c.fc_mul))
      return std::nullopt;
    c.piece[2] = f;
    c.c_prev = c_prev;
    c.c = add.outputs[0];
    c.nodes.push_back(c.fc_mul);
    c.nodes.push_back(*add_id);
    // h = o * tanh(c): o is the remaining sigmoid.
    int o = -1;
    for (int k = 0; k < 4; ++k)
      if (k != c.piece[0] && k != c.piece[2] && k != c.piece[3]) o = k;
    c.piece[1] = o;
    auto h_id = sole_consumer(act[o]);
    if (!h_id) return std::nullopt;
    const Node& hm = g_.node(*h_id);
    if (!simple(hm, "Mul", 2) || !is_f32(hm.outputs[0], bh)) return std::nullopt;
    const ValueId tc = other(hm, act[o]);
    const Node* tcn = producer(tc);
    if (!tcn || !simple(*tcn, "Tanh", 1) || tcn->inputs[0] != c.c || !only_feeds(tc, *h_id))
      return std::nullopt;
    c.tanh_c = g_.value(tc).producer;
    c.h = hm.outputs[0];
    c.nodes.push_back(c.tanh_c);
    c.nodes.push_back(*h_id);
    return c;
  }

  // A GRU cell as build_gru emits it (module comment of rnn_fusion.h). Matched from the Sub
  // diff = h_prev - h~, which names h_prev unambiguously.
  std::optional<GruCell> match_gru(NodeId sub_id) const {
    const Node& sub = g_.node(sub_id);
    if (!simple(sub, "Sub", 2)) return std::nullopt;
    GruCell c;
    c.h_prev = sub.inputs[0];
    const ValueId hh = sub.inputs[1];
    const TensorDesc& hd = g_.value(c.h_prev).desc;
    if (hd.dtype != DType::kF32 || hd.rank() != 2 || c.h_prev == hh) return std::nullopt;
    c.batch = hd.shape[0];
    c.hidden = hd.shape[1];
    const int64_t B = c.batch, H = c.hidden;
    const Shape bh{B, H}, b2h{B, 2 * H}, b3h{B, 3 * H};
    auto other = [](const Node& n, ValueId v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; };
    auto prod_id = [&](ValueId v) { return g_.value(v).producer; };
    // h~ = Tanh(hh_pre), read by the Sub and the final Add only.
    const Node* tanh = producer(hh);
    if (!tanh || !simple(*tanh, "Tanh", 1) || !is_f32(hh, bh) || g_.value(hh).is_output ||
        g_.consumers(hh).size() != 2)
      return std::nullopt;
    auto zd_id = sole_consumer(sub.outputs[0]);
    if (!zd_id || !is_f32(sub.outputs[0], bh)) return std::nullopt;
    const Node& zd = g_.node(*zd_id);
    if (!simple(zd, "Mul", 2) || !is_f32(zd.outputs[0], bh)) return std::nullopt;
    const ValueId z = other(zd, sub.outputs[0]);
    auto hn_id = sole_consumer(zd.outputs[0]);
    if (!hn_id) return std::nullopt;
    const Node& hn = g_.node(*hn_id);
    if (!simple(hn, "Add", 2) || other(hn, zd.outputs[0]) != hh || !is_f32(hn.outputs[0], bh))
      return std::nullopt;
    for (NodeId n : g_.consumers(hh))
      if (n != sub_id && n != *hn_id) return std::nullopt;
    c.h = hn.outputs[0];
    c.nodes = {sub_id, prod_id(hh), *zd_id, *hn_id};
    // z and r from Split(Sigmoid(zr_pre)).
    const Node* szr = producer(z);
    if (!szr || szr->op != "Split" || szr->inputs.size() != 1 || szr->outputs.size() != 2 ||
        !only_feeds(z, *zd_id) || !split_axis1(*szr))
      return std::nullopt;
    c.zi = szr->outputs[0] == z ? 0 : 1;
    const ValueId r = szr->outputs[1 - c.zi];
    if (!is_f32(z, bh) || !is_f32(r, bh)) return std::nullopt;
    const ValueId zr = szr->inputs[0];
    const Node* sig = producer(zr);
    if (!sig || !simple(*sig, "Sigmoid", 1) || !only_feeds(zr, prod_id(z))) return std::nullopt;
    const ValueId zr_pre = sig->inputs[0];
    const Node* zra = producer(zr_pre);
    if (!zra || !simple(*zra, "Add", 2) || !only_feeds(zr_pre, prod_id(zr)) || !is_f32(zr_pre, b2h))
      return std::nullopt;
    c.nodes.insert(c.nodes.end(), {prod_id(z), prod_id(zr), prod_id(zr_pre)});
    // hh_pre = x_h + h_part.
    const ValueId hh_pre = tanh->inputs[0];
    const Node* hpa = producer(hh_pre);
    if (!hpa || !simple(*hpa, "Add", 2) || !only_feeds(hh_pre, prod_id(hh)) || !is_f32(hh_pre, bh))
      return std::nullopt;
    c.nodes.push_back(prod_id(hh_pre));
    auto r_only_feeds = [&](NodeId n) { return only_feeds(r, n); };
    ValueId x_h = kNoId, x_zr = kNoId, h_zr_side = kNoId;
    for (int k = 0; k < 2 && x_h == kNoId; ++k) {
      const ValueId part = hpa->inputs[k];
      const Node* pn = producer(part);
      if (!pn || !only_feeds(part, prod_id(hh_pre)) || !is_f32(part, bh)) continue;
      if (simple(*pn, "Mul", 2) && (pn->inputs[0] == r || pn->inputs[1] == r) &&
          r_only_feeds(prod_id(part))) {
        // linear_before_reset: r * h_h, h_h from Split(h_prev R + Rb).
        const ValueId h_h = other(*pn, r);
        const Node* sh = producer(h_h);
        if (!sh || sh->op != "Split" || sh->inputs.size() != 1 || sh->outputs.size() != 2 ||
            !split_axis1(*sh) || !only_feeds(h_h, prod_id(part)))
          continue;
        const int hp = sh->outputs[0] == h_h ? 0 : 1;
        const ValueId h_zr = sh->outputs[1 - hp];
        if (!is_f32(h_zr, b2h) || !only_feeds(h_zr, prod_id(zr_pre)) ||
            (zra->inputs[0] != h_zr && zra->inputs[1] != h_zr))
          continue;
        auto lin = linear(sh->inputs[0], prod_id(h_h), b3h);
        if (!lin || lin->left != c.h_prev || lin->bias == kNoId) continue;
        c.lbr = true;
        c.R = lin->weight;
        c.Rb = lin->bias;
        c.h_zr_col = hp == 0 ? H : 0;
        c.h_h_col = hp == 0 ? 0 : 2 * H;
        c.nodes.insert(c.nodes.end(), lin->nodes.begin(), lin->nodes.end());
        c.nodes.insert(c.nodes.end(), {prod_id(h_h), prod_id(part)});
        h_zr_side = h_zr;
        x_h = hpa->inputs[1 - k];
      } else if (simple(*pn, "MatMul", 2) && is_const_f32(pn->inputs[1]) &&
                 g_.value(pn->inputs[1]).desc.shape == Shape{H, H}) {
        // canonical: (r * h_prev) R_h.
        const ValueId rh = pn->inputs[0];
        const Node* rm = producer(rh);
        if (!rm || !simple(*rm, "Mul", 2) || !only_feeds(rh, prod_id(part)) ||
            !(rm->inputs[0] == r || rm->inputs[1] == r) || other(*rm, r) != c.h_prev ||
            !r_only_feeds(prod_id(rh)))
          continue;
        // zr_pre's recurrent side: h_prev R_zr.
        for (ValueId v : zra->inputs) {
          const Node* mm = producer(v);
          if (mm && simple(*mm, "MatMul", 2) && mm->inputs[0] == c.h_prev &&
              is_const_f32(mm->inputs[1]) && g_.value(mm->inputs[1]).desc.shape == Shape{H, 2 * H} &&
              only_feeds(v, prod_id(zr_pre)))
            h_zr_side = v;
        }
        if (h_zr_side == kNoId) continue;
        c.lbr = false;
        c.R = g_.value(h_zr_side).producer == kNoId ? kNoId : producer(h_zr_side)->inputs[1];
        c.R_h = pn->inputs[1];
        c.nodes.insert(c.nodes.end(), {prod_id(h_zr_side), prod_id(rh), prod_id(part)});
        x_h = hpa->inputs[1 - k];
      }
    }
    if (x_h == kNoId) return std::nullopt;
    x_zr = other(*zra, h_zr_side);
    // x_zr and x_h: the two pieces of Split(x W + b).
    const Node* sx = producer(x_h);
    if (!sx || producer(x_zr) != sx || sx->op != "Split" || sx->inputs.size() != 1 ||
        sx->outputs.size() != 2 || !split_axis1(*sx) || !is_f32(x_zr, b2h) || !is_f32(x_h, bh) ||
        !only_feeds(x_h, prod_id(hh_pre)) || !only_feeds(x_zr, prod_id(zr_pre)))
      return std::nullopt;
    const int xp = sx->outputs[0] == x_h ? 0 : 1;
    c.x_zr_col = xp == 0 ? H : 0;
    c.x_h_col = xp == 0 ? 0 : 2 * H;
    auto lin = linear(sx->inputs[0], prod_id(x_h), b3h);
    if (!lin || lin->bias == kNoId || lin->left == c.h_prev) return std::nullopt;
    c.x = lin->left;
    c.W = lin->weight;
    c.b = lin->bias;
    c.nodes.insert(c.nodes.end(), lin->nodes.begin(), lin->nodes.end());
    c.nodes.push_back(prod_id(x_h));
    return c;
  }

  // v = left W + bias (either order) with W, bias float32 constants, v read only by `by`.
  struct Linear {
    ValueId left = kNoId, weight = kNoId, bias = kNoId;
    std::vector<NodeId> nodes;
  };
  std::optional<Linear> linear(ValueId v, NodeId by, const Shape& shape) const {
    const Node* a = producer(v);
    if (!a || !simple(*a, "Add", 2) || !only_feeds(v, by) || !is_f32(v, shape))
      return std::nullopt;
    Linear l;
    l.nodes.push_back(g_.value(v).producer);
    for (int k = 0; k < 2; ++k) {
      const ValueId mmv = a->inputs[k], bv = a->inputs[1 - k];
      const Node* mm = producer(mmv);
      const Shape& bs = g_.value(bv).desc.shape;
      if (!mm || !simple(*mm, "MatMul", 2) || !is_const_f32(bv) ||
          (bs != Shape{shape[1]} && bs != Shape{1, shape[1]}) || !only_feeds(mmv, l.nodes[0]) ||
          !is_f32(mmv, shape))
        continue;
      const ValueId w = mm->inputs[1];
      const TensorDesc& wd = g_.value(w).desc;
      if (!is_const_f32(w) || wd.rank() != 2 || wd.shape[1] != shape[1] ||
          !is_f32(mm->inputs[0], {shape[0], wd.shape[0]}))
        continue;
      l.left = mm->inputs[0];
      l.weight = w;
      l.bias = bv;
      l.nodes.push_back(g_.value(mmv).producer);
      return l;
    }
    return std::nullopt;
  }

  bool split_axis1(const Node& n) const {
    auto axis = attr_int(n.attrs, "", "axis", 0);
    return axis.is_ok() && (*axis == 1 || *axis == -1) && g_.value(n.inputs[0]).desc.rank() == 2;
  }

 private:
  static bool v_is_root_leaf(const std::vector<ValueId>& leaves, ValueId root) {
    return leaves.size() == 1 && leaves[0] == root;
  }
  const Graph& g_;
};

// One gate block: columns [col, col + H) of a [in, N] weight or an [N] / [1, N] bias.
struct Block {
  const Tensor* t = nullptr;  // nullptr: zeros (a bias ONNX has and the cell does not)
  int64_t col = 0;
};

// [1, G*H, in]: row block r is blocks[r] transposed.
Tensor onnx_weight(const std::vector<Block>& blocks, int64_t H) {
  const int64_t in = blocks[0].t->desc().shape[0], G = static_cast<int64_t>(blocks.size());
  Tensor t(TensorDesc{DType::kF32, {1, G * H, in}});
  float* dst = t.data_as<float>();
  for (int64_t r = 0; r < G; ++r) {
    const float* src = blocks[r].t->data_as<float>();
    const int64_t n = blocks[r].t->desc().shape[1];
    for (int64_t j = 0; j < H; ++j)
      for (int64_t k = 0; k < in; ++k) dst[(r * H + j) * in + k] = src[k * n + blocks[r].col + j];
  }
  return t;
}

// [1, G*H]: the blocks one after another.
Tensor onnx_bias(const std::vector<Block>& blocks, int64_t H) {
  const int64_t G = static_cast<int64_t>(blocks.size());
  Tensor t(TensorDesc{DType::kF32, {1, G * H}});  // zero-filled
  for (int64_t r = 0; r < G; ++r)
    if (blocks[r].t)
      for (int64_t j = 0; j < H; ++j)
        t.data_as<float>()[r * H + j] = blocks[r].t->data_as<float>()[blocks[r].col + j];
  return t;
}

Tensor int_tensor(const Shape& s) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(s.size())}});
  for (size_t i = 0; i < s.size(); ++i) t.data_as<int64_t>()[i] = s[i];
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
  Attributes attrs;
};

// True when none of `inputs` depends on a node of `members` (fusing would make a cycle).
bool inputs_independent(const Graph& g, std::vector<ValueId> frontier,
                        const std::unordered_set<NodeId>& members) {
  std::unordered_set<NodeId> seen;
  while (!frontier.empty()) {
    const NodeId p = g.value(frontier.back()).producer;
    frontier.pop_back();
    if (p == kNoId || !seen.insert(p).second) continue;
    if (members.count(p)) return false;
    for (ValueId v : g.node(p).inputs)
      if (v != kNoId) frontier.push_back(v);
  }
  return true;
}

std::vector<Seq> lstm_chains(const Graph& g, const Matcher& m) {
  std::vector<Cell> cells;
  std::vector<int> cell_of_node(g.num_nodes(), -1);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    auto c = m.match(n);
    if (!c) continue;
    bool taken = false;
    for (NodeId x : c->nodes) taken = taken || cell_of_node[x] >= 0;
    if (taken) continue;
    for (NodeId x : c->nodes) cell_of_node[x] = static_cast<int>(cells.size());
    cells.push_back(std::move(*c));
  }

  // Link cell t-1 -> t: t's c_prev is t-1's c and one of t's MatMuls reads t-1's h.
  std::unordered_map<ValueId, int> by_c;
  for (size_t i = 0; i < cells.size(); ++i) by_c[cells[i].c] = static_cast<int>(i);
  for (size_t j = 0; j < cells.size(); ++j) {
    Cell& cj = cells[j];
    auto it = by_c.find(cj.c_prev);
    if (it == by_c.end()) continue;
    Cell& cp = cells[it->second];
    int r = cj.left[0] == cp.h ? 0 : cj.left[1] == cp.h ? 1 : -1;
    std::array<ValueId, 2> wj = cj.weight, wp = cp.weight;
    std::sort(wj.begin(), wj.end());
    std::sort(wp.begin(), wp.end());
    if (r < 0 || wj != wp || cj.bias != cp.bias || cj.piece != cp.piece ||
        cj.batch != cp.batch || cj.hidden != cp.hidden)
      continue;
    cj.r_slot = r;
    cj.pred = it->second;
    if (cp.succ >= 0) cp.conflict = true;
    cp.succ = static_cast<int>(j);
  }

  // Collect valid chains.
  std::vector<Seq> seqs;
  for (size_t h = 0; h < cells.size(); ++h) {
    if (cells[h].pred >= 0) continue;
    std::vector<int> chain;
    bool ok = true;
    for (int i = static_cast<int>(h); i >= 0; i = cells[i].succ) {
      chain.push_back(i);
      ok = ok && !cells[i].conflict;
    }
    if (!ok) continue;
    const int64_t H = cells[h].hidden;
    // R: the weight the chained cells read h_prev with; the head takes whichever MatMul fits.
    Cell& head = cells[h];
    if (chain.size() > 1) {
      const Cell& c1 = cells[chain[1]];
      const ValueId R = c1.weight[c1.r_slot];
      head.r_slot = head.weight[1] == R ? 1 : 0;
      if (head.weight[head.r_slot] != R) ok = false;
    } else {
      head.r_slot = g.value(head.weight[1]).desc.shape[0] == H ? 1 : 0;
    }
    if (!ok || g.value(head.weight[head.r_slot]).desc.shape[0] != H) continue;
    const ValueId W = head.weight[1 - head.r_slot], R = head.weight[head.r_slot];
    std::unordered_set<NodeId> members;
    for (int i : chain) members.insert(cells[i].nodes.begin(), cells[i].nodes.end());
    for (size_t t = 0; t < chain.size() && ok; ++t) {
      const Cell& c = cells[chain[t]];
      ok = c.weight[c.r_slot] == R && c.weight[1 - c.r_slot] == W;
      // An intermediate c_t feeds only its tanh and the next cell's f * c_prev.
      if (t + 1 < chain.size()) {
        for (NodeId n : g.consumers(c.c))
          ok = ok && (n == c.tanh_c || n == cells[chain[t + 1]].fc_mul);
        ok = ok && !g.value(c.c).is_output;
      }
    }
    // The inputs (x_t, initial h and c) must not depend on the chain itself.
    std::vector<ValueId> frontier{head.left[head.r_slot], head.c_prev};
    for (int i : chain) frontier.push_back(cells[i].left[1 - cells[i].r_slot]);
    if (!ok || !inputs_independent(g, frontier, members)) continue;
    Seq s;
    s.op = "LSTM";
    for (int i : chain) {
      const Cell& c = cells[i];
      s.nodes.insert(s.nodes.end(), c.nodes.begin(), c.nodes.end());
      s.xs.push_back(c.left[1 - c.r_slot]);
      s.hs.push_back(c.h);
    }
    s.h_init = head.left[head.r_slot];
    s.c_init = head.c_prev;
    s.c_last = cells[chain.back()].c;
    s.batch = head.batch;
    s.hidden = H;
    s.input = g.value(W).desc.shape[0];
    std::vector<Block> wb, rb, bb;
    for (int r = 0; r < 4; ++r) {
      wb.push_back({g.value(W).data.get(), head.piece[r] * H});
      rb.push_back({g.value(R).data.get(), head.piece[r] * H});
      bb.push_back({g.value(head.bias).data.get(), head.piece[r] * H});
    }
    for (int r = 0; r < 4; ++r) bb.push_back({});  // Rb = 0: the cell folds one bias
    s.W = onnx_weight(wb, H);
    s.R = onnx_weight(rb, H);
    s.B = onnx_bias(bb, H);
    s.attrs.set("hidden_size", H);
    seqs.push_back(std::move(s));
  }
  return seqs;
}


std::vector<Seq> gru_chains(const Graph& g, const Matcher& m) {
  std::vector<GruCell> cells;
  std::vector<bool> taken(g.num_nodes(), false);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    auto c = m.match_gru(n);
    if (!c) continue;
    bool busy = false;
    for (NodeId x : c->nodes) busy = busy || taken[x];
    if (busy) continue;
    for (NodeId x : c->nodes) taken[x] = true;
    cells.push_back(std::move(*c));
  }
  std::unordered_map<ValueId, int> by_h;
  for (size_t i = 0; i < cells.size(); ++i) by_h[cells[i].h] = static_cast<int>(i);
  for (size_t j = 0; j < cells.size(); ++j) {
    auto it = by_h.find(cells[j].h_prev);
    if (it == by_h.end() || cells[it->second].key() != cells[j].key()) continue;
    GruCell& p = cells[it->second];
    cells[j].pred = it->second;
    if (p.succ >= 0) p.conflict = true;
    p.succ = static_cast<int>(j);
  }
  std::vector<Seq> seqs;
  for (size_t h = 0; h < cells.size(); ++h) {
    if (cells[h].pred >= 0) continue;
    std::vector<int> chain;
    bool ok = true;
    for (int i = static_cast<int>(h); i >= 0; i = cells[i].succ) {
      chain.push_back(i);
      ok = ok && !cells[i].conflict;
    }
    const GruCell& c0 = cells[h];
    std::unordered_set<NodeId> members;
    std::vector<ValueId> frontier{c0.h_prev};
    for (int i : chain) {
      members.insert(cells[i].nodes.begin(), cells[i].nodes.end());
      frontier.push_back(cells[i].x);
    }
    if (!ok || !inputs_independent(g, frontier, members)) continue;
    const int64_t H = c0.hidden;
    Seq s;
    s.op = "GRU";
    for (int i : chain) {
      s.nodes.insert(s.nodes.end(), cells[i].nodes.begin(), cells[i].nodes.end());
      s.xs.push_back(cells[i].x);
      s.hs.push_back(cells[i].h);
    }
    s.h_init = c0.h_prev;
    s.batch = c0.batch;
    s.hidden = H;
    s.input = g.value(c0.W).desc.shape[0];
    const Tensor* W = g.value(c0.W).data.get();
    const Tensor* b = g.value(c0.b).data.get();
    const Tensor* R = g.value(c0.R).data.get();
    const int64_t zc = c0.zi * H, rc = (1 - c0.zi) * H;  // z, r inside the zr block
    s.W = onnx_weight({{W, c0.x_zr_col + zc}, {W, c0.x_zr_col + rc}, {W, c0.x_h_col}}, H);
    if (c0.lbr) {
      const Tensor* Rb = g.value(c0.Rb).data.get();
      s.R = onnx_weight({{R, c0.h_zr_col + zc}, {R, c0.h_zr_col + rc}, {R, c0.h_h_col}}, H);
      s.B = onnx_bias({{b, c0.x_zr_col + zc}, {b, c0.x_zr_col + rc}, {b, c0.x_h_col},
                       {Rb, c0.h_zr_col + zc}, {Rb, c0.h_zr_col + rc}, {Rb, c0.h_h_col}}, H);
    } else {
      const Tensor* Rh = g.value(c0.R_h).data.get();
      s.R = onnx_weight({{R, zc}, {R, rc}, {Rh, 0}}, H);
      s.B = onnx_bias({{b, c0.x_zr_col + zc}, {b, c0.x_zr_col + rc}, {b, c0.x_h_col}, {}, {}, {}},
                      H);
    }
    s.attrs.set("hidden_size", H);
    s.attrs.set("linear_before_reset", int64_t{c0.lbr ? 1 : 0});
    seqs.push_back(std::move(s));
  }
  return seqs;
}

}  // namespace

Result<RnnFusionResult> fuse_rnn_cells(const Graph& g, const ShapeInferencer& shapes) {
  Matcher m(g);
  std::vector<Seq> seqs = lstm_chains(g, m);
  {
    std::vector<bool> used(g.num_nodes(), false);
    for (const Seq& s : seqs)
      for (NodeId n : s.nodes) used[n] = true;
    for (Seq& s : gru_chains(g, m)) {
      bool overlap = false;
      for (NodeId n : s.nodes) overlap = overlap || used[n];
      if (!overlap) seqs.push_back(std::move(s));
    }
  }
  RnnFusionResult result;
  if (seqs.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(result.graph, GraphBuilder::from_graph(g).finish(shapes));
    return result;
  }
  // Rebuild: the original graph minus the chains' nodes, plus one sequence op per chain.
  std::vector<bool> removed(g.num_nodes(), false);
  for (const Seq& q : seqs)
    for (NodeId n : q.nodes) removed[n] = true;
  const size_t K = seqs.size();
  // Where each chain's X comes from, cheapest first: another fused chain's Y (stacked layers),
  // the input of a Split along axis 0 whose pieces only the cells read (as build_lstm splits x),
  // else a Concat of the x_t reshaped to [1, B, I].
  std::vector<int> x_from_chain(K, -1);
  std::vector<NodeId> x_from_split(K, kNoId), y_concat(K, kNoId);
  std::unordered_set<ValueId> needed;  // values the fallback X reads
  for (size_t k = 0; k < K; ++k) {
    const auto& xs = seqs[k].xs;
    const int64_t T = static_cast<int64_t>(xs.size()), B = seqs[k].batch;
    for (size_t j = 0; j < K && x_from_chain[k] < 0; ++j)
      if (j != k && seqs[j].hs == xs) x_from_chain[k] = static_cast<int>(j);
    if (x_from_chain[k] >= 0) continue;
    const Value& x0 = g.value(xs[0]);
    if (T > 1 && x0.producer != kNoId) {
      const Node& s = g.node(x0.producer);
      bool ok = s.op == "Split" && s.outputs == xs && s.inputs.size() == 1 &&
                !removed[x0.producer] && g.value(s.inputs[0]).desc.rank() == 2 &&
                g.value(s.inputs[0]).desc.shape[0] == T * B;
      auto axis = attr_int(s.attrs, "", "axis", 0);
      ok = ok && axis.is_ok() && *axis == 0;
      for (ValueId v : xs) {
        auto cs = g.consumers(v);
        ok = ok && !g.value(v).is_output &&
             std::all_of(cs.begin(), cs.end(), [&](NodeId n) { return removed[n]; });
      }
      if (ok) {
        x_from_split[k] = x0.producer;
        continue;
      }
    }
    needed.insert(xs.begin(), xs.end());
  }
  for (size_t k = 0; k < K; ++k) {
    if (x_from_split[k] != kNoId) removed[x_from_split[k]] = true;
    // A Concat along axis 0 of exactly h_0 .. h_{T-1} (as build_lstm assembles y) is Y itself.
    const auto& hs = seqs[k].hs;
    for (NodeId n : g.consumers(hs[0])) {
      const Node& c = g.node(n);
      auto axis = attr_int(c.attrs, "", "axis", 0);
      if (hs.size() > 1 && c.op == "Concat" && c.inputs == hs && !removed[n] && axis.is_ok() &&
          *axis == 0) {
        y_concat[k] = n;
        removed[n] = true;
        break;
      }
    }
  }

  std::unordered_set<std::string> names;
  for (const Value& v : g.values()) names.insert(v.name);
  for (const Node& n : g.nodes()) names.insert(n.name);
  auto fresh = [&](const std::string& want) {
    std::string name = want;
    for (int k = 1; names.count(name); ++k) name = want + "_" + std::to_string(k);
    names.insert(name);
    return name;
  };

  GraphBuilder b(g.source());
  for (ValueId id = 0; id < g.num_values(); ++id) {
    const Value& v = g.value(id);
    if (v.kind == ValueKind::kInput) b.add_input(v.name, v.desc);
    if (v.kind != ValueKind::kConstant) continue;
    // Weights only the fused cells read are dropped (the sequence op holds permuted copies).
    auto cs = g.consumers(id);
    if (v.is_output || std::any_of(cs.begin(), cs.end(), [&](NodeId n) { return !removed[n]; }))
      b.add_constant(v.name, v.data);
  }
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (removed[id]) continue;
    const Node& n = g.node(id);
    std::vector<std::string> ins, outs;
    for (ValueId v : n.inputs) ins.push_back(v == kNoId ? std::string() : g.value(v).name);
    for (ValueId v : n.outputs) outs.push_back(g.value(v).name);
    b.add_node(n.op, n.name, ins, outs, n.attrs);
  }
  // A value the rewritten graph still reads (or returns) must be produced again.
  auto still_used = [&](ValueId v) {
    auto cs = g.consumers(v);
    return g.value(v).is_output || needed.count(v) ||
           std::any_of(cs.begin(), cs.end(), [&](NodeId n) { return !removed[n]; });
  };

  std::vector<std::string> y_names(K), bases(K);
  for (size_t k = 0; k < K; ++k) {
    std::string lower = seqs[k].op == "LSTM" ? "lstm" : "gru";
    bases[k] = fresh(lower + "_fused" + std::to_string(k));
    y_names[k] = fresh(bases[k] + "/Y");
  }
  for (size_t k = 0; k < K; ++k) {
    Seq& q = seqs[k];
    const int64_t T = static_cast<int64_t>(q.xs.size()), B = q.batch, H = q.hidden, I = q.input;
    const bool lstm = q.op == "LSTM";
    const std::string& base = bases[k];
    auto name = [&](const std::string& what) { return fresh(base + "/" + what); };
    auto reshape = [&](const std::string& in, const std::string& shape, const std::string& out) {
      b.add_node("Reshape", fresh(base + "/reshape"), {in, shape}, {out});
    };
    const std::string shape_x = name("shape_x"), shape_s = name("shape_state"),
                      shape_h = name("shape_h");
    b.add_constant(shape_x, int_tensor({1, B, I}));
    b.add_constant(shape_s, int_tensor({1, B, H}));
    b.add_constant(shape_h, int_tensor({B, H}));

    std::string X;
    if (x_from_chain[k] >= 0 || x_from_split[k] != kNoId) {
      const std::string shape_seq = name("shape_seq");
      b.add_constant(shape_seq, int_tensor({T, B, I}));
      X = name("X");
      reshape(x_from_chain[k] >= 0 ? y_names[x_from_chain[k]]
                                   : g.value(g.node(x_from_split[k]).inputs[0]).name,
              shape_seq, X);
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
        b.add_node("Concat", fresh(base + "/concat_x"), parts, {X}, std::move(a));
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
    b.add_constant(wn, std::move(q.W));
    b.add_constant(rn, std::move(q.R));
    b.add_constant(bn, std::move(q.B));
    const std::string& Y = y_names[k];
    const std::string Yh = name("Y_h");
    const std::string Yc = lstm ? name("Y_c") : std::string();
    if (lstm)
      b.add_node("LSTM", base, {X, wn, rn, bn, "", h0, c0}, {Y, Yh, Yc}, q.attrs);
    else
      b.add_node("GRU", base, {X, wn, rn, bn, "", h0}, {Y, Yh}, q.attrs);

    if (y_concat[k] != kNoId) {
      const std::string shape_rows = name("shape_rows");
      b.add_constant(shape_rows, int_tensor({T * B, H}));
      reshape(Y, shape_rows, g.value(g.node(y_concat[k]).outputs[0]).name);
    }
    for (int64_t t = 0; t < T; ++t) {
      const ValueId h = q.hs[t];
      if (!still_used(h)) continue;
      if (t == T - 1) {
        reshape(Yh, shape_h, g.value(h).name);
        continue;
      }
      Attributes sa;
      sa.set("starts", std::vector<int64_t>{t});
      sa.set("ends", std::vector<int64_t>{t + 1});
      sa.set("axes", std::vector<int64_t>{0});
      const std::string yt = name("y" + std::to_string(t));
      b.add_node("Slice", fresh(base + "/slice"), {Y}, {yt}, std::move(sa));
      reshape(yt, shape_h, g.value(h).name);
    }
    if (lstm && still_used(q.c_last)) reshape(Yc, shape_h, g.value(q.c_last).name);
    (lstm ? result.lstm_cells : result.gru_cells) += static_cast<int>(T);
    ++(lstm ? result.lstm_sequences : result.gru_sequences);
    result.cells += static_cast<int>(T);
    ++result.sequences;
  }
  for (ValueId v : g.outputs()) b.add_output(g.value(v).name);
  for (const auto& [k, v] : g.metadata()) b.set_metadata(k, v);
  GRAPHI_ASSIGN_OR_RETURN(result.graph, b.finish(shapes));
  return result;
}

}  // namespace graphi::graph::passes
