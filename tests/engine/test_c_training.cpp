// The C API's trainer (include/graphi/graphi.h graphi_trainer_*): the fixture MLP of
// tests/data/training trained through C calls follows PyTorch's SGD-with-momentum loss curve;
// weights and save; errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "graphi/graphi.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace graphi {
namespace {

const std::string kMlp = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/training/mlp/";

Tensor npy(const std::string& name) {
  return value_or_throw(graph::read_npy(kMlp + name + ".npy"));
}

graphi_tensor view(const char* name, const Tensor& t) {
  return graphi_tensor{name,
                       static_cast<graphi_dtype>(t.dtype()),
                       static_cast<int32_t>(t.shape().size()),
                       t.shape().data(),
                       t.data(),
                       t.bytes()};
}

TEST_CASE("c api: a trainer follows PyTorch's SGD loss curve and saves the trained model",
          "[training]") {
  const auto dir = test::scratch_dir("c_training");
  graph::GraphBuilder b("mlp");
  b.add_input("x", {DType::kF32, {16, 10}});
  for (const char* w : {"W1", "b1", "W2", "b2"}) b.add_constant(w, npy(w));
  b.add_node("MatMul", "fc1", {"x", "W1"}, {"fc1"});
  b.add_node("Add", "fc1b", {"fc1", "b1"}, {"fc1b"});
  b.add_node("Relu", "h", {"fc1b"}, {"h"});
  graph::Attributes t;
  t.set("transB", int64_t{1});
  b.add_node("Gemm", "logits", {"h", "W2", "b2"}, {"logits"}, t);
  b.add_output("logits");
  const std::string model = (dir / "mlp.graphi").string();
  REQUIRE(graph::write_graphi(value_or_throw(b.finish(ops::Registry::get())), model).is_ok());

  graphi_train_options to;
  graphi_train_options_init(&to);
  to.lr = 0.1;
  to.momentum = 0.9;
  graphi_trainer* tr = nullptr;
  REQUIRE(graphi_trainer_open(model.c_str(), nullptr, &to, &tr) == GRAPHI_OK);
  REQUIRE(graphi_trainer_num_weights(tr) == 4);
  const Tensor x = npy("x"), labels = npy("labels"), want = npy("sgd_losses");
  const graphi_tensor batch[2] = {view("x", x), view("labels", labels)};
  for (int64_t i = 0; i < want.numel(); ++i) {
    float loss = -1;
    REQUIRE(graphi_trainer_step(tr, batch, 2, &loss) == GRAPHI_OK);
    INFO("step " << i);
    REQUIRE(std::abs(loss - want.data_as<float>()[i]) <= 1e-3);
  }
  graphi_tensor w{};
  REQUIRE(graphi_trainer_weight(tr, 0, &w) == GRAPHI_OK);
  CHECK(std::string(w.name) == "W1");
  CHECK(w.rank == 2);
  CHECK(w.bytes == 10 * 32 * 4);
  const std::string saved = (dir / "trained.graphi").string();
  REQUIRE(graphi_trainer_save(tr, saved.c_str()) == GRAPHI_OK);
  graph::Graph re = value_or_throw(graph::read_graphi(saved, ops::Registry::get()));
  const Tensor& w1 = *re.value(*re.find_value("W1")).data;
  CHECK(std::memcmp(w1.data(), w.data, w.bytes) == 0);

  // Errors: a missing label, an index out of range, an unknown optimizer.
  float loss = 0;
  CHECK(graphi_trainer_step(tr, batch, 1, &loss) == GRAPHI_INVALID_ARGUMENT);
  CHECK(std::string(graphi_last_error()).find("labels") != std::string::npos);
  CHECK(graphi_trainer_weight(tr, 4, &w) == GRAPHI_INVALID_ARGUMENT);
  graphi_trainer_free(tr);
  to.optimizer = "lbfgs";
  graphi_trainer* bad = nullptr;
  CHECK(graphi_trainer_open(model.c_str(), nullptr, &to, &bad) != GRAPHI_OK);
  CHECK(bad == nullptr);
}

}  // namespace
}  // namespace graphi
