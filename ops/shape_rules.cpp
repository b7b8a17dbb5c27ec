#include "ops/shape_rules.h"

namespace graphi::ops {

Status expect_inputs(const NodeView& v, size_t min_count, size_t max_count, size_t required) {
  const size_t n = v.inputs.size();
  if (n < min_count || n > max_count) {
    std::string want = min_count == max_count ? std::to_string(min_count)
                       : max_count == SIZE_MAX
                           ? "at least " + std::to_string(min_count)
                           : std::to_string(min_count) + " to " + std::to_string(max_count);
    return Status::invalid_graph(v.where + ": expects " + want + " input" +
                                 (max_count == 1 ? "" : "s") + ", got " + std::to_string(n));
  }
  for (size_t i = 0; i < std::min(required, n); ++i)
    if (!v.inputs[i])
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) +
                                   " is required but absent");
  return Status::ok();
}

Status expect_dtype(const NodeView& v, size_t i, const char* field,
                    std::initializer_list<DType> allowed) {
  const TensorDesc& d = v.in(i);
  for (DType t : allowed)
    if (d.dtype == t) return Status::ok();
  std::string names;
  size_t k = 0;
  for (DType t : allowed) {
    names += (k == 0 ? "" : k + 1 == allowed.size() ? " or " : ", ");
    names += dtype_name(t);
    ++k;
  }
  return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + field +
                               ") must be " + names + ", got " + d.to_string());
}

Status expect_same_dtype(const NodeView& v, size_t first, size_t last) {
  for (size_t i = first + 1; i < last; ++i)
    if (v.in(i).dtype != v.in(first).dtype)
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " is " +
                                   v.in(i).to_string() + " but input " + std::to_string(first) +
                                   " is " + v.in(first).to_string() + "; the dtypes must match");
  return Status::ok();
}

Result<int> normalize_axis(const NodeView& v, const char* attr, int64_t axis, const TensorDesc& d) {
  const int64_t rank = d.rank();
  if (axis < -rank || axis >= rank)
    return Status::invalid_graph(v.where + ": attribute '" + attr + "' = " + std::to_string(axis) +
                                 " is out of range for input of shape " + shape_to_string(d.shape) +
                                 " (valid: " + std::to_string(-rank) + " to " +
                                 std::to_string(rank - 1) + ")");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Result<std::vector<int64_t>> const_ints_input(const NodeView& v, size_t i, const char* field) {
  const TensorDesc& d = v.in(i);
  const std::string name = "input " + std::to_string(i) + " (" + field + ")";
  if (d.dtype != DType::kI64 && d.dtype != DType::kI32)
    return Status::invalid_graph(v.where + ": " + name + " must be int64 or int32, got " +
                                 d.to_string());
  if (d.rank() > 1)
    return Status::invalid_graph(v.where + ": " + name + " must be a 1-D tensor, got " +
                                 d.to_string());
  const Tensor* t = i < v.const_inputs.size() ? v.const_inputs[i] : nullptr;
  if (!t)
    return Status::unsupported(
        v.where + ": " + name +
        " must be a constant (static shapes only); it is computed at run time");
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = d.dtype == DType::kI64 ? t->data_as<int64_t>()[k] : t->data_as<int32_t>()[k];
  return out;
}

std::string ints_to_string(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Result<int64_t> layout_block(const graph::Node& node, const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t b, graph::attr_int(node.attrs, where, "block", 0));
  if (b != 8 && b != 16)
    return Status::invalid_graph(where + ": attribute 'block' must be 8 or 16, got " +
                                 std::to_string(b));
  return b;
}

}  // namespace graphi::ops
