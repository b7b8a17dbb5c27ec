// Soundness of the graph passes: mutate one node of a small unrolled LSTM / GRU (swap an
// activation, Add <-> Sub, Mul -> Add) and run the whole pipeline. Whatever the passes recognize
// or reject, the rewritten graph must compute what the mutated graph computes.
#include <catch2/catch.hpp>

#include "graph/passes/pipeline.h"
#include "tests/graph/rnn_cell_graphs.h"

using namespace graphi;
using namespace graphi::test;

namespace {

// `g` with node `at`'s op replaced by `op` (nullopt when the result does not validate).
std::optional<graph::Graph> mutate(const graph::Graph& g, graph::NodeId at, const std::string& op) {
  graph::GraphBuilder b(g.source());
  for (graph::ValueId v : g.inputs()) b.add_input(g.value(v).name, g.value(v).desc);
  for (const graph::Value& v : g.values())
    if (v.kind == graph::ValueKind::kConstant) b.add_constant(v.name, v.data);
  for (graph::NodeId id = 0; id < g.num_nodes(); ++id) {
    const graph::Node& n = g.node(id);
    std::vector<std::string> ins, outs;
    for (graph::ValueId v : n.inputs) ins.push_back(v == graph::kNoId ? "" : g.value(v).name);
    for (graph::ValueId v : n.outputs) outs.push_back(g.value(v).name);
    b.add_node(id == at ? op : n.op, n.name, ins, outs, n.attrs);
  }
  for (graph::ValueId v : g.outputs()) b.add_output(g.value(v).name);
  auto r = b.finish(ops::Registry::get());
  if (!r.is_ok()) return std::nullopt;
  return std::move(*r);
}

const char* swap_op(const std::string& op) {
  if (op == "Sigmoid") return "Tanh";
  if (op == "Tanh") return "Sigmoid";
  if (op == "Add") return "Sub";
  if (op == "Sub") return "Add";
  if (op == "Mul") return "Add";
  return nullptr;
}

}  // namespace

TEST_CASE("Passes never change what a mutated cell computes", "[graph][passes]") {
  const CellSpec specs[] = {
      {Cell::kLstmChunk, 3, 2, 1, 2, 2},    {Cell::kLstmPerGate, 3, 2, 1, 1, 2},
      {Cell::kLstmConcat, 3, 2, 1, 2, 2},   {Cell::kGruLbr, 3, 2, 1, 2, 2},
      {Cell::kGruCanonical, 3, 2, 1, 2, 2}, {Cell::kGruLbr, 3, 2, 1, 2, 2, Defect::kNone, true},
  };
  for (const CellSpec& s : specs) {
    auto g = build_cells(s);
    REQUIRE(g.is_ok());
    int mutants = 0, fused = 0;
    for (graph::NodeId at = 0; at < g->num_nodes(); ++at) {
      const char* op = swap_op(g->node(at).op);
      if (!op) continue;
      auto m = mutate(*g, at, op);
      if (!m) continue;
      INFO(cell_name(s.cell) << ": node " << g->node(at).name << " " << g->node(at).op << " -> "
                             << op);
      auto p = graph::passes::run_passes(*m, ops::Registry::get());
      INFO(p.status().message());
      REQUIRE(p.is_ok());
      ++mutants;
      fused += p->lstm_sequences + p->gru_sequences > 0;
      check_same_outputs(*m, p->graph, 1);
    }
    INFO(cell_name(s.cell) << ": " << mutants << " mutants, " << fused << " still fused");
    CHECK(mutants > 10);
  }
}

TEST_CASE("Passes keep every intermediate value that becomes a graph output", "[graph][passes]") {
  // Any value inside a cell may be read elsewhere; make each one a graph output in turn.
  const CellSpec specs[] = {
      {Cell::kLstmChunk, 3, 2, 1, 2, 3},
      {Cell::kGruLbr, 3, 2, 1, 2, 3},
      {Cell::kGruCanonical, 3, 2, 1, 1, 3},
      {Cell::kLstmConcat, 3, 2, 1, 1, 2},
  };
  for (const CellSpec& s : specs) {
    auto g = build_cells(s);
    REQUIRE(g.is_ok());
    for (graph::NodeId id = 0; id < g->num_nodes(); ++id) {
      const graph::ValueId v = g->node(id).outputs[0];
      if (g->value(v).is_output) continue;
      INFO(cell_name(s.cell) << ": output " << g->value(v).name);
      graph::GraphBuilder b = graph::GraphBuilder::from_graph(*g);
      b.add_output(g->value(v).name);
      auto m = b.finish(ops::Registry::get());
      REQUIRE(m.is_ok());
      auto p = graph::passes::run_passes(*m, ops::Registry::get());
      INFO(p.status().message());
      REQUIRE(p.is_ok());
      check_same_outputs(*m, p->graph, 1);
    }
  }
}
