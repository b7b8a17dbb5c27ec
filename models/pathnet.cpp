// build_pathnet (models/eval_models.h): the PathNet of seed 002's evaluation, with every module
// of a layer active: layer l reads the previous layer's sum (the image for l = 0), each of its 6
// modules is conv 3x3 (pad 1) + ReLU + max-pool 2x2, and the layer's output is the sum of its
// modules' outputs (an Add chain in module order). 3 layers halve the image 3 times; the
// classifier reads [B, F * (S/8)^2]. Nodes and weights "l{l}/m{m}/..." and "fc/...".
#include "graph/graph_builder.h"
#include "models/cnn_graph.h"
#include "models/eval_models.h"

namespace graphi::models {

Result<graph::Graph> build_pathnet(const EvalDims& d, uint64_t seed,
                                   const graph::ShapeInferencer& shapes) {
  constexpr int kLayers = 3, kModules = 6;
  if (d.image % 8 != 0)
    return Status::invalid_argument("pathnet: image size must be a multiple of 8, got " +
                                    std::to_string(d.image));
  graph::GraphBuilder b("pathnet(S=" + std::to_string(d.image) + " F=" +
                        std::to_string(d.filters) + " B=" + std::to_string(d.batch) + ")");
  b.set_metadata("producer", "graphi model");
  b.set_metadata("model", "pathnet");
  detail::CnnGraph g(b, seed);
  b.add_input("x", TensorDesc{DType::kF32, {d.batch, 3, d.image, d.image}});
  std::string x = "x";
  int64_t cin = 3;
  for (int l = 0; l < kLayers; ++l) {
    std::string sum;
    for (int m = 0; m < kModules; ++m) {
      const std::string p = "l" + std::to_string(l) + "/m" + std::to_string(m);
      // PyTorch's default init (+-1/sqrt(fan_in)): the sum of 6 modules then has He's scale.
      std::string y = g.conv_relu(p + "/conv", x, cin, d.filters, 3, 1, 1, /*he=*/false);
      y = g.max_pool(p + "/pool", y, 2, 2, 0);
      sum = sum.empty() ? y : g.op("Add", p + "/sum", {sum, y});
    }
    x = sum;
    cin = d.filters;
  }
  const int64_t s = d.image / 8;
  g.classifier(x, d.batch, d.filters * s * s, d.classes);
  b.add_output("logits");
  return b.finish(shapes);
}

}  // namespace graphi::models
