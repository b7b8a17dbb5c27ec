#include "models/phased_lstm.h"

#include <cmath>

#include "graph/graph_builder.h"
#include "models/rnn_graph.h"
#include "models/weights.h"

namespace graphi::models {

namespace {

Tensor i64_vector(const std::vector<int64_t>& v) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) t.data_as<int64_t>()[i] = v[i];
  return t;
}

}  // namespace

int64_t phased_lstm_parameter_count(const RnnSpec& s) {
  int64_t n = 0;
  for (int64_t l = 0; l < s.layers; ++l) {
    const int64_t in = l == 0 ? s.input : s.hidden;
    n += 4 * s.hidden * (in + s.hidden) + 8 * s.hidden + 3 * s.hidden;
  }
  return n;
}

Result<graph::Graph> build_phased_lstm(const RnnSpec& spec, const graph::ShapeInferencer& shapes) {
  GRAPHI_RETURN_IF_ERROR(validate_rnn_spec(spec, "phased-lstm", 4));
  const int64_t H = spec.hidden, L = spec.layers, T = spec.seq, B = spec.batch;
  graph::GraphBuilder b("phased-lstm(" + rnn_spec_to_string(spec) + ")");
  detail::set_rnn_metadata(b, spec, "phased-lstm", "iofc");
  WeightRng rng(spec.seed);
  const float bound = 1.0f / std::sqrt(static_cast<float>(H));

  b.add_input("x", TensorDesc{DType::kF32, {T, B, spec.input}});
  b.add_input("times", TensorDesc{DType::kF32, {T, B}});
  b.add_input("h0", TensorDesc{DType::kF32, {L, B, H}});
  b.add_input("c0", TensorDesc{DType::kF32, {L, B, H}});
  b.add_constant("shape/y", i64_vector({T, B, H}));
  auto split_state = [&](const std::string& name) {
    std::vector<std::string> parts;
    if (L == 1) return std::vector<std::string>{name};
    for (int64_t l = 0; l < L; ++l) parts.push_back(name + "/l" + std::to_string(l));
    graph::Attributes a;
    a.set("axis", int64_t{0});
    a.set("split", std::vector<int64_t>(L, 1));
    b.add_node("Split", name + "/split", {name}, parts, a);
    return parts;
  };
  const std::vector<std::string> h0 = split_state("h0"), c0 = split_state("c0");

  std::string x = "x";
  std::vector<std::string> yh, yc;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "l" + std::to_string(l);
    const int64_t in = l == 0 ? spec.input : H;
    b.add_constant(p + "/W", uniform_tensor({1, 4 * H, in}, bound, rng));
    b.add_constant(p + "/R", uniform_tensor({1, 4 * H, H}, bound, rng));
    b.add_constant(p + "/B", uniform_tensor({1, 8 * H}, bound, rng));
    add_phased_time_gate_params(b, p + "/", Shape{1, H}, rng);
    graph::Attributes a;
    a.set("hidden_size", H);
    b.add_node("PhasedLSTM", p,
               {x, p + "/W", p + "/R", p + "/B", "", h0[l], c0[l], "", "times", p + "/tau",
                p + "/shift", p + "/r_on"},
               {p + "/Y", p + "/Y_h", p + "/Y_c"}, a);
    x = l + 1 == L ? "y" : p + "/y";
    b.add_node("Reshape", x, {p + "/Y", "shape/y"}, {x});
    yh.push_back(p + "/Y_h");
    yc.push_back(p + "/Y_c");
  }
  for (auto& [name, parts] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{{"h_n", yh}, {"c_n", yc}}) {
    if (L == 1) {
      b.add_node("Identity", name, parts, {name});
    } else {
      graph::Attributes a;
      a.set("axis", int64_t{0});
      b.add_node("Concat", name, parts, {name}, a);
    }
  }
  b.add_output("y");
  b.add_output("h_n");
  b.add_output("c_n");
  return b.finish(shapes);
}

void add_phased_time_gate_params(graph::GraphBuilder& b, const std::string& prefix,
                                 const Shape& shape, WeightRng& rng) {
  const TensorDesc unit{DType::kF32, shape};
  const int64_t H = unit.numel();
  Tensor tau(unit), shift(unit), r_on(unit);
  for (int64_t j = 0; j < H; ++j) tau.data_as<float>()[j] = std::exp(rng.uniform(0.0f, 3.0f));
  for (int64_t j = 0; j < H; ++j)
    shift.data_as<float>()[j] = rng.uniform(0.0f, 1.0f) * tau.data_as<float>()[j];
  for (int64_t j = 0; j < H; ++j) r_on.data_as<float>()[j] = 0.05f;
  b.add_constant(prefix + "tau", std::move(tau));
  b.add_constant(prefix + "shift", std::move(shift));
  b.add_constant(prefix + "r_on", std::move(r_on));
}

}  // namespace graphi::models
