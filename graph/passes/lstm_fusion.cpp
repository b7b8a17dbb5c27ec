#include "graph/passes/lstm_fusion.h"

#include <algorithm>
#include <array>
#include <optional>
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

 private:
  static bool v_is_root_leaf(const std::vector<ValueId>& leaves, ValueId root) {
    return leaves.size() == 1 && leaves[0] == root;
  }
  const Graph& g_;
};

// W' [1, 4H, in] in ONNX gate order from w [in, 4H] whose column block piece[r] holds role r.
Tensor onnx_weight(const Tensor& w, const std::array<int, 4>& piece, int64_t H) {
  const int64_t in = w.desc().shape[0];
  Tensor t(TensorDesc{DType::kF32, {1, 4 * H, in}});
  const float* src = w.data_as<float>();
  float* dst = t.data_as<float>();
  for (int r = 0; r < 4; ++r)
    for (int64_t j = 0; j < H; ++j)
      for (int64_t k = 0; k < in; ++k)
        dst[(r * H + j) * in + k] = src[k * 4 * H + piece[r] * H + j];
  return t;
}

Tensor int_tensor(const Shape& s) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(s.size())}});
  for (size_t i = 0; i < s.size(); ++i) t.data_as<int64_t>()[i] = s[i];
  return t;
}

}  // namespace

