// Training graphs against PyTorch (fixtures: tests/data/training/make_fixtures.py, torch 1.13):
// gradients at identical weights (float64 autograd reference) and 100-step loss curves of SGD
// with momentum and of Adam (float32 torch) for an MLP, a small CNN without and with batch norm
// (training mode: batch statistics, running statistics updated as torch's), an unrolled 2-layer
// LSTM and an unrolled 2-layer GRU (torch.nn.GRUCell); training steps on every scheduler policy
// and configuration equal to the sequential executor's, bitwise; the saved models reload and
// infer with the trained weights (and running statistics).
#include <sched.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>

#include "engine/model_loader.h"
#include "engine/session.h"
#include "engine/training_session.h"
#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "graph/passes/pass_util.h"
#include "graph/passes/training_graph.h"
#include "models/gru.h"
#include "models/lstm.h"
#include "ops/gradients.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace graphi {
namespace {

using engine::NamedTensors;
using engine::SessionOptions;
using engine::TrainingOptions;
using engine::TrainingSession;
using graph::Attributes;
using graph::GraphBuilder;

const std::string kDir = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/training/";

Tensor fixture(const std::string& model, const std::string& name) {
  std::string file = name;
  for (char& c : file)
    if (c == '/') c = '_';
  return value_or_throw(graph::read_npy(kDir + model + "/" + file + ".npy"));
}

// The MLP of make_fixtures.py: logits = relu(x W1 + b1) W2^T + b2.
std::shared_ptr<const graph::Graph> mlp() {
  GraphBuilder b("mlp");
  b.add_input("x", {DType::kF32, {16, 10}});
  for (const char* w : {"W1", "b1", "W2", "b2"}) b.add_constant(w, fixture("mlp", w));
  b.add_node("MatMul", "fc1", {"x", "W1"}, {"fc1"});
  b.add_node("Add", "fc1b", {"fc1", "b1"}, {"fc1b"});
  b.add_node("Relu", "h", {"fc1b"}, {"h"});
  Attributes t;
  t.set("transB", int64_t{1});
  b.add_node("Gemm", "logits", {"h", "W2", "b2"}, {"logits"}, t);
  b.add_output("logits");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

// The MLP with a Dropout (ratio 0.3, seed 7) after the relu (make_fixtures.py, mlp_dropout).
std::shared_ptr<const graph::Graph> mlp_dropout() {
  GraphBuilder b("mlp_dropout");
  b.add_input("x", {DType::kF32, {16, 10}});
  for (const char* w : {"W1", "b1", "W2", "b2"}) b.add_constant(w, fixture("mlp_dropout", w));
  b.add_node("MatMul", "fc1", {"x", "W1"}, {"fc1"});
  b.add_node("Add", "fc1b", {"fc1", "b1"}, {"fc1b"});
  b.add_node("Relu", "h", {"fc1b"}, {"h"});
  Attributes d;
  d.set("ratio", 0.3);
  d.set("seed", int64_t{7});
  b.add_node("Dropout", "drop", {"h"}, {"hd"}, d);
  Attributes t;
  t.set("transB", int64_t{1});
  b.add_node("Gemm", "logits", {"hd", "W2", "b2"}, {"logits"}, t);
  b.add_output("logits");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

// The CNN of make_fixtures.py: conv 3x3 pad 1 -> relu -> maxpool 2 -> conv 3x3 pad 1 -> relu
// -> global average pool (an AveragePool over the whole 4x4 map) -> Reshape -> Gemm (transB).
std::shared_ptr<const graph::Graph> cnn() {
  GraphBuilder b("cnn");
  b.add_input("x", {DType::kF32, {4, 2, 8, 8}});
  for (const char* w : {"c1/W", "c1/b", "c2/W", "c2/b", "fc/W", "fc/b"})
    b.add_constant(w, fixture("cnn", w));
  auto ints = [](std::vector<int64_t> v) { return v; };
  Attributes conv;
  conv.set("kernel_shape", ints({3, 3}));
  conv.set("pads", ints({1, 1, 1, 1}));
  b.add_node("Conv", "c1", {"x", "c1/W", "c1/b"}, {"c1"}, conv);
  b.add_node("Relu", "r1", {"c1"}, {"r1"});
  Attributes pool;
  pool.set("kernel_shape", ints({2, 2}));
  pool.set("strides", ints({2, 2}));
  b.add_node("MaxPool", "p1", {"r1"}, {"p1"}, pool);
  b.add_node("Conv", "c2", {"p1", "c2/W", "c2/b"}, {"c2"}, conv);
  b.add_node("Relu", "r2", {"c2"}, {"r2"});
  Attributes gap;
  gap.set("kernel_shape", ints({4, 4}));
  gap.set("strides", ints({4, 4}));
  b.add_node("AveragePool", "gap", {"r2"}, {"gap"}, gap);
  Tensor shape(TensorDesc{DType::kI64, {2}});
  shape.data_as<int64_t>()[0] = 4;
  shape.data_as<int64_t>()[1] = 6;
  b.add_constant("flat_shape", std::move(shape));
  b.add_node("Reshape", "flat", {"gap", "flat_shape"}, {"flat"});
  Attributes t;
  t.set("transB", int64_t{1});
  b.add_node("Gemm", "logits", {"flat", "fc/W", "fc/b"}, {"logits"}, t);
  b.add_output("logits");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

Attributes conv3x3() {
  Attributes conv;
  conv.set("kernel_shape", std::vector<int64_t>{3, 3});
  conv.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  return conv;
}

// The CNN with batch norm of make_fixtures.py (cnn_bn): conv (no bias) -> BatchNormalization ->
// relu -> maxpool 2 -> conv (no bias) -> BatchNormalization -> relu -> global average pool ->
// Reshape -> Gemm (transB). momentum 0.9 is torch's 0.1. `dropout` > 0 puts a Dropout before
// the Gemm (the scheduler test; not in the torch fixture).
std::shared_ptr<const graph::Graph> cnn_bn(double dropout = 0.0) {
  GraphBuilder b("cnn_bn");
  b.add_input("x", {DType::kF32, {8, 2, 8, 8}});
  for (const char* w : {"c1/W", "bn1/scale", "bn1/B", "bn1/mean", "bn1/var", "c2/W", "bn2/scale",
                        "bn2/B", "bn2/mean", "bn2/var", "fc/W", "fc/b"})
    b.add_constant(w, fixture("cnn_bn", w));
  Attributes bn;
  bn.set("epsilon", 1e-5);
  bn.set("momentum", 0.9);
  b.add_node("Conv", "c1", {"x", "c1/W"}, {"c1"}, conv3x3());
  b.add_node("BatchNormalization", "bn1", {"c1", "bn1/scale", "bn1/B", "bn1/mean", "bn1/var"},
             {"bn1"}, bn);
  b.add_node("Relu", "r1", {"bn1"}, {"r1"});
  Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2});
  pool.set("strides", std::vector<int64_t>{2, 2});
  b.add_node("MaxPool", "p1", {"r1"}, {"p1"}, pool);
  b.add_node("Conv", "c2", {"p1", "c2/W"}, {"c2"}, conv3x3());
  b.add_node("BatchNormalization", "bn2", {"c2", "bn2/scale", "bn2/B", "bn2/mean", "bn2/var"},
             {"bn2"}, bn);
  b.add_node("Relu", "r2", {"bn2"}, {"r2"});
  Attributes gap;
  gap.set("kernel_shape", std::vector<int64_t>{4, 4});
  gap.set("strides", std::vector<int64_t>{4, 4});
  b.add_node("AveragePool", "gap", {"r2"}, {"gap"}, gap);
  b.add_constant("flat_shape", graph::passes::i64_tensor({8, 6}));
  b.add_node("Reshape", "flat", {"gap", "flat_shape"}, {"flat"});
  std::string fc_in = "flat";
  if (dropout > 0) {
    Attributes d;
    d.set("ratio", dropout);
    d.set("seed", int64_t{42});
    b.add_node("Dropout", "drop", {"flat"}, {"drop"}, d);
    fc_in = "drop";
  }
  Attributes t;
  t.set("transB", int64_t{1});
  b.add_node("Gemm", "logits", {fc_in, "fc/W", "fc/b"}, {"logits"}, t);
  b.add_output("logits");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

models::RnnSpec lstm_spec(int layers, int64_t seq, int64_t batch, int64_t input, int64_t hidden) {
  models::RnnSpec s;
  s.layers = layers;
  s.seq = seq;
  s.batch = batch;
  s.input = input;
  s.hidden = hidden;
  return s;
}

// graphi's unrolled 2-layer LSTM (models/lstm.h) with the fixture's weights.
std::shared_ptr<const graph::Graph> lstm() {
  const auto& reg = ops::Registry::get();
  graph::Graph g = value_or_throw(models::build_lstm(lstm_spec(2, 5, 3, 4, 6), reg));
  std::vector<Tensor> held;
  std::map<std::string, const Tensor*> data;
  for (int l = 0; l < 2; ++l)
    for (const char* w : {"W", "R", "b"})
      held.push_back(fixture("lstm", "l" + std::to_string(l) + "/" + w));
  int k = 0;
  for (int l = 0; l < 2; ++l)
    for (const char* w : {"W", "R", "b"}) data["l" + std::to_string(l) + "/" + w] = &held[k++];
  return std::make_shared<const graph::Graph>(
      value_or_throw(graph::passes::replace_constants(g, data, reg)));
}

// graphi's unrolled 2-layer GRU with linear_before_reset (models/gru.h, torch's GRUCell form)
// with the fixture's weights (torch's GRUCell weights reordered by make_fixtures.py).
std::shared_ptr<const graph::Graph> gru() {
  const auto& reg = ops::Registry::get();
  models::RnnSpec spec = lstm_spec(2, 4, 3, 5, 6);
  spec.linear_before_reset = true;
  graph::Graph g = value_or_throw(models::build_gru(spec, reg));
  std::map<std::string, Tensor> held;
  std::map<std::string, const Tensor*> data;
  for (int l = 0; l < 2; ++l)
    for (const char* w : {"W", "R", "b", "Rb"}) {
      const std::string name = "l" + std::to_string(l) + "/" + w;
      held[name] = fixture("gru", name);
      data[name] = &held[name];
    }
  return std::make_shared<const graph::Graph>(
      value_or_throw(graph::passes::replace_constants(g, data, reg)));
}

struct Model {
  std::shared_ptr<const graph::Graph> graph;
  graph::passes::LossKind loss;
  std::string prediction;
  std::string label;
  NamedTensors batch;
};

Model mlp_model() {
  return {mlp(),
          graph::passes::LossKind::kSoftmaxCrossEntropy,
          "logits",
          "labels",
          {{"x", fixture("mlp", "x")}, {"labels", fixture("mlp", "labels")}}};
}

Model cnn_model() {
  return {cnn(),
          graph::passes::LossKind::kSoftmaxCrossEntropy,
          "logits",
          "labels",
          {{"x", fixture("cnn", "x")}, {"labels", fixture("cnn", "labels")}}};
}

Model lstm_model() {
  Tensor zeros(TensorDesc{DType::kF32, {2, 3, 6}});
  return {lstm(),
          graph::passes::LossKind::kMeanSquaredError,
          "y",
          "target",
          {{"x", fixture("lstm", "x")},
           {"h0", zeros},
           {"c0", zeros},
           {"target", fixture("lstm", "target")}}};
}

Model mlp_dropout_model() {
  return {mlp_dropout(),
          graph::passes::LossKind::kSoftmaxCrossEntropy,
          "logits",
          "labels",
          {{"x", fixture("mlp_dropout", "x")}, {"labels", fixture("mlp_dropout", "labels")}}};
}

Model cnn_bn_model(double dropout = 0.0) {
  return {cnn_bn(dropout),
          graph::passes::LossKind::kSoftmaxCrossEntropy,
          "logits",
          "labels",
          {{"x", fixture("cnn_bn", "x")}, {"labels", fixture("cnn_bn", "labels")}}};
}

Model gru_model() {
  return {gru(),
          graph::passes::LossKind::kMeanSquaredError,
          "y",
          "target",
          {{"x", fixture("gru", "x")},
           {"h0", Tensor(TensorDesc{DType::kF32, {2, 3, 6}})},
           {"target", fixture("gru", "target")}}};
}

graph::passes::TrainingSpec spec_of(const Model& m) {
  graph::passes::TrainingSpec s;
  s.loss = m.loss;
  s.prediction = m.prediction;
  s.label_input = m.label;
  return s;
}

// max |got - want| / max |want| over the tensor.
double tensor_rel_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.desc() == want.desc());
  double err = 0, scale = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    err = std::max(err, std::abs(double(got.data_as<float>()[i]) - want.data_as<float>()[i]));
    scale = std::max(scale, std::abs(double(want.data_as<float>()[i])));
  }
  return err / scale;
}

