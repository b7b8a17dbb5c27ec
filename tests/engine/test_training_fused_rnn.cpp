// Training graphs with the FUSED LSTM / GRU sequence ops (ops/rnn/rnn_train.h) against PyTorch
// (fixtures: tests/data/training/make_fused_rnn_fixtures.py, torch 1.13, ONNX models built with
// onnx.helper and imported here by graphi's ONNX importer): every weight gradient against float64
// autograd (and, for two small cases, float64 finite differences), 100-step SGD and Adam loss
// curves of a 2-layer LSTM and a 2-layer GRU classifier, a training step on every scheduler
// policy equal to the sequential executor's bitwise, the trained model's inference, and the
// features the gradient refuses by name.
#include <sched.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "engine/session.h"
#include "engine/training_session.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_import.h"
#include "graph/passes/rnn_fusion.h"
#include "graph/passes/training_graph.h"
#include "models/lstm.h"
#include "ops/gradients.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace graphi {
namespace {

using engine::NamedTensors;
using engine::TrainingOptions;
using engine::TrainingSession;
using graph::passes::LossKind;

const std::string kDir = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/training/";

Tensor fixture(const std::string& folder, const std::string& name) {
  std::string file = name;
  for (char& c : file)
    if (c == '/') c = '_';
  return value_or_throw(graph::read_npy(kDir + folder + "/" + file + ".npy"));
}

std::shared_ptr<const graph::Graph> model(const std::string& folder) {
  return std::make_shared<const graph::Graph>(
      value_or_throw(graph::import_onnx_file(kDir + folder + "/model.onnx", ops::Registry::get())));
}

struct Case {
  std::string folder;
  LossKind loss;
  std::string prediction;
  std::vector<std::string> data;  // input names (fixtures), the label last for ce
};

Case lstm_classifier() {
  return {"fused_lstm", LossKind::kSoftmaxCrossEntropy, "logits", {"x", "labels"}};
}
Case gru_classifier() {
  return {"fused_gru", LossKind::kSoftmaxCrossEntropy, "logits", {"x", "labels"}};
}
Case rnn_classifier() {
  return {"fused_rnn", LossKind::kSoftmaxCrossEntropy, "logits", {"x", "labels"}};
}
Case rnn_fd() { return {"fused_rnn_fd", LossKind::kValue, "total", {"x", "r1", "r2"}}; }
Case lstm_fd() { return {"fused_lstm_fd", LossKind::kValue, "total", {"x", "r1", "r2", "r3"}}; }
Case gru_fd() { return {"fused_gru_fd", LossKind::kValue, "total", {"x", "r1", "r2"}}; }

graph::passes::TrainingSpec spec_of(const Case& c) {
  graph::passes::TrainingSpec s;
  s.loss = c.loss;
  s.prediction = c.prediction;
  s.label_input = "labels";
  return s;
}

NamedTensors batch_of(const Case& c) {
  NamedTensors b;
  for (const std::string& n : c.data) b.emplace_back(n, fixture(c.folder, n));
  return b;
}

// max |got - want| / max |want| over the tensor.
double rel_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.desc() == want.desc());
  double err = 0, scale = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    err = std::max(err, std::abs(double(got.data_as<float>()[i]) - want.data_as<float>()[i]));
    scale = std::max(scale, std::abs(double(want.data_as<float>()[i])));
  }
  return err / scale;
}

int count_ops(const graph::Graph& g, const std::string& op) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) n += node.op == op;
  return n;
}

