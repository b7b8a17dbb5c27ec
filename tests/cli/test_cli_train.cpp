// `graphi train` end to end: the MLP of tests/data/training (make_fixtures.py) trained from a
// .npz batch for 100 SGD-with-momentum steps follows PyTorch's loss curve; --save writes a model
// that `graphi run` loads; bad archives and options are errors naming what is wrong.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

const std::string kMlp = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/training/mlp/";

struct Run {
  int rc = -1;
  std::string out, err;
};

Run train_cli(const fs::path& dir, const std::string& args) {
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd =
      "'" + test::cli_path() + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  Run r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (auto [path, text] : {std::pair{out, &r.out}, std::pair{err, &r.err}}) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    *text = ss.str();
  }
  return r;
}

// The fixture MLP as a .graphi file: logits = relu(x W1 + b1) W2^T + b2.
fs::path write_mlp(const fs::path& dir) {
  graph::GraphBuilder b("mlp");
  b.add_input("x", {DType::kF32, {16, 10}});
  for (const char* w : {"W1", "b1", "W2", "b2"})
    b.add_constant(w, value_or_throw(graph::read_npy(kMlp + w + ".npy")));
  b.add_node("MatMul", "fc1", {"x", "W1"}, {"fc1"});
  b.add_node("Add", "fc1b", {"fc1", "b1"}, {"fc1b"});
  b.add_node("Relu", "h", {"fc1b"}, {"h"});
  graph::Attributes t;
  t.set("transB", int64_t{1});
  b.add_node("Gemm", "logits", {"h", "W2", "b2"}, {"logits"}, t);
  b.add_output("logits");
  const fs::path p = dir / "mlp.graphi";
  REQUIRE(graph::write_graphi(value_or_throw(b.finish(ops::Registry::get())), p.string()).is_ok());
  return p;
}

}  // namespace

TEST_CASE("graphi train follows PyTorch's SGD loss curve and saves a runnable model",
          "[cli][training]") {
  const fs::path dir = test::scratch_dir("cli_train");
  const fs::path model = write_mlp(dir);
  const fs::path saved = dir / "trained.graphi";
  Run r = train_cli(
      dir, "train '" + model.string() + "' --batch-from '" + kMlp +
               "batch.npz' --loss ce --label-input labels --optimizer sgd --lr 0.1 --momentum 0.9 "
               "--steps 100 --json --save '" +
               saved.string() + "' --save-npy '" + (dir / "w").string() + "'");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  auto j = nlohmann::json::parse(r.out);
  Tensor want = value_or_throw(graph::read_npy(kMlp + "sgd_losses.npy"));
  REQUIRE(j["steps"].size() == 100);
  for (int i = 0; i < 100; ++i) {
    INFO("step " << i);
    CHECK(std::abs(j["steps"][i]["loss"].get<double>() - want.data_as<float>()[i]) <= 1e-3);
    CHECK(j["steps"][i]["ms"].get<double>() >= 0.0);
  }
  CHECK(j["weights"] == 4);
  // The step graph holds the forward graph plus loss, backward and update ops.
  CHECK(j["parallelism"]["forward"]["ops"] == 4);
  CHECK(j["parallelism"]["step"]["ops"].get<int>() > 4 + 5 + 4);
  // The saved model holds the weights written as .npy and runs.
  graph::Graph g = value_or_throw(graph::read_graphi(saved.string(), ops::Registry::get()));
  for (const char* w : {"W1", "b1", "W2", "b2"}) {
    Tensor npy = value_or_throw(graph::read_npy((dir / "w" / (std::string(w) + ".npy")).string()));
    CHECK(test::max_rel_error(*g.value(*g.find_value(w)).data, npy) == 0.0);
    Tensor initial = value_or_throw(graph::read_npy(kMlp + w + ".npy"));
    CHECK(test::max_rel_error(npy, initial) > 0.0);
  }
  Run run =
      train_cli(dir, "run '" + saved.string() + "' --input x='" + kMlp + "x.npy' --iterations 1");
  INFO(run.err);
  CHECK(run.rc == 0);

  // Text mode prints one line per step.
  Run text = train_cli(
      dir, "train '" + model.string() + "' --batch-from '" + kMlp + "batch.npz' --steps 3");
  CHECK(text.rc == 0);
  CHECK(text.out.find("step 3 loss") != std::string::npos);
}

