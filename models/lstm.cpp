#include "models/lstm.h"

#include "models/rnn_graph.h"

namespace graphi::models {

Result<graph::Graph> build_lstm(const RnnSpec& spec, const graph::ShapeInferencer& shapes) {
  GRAPHI_RETURN_IF_ERROR(validate_rnn_spec(spec, "lstm", 4));
  const int64_t H = spec.hidden, L = spec.layers, T = spec.seq;
  graph::GraphBuilder b("lstm(" + rnn_spec_to_string(spec) + ")");
  detail::set_rnn_metadata(b, spec, "lstm", "iofc");
  detail::RnnGraph g(b, spec);

  g.input("x", T, spec.input);
  g.input("h0", L, H);
  g.input("c0", L, H);
  std::vector<std::string> inputs = g.split_input("x", T, spec.input, "t");
  const std::vector<std::string> h0 = g.split_input("h0", L, H, "l");
  const std::vector<std::string> c0 = g.split_input("c0", L, H, "l");
  std::vector<std::string> h_n, c_n;

  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "l" + std::to_string(l) + "/";
    const int64_t in = l == 0 ? spec.input : H;
    g.weight(p + "W", {in, 4 * H});
    g.weight(p + "R", {H, 4 * H});
    g.weight(p + "b", {4 * H});
    std::string h = h0[l], c = c0[l];
    for (int64_t t = 0; t < T; ++t) {
      auto n = [&](const char* what) { return detail::RnnGraph::step_name(l, t, what); };
      g.op("MatMul", n("gates_x"), {inputs[t], p + "W"});
      g.op("Add", n("gates_xb"), {n("gates_x"), p + "b"});
      g.op("MatMul", n("gates_h"), {h, p + "R"});
      g.op("Add", n("gates"), {n("gates_xb"), n("gates_h")});
      g.split(n("split"), n("gates"), 1, {H, H, H, H},
              {n("i_pre"), n("o_pre"), n("f_pre"), n("g_pre")});
      g.op("Sigmoid", n("i"), {n("i_pre")});
      g.op("Sigmoid", n("o"), {n("o_pre")});
      g.op("Sigmoid", n("f"), {n("f_pre")});
      g.op("Tanh", n("g"), {n("g_pre")});
      g.op("Mul", n("fc"), {n("f"), c});
      g.op("Mul", n("ig"), {n("i"), n("g")});
      c = g.op("Add", n("c"), {n("fc"), n("ig")});
      g.op("Tanh", n("tanh_c"), {c});
      h = g.op("Mul", n("h"), {n("o"), n("tanh_c")});
      inputs[t] = h;  // the next layer's input at step t
    }
    h_n.push_back(h);
    c_n.push_back(c);
  }
  g.concat_output("y", inputs);
  g.concat_output("h_n", h_n);
  g.concat_output("c_n", c_n);
  return b.finish(shapes);
}

}  // namespace graphi::models
