// graph/passes/pipeline.h: rnn_fusion, then mm_fusion and phase hoisting on what is left; what
// each pass did; the rewritten graph gives the original's outputs.
#include <catch2/catch.hpp>

#include "graph/passes/pipeline.h"
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
  REQUIRE(p->reports.size() == 3);
  CHECK(p->reports[0].pass == "rnn_fusion");
  CHECK(p->reports[0].changes == 0);
  CHECK(p->mm_groups == 10);  // as in test_pass_mm_fusion.cpp
  CHECK(p->mm_members == 48);
  // Layer 0's x-side GEMMs (one per step after MM fusion) read rows of x: hoisted into one.
  CHECK(p->hoisted_groups == 1);
  CHECK(p->hoisted_members == s.seq);
  CHECK(p->changed());
  CHECK(p->summary() ==
        "fused 0 LSTM cells into 0 LSTM sequence ops, 0 GRU cells into 0 GRU sequence ops; "
        "merged 48 GEMMs sharing an input into 10; hoisted 3 per-step input projections into 1 "
        "GEMM");
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
  CHECK(q->reports.size() == 2);
  CHECK(count_op(q->graph, "LSTM") == 0);
  CHECK(q->hoisted_groups == 1);  // layer 0's x_t W
  check_same_outputs(*g, q->graph, 1);

  graph::passes::PipelineOptions none;
  none.rnn_fusion = none.mm_fusion = none.phase_hoisting = false;
  auto r = graph::passes::run_passes(*g, ops::Registry::get(), none);
  REQUIRE(r.is_ok());
  CHECK_FALSE(r->changed());
  CHECK(r->graph.num_nodes() == g->num_nodes());
}
