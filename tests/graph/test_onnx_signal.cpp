// ONNX signal models (tests/data/onnx_signal, built by make_signal.py): torch.stft front-ends
// exported by PyTorch 2.13 (Hann/Hamming/Blackman windows, center padding, a prime n_fft, the
// two-sided and normalized forms, a log-mel spectrogram) and hand-written DFT nodes of opsets 17
// and 20, each compared with PyTorch's (torch.stft, torch.fft) or ONNX Runtime's output; and the
// importer's refusals for what static shapes cannot take (a window size or DFT-20 axis computed
// at run time).
#include <catch2/catch.hpp>
#include <cstring>
#include <variant>

#include "engine/model_loader.h"
#include "engine/session.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_import.h"
#include "ops/registry.h"
#include "tests/support/proto_writer.h"
#include "tests/support/test_util.h"

using namespace graphi;
using test::onnx_pb::int64_tensor;
using test::onnx_pb::int_attr;
using test::onnx_pb::model;
using test::onnx_pb::node;
using test::onnx_pb::value_info;
using Pw = test::ProtoWriter;

namespace {

const std::string kDir = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_signal/";

Result<graph::Graph> import_str(const std::string& bytes) {
  return graph::import_onnx_bytes({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()},
                                  "t.onnx", ops::Registry::get(), {});
}

}  // namespace

TEST_CASE("onnx signal: torch.stft exports and DFT models match PyTorch / ONNX Runtime",
          "[onnx][signal]") {
  const std::vector<test::ManifestEntry> models = test::read_manifest(kDir + "MANIFEST");
  REQUIRE(models.size() >= 10);
  for (const test::ManifestEntry& m : models) {
    DYNAMIC_SECTION("model " << m.name) {
      auto g = engine::load_model(kDir + m.name + ".onnx");
      if (!g.is_ok()) FAIL(g.status().message());
      auto opt = engine::optimize_graph(*g);
      if (!opt.is_ok()) FAIL(opt.status().message());
      const graph::Graph& graph = *opt->graph;
      for (int threads : {1, 2}) {
        engine::SessionOptions so;
        so.pin = false;
        so.threads = threads;
        auto s = engine::Session::create(opt->graph, so);
        if (!s.is_ok()) FAIL(s.status().message());
        engine::NamedTensors feed;
        auto x = graph::read_npy(kDir + m.name + ".in0.npy");
        REQUIRE(x.is_ok());
        feed.emplace_back(graph.value(graph.inputs()[0]).name, std::move(*x));
        auto out = (*s)->run(feed);
        if (!out.is_ok()) FAIL(out.status().message());
        auto want = graph::read_npy(kDir + m.name + ".out0.npy");
        REQUIRE(want.is_ok());
        INFO(threads << " thread(s)");
        CHECK(test::compare_to_reference((*out)[0].second, *want) == "");
      }
    }
  }
}

TEST_CASE("onnx signal: sizes and axes computed at run time are refused naming node and input",
          "[onnx][signal]") {
  {  // HannWindow of a size fed at run time: graphi's shapes are static.
    Pw g;
    g.m(1, node("HannWindow", {"n"}, {"w"}, "win")).s(2, "g");
    g.m(11, value_info("n", 7, {1})).m(12, value_info("w", 1, {}));
    auto r = import_str(model(g, 17));
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(),
               Catch::StartsWith("t.onnx: node[0] 'win' (HannWindow)") &&
                   Catch::Contains("with inputs computed at run time (input 'n')"));
  }
  {  // DFT-20 with its axis fed at run time.
    Pw g;
    g.m(1, node("DFT", {"x", "", "axis"}, {"y"}, "dft")).s(2, "g");
    g.m(11, value_info("x", 1, {2, 8, 1})).m(11, value_info("axis", 7, {1}));
    g.m(12, value_info("y", 1, {}));
    auto r = import_str(model(g, 20));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kUnsupported);
    CHECK_THAT(r.status().message(), Catch::Contains("node[0] 'dft' (DFT): input 2 (axis) 'axis' "
                                                     "is computed at run time"));
  }
  {  // DFT-17's axis attribute on a DFT-20 node.
    Pw g;
    g.m(1, node("DFT", {"x"}, {"y"}, "dft", {int_attr("axis", 1)})).s(2, "g");
    g.m(11, value_info("x", 1, {2, 8, 1})).m(12, value_info("y", 1, {}));
    auto r = import_str(model(g, 20));
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("attribute 'axis' is DFT-17's"));
  }
}

TEST_CASE("onnx signal: DFT-20's axis defaults to -2, DFT-17's to 1", "[onnx][signal]") {
  // x [3, 4, 5, 1] of ones: the DC bin is the length of the transformed axis.
  for (int64_t opset : {17, 20}) {
    Pw g;
    g.m(1, node("DFT", {"x"}, {"y"}, "dft")).s(2, "g");
    g.m(11, value_info("x", 1, {3, 4, 5, 1})).m(12, value_info("y", 1, {3, 4, 5, 2}));
    auto r = import_str(model(g, opset));
    if (!r.is_ok()) FAIL(r.status().message());
    engine::SessionOptions so;
    so.pin = false;
    auto s = engine::Session::create(std::make_shared<const graph::Graph>(*r), so);
    REQUIRE(s.is_ok());
    Tensor x(TensorDesc{DType::kF32, {3, 4, 5, 1}});
    std::fill(x.data_as<float>(), x.data_as<float>() + x.numel(), 1.0f);
    auto out = (*s)->run({{"x", x}});
    REQUIRE(out.is_ok());
    const Tensor& y = (*out)[0].second;
    CHECK(y.shape() == Shape{3, 4, 5, 2});
    CHECK(y.data_as<float>()[0] == (opset == 20 ? 5.0f : 4.0f));
  }
  // An axis given as a constant 1-element input at opset 20 (exporters write [1] as often as []).
  Pw g;
  g.m(1, node("DFT", {"x", "", "axis"}, {"y"}, "dft")).s(2, "g");
  g.m(5, int64_tensor("axis", {0}));
  g.m(11, value_info("x", 1, {3, 4, 5, 1})).m(12, value_info("y", 1, {3, 4, 5, 2}));
  auto r = import_str(model(g, 20));
  if (!r.is_ok()) FAIL(r.status().message());
  bool found = false;
  for (const graph::Node& n : r->nodes())
    if (n.op == "DFT") {
      found = true;
      const graph::Attribute* a = n.attrs.find("axis");
      REQUIRE(a);
      CHECK(std::get<int64_t>(*a) == 0);
      CHECK(n.inputs.size() == 1);
    }
  CHECK(found);
}
