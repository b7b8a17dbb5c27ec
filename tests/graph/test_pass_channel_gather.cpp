// channel_gather: channel Slices, Concats and shuffles (Reshape + Transpose [0, 2, 1, 3, 4] +
// Reshape) composed into ChannelGathers. The rewritten graphs' outputs equal the original
// graph's (Slice, Concat, Transpose kernels: another implementation of the same copies), alone
// and through the whole pipeline (blocked, padded channel counts); what it must leave alone.
#include <catch2/catch.hpp>

#include "graph/passes/channel_gather.h"
#include "graph/passes/pipeline.h"
#include "tests/graph/pass_test_util.h"

using namespace graphi;

namespace {

graph::Attributes perm(std::vector<int64_t> p) {
  graph::Attributes a;
  a.set("perm", std::move(p));
  return a;
}

// ShuffleNetV2's unit on x [N, C, H, W]: chunk in two (two Slices, or one Split as PyTorch's
// exporters write torch.chunk), a 1x1 + depthwise 3x3 + 1x1 branch on the second half, Concat,
// shuffle of 2 groups.
std::string shuffle_unit(test::NetBuilder& nb, const std::string& x, int64_t n, int64_t c,
                         int64_t h, int64_t w, bool split) {
  const int64_t half = c / 2;
  graph::Attributes axis1;
  axis1.set("axis", int64_t{1});
  const std::vector<std::string> halves =
      split ? nb.multi("Split", {x, nb.ints({half, half})}, 2, axis1)
            : std::vector<std::string>{nb.slice(x, 1, 0, half), nb.slice(x, 1, half, c)};
  const std::string a = halves[0], b = halves[1];
  graph::Attributes pw = test::conv_window(1, 1, 0);
  graph::Attributes dw = test::conv_window(3, 1, 1);
  dw.set("group", half);
  std::string br = nb.node("Relu", {nb.node("Conv", {b, nb.weight({half, half, 1, 1})}, pw)});
  br = nb.node("Conv", {br, nb.weight({half, 1, 3, 3})}, dw);
  br = nb.node("Relu", {nb.node("Conv", {br, nb.weight({half, half, 1, 1})}, pw)});
  const std::string cat = nb.concat({a, br}, 1);
  const std::string t =
      nb.node("Transpose", {nb.reshape(cat, {n, 2, half, h, w})}, perm({0, 2, 1, 3, 4}));
  return nb.reshape(t, {n, c, h, w});
}

}  // namespace

TEST_CASE("channel_gather: ShuffleNet units become one gather per branch input", "[passes][conv]") {
  for (auto [c, split] :
       {std::pair<int64_t, bool>{20, false}, {32, false}, {20, true}, {58, true}}) {
    // 20, 58: padded blocks (10 / 29 channels per half)
    INFO("channels " << c << (split ? ", chunked by Split" : ", chunked by Slices"));
    const int64_t n = 2, h = 5, w = 7;
    test::NetBuilder nb;
    nb.b.add_input("x", TensorDesc{DType::kF32, {n, 3, h, w}});
    std::string y = nb.node(
        "Relu", {nb.node("Conv", {"x", nb.weight({c, 3, 3, 3})}, test::conv_window(3, 1, 1))});
    for (int u = 0; u < 3; ++u) y = shuffle_unit(nb, y, n, c, h, w, split);
    nb.b.add_output(y);
    nb.b.add_output(nb.slice(y, 1, 3, c - 2));  // a slice of a graph output
    const graph::Graph g = value_or_throw(nb.finish());

    auto r = value_or_throw(graph::passes::gather_channels(g, ops::Registry::get()));
    // One gather per branch input (3) and per graph output (2); the first unit's halves, the
    // later units' chunks and every shuffle composed away.
    CHECK(r.gathers == 5);
    CHECK(test::count_op(r.graph, "ChannelGather") == 5);
    CHECK(test::count_op(r.graph, "Transpose") == 0);
    CHECK(test::count_op(r.graph, "Concat") == 0);
    CHECK(test::count_op(r.graph, "Slice") == 0);
    CHECK(test::count_op(r.graph, "Split") == 0);
    test::check_same_outputs(g, r.graph, 2, 1e-6);

    // Through the whole pipeline: the gathers run blocked, one reorder per graph output.
    auto p = value_or_throw(graph::passes::run_passes(g, ops::Registry::get()));
    CHECK(test::count_op(p.graph, "ToBlocked") == 0);
    CHECK(test::count_op(p.graph, "FromBlocked") == 2);
    test::check_same_outputs(g, p.graph, 2, 1e-5);
  }
}

