// graph/passes/rnn_fusion.h: unrolled LSTMs (models::build_lstm, and a hand-written cell with a
// different gate order and Add association) are rewritten to ONNX LSTM ops; both graphs run
// through engine::Session on the same inputs and must agree to 1e-5 relative. The unfused graph
// is the reference: its plain ops share no code with the LSTM sequence kernel.
#include <catch2/catch.hpp>
#include <memory>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "graph/passes/rnn_fusion.h"
#include "models/gru.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/graph/pass_test_util.h"
#include "tests/support/test_util.h"

using namespace graphi;

using test::check_same_outputs;
using test::count_op;

namespace {

void check_same(const graph::Graph& ref, const graph::Graph& fused, int threads) {
  check_same_outputs(ref, fused, threads);
}

}  // namespace

TEST_CASE("LSTM fusion replaces each layer of build_lstm with one LSTM op", "[graph][fusion]") {
  struct Case {
    int64_t e, h, l, b, t;
  };
  const Case cases[] = {{6, 5, 1, 2, 4},   {8, 8, 2, 3, 5}, {4, 7, 2, 1, 1},
                        {16, 12, 3, 4, 3}, {5, 3, 1, 1, 1}, {10, 16, 2, 2, 7}};
  for (const Case& c : cases) {
    models::RnnSpec spec;
    spec.input = c.e;
    spec.hidden = c.h;
    spec.layers = c.l;
    spec.batch = c.b;
    spec.seq = c.t;
    spec.seed = 3;
    INFO("E=" << c.e << " H=" << c.h << " L=" << c.l << " B=" << c.b << " T=" << c.t);
    auto g = models::build_lstm(spec, ops::Registry::get());
    REQUIRE(g.is_ok());
    auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
    INFO(f.status().message());
    REQUIRE(f.is_ok());
    CHECK(f->cells == c.l * c.t);
    CHECK(f->sequences == c.l);
    CHECK(count_op(f->graph, "LSTM") == static_cast<size_t>(c.l));
    CHECK(count_op(f->graph, "Sigmoid") == 0);
    CHECK(f->graph.num_nodes() < g->num_nodes());
    // Same interface.
    REQUIRE(f->graph.outputs().size() == g->outputs().size());
    for (size_t i = 0; i < g->outputs().size(); ++i)
      CHECK(f->graph.value(f->graph.outputs()[i]).name == g->value(g->outputs()[i]).name);
    check_same(*g, f->graph, 1);
    check_same(*g, f->graph, 2);
  }
}

TEST_CASE("LSTM fusion leaves a chain alone when an intermediate c_t is used", "[graph][fusion]") {
  models::RnnSpec spec;
  spec.input = 4;
  spec.hidden = 3;
  spec.layers = 1;
  spec.batch = 2;
  spec.seq = 3;
  auto g = models::build_lstm(spec, ops::Registry::get());
  REQUIRE(g.is_ok());
  graph::GraphBuilder b = graph::GraphBuilder::from_graph(*g);
  b.add_output("l0/t1/c");
  auto g2 = b.finish(ops::Registry::get());
  REQUIRE(g2.is_ok());
  auto f = graph::passes::fuse_rnn_cells(*g2, ops::Registry::get());
  REQUIRE(f.is_ok());
  CHECK(f->cells == 0);
  CHECK(f->sequences == 0);
  CHECK(count_op(f->graph, "LSTM") == 0);
  CHECK(f->graph.num_nodes() == g2->num_nodes());

  // The last c_t as an extra output is fine: it becomes Reshape(Y_c).
  graph::GraphBuilder b3 = graph::GraphBuilder::from_graph(*g);
  b3.add_output("l0/t2/c");
  b3.add_output("l0/t0/h");
  auto g3 = b3.finish(ops::Registry::get());
  REQUIRE(g3.is_ok());
  auto f3 = graph::passes::fuse_rnn_cells(*g3, ops::Registry::get());
  REQUIRE(f3.is_ok());
  CHECK(f3->sequences == 1);
  check_same(*g3, f3->graph, 1);
}