void check_gradients_against_torch(const Model& m, const std::string& fixtures) {
  graph::passes::TrainingSpec spec = spec_of(m);
  spec.optimizer_step = false;
  spec.grads_as_outputs = true;
  auto tg = value_or_throw(graph::passes::build_training_graph(
      *m.graph, spec, ops::gradient_rules(), ops::Registry::get()));
  NamedTensors in = m.batch;
  for (const std::string& w : tg.weights)
    in.emplace_back(w, *m.graph->value(*m.graph->find_value(w)).data);
  for (const std::string& w : tg.buffers)
    in.emplace_back(w, *m.graph->value(*m.graph->find_value(w)).data);
  if (!tg.step_input.empty()) {  // Dropout: the mask of step 1
    Tensor step(TensorDesc{DType::kI64, {}});
    *step.data_as<int64_t>() = 1;
    in.emplace_back(tg.step_input, std::move(step));
  }
  auto s = value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(tg.graph)));
  NamedTensors out = value_or_throw(s->run(in));
  REQUIRE(out[0].first == "loss");
  CHECK(std::abs(*out[0].second.data_as<float>() - *fixture(fixtures, "loss0").data_as<float>()) <
        1e-5);
  REQUIRE(out.size() == tg.weights.size() + 1);
  for (size_t i = 0; i < tg.weights.size(); ++i) {
    const std::string& w = tg.weights[i];
    REQUIRE(out[i + 1].first == "grad/" + w);
    const double e = tensor_rel_error(out[i + 1].second, fixture(fixtures, "grad_" + w));
    INFO(fixtures << " gradient of " << w << ": max relative error " << e);
    CHECK(e <= 1e-4);
  }
}

