// The ONNX model zoo (tests/data/onnx_zoo, built by make_zoo.py from PyTorch 1.13 modules:
// transformer layers, attention, a GPT-style block, 1-D/2-D CNNs, GRU/LSTM classifiers, masks,
// index ops, norms, resizing; opsets 13/14/17, some with a dynamic batch; PyTorch 2.13's
// TorchScript exporter at opset 20 and its dynamo exporter, the *_dynamo models). Every model
// listed in MANIFEST is loaded the way the CLI and the Python package load it (engine::load_model
// with the MANIFEST's --dim values, then the default graph passes), run, and compared with
// PyTorch's committed outputs: 1e-4 of the output's scale plus 1e-5 absolute; integer outputs
// exactly; bool outputs (graphi: float32 0/1) by value.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine/model_loader.h"
#include "engine/session.h"
#include "graph/npy.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

const std::string kZoo = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_zoo/";

}  // namespace

TEST_CASE("onnx zoo: every PyTorch-exported model matches PyTorch", "[onnx][zoo]") {
  const std::vector<test::ManifestEntry> models = test::read_manifest(kZoo + "MANIFEST");
  REQUIRE(models.size() >= 20);
  for (const test::ManifestEntry& m : models) {
    DYNAMIC_SECTION("model " << m.name) {
      graph::ImportOptions io;
      io.dims = m.dims;
      auto g = engine::load_model(kZoo + m.name + ".onnx", io);
      if (!g.is_ok()) FAIL(g.status().message());
      auto opt = engine::optimize_graph(*g);
      if (!opt.is_ok()) FAIL(opt.status().message());
      const graph::Graph& graph = *opt->graph;
      engine::SessionOptions so;
      so.pin = false;
      auto s = engine::Session::create(opt->graph, so);
      if (!s.is_ok()) FAIL(s.status().message());
      engine::NamedTensors feed;
      for (size_t k = 0; k < graph.inputs().size(); ++k) {
        auto t = graph::read_npy(kZoo + m.name + ".in" + std::to_string(k) + ".npy");
        REQUIRE(t.is_ok());
        feed.emplace_back(graph.value(graph.inputs()[k]).name, std::move(*t));
      }
      auto out = (*s)->run(feed);
      if (!out.is_ok()) FAIL(out.status().message());
      REQUIRE(out->size() == graph.outputs().size());
      for (size_t k = 0; k < out->size(); ++k) {
        auto want = graph::read_npy(kZoo + m.name + ".out" + std::to_string(k) + ".npy");
        REQUIRE(want.is_ok());
        INFO("output " << k << " '" << (*out)[k].first << "'");
        CHECK(test::compare_to_reference((*out)[k].second, *want) == "");
      }
    }
  }
}

TEST_CASE("onnx zoo: known gaps are refused with an error naming the file and what is missing",
          "[onnx][zoo]") {
  // gaps/EXPECTED: NAME<TAB>text the error must contain (make_zoo.py --gaps).
  int cases = 0;
  for (const auto& [name, expect] : test::read_name_tab_text(kZoo + "gaps/EXPECTED")) {
    const std::string path = kZoo + "gaps/" + name + ".onnx";
    INFO("gap " << name);
    auto g = engine::load_model(path);
    REQUIRE_FALSE(g.is_ok());
    CHECK(g.status().code() == StatusCode::kUnsupported);
    CHECK_THAT(g.status().message(), Catch::StartsWith(path) && Catch::Contains(expect));
    ++cases;
  }
  CHECK(cases >= 3);  // bool_mask_input (session 24), grid_sample, conv3d and maxpool3d (session
                      // 25), det and maxpool_indices (session 26) left the gaps (zoo models now)
}
