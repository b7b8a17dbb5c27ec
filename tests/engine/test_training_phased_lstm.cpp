// Training the PhasedLSTM as sequence ops (ops/rnn/phased_lstm.h, PhasedLSTMGrad): the
// evaluation's phased-lstm built with one PhasedLSTM op per layer
// (models::build_phased_lstm_sequence_classifier) against the same model built of plain ops
// (unrolled cells and time gate, differentiated op by op; that model's 20-step loss curve is
// checked against PyTorch in tests/models/test_eval_models.cpp): every weight gradient, on the
// kernels' batch-row walk (>= 4 rows per thread) and on their team-wide steps (fewer rows), and
// 20 SGD steps against PyTorch's losses (the fixture's phased-lstm entry); and the features the
// evaluation model does not use (both directions, layout 1, peepholes, trained initial states)
// against central finite differences.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "engine/training_session.h"
#include "graph/graph_builder.h"
#include "graph/passes/training_graph.h"
#include "models/eval_models.h"
#include "ops/gradients.h"
#include "ops/registry.h"
#include "ops/rnn/phased_lstm.h"
#include "tests/support/test_util.h"

namespace graphi {
namespace {

using engine::NamedTensors;

int count_ops(const graph::Graph& g, const std::string& op) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) n += node.op == op ? 1 : 0;
  return n;
}

// The loss and the gradient of every weight (by name) of the phased-lstm small model at `batch`,
// built unrolled or with sequence ops, on one executor of `threads` threads.
std::map<std::string, Tensor> gradients(bool sequence_ops, int64_t batch, int threads) {
  models::EvalModelSpec spec;
  spec.name = "phased-lstm";
  spec.size = models::EvalSize::kSmall;
  spec.batch = batch;
  spec.seed = 7;
  spec.sequence_ops = sequence_ops;
  const graph::Graph m = value_or_throw(models::build_eval_model(spec, ops::Registry::get()));
  if (sequence_ops) CHECK(count_ops(m, "PhasedLSTM") == 4);
  graph::passes::TrainingSpec ts;
  ts.optimizer_step = false;
  ts.grads_as_outputs = true;
  auto tg = value_or_throw(
      graph::passes::build_training_graph(m, ts, ops::gradient_rules(), ops::Registry::get()));
  CHECK(count_ops(tg.graph, "PhasedLSTMGrad") == (sequence_ops ? 4 : 0));
  NamedTensors in = value_or_throw(models::eval_model_batch(spec));
  for (const std::string& w : tg.weights) in.emplace_back(w, *m.value(*m.find_value(w)).data);
  engine::SessionOptions so;
  so.threads = threads;
  so.pin = false;
  auto s =
      value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(tg.graph), so));
  NamedTensors out = value_or_throw(s->run(in));
  std::map<std::string, Tensor> r;
  for (auto& [name, t] : out) r.emplace(name, t);
  return r;
}

// The unrolled model's gradient of W / R is [H, 4H] (x W), the sequence op's [1, 4H, H].
Tensor as_cells_layout(const std::string& name, const Tensor& t) {
  if (t.desc().rank() != 3) return t;
  const int64_t g = t.desc().shape[1], h = t.desc().shape[2];
  Tensor out(TensorDesc{DType::kF32, {h, g}});
  for (int64_t i = 0; i < h; ++i)
    for (int64_t c = 0; c < g; ++c) out.data_as<float>()[i * g + c] = t.data_as<float>()[c * h + i];
  (void)name;
  return out;
}

}  // namespace

TEST_CASE("PhasedLSTM training: sequence-op gradients equal the unrolled cells' on every path",
          "[training][phased_lstm]") {
  // batch 16 on 1 and 2 threads: the batch-row walk; batch 3 on 2 threads: the team-wide steps.
  for (auto [batch, threads] : {std::pair<int64_t, int>{16, 1}, {16, 2}, {3, 2}}) {
    INFO("batch " << batch << ", " << threads << " thread(s)");
    const auto cells = gradients(false, batch, 1);
    const auto seq = gradients(true, batch, threads);
    REQUIRE(cells.count("loss"));
    CHECK(std::abs(*seq.at("loss").data_as<float>() - *cells.at("loss").data_as<float>()) <=
          1e-5 * std::abs(*cells.at("loss").data_as<float>()));
    int compared = 0;
    for (const auto& [name, want] : cells) {
      if (name.rfind("grad/", 0) != 0) continue;
      INFO(name);
      REQUIRE(seq.count(name));
      const Tensor got = as_cells_layout(name, seq.at(name));
      REQUIRE(got.desc() == want.desc());
      double scale = 0, err = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        scale = std::max(scale, std::abs(double(want.data_as<float>()[i])));
        err = std::max(err, std::abs(double(got.data_as<float>()[i]) - want.data_as<float>()[i]));
      }
      // Relative to the gradient's largest entry: the unrolled graph sums per step in float, the
      // kernel over all rows; the time gate in double.
      CHECK(err <= 1e-3 * scale + 1e-12);
      ++compared;
    }
    CHECK(compared == 4 * 6 + 2);  // W, R, b, tau, shift, r_on per layer; the classifier's W, b
  }
}

