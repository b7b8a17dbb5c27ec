// Loading a model file of any supported kind: picks the reader by extension (.graphi, .onnx),
// or by content when the extension is unknown. Front ends (CLI, C API) call this.
#pragma once

#include <string>

#include "graph/graph.h"
#include "graph/onnx/onnx_import.h"

namespace graphi::graph {

// Reads `path` and validates it with `shapes` (usually ops::Registry::get()).
// ".graphi" -> read_graphi; ".onnx" -> import_onnx_file (graph/onnx/onnx_import.h) with `onnx`
// (symbolic dim values); any other extension: a file starting with the .graphi magic is read as
// .graphi, one that starts like an ONNX ModelProto is imported as ONNX, anything else is
// kInvalidArgument naming the accepted extensions. Errors name the file.
Result<Graph> read_graph_file(const std::string& path, const ShapeInferencer& shapes,
                              const ImportOptions& onnx = {});

}  // namespace graphi::graph