TEST_CASE("LSTM fusion matches cells by structure, not names or gate order", "[graph][fusion]") {
  // Gate columns in order c~, f, o, i; g = (h R + b) + x W; h = tanh(c) * o; c = c~ * i + c_prev *
  // f.
  const int64_t B = 2, I = 5, H = 4, T = 3;
  graph::GraphBuilder b("handmade");
  b.add_input("xs", {DType::kF32, {T * B, I}});
  b.add_input("hp", {DType::kF32, {B, H}});
  b.add_input("cp", {DType::kF32, {B, H}});
  b.add_constant("Wx", test::random_tensor({DType::kF32, {I, 4 * H}}, 11, -0.5, 0.5));
  b.add_constant("Wh", test::random_tensor({DType::kF32, {H, 4 * H}}, 12, -0.5, 0.5));
  b.add_constant("bias", test::random_tensor({DType::kF32, {4 * H}}, 13, -0.5, 0.5));
  graph::Attributes sx;
  sx.set("axis", int64_t{0});
  sx.set("split", std::vector<int64_t>(T, B));
  std::vector<std::string> xs;
  for (int64_t t = 0; t < T; ++t) xs.push_back("x" + std::to_string(t));
  b.add_node("Split", "sx", {"xs"}, xs, sx);
  std::string h = "hp", c = "cp";
  for (int64_t t = 0; t < T; ++t) {
    const std::string p = "n" + std::to_string(t) + "_";
    b.add_node("MatMul", p + "mh", {h, "Wh"}, {p + "mh"});
    b.add_node("Add", p + "a1", {p + "mh", "bias"}, {p + "a1"});
    b.add_node("MatMul", p + "mx", {xs[t], "Wx"}, {p + "mx"});
    b.add_node("Add", p + "a2", {p + "a1", p + "mx"}, {p + "a2"});
    graph::Attributes sa;
    sa.set("axis", int64_t{-1});
    b.add_node("Split", p + "s", {p + "a2"}, {p + "g0", p + "g1", p + "g2", p + "g3"}, sa);
    b.add_node("Tanh", p + "cc", {p + "g0"}, {p + "cc"});
    b.add_node("Sigmoid", p + "f", {p + "g1"}, {p + "f"});
    b.add_node("Sigmoid", p + "o", {p + "g2"}, {p + "o"});
    b.add_node("Sigmoid", p + "i", {p + "g3"}, {p + "i"});
    b.add_node("Mul", p + "ci", {p + "cc", p + "i"}, {p + "ci"});
    b.add_node("Mul", p + "cf", {c, p + "f"}, {p + "cf"});
    b.add_node("Add", p + "c", {p + "ci", p + "cf"}, {p + "c"});
    b.add_node("Tanh", p + "tc", {p + "c"}, {p + "tc"});
    b.add_node("Mul", p + "h", {p + "tc", p + "o"}, {p + "h"});
    h = p + "h";
    c = p + "c";
    b.add_output(h);
  }
  b.add_output(c);
  // With a piece of x also returned, X is assembled from the pieces instead of reusing "xs".
  const bool x_piece_used = GENERATE(false, true);
  if (x_piece_used) b.add_output("x1");
  auto g = b.finish(ops::Registry::get());
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
  INFO(f.status().message());
  REQUIRE(f.is_ok());
  CHECK(f->cells == T);
  CHECK(f->sequences == 1);
  check_same(*g, f->graph, 1);
}

TEST_CASE("GRU fusion replaces each layer of build_gru with one GRU op", "[graph][fusion]") {
  struct Case {
    int64_t e, h, l, b, t;
    bool lbr;
  };
  const Case cases[] = {{6, 5, 1, 2, 4, false}, {6, 5, 1, 2, 4, true},  {8, 8, 2, 3, 5, false},
                        {8, 8, 2, 3, 5, true},  {4, 7, 2, 1, 1, false}, {4, 7, 2, 1, 1, true},
                        {16, 12, 3, 4, 3, true}};
  for (const Case& c : cases) {
    models::RnnSpec spec;
    spec.input = c.e;
    spec.hidden = c.h;
    spec.layers = c.l;
    spec.batch = c.b;
    spec.seq = c.t;
    spec.seed = 5;
    spec.linear_before_reset = c.lbr;
    INFO("E=" << c.e << " H=" << c.h << " L=" << c.l << " B=" << c.b << " T=" << c.t
              << " lbr=" << c.lbr);
    auto g = models::build_gru(spec, ops::Registry::get());
    REQUIRE(g.is_ok());
    auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
    INFO(f.status().message());
    REQUIRE(f.is_ok());
    CHECK(f->gru_cells == c.l * c.t);
    CHECK(f->gru_sequences == c.l);
    CHECK(f->lstm_sequences == 0);
    CHECK(count_op(f->graph, "GRU") == static_cast<size_t>(c.l));
    CHECK(count_op(f->graph, "Sigmoid") == 0);
    CHECK(f->graph.num_nodes() < g->num_nodes());
    check_same(*g, f->graph, 1);
    check_same(*g, f->graph, 2);
  }
}

TEST_CASE("GRU fusion leaves a chain alone when an internal value is used", "[graph][fusion]") {
  models::RnnSpec spec;
  spec.input = 4;
  spec.hidden = 3;
  spec.batch = 2;
  spec.seq = 3;
  auto g = models::build_gru(spec, ops::Registry::get());
  REQUIRE(g.is_ok());
  graph::GraphBuilder b = graph::GraphBuilder::from_graph(*g);
  b.add_output("l0/t1/z");
  auto g2 = b.finish(ops::Registry::get());
  REQUIRE(g2.is_ok());
  auto f = graph::passes::fuse_rnn_cells(*g2, ops::Registry::get());
  REQUIRE(f.is_ok());
  // Only the cells after the one whose gate is used chain up: t2 alone.
  CHECK(f->gru_cells <= 2);
  check_same(*g2, f->graph, 1);
}
