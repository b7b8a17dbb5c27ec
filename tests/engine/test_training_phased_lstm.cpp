// Training the PhasedLSTM as sequence ops (ops/rnn/phased_lstm.h, PhasedLSTMGrad): the
// evaluation's phased-lstm built with one PhasedLSTM op per layer
// (models::build_phased_lstm_sequence_classifier) against the same model built of plain ops
// (unrolled cells and time gate, differentiated op by op; that model's 20-step loss curve is
// checked against PyTorch in tests/models/test_eval_models.cpp): every weight gradient, on the
// kernels' batch-row walk (>= 4 rows per thread) and on their team-wide steps (fewer rows), and
// 20 SGD steps against PyTorch's losses (the fixture's phased-lstm entry).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "engine/training_session.h"
#include "graph/passes/training_graph.h"
#include "models/eval_models.h"
#include "ops/gradients.h"
#include "ops/registry.h"
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
  auto s = value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(tg.graph), so));
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

}  // namespace graphi