std::unique_ptr<TrainingSession> check_curve_against_torch(const Model& m,
                                                           const std::string& fixtures,
                                                           const std::string& optimizer) {
  TrainingOptions o;
  o.spec = spec_of(m);
  o.spec.optimizer.kind = optimizer;
  if (optimizer == "sgd") {
    o.spec.optimizer.lr = 0.1;
    o.spec.optimizer.momentum = 0.9;
  } else {
    o.spec.optimizer.lr = 0.01;
  }
  auto ts = value_or_throw(TrainingSession::create(m.graph, o));
  Tensor want = fixture(fixtures, optimizer + "_losses");
  double worst = 0;
  for (int64_t step = 0; step < want.numel(); ++step) {
    const float loss = value_or_throw(ts->train_step(m.batch));
    const double d = std::abs(double(loss) - want.data_as<float>()[step]);
    worst = std::max(worst, d);
    INFO(fixtures << " " << optimizer << " step " << step << ": graphi " << loss << ", torch "
                  << want.data_as<float>()[step]);
    REQUIRE(d <= 1e-3);
  }
  CHECK(ts->steps() == want.numel());
  // The curve went somewhere: training reduced the loss.
  CHECK(want.data_as<float>()[want.numel() - 1] < 0.9 * want.data_as<float>()[0]);
  WARN(fixtures << " " << optimizer << ": max |loss - torch| over " << want.numel()
                << " steps = " << worst);
  return ts;
}

