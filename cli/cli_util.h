// Helpers shared by the graphi subcommands: loading a model file, human-readable sizes.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/onnx/onnx_import.h"

namespace graphi::cli {

// Loads a model file (.graphi or .onnx; engine::load_model) and validates it with the op
// registry. Errors name the path.
Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path);
// The same with import options for .onnx files (symbolic dim values from --dim).
Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path,
                                                       const graph::ImportOptions& onnx);

// --dim NAME=VALUE flags (repeatable) as ImportOptions: kInvalidArgument naming the bad flag.
Result<graph::ImportOptions> parse_dim_flags(const std::vector<std::string>& specs);

// Applies the default graph pass pipeline (engine::optimize_graph, graph/passes/pipeline.h:
// unrolled LSTM and GRU cells -> sequence ops, then MM fusion and phase hoisting on the rest) and
// says on stderr, in one line, what each pass did. `graphi run` and `graphi info` call it unless
// --no-fuse is given. GRAPHI_PASSES=name,name,... (rnn_fusion, mm_fusion, phase_hoisting,
// reshape_cleanup; unset or empty: all) runs only those passes.
Result<std::shared_ptr<const graph::Graph>> fuse_graph(std::shared_ptr<const graph::Graph> g);

// "390.0 KiB"
std::string human_bytes(double bytes);
// "1.23 GFLOP"
std::string human_flops(double flops);

// Prints "error: <message>" to stderr and returns kExitRuntimeError.
int runtime_error(const Status& s);

// A failed load_model whose cause is the --dim flags (a symbolic dim without a value, a name the
// model does not have, a bad value): the importer reports those as kInvalidArgument naming
// "--dim NAME". The CLI treats them as usage errors (exit 2), like an unknown --input.
bool is_dim_error(const Status& s);

}  // namespace graphi::cli