// Gradients of every weight against `prefix`<weight>.npy (grad_ = autograd, fd_ = differences).
void check_gradients(const Case& c, const std::string& prefix, int fused_layers,
                     const std::string& grad_op) {
  auto m = model(c.folder);
  graph::passes::TrainingSpec spec = spec_of(c);
  spec.optimizer_step = false;
  spec.grads_as_outputs = true;
  auto tg = value_or_throw(
      graph::passes::build_training_graph(*m, spec, ops::gradient_rules(), ops::Registry::get()));
  // The sequence ops stayed fused: one backward op per layer, no unrolled cells.
  CHECK(count_ops(tg.graph, grad_op) == fused_layers);
  NamedTensors in = batch_of(c);
  for (const std::string& w : tg.weights) in.emplace_back(w, *m->value(*m->find_value(w)).data);
  for (int threads : {1, 2}) {
    engine::SessionOptions so;
    so.threads = threads;
    so.pin = false;
    auto s =
        value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(tg.graph), so));
    NamedTensors out = value_or_throw(s->run(in));
    REQUIRE(out[0].first == "loss");
    const double loss0 = *fixture(c.folder, "loss0").data_as<float>();
    CHECK(std::abs(*out[0].second.data_as<float>() - loss0) <
          1e-5 * std::max(1.0, std::abs(loss0)));
    REQUIRE(out.size() == tg.weights.size() + 1);
    double worst = 0;
    for (size_t i = 0; i < tg.weights.size(); ++i) {
      const std::string& w = tg.weights[i];
      REQUIRE(out[i + 1].first == "grad/" + w);
      const double e = rel_error(out[i + 1].second, fixture(c.folder, prefix + w));
      worst = std::max(worst, e);
      INFO(c.folder << " (" << threads << " threads) gradient of " << w << " vs " << prefix
                    << ": max relative error " << e);
      CHECK(e <= 1e-4);
    }
    WARN(c.folder << " " << threads << " thread(s): worst weight gradient error vs " << prefix
                  << " = " << worst);
  }
}

void check_curve(const Case& c, const std::string& optimizer) {
  TrainingOptions o;
  o.spec = spec_of(c);
  o.spec.optimizer.kind = optimizer;
  if (optimizer == "sgd") {
    o.spec.optimizer.lr = 0.1;
    o.spec.optimizer.momentum = 0.9;
  } else {
    o.spec.optimizer.lr = 0.01;
  }
  auto ts = value_or_throw(TrainingSession::create(model(c.folder), o));
  const NamedTensors batch = batch_of(c);
  Tensor want = fixture(c.folder, optimizer + "_losses");
  double worst = 0;
  for (int64_t step = 0; step < want.numel(); ++step) {
    const float loss = value_or_throw(ts->train_step(batch));
    const double d = std::abs(double(loss) - want.data_as<float>()[step]);
    worst = std::max(worst, d);
    INFO(c.folder << " " << optimizer << " step " << step << ": graphi " << loss << ", torch "
                  << want.data_as<float>()[step]);
    REQUIRE(d <= 1e-3);
  }
  // Training went somewhere.
  CHECK(want.data_as<float>()[want.numel() - 1] < 0.9 * want.data_as<float>()[0]);
  WARN(c.folder << " " << optimizer << ": max |loss - torch| over " << want.numel()
                << " steps = " << worst);
}

TEST_CASE("fused RNN training: 2-layer LSTM classifier gradients equal PyTorch autograd",
          "[training][fused_rnn]") {
  check_gradients(lstm_classifier(), "grad_", 2, "LSTMGrad");
}

TEST_CASE("fused RNN training: 2-layer GRU classifier gradients equal PyTorch autograd",
          "[training][fused_rnn]") {
  check_gradients(gru_classifier(), "grad_", 2, "GRUGrad");
}

TEST_CASE(
    "fused RNN training: bidirectional layout-1 LSTM with peepholes and initial states against "
    "float64 finite differences and autograd",
    "[training][fused_rnn]") {
  check_gradients(lstm_fd(), "fd_", 1, "LSTMGrad");
  check_gradients(lstm_fd(), "grad_", 1, "LSTMGrad");
}

TEST_CASE(
    "fused RNN training: bidirectional layout-1 canonical GRU against float64 finite "
    "differences and autograd",
    "[training][fused_rnn]") {
  check_gradients(gru_fd(), "fd_", 1, "GRUGrad");
  check_gradients(gru_fd(), "grad_", 1, "GRUGrad");
}

