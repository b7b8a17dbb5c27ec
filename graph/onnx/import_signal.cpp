// ONNX import, signal ops. graphi's DFT op has DFT-17's interface (axis an attribute, default
// 1); DFT-20 (opset >= 20) gives the axis as optional input 2 (default -2, the last signal
// axis), which must be known at import time (it sets the output's shape) and becomes the
// attribute. STFT and MelWeightMatrix map one to one (ops/signal_ops.cpp); the window ops and a
// MelWeightMatrix of constants fold at import (graph/onnx/onnx_fold_signal.cpp).
#include <string>
#include <vector>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

std::optional<Status> Importer::translate_signal(NodeIn& io) {
  const onnx::Node& n = io.n;
  if (n.op != "DFT" || opset_ < 20) return std::nullopt;
  const std::string& where = io.where;
  if (n.attr("axis"))
    return Status::invalid_graph(where + ": attribute 'axis' is DFT-17's; from opset 20 on the " +
                                 "axis is input 2");
  int64_t axis = -2;
  if (io.ins.size() > 2 && !io.ins[2].empty()) {
    const HostTensor* a = host(io.ins[2]);
    if (!a)
      return Status::unsupported(where + ": input 2 (axis) '" + io.ins[2] +
                                 "' is computed at run time; graphi needs it at import time " +
                                 "(it sets the output's shape)");
    if (a->is_float() || a->numel() != 1 || a->shape.size() > 1)
      return Status::invalid_graph(where + ": input 2 (axis) must be an integer scalar, got " +
                                   a->desc());
    axis = a->i[0];
  }
  GRAPHI_ASSIGN_OR_RETURN(Attributes attrs, convert_attrs(n, where));
  attrs.set("axis", axis);
  std::vector<std::string> ins(io.ins.begin(), io.ins.begin() + std::min<size_t>(2, io.ins.size()));
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  return emit("DFT", io.name, ins, io.outs, std::move(attrs), where, &n);
}

}  // namespace graphi::graph::onnx_import
