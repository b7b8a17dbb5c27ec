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
  if (n.op == "MatMul") return int8_qdq_matmul(io);
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
  LazyQdq lazy;
  lazy.q = q;
  lazy.name = io.name;
  lazy.where = where;
  lazy_qdq_[io.outs[0]] = std::move(lazy);
  // Defined for the readers' checks, not yet a graph value (materialize_qdq emits it).
  ValState v;
  v.desc = vals_.at(q.x).desc;
  vals_[io.outs[0]] = std::move(v);
  return Status::ok();
}

Status Importer::materialize_qdq(const std::string& v) {
  auto it = lazy_qdq_.find(v);
  if (it == lazy_qdq_.end() || it->second.emitted) return Status::ok();
  LazyQdq& l = it->second;
  l.emitted = true;
  vals_.erase(v);
  Attributes a;
  a.set("scale", l.q.scale);
  a.set("zero_point", l.q.zero_point);
  a.set("qmin", l.q.qmin);
  a.set("qmax", l.q.qmax);
  return emit("QuantizeDequantize", l.name, {l.q.x}, {v}, std::move(a), l.where, nullptr);
}

Status Importer::materialize_qdq_inputs(const onnx::Node& n) {
  if (lazy_qdq_.empty()) return Status::ok();
  bool int8 = false;
  if (n.op == "MatMul" && (n.domain.empty() || n.domain == "ai.onnx") && n.inputs.size() == 2 &&
      lazy_qdq_.count(n.inputs[0])) {
    // Worked out once: int8_qdq_matmul takes them from here.
    std::optional<Int8MatMulWeights> w = int8_qdq_weights(n.inputs[0], n.inputs[1]);
    int8 = w.has_value();
    if (w) int8_weights_[n.inputs[0] + "\n" + n.inputs[1]] = std::move(*w);
  }
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (!(int8 && k == 0)) GRAPHI_RETURN_IF_ERROR(materialize_qdq(n.inputs[k]));
  for (const std::string& v : outer_reads(n)) GRAPHI_RETURN_IF_ERROR(materialize_qdq(v));
  return Status::ok();
}

std::optional<Int8MatMulWeights> Importer::int8_qdq_weights(const std::string& a,
                                                            const std::string& b) {
  auto xi = lazy_qdq_.find(a);
  auto wi = dequantized_constants_.find(b);
  if (xi == lazy_qdq_.end() || wi == dequantized_constants_.end()) return std::nullopt;
  const PendingQuant& xq = xi->second.q;
  const DequantizedConstant& d = wi->second;
  const HostTensor* w = host(d.q);
  const HostTensor* s = host(d.scale);
  const HostTensor* z = d.zero_point.empty() ? nullptr : host(d.zero_point);
  if (xq.qmax - xq.qmin != 255 || d.blocked || !w || !s || (!d.zero_point.empty() && !z) ||
      (w->type != onnx::kInt8 && w->type != onnx::kUint8) || w->shape.size() != 2 ||
      s->type != onnx::kFloat)
    return std::nullopt;
  const int64_t K = w->shape[0], N = w->shape[1];
  const bool per_column = s->numel() == static_cast<size_t>(N) && N > 1;
  if ((s->numel() != 1 && !per_column) || (per_column && d.axis != 1 && d.axis != -1) ||
      (z && z->numel() != s->numel()))
    return std::nullopt;
  auto x = vals_.find(xq.x);
  if (x == vals_.end() || x->second.is_const || x->second.desc.rank() < 1 ||
      x->second.desc.shape.back() != K)
    return std::nullopt;
  return int8_matmul_weights(*w, z, *s);
}

std::optional<Int8MatMulWeights> int8_matmul_weights(const HostTensor& w,
                                                     const HostTensor* zero_point,
                                                     const HostTensor& scale, size_t* bad) {
  const int64_t K = w.shape[0], N = w.shape[1];
  Int8MatMulWeights out{HostTensor::make(onnx::kFloat, {K, N}),
                        HostTensor::make(onnx::kFloat, {static_cast<int64_t>(scale.numel())})};
  const bool per_column = zero_point && zero_point->numel() != 1;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      const auto e = static_cast<size_t>(k * N + j);
      const int64_t v =
          w.i[e] - (zero_point ? zero_point->i[per_column ? static_cast<size_t>(j) : 0] : 0);
      if (v < -128 || v > 127) {
        if (bad) *bad = e;
        return std::nullopt;
      }
      out.w.f[e] = static_cast<double>(v);
    }
  out.scale.f = scale.f;
  return out;
}

std::optional<Status> Importer::int8_qdq_matmul(NodeIn& io) {
  // MatMul(QuantizeDequantize(x) with an 8-bit range, DequantizeLinear(8-bit W) folded): the
  // product of the same integers, summed in int32 (Int8MatMul, ops/int8_matmul.cpp) instead of
  // the float32 one of their dequantized values. Anything else: the float MatMul.
  if (io.ins.size() != 2 || io.ins[0].empty() || io.ins[1].empty()) return std::nullopt;
  auto it = int8_weights_.find(io.ins[0] + "\n" + io.ins[1]);  // materialize_qdq_inputs's
  if (it == int8_weights_.end()) return std::nullopt;
  std::optional<Int8MatMulWeights> w = std::move(it->second);
  int8_weights_.erase(it);
  const PendingQuant& xq = lazy_qdq_.at(io.ins[0]).q;
  const DequantizedConstant& d = dequantized_constants_.at(io.ins[1]);
  Attributes a;
  a.set("x_scale", xq.scale);
  a.set("x_zero_point", xq.zero_point);
  a.set("qmin", xq.qmin);
  a.set("qmax", xq.qmax);
  return emit("Int8MatMul", io.name,
              {xq.x, add_const(d.q + "_int8", std::move(w->w)),
               add_const(d.scale + "_scale", std::move(w->scale))},
              io.outs, std::move(a), io.where, &io.n);
}

}  // namespace graphi::graph::onnx_import