TEST_CASE(
    "fused RNN training: 2-layer RNN (Tanh, then Relu bidirectional) classifier gradients "
    "equal PyTorch autograd",
    "[training][fused_rnn]") {
  check_gradients(rnn_classifier(), "grad_", 2, "RNNGrad");
}

TEST_CASE(
    "fused RNN training: bidirectional layout-1 RNN (Sigmoid / Tanh) against float64 finite "
    "differences and autograd",
    "[training][fused_rnn]") {
  check_gradients(rnn_fd(), "fd_", 1, "RNNGrad");
  check_gradients(rnn_fd(), "grad_", 1, "RNNGrad");
}

TEST_CASE("fused RNN training: RNN classifier SGD and Adam loss curves follow PyTorch's",
          "[training][fused_rnn]") {
  check_curve(rnn_classifier(), "sgd");
  check_curve(rnn_classifier(), "adam");
}

TEST_CASE("fused RNN training: LSTM classifier SGD and Adam loss curves follow PyTorch's",
          "[training][fused_rnn]") {
  check_curve(lstm_classifier(), "sgd");
  check_curve(lstm_classifier(), "adam");
}

TEST_CASE("fused RNN training: GRU classifier SGD and Adam loss curves follow PyTorch's",
          "[training][fused_rnn]") {
  check_curve(gru_classifier(), "sgd");
  check_curve(gru_classifier(), "adam");
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

TEST_CASE(
    "fused RNN training: a fused LSTM step on every scheduler policy equals the sequential "
    "executor bitwise",
    "[training][fused_rnn]") {
  const Case c = lstm_classifier();
  auto m = model(c.folder);
  const NamedTensors batch = batch_of(c);
  auto train = [&](int executors, int threads, const std::string& policy) {
    TrainingOptions o;
    o.spec = spec_of(c);
    o.spec.optimizer.kind = "adam";
    o.spec.optimizer.lr = 0.01;
    o.session.executors = executors;
    o.session.threads = threads;
    o.session.scheduler = policy;
    o.session.pin = executors * threads <= usable_cores();
    auto ts = value_or_throw(TrainingSession::create(m, o));
    std::vector<float> losses;
    for (int i = 0; i < 3; ++i) losses.push_back(value_or_throw(ts->train_step(batch)));
    return std::make_pair(losses, std::move(ts));
  };
  struct C {
    int e, t;
  };
  for (const C cfg : {C{2, 1}, C{1, 2}}) {
    auto [ref_losses, ref] = train(1, cfg.t, "sequential");
    for (const char* policy : {"cpf", "fifo", "shared-queue"}) {
      INFO(policy << " " << cfg.e << "x" << cfg.t);
      auto [losses, ts] = train(cfg.e, cfg.t, policy);
      CHECK(losses == ref_losses);
      for (const auto& [name, w] : ts->weights()) {
        INFO(name);
        CHECK(test::max_rel_error(*w, *ref->weight(name)) == 0.0);
      }
    }
  }
}

TEST_CASE(
    "fused RNN training: the trained fused LSTM reloads and its inference (WCS kernel) gives "
    "the loss of the next step",
    "[training][fused_rnn]") {
  const Case c = lstm_classifier();
  TrainingOptions o;
  o.spec = spec_of(c);
  o.spec.optimizer.lr = 0.1;
  auto ts = value_or_throw(TrainingSession::create(model(c.folder), o));
  const NamedTensors batch = batch_of(c);
  for (int i = 0; i < 5; ++i) (void)value_or_throw(ts->train_step(batch));
  graph::Graph trained = value_or_throw(ts->trained_model());
  CHECK(count_ops(trained, "LSTM") == 2);
  auto s = value_or_throw(
      engine::Session::create(std::make_shared<const graph::Graph>(std::move(trained))));
  NamedTensors out = value_or_throw(s->run({batch[0]}));
  const Tensor& logits = out[0].second;
  const Tensor& labels = batch[1].second;
  const int64_t n = logits.desc().shape[0], k = logits.desc().shape[1];
  double ce = 0;
  for (int64_t r = 0; r < n; ++r) {
    const float* z = logits.data_as<float>() + r * k;
    double mx = z[0], sum = 0;
    for (int64_t j = 1; j < k; ++j) mx = std::max(mx, double(z[j]));
    for (int64_t j = 0; j < k; ++j) sum += std::exp(z[j] - mx);
    ce += -(z[labels.data_as<int64_t>()[r]] - mx - std::log(sum));
  }
  ce /= static_cast<double>(n);
  const float next = value_or_throw(ts->train_step(batch));
  CHECK(std::abs(ce - next) < 1e-5);
}

// A one-layer LSTM [T=3, B=2, I=2] -> [H=2] with the given extra attribute / inputs, MSE on Y.
std::shared_ptr<const graph::Graph> small_lstm(bool clip, bool seq_lens) {
  graph::GraphBuilder b("small_lstm");
  b.add_input("x", {DType::kF32, {3, 2, 2}});
  b.add_constant("W", test::random_tensor({DType::kF32, {1, 8, 2}}, 1));
  b.add_constant("R", test::random_tensor({DType::kF32, {1, 8, 2}}, 2));
  std::vector<std::string> ins = {"x", "W", "R"};
  if (seq_lens) {
    Tensor lens(TensorDesc{DType::kI32, {2}});
    lens.data_as<int32_t>()[0] = 3;
    lens.data_as<int32_t>()[1] = 2;
    b.add_constant("lens", std::move(lens));
    ins.push_back("");
    ins.push_back("lens");
  }
  graph::Attributes a;
  a.set("hidden_size", int64_t{2});
  if (clip) a.set("clip", 5.0);
  b.add_node("LSTM", "the_lstm", ins, {"y"}, a);
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

TEST_CASE("fused RNN training: unsupported LSTM features are refused naming node and feature",
          "[training][fused_rnn]") {
  for (const bool clip : {true, false}) {
    auto g = small_lstm(clip, !clip);
    graph::passes::TrainingSpec spec;
    spec.loss = LossKind::kMeanSquaredError;
    spec.label_input = "target";
    auto r =
        graph::passes::build_training_graph(*g, spec, ops::gradient_rules(), ops::Registry::get());
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("node 'the_lstm' (LSTM)"));
    CHECK_THAT(r.status().message(), Catch::Contains(clip ? "'clip'" : "sequence_lens"));
  }
}

}  // namespace
}  // namespace graphi

