// Loading a model for a front end: read a .graphi or .onnx file, validate it with the op
// registry, and apply the default graph pass pipeline. The CLI and the public API
// (include/graphi/graphi.hpp) share this so both load a model the same way.
#pragma once

#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/onnx/onnx_import.h"
#include "graph/passes/pipeline.h"

namespace graphi::engine {

// Reads and validates `path` (graph::read_graph_file). Errors name the path: a missing file, a
// directory, a malformed or unsupported model.
Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path,
                                                       const graph::ImportOptions& onnx = {});

// The pass pipeline's options from GRAPHI_PASSES=name,name,... (the passes of
// graph/passes/pipeline.h by name: rnn_fusion, mm_fusion, ..., channel_affine; unset or empty:
// all). An unknown name is kInvalidArgument listing the known ones.
Result<graph::passes::PipelineOptions> pipeline_options_from_env();

struct OptimizedGraph {
  std::shared_ptr<const graph::Graph> graph;  // the input graph itself when no pass changed it
  std::string summary;                        // one line: what each pass did
};

// Applies the default graph pass pipeline (graph/passes/pipeline.h: unrolled LSTM/GRU/RNN cells
// -> sequence ops, then MM fusion, phase hoisting and Reshape clean-up on the rest), honouring
// GRAPHI_PASSES.
Result<OptimizedGraph> optimize_graph(std::shared_ptr<const graph::Graph> g);

}  // namespace graphi::engine