TEST_CASE("training: MLP gradients equal PyTorch autograd on identical weights", "[training]") {
  check_gradients_against_torch(mlp_model(), "mlp");
}

TEST_CASE(
    "training: small CNN (conv, relu, max pool, global average pool, linear) gradients equal "
    "PyTorch autograd",
    "[training]") {
  check_gradients_against_torch(cnn_model(), "cnn");
}

TEST_CASE("training: small CNN loss curves of SGD and Adam follow PyTorch's", "[training]") {
  check_curve_against_torch(cnn_model(), "cnn", "sgd");
  check_curve_against_torch(cnn_model(), "cnn", "adam");
}

TEST_CASE(
    "training: CNN with batch norm in training mode (conv, batch norm, relu, max pool, global "
    "average pool, linear) gradients equal PyTorch autograd",
    "[training]") {
  check_gradients_against_torch(cnn_bn_model(), "cnn_bn");
}

// The running statistics of the session against torch's after the same steps.
void check_running_stats(const TrainingSession& ts, const std::string& prefix, double tol) {
  REQUIRE(ts.buffers().size() == 4);
  for (const auto& [name, t] : ts.buffers()) {
    const double e = tensor_rel_error(*t, fixture("cnn_bn", prefix + name));
    INFO("running statistic " << name << " after " << ts.steps() << " steps: max relative error "
                              << e);
    CHECK(e <= tol);
  }
}

TEST_CASE("training: batch norm running statistics follow torch's momentum update", "[training]") {
  Model m = cnn_bn_model();
  TrainingOptions o;
  o.spec = spec_of(m);
  auto ts = value_or_throw(TrainingSession::create(m.graph, o));
  // The statistics are buffers, not trainable weights.
  CHECK(ts->weights().size() == 8);
  CHECK(ts->weight("bn1/mean") == nullptr);
  (void)value_or_throw(ts->train_step(m.batch));
  check_running_stats(*ts, "step1_", 1e-6);
}

