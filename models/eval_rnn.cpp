// build_rnn_classifier: the evaluation's LSTM and PhasedLSTM (models/eval_models.h), unrolled
// into plain ops so that every op has a gradient rule and `graphi train` differentiates it.
//
// Layer l, step t (x_t the layer's input, h/c the previous step's state, absent at t = 0 where
// the state is zero, so step 0 has no recurrent MatMul):
//   gates = x_t W + b (+ h R)   i, o, f = sigmoid, g = tanh of the column blocks i | o | f | c
//   c' = f * c + i * g   (t = 0: i * g)          h' = o * tanh(c')
// LSTM: (h, c) <- (h', c'). PhasedLSTM (Neil et al. 2016, as ops/rnn/phased_lstm.h computes it):
//   u = (ts - shift) / tau,  phi = u - floor(u)                  (floor modulo: phi in [0, 1))
//   k = where(phi < r_on / 2, 2 phi / r_on, where(phi < r_on, 2 - 2 phi / r_on, alpha * phi))
//   c <- k * c' + (1 - k) * c,   h <- k * h' + (1 - k) * h       (t = 0: k * c', k * h')
// with alpha = 0.001 and ts = times[t] as [B, 1]. logits = h_{T-1} of the last layer Wfc + bfc.
#include <cmath>

#include "graph/graph_builder.h"
#include "models/eval_models.h"
#include "models/phased_lstm.h"
#include "models/weights.h"

namespace graphi::models {

namespace {

Tensor i64_vector(const std::vector<int64_t>& v) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) t.data_as<int64_t>()[i] = v[i];
  return t;
}

Tensor f32_scalar(float x) {
  Tensor t(TensorDesc{DType::kF32, {}});
  *t.data_as<float>() = x;
  return t;
}

}  // namespace

