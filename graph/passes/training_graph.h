// A training step as one graph: the model's forward pass, a loss, the gradient graph
// (autodiff.h) and the optimizer's in-place update of every trainable weight, so the scheduler
// runs forward, backward and update as one DAG.
//
// The trainable weights become graph INPUTS of the training graph (named as the constants they
// were): the training session owns their tensors and binds them every step without copying, and
// no kernel can pre-pack them at compile time, so no packed copy can ever be stale. The
// optimizer ops (SGDUpdate / AdamUpdate, ops/optimizer_ops.cpp) write the weights and their
// state in place; each update has an ordering input from every other node that reads its weight.
// The forward pass runs in training mode: every BatchNormalization becomes a
// BatchNormalizationTraining (batch statistics) plus a BatchNormStatsUpdate of its running
// statistics in place (ops/batch_norm_ops.cpp), every Dropout a DropoutTraining drawing a mask
// from (seed, step) (ops/dropout_ops.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/autodiff.h"

namespace graphi::graph::passes {

enum class LossKind {
  kValue,                // the value `prediction` already is the scalar loss
  kSoftmaxCrossEntropy,  // prediction [N, C] logits, labels int64 [N]: mean over the batch of
                         // -log softmax(logits)[label] (torch.nn.CrossEntropyLoss)
  kMeanSquaredError,     // prediction and target of one shape, float32: mean((p - t)^2)
};

struct OptimizerSpec {
  std::string kind = "sgd";  // "sgd" or "adam"
  double lr = 0.1;
  double momentum = 0.0;      // sgd
  double weight_decay = 0.0;  // both (L2 added to the gradient, as torch.optim)
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam
};

struct TrainingSpec {
  LossKind loss = LossKind::kSoftmaxCrossEntropy;
  std::string prediction;              // "" = the graph's first output
  std::string label_input = "labels";  // the new graph input holding labels / targets
  // Values to train (constants of the model, by name). Empty = every float32 constant of rank
  // >= 1 that the prediction depends on (shape operands and scalars stay constants).
  std::vector<std::string> trainable;
  bool optimizer_step = true;     // false: forward + loss + gradients only (tests)
  bool grads_as_outputs = false;  // make the gradients graph outputs (tests)
  OptimizerSpec optimizer;
};

struct TrainingGraph {
  Graph graph;
  std::string loss = "loss";         // the scalar loss: the graph's first output
  std::vector<std::string> weights;  // trainable values, now graph inputs
  // Constants of the model that the step updates in place but does not train: the running mean
  // and variance of every BatchNormalization (inputs, named as the constants; their initial
  // values are the model's). They go back into the model with the weights.
  std::vector<std::string> buffers;
  std::map<std::string, std::string> grads;  // weight -> gradient value
  struct StateInput {
    std::string name;
    TensorDesc desc;
  };
  std::vector<StateInput> state;  // optimizer state inputs (start at zero)
  // The int64 [] step count input (1, 2, ...: Adam's bias correction, Dropout's masks), else "".
  std::string step_input;
  std::vector<std::string> data_inputs;  // the model's inputs plus the label input
};

Result<TrainingGraph> build_training_graph(const Graph& g, const TrainingSpec& spec,
                                           const GradientRules& rules,
                                           const ShapeInferencer& shapes);

// `g` with the constants named in `data` holding those tensors instead (same desc required):
// trained weights back into a model, or test weights into a generated model.
Result<Graph> replace_constants(const Graph& g, const std::map<std::string, const Tensor*>& data,
                                const ShapeInferencer& shapes);

// The parse of "ce" / "mse" (and "value"); nullopt otherwise.
std::optional<LossKind> loss_kind_from_name(const std::string& name);

}  // namespace graphi::graph::passes
