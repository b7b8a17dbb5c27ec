// Internal to models/: the layers PathNet and GoogleNet share (models/eval_models.h), each a few
// plain ops with seeded weights: Conv (+ bias) + Relu, MaxPool, the classifier.
#pragma once

#include <string>
#include <vector>

#include "graph/graph_builder.h"
#include "models/weights.h"

namespace graphi::models::detail {

class CnnGraph {
 public:
  CnnGraph(graph::GraphBuilder& b, uint64_t seed) : b_(b), rng_(seed) {}

  // Conv k x k with `stride` and symmetric `pad`, bias, then Relu. Weights "{name}/W"
  // f32[cout, cin, k, k] uniform in +-sqrt(6 / fan_in) (He) or, with he = false, +-1/sqrt(fan_in)
  // (PyTorch's Conv2d default); "{name}/b" f32[cout] in +-1/sqrt(fan_in), drawn in that order.
  // Returns the Relu's output "{name}".
  std::string conv_relu(const std::string& name, const std::string& x, int64_t cin, int64_t cout,
                        int64_t k, int64_t stride, int64_t pad, bool he = true);
  // MaxPool k x k with `stride` and symmetric `pad`; output "{name}".
  std::string max_pool(const std::string& name, const std::string& x, int64_t k, int64_t stride,
                       int64_t pad);
  // Flattens x f32[B, ...] to [B, features] and applies "fc/W" f32[features, classes] and
  // "fc/b", both uniform in +-1/sqrt(features) (PyTorch's Linear default); output "logits".
  std::string classifier(const std::string& x, int64_t batch, int64_t features, int64_t classes);
  // A node with one output named like the node.
  std::string op(const std::string& type, const std::string& name,
                 const std::vector<std::string>& inputs, graph::Attributes a = {});

 private:
  graph::GraphBuilder& b_;
  WeightRng rng_;
};

}  // namespace graphi::models::detail
