// gelu_fusion: the exact GELU chains exporters write become one Gelu node whose output equals
// the naive double-precision GELU (and the unfused graph); near misses are left alone.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/passes/gelu_fusion.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

namespace {

// The chain on x [3, 37] in one of its forms; returns the output name.
std::string gelu_chain(test::NetBuilder& nb, const std::string& x, int form, float one = 1.0f) {
  std::string d = form == 1 ? nb.node("Mul", {nb.scalar(0.70710677f), x})
                            : nb.node("Div", {x, nb.scalar(1.4142135f)});
  const std::string e = nb.node("Erf", {d});
  const std::string a =
      form == 2 ? nb.node("Add", {nb.scalar(one), e}) : nb.node("Add", {e, nb.scalar(one)});
  if (form == 2) return nb.node("Mul", {a, nb.node("Mul", {x, nb.scalar(0.5f)})});
  const std::string m = form == 1 ? nb.node("Mul", {a, x}) : nb.node("Mul", {x, a});
  return nb.node("Mul", {m, nb.scalar(0.5f)});
}

}  // namespace

TEST_CASE("gelu_fusion: the exact GELU's forms become Gelu, equal to the definition", "[passes]") {
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {3, 37}});
  for (int form : {0, 1, 2}) nb.b.add_output(gelu_chain(nb, "x", form));
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::fuse_gelu(g, ops::Registry::get()));
  CHECK(r.fused == 3);
  CHECK(test::count_op(r.graph, "Gelu") == 3);
  CHECK(test::count_op(r.graph, "Erf") == 0);
  CHECK(test::count_op(r.graph, "Mul") == 0);
  test::check_same_outputs(g, r.graph, 1, 1e-6);
  const engine::NamedTensors in = test::random_inputs(g, 3);
  const engine::NamedTensors out = test::run_graph(r.graph, in, 2);
  const float* x = in[0].second.data_as<float>();
  for (const auto& [name, t] : out)
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = x[i], want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      CHECK(std::abs(t.data_as<float>()[i] - want) <= 3e-7 * std::max(1.0, std::abs(want)));
    }
}

TEST_CASE("gelu_fusion: near misses stay as they are", "[passes]") {
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {3, 37}});
  nb.b.add_output(gelu_chain(nb, "x", 0, 1.5f));  // 1.5 + erf: not GELU
  // An intermediate read elsewhere: the Erf output is also a graph output.
  const std::string d = nb.node("Div", {"x", nb.scalar(1.4142135f)});
  const std::string e = nb.node("Erf", {d});
  nb.b.add_output(e);
  nb.b.add_output(nb.node(
      "Mul", {nb.node("Mul", {"x", nb.node("Add", {e, nb.scalar(1.0f)})}), nb.scalar(0.5f)}));
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::fuse_gelu(g, ops::Registry::get()));
  CHECK(r.fused == 0);
}
