// channel_affine: a per-channel constant Mul + Add (+ the Relu after them) -> one ChannelAffine,
// on the blocked layout and on plain NCHW; what must stay apart stays. The fused graphs' outputs
// equal the unfused pipeline's and a naive reference.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/passes/channel_affine.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"
#include "tests/support/reference_gemm_conv.h"

using namespace graphi;

TEST_CASE("channel_affine: DenseNet's pre-activation BN + Relu after a Concat becomes one pass",
          "[passes][conv]") {
  // x [2, 16, 8, 8] -> conv -> a [2, 16, 8, 8]; cat = Concat(x, a) (32 channels); then
  //   bn = cat * s + b (read by the graph and a Relu: fused without it), r = Relu(cat * s2 + b2)
  //   (fused with it) -> conv -> y; and pairs that stay: a Mul read twice, a Mul by a run-time
  //   tensor.
  graph::GraphBuilder b("<channel affine>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 16, 8, 8}});
  int seed = 300;
  auto constant = [&](const std::string& name, Shape shape) {
    Tensor t = test::random_tensor(TensorDesc{DType::kF32, std::move(shape)}, ++seed, -0.5, 0.5);
    b.add_constant(name, t);
    return t;
  };
  const Tensor w0 = constant("w0", {16, 16, 1, 1});
  const Tensor s = constant("s", {32, 1, 1}), sh = constant("b", {32, 1, 1});
  constant("s2", {1, 32, 1, 1});
  constant("b2", {32, 1, 1});
  constant("w1", {16, 32, 1, 1});
  b.add_node("Conv", "c0", {"x", "w0"}, {"a"});
  graph::Attributes axis1;
  axis1.set("axis", int64_t{1});
  b.add_node("Concat", "cat", {"x", "a"}, {"cat"}, axis1);
  b.add_node("Mul", "bn_scale", {"cat", "s"}, {"m"});
  b.add_node("Add", "bn_shift", {"b", "m"}, {"bn"});  // shift first: either order
  b.add_node("Relu", "bn_relu", {"bn"}, {"bn_r"});
  b.add_node("Mul", "bn2_scale", {"s2", "cat"}, {"m2"});
  b.add_node("Add", "bn2_shift", {"m2", "b2"}, {"bn2"});
  b.add_node("Relu", "bn2_relu", {"bn2"}, {"r"});
  b.add_node("Conv", "c1", {"r", "w1"}, {"y"});
  // Stay: m3 read by the Add and by the graph; a scale computed at run time.
  b.add_node("Mul", "twice", {"cat", "s"}, {"m3"});
  b.add_node("Add", "twice_shift", {"m3", "b"}, {"t3"});
  b.add_node("Mul", "runtime", {"cat", "bn_r"}, {"m4"});
  b.add_node("Add", "runtime_shift", {"m4", "b"}, {"t4"});
  for (const char* out : {"bn", "bn_r", "y", "m3", "t3", "t4"}) b.add_output(out);
  const graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));

  for (bool blocked : {true, false}) {
    INFO((blocked ? "blocked" : "NCHW"));
    graph::passes::PipelineOptions off, on;
    off.channel_affine = false;
    off.blocked_layout = on.blocked_layout = blocked;
    auto before = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), off));
    auto after = value_or_throw(graph::passes::run_passes(g, ops::Registry::get(), on));
    CHECK(after.channel_affines == 2);
    CHECK(test::count_op(after.graph, "ChannelAffine") == 2);
    CHECK(after.summary().find("fused 2 per-channel Mul + Adds into ChannelAffine (1 with the "
                               "Relu after)") != std::string::npos);
    for (int threads : {1, 2}) test::check_same_outputs(before.graph, after.graph, threads, 1e-6);

    // bn against the naive reference.
    const engine::NamedTensors in = test::random_inputs(g, 14);
    const engine::NamedTensors out = test::run_graph(after.graph, in, 2);
    const Tensor& x = in[0].second;
    const Tensor a = test::conv2d_ref(x, w0, nullptr, test::Window2d{}, 1);
    REQUIRE(out[0].first == "bn");
    double worst = 0;
    for (int64_t img = 0; img < 2; ++img)
      for (int64_t ch = 0; ch < 32; ++ch)
        for (int64_t p = 0; p < 64; ++p) {
          const double v = ch < 16 ? x.data_as<float>()[(img * 16 + ch) * 64 + p]
                                   : a.data_as<float>()[(img * 16 + ch - 16) * 64 + p];
          const double want = v * s.data_as<float>()[ch] + sh.data_as<float>()[ch];
          worst = std::max(
              worst, std::abs(out[0].second.data_as<float>()[(img * 32 + ch) * 64 + p] - want));
        }
    CHECK(worst < 1e-5);
  }
}
