// graph/passes/pipeline.h: rnn_fusion, then mm_fusion and phase hoisting on what is left; what
// each pass did; the rewritten graph gives the original's outputs.
#include <catch2/catch.hpp>

#include "graph/passes/pipeline.h"
#include "graph/passes/reshape_cleanup.h"
#include "models/lstm.h"
#include "tests/graph/rnn_cell_graphs.h"

using namespace graphi;
using namespace graphi::test;

TEST_CASE("Pass pipeline: recognized cells fuse, the others get MM fusion and hoisting",
          "[graph][passes]") {
  // A per-gate LSTM whose candidate goes through Relu: not a cell, so nothing becomes a
  // sequence op and the general passes apply.
  const CellSpec s{Cell::kLstmPerGate, 5, 4, 2, 2, 3, Defect::kReluCandidate};
  auto g = build_cells(s);
  REQUIRE(g.is_ok());
  auto p = graph::passes::run_passes(*g, ops::Registry::get());
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  REQUIRE(p->reports.size() == 21);  // every pass reports, the CNN passes too
  CHECK(p->reports[0].pass == "rnn_fusion");
  CHECK(p->reports[0].changes == 0);
  CHECK(p->mm_groups == 10);  // as in test_pass_mm_fusion.cpp
  CHECK(p->mm_members == 48);
  // Layer 0's x-side GEMMs (one per step after MM fusion) read rows of x: hoisted into one.
  CHECK(p->hoisted_groups == 1);
  CHECK(p->hoisted_members == s.seq);
  CHECK(p->changed());
  // Only what happened: no "fused 0 LSTM cells" when nothing was fused.
  CHECK(p->summary().find(
            "merged 48 GEMMs sharing an input into 10; hoisted 3 per-step input projections into "
            "1 GEMM") == 0);
  check_same_outputs(*g, p->graph, 1);
  check_same_outputs(*g, p->graph, 2);
}

TEST_CASE("Pass pipeline fuses build_lstm and can be switched off pass by pass",
          "[graph][passes]") {
  models::RnnSpec spec;
  spec.input = 6;
  spec.hidden = 5;
  spec.layers = 2;
  spec.batch = 2;
  spec.seq = 3;
  auto g = models::build_lstm(spec, ops::Registry::get());
  REQUIRE(g.is_ok());
  auto p = graph::passes::run_passes(*g, ops::Registry::get());
  REQUIRE(p.is_ok());
  CHECK(p->lstm_sequences == 2);
  CHECK(p->lstm_cells == 6);
  CHECK(count_op(p->graph, "LSTM") == 2);
  CHECK(p->summary().find("fused 6 LSTM cells into 2 LSTM sequence ops") == 0);
  check_same_outputs(*g, p->graph, 1);

  graph::passes::PipelineOptions only_general;
  only_general.rnn_fusion = false;
  auto q = graph::passes::run_passes(*g, ops::Registry::get(), only_general);
  REQUIRE(q.is_ok());
  CHECK(q->reports.size() == 20);
  CHECK(count_op(q->graph, "LSTM") == 0);
  CHECK(q->hoisted_groups == 1);  // layer 0's x_t W
  check_same_outputs(*g, q->graph, 1);

  graph::passes::PipelineOptions none;
  for (const auto& [pass, on] : graph::passes::kPassSwitches) none.*on = false;
  auto r = graph::passes::run_passes(*g, ops::Registry::get(), none);
  REQUIRE(r.is_ok());
  CHECK_FALSE(r->changed());
  CHECK(r->summary().empty());  // nothing happened: nothing to say
  CHECK(r->graph.num_nodes() == g->num_nodes());
}

TEST_CASE("Reshape chains collapse into one Reshape", "[graph][passes]") {
  NetBuilder n;
  n.b.add_input("x", {DType::kF32, {2, 3, 4}});
  const std::string r1 = n.reshape("x", {6, 4});
  const std::string r2 = n.reshape(r1, {1, 24});
  const std::string r3 = n.reshape(r2, {4, -1});  // -1: resolved from r2, kept right
  n.b.add_output(r3);
  n.b.add_output(n.node("Relu", {r1}));                    // r1 is read elsewhere: it stays
  n.b.add_output(n.reshape(n.node("Relu", {"x"}), {24}));  // no chain
  // Back to x's own shape: the Relu reads x itself, both Reshapes go.
  n.b.add_output(n.node("Relu", {n.reshape(n.reshape("x", {4, 6}), {2, 3, 4})}));
  auto g = n.finish();
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto c = graph::passes::collapse_reshapes(*g, ops::Registry::get());
  INFO(c.status().message());
  REQUIRE(c.is_ok());
  CHECK(c->collapsed == 2);  // r3 reads x (r2, read only by r3, is dropped); the round trip
  CHECK(count_op(c->graph, "Reshape") == 3);  // r1 (for the Relu), r3, the last one
  check_same_outputs(*g, c->graph, 1);
}
