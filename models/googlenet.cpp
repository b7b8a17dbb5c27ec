// build_googlenet (models/eval_models.h): TensorFlow's reference GoogleNet (tf_cnn_benchmarks
// models/googlenet_model.py, i.e. Inception v1 without LRN and auxiliary heads), every filter
// count multiplied by the width w:
//   conv 7x7/2 64, maxpool 3x3/2, conv 1x1 64, conv 3x3 192, maxpool 3x3/2,
//   inception 3a, 3b, maxpool 3x3/2, 4a..4e, maxpool 3x3/2, 5a, 5b, global average pool, fc.
// An inception block (k, l, m, n, p, q): branch 1 conv 1x1 k; branch 2 conv 1x1 l, conv 3x3 m;
// branch 3 conv 1x1 n, conv 5x5 p; branch 4 maxpool 3x3/1, conv 1x1 q; outputs concatenated on
// channels. Every conv has a bias and a ReLU. TF pools with padding SAME; here pad 1 (the same
// output sizes, and what PyTorch's MaxPool2d(3, 2, 1) computes; padding never wins a max).
// Block names "inc0".."inc8", branch convs "b1", "b2a", "b2b", "b3a", "b3b", "b4".
#include "graph/graph_builder.h"
#include "models/cnn_graph.h"
#include "models/eval_models.h"

namespace graphi::models {

Result<graph::Graph> build_googlenet(const EvalDims& d, uint64_t seed,
                                     const graph::ShapeInferencer& shapes) {
  if (d.image % 32 != 0)
    return Status::invalid_argument("googlenet: image size must be a multiple of 32, got " +
                                    std::to_string(d.image));
  const int64_t w = d.width;
  graph::GraphBuilder b("googlenet(S=" + std::to_string(d.image) + " width=" + std::to_string(w) +
                        " B=" + std::to_string(d.batch) + ")");
  b.set_metadata("producer", "graphi model");
  b.set_metadata("model", "googlenet");
  detail::CnnGraph g(b, seed);
  b.add_input("x", TensorDesc{DType::kF32, {d.batch, 3, d.image, d.image}});
  std::string x = g.conv_relu("stem/conv1", "x", 3, 64 * w, 7, 2, 3);
  x = g.max_pool("stem/pool1", x, 3, 2, 1);
  x = g.conv_relu("stem/conv2", x, 64 * w, 64 * w, 1, 1, 0);
  x = g.conv_relu("stem/conv3", x, 64 * w, 192 * w, 3, 1, 1);
  x = g.max_pool("stem/pool2", x, 3, 2, 1);
  int64_t c = 192 * w;
  struct Block {
    int64_t k, l, m, n, p, q;
    bool pool_after;
  };
  static const Block blocks[] = {
      {64, 96, 128, 16, 32, 32, false},     {128, 128, 192, 32, 96, 64, true},
      {192, 96, 208, 16, 48, 64, false},    {160, 112, 224, 24, 64, 64, false},
      {128, 128, 256, 24, 64, 64, false},   {112, 144, 288, 32, 64, 64, false},
      {256, 160, 320, 32, 128, 128, true},  {256, 160, 320, 32, 128, 128, false},
      {384, 192, 384, 48, 128, 128, false},
  };
  int index = 0;
  for (const Block& bl : blocks) {
    const std::string p = "inc" + std::to_string(index++);
    const std::string b1 = g.conv_relu(p + "/b1", x, c, bl.k * w, 1, 1, 0);
    const std::string b2 = g.conv_relu(p + "/b2b", g.conv_relu(p + "/b2a", x, c, bl.l * w, 1, 1, 0),
                                       bl.l * w, bl.m * w, 3, 1, 1);
    const std::string b3 = g.conv_relu(p + "/b3b", g.conv_relu(p + "/b3a", x, c, bl.n * w, 1, 1, 0),
                                       bl.n * w, bl.p * w, 5, 1, 2);
    const std::string b4 =
        g.conv_relu(p + "/b4", g.max_pool(p + "/pool", x, 3, 1, 1), c, bl.q * w, 1, 1, 0);
    graph::Attributes a;
    a.set("axis", int64_t{1});
    x = g.op("Concat", p, {b1, b2, b3, b4}, std::move(a));
    c = (bl.k + bl.m + bl.p + bl.q) * w;
    if (bl.pool_after) x = g.max_pool(p + "/pool_out", x, 3, 2, 1);
  }
  const int64_t s = d.image / 32;
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{s, s});
  a.set("strides", std::vector<int64_t>{s, s});
  x = g.op("AveragePool", "avgpool", {x}, std::move(a));
  g.classifier(x, d.batch, c, d.classes);
  b.add_output("logits");
  return b.finish(shapes);
}

}  // namespace graphi::models
