// TrainingSession: runs a training step graph (graph/passes/training_graph.h) again and again.
// It owns the trainable weights and the optimizer state as tensors of its own, binds them to
// the step graph's inputs without copying, and the graph's optimizer ops update them in place,
// so a step copies no weight. Because the weights are inputs of the step graph (not constants),
// no kernel packs them at compile time: every kernel reads the live weights of this step.
// Inference Sessions are untouched; trained_model() / save() give an inference model back.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/session.h"
#include "graph/passes/training_graph.h"

namespace graphi::engine {

struct TrainingOptions {
  graph::passes::TrainingSpec spec;
  SessionOptions session;  // executors, threads, scheduler as for inference
};

class TrainingSession {
 public:
  // Builds the step graph of `model` (loss, gradients, optimizer) and compiles it. The initial
  // weights are copies of the model's constants. Errors name the model and the node or value.
  static Result<std::unique_ptr<TrainingSession>> create(std::shared_ptr<const graph::Graph> model,
                                                         const TrainingOptions& options);

  // One step: forward, loss, backward, update. `batch` holds every data input of the model and
  // the label input (TrainingGraph::data_inputs), by name. Returns the loss before the update.
  Result<float> train_step(const NamedTensors& batch);

  // The live weights, in TrainingGraph::weights order (they change after every step).
  std::vector<std::pair<std::string, const Tensor*>> weights() const;
  const Tensor* weight(const std::string& name) const;  // nullptr if not trainable
  // The live running statistics of the BatchNormalization nodes (TrainingGraph::buffers order),
  // updated every step from the batch like torch.nn.BatchNorm2d's running_mean / running_var.
  std::vector<std::pair<std::string, const Tensor*>> buffers() const;
  int64_t steps() const { return steps_; }

  // The model (forward graph only, inference mode) with the current weights and running
  // statistics as its constants.
  Result<graph::Graph> trained_model() const;
  Status save(const std::string& graphi_path) const;  // trained_model() as .graphi
  // One .npy per weight into `dir` (created if missing): "<name>.npy" with '/' -> '_'.
  Status save_npy(const std::string& dir) const;

  const graph::passes::TrainingGraph& training_graph() const { return tg_; }
  const graph::Graph& model() const { return *model_; }
  Session& session() { return *session_; }

 private:
  TrainingSession() = default;
  std::shared_ptr<const graph::Graph> model_;
  graph::passes::TrainingGraph tg_;
  std::unique_ptr<Session> session_;
  NamedTensors feed_;  // weights, buffers, optimizer state, step, then the data inputs
  size_t num_weights_ = 0, num_buffers_ = 0, first_data_ = 0;
  int step_index_ = -1;
  int64_t steps_ = 0;
};

}  // namespace graphi::engine