TEST_CASE("training: CNN with batch norm loss curves of SGD and Adam follow PyTorch's",
          "[training]") {
  // SGD's running statistics after 100 steps equal torch's to 1e-4. Adam's drift further
  // (measured: max relative error 5.4e-2, while the losses stay within 1e-3): Adam divides each
  // gradient element by its own running magnitude, so graphi's float32 conv weight gradients
  // (composed of oneDNN forward convolutions) differing from torch's in the last bits of their
  // smallest elements move the weights apart over 100 steps; torch's own float32 and float64
  // Adam runs agree to 1e-6. A wrong momentum convention would be off by O(1).
  for (const char* opt : {"sgd", "adam"}) {
    Model m = cnn_bn_model();
    auto ts = check_curve_against_torch(m, "cnn_bn", opt);
    check_running_stats(*ts, std::string(opt) + "_final_", std::string(opt) == "sgd" ? 1e-4 : 0.1);
  }
}

TEST_CASE(
    "training: MLP with dropout (graphi's seeded masks, applied in torch too) gradients and loss "
    "curves follow PyTorch's",
    "[training]") {
  check_gradients_against_torch(mlp_dropout_model(), "mlp_dropout");
  check_curve_against_torch(mlp_dropout_model(), "mlp_dropout", "sgd");
  check_curve_against_torch(mlp_dropout_model(), "mlp_dropout", "adam");
  // Inference: Dropout is the identity, so the model's logits are the plain MLP's.
  auto with = value_or_throw(engine::Session::create(mlp_dropout()));
  auto without = value_or_throw(engine::Session::create(mlp()));
  NamedTensors a = value_or_throw(with->run({mlp_dropout_model().batch[0]}));
  NamedTensors b = value_or_throw(without->run({mlp_model().batch[0]}));
  CHECK(test::max_rel_error(a[0].second, b[0].second) == 0.0);
}

TEST_CASE("training: unrolled 2-layer GRU (torch.nn.GRUCell) gradients equal PyTorch autograd",
          "[training]") {
  check_gradients_against_torch(gru_model(), "gru");
}

TEST_CASE("training: unrolled 2-layer GRU loss curves of SGD and Adam follow PyTorch's",
          "[training]") {
  check_curve_against_torch(gru_model(), "gru", "sgd");
  check_curve_against_torch(gru_model(), "gru", "adam");
}

TEST_CASE("training: unrolled 2-layer LSTM gradients equal PyTorch autograd", "[training]") {
  check_gradients_against_torch(lstm_model(), "lstm");
}

TEST_CASE("training: MLP loss curves of SGD with momentum and Adam follow PyTorch's",
          "[training]") {
  check_curve_against_torch(mlp_model(), "mlp", "sgd");
  check_curve_against_torch(mlp_model(), "mlp", "adam");
}

