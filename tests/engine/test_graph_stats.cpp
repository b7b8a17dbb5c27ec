// graph_stats on a graph small enough to count by hand.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/graph_stats.h"
#include "engine/plan.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;
using Catch::Matchers::Contains;

namespace {

// x -> MatMul(W) -> Add(b) -> {Sigmoid, Tanh} -> Mul -> y;  x -> Relu -> r
std::shared_ptr<const graph::Graph> hand_graph() {
  graph::GraphBuilder b("<stats>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 3}});
  b.add_constant("W", test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 1));
  b.add_constant("b", test::random_tensor(TensorDesc{DType::kF32, {4}}, 2));
  b.add_node("MatMul", "mm", {"x", "W"}, {"m"});
  b.add_node("Add", "bias", {"m", "b"}, {"a"});
  b.add_node("Sigmoid", "sig", {"a"}, {"s"});
  b.add_node("Tanh", "tanh", {"a"}, {"t"});
  b.add_node("Mul", "mul", {"s", "t"}, {"y"});
  b.add_node("Relu", "relu", {"x"}, {"r"});
  b.add_output("y");
  b.add_output("r");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

ops::CostHint node_cost(const graph::Graph& g, const std::string& name) {
  for (const graph::Node& n : g.nodes()) {
    if (n.name != name) continue;
    std::vector<const TensorDesc*> ins, outs;
    for (ValueId v : n.inputs) ins.push_back(&g.value(v).desc);
    for (ValueId v : n.outputs) outs.push_back(&g.value(v).desc);
    return ops::Registry::get().cost(n, ins, outs);
  }
  FAIL("no node " << name);
  return {};
}

}  // namespace

TEST_CASE("graph stats: counts, depth levels, critical path and memory of a hand-counted graph",
          "[graph_stats]") {
  auto g = hand_graph();
  GraphStats s = value_or_throw(compute_graph_stats(*g));
  CHECK(s.source == "<stats>");
  CHECK(s.num_nodes == 6);
  CHECK(s.num_inputs == 1);
  CHECK(s.num_outputs == 2);
  CHECK(s.num_constants == 2);
  CHECK(s.op_counts ==
        std::map<std::string, size_t>{
            {"Add", 1}, {"MatMul", 1}, {"Mul", 1}, {"Relu", 1}, {"Sigmoid", 1}, {"Tanh", 1}});
  CHECK(s.kernel_counts.empty());
  CHECK(s.parameters == 16);
  CHECK(s.parameter_bytes == 64);
  CHECK(s.constant_bytes == 64);
  CHECK(s.input_bytes == 24);
  CHECK(s.output_bytes == 32 + 24);

  // Depth 0: mm, relu; 1: bias; 2: sig, tanh; 3: mul.
  CHECK(s.ops_per_depth == std::vector<size_t>{2, 1, 2, 1});
  CHECK(s.critical_path_ops == 4);
  CHECK(s.max_width == 2);
  CHECK(s.average_parallelism == Approx(1.5));

  double total = 0;
  for (const char* n : {"mm", "bias", "sig", "tanh", "mul", "relu"})
    total += node_cost(*g, n).flops;
  CHECK(s.flops == Approx(total));
  CHECK(node_cost(*g, "mm").flops == Approx(2.0 * 2 * 3 * 4));  // an FMA counts 2
  const double path = node_cost(*g, "mm").flops + node_cost(*g, "bias").flops +
                      std::max(node_cost(*g, "sig").flops, node_cost(*g, "tanh").flops) +
                      node_cost(*g, "mul").flops;
  CHECK(s.critical_path_flops == Approx(std::max(path, node_cost(*g, "relu").flops)));

  // Six intermediates of 64 bytes after rounding (m, a, s, t, y: 32 bytes; r: 24 bytes).
  CHECK(s.total_bytes == 6 * 64);
  CHECK(s.peak_bytes == plan_memory(*g, ReuseMode::kDependencySafe).peak_bytes);
  CHECK(s.peak_bytes_sequential == plan_memory(*g, ReuseMode::kSequential).peak_bytes);
  CHECK(s.peak_bytes_sequential <= s.peak_bytes);
  CHECK(s.peak_bytes < s.total_bytes);
}

TEST_CASE("graph stats: with a Plan, kernel counts, JSON and text forms", "[graph_stats]") {
  auto g = hand_graph();
  Plan p = value_or_throw(compile(g, 1));
  GraphStats s = value_or_throw(compute_graph_stats(*g, &p));
  size_t kernels = 0;
  for (const auto& [k, n] : s.kernel_counts) kernels += n;
  CHECK(kernels == 6);
  CHECK(s.peak_bytes == p.memory().peak_bytes);

  nlohmann::json j = to_json(s);
  CHECK(j["nodes"] == 6);
  CHECK(j["op_counts"]["MatMul"] == 1);
  CHECK(j["parameters"] == 16);
  CHECK(j["ops_per_depth"] == nlohmann::json::array({2, 1, 2, 1}));
  CHECK(j["critical_path"]["ops"] == 4);
  CHECK(j["critical_path"]["flops"].get<double>() == Approx(s.critical_path_flops));
  CHECK(j["memory"]["total_bytes"] == 384);
  CHECK(j["memory"]["peak_bytes"] == s.peak_bytes);
  CHECK(j.contains("kernel_counts"));

  std::string text = to_text(s);
  CHECK_THAT(text, Contains("critical path"));
  CHECK_THAT(text, Contains("4 ops"));
  CHECK_THAT(text, Contains("2 1 2 1"));
  CHECK_THAT(text, Contains("MatMul 1"));
}

TEST_CASE("graph stats: an op the registry does not know is an error naming the node",
          "[graph_stats]") {
  class AnyShape : public graph::ShapeInferencer {
    Result<std::vector<TensorDesc>> infer(const graph::InferContext& ctx) const override {
      return std::vector<TensorDesc>{*ctx.inputs[0]};
    }
  };
  graph::GraphBuilder b("<foreign>");
  b.add_input("x", TensorDesc{DType::kF32, {2}});
  b.add_node("Frobnicate", "f", {"x"}, {"y"});
  b.add_output("y");
  graph::Graph g = value_or_throw(b.finish(AnyShape()));
  auto s = compute_graph_stats(g);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(s.status().message(), Contains("<foreign>: node 'f' (Frobnicate): unknown op type"));
  auto p = compile(std::make_shared<const graph::Graph>(std::move(g)), 1);
  REQUIRE_FALSE(p.is_ok());
  CHECK_THAT(p.status().message(), Contains("node 'f' (Frobnicate)"));
}

TEST_CASE("graph stats: integer constants are not parameters, a graph without nodes",
          "[graph_stats]") {
  graph::GraphBuilder b("<reshape>");
  b.add_input("x", TensorDesc{DType::kF32, {2, 3}});
  Tensor shape(TensorDesc{DType::kI64, {1}});
  shape.data_as<int64_t>()[0] = 6;
  b.add_constant("shape", std::move(shape));
  b.add_node("Reshape", "flat", {"x", "shape"}, {"y"});
  b.add_output("y");
  graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  GraphStats s = value_or_throw(compute_graph_stats(g));
  CHECK(s.parameters == 0);
  CHECK(s.parameter_bytes == 0);
  CHECK(s.constant_bytes == 8);
  CHECK(s.num_constants == 1);
  CHECK(s.aliased_values == 0);  // a Reshape of a graph input is a copy (the caller's bytes)

  // A Reshape of an intermediate shares its bytes: counted, and one buffer less.
  graph::GraphBuilder c("<reshape of an intermediate>");
  c.add_input("x", TensorDesc{DType::kF32, {2, 3}});
  Tensor shape2(TensorDesc{DType::kI64, {1}});
  shape2.data_as<int64_t>()[0] = 6;
  c.add_constant("shape", std::move(shape2));
  c.add_node("Relu", "relu", {"x"}, {"r"});
  c.add_node("Reshape", "flat", {"r", "shape"}, {"y"});
  c.add_output("y");
  GraphStats a = value_or_throw(compute_graph_stats(value_or_throw(c.finish(ops::Registry::get()))));
  CHECK(a.aliased_values == 1);
  CHECK(a.total_bytes == 64);  // r's 24 bytes, rounded to 64; y takes r's bytes
  CHECK_THAT(to_text(a), Contains("1 Reshape/Identity outputs share their input's bytes"));
  CHECK(to_json(a)["memory"]["aliased_values"] == 1);

  // An output that is the input itself: no ops, no arena.
  graph::GraphBuilder e("<empty>");
  e.add_input("x", TensorDesc{DType::kF32, {4}});
  e.add_output("x");
  GraphStats t =
      value_or_throw(compute_graph_stats(value_or_throw(e.finish(ops::Registry::get()))));
  CHECK(t.num_nodes == 0);
  CHECK(t.ops_per_depth.empty());
  CHECK(t.critical_path_ops == 0);
  CHECK(t.average_parallelism == 0);
  CHECK(t.peak_bytes == 0);
  CHECK_THAT(to_text(t), Contains("none"));
}
