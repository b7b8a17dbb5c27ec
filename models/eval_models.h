// The four models of seed 002's evaluation (section 7, Table 1), as generated graphs with seeded
// weights: `graphi model lstm|phased-lstm|pathnet|googlenet --size small|medium|large`.
//
//   lstm         4 stacked LSTM layers (unrolled cells, ONNX gate order i, o, f, c), input
//                features = hidden units, zero initial state; a linear classifier (10 classes)
//                on the last layer's last h. small 20 steps x 128, medium 30 x 512, large 40 x
//                1024; batch 64. Inputs x f32[T, B, H]; output logits f32[B, 10].
//   phased-lstm  the same with Neil et al.'s time gate per unit (models/eval_rnn.cpp: the gate is
//                composed of Sub/Div/Floor/Less/Where ops, so it trains), plus input times
//                f32[T, B].
//   pathnet      3 layers of 6 active modules, each 3x3 conv (pad 1) + ReLU + 2x2 max-pool, the
//                module outputs summed per layer; image 32/48/64, 16/32/48 filters, 3 input
//                channels, linear classifier (10 classes); batch 64. Input x f32[B, 3, S, S].
//   googlenet    TensorFlow's reference GoogleNet (tf_cnn_benchmarks googlenet_model.py: the 7x7
//                stem, 3x3 pools (stride 2, pad 1), 9 inception blocks of 1x1 / 1x1-3x3 /
//                1x1-5x5 / 3x3 pool-1x1 branches concatenated, global average pool, 1000
//                classes), every filter count multiplied by the width; image 128/192/256, width
//                1/2/4; batch 32. Input x f32[B, 3, S, S].
// Every model's label input is "labels" int64[B] (softmax cross-entropy in `graphi train`).
//
// Weights: drawn from models::WeightRng(seed) in node order, uniform in [-b, b): recurrent
// weights and the RNN classifier b = 1/sqrt(H) (PyTorch's LSTM init); GoogleNet's conv weights
// b = sqrt(6 / fan_in) (He-uniform, so the deep ReLU stack keeps its scale); PathNet's conv
// weights, every bias and the CNN classifiers b = 1/sqrt(fan_in) (PyTorch's Conv2d / Linear
// default; for PathNet the sum of 6 modules then has He's scale);
// PhasedLSTM tau = exp(uniform[0, 3)), shift uniform in [0, tau), r_on = 0.05. Names are those
// scripts/eval_models.py reads (e.g. "l0/W", "fc/W", "inc3/b2b/W").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace graphi::models {

enum class EvalSize { kSmall = 0, kMedium = 1, kLarge = 2 };

struct EvalModelSpec {
  std::string name;  // lstm, phased-lstm, pathnet, googlenet
  EvalSize size = EvalSize::kSmall;
  int64_t batch = 0;  // 0: the model's batch (64; googlenet 32)
  uint64_t seed = 1;
  // phased-lstm: one PhasedLSTM sequence op per layer (build_phased_lstm_sequence_classifier)
  // instead of unrolled cells; the same weights and function.
  bool sequence_ops = false;
};

// The sizes of one model at one size, resolved from the tables above.
struct EvalDims {
  int64_t batch = 0, classes = 0;
  int64_t layers = 0, seq = 0, hidden = 0;  // lstm, phased-lstm
  int64_t image = 0, filters = 0, width = 0;  // pathnet (filters), googlenet (width)
};

const std::vector<std::string>& eval_model_names();
// "small" -> kSmall; nullopt-like error for anything else.
Result<EvalSize> eval_size_from_name(const std::string& name);
const char* eval_size_name(EvalSize s);
Result<EvalDims> eval_dims(const EvalModelSpec& spec);

// The forward graph (prediction: output "logits" f32[B, classes]). kInvalidArgument for an
// unknown name or a batch out of [1, 4096].
Result<graph::Graph> build_eval_model(const EvalModelSpec& spec,
                                      const graph::ShapeInferencer& shapes);

// A seeded batch for the model: every graph input (x uniform in [-1, 1); phased-lstm's times
// t + uniform[0, 1) per step and batch entry, so increasing in t) and "labels" int64[B]
// uniform in [0, classes). Drawn from WeightRng(seed + 1000003), independent of the weights.
Result<std::vector<std::pair<std::string, Tensor>>> eval_model_batch(const EvalModelSpec& spec);

// Builders behind build_eval_model (models/eval_rnn.cpp, models/pathnet.cpp, models/googlenet.cpp).
Result<graph::Graph> build_rnn_classifier(const EvalDims& d, bool phased, uint64_t seed,
                                          const graph::ShapeInferencer& shapes);
// The PhasedLSTM classifier with one PhasedLSTM sequence op per layer (ops/rnn/phased_lstm.h)
// instead of unrolled cells: the same function and weights as build_rnn_classifier(d, true,
// seed) (W and R transposed into ONNX's [1, 4H, H]; the gate bias b as B = [b, 0 b], so that
// training moves it as the cells' single bias; tau, shift, r_on reshaped to [1, H]), for the
// fused training kernels (`graphi model phased-lstm --size S --fuse-rnn`).
Result<graph::Graph> build_phased_lstm_sequence_classifier(const EvalDims& d, uint64_t seed,
                                                           const graph::ShapeInferencer& shapes);
Result<graph::Graph> build_pathnet(const EvalDims& d, uint64_t seed,
                                   const graph::ShapeInferencer& shapes);
Result<graph::Graph> build_googlenet(const EvalDims& d, uint64_t seed,
                                     const graph::ShapeInferencer& shapes);

}  // namespace graphi::models