TEST_CASE("training: unrolled 2-layer LSTM loss curves of SGD and Adam follow PyTorch's",
          "[training]") {
  check_curve_against_torch(lstm_model(), "lstm", "sgd");
  check_curve_against_torch(lstm_model(), "lstm", "adam");
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

// Trains `m` for 3 steps on each configuration (executors x threads per executor: 1x1, 1x2, 2x1)
// and policy, and compares losses, weights and buffers with the sequential executor's at the
// same team size, bitwise.
void check_policies_bitwise(const Model& m, const graph::passes::TrainingSpec& spec,
                            bool same_across_team_sizes) {
  auto train = [&](int executors, int threads, const std::string& policy) {
    TrainingOptions o;
    o.spec = spec;
    o.session.executors = executors;
    o.session.threads = threads;
    o.session.scheduler = policy;
    o.session.pin = executors * threads <= usable_cores();
    auto ts = value_or_throw(TrainingSession::create(m.graph, o));
    std::vector<float> losses;
    for (int i = 0; i < 3; ++i) losses.push_back(value_or_throw(ts->train_step(m.batch)));
    return std::make_pair(losses, std::move(ts));
  };
  auto same = [](const TrainingSession& a, const TrainingSession& b) {
    auto wa = a.weights(), ba = a.buffers();
    wa.insert(wa.end(), ba.begin(), ba.end());
    for (const auto& [name, w] : wa) {
      INFO(name);
      const Tensor* other = b.weight(name);
      if (!other)
        for (const auto& [n2, t2] : b.buffers())
          if (n2 == name) other = t2;
      REQUIRE(other != nullptr);
      CHECK(std::memcmp(w->data(), other->data(), w->desc().bytes()) == 0);
    }
  };
  struct C {
    int e, t;
  };
  auto [seq1_losses, seq1] = train(1, 1, "sequential");
  for (const C c : {C{1, 1}, C{1, 2}, C{2, 1}}) {
    auto [ref_losses, ref] = train(1, c.t, "sequential");
    for (const char* policy : {"cpf", "fifo", "shared-queue"}) {
      INFO(policy << " " << c.e << "x" << c.t);
      auto [losses, ts] = train(c.e, c.t, policy);
      CHECK(losses == ref_losses);
      same(*ts, *ref);
    }
    if (c.t == 2 && same_across_team_sizes) {
      // The LSTM's kernels give a team of 2 the results of one thread, bit for bit.
      INFO("sequential 1x2 against sequential 1x1");
      CHECK(ref_losses == seq1_losses);
      same(*ref, *seq1);
    }
  }
}

TEST_CASE(
    "training: a 4-layer LSTM step on every scheduler policy and configuration equals the "
    "sequential executor bitwise",
    "[training]") {
  const auto& reg = ops::Registry::get();
  Model m{std::make_shared<const graph::Graph>(
              value_or_throw(models::build_lstm(lstm_spec(4, 4, 2, 8, 8), reg))),
          graph::passes::LossKind::kMeanSquaredError,
          "y",
          "target",
          {{"x", test::random_tensor({DType::kF32, {4, 2, 8}}, 1)},
           {"h0", test::random_tensor({DType::kF32, {4, 2, 8}}, 2)},
           {"c0", test::random_tensor({DType::kF32, {4, 2, 8}}, 3)},
           {"target", test::random_tensor({DType::kF32, {4, 2, 8}}, 4)}}};
  graph::passes::TrainingSpec spec = spec_of(m);
  spec.optimizer.kind = "adam";
  spec.optimizer.lr = 0.01;
  check_policies_bitwise(m, spec, true);
}

TEST_CASE(
    "training: a CNN step with batch norm and dropout on every scheduler policy and "
    "configuration equals the sequential executor bitwise",
    "[training]") {
  Model m = cnn_bn_model(0.25);
  graph::passes::TrainingSpec spec = spec_of(m);
  spec.optimizer.momentum = 0.9;
  // oneDNN's convolutions split their work by team size, with another summation order: a team of
  // 2 is compared with the sequential executor's team of 2 only.
  check_policies_bitwise(m, spec, false);
}

TEST_CASE("training: the saved model reloads and infers with the trained weights", "[training]") {
  Model m = mlp_model();
  TrainingOptions o;
  o.spec = spec_of(m);
  o.spec.optimizer.lr = 0.1;
  auto ts = value_or_throw(TrainingSession::create(m.graph, o));
  for (int i = 0; i < 5; ++i) (void)value_or_throw(ts->train_step(m.batch));
  const auto dir = test::scratch_dir("training_save");
  const std::string path = (dir / "mlp_trained.graphi").string();
  REQUIRE(ts->save(path).is_ok());
  REQUIRE(ts->save_npy((dir / "weights").string()).is_ok());
  graph::Graph re = value_or_throw(graph::read_graphi(path, ops::Registry::get()));
  for (const auto& [name, w] : ts->weights()) {
    INFO(name);
    const graph::Value& v = re.value(*re.find_value(name));
    REQUIRE(v.kind == graph::ValueKind::kConstant);
    CHECK(test::max_rel_error(*v.data, *w) == 0.0);
    CHECK(test::max_rel_error(
              value_or_throw(graph::read_npy((dir / "weights" / (name + ".npy")).string())), *w) ==
          0.0);
    // Trained: different from the initial weights.
    CHECK(test::max_rel_error(*v.data, *m.graph->value(*m.graph->find_value(name)).data) > 0.0);
  }
  // Inference on the reloaded model, cross-entropy computed here from its logits, equals the
  // loss the next training step reports (computed before that step's update).
  auto s =
      value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(std::move(re))));
  NamedTensors out = value_or_throw(s->run({m.batch[0]}));
  const Tensor& logits = out[0].second;
  const Tensor& labels = m.batch[1].second;
  double ce = 0;
  for (int64_t r = 0; r < 16; ++r) {
    const float* z = logits.data_as<float>() + r * 4;
    double mx = z[0], sum = 0;
    for (int c = 1; c < 4; ++c) mx = std::max(mx, double(z[c]));
    for (int c = 0; c < 4; ++c) sum += std::exp(z[c] - mx);
    ce += -(z[labels.data_as<int64_t>()[r]] - mx - std::log(sum));
  }
  ce /= 16;
  const float next = value_or_throw(ts->train_step(m.batch));
  CHECK(std::abs(ce - next) < 1e-5);
}

