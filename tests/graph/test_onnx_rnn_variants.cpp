// Recurrent models as users export or build them (tests/data/onnx_rnn_variants, built by
// make_variants.py): nn.LSTM/GRU/RNN exports over batch_first, bidirectional, 1-3 layers, bias,
// initial states, partial outputs, dynamic axes and opsets 9-17; cells in Python loops;
// pack_padded_sequence; and onnx.helper nodes with peepholes, clip, input_forget, reverse,
// uneven sequence_lens, layout 1, optional outputs named '', explicit activations and
// linear_before_reset, against PyTorch's outputs or a numpy implementation of the ONNX spec.
// Every MANIFEST model is loaded as the CLI loads it (engine::load_model with its --dim values),
// run with the default graph passes on 1 and 2 threads and without them (`--no-fuse`), and
// compared: 1e-4 of the output's scale plus 1e-5 absolute. Every gap is refused (kUnsupported)
// with an error that starts with the file and says what is not supported; every malformed node
// is rejected as invalid, naming the node and the field.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "engine/model_loader.h"
#include "engine/session.h"
#include "graph/npy.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

const std::string kDir = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_rnn_variants/";

using Variant = test::ManifestEntry;

// Runs `graph` on the variant's inputs and compares every output with the reference.
void check_variant(const Variant& v, std::shared_ptr<const graph::Graph> graph, int threads) {
  engine::SessionOptions so;
  so.pin = false;
  so.threads = threads;
  auto s = engine::Session::create(graph, so);
  if (!s.is_ok()) FAIL(s.status().message());
  engine::NamedTensors feed;
  for (size_t k = 0; k < graph->inputs().size(); ++k) {
    auto t = graph::read_npy(kDir + v.name + ".in" + std::to_string(k) + ".npy");
    REQUIRE(t.is_ok());
    feed.emplace_back(graph->value(graph->inputs()[k]).name, std::move(*t));
  }
  auto out = (*s)->run(feed);
  if (!out.is_ok()) FAIL(out.status().message());
  REQUIRE(out->size() == graph->outputs().size());
  for (size_t k = 0; k < out->size(); ++k) {
    auto want = graph::read_npy(kDir + v.name + ".out" + std::to_string(k) + ".npy");
    REQUIRE(want.is_ok());
    INFO("output " << k << " '" << (*out)[k].first << "', " << threads << " thread(s)");
    CHECK(test::compare_to_reference((*out)[k].second, *want) == "");
  }
}

}  // namespace

TEST_CASE("onnx rnn variants: every exported or hand-built RNN matches its reference",
          "[onnx][rnn_variants]") {
  const std::vector<Variant> variants = test::read_manifest(kDir + "MANIFEST");
  REQUIRE(variants.size() >= 60);
  for (const Variant& v : variants) {
    DYNAMIC_SECTION("variant " << v.name) {
      graph::ImportOptions io;
      io.dims = v.dims;
      auto g = engine::load_model(kDir + v.name + ".onnx", io);
      if (!g.is_ok()) FAIL(g.status().message());
      {
        INFO("--no-fuse (graph as stored)");
        check_variant(v, *g, 1);
      }
      auto opt = engine::optimize_graph(*g);
      if (!opt.is_ok()) FAIL(opt.status().message());
      INFO("graph passes: " << opt->summary);
      check_variant(v, opt->graph, 1);
      check_variant(v, opt->graph, 2);
    }
  }
}

