// ONNX import, quantization: QDQ-format models (QuantizeLinear -> DequantizeLinear pairs around
// float ops, as ONNX Runtime's quantize_static writes them) run in float32. On constants both ops
// fold at import (onnx_fold_quantize.cpp: int8 weights, int32 biases); on a run-time float32 x a
// QuantizeLinear whose every consumer is a DequantizeLinear of the same scale and zero point
// becomes, at that DequantizeLinear, graphi's QuantizeDequantize (ops/quantize_dequantize.cpp):
// the pair's exact float32 result in one pass. Integer tensors at run time (a QuantizeLinear
// feeding anything else, QLinearConv / MatInteger-style QOperator models) are refused by name.
#include <algorithm>

#include "graph/onnx/import_internal.h"
#include "graph/onnx/onnx_fold_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

namespace {

// The range of a type a QDQ activation uses: 8 or 16 bits (not INT32, a bias's type).
std::optional<std::pair<int64_t, int64_t>> activation_range(int32_t type) {
  if (type == onnx::kInt32) return std::nullopt;
  return onnx::fold_detail::quantized_range(type);
}

}  // namespace

std::optional<Status> Importer::translate_quantize(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& where = io.where;
  if (n.op != "QuantizeLinear" && n.op != "DequantizeLinear") return std::nullopt;
  if (Status s = io.need(0); !s.is_ok()) return s;
  if (Status s = io.need(1); !s.is_ok()) return s;
  const std::string& x = io.ins[0];
  const HostTensor* scale = host(io.ins[1]);
  const HostTensor* zp = io.ins.size() > 2 && !io.ins[2].empty() ? host(io.ins[2]) : nullptr;
  if (!scale || (io.ins.size() > 2 && !io.ins[2].empty() && !zp))
    return Status::unsupported(where +
                               ": a scale or zero point computed at run time is not "
                               "supported (graphi runs QDQ models with constant ones)");
  if (scale->numel() != 1 || (zp && zp->numel() != 1))
    return Status::unsupported(where +
                               ": per-axis quantization of a run-time value is not "
                               "supported (scale " +
                               scale->desc() +
                               "); graphi runs per-tensor QuantizeLinear / DequantizeLinear pairs "
                               "on activations");
  if (n.op == "QuantizeLinear") {
    // Every reader of y must be a DequantizeLinear, and y no graph output.
    const std::string& y = io.outs[0];
    for (const onnx::ValueInfo& o : m_.graph.outputs)
      if (o.name == y)
        return Status::unsupported(where + ": the quantized output '" + y +
                                   "' is a graph output; graphi has no integer outputs (it runs "
                                   "QDQ models, QuantizeLinear -> DequantizeLinear, in float32)");
    for (const onnx::Node& c : m_.graph.nodes)
      if (c.op != "DequantizeLinear" &&
          std::find(c.inputs.begin(), c.inputs.end(), y) != c.inputs.end())
        return Status::unsupported(where + ": its quantized output '" + y + "' feeds node[" +
                                   std::to_string(c.index) + "] '" + c.name + "' (" + c.op +
                                   "); graphi runs QDQ models (QuantizeLinear -> "
                                   "DequantizeLinear pairs) in float32, integer tensors at run "
                                   "time are not supported");
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(x, where));
    if (d.dtype != DType::kF32)
      return Status::unsupported(where + ": QuantizeLinear of a run-time " + d.to_string() +
                                 " is not supported");
    const onnx::Attr* od = n.attr("output_dtype");
    const int32_t type = zp ? zp->type : od && od->i ? static_cast<int32_t>(od->i) : onnx::kUint8;
    const auto range = activation_range(type);
    if (!range)
      return Status::unsupported(where + ": quantization to " + onnx::data_type_name(type) +
                                 " is not supported (UINT8, INT8, UINT16, INT16)");
    PendingQuant q;
    q.x = x;
    q.scale = scale->get_f(0);
    q.zero_point = zp ? zp->i[0] : 0;
    q.qmin = range->first;
    q.qmax = range->second;
    q.where = where;
    pending_quant_[y] = q;
    // y is never emitted (no graph value): its DequantizeLinear readers are checked above.
    ValState v;
    v.desc = d;
    vals_[y] = std::move(v);
    return Status::ok();
  }
  // DequantizeLinear of a run-time value: the output of a QuantizeLinear seen before.
  auto it = pending_quant_.find(x);
  if (it == pending_quant_.end())
    return Status::unsupported(where + ": DequantizeLinear of the run-time value '" + x +
                               "' is supported only right after a QuantizeLinear (QDQ format); "
                               "graphi has no integer tensors at run time");
  const PendingQuant& q = it->second;
  const double s = scale->get_f(0);
  const int64_t z = zp ? zp->i[0] : 0;
  if (s != q.scale || z != q.zero_point)
    return Status::unsupported(where + ": scale " + std::to_string(s) + " / zero point " +
                               std::to_string(z) + " differ from those of its QuantizeLinear (" +
                               q.where + ": " + std::to_string(q.scale) + " / " +
                               std::to_string(q.zero_point) + ")");
  Attributes a;
  a.set("scale", q.scale);
  a.set("zero_point", q.zero_point);
  a.set("qmin", q.qmin);
  a.set("qmax", q.qmax);
  return emit("QuantizeDequantize", io.name, {q.x}, io.outs, std::move(a), where, &n);
}

}  // namespace graphi::graph::onnx_import