Result<graph::Graph> build_rnn_classifier(const EvalDims& d, bool phased, uint64_t seed,
                                          const graph::ShapeInferencer& shapes) {
  const int64_t H = d.hidden, T = d.seq, B = d.batch, L = d.layers;
  const std::string kind = phased ? "phased-lstm" : "lstm";
  graph::GraphBuilder b(kind + "(T=" + std::to_string(T) + " H=" + std::to_string(H) +
                        " L=" + std::to_string(L) + " B=" + std::to_string(B) + ")");
  b.set_metadata("producer", "graphi model");
  b.set_metadata("model", kind);
  WeightRng rng(seed);
  auto op = [&](const std::string& type, const std::string& name,
                const std::vector<std::string>& in, graph::Attributes a = {}) {
    b.add_node(type, name, in, {name}, std::move(a));
    return name;
  };

  b.add_input("x", TensorDesc{DType::kF32, {T, B, H}});
  if (phased) b.add_input("times", TensorDesc{DType::kF32, {T, B}});
  b.add_constant("shape/row", i64_vector({B, H}));
  b.add_constant("shape/col", i64_vector({B, 1}));
  std::vector<std::string> xs, ts;
  {
    std::vector<std::string> parts;
    for (int64_t t = 0; t < T; ++t) parts.push_back("x/t" + std::to_string(t) + "/3d");
    graph::Attributes a;
    a.set("axis", int64_t{0});
    a.set("split", std::vector<int64_t>(T, 1));
    b.add_node("Split", "x/split", {"x"}, parts, std::move(a));
    for (int64_t t = 0; t < T; ++t)
      xs.push_back(op("Reshape", "x/t" + std::to_string(t), {parts[t], "shape/row"}));
  }
  if (phased) {
    std::vector<std::string> parts;
    for (int64_t t = 0; t < T; ++t) parts.push_back("times/t" + std::to_string(t) + "/1d");
    graph::Attributes a;
    a.set("axis", int64_t{0});
    a.set("split", std::vector<int64_t>(T, 1));
    b.add_node("Split", "times/split", {"times"}, parts, std::move(a));
    for (int64_t t = 0; t < T; ++t)
      ts.push_back(op("Reshape", "times/t" + std::to_string(t), {parts[t], "shape/col"}));
    b.add_constant("k/one", f32_scalar(1.0f));
    b.add_constant("k/two", f32_scalar(2.0f));
    b.add_constant("k/half", f32_scalar(0.5f));
    b.add_constant("k/alpha", f32_scalar(0.001f));
  }

  const float bound = 1.0f / std::sqrt(static_cast<float>(H));
  std::string h_last;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "l" + std::to_string(l) + "/";
    b.add_constant(p + "W", uniform_tensor({H, 4 * H}, bound, rng));
    b.add_constant(p + "R", uniform_tensor({H, 4 * H}, bound, rng));
    b.add_constant(p + "b", uniform_tensor({4 * H}, bound, rng));
    if (phased) {
      add_phased_time_gate_params(b, p, Shape{H}, rng);
      op("Mul", p + "r_half", {p + "r_on", "k/half"});
    }
    std::string h, c;  // empty: zero state
    for (int64_t t = 0; t < T; ++t) {
      const std::string n = p + "t" + std::to_string(t) + "/";
      std::string gates = op("Add", n + "gates_xb", {op("MatMul", n + "gates_x", {xs[t], p + "W"}),
                                                     p + "b"});
      if (!h.empty())
        gates = op("Add", n + "gates", {gates, op("MatMul", n + "gates_h", {h, p + "R"})});
      graph::Attributes sa;
      sa.set("axis", int64_t{1});
      sa.set("split", std::vector<int64_t>{H, H, H, H});
      b.add_node("Split", n + "split", {gates},
                 {n + "i_pre", n + "o_pre", n + "f_pre", n + "g_pre"}, std::move(sa));
      const std::string i = op("Sigmoid", n + "i", {n + "i_pre"});
      const std::string o = op("Sigmoid", n + "o", {n + "o_pre"});
      const std::string g = op("Tanh", n + "g", {n + "g_pre"});
      std::string c_new = op("Mul", n + "ig", {i, g});
      if (!c.empty()) {
        const std::string f = op("Sigmoid", n + "f", {n + "f_pre"});
        c_new = op("Add", n + "c_cell", {op("Mul", n + "fc", {f, c}), c_new});
      }
      const std::string h_new = op("Mul", n + "h_cell", {o, op("Tanh", n + "tanh_c", {c_new})});
      if (!phased) {
        c = c_new;
        h = h_new;
      } else {
        const std::string u = op("Div", n + "u", {op("Sub", n + "ts_s", {ts[t], p + "shift"}),
                                                  p + "tau"});
        const std::string phi = op("Sub", n + "phi", {u, op("Floor", n + "floor_u", {u})});
        const std::string up =
            op("Div", n + "k_up", {op("Mul", n + "phi2", {phi, "k/two"}), p + "r_on"});
        const std::string down = op("Sub", n + "k_down", {"k/two", up});
        const std::string closed = op("Mul", n + "k_closed", {phi, "k/alpha"});
        const std::string in_half = op("Less", n + "in_half", {phi, p + "r_half"});
        const std::string in_open = op("Less", n + "in_open", {phi, p + "r_on"});
        const std::string k =
            op("Where", n + "k", {in_half, up, op("Where", n + "k_late", {in_open, down, closed})});
        if (c.empty()) {
          c = op("Mul", n + "c", {k, c_new});
          h = op("Mul", n + "h", {k, h_new});
        } else {
          const std::string keep = op("Sub", n + "keep", {"k/one", k});
          c = op("Add", n + "c", {op("Mul", n + "kc", {k, c_new}), op("Mul", n + "keep_c", {keep, c})});
          h = op("Add", n + "h", {op("Mul", n + "kh", {k, h_new}), op("Mul", n + "keep_h", {keep, h})});
        }
      }
      xs[t] = h;  // the next layer's input at step t
    }
    h_last = h;
  }
  b.add_constant("fc/W", uniform_tensor({H, d.classes}, bound, rng));
  b.add_constant("fc/b", uniform_tensor({d.classes}, bound, rng));
  op("Gemm", "logits", {h_last, "fc/W", "fc/b"});
  b.add_output("logits");
  return b.finish(shapes);
}