TEST_CASE("onnx rnn variants: the hand-written cell loops are fused into sequence ops",
          "[onnx][rnn_variants]") {
  // PyTorch LSTMCell/GRUCell/RNNCell in a Python loop export as unrolled plain ops; the default
  // passes must turn each layer into one sequence op (and the numbers above match either way).
  // So must hand-written cells (pt_cell_tf_forget_bias_*: TensorFlow's forget_bias inside f's
  // sigmoid, folded into B; pt_cell_coupled_*: c = f * c + (1 - f) * g, ONNX input_forget = 1;
  // pt_cell_tf_cifg_peephole_*: the same with forget_bias and peepholes, TensorFlow's CIFG cell;
  // pt_cell_{gru,rnn}_const_*: a constant added to a pre-activation) and the odd cells whose
  // fused form is exact.
  const std::set<std::string> fusable_odd{"pt_oddcell_lstm_forget_bias_op14",
                                          "pt_oddcell_lstm_coupled_op14",
                                          "pt_oddcell_lstm_swapped_gates_op14"};
  for (const Variant& v : test::read_manifest(kDir + "MANIFEST")) {
    if (v.name.rfind("pt_cell_", 0) != 0 && !fusable_odd.count(v.name)) continue;
    INFO("variant " << v.name);
    auto g = engine::load_model(kDir + v.name + ".onnx");
    REQUIRE(g.is_ok());
    auto opt = engine::optimize_graph(*g);
    REQUIRE(opt.is_ok());
    int seq_ops = 0;
    for (const graph::Node& n : opt->graph->nodes()) {
      if (n.op == "LSTM" || n.op == "GRU" || n.op == "RNN") ++seq_ops;
      INFO("node '" << n.name << "' (" << n.op << ") left after the passes");
      // Every cell became part of a sequence op: no per-step GEMM or gate activation is left.
      CHECK(n.op != "MatMul");
      CHECK(n.op != "Gemm");
      CHECK(n.op != "Sigmoid");
      CHECK(n.op != "Tanh");
      CHECK(n.op != "Relu");
    }
    CHECK(seq_ops >= 1);
    if (v.name.find("coupled") != std::string::npos || v.name.find("cifg") != std::string::npos) {
      for (const graph::Node& n : opt->graph->nodes())
        if (n.op == "LSTM") {
          auto f = graph::attr_int(n.attrs, n.name, "input_forget", 0);
          REQUIRE(f.is_ok());
          CHECK(*f == 1);
        }
    }
  }
}

TEST_CASE("onnx rnn variants: cells that only resemble an LSTM/RNN cell are not fused",
          "[onnx][rnn_variants]") {
  // No tanh on c, c clamped, c = f * c + (0.5 - f) * g, layer-normalized gates, tanh of a
  // scaled tanh, masked steps: no sequence op computes these, so their ops must stay as they
  // are (numbers checked above).
  for (const std::string name :
       {"pt_oddcell_lstm_no_tanh_h_op14", "pt_oddcell_lstm_clamp_c_op14",
        "pt_oddcell_lstm_coupled_half_op14", "pt_oddcell_lstm_layernorm_op14",
        "pt_oddcell_rnn_extra_tanh_op14", "pt_oddcell_rnn_masked_op14"}) {
    INFO("variant " << name);
    auto g = engine::load_model(kDir + name + ".onnx");
    REQUIRE(g.is_ok());
    auto opt = engine::optimize_graph(*g);
    REQUIRE(opt.is_ok());
    for (const graph::Node& n : opt->graph->nodes()) {
      INFO("node '" << n.name << "' (" << n.op << ")");
      CHECK(n.op != "LSTM");
      CHECK(n.op != "RNN");
    }
  }
}

TEST_CASE("onnx rnn variants: unsupported RNN options are refused naming file, node and field",
          "[onnx][rnn_variants]") {
  // gaps/EXPECTED: NAME<TAB>text the error must contain (make_variants.py): the node and the
  // attribute, or the graph input and its type.
  int cases = 0;
  for (const auto& [name, expect] : test::read_name_tab_text(kDir + "gaps/EXPECTED")) {
    const std::string path = kDir + "gaps/" + name + ".onnx";
    INFO("gap " << name);
    auto g = engine::load_model(path);
    REQUIRE_FALSE(g.is_ok());
    CHECK(g.status().code() == StatusCode::kUnsupported);
    CHECK_THAT(g.status().message(), Catch::StartsWith(path) && Catch::Contains(expect));
    ++cases;
  }
  CHECK(cases >= 4);
}

TEST_CASE("onnx rnn variants: malformed RNN nodes are rejected naming file, node and field",
          "[onnx][rnn_variants]") {
  // gaps/INVALID: NAME<TAB>text the error must contain (make_variants.py), for both the fused
  // sequence op's checks and the importer's unrolled path.
  int cases = 0;
  for (const auto& [name, expect] : test::read_name_tab_text(kDir + "gaps/INVALID")) {
    const std::string path = kDir + "gaps/" + name + ".onnx";
    INFO("invalid " << name);
    auto g = engine::load_model(path);
    REQUIRE_FALSE(g.is_ok());
    CHECK(g.status().code() == StatusCode::kInvalidGraph);
    CHECK_THAT(g.status().message(), Catch::StartsWith(path) &&
                                         Catch::Contains("'" + name + "_node'") &&
                                         Catch::Contains(expect));
    ++cases;
  }
  CHECK(cases >= 8);
}
