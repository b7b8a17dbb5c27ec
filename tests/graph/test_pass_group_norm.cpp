// group_norm_fusion: GroupNorm as PyTorch exports it (Reshape to [N, G, -1], InstanceNormalization
// with unit scale and zero bias, Reshape back, per-channel Mul and Add, Relu) becomes one
// GroupNorm node; against the definition evaluated here in double, and through the pipeline,
// where the GroupNorm between two convs runs blocked (no reorder between them). Chains whose
// intermediates something else reads, or whose InstanceNormalization scales, stay as they are.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/passes/group_norm_fusion.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

namespace {

Tensor filled(int64_t n, float v) {
  Tensor t(TensorDesc{DType::kF32, {n}});
  std::fill_n(t.data_as<float>(), n, v);
  return t;
}

// PyTorch's GroupNorm export of x [n, c, h, w]; `unit` false gives the InstanceNormalization a
// scale of 2 (no GroupNorm any more).
std::string torch_group_norm(test::NetBuilder& nb, const std::string& x, const Shape& s,
                             int64_t groups, bool unit = true) {
  const std::string grouped = nb.reshape(x, {s[0], groups, -1});
  graph::Attributes eps;
  eps.set("epsilon", 1e-5);
  const std::string normed = nb.node(
      "InstanceNormalization",
      {grouped, nb.constant(filled(groups, unit ? 1.0f : 2.0f)), nb.constant(filled(groups, 0.0f))},
      eps);
  return nb.reshape(normed, {s[0], s[1], s[2], s[3]});
}

}  // namespace

TEST_CASE("group_norm_fusion: PyTorch's GroupNorm + affine + Relu becomes GroupNorm", "[passes]") {
  const int64_t n = 2, c = 32, h = 6, w = 6, groups = 8;
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {n, c, h, w}});
  const std::string scale = nb.weight({c, 1, 1}, 1.5), shift = nb.weight({1, c, 1, 1}, 1.0);
  nb.b.add_output(nb.node(
      "Relu",
      {nb.node("Add", {nb.node("Mul", {torch_group_norm(nb, "x", {n, c, h, w}, groups), scale}),
                       shift})}));
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::fuse_group_norm(g, ops::Registry::get()));
  CHECK(r.fused == 1);
  CHECK(r.affine == 1);
  CHECK(r.with_relu == 1);
  CHECK(r.graph.num_nodes() == 1);
  CHECK(test::count_op(r.graph, "GroupNorm") == 1);

  const engine::NamedTensors in = test::random_inputs(g, 3);
  const engine::NamedTensors out = test::run_graph(r.graph, in, 2);
  const float* x = in[0].second.data_as<float>();
  const float* sc = g.value(*g.find_value(scale)).data->data_as<float>();
  const float* sh = g.value(*g.find_value(shift)).data->data_as<float>();
  const int64_t len = c / groups * h * w;
  double worst = 0;
  for (int64_t grp = 0; grp < n * groups; ++grp) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < len; ++k) mean += x[grp * len + k];
    mean /= static_cast<double>(len);
    for (int64_t k = 0; k < len; ++k) var += std::pow(x[grp * len + k] - mean, 2);
    var /= static_cast<double>(len);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t ch = (grp % groups) * (c / groups) + k / (h * w);
      const double want =
          std::max(0.0, (x[grp * len + k] - mean) / std::sqrt(var + 1e-5) * sc[ch] + sh[ch]);
      worst = std::max(worst, std::abs(out[0].second.data_as<float>()[grp * len + k] - want));
    }
  }
  CHECK(worst < 1e-5);
  test::check_same_outputs(g, r.graph, 2, 1e-5);
}

TEST_CASE("group_norm_fusion: what stays unfused", "[passes]") {
  const Shape s = {1, 16, 4, 4};
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, s});
  // The InstanceNormalization scales by 2: not a plain GroupNorm.
  nb.b.add_output(torch_group_norm(nb, "x", s, 4, false));
  // The normalized value is also a graph output: the Reshape back stays readable.
  const std::string grouped = nb.reshape("x", {1, 4, -1});
  graph::Attributes eps;
  eps.set("epsilon", 1e-5);
  const std::string normed =
      nb.node("InstanceNormalization",
              {grouped, nb.constant(filled(4, 1.0f)), nb.constant(filled(4, 0.0f))}, eps);
  nb.b.add_output(normed);
  nb.b.add_output(nb.reshape(normed, {1, 16, 4, 4}));
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::fuse_group_norm(g, ops::Registry::get()));
  CHECK(r.fused == 0);
  CHECK(test::count_op(r.graph, "InstanceNormalization") == 2);
}

TEST_CASE("group_norm_fusion: GroupNorm and InstanceNorm between convs run blocked",
          "[passes][conv]") {
  // 48 channels in 4 groups (12 a group: groups straddle 16-lane blocks), then an
  // InstanceNormalization (a group per channel) of a 24-channel conv (a padded block).
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {2, 8, 10, 10}});
  const std::string c1 =
      nb.node("Conv", {"x", nb.weight({48, 8, 3, 3}), nb.weight({48})}, test::conv_window(3, 1, 1));
  const std::string gn =
      nb.node("Relu", {nb.node("Add", {nb.node("Mul", {torch_group_norm(nb, c1, {2, 48, 10, 10}, 4),
                                                       nb.weight({48, 1, 1}, 1.5)}),
                                       nb.weight({48, 1, 1})})});
  const std::string c2 =
      nb.node("Conv", {gn, nb.weight({24, 48, 3, 3}), nb.weight({24})}, test::conv_window(3, 1, 1));
  graph::Attributes eps;
  eps.set("epsilon", 1e-3);
  const std::string in2 =
      nb.node("InstanceNormalization", {c2, nb.weight({24}, 1.0), nb.weight({24}, 1.0)}, eps);
  nb.b.add_output(nb.node("Conv", {in2, nb.weight({16, 24, 1, 1}), nb.weight({16})},
                          test::conv_window(1, 1, 0)));
  const graph::Graph g = value_or_throw(nb.finish());
  auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
  CHECK(p.group_norms_fused == 2);
  CHECK(test::count_op(p.graph, "GroupNorm") == 2);
  CHECK(test::count_op(p.graph, "InstanceNormalization") == 0);
  for (const graph::Node& node : p.graph.nodes())
    if (node.op == "GroupNorm") CHECK(node.attrs.has("block"));
  CHECK(test::count_op(p.graph, "ToBlocked") == 1);    // x, 8 channels, for the first conv
  CHECK(test::count_op(p.graph, "FromBlocked") == 1);  // the output
  test::check_same_outputs(g, p.graph, 2, 1e-5);
}
