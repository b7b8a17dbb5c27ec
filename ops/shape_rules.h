// Checks shared by the shape rules and kernel init() of ops/: input counts, dtypes, axes and
// constant integer inputs (Reshape's shape, Slice's starts/ends). Every error starts with the
// node's `where` and names the field. ops/ code only; knows nothing of engine/.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::ops {

// The part of a node that shape rules and kernel init() both see. Built from an InferContext
// or a KernelContext (which outlive it); holds no copies.
struct NodeView {
  const graph::Node& node;
  std::span<const TensorDesc* const> inputs;    // nullptr for an absent optional input
  std::span<const Tensor* const> const_inputs;  // nullptr unless the input is a constant
  const std::string& where;

  static NodeView of(const graph::InferContext& c) {
    return {c.node, c.inputs, c.const_inputs, c.where};
  }
  template <typename Ctx>  // KernelContext (ops/kernel.h) has the same fields
  static NodeView of_kernel(const Ctx& c) {
    return {c.node, c.inputs, c.const_inputs, c.where};
  }

  // The desc of input i; only valid after expect_inputs() checked that it is present.
  const TensorDesc& in(size_t i) const { return *inputs[i]; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
};

// Between min_count and max_count inputs; the first `required` of them must be present.
// "<where>: expects 2 inputs, got 3".
Status expect_inputs(const NodeView& v, size_t min_count, size_t max_count, size_t required);

// Input i has one of the allowed dtypes: "<where>: input 1 (B) must be float32, got int64[2, 3]".
Status expect_dtype(const NodeView& v, size_t i, const char* field,
                    std::initializer_list<DType> allowed);

// Inputs [first, last) all have input first's dtype.
Status expect_same_dtype(const NodeView& v, size_t first, size_t last);

// An axis attribute value in [-rank, rank) made non-negative; the error names the attribute,
// the value and the input's shape.
Result<int> normalize_axis(const NodeView& v, const char* attr, int64_t axis, const TensorDesc& d);

// The contents of constant integer input i (i32 or i64, rank <= 1) as int64 values. Errors when
// the input is not a constant ("must be a constant") or not an integer vector.
Result<std::vector<int64_t>> const_ints_input(const NodeView& v, size_t i, const char* field);

// The channel block of a nChw{B}c op (graph/passes/blocked_layout.h): attribute `block`, 8 or 16.
Result<int64_t> layout_block(const graph::Node& node, const std::string& where);

// "[1, 2, 3]" for attribute values in messages.
std::string ints_to_string(std::span<const int64_t> v);

}  // namespace graphi::ops
