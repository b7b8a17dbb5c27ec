#include "models/gru.h"

#include "models/rnn_graph.h"

namespace graphi::models {

Result<graph::Graph> build_gru(const RnnSpec& spec, const graph::ShapeInferencer& shapes) {
  GRAPHI_RETURN_IF_ERROR(validate_rnn_spec(spec, "gru", 3));
  const int64_t H = spec.hidden, L = spec.layers, T = spec.seq;
  const bool lbr = spec.linear_before_reset;
  graph::GraphBuilder b("gru(" + rnn_spec_to_string(spec) + ")");
  detail::set_rnn_metadata(b, spec, "gru", "zrh");
  b.set_metadata("linear_before_reset", lbr ? "1" : "0");
  detail::RnnGraph g(b, spec);

  g.input("x", T, spec.input);
  g.input("h0", L, H);
  std::vector<std::string> inputs = g.split_input("x", T, spec.input, "t");
  const std::vector<std::string> h0 = g.split_input("h0", L, H, "l");
  std::vector<std::string> h_n;

  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "l" + std::to_string(l) + "/";
    const int64_t in = l == 0 ? spec.input : H;
    g.weight(p + "W", {in, 3 * H});
    g.weight(p + "b", {3 * H});
    if (lbr) {
      g.weight(p + "R", {H, 3 * H});
      g.weight(p + "Rb", {3 * H});
    } else {
      g.weight(p + "R_zr", {H, 2 * H});
      g.weight(p + "R_h", {H, H});
    }
    std::string h = h0[l];
    for (int64_t t = 0; t < T; ++t) {
      auto n = [&](const char* what) { return detail::RnnGraph::step_name(l, t, what); };
      // Input projection: depends on x_t only (no recurrence).
      g.op("MatMul", n("gates_x"), {inputs[t], p + "W"});
      g.op("Add", n("gates_xb"), {n("gates_x"), p + "b"});
      g.split(n("split_x"), n("gates_xb"), 1, {2 * H, H}, {n("x_zr"), n("x_h")});
      std::string h_part;  // the recurrent contribution to h~'s pre-activation
      if (lbr) {
        g.op("MatMul", n("gates_h"), {h, p + "R"});
        g.op("Add", n("gates_hb"), {n("gates_h"), p + "Rb"});
        g.split(n("split_h"), n("gates_hb"), 1, {2 * H, H}, {n("h_zr"), n("h_h")});
        g.op("Add", n("zr_pre"), {n("x_zr"), n("h_zr")});
      } else {
        g.op("MatMul", n("gates_h"), {h, p + "R_zr"});
        g.op("Add", n("zr_pre"), {n("x_zr"), n("gates_h")});
      }
      g.op("Sigmoid", n("zr"), {n("zr_pre")});
      g.split(n("split_zr"), n("zr"), 1, {H, H}, {n("z"), n("r")});
      if (lbr) {
        h_part = g.op("Mul", n("r_gh"), {n("r"), n("h_h")});
      } else {
        g.op("Mul", n("rh"), {n("r"), h});
        h_part = g.op("MatMul", n("rh_R"), {n("rh"), p + "R_h"});
      }
      g.op("Add", n("hh_pre"), {n("x_h"), h_part});
      g.op("Tanh", n("hh"), {n("hh_pre")});
      g.op("Sub", n("diff"), {h, n("hh")});
      g.op("Mul", n("z_diff"), {n("z"), n("diff")});
      h = g.op("Add", n("h"), {n("hh"), n("z_diff")});
      inputs[t] = h;  // the next layer's input at step t
    }
    h_n.push_back(h);
  }
  g.concat_output("y", inputs);
  g.concat_output("h_n", h_n);
  return b.finish(shapes);
}

}  // namespace graphi::models
