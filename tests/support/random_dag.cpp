#include "tests/support/random_dag.h"

#include <random>
#include <string>
#include <vector>

#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace graphi::test {

std::shared_ptr<const graph::Graph> random_dag(const RandomDagSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> u01(0, 1);
  graph::GraphBuilder b("<random dag " + std::to_string(spec.seed) + ">");
  const TensorDesc desc{DType::kF32, {spec.rows, spec.cols}};
  std::vector<std::string> values;
  std::vector<int> uses;
  for (int i = 0; i < spec.inputs; ++i) {
    values.push_back("in" + std::to_string(i));
    uses.push_back(0);
    b.add_input(values.back(), desc);
  }
  b.add_constant("w", random_tensor(TensorDesc{DType::kF32, {spec.cols, spec.cols}},
                                    spec.seed ^ 0x5eed, -0.3, 0.3));
  auto pick = [&]() -> size_t {
    // Mostly one of the last 6 values, sometimes anything: chains plus fan-in/fan-out.
    size_t n = values.size();
    if (u01(rng) < 0.7) return n - 1 - std::min<size_t>(n - 1, rng() % 6);
    return rng() % n;
  };
  static const char* kUnary[] = {"Sigmoid", "Tanh", "Relu"};
  static const char* kBinary[] = {"Add", "Sub", "Mul"};
  for (int i = 0; i < spec.nodes; ++i) {
    std::string out = "v" + std::to_string(i), name = "n" + std::to_string(i);
    double r = u01(rng);
    size_t a = pick();
    if (r < spec.matmul_share) {
      b.add_node("MatMul", name, {values[a], "w"}, {out});
      ++uses[a];
    } else if (r < spec.matmul_share + spec.small_share) {
      b.add_node("Identity", name, {values[a]}, {out});
      ++uses[a];
    } else if (u01(rng) < 0.5) {
      b.add_node(kUnary[rng() % 3], name, {values[a]}, {out});
      ++uses[a];
    } else {
      size_t c = pick();
      b.add_node(kBinary[rng() % 3], name, {values[a], values[c]}, {out});
      ++uses[a];
      ++uses[c];
    }
    values.push_back(out);
    uses.push_back(0);
  }
  bool any = false;
  for (size_t i = static_cast<size_t>(spec.inputs); i < values.size(); ++i)
    if (uses[i] == 0) {
      b.add_output(values[i]);
      any = true;
    }
  if (!any) b.add_output(values.back());
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

engine::NamedTensors random_inputs(const graph::Graph& g, uint64_t seed) {
  engine::NamedTensors in;
  for (graph::ValueId v : g.inputs())
    in.emplace_back(g.value(v).name, random_tensor(g.value(v).desc, seed++));
  return in;
}

}  // namespace graphi::test
