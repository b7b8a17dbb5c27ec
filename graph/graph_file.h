// Loading a model file of any supported kind: picks the reader by extension (.graphi, .onnx),
// or by content when the extension is unknown. Front ends (CLI, C API) call this.
#pragma once

#include <string>

#include "graph/graph.h"

namespace graphi::graph {

// Reads `path` and validates it with `shapes` (usually ops::Registry::get()).
// ".graphi" -> read_graphi; ".onnx" -> kUnsupported until the ONNX importer exists; any other
// extension: a file starting with the .graphi magic is read as .graphi, anything else is
// kInvalidArgument naming the accepted extensions. Errors name the file.
Result<Graph> read_graph_file(const std::string& path, const ShapeInferencer& shapes);

}  // namespace graphi::graph