Result<graph::Graph> build_phased_lstm_sequence_classifier(const EvalDims& d, uint64_t seed,
                                                           const graph::ShapeInferencer& shapes) {
  const int64_t H = d.hidden, T = d.seq, B = d.batch, L = d.layers;
  graph::GraphBuilder b("phased-lstm(T=" + std::to_string(T) + " H=" + std::to_string(H) +
                        " L=" + std::to_string(L) + " B=" + std::to_string(B) + ", sequence ops)");
  b.set_metadata("producer", "graphi model");
  b.set_metadata("model", "phased-lstm");
  WeightRng rng(seed);  // drawn in build_rnn_classifier's order, so the weights are the same
  b.add_input("x", TensorDesc{DType::kF32, {T, B, H}});
  b.add_input("times", TensorDesc{DType::kF32, {T, B}});
  b.add_constant("shape/unit", i64_vector({1, H}));
  b.add_constant("shape/bias", i64_vector({1, 8 * H}));
  b.add_constant("shape/seq", i64_vector({T, B, H}));
  b.add_constant("shape/row", i64_vector({B, H}));
  b.add_constant("k/zero", f32_scalar(0.0f));
  const float bound = 1.0f / std::sqrt(static_cast<float>(H));
  // [H, 4H] (x W, gate columns i | o | f | c) -> ONNX's [1, 4H, H] (rows i, o, f, c).
  auto onnx_weights = [&](const Tensor& m) {
    Tensor t(TensorDesc{DType::kF32, {1, 4 * H, H}});
    for (int64_t i = 0; i < H; ++i)
      for (int64_t col = 0; col < 4 * H; ++col)
        t.data_as<float>()[col * H + i] = m.data_as<float>()[i * 4 * H + col];
    return t;
  };
  std::string x = "x", h_last;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "l" + std::to_string(l) + "/";
    b.add_constant(p + "W", onnx_weights(uniform_tensor({H, 4 * H}, bound, rng)));
    b.add_constant(p + "R", onnx_weights(uniform_tensor({H, 4 * H}, bound, rng)));
    b.add_constant(p + "b", uniform_tensor({4 * H}, bound, rng));
    add_phased_time_gate_params(b, p, Shape{H}, rng);
    // B = [Wb, Rb] = [b, 0 * b]: Rb stays zero and its gradient reaches b through the product's
    // factor 0, so b trains as the unrolled cells' one bias does.
    b.add_node("Mul", p + "b_zero", {p + "b", "k/zero"}, {p + "b_zero"});
    graph::Attributes cat;
    cat.set("axis", int64_t{0});
    b.add_node("Concat", p + "b_cat", {p + "b", p + "b_zero"}, {p + "b_cat"}, std::move(cat));
    b.add_node("Reshape", p + "B", {p + "b_cat", "shape/bias"}, {p + "B"});
    for (const char* name : {"tau", "shift", "r_on"})
      b.add_node("Reshape", p + name + "/1h", {p + name, "shape/unit"}, {p + name + "/1h"});
    graph::Attributes a;
    a.set("hidden_size", H);
    const bool last = l + 1 == L;  // Y feeds the next layer; the last layer's Y_h the classifier
    std::vector<std::string> outs = {p + "Y"};
    if (last) outs.push_back(p + "Y_h");
    b.add_node("PhasedLSTM", p + "phased_lstm",
               {x, p + "W", p + "R", p + "B", "", "", "", "", "times", p + "tau/1h",
                p + "shift/1h", p + "r_on/1h"},
               outs, std::move(a));
    if (!last) {
      b.add_node("Reshape", p + "y", {p + "Y", "shape/seq"}, {p + "y"});
      x = p + "y";
    } else {
      h_last = p + "h_last";
      b.add_node("Reshape", h_last, {p + "Y_h", "shape/row"}, {h_last});
    }
  }
  b.add_constant("fc/W", uniform_tensor({H, d.classes}, bound, rng));
  b.add_constant("fc/b", uniform_tensor({d.classes}, bound, rng));
  b.add_node("Gemm", "logits", {h_last, "fc/W", "fc/b"}, {"logits"});
  b.add_output("logits");
  return b.finish(shapes);
}

}  // namespace graphi::models
