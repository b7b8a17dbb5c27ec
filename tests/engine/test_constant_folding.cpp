// fold_constant_nodes (engine/constant_folding.h): nodes of constants are evaluated once and their
// values other nodes read become constants, equal to a naive evaluation; graph outputs and
// random ops stay nodes.
#include <catch2/catch.hpp>

#include "engine/constant_folding.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

size_t count_op(const graph::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const graph::Node& node : g.nodes()) n += node.op == op;
  return n;
}

}  // namespace

TEST_CASE("fold_constant_nodes evaluates constant chains once, against a naive evaluation",
          "[engine][fold]") {
  const Tensor a = test::random_tensor(TensorDesc{DType::kF32, {4, 3}}, 1);
  const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {3, 5}}, 2);
  graph::GraphBuilder gb("<constant chain>");
  gb.add_input("x", TensorDesc{DType::kF32, {4, 5}});
  gb.add_constant("a", a);
  gb.add_constant("b", b);
  gb.add_node("MatMul", "ab", {"a", "b"}, {"ab"});
  gb.add_node("Relu", "relu_ab", {"ab"}, {"c"});  // a chain of constants: both folded
  gb.add_node("Add", "y", {"x", "c"}, {"y"});
  gb.add_node("Neg", "neg_a", {"a"}, {"na"});  // constant, but a graph output: stays
  gb.add_output("y");
  gb.add_output("na");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(gb.finish(ops::Registry::get())));

  auto r = value_or_throw(engine::fold_constant_nodes(g));
  CHECK(r.folded == 2);
  CHECK(count_op(*r.graph, "MatMul") == 0);
  CHECK(count_op(*r.graph, "Relu") == 0);
  CHECK(count_op(*r.graph, "Neg") == 1);

  // The folded constant c = relu(a b), computed naively.
  const graph::Value* c = nullptr;
  for (graph::ValueId v = 0; v < r.graph->num_values(); ++v)
    if (r.graph->value(v).name == "c") c = &r.graph->value(v);
  REQUIRE(c);
  REQUIRE(c->kind == graph::ValueKind::kConstant);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k)
        s += double{a.data_as<float>()[i * 3 + k]} * b.data_as<float>()[k * 5 + j];
      CHECK(c->data->data_as<float>()[i * 5 + j] == Approx(std::max(s, 0.0)).margin(1e-6));
    }

  // Nothing to fold: the same graph object back.
  graph::GraphBuilder plain("<no constants>");
  plain.add_input("x", TensorDesc{DType::kF32, {2}});
  plain.add_node("Relu", "r", {"x"}, {"y"});
  plain.add_output("y");
  auto p = std::make_shared<const graph::Graph>(value_or_throw(plain.finish(ops::Registry::get())));
  auto same = value_or_throw(engine::fold_constant_nodes(p));
  CHECK(same.folded == 0);
  CHECK(same.graph == p);
}