namespace graphi {
namespace {

// graphi's unrolled 2-layer LSTM (models/lstm.h) with the weights of the unrolled fixture
// (tests/data/training/lstm, make_fixtures.py), then fused by graph/passes/rnn_fusion.h.
std::shared_ptr<const graph::Graph> fused_model_lstm() {
  const auto& reg = ops::Registry::get();
  models::RnnSpec spec;
  spec.layers = 2;
  spec.seq = 5;
  spec.batch = 3;
  spec.input = 4;
  spec.hidden = 6;
  graph::Graph g = value_or_throw(models::build_lstm(spec, reg));
  std::vector<Tensor> held;
  std::map<std::string, const Tensor*> data;
  for (int l = 0; l < 2; ++l)
    for (const char* w : {"W", "R", "b"})
      held.push_back(fixture("lstm", "l" + std::to_string(l) + "/" + w));
  int k = 0;
  for (int l = 0; l < 2; ++l)
    for (const char* w : {"W", "R", "b"}) data["l" + std::to_string(l) + "/" + w] = &held[k++];
  graph::Graph weighted = value_or_throw(graph::passes::replace_constants(g, data, reg));
  auto fused = value_or_throw(graph::passes::fuse_rnn_cells(weighted, reg));
  REQUIRE(fused.lstm_sequences == 2);
  return std::make_shared<const graph::Graph>(std::move(fused.graph));
}

// A tensor transposed from [rows, cols] to [cols, rows] (the unrolled model's x W layout to
// ONNX's W).
Tensor transposed(const Tensor& t) {
  const int64_t r = t.desc().shape[0], c = t.desc().shape[1];
  Tensor out(TensorDesc{DType::kF32, {c, r}});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out.data_as<float>()[j * r + i] = t.data_as<float>()[i * c + j];
  return out;
}

// Elements [begin, begin + n) of t as a tensor of `shape`.
Tensor part(const Tensor& t, int64_t begin, const Shape& shape) {
  Tensor out(TensorDesc{DType::kF32, shape});
  std::copy_n(t.data_as<float>() + begin, out.numel(), out.data_as<float>());
  return out;
}

TEST_CASE(
    "fused RNN training: graphi's unrolled LSTM fused by rnn_fusion has the gradients PyTorch "
    "gives the unrolled model",
    "[training][fused_rnn]") {
  auto g = fused_model_lstm();
  graph::passes::TrainingSpec spec;
  spec.loss = LossKind::kMeanSquaredError;
  spec.prediction = "y";
  spec.label_input = "target";
  spec.optimizer_step = false;
  spec.grads_as_outputs = true;
  auto tg = value_or_throw(
      graph::passes::build_training_graph(*g, spec, ops::gradient_rules(), ops::Registry::get()));
  CHECK(count_ops(tg.graph, "LSTMGrad") == 2);
  Tensor zeros(TensorDesc{DType::kF32, {2, 3, 6}});
  NamedTensors in = {{"x", fixture("lstm", "x")},
                     {"h0", zeros},
                     {"c0", zeros},
                     {"target", fixture("lstm", "target")}};
  for (const std::string& w : tg.weights) in.emplace_back(w, *g->value(*g->find_value(w)).data);
  auto s = value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(tg.graph)));
  NamedTensors out = value_or_throw(s->run(in));
  CHECK(std::abs(*out[0].second.data_as<float>() - *fixture("lstm", "loss0").data_as<float>()) <
        1e-6);
  std::map<std::string, const Tensor*> grads;
  for (const auto& [name, t] : out) grads[name] = &t;
  // The fused layers in order; their W [1, 4H, in] = the unrolled W^T, R likewise, B = [b | 0]
  // (rnn_fusion puts the bias into Wb): each half of B's gradient is the unrolled b's.
  int layer = 0;
  for (const graph::Node& n : g->nodes()) {
    if (n.op != "LSTM") continue;
    const std::string l = "l" + std::to_string(layer++) + "/";
    auto grad_of = [&](int slot) -> const Tensor& {
      const std::string name = "grad/" + g->value(n.inputs[static_cast<size_t>(slot)]).name;
      REQUIRE(grads.count(name) == 1);
      return *grads.at(name);
    };
    const Tensor& gw = grad_of(1);
    const Tensor& gr = grad_of(2);
    const Tensor& gb = grad_of(3);
    const int64_t H4 = gw.desc().shape[1];
    const Tensor want_w = transposed(fixture("lstm", "grad_" + l + "W"));
    const Tensor want_r = transposed(fixture("lstm", "grad_" + l + "R"));
    const Tensor want_b = fixture("lstm", "grad_" + l + "b");
    INFO(l);
    CHECK(rel_error(part(gw, 0, want_w.desc().shape), want_w) <= 1e-4);
    CHECK(rel_error(part(gr, 0, want_r.desc().shape), want_r) <= 1e-4);
    CHECK(rel_error(part(gb, 0, {H4}), want_b) <= 1e-4);
    CHECK(rel_error(part(gb, H4, {H4}), want_b) <= 1e-4);
  }
  CHECK(layer == 2);
}

}  // namespace
}  // namespace graphi
