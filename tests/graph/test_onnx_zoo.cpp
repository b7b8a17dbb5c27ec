// The ONNX model zoo (tests/data/onnx_zoo, built by make_zoo.py from PyTorch 1.13 modules:
// transformer layers, attention, a GPT-style block, 1-D/2-D CNNs, GRU/LSTM classifiers, masks,
// index ops, norms, resizing; opsets 13/14/17, some with a dynamic batch). Every model listed
// in MANIFEST is loaded the way the CLI and the Python package load it (engine::load_model with
// the MANIFEST's --dim values, then the default graph passes), run, and compared with PyTorch's
// committed outputs: 1e-4 of the output's scale plus 1e-5 absolute; integer outputs exactly;
// bool outputs (graphi: float32 0/1) by value.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/model_loader.h"
#include "engine/session.h"
#include "graph/npy.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

const std::string kZoo = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx_zoo/";

struct ZooModel {
  std::string name;
  std::map<std::string, int64_t> dims;
};

std::vector<ZooModel> manifest() {
  std::vector<ZooModel> out;
  std::ifstream f(kZoo + "MANIFEST");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    ZooModel m;
    if (!(ss >> m.name)) continue;
    std::string d;
    while (ss >> d) {
      const size_t eq = d.find('=');
      if (eq != std::string::npos) m.dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
    }
    out.push_back(m);
  }
  return out;
}

// Empty when `got` matches `want` (see the file comment), else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape())
    return "shape " + shape_to_string(got.shape()) + " vs " + shape_to_string(want.shape());
  const int64_t n = want.numel();
  auto value = [](const Tensor& t, int64_t k) -> double {
    switch (t.dtype()) {
      case DType::kF32:
        return t.data_as<float>()[k];
      case DType::kI32:
        return t.data_as<int32_t>()[k];
      default:
        return static_cast<double>(t.data_as<int64_t>()[k]);
    }
  };
  const bool exact = want.dtype() != DType::kF32;
  double scale = 0;
  for (int64_t k = 0; k < n; ++k)
    if (std::isfinite(value(want, k))) scale = std::max(scale, std::fabs(value(want, k)));
  const double tol = exact ? 0.0 : 1e-5 + 1e-4 * scale;
  for (int64_t k = 0; k < n; ++k) {
    const double g = value(got, k), w = value(want, k);
    const bool same =
        std::isfinite(w) ? std::fabs(g - w) <= tol : (g == w || (std::isnan(g) && std::isnan(w)));
    if (!same) {
      std::ostringstream m;
      m << "element " << k << ": " << g << " vs " << w << " (tolerance " << tol << ")";
      return m.str();
    }
  }
  return "";
}

}  // namespace

TEST_CASE("onnx zoo: every PyTorch-exported model matches PyTorch", "[onnx][zoo]") {
  const std::vector<ZooModel> models = manifest();
  REQUIRE(models.size() >= 20);
  for (const ZooModel& m : models) {
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
        CHECK(compare((*out)[k].second, *want) == "");
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
  CHECK(cases >= 6);
}
