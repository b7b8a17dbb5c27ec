#include "models/cnn_graph.h"

#include <cmath>

namespace graphi::models::detail {

std::string CnnGraph::op(const std::string& type, const std::string& name,
                         const std::vector<std::string>& inputs, graph::Attributes a) {
  b_.add_node(type, name, inputs, {name}, std::move(a));
  return name;
}

std::string CnnGraph::conv_relu(const std::string& name, const std::string& x, int64_t cin,
                                int64_t cout, int64_t k, int64_t stride, int64_t pad, bool he) {
  const float fan_in = static_cast<float>(cin * k * k);
  const float bound = he ? std::sqrt(6.0f / fan_in) : 1.0f / std::sqrt(fan_in);
  b_.add_constant(name + "/W", uniform_tensor({cout, cin, k, k}, bound, rng_));
  b_.add_constant(name + "/b", uniform_tensor({cout}, 1.0f / std::sqrt(fan_in), rng_));
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  op("Conv", name + "/conv", {x, name + "/W", name + "/b"}, std::move(a));
  return op("Relu", name, {name + "/conv"});
}

std::string CnnGraph::max_pool(const std::string& name, const std::string& x, int64_t k,
                               int64_t stride, int64_t pad) {
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  return op("MaxPool", name, {x}, std::move(a));
}

std::string CnnGraph::classifier(const std::string& x, int64_t batch, int64_t features,
                                 int64_t classes) {
  Tensor shape(TensorDesc{DType::kI64, {2}});
  shape.data_as<int64_t>()[0] = batch;
  shape.data_as<int64_t>()[1] = features;
  b_.add_constant("shape/flat", std::move(shape));
  const float fan_in = static_cast<float>(features);
  b_.add_constant("fc/W", uniform_tensor({features, classes}, 1.0f / std::sqrt(fan_in), rng_));
  b_.add_constant("fc/b", uniform_tensor({classes}, 1.0f / std::sqrt(fan_in), rng_));
  const std::string flat = op("Reshape", "flat", {x, "shape/flat"});
  return op("Gemm", "logits", {flat, "fc/W", "fc/b"});
}

}  // namespace graphi::models::detail