TEST_CASE("PhasedLSTM training: sequence ops follow PyTorch's loss for 20 steps on 1 and 2 threads",
          "[training][phased_lstm]") {
  std::ifstream f(std::string(GRAPHI_SOURCE_DIR) + "/tests/data/training/eval_models/losses.json");
  REQUIRE(f.good());
  const nlohmann::json fx = nlohmann::json::parse(f).at("phased-lstm");
  models::EvalModelSpec spec;
  spec.name = "phased-lstm";
  spec.size = models::EvalSize::kSmall;
  spec.batch = fx.at("batch").get<int64_t>();
  spec.seed = fx.at("seed").get<uint64_t>();
  spec.sequence_ops = true;
  auto g = std::make_shared<const graph::Graph>(
      value_or_throw(models::build_eval_model(spec, ops::Registry::get())));
  const auto batch = value_or_throw(models::eval_model_batch(spec));
  for (int threads : {1, 2}) {
    engine::TrainingOptions o;
    o.spec.optimizer.lr = fx.at("lr").get<double>();
    o.session.threads = threads;
    o.session.pin = false;
    auto ts = value_or_throw(engine::TrainingSession::create(g, o));
    const auto& want = fx.at("losses");
    for (size_t i = 0; i < want.size(); ++i) {
      const double got = value_or_throw(ts->train_step(batch));
      const double ref = want[i].get<double>();
      INFO(threads << " thread(s), step " << i + 1 << ": graphi " << got << ", PyTorch " << ref);
      CHECK(std::abs(got - ref) <= 1e-3 * std::abs(ref));
    }
    CHECK(want.back().get<double>() < 0.98 * want.front().get<double>());  // the losses move
  }
}

