// Naive references for the elementwise, shape and softmax ops, written straight from the numpy /
// ONNX definitions with one multi-index loop per op and double arithmetic. Used only by tests as
// the independent truth for ops/elementwise.cpp, ops/shape_ops.cpp and ops/softmax.cpp; they
// share no code with the kernels (no broadcast plan, no merged dims). Bad arguments (a bug in the
// test) throw std::invalid_argument.
#pragma once

#include <string>
#include <vector>

#include "graph/tensor.h"

namespace graphi::test {

// numpy broadcasting of "Add", "Sub", "Mul" or "Div" on float32 tensors.
Tensor binary_ref(const std::string& op, const Tensor& a, const Tensor& b);

// "Sigmoid" (1 / (1 + e^-x)), "Tanh" or "Relu" (max(x, 0), NaN stays NaN) on float32.
Tensor unary_ref(const std::string& op, const Tensor& x);

// ONNX Softmax (opset 13): exp(x) / sum(exp(x)) along `axis` (negative counts from the end).
Tensor softmax_ref(const Tensor& x, int64_t axis);

// The shape ops work on any dtype (elements are copied as bytes).
Tensor concat_ref(const std::vector<Tensor>& xs, int64_t axis);
std::vector<Tensor> split_ref(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes);
// ONNX Slice: empty axes means 0..k-1, empty steps means all 1.
Tensor slice_ref(const Tensor& x, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                 std::vector<int64_t> steps);
// ONNX Transpose: output dim i is input dim perm[i]; empty perm reverses the dims.
Tensor transpose_ref(const Tensor& x, std::vector<int64_t> perm);
// ONNX Reshape: 0 copies the input dim, -1 is inferred.
Tensor reshape_ref(const Tensor& x, const std::vector<int64_t>& shape);

}  // namespace graphi::test
