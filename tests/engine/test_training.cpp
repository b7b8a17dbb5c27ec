// Training graphs against PyTorch (fixtures: tests/data/training/make_fixtures.py, torch 1.13):
// gradients at identical weights (float64 autograd reference) and 100-step loss curves of SGD
// with momentum and of Adam (float32 torch) for an MLP, a small CNN (no batch norm) and an
// unrolled 2-layer LSTM; a training
// step on every scheduler policy equal to the sequential executor's, bitwise; the saved model
// reloads with the trained weights.
#include <sched.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "engine/session.h"
#include "engine/training_session.h"
#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "graph/passes/training_graph.h"
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

void check_curve_against_torch(const Model& m, const std::string& fixtures,
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

TEST_CASE(
    "training: a 4-layer LSTM step on every scheduler policy equals the sequential executor "
    "bitwise",
    "[training]") {
  const auto& reg = ops::Registry::get();
  auto g = std::make_shared<const graph::Graph>(
      value_or_throw(models::build_lstm(lstm_spec(4, 4, 2, 8, 8), reg)));
  NamedTensors batch = {{"x", test::random_tensor({DType::kF32, {4, 2, 8}}, 1)},
                        {"h0", test::random_tensor({DType::kF32, {4, 2, 8}}, 2)},
                        {"c0", test::random_tensor({DType::kF32, {4, 2, 8}}, 3)},
                        {"target", test::random_tensor({DType::kF32, {4, 2, 8}}, 4)}};
  auto train = [&](int executors, int threads, const std::string& policy) {
    TrainingOptions o;
    o.spec.loss = graph::passes::LossKind::kMeanSquaredError;
    o.spec.prediction = "y";
    o.spec.label_input = "target";
    o.spec.optimizer.kind = "adam";
    o.spec.optimizer.lr = 0.01;
    o.session.executors = executors;
    o.session.threads = threads;
    o.session.scheduler = policy;
    o.session.pin = executors * threads <= usable_cores();
    auto ts = value_or_throw(TrainingSession::create(g, o));
    std::vector<float> losses;
    for (int i = 0; i < 3; ++i) losses.push_back(value_or_throw(ts->train_step(batch)));
    return std::make_pair(losses, std::move(ts));
  };
  struct C {
    int e, t;
  };
  for (const C c : {C{2, 1}, C{1, 2}}) {
    auto [ref_losses, ref] = train(1, c.t, "sequential");
    for (const char* policy : {"cpf", "fifo", "shared-queue"}) {
      INFO(policy << " " << c.e << "x" << c.t);
      auto [losses, ts] = train(c.e, c.t, policy);
      CHECK(losses == ref_losses);
      for (const auto& [name, w] : ts->weights()) {
        INFO(name);
        CHECK(test::max_rel_error(*w, *ref->weight(name)) == 0.0);
      }
    }
  }
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
