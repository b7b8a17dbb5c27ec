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

// Folded tensors live in memory as doubles / int64s during import: each folded result is
// bounded (a hostile ConstantOfShape of [2^40] is an error, not an allocation failure), and so
// is a model's folding in total (the importer's budget, kMinFoldBudget or 4 times the elements
// of the model's own constants: a 1 KiB file must not make the importer build and hold
// gigabytes of folded values; graph/onnx/ONNX.md, Limits).
constexpr int64_t kMaxFoldElements = int64_t{1} << 26;
constexpr int64_t kMinFoldBudget = int64_t{1} << 24;

// Evaluates `n` (default domain, opset `opset`) on `inputs` (nullptr = absent optional input;
// for Shape and Size only the input's type and shape are read, its data may be empty). A
// result of more than `max_elements` elements (at most kMaxFoldElements) is refused before it
// is computed. Errors start with `where`.
Result<std::vector<HostTensor>> fold_node(const Node& n, int64_t opset,
                                          const std::vector<const HostTensor*>& inputs,
                                          const std::string& where,
                                          int64_t max_elements = kMaxFoldElements);

// The output shape of Slice node `n` on a tensor of shape `x`, its bounds from inputs[1..4]
// (opset >= 10) or its attributes (inputs[0] is not read). Errors as folding it would give.
Result<Shape> slice_shape(const Node& n, int64_t opset,
                          const std::vector<const HostTensor*>& inputs, const Shape& x,
                          const std::string& where);

// numpy broadcasting of two shapes; error names `where` and both shapes.
Result<Shape> broadcast_shapes(const Shape& a, const Shape& b, const std::string& where);

}  // namespace graphi::graph::onnx
