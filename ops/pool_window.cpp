#include "ops/pool_window.h"

#include "ops/shape_rules.h"

namespace graphi::ops {

Result<std::vector<int64_t>> window_ints(const graph::Node& node, const std::string& where,
                                         const char* name, size_t count, int64_t dflt, int64_t min,
                                         const char* what) {
  GRAPHI_ASSIGN_OR_RETURN(
      auto v, graph::attr_ints(node.attrs, where, name, std::vector<int64_t>(count, dflt)));
  bool ok = v.size() == count;
  for (int64_t e : v) ok = ok && e >= min;
  if (!ok)
    return Status::invalid_graph(where + ": attribute '" + name + "' must be " +
                                 std::to_string(count) + " ints >= " + std::to_string(min) + " (" +
                                 what + "), got " + ints_to_string(v));
  return v;
}

Result<PoolWindow> read_pool_window(const graph::Node& node, const TensorDesc& x,
                                    const std::string& where, bool with_dilations) {
  if (x.dtype != DType::kF32)
    return Status::invalid_graph(where + ": input X must be float32, got " + x.to_string());
  if (x.rank() < 3 || x.rank() > 5)
    return Status::unsupported(where + ": input X " + x.to_string() +
                               " must be [N, C, D1..Dk] with 1 to 3 spatial dims (rank 3 to 5)");
  GRAPHI_ASSIGN_OR_RETURN(std::string auto_pad,
                          graph::attr_string(node.attrs, where, "auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET")
    return Status::unsupported(where + ": attribute 'auto_pad' = '" + auto_pad +
                               "' is not supported (only NOTSET); give explicit 'pads'");
  GRAPHI_ASSIGN_OR_RETURN(int64_t ceil_mode, graph::attr_int(node.attrs, where, "ceil_mode", 0));
  if (ceil_mode != 0)
    return Status::unsupported(where + ": attribute 'ceil_mode' = " + std::to_string(ceil_mode) +
                               " is not supported (only 0; the importer makes it end pads)");
  PoolWindow w;
  w.k = static_cast<int>(x.rank()) - 2;
  const auto k = static_cast<size_t>(w.k);
  w.n = x.shape[0];
  w.c = x.shape[1];
  if (!node.attrs.has("kernel_shape"))
    return Status::invalid_graph(where + ": attribute 'kernel_shape' is missing");
  const char* per_dim = "one per spatial dim of X";
  GRAPHI_ASSIGN_OR_RETURN(auto kernel, window_ints(node, where, "kernel_shape", k, 1, 1, per_dim));
  GRAPHI_ASSIGN_OR_RETURN(auto strides, window_ints(node, where, "strides", k, 1, 1, per_dim));
  GRAPHI_ASSIGN_OR_RETURN(
      auto pads, window_ints(node, where, "pads", 2 * k, 0, 0, "every begin, then every end"));
  std::vector<int64_t> dil(k, 1);
  if (with_dilations) {
    GRAPHI_ASSIGN_OR_RETURN(dil, window_ints(node, where, "dilations", k, 1, 1, per_dim));
  }
  const size_t off = 3 - k;  // the spatial dims are the last k of the 3
  for (size_t a = 0; a < k; ++a) {
    const size_t d = off + a;
    w.in[d] = x.shape[2 + a];
    w.kernel[d] = kernel[a];
    w.stride[d] = strides[a];
    w.dil[d] = dil[a];
    w.pad_begin[d] = pads[a];
    w.pad_end[d] = pads[a + k];
    // Corrupt dilations or pads (e.g. 2^62) must not overflow int64 in the window arithmetic.
    int64_t span, padded;
    if (__builtin_mul_overflow(dil[a], kernel[a] - 1, &span) ||
        __builtin_add_overflow(w.in[d], pads[a], &padded) ||
        __builtin_add_overflow(padded, pads[a + k], &padded))
      return Status::invalid_graph(where + ": kernel_shape " + ints_to_string(kernel) +
                                   ", dilations " + ints_to_string(dil) + " or pads " +
                                   ints_to_string(pads) + " overflow int64 for X " + x.to_string());
    span += 1;
    const std::string dilated = dil[a] > 1 ? "dilated " : "";
    if (span > padded)
      return Status::invalid_graph(where + ": the " + dilated + "kernel (" + std::to_string(span) +
                                   " along dim " + std::to_string(a + 2) +
                                   ") is larger than the padded input: " + std::to_string(w.in[d]) +
                                   " plus pads " + std::to_string(pads[a]) + " and " +
                                   std::to_string(pads[a + k]) + " of X " + x.to_string());
    if (pads[a] >= span || pads[a + k] >= span)
      return Status::unsupported(where + ": pads " + ints_to_string(pads) +
                                 " must each be smaller than the " + dilated + "kernel (" +
                                 std::to_string(span) + " along dim " + std::to_string(a + 2) +
                                 "): a window would lie entirely in padding");
    w.out[d] = (padded - span) / strides[a] + 1;
  }
  return w;
}

}  // namespace graphi::ops
