// fold_constant_nodes: nodes whose inputs are all constants run once, at load, on graphi's own
// kernels, and the values other nodes read become constants. An exporter leaves such chains
// wherever a computation depends on weights only: DeBERTa projects its constant relative-position
// embeddings through the attention weights (four [512, 384] x [384, 768] MatMuls, ~5 ms of its 19
// on one core), BiT standardizes its conv weights (a training-mode BatchNormalization over each
// weight, which also left the convs with run-time weights). ONNX Runtime folds them too. Nodes of
// random ops stay, as do graph outputs; a value over 64 MiB is not folded (it stays a
// computation instead of a second copy of the weights). If the folded part cannot be built or
// run, the graph is returned unchanged.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace graphi::engine {

struct ConstantFoldResult {
  std::shared_ptr<const graph::Graph> graph;  // the input itself when nothing was folded
  int folded = 0;                             // nodes evaluated here
};

Result<ConstantFoldResult> fold_constant_nodes(std::shared_ptr<const graph::Graph> g);

}  // namespace graphi::engine
