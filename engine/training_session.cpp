#include "engine/training_session.h"

#include <filesystem>
#include <map>

#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "ops/gradients.h"
#include "ops/registry.h"

namespace graphi::engine {

Result<std::unique_ptr<TrainingSession>> TrainingSession::create(
    std::shared_ptr<const graph::Graph> model, const TrainingOptions& options) {
  if (!model) return Status::invalid_argument("TrainingSession::create: no model");
  std::unique_ptr<TrainingSession> s(new TrainingSession());
  s->model_ = model;
  GRAPHI_ASSIGN_OR_RETURN(
      s->tg_, graph::passes::build_training_graph(*model, options.spec, ops::gradient_rules(),
                                                  ops::Registry::get()));
  const graph::passes::TrainingGraph& tg = s->tg_;
  for (const std::string& w : tg.weights) {
    const graph::Value& v = model->value(*model->find_value(w));
    s->feed_.emplace_back(w, *v.data);  // the one copy: the session's own weights
  }
  s->num_weights_ = s->feed_.size();
  for (const std::string& name : tg.buffers) {
    const graph::Value& v = model->value(*model->find_value(name));
    s->feed_.emplace_back(name, *v.data);  // running statistics start at the model's values
  }
  s->num_buffers_ = tg.buffers.size();
  for (const auto& st : tg.state) s->feed_.emplace_back(st.name, Tensor(st.desc));
  if (!tg.step_input.empty()) {
    s->step_index_ = static_cast<int>(s->feed_.size());
    s->feed_.emplace_back(tg.step_input, Tensor(TensorDesc{DType::kI64, {}}));
  }
  s->first_data_ = s->feed_.size();
  for (const std::string& d : tg.data_inputs) {
    const graph::Value& v = tg.graph.value(*tg.graph.find_value(d));
    s->feed_.emplace_back(d, Tensor(v.desc));
  }
  auto graph = std::make_shared<const graph::Graph>(tg.graph);
  GRAPHI_ASSIGN_OR_RETURN(s->session_, Session::create(graph, options.session));
  return s;
}

Result<float> TrainingSession::train_step(const NamedTensors& batch) {
  const std::string src = model_->source() + ": training step: ";
  std::vector<bool> seen(feed_.size() - first_data_, false);
  for (const auto& [name, t] : batch) {
    size_t i = first_data_;
    while (i < feed_.size() && feed_[i].first != name) ++i;
    if (i == feed_.size()) {
      std::string known;
      for (size_t k = first_data_; k < feed_.size(); ++k)
        known += (known.empty() ? "" : ", ") + feed_[k].first;
      return Status::invalid_argument(src + "unknown input '" + name + "' (expected: " + known +
                                      ")");
    }
    if (seen[i - first_data_])
      return Status::invalid_argument(src + "input '" + name + "' given twice");
    if (t.desc() != feed_[i].second.desc())
      return Status::invalid_argument(src + "input '" + name + "' must be " +
                                      feed_[i].second.desc().to_string() + ", got " +
                                      t.desc().to_string());
    seen[i - first_data_] = true;
    feed_[i].second = t;
  }
  for (size_t k = 0; k < seen.size(); ++k)
    if (!seen[k])
      return Status::invalid_argument(src + "input '" + feed_[first_data_ + k].first +
                                      "' is missing");
  if (step_index_ >= 0)
    *feed_[static_cast<size_t>(step_index_)].second.data_as<int64_t>() = steps_ + 1;
  GRAPHI_ASSIGN_OR_RETURN(NamedTensors out, session_->run(feed_));
  ++steps_;
  return *out[0].second.data_as<float>();
}

std::vector<std::pair<std::string, const Tensor*>> TrainingSession::weights() const {
  std::vector<std::pair<std::string, const Tensor*>> out;
  for (size_t i = 0; i < num_weights_; ++i) out.emplace_back(feed_[i].first, &feed_[i].second);
  return out;
}

std::vector<std::pair<std::string, const Tensor*>> TrainingSession::buffers() const {
  std::vector<std::pair<std::string, const Tensor*>> out;
  for (size_t i = num_weights_; i < num_weights_ + num_buffers_; ++i)
    out.emplace_back(feed_[i].first, &feed_[i].second);
  return out;
}

const Tensor* TrainingSession::weight(const std::string& name) const {
  for (size_t i = 0; i < num_weights_; ++i)
    if (feed_[i].first == name) return &feed_[i].second;
  return nullptr;
}

Result<graph::Graph> TrainingSession::trained_model() const {
  std::map<std::string, const Tensor*> data;
  for (const auto& [name, t] : weights()) data[name] = t;
  for (const auto& [name, t] : buffers()) data[name] = t;
  return graph::passes::replace_constants(*model_, data, ops::Registry::get());
}

Status TrainingSession::save(const std::string& graphi_path) const {
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, trained_model());
  return graph::write_graphi(g, graphi_path);
}

Status TrainingSession::save_npy(const std::string& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io_error(dir + ": cannot create the directory: " + ec.message());
  for (const auto& [name, t] : weights()) {
    std::string file = name;
    for (char& c : file)
      if (c == '/' || c == '\\' || c == ':') c = '_';
    GRAPHI_RETURN_IF_ERROR(
        graph::write_npy((std::filesystem::path(dir) / (file + ".npy")).string(), *t));
  }
  return Status::ok();
}

}  // namespace graphi::engine