// A naive double-precision forward of the cnn_bn model in inference mode (running statistics)
// from the named weights: the reference for the reloaded model.
std::vector<double> cnn_bn_reference(const std::map<std::string, const Tensor*>& p,
                                     const Tensor& x) {
  auto at = [&](const char* name) { return p.at(name)->data_as<float>(); };
  using Map = std::vector<double>;  // [N, C, H, W]
  auto conv = [](const Map& in, int64_t n, int64_t ci, int64_t hw, const float* w, int64_t co) {
    Map out(static_cast<size_t>(n * co * hw * hw), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < co; ++o)
        for (int64_t i = 0; i < hw; ++i)
          for (int64_t j = 0; j < hw; ++j) {
            double acc = 0;
            for (int64_t c = 0; c < ci; ++c)
              for (int64_t ki = 0; ki < 3; ++ki)
                for (int64_t kj = 0; kj < 3; ++kj) {
                  const int64_t ii = i + ki - 1, jj = j + kj - 1;
                  if (ii < 0 || jj < 0 || ii >= hw || jj >= hw) continue;
                  acc += in[static_cast<size_t>(((b * ci + c) * hw + ii) * hw + jj)] *
                         w[((o * ci + c) * 3 + ki) * 3 + kj];
                }
            out[static_cast<size_t>(((b * co + o) * hw + i) * hw + j)] = acc;
          }
    return out;
  };
  auto bn_relu = [&](Map& v, int64_t n, int64_t c, int64_t hw, const std::string& bn) {
    const float *scale = at((bn + "/scale").c_str()), *bias = at((bn + "/B").c_str()),
                *mean = at((bn + "/mean").c_str()), *var = at((bn + "/var").c_str());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t e = 0; e < hw * hw; ++e) {
          double& y = v[static_cast<size_t>((b * c + k) * hw * hw + e)];
          y = (y - mean[k]) / std::sqrt(double(var[k]) + 1e-5) * scale[k] + bias[k];
          y = std::max(y, 0.0);
        }
  };
  const int64_t n = 8;
  Map in(x.data_as<float>(), x.data_as<float>() + x.numel());
  Map h1 = conv(in, n, 2, 8, at("c1/W"), 4);
  bn_relu(h1, n, 4, 8, "bn1");
  Map p1(static_cast<size_t>(n * 4 * 16));
  for (int64_t b = 0; b < n * 4; ++b)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double mx = -1e300;
        for (int64_t di = 0; di < 2; ++di)
          for (int64_t dj = 0; dj < 2; ++dj)
            mx = std::max(mx, h1[static_cast<size_t>(b * 64 + (2 * i + di) * 8 + 2 * j + dj)]);
        p1[static_cast<size_t>(b * 16 + i * 4 + j)] = mx;
      }
  Map h2 = conv(p1, n, 4, 4, at("c2/W"), 6);
  bn_relu(h2, n, 6, 4, "bn2");
  std::vector<double> logits(static_cast<size_t>(n * 3));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < 3; ++o) {
      double acc = at("fc/b")[o];
      for (int64_t c = 0; c < 6; ++c) {
        double avg = 0;
        for (int64_t e = 0; e < 16; ++e) avg += h2[static_cast<size_t>((b * 6 + c) * 16 + e)];
        acc += avg / 16 * at("fc/W")[o * 6 + c];
      }
      logits[static_cast<size_t>(b * 3 + o)] = acc;
    }
  return logits;
}

