// End to end: hand-written LSTM / GRU / RNN cells exported by torch.onnx.export
// (tests/data/onnx_cells/gen_onnx_cells.py; committed .onnx and PyTorch's inputs and outputs as
// .npy) are imported, run through the default pass pipeline, which must turn every layer into
// one LSTM / GRU / RNN sequence op, and run through engine::Session: outputs equal PyTorch's to
// 1e-4. The unfused import must match PyTorch as well (so a difference points at the passes).
#include <catch2/catch.hpp>

#include "graph/npy.h"
#include "graph/onnx/onnx_import.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;
using namespace graphi::test;

namespace {

std::string fixture(const std::string& file) {
  return std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_cells/" + file;
}

void check_against_torch(const std::string& model, const graph::Graph& g, int threads) {
  engine::NamedTensors in;
  for (graph::ValueId v : g.inputs()) {
    const std::string& name = g.value(v).name;
    auto t = graph::read_npy(fixture(model + ".in." + name + ".npy"));
    INFO(t.status().message());
    REQUIRE(t.is_ok());
    in.emplace_back(name, std::move(*t));
  }
  const engine::NamedTensors out = run_graph(g, in, threads);
  REQUIRE(out.size() == g.outputs().size());
  for (const auto& [name, tensor] : out) {
    INFO(model << " output " << name << " threads " << threads);
    auto want = graph::read_npy(fixture(model + ".out." + name + ".npy"));
    REQUIRE(want.is_ok());
    CHECK(max_rel_error(tensor, *want) < 1e-4);
  }
}

}  // namespace

TEST_CASE("PyTorch-exported hand-written cells fuse into one sequence op per layer",
          "[graph][passes][onnx]") {
  struct Case {
    const char* model;
    const char* op;
    int layers, seq;
  };
  const Case cases[] = {
      {"lstm_chunk", "LSTM", 2, 5},
      {"lstm_chunk_b1", "LSTM", 1, 4},
      {"lstm_per_gate", "LSTM", 2, 6},
      {"lstm_concat", "LSTM", 2, 4},
      {"gru_lbr", "GRU", 2, 5},
      {"gru_lbr_b1", "GRU", 1, 6},
      {"gru_canonical", "GRU", 2, 4},
      {"lstm_bidirectional", "LSTM", 2, 5},  // forward + reverse: two sequence ops
      {"lstm_peephole", "LSTM", 1, 4},       // peepholes become the op's P input
      {"rnn_tanh", "RNN", 2, 5},
  };
  for (const Case& c : cases) {
    INFO(c.model);
    auto g = graph::import_onnx_file(fixture(std::string(c.model) + ".onnx"), ops::Registry::get());
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    auto p = graph::passes::run_passes(*g, ops::Registry::get());
    INFO(p.status().message());
    REQUIRE(p.is_ok());
    const std::string op = c.op;
    CHECK((op == "LSTM"  ? p->lstm_sequences
           : op == "GRU" ? p->gru_sequences
                         : p->rnn_sequences) == c.layers);
    CHECK((op == "LSTM"  ? p->lstm_cells
           : op == "GRU" ? p->gru_cells
                         : p->rnn_cells) == c.layers * c.seq);
    CHECK(count_op(p->graph, c.op) == static_cast<size_t>(c.layers));
    for (const char* op : {"Sigmoid", "Tanh", "MatMul", "Gemm", "Mul"}) {
      INFO(op);
      CHECK(count_op(p->graph, op) == 0);
    }
    check_against_torch(c.model, *g, 1);
    check_against_torch(c.model, p->graph, 1);
    check_against_torch(c.model, p->graph, 2);
  }
}

TEST_CASE("A PyTorch-exported look-alike cell gets MM fusion and hoisting, not a sequence op",
          "[graph][passes][onnx]") {
  // One Linear per gate, candidate through relu: not an LSTM. Per step, the 4 x-side Gemms (and
  // the products reading the same h_t) become one GEMM each; layer 0's per-step x-side GEMMs
  // read x[t] of one input and become one GEMM ahead of the recurrence.
  auto g = graph::import_onnx_file(fixture("lstm_relu_per_gate.onnx"), ops::Registry::get());
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto p = graph::passes::run_passes(*g, ops::Registry::get());
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  CHECK(p->lstm_sequences == 0);
  CHECK(p->gru_sequences == 0);
  CHECK(p->mm_groups > 0);
  CHECK(p->mm_members == 8 * 2 * 4);  // every Gemm / MatMul of 2 layers x 4 steps
  CHECK(p->hoisted_groups == 1);
  CHECK(p->hoisted_members == 4);
  CHECK(count_op(p->graph, "Relu") == 8);
  check_against_torch("lstm_relu_per_gate", *g, 1);
  check_against_torch("lstm_relu_per_gate", p->graph, 1);
  check_against_torch("lstm_relu_per_gate", p->graph, 2);
}