Result<LstmFusionResult> fuse_lstm_cells(const Graph& g, const ShapeInferencer& shapes) {
  Matcher m(g);
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
  std::vector<std::vector<int>> chains;
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
    std::unordered_set<NodeId> seen;
    while (ok && !frontier.empty()) {
      const NodeId p = g.value(frontier.back()).producer;
      frontier.pop_back();
      if (p == kNoId || !seen.insert(p).second) continue;
      if (members.count(p)) ok = false;
      for (ValueId v : g.node(p).inputs)
        if (v != kNoId) frontier.push_back(v);
    }
    if (ok) chains.push_back(std::move(chain));
  }

  LstmFusionResult result;
  if (chains.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(result.graph, GraphBuilder::from_graph(g).finish(shapes));
    return result;
  }

  // Rebuild: the original graph minus the chains' nodes, plus one LSTM op per chain.
  std::vector<bool> removed(g.num_nodes(), false);
  for (const auto& chain : chains)
    for (int i : chain)
      for (NodeId n : cells[i].nodes) removed[n] = true;
  const size_t K = chains.size();
  std::vector<std::vector<ValueId>> xs(K), hs(K);
  for (size_t k = 0; k < K; ++k)
    for (int i : chains[k]) {
      xs[k].push_back(cells[i].left[1 - cells[i].r_slot]);
      hs[k].push_back(cells[i].h);
    }
  // Where each chain's X comes from, cheapest first: another fused chain's Y (stacked layers),
  // the input of a Split along axis 0 whose pieces only the cells read (as build_lstm splits x),
  // else a Concat of the x_t reshaped to [1, B, I].
  std::vector<int> x_from_chain(K, -1);
  std::vector<NodeId> x_from_split(K, kNoId), y_concat(K, kNoId);
  std::unordered_set<ValueId> needed;  // values the fallback X reads
  for (size_t k = 0; k < K; ++k) {
    const int64_t T = static_cast<int64_t>(xs[k].size()), B = cells[chains[k][0]].batch;
    for (size_t j = 0; j < K && x_from_chain[k] < 0; ++j)
      if (j != k && hs[j] == xs[k]) x_from_chain[k] = static_cast<int>(j);
    if (x_from_chain[k] >= 0) continue;
    const Value& x0 = g.value(xs[k][0]);
    if (T > 1 && x0.producer != kNoId) {
      const Node& s = g.node(x0.producer);
      bool ok = s.op == "Split" && s.outputs == xs[k] && s.inputs.size() == 1 &&
                !removed[x0.producer] && g.value(s.inputs[0]).desc.rank() == 2 &&
                g.value(s.inputs[0]).desc.shape[0] == T * B;
      auto axis = attr_int(s.attrs, "", "axis", 0);
      ok = ok && axis.is_ok() && *axis == 0;
      for (ValueId v : xs[k]) {
        auto cs = g.consumers(v);
        ok = ok && !g.value(v).is_output &&
             std::all_of(cs.begin(), cs.end(), [&](NodeId n) { return removed[n]; });
      }
      if (ok) {
        x_from_split[k] = x0.producer;
        continue;
      }
    }
    needed.insert(xs[k].begin(), xs[k].end());
  }
  for (size_t k = 0; k < K; ++k) {
    if (x_from_split[k] != kNoId) removed[x_from_split[k]] = true;
    // A Concat along axis 0 of exactly h_0 .. h_{T-1} (as build_lstm assembles y) is Y itself.
    const ValueId h0v = hs[k][0];
    for (NodeId n : g.consumers(h0v)) {
      const Node& c = g.node(n);
      auto axis = attr_int(c.attrs, "", "axis", 0);
      if (hs[k].size() > 1 && c.op == "Concat" && c.inputs == hs[k] && !removed[n] &&
          axis.is_ok() && *axis == 0) {
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
    // Weights only the fused cells read are dropped (the LSTM op holds the permuted copies).
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

  std::vector<std::string> y_names(K);
  std::vector<std::string> bases(K);
  for (size_t k = 0; k < K; ++k) {
    bases[k] = fresh("lstm_fused" + std::to_string(k));
    y_names[k] = fresh(bases[k] + "/Y");
  }
  for (size_t k = 0; k < K; ++k) {
    const auto& chain = chains[k];
    const Cell& head = cells[chain.front()];
    const Cell& last = cells[chain.back()];
    const int64_t T = static_cast<int64_t>(chain.size()), B = head.batch, H = head.hidden;
    const ValueId W = head.weight[1 - head.r_slot], R = head.weight[head.r_slot];
    const int64_t I = g.value(W).desc.shape[0];
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
      for (ValueId v : xs[k]) {
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
    const std::string h0 = name("initial_h"), c0 = name("initial_c");
    reshape(g.value(head.left[head.r_slot]).name, shape_s, h0);
    reshape(g.value(head.c_prev).name, shape_s, c0);
    const std::string wn = name("W"), rn = name("R"), bn = name("B");
    b.add_constant(wn, onnx_weight(*g.value(W).data, head.piece, H));
    b.add_constant(rn, onnx_weight(*g.value(R).data, head.piece, H));
    Tensor bias(TensorDesc{DType::kF32, {1, 8 * H}});  // Rb = 0: the cell folds one bias
    const float* bsrc = g.value(head.bias).data->data_as<float>();
    for (int r = 0; r < 4; ++r)
      for (int64_t j = 0; j < H; ++j)
        bias.data_as<float>()[r * H + j] = bsrc[head.piece[r] * H + j];
    b.add_constant(bn, std::move(bias));
    const std::string& Y = y_names[k];
    const std::string Yh = name("Y_h"), Yc = name("Y_c");
    Attributes la;
    la.set("hidden_size", H);
    b.add_node("LSTM", base, {X, wn, rn, bn, "", h0, c0}, {Y, Yh, Yc}, std::move(la));

    if (y_concat[k] != kNoId) {
      const std::string shape_rows = name("shape_rows");
      b.add_constant(shape_rows, int_tensor({T * B, H}));
      reshape(Y, shape_rows, g.value(g.node(y_concat[k]).outputs[0]).name);
    }
    for (int64_t t = 0; t < T; ++t) {
      const Cell& c = cells[chain[t]];
      if (!still_used(c.h)) continue;
      if (t == T - 1) {
        reshape(Yh, shape_h, g.value(c.h).name);
        continue;
      }
      Attributes sa;
      sa.set("starts", std::vector<int64_t>{t});
      sa.set("ends", std::vector<int64_t>{t + 1});
      sa.set("axes", std::vector<int64_t>{0});
      const std::string yt = name("y" + std::to_string(t));
      b.add_node("Slice", fresh(base + "/slice"), {Y}, {yt}, std::move(sa));
      reshape(yt, shape_h, g.value(c.h).name);
    }
    if (still_used(last.c)) reshape(Yc, shape_h, g.value(last.c).name);
    result.cells += static_cast<int>(T);
    ++result.sequences;
  }
  for (ValueId v : g.outputs()) b.add_output(g.value(v).name);
  for (const auto& [k, v] : g.metadata()) b.set_metadata(k, v);
  GRAPHI_ASSIGN_OR_RETURN(result.graph, b.finish(shapes));
  return result;
}

}  // namespace graphi::graph::passes
