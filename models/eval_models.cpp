#include "models/eval_models.h"

#include <cmath>

#include "models/weights.h"

namespace graphi::models {

const std::vector<std::string>& eval_model_names() {
  static const std::vector<std::string> names = {"lstm", "phased-lstm", "pathnet", "googlenet"};
  return names;
}

Result<EvalSize> eval_size_from_name(const std::string& name) {
  if (name == "small") return EvalSize::kSmall;
  if (name == "medium") return EvalSize::kMedium;
  if (name == "large") return EvalSize::kLarge;
  return Status::invalid_argument("unknown size '" + name + "' (expected small, medium or large)");
}

const char* eval_size_name(EvalSize s) {
  return s == EvalSize::kSmall ? "small" : s == EvalSize::kMedium ? "medium" : "large";
}

Result<EvalDims> eval_dims(const EvalModelSpec& spec) {
  const int i = static_cast<int>(spec.size);
  if (i < 0 || i > 2) return Status::invalid_argument("size out of range");
  EvalDims d;
  if (spec.name == "lstm" || spec.name == "phased-lstm") {
    static const int64_t seq[] = {20, 30, 40}, hidden[] = {128, 512, 1024};
    d.layers = 4;
    d.seq = seq[i];
    d.hidden = hidden[i];
    d.batch = 64;
    d.classes = 10;
  } else if (spec.name == "pathnet") {
    static const int64_t image[] = {32, 48, 64}, filters[] = {16, 32, 48};
    d.image = image[i];
    d.filters = filters[i];
    d.batch = 64;
    d.classes = 10;
  } else if (spec.name == "googlenet") {
    static const int64_t image[] = {128, 192, 256}, width[] = {1, 2, 4};
    d.image = image[i];
    d.width = width[i];
    d.batch = 32;
    d.classes = 1000;
  } else {
    return Status::invalid_argument("unknown model '" + spec.name +
                                    "' (expected lstm, phased-lstm, pathnet or googlenet)");
  }
  if (spec.batch != 0) {
    if (spec.batch < 1 || spec.batch > 4096)
      return Status::invalid_argument("batch must be in [1, 4096], got " +
                                      std::to_string(spec.batch));
    d.batch = spec.batch;
  }
  return d;
}

Result<graph::Graph> build_eval_model(const EvalModelSpec& spec,
                                      const graph::ShapeInferencer& shapes) {
  GRAPHI_ASSIGN_OR_RETURN(EvalDims d, eval_dims(spec));
  if (spec.name == "lstm") return build_rnn_classifier(d, false, spec.seed, shapes);
  if (spec.name == "phased-lstm")
    return spec.sequence_ops ? build_phased_lstm_sequence_classifier(d, spec.seed, shapes)
                             : build_rnn_classifier(d, true, spec.seed, shapes);
  if (spec.name == "pathnet") return build_pathnet(d, spec.seed, shapes);
  return build_googlenet(d, spec.seed, shapes);
}

Result<std::vector<std::pair<std::string, Tensor>>> eval_model_batch(const EvalModelSpec& spec) {
  GRAPHI_ASSIGN_OR_RETURN(EvalDims d, eval_dims(spec));
  WeightRng rng(spec.seed + 1000003);
  std::vector<std::pair<std::string, Tensor>> out;
  const bool rnn = spec.name == "lstm" || spec.name == "phased-lstm";
  const Shape xs = rnn ? Shape{d.seq, d.batch, d.hidden} : Shape{d.batch, 3, d.image, d.image};
  out.emplace_back("x", uniform_tensor(xs, 1.0f, rng));
  if (spec.name == "phased-lstm") {
    Tensor t(TensorDesc{DType::kF32, {d.seq, d.batch}});
    for (int64_t s = 0; s < d.seq; ++s)
      for (int64_t b = 0; b < d.batch; ++b)
        t.data_as<float>()[s * d.batch + b] = static_cast<float>(s) + rng.uniform(0.0f, 1.0f);
    out.emplace_back("times", std::move(t));
  }
  Tensor labels(TensorDesc{DType::kI64, {d.batch}});
  for (int64_t b = 0; b < d.batch; ++b)
    labels.data_as<int64_t>()[b] = static_cast<int64_t>(rng.next_u64() % d.classes);
  out.emplace_back("labels", std::move(labels));
  return out;
}

}  // namespace graphi::models
