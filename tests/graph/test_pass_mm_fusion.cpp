// graph/passes/mm_fusion.h: GEMMs sharing an activation become one GEMM + Split. Every rewritten
// graph must give the outputs of the original (run through engine::Session; the original's
// separate GEMMs are the reference) to 1e-5.
#include <catch2/catch.hpp>

#include "graph/passes/mm_fusion.h"
#include "models/lstm.h"
#include "tests/graph/rnn_cell_graphs.h"

using namespace graphi;
using namespace graphi::test;

namespace {

size_t count_prefix(const graph::Graph& g, const std::string& prefix) {
  size_t n = 0;
  for (const graph::Value& v : g.values())
    n += v.kind == graph::ValueKind::kConstant && v.name.rfind(prefix, 0) == 0;
  return n;
}

}  // namespace

TEST_CASE("MM fusion merges MatMuls and Gemms that share their input", "[graph][passes]") {
  NetBuilder n;
  n.b.add_input("a", {DType::kF32, {3, 5}});
  n.b.add_input("w_in", {DType::kF32, {5, 2}});
  graph::Attributes perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  const std::string y1 = n.node("MatMul", {"a", n.weight({5, 4})});
  const std::string y2 = n.gemm("a", n.weight({6, 5}), n.weight({6}), true);
  const std::string y3 = n.node("MatMul", {"a", n.node("Transpose", {n.weight({7, 5})}, perm)});
  const std::string y4 = n.gemm("a", n.weight({5, 3}), n.weight({1, 3}), false);
  // Not members: a weight fed at run time, alpha != 1.
  const std::string y5 = n.node("MatMul", {"a", "w_in"});
  graph::Attributes alpha;
  alpha.set("alpha", 2.0);
  const std::string y6 = n.node("Gemm", {"a", n.weight({5, 2})}, alpha);
  n.b.add_output(n.node("Relu", {y1}));
  n.b.add_output(y2);
  n.b.add_output(n.node("Add", {y3, n.weight({7})}));
  n.b.add_output(y4);
  n.b.add_output(n.node("Add", {y5, y6}));
  auto g = n.finish();
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_shared_matmuls(*g, ops::Registry::get());
  INFO(f.status().message());
  REQUIRE(f.is_ok());
  CHECK(f->groups == 1);
  CHECK(f->members == 4);
  CHECK(count_op(f->graph, "Gemm") == 2);    // the fused one (it has biases) and alpha = 2
  CHECK(count_op(f->graph, "MatMul") == 1);  // the run-time weight
  CHECK(count_op(f->graph, "Split") == 1);
  CHECK(count_op(f->graph, "Transpose") == 0);
  check_same_outputs(*g, f->graph, 1);
  check_same_outputs(*g, f->graph, 2);
}

TEST_CASE("MM fusion of batched MatMuls splits along the last axis", "[graph][passes]") {
  NetBuilder n;
  n.b.add_input("a", {DType::kF32, {2, 3, 5}});
  n.b.add_output(n.node("MatMul", {"a", n.weight({5, 4})}));
  n.b.add_output(n.node("MatMul", {"a", n.weight({5, 6})}));
  auto g = n.finish();
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_shared_matmuls(*g, ops::Registry::get());
  INFO(f.status().message());
  REQUIRE(f.is_ok());
  CHECK(f->groups == 1);
  CHECK(count_op(f->graph, "MatMul") == 1);
  check_same_outputs(*g, f->graph, 1);
}

TEST_CASE("MM fusion merges the gate GEMMs of unfused LSTM steps", "[graph][passes]") {
  // One Linear per gate and a Relu candidate: the RNN recognizer rejects the cell, MM fusion
  // still makes one GEMM of the products that read the same value, all steps sharing the
  // concatenated weights.
  const CellSpec s{Cell::kLstmPerGate, 5, 4, 2, 2, 3, Defect::kReluCandidate};
  auto g = build_cells(s);
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_shared_matmuls(*g, ops::Registry::get());
  INFO(f.status().message());
  REQUIRE(f.is_ok());
  // Layer 0's h_t feeds both layer 0's step t+1 (h side) and layer 1's step t (x side): those
  // 8 products share their input and become one group. Per input value: x_0..x_2 (3 groups),
  // layer 0's initial h, h_0 and h_1 of layer 0 (8 members each), h_2 of layer 0 (layer 1's
  // x side only), layer 1's initial h, h_0 and h_1 of layer 1: 10 groups of all 48 products,
  // with 5 distinct concatenated weights (l0 x, l0 h, l0 h + l1 x, l1 x, l1 h).
  CHECK(f->groups == 10);
  CHECK(f->members == 8 * s.layers * s.seq);
  CHECK(count_prefix(f->graph, "mm_fused/W") == 5);
  CHECK(count_op(f->graph, "Identity") == 0);
  check_same_outputs(*g, f->graph, 1);
  check_same_outputs(*g, f->graph, 2);
}

TEST_CASE("MM fusion leaves lone GEMMs alone", "[graph][passes]") {
  models::RnnSpec spec;
  spec.input = 4;
  spec.hidden = 3;
  spec.seq = 2;
  auto g = models::build_lstm(spec, ops::Registry::get());
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_shared_matmuls(*g, ops::Registry::get());
  REQUIRE(f.is_ok());
  CHECK(f->groups == 0);
  CHECK(f->graph.num_nodes() == g->num_nodes());
}
