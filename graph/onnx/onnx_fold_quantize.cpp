// Import-time folding of QuantizeLinear and DequantizeLinear on constants: a QDQ-format model's
// int8 / uint8 weights and int32 biases become float32 constants (graph/onnx/ONNX.md, "Quantized
// models"). Per tensor, per axis (a 1-D scale along `axis`) and blocked (opset 21's
// `block_size`: a scale per block of `block_size` elements along `axis`), in float32 as the ops
// define: DequantizeLinear y = (x - zero_point) * scale; QuantizeLinear
// y = saturate(round_half_even(x / scale) + zero_point) to the zero point's type.
#include <cmath>

#include "graph/onnx/onnx_fold_internal.h"

namespace graphi::graph::onnx::fold_detail {

std::optional<std::pair<int64_t, int64_t>> quantized_range(int32_t type) {
  switch (type) {
    case kUint8:
      return std::pair<int64_t, int64_t>{0, 255};
    case kInt8:
      return std::pair<int64_t, int64_t>{-128, 127};
    case kUint16:
      return std::pair<int64_t, int64_t>{0, 65535};
    case kInt16:
      return std::pair<int64_t, int64_t>{-32768, 32767};
    case kInt32:
      return std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
    default:
      return std::nullopt;
  }
}

namespace {

// For element k of x, the index of its scale / zero point: 0 per tensor; its coordinate along
// `axis` per axis; that coordinate / block_size in the scale's own shape when blocked.
struct ParamIndex {
  Shape x;
  int64_t axis = 1, block = 0;
  Shape p;  // the scale's shape
  Result<bool> check(const std::string& where) const {
    const auto r = static_cast<int64_t>(x.size());
    if (shape_numel(p) == 1 && block == 0) return true;
    if (axis < 0 || axis >= r)
      return Status::invalid_graph(where + ": axis " + std::to_string(axis) +
                                   " is out of range for an input of rank " + std::to_string(r));
    if (block == 0) {
      if (p.size() != 1 || p[0] != x[static_cast<size_t>(axis)])
        return Status::invalid_graph(where + ": scale of shape " + shape_to_string(p) +
                                     " is neither a scalar nor one value per index of axis " +
                                     std::to_string(axis) + " (" + shape_to_string(x) + ")");
      return true;
    }
    if (p.size() != x.size())
      return Status::invalid_graph(where + ": a blocked scale must have x's rank, got " +
                                   shape_to_string(p));
    for (size_t d = 0; d < x.size(); ++d) {
      const int64_t want = static_cast<int64_t>(d) == axis ? (x[d] + block - 1) / block : x[d];
      if (p[d] != want)
        return Status::invalid_graph(where + ": blocked scale of shape " + shape_to_string(p) +
                                     " does not match x " + shape_to_string(x) +
                                     " with block_size " + std::to_string(block));
    }
    return true;
  }
  size_t operator()(size_t k) const {
    if (shape_numel(p) == 1 && block == 0) return 0;
    // Coordinates of k in x, then the scale's index.
    size_t idx = 0, stride = 1, rem = k;
    std::vector<int64_t> c(x.size());
    for (size_t d = x.size(); d-- > 0;) {
      c[d] = static_cast<int64_t>(rem % static_cast<size_t>(x[d]));
      rem /= static_cast<size_t>(x[d]);
    }
    if (block == 0) return static_cast<size_t>(c[static_cast<size_t>(axis)]);
    for (size_t d = p.size(); d-- > 0;) {
      const int64_t cd = static_cast<int64_t>(d) == axis ? c[d] / block : c[d];
      idx += static_cast<size_t>(cd) * stride;
      stride *= static_cast<size_t>(p[d]);
    }
    return idx;
  }
};

}  // namespace

Result<Outs> fold_quantize(const std::string& op, const Node& n, const Ins& in,
                           const std::string& where) {
  GRAPHI_RETURN_IF_ERROR(need_inputs(in, 2, where));
  const HostTensor& x = *in[0];
  const HostTensor& scale = *in[1];
  const HostTensor* zp = in.size() > 2 ? in[2] : nullptr;
  if (!scale.is_float())
    return Status::invalid_graph(where + ": scale must be a float tensor, got " + scale.desc());
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, a_int(n, "axis", 1, where));
  GRAPHI_ASSIGN_OR_RETURN(int64_t block, a_int(n, "block_size", 0, where));
  if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
  ParamIndex at{x.shape, axis, block, scale.shape};
  GRAPHI_RETURN_IF_ERROR(at.check(where).status());
  if (zp && zp->shape != scale.shape && !(zp->numel() == 1 && scale.numel() == 1))
    return Status::invalid_graph(where + ": zero point " + zp->desc() + " and scale " +
                                 scale.desc() + " differ in shape");
  GRAPHI_RETURN_IF_ERROR(check_size(x.shape, where));
  if (op == "DequantizeLinear") {
    if (x.is_float() || !quantized_range(x.type))
      return Status::unsupported(where + ": DequantizeLinear of " + x.desc() +
                                 " is not supported (graphi folds INT8, UINT8, INT16, UINT16 and "
                                 "INT32 constants)");
    if (zp && zp->type != x.type)
      return Status::invalid_graph(where + ": zero point " + zp->desc() + " and x " + x.desc() +
                                   " differ in type");
    GRAPHI_ASSIGN_OR_RETURN(int64_t out_type, a_int(n, "output_dtype", 0, where));
    HostTensor y =
        HostTensor::make(out_type ? static_cast<int32_t>(out_type) : scale.type, x.shape);
    if (!y.is_float()) return Status::invalid_graph(where + ": output_dtype must be a float type");
    for (size_t k = 0; k < x.numel(); ++k) {
      const size_t p = at(k);
      const int64_t z = zp ? zp->i[p] : 0;
      y.f[k] = static_cast<double>(static_cast<float>(x.i[k] - z) * static_cast<float>(scale.f[p]));
    }
    fit_to_type(y);
    return Outs{std::move(y)};
  }
  // QuantizeLinear: the zero point's type (UINT8 without one, or output_dtype).
  GRAPHI_ASSIGN_OR_RETURN(int64_t out_type, a_int(n, "output_dtype", 0, where));
  const int32_t type = zp ? zp->type : out_type ? static_cast<int32_t>(out_type) : kUint8;
  const auto range = quantized_range(type);
  if (!range || !x.is_float())
    return Status::unsupported(where + ": QuantizeLinear of " + x.desc() + " to " +
                               data_type_name(type) +
                               " is not supported (graphi folds float inputs to INT8, UINT8, "
                               "INT16, UINT16 and INT32)");
  HostTensor y = HostTensor::make(type, x.shape);
  for (size_t k = 0; k < x.numel(); ++k) {
    const size_t p = at(k);
    const float v = static_cast<float>(x.f[k]) / static_cast<float>(scale.f[p]);
    const double r = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v));  // ties even
    const double q = r + static_cast<double>(zp ? zp->i[p] : 0);
    y.i[k] = static_cast<int64_t>(
        std::clamp(q, static_cast<double>(range->first), static_cast<double>(range->second)));
  }
  return Outs{std::move(y)};
}

}  // namespace graphi::graph::onnx::fold_detail