TEST_CASE(
    "training: the saved CNN with batch norm reloads and infers with the trained weights and "
    "running statistics",
    "[training]") {
  for (const char* opt : {"sgd", "adam"}) {
    INFO(opt);
    Model m = cnn_bn_model();
    TrainingOptions o;
    o.spec = spec_of(m);
    o.spec.optimizer.kind = opt;
    o.spec.optimizer.lr = std::string(opt) == "sgd" ? 0.1 : 0.01;
    o.spec.optimizer.momentum = std::string(opt) == "sgd" ? 0.9 : 0.0;
    auto ts = value_or_throw(TrainingSession::create(m.graph, o));
    for (int i = 0; i < 100; ++i) (void)value_or_throw(ts->train_step(m.batch));
    const auto dir = test::scratch_dir("training_save_cnn_bn");
    const std::string path = (dir / (std::string(opt) + ".graphi")).string();
    REQUIRE(ts->save(path).is_ok());
    graph::Graph re = value_or_throw(graph::read_graphi(path, ops::Registry::get()));
    // The reloaded model is the inference form: BatchNormalization nodes, no training ops.
    int bn_nodes = 0;
    for (const graph::Node& n : re.nodes()) {
      bn_nodes += n.op == "BatchNormalization";
      CHECK(n.op != "BatchNormalizationTraining");
    }
    CHECK(bn_nodes == 2);
    std::map<std::string, const Tensor*> reported;
    for (const auto& [name, t] : ts->weights()) reported[name] = t;
    for (const auto& [name, t] : ts->buffers()) reported[name] = t;
    REQUIRE(reported.size() == 12);
    for (const auto& [name, t] : reported) {
      INFO(name);
      const graph::Value& v = re.value(*re.find_value(name));
      REQUIRE(v.kind == graph::ValueKind::kConstant);
      CHECK(std::memcmp(v.data->data(), t->data(), t->desc().bytes()) == 0);
    }
    auto s = value_or_throw(
        engine::Session::create(std::make_shared<const graph::Graph>(std::move(re))));
    NamedTensors out = value_or_throw(s->run({m.batch[0]}));
    const Tensor& logits = out[0].second;
    const std::vector<double> want = cnn_bn_reference(reported, m.batch[0].second);
    double err = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err = std::max(err, std::abs(logits.data_as<float>()[i] - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    INFO("reloaded inference against the naive reference: max error " << err << ", scale "
                                                                      << scale);
    CHECK(err <= 1e-5 * std::max(1.0, scale));
    // And torch's trained module in eval mode (the same 100 steps in torch) agrees closely.
    const double e = tensor_rel_error(logits, fixture("cnn_bn", std::string(opt) + "_eval_logits"));
    INFO("against torch's eval-mode logits after 100 steps: max relative error " << e);
    CHECK(e <= (std::string(opt) == "sgd" ? 1e-3 : 0.1));  // Adam: see the running-stats test
  }
}

TEST_CASE(
    "training: a torch model exported in training mode (batch norm, dropout) loads, infers like "
    "the eval-mode module and trains with torch's gradients",
    "[training]") {
  auto g = value_or_throw(engine::load_model(kDir + "cnn_bn_dropout.onnx"));
  int bn = 0, drop = 0;
  for (const graph::Node& n : g->nodes()) {
    bn += n.op == "BatchNormalization";
    drop += n.op == "Dropout";
  }
  CHECK(bn == 2);
  CHECK(drop == 1);
  const Tensor x = fixture("cnn_bn", "x");
  // Inference: running statistics, Dropout as the identity (module.eval()).
  auto s = value_or_throw(engine::Session::create(g));
  NamedTensors out = value_or_throw(s->run({{"x", x}}));
  const double e = tensor_rel_error(out[0].second, fixture("onnx", "eval_logits"));
  INFO("inference against torch eval(): max relative error " << e);
  CHECK(e <= 1e-5);
  // Training: batch statistics and graphi's step-1 dropout mask, against torch float64 autograd
  // with that mask (make_fixtures.py recomputes it).
  Model m{g,
          graph::passes::LossKind::kSoftmaxCrossEntropy,
          "logits",
          "labels",
          {{"x", x}, {"labels", fixture("cnn_bn", "labels")}}};
  check_gradients_against_torch(m, "onnx");
  // A few SGD steps run, the running statistics move and the loss falls.
  TrainingOptions o;
  o.spec = spec_of(m);
  auto ts = value_or_throw(TrainingSession::create(g, o));
  REQUIRE(ts->buffers().size() == 4);
  const float first = value_or_throw(ts->train_step(m.batch));
  float last = first;
  for (int i = 0; i < 20; ++i) last = value_or_throw(ts->train_step(m.batch));
  CHECK(last < first);
  CHECK(tensor_rel_error(*ts->buffers()[0].second, fixture("cnn_bn", "bn1/mean")) > 0.01);
}

TEST_CASE("training: bad batches and specs are refused with errors naming the input",
          "[training]") {
  Model m = mlp_model();
  TrainingOptions o;
  o.spec = spec_of(m);
  auto ts = value_or_throw(TrainingSession::create(m.graph, o));
  auto r = ts->train_step({m.batch[0]});
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("'labels' is missing"));
  auto r2 = ts->train_step({m.batch[0], {"labels", Tensor(TensorDesc{DType::kI64, {3}})}});
  REQUIRE_FALSE(r2.is_ok());
  CHECK_THAT(r2.status().message(), Catch::Contains("labels"));
  auto r3 =
      ts->train_step({m.batch[0], m.batch[1], {"extra", Tensor(TensorDesc{DType::kI64, {3}})}});
  REQUIRE_FALSE(r3.is_ok());
  CHECK_THAT(r3.status().message(), Catch::Contains("unknown input 'extra'"));
  CHECK(ts->steps() == 0);
  TrainingOptions bad = o;
  bad.spec.optimizer.kind = "lbfgs";
  CHECK_FALSE(TrainingSession::create(m.graph, bad).is_ok());
  bad = o;
  bad.spec.prediction = "nope";
  CHECK_FALSE(TrainingSession::create(m.graph, bad).is_ok());
}

}  // namespace
}  // namespace graphi