TEST_CASE("graphi train: missing arrays and bad options are errors", "[cli][training]") {
  const fs::path dir = test::scratch_dir("cli_train_errors");
  const fs::path model = write_mlp(dir);
  Run r = train_cli(dir, "train '" + model.string() + "' --batch-from '" + kMlp +
                             "batch.npz' --label-input target");
  CHECK(r.rc == 1);
  CHECK(r.err.find("no array 'target'") != std::string::npos);
  Run r2 = train_cli(
      dir, "train '" + model.string() + "' --batch-from '" + kMlp + "batch.npz' --optimizer lbfgs");
  CHECK(r2.rc == 2);
  Run r3 = train_cli(dir, "train '" + model.string() + "' --batch-from '" + kMlp + "x.npy'");
  CHECK(r3.rc == 1);
  CHECK(r3.err.find("x.npy") != std::string::npos);
  Run r4 = train_cli(dir, "train '" + model.string() + "'");
  CHECK(r4.rc == 2);
}

TEST_CASE("graphi train --fuse-rnn: the evaluation LSTM trains fused, unrolled PhasedLSTM cells are "
          "refused, PhasedLSTM sequence ops train like them",
          "[cli][training]") {
  const fs::path dir = test::scratch_dir("cli_train_fuse_rnn");
  const std::string m = (dir / "lstm.graphi").string(), b = (dir / "lstm.npz").string();
  Run made = train_cli(dir, "model lstm --size small --batch 4 --batch-npz '" + b + "' -o '" + m +
                                "'");
  REQUIRE(made.rc == 0);
  // The losses of 3 SGD steps at lr 0.5 of `model` on `batch`.
  auto train_losses = [&](const std::string& model, const std::string& batch,
                          const std::string& extra) {
    Run r = train_cli(dir, "train '" + model + "' --batch-from '" + batch +
                               "' --lr 0.5 --steps 3 --json" + extra);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    std::vector<double> l;
    const nlohmann::json js = nlohmann::json::parse(r.out);
    for (const auto& st : js["steps"]) l.push_back(st["loss"]);
    return l;
  };
  const std::vector<double> cells = train_losses(m, b, " --executors 2"),
                            fused = train_losses(m, b, " --executors 2 --fuse-rnn");
  REQUIRE(cells.size() == 3);
  REQUIRE(fused.size() == 3);
  // Step 1 is the forward before any update: the fused training kernel (one sequence op per
  // layer) against the unrolled cells' MatMul/Sigmoid/Tanh ops.
  CHECK(fused[0] == Approx(cells[0]).epsilon(1e-5));
  // Then both train. They part (1.4% by step 3 at lr 0.5): the fused model moves Wb and Rb, the
  // cells one bias, so the fused bias moves twice as fast (docs/TRAINING.md).
  CHECK(fused[1] < fused[0]);
  CHECK(fused[2] < fused[1]);
  CHECK(cells[2] < cells[0]);

  const std::string pm = (dir / "plstm.graphi").string(), pb = (dir / "plstm.npz").string();
  REQUIRE(train_cli(dir, "model phased-lstm --size small --batch 2 --batch-npz '" + pb + "' -o '" +
                             pm + "'")
              .rc == 0);
  Run refused = train_cli(dir, "train '" + pm + "' --batch-from '" + pb + "' --steps 1 --fuse-rnn");
  CHECK(refused.rc == 1);
  CHECK(refused.err.find("one-step sequence") != std::string::npos);
  // `graphi model phased-lstm --fuse-rnn` builds it with PhasedLSTM sequence ops instead: the
  // same weights, trained on the fused PhasedLSTM kernels, follow the unrolled cells' losses.
  const std::string ps = (dir / "plstm_seq.graphi").string();
  Run seq_made =
      train_cli(dir, "model phased-lstm --size small --batch 2 --fuse-rnn -o '" + ps + "'");
  INFO(seq_made.err);
  REQUIRE(seq_made.rc == 0);
  CHECK(seq_made.out.find("fused RNN cells") != std::string::npos);
  const std::vector<double> unrolled = train_losses(pm, pb, " --threads 2"),
                            sequence = train_losses(ps, pb, " --threads 2");
  REQUIRE(unrolled.size() == 3);
  REQUIRE(sequence.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(sequence[i] == Approx(unrolled[i]).epsilon(1e-4));
  CHECK(unrolled[2] < unrolled[0]);
}