TEST_CASE("channel_gather: a Concat something else reads stays, lone Slices become gathers",
          "[passes][conv]") {
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {1, 6, 4, 4}});
  nb.b.add_input("z", TensorDesc{DType::kF32, {1, 10, 4, 4}});
  const std::string cat = nb.concat({"x", "z"}, 1);
  const std::string r1 = nb.node("Relu", {cat});      // a plain reader: the Concat stays
  const std::string s = nb.slice(cat, 1, 4, 9);       // reads x and z directly
  const std::string whole = nb.slice("z", 1, 0, 10);  // all of z: replaced by z
  nb.b.add_output(r1);
  nb.b.add_output(nb.node("Add", {s, s}));
  nb.b.add_output(nb.node("Sigmoid", {whole}));
  const graph::Graph g = value_or_throw(nb.finish());
  auto r = value_or_throw(graph::passes::gather_channels(g, ops::Registry::get()));
  CHECK(test::count_op(r.graph, "Concat") == 1);
  CHECK(test::count_op(r.graph, "Slice") == 0);
  CHECK(r.gathers == 1);
  for (const graph::Node& node : r.graph.nodes())
    if (node.op == "ChannelGather") {
      CHECK(node.inputs.size() == 2);  // x and z, not the Concat
      CHECK(*graph::attr_ints(node.attrs, "", "channel") == std::vector<int64_t>{4, 5, 0, 1, 2});
    }
  test::check_same_outputs(g, r.graph, 1, 1e-6);

  // Only Concats: nothing to compose, the graph is unchanged.
  test::NetBuilder only;
  only.b.add_input("x", TensorDesc{DType::kF32, {1, 6, 4, 4}});
  only.b.add_output(only.concat({"x", "x"}, 1));
  const graph::Graph g2 = value_or_throw(only.finish());
  auto r2 = value_or_throw(graph::passes::gather_channels(g2, ops::Registry::get()));
  CHECK(r2.gathers + r2.composed == 0);
}

TEST_CASE("channel_gather: leaves other Slices and Transposes alone", "[passes][conv]") {
  test::NetBuilder nb;
  nb.b.add_input("x", TensorDesc{DType::kF32, {2, 8, 3, 3}});
  // A Slice of the spatial axis, one with step 2, a shuffle whose middle value is also an
  // output, and a Transpose with another permutation.
  const std::string sp = nb.slice("x", 2, 0, 2);
  const std::string stepped =
      nb.node("Slice", {"x", nb.ints({0}), nb.ints({8}), nb.ints({1}), nb.ints({2})});
  const std::string r = nb.reshape("x", {2, 2, 4, 3, 3});
  const std::string t = nb.node("Transpose", {r}, perm({0, 2, 1, 3, 4}));
  const std::string back = nb.reshape(t, {2, 8, 3, 3});
  const std::string other =
      nb.reshape(nb.node("Transpose", {nb.reshape("x", {2, 2, 4, 3, 3})}, perm({0, 1, 2, 4, 3})),
                 {2, 8, 3, 3});
  for (const std::string& o : {sp, stepped, t, back, other}) nb.b.add_output(o);
  const graph::Graph g = value_or_throw(nb.finish());
  auto res = value_or_throw(graph::passes::gather_channels(g, ops::Registry::get()));
  CHECK(res.gathers + res.composed == 0);
}