namespace {

// A bidirectional PhasedLSTM in layout 1 with peepholes and initial states, every weight a
// constant (h0, c0 included): loss = sum(Y P1) + sum(Y_h P2) + sum(Y_c P3).
constexpr int64_t kB = 2, kT = 4, kI = 3, kH = 4;
const std::vector<std::string> kTrained = {"W", "R", "B", "P", "h0", "c0", "tau", "shift", "r_on"};

graph::Graph fd_graph(const std::map<std::string, Tensor>& w) {
  graph::GraphBuilder b("<phased lstm fd>");
  b.add_input("x", TensorDesc{DType::kF32, {kB, kT, kI}});
  b.add_input("times", TensorDesc{DType::kF32, {kB, kT}});
  for (const auto& [name, t] : w) b.add_constant(name, t);
  graph::Attributes a;
  a.set("hidden_size", kH);
  a.set("direction", std::string("bidirectional"));
  a.set("layout", int64_t{1});
  a.set("alpha", 0.05f);
  b.add_node("PhasedLSTM", "plstm",
             {"x", "W", "R", "B", "", "h0", "c0", "P", "times", "tau", "shift", "r_on"},
             {"Y", "Y_h", "Y_c"}, std::move(a));
  graph::Attributes sum;
  sum.set("keepdims", int64_t{0});
  for (const char* k : {"1", "2", "3"}) {
    const std::string out = std::string(k) == "1" ? "Y" : std::string(k) == "2" ? "Y_h" : "Y_c";
    b.add_node("Mul", std::string("m") + k, {out, std::string("P") + k}, {std::string("m") + k});
    b.add_node("ReduceSum", std::string("s") + k, {std::string("m") + k}, {std::string("s") + k},
               sum);
  }
  b.add_node("Add", "s12", {"s1", "s2"}, {"s12"});
  b.add_node("Add", "total", {"s12", "s3"}, {"total"});
  b.add_output("total");
  return value_or_throw(b.finish(ops::Registry::get()));
}

std::map<std::string, Tensor> fd_weights() {
  std::map<std::string, Tensor> w;
  uint64_t seed = 40;
  auto add = [&](const std::string& n, Shape s, double lo, double hi) {
    w.emplace(n, test::random_tensor(TensorDesc{DType::kF32, std::move(s)}, seed++, lo, hi));
  };
  add("W", {2, 4 * kH, kI}, -0.6, 0.6);
  add("R", {2, 4 * kH, kH}, -0.6, 0.6);
  add("B", {2, 8 * kH}, -0.3, 0.3);
  add("P", {2, 3 * kH}, -0.5, 0.5);
  add("h0", {kB, 2, kH}, -0.5, 0.5);
  add("c0", {kB, 2, kH}, -0.5, 0.5);
  add("tau", {2, kH}, 1.5, 4.0);
  add("shift", {2, kH}, 0.0, 1.0);
  add("r_on", {2, kH}, 0.3, 0.9);  // wide open phases: every piece of k is visited
  add("P1", {kB, kT, 2, kH}, -1, 1);
  add("P2", {kB, 2, kH}, -1, 1);
  add("P3", {kB, 2, kH}, -1, 1);
  return w;
}

double fd_loss(const std::map<std::string, Tensor>& w, const NamedTensors& in) {
  auto s = value_or_throw(
      engine::Session::create(std::make_shared<const graph::Graph>(fd_graph(w)), {}));
  return *value_or_throw(s->run(in))[0].second.data_as<float>();
}

// Which piece of the time gate k applies at ts, and in which period: 3 floor(u) + (0 rising,
// 1 falling, 2 closed), u = (ts - shift) / tau.
double gate_piece(double ts, double tau, double shift, double r_on) {
  const double u = (ts - shift) / tau, phi = u - std::floor(u);
  return 3 * std::floor(u) + (phi < 0.5 * r_on ? 0 : phi < r_on ? 1 : 2);
}

// Does moving one time-gate parameter by +-eps move any (t, b) of that unit across a piece
// boundary of k (where the loss has a kink and a central difference is no derivative)?
bool crosses_kink(const std::map<std::string, Tensor>& w, const Tensor& times,
                  const std::string& name, int64_t idx, double eps) {
  const float* tau = w.at("tau").data_as<float>();
  const float* shift = w.at("shift").data_as<float>();
  const float* ron = w.at("r_on").data_as<float>();
  for (double e : {-eps, eps}) {
    double p[3] = {tau[idx], shift[idx], ron[idx]};
    const int which = name == "tau" ? 0 : name == "shift" ? 1 : 2;
    for (int64_t i = 0; i < times.numel(); ++i) {
      const double ts = times.data_as<float>()[i];
      double q[3] = {p[0], p[1], p[2]};
      q[which] += e;
      if (gate_piece(ts, p[0], p[1], p[2]) != gate_piece(ts, q[0], q[1], q[2])) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE(
    "PhasedLSTM training: both directions, layout 1, peepholes and initial states against "
    "finite differences",
    "[training][phased_lstm]") {
  const std::map<std::string, Tensor> w = fd_weights();
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {kB, kT, kI}}, 90);
  Tensor times(TensorDesc{DType::kF32, {kB, kT}});
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t t = 0; t < kT; ++t)
      times.data_as<float>()[b * kT + t] = static_cast<float>(0.7 * t + 0.3 * b + 0.11);
  const NamedTensors in = {{"x", x}, {"times", times}};

  graph::passes::TrainingSpec ts;
  ts.loss = graph::passes::LossKind::kValue;
  ts.trainable = kTrained;
  ts.optimizer_step = false;
  ts.grads_as_outputs = true;
  const graph::Graph g = fd_graph(w);
  auto tg = value_or_throw(
      graph::passes::build_training_graph(g, ts, ops::gradient_rules(), ops::Registry::get()));
  CHECK(count_ops(tg.graph, "PhasedLSTMGrad") == 1);
  NamedTensors feed = in;
  for (const std::string& n : tg.weights) feed.emplace_back(n, w.at(n));
  for (int threads : {1, 2}) {
    engine::SessionOptions so;
    so.threads = threads;
    so.pin = false;
    auto s =
        value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(tg.graph), so));
    const NamedTensors out = value_or_throw(s->run(feed));
    int checked = 0, skipped = 0;
    for (const std::string& n : kTrained) {
      const Tensor* grad = nullptr;
      for (const auto& [name, t] : out)
        if (name == "grad/" + n) grad = &t;
      REQUIRE(grad);
      const bool gate = n == "tau" || n == "shift" || n == "r_on";
      const double eps = gate ? 2e-3 : 1e-2;
      for (int64_t i = 0; i < grad->numel(); i += std::max<int64_t>(1, grad->numel() / 7)) {
        if (gate && crosses_kink(w, times, n, i, eps)) {
          ++skipped;
          continue;
        }
        std::map<std::string, Tensor> plus = w, minus = w;
        plus.at(n).data_as<float>()[i] += static_cast<float>(eps);
        minus.at(n).data_as<float>()[i] -= static_cast<float>(eps);
        const double fd = (fd_loss(plus, in) - fd_loss(minus, in)) / (2 * eps);
        const double got = grad->data_as<float>()[i];
        INFO(threads << " thread(s), d loss / d " << n << "[" << i << "]: kernel " << got
                     << ", finite difference " << fd);
        CHECK(std::abs(got - fd) <= 3e-3 + 3e-2 * std::abs(fd));
        ++checked;
      }
    }
    CHECK(checked >= 40);
    CHECK(skipped <= checked / 2);
  }
}

}  // namespace graphi
