// Random DAGs of real ops for engine tests: every executor and policy must agree with the
// sequential reference executor on them.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/session.h"
#include "graph/graph.h"

namespace graphi::test {

struct RandomDagSpec {
  int nodes = 40;  // ops in the graph
  int inputs = 2;  // graph inputs, f32[rows, cols]
  int64_t rows = 4;
  int64_t cols = 8;
  double matmul_share = 0.2;  // fraction of MatMul nodes (with a constant [cols, cols] weight)
  double small_share = 0.1;   // fraction of Identity/Reshape nodes (small ops, run inline)
  uint64_t seed = 1;
};

// A valid random DAG: each node reads one or two earlier values (biased to recent ones, so the
// graph has both long chains and wide levels); values nobody reads are graph outputs.
std::shared_ptr<const graph::Graph> random_dag(const RandomDagSpec& spec);

// Seeded random inputs for every graph input.
engine::NamedTensors random_inputs(const graph::Graph& g, uint64_t seed);

}  // namespace graphi::test
