// Which attribute names and how many inputs/outputs ONNX defines for each op of the default
// domain (the union over opsets, generated from the onnx package's schemas). An attribute ONNX does
// not define is refused: a misspelled or corrupted name (e.g. Transpose 'perm' stored as 'pErm')
// would otherwise be ignored and the attribute's default used, a wrong answer given silently.
#pragma once

#include <cstddef>
#include <string>

#include "graph/base.h"
#include "graph/onnx/onnx_proto.h"

namespace graphi::graph::onnx {

struct OpAttrNames {
  const char* op;
  const char* attrs;                                     // names separated by single spaces
  int min_inputs, max_inputs, min_outputs, max_outputs;  // over all opsets
};
extern const OpAttrNames kOnnxAttrNames[];  // sorted by op (graph/onnx/onnx_attr_names.cpp)
extern const size_t kOnnxAttrNamesCount;

// Ok when every attribute of default-domain node `n` is one ONNX defines for its op and its
// input and output counts are within what some opset allows (ops ONNX does not define are left
// to the importer's unsupported-op error). Otherwise "<where>: attribute 'pErm' is not an
// attribute of ONNX Transpose (it has: perm)" or "<where>: has 7 inputs; ONNX Add takes 2".
Status check_attr_names(const Node& n, const std::string& where);

}  // namespace graphi::graph::onnx
