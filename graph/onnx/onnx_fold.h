// Import-time evaluation of ONNX nodes whose inputs are all known (constants, or the shape of
// a value with a static shape): the shape bookkeeping PyTorch exports carry (Shape, Gather,
// Unsqueeze, Concat, ConstantOfShape, Expand, Cast, Range, ...) and any other listed op on
// constants. graphi graphs are static, so these become constants of the imported graph.
#pragma once

#include <string>
#include <vector>

#include "graph/onnx/onnx_proto.h"

namespace graphi::graph::onnx {

// Op types fold_node evaluates, sorted (for ONNX.md and error messages).
const std::vector<std::string>& foldable_ops();
bool is_foldable_op(const std::string& op);

// Evaluates `n` (default domain, opset `opset`) on `inputs` (nullptr = absent optional input;
// for Shape and Size only the input's type and shape are read, its data may be empty). Errors
// start with `where`.
Result<std::vector<HostTensor>> fold_node(const Node& n, int64_t opset,
                                          const std::vector<const HostTensor*>& inputs,
                                          const std::string& where);

// numpy broadcasting of two shapes; error names `where` and both shapes.
Result<Shape> broadcast_shapes(const Shape& a, const Shape& b, const std::string& where);

}  // namespace graphi::graph::onnx
