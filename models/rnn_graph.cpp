#include "models/rnn_graph.h"

#include <cmath>

namespace graphi::models::detail {

std::string RnnGraph::step_name(int64_t layer, int64_t step, const std::string& what) {
  return "l" + std::to_string(layer) + "/t" + std::to_string(step) + "/" + what;
}

std::string RnnGraph::shape_constant(const Shape& shape) {
  for (size_t i = 0; i < shapes_.size(); ++i)
    if (shapes_[i] == shape) return shape_consts_[i];
  std::string name = "shape" + shape_to_string(shape);
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(shape.size())}});
  for (size_t i = 0; i < shape.size(); ++i) t.data_as<int64_t>()[i] = shape[i];
  b_.add_constant(name, std::move(t));
  shapes_.push_back(shape);
  shape_consts_.push_back(name);
  return name;
}

std::string RnnGraph::reshape(const std::string& name, const std::string& input,
                              const Shape& shape) {
  b_.add_node("Reshape", name, {input, shape_constant(shape)}, {name});
  return name;
}

void RnnGraph::split(const std::string& name, const std::string& input, int64_t axis,
                     const std::vector<int64_t>& sizes, const std::vector<std::string>& outputs) {
  graph::Attributes a;
  a.set("axis", axis);
  a.set("split", sizes);
  b_.add_node("Split", name, {input}, outputs, std::move(a));
}

std::string RnnGraph::op(const std::string& type, const std::string& name,
                         const std::vector<std::string>& inputs) {
  b_.add_node(type, name, inputs, {name});
  return name;
}

void RnnGraph::input(const std::string& name, int64_t count, int64_t feat) {
  b_.add_input(name, TensorDesc{DType::kF32, {count, spec_.batch, feat}});
}

std::vector<std::string> RnnGraph::split_input(const std::string& name, int64_t count, int64_t feat,
                                               const std::string& prefix) {
  const int64_t B = spec_.batch;
  // [count, B, feat] -> [count*B, feat] -> count pieces of B rows. With count == 1 the Reshape
  // alone gives the [B, feat] value.
  std::string flat = reshape(name + "/rows", name, {count * B, feat});
  if (count == 1) return {flat};
  std::vector<std::string> parts;
  for (int64_t i = 0; i < count; ++i) parts.push_back(name + "/" + prefix + std::to_string(i));
  split(name + "/split", flat, 0, std::vector<int64_t>(count, B), parts);
  return parts;
}

void RnnGraph::concat_output(const std::string& name, const std::vector<std::string>& parts) {
  const int64_t n = static_cast<int64_t>(parts.size());
  std::string rows = parts.front();
  if (n > 1) {
    graph::Attributes a;
    a.set("axis", int64_t{0});
    rows = name + "/rows";
    b_.add_node("Concat", rows, parts, {rows}, std::move(a));
  }
  reshape(name, rows, {n, spec_.batch, spec_.hidden});
  b_.add_output(name);
}

void RnnGraph::weight(const std::string& name, const Shape& shape) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(spec_.hidden));
  b_.add_constant(name, uniform_tensor(shape, bound, rng_));
}

void set_rnn_metadata(graph::GraphBuilder& b, const RnnSpec& spec, const std::string& cell,
                      const std::string& gate_order) {
  b.set_metadata("producer", "graphi model");
  b.set_metadata("model", cell);
  b.set_metadata("input_size", std::to_string(spec.input));
  b.set_metadata("hidden_size", std::to_string(spec.hidden));
  b.set_metadata("num_layers", std::to_string(spec.layers));
  b.set_metadata("batch", std::to_string(spec.batch));
  b.set_metadata("seq_len", std::to_string(spec.seq));
  b.set_metadata("seed", std::to_string(spec.seed));
  b.set_metadata("gate_order", gate_order);
}

}  // namespace graphi::models::detail
