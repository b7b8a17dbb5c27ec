// Internals of import-time folding shared by its two files: onnx_fold.cpp (the dispatcher,
// shape and view ops) and onnx_fold_math.cpp (element-wise, variadic, unary and reduction ops).
// Include only from graph/onnx/.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/onnx/onnx_fold.h"

namespace graphi::graph::onnx::fold_detail {

using Ins = std::vector<const HostTensor*>;
using Outs = std::vector<HostTensor>;

// Keeps values representable in the tensor's type (FLOAT rounded to float32, narrow integers
// wrapped, BOOL 0/1).
void fit_to_type(HostTensor& t);
// Element k of t set to v, in t's storage (f or i).
void set_value(HostTensor& t, size_t k, double v);
// An error when a folded result of shape s has more elements than the running fold may
// produce (max_fold_elements()).
Status check_size(const Shape& s, const std::string& where);
// The element limit of the fold running on this thread: fold_node's `max_elements`, at most
// kMaxFoldElements.
int64_t max_fold_elements();
// INT attribute `name` of n, or dflt.
Result<int64_t> a_int(const Node& n, const char* name, int64_t dflt, const std::string& where);
// An error unless the first `required` inputs are present.
Status need_inputs(const Ins& in, size_t required, const std::string& where);
// For each element of `out`, the index of the element of a tensor of shape `in` broadcast to it.
std::vector<size_t> broadcast_index(const Shape& out, const Shape& in);
// The axes of a reduction or squeeze: input `input_slot` from opset `input_since` on, else
// attribute 'axes'; *given says whether any were given.
Result<std::vector<int64_t>> axes_from(const Node& n, const Ins& in, size_t input_slot,
                                       int64_t opset, int64_t input_since, const std::string& where,
                                       bool* given);
// Axes made non-negative for `rank`, checked and free of repeats.
Result<std::vector<int64_t>> normalize_axes(std::vector<int64_t> axes, int64_t rank,
                                            const std::string& where);

// The folds of onnx_fold_math.cpp, and its element-wise loop over broadcast inputs (`fn` gets
// the output tensor, the output index and the inputs' element indices).
Result<HostTensor> elementwise(
    const Ins& xs, int32_t out_type, const std::string& where,
    const std::function<void(HostTensor&, size_t, const std::vector<size_t>&)>& fn);
Result<Outs> fold_binary(const std::string& op, const Node& n, const Ins& in,
                         const std::string& where);
Result<Outs> fold_variadic(const std::string& op, const Ins& in, const std::string& where);
Result<Outs> fold_unary(const std::string& op, const Ins& in, const std::string& where);
Result<Outs> fold_reduce(const std::string& op, const Node& n, int64_t opset, const Ins& in,
                         const std::string& where);
// The range of an integer type QuantizeLinear / DequantizeLinear use (UINT8, INT8, UINT16,
// INT16, INT32), or nullopt (onnx_fold_quantize.cpp).
std::optional<std::pair<int64_t, int64_t>> quantized_range(int32_t type);
// QuantizeLinear, DequantizeLinear on constants (onnx_fold_quantize.cpp).
Result<Outs> fold_quantize(const std::string& op, const Node& n, const Ins& in,
                           const std::string& where);
// HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix (onnx_fold_signal.cpp).
Result<Outs> fold_signal(const std::string& op, const Node& n, const Ins& in,
                         const std::string& where);

}  // namespace graphi::graph::onnx::fold_detail
