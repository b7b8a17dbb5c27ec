// The activation a FusedConv applies to its output (graph/passes/conv_fusion.h makes them):
// attribute `activation` (ONNX Runtime's contrib FusedConv names Relu, LeakyRelu, Clip, Sigmoid,
// Tanh, HardSigmoid, plus graphi's Swish = x * sigmoid(x), HardSwish, and the Gelu / GeluTanh
// of MatMulBias, graph/passes/matmul_epilogue.h) and `activation_params`
// (LeakyRelu: alpha; Clip: min, max; HardSigmoid: alpha, beta; the others none). oneDNN applies
// it as an eltwise post-op; apply() is the same function for the reference kernel and tests.
#pragma once

#include <string>

#include "graph/base.h"
#include "graph/graph.h"

namespace graphi::ops {

enum class ConvActivation {
  kNone,
  kRelu,
  kLeakyRelu,
  kClip,
  kSigmoid,
  kTanh,
  kHardSigmoid,
  kSwish,
  kHardSwish,
  kGelu,     // x (1 + erf(x / sqrt 2)) / 2: MatMulBias (graph/passes/matmul_epilogue.h)
  kGeluTanh  // x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2
};

struct ConvPostOp {
  ConvActivation kind = ConvActivation::kNone;
  float alpha = 0, beta = 0;  // LeakyRelu slope; Clip min / max; HardSigmoid alpha / beta
  float apply(float x) const noexcept;
  std::string to_string() const;  // "Relu", "Clip(0,6)", ...: for kernel descriptions and keys
  bool operator==(const ConvPostOp&) const = default;
};

// The node's activation attributes, checked (an unknown name or a wrong parameter count is an
// error naming the node and the field). `prefix`: the attributes prefix + "activation" and
// prefix + "activation_params" (BlockedConvDw's depthwise conv: "dw_").
Result<ConvPostOp> conv_post_op(const graph::Node& node, const std::string& where,
                                const std::string& prefix = "");

}  // namespace graphi::ops
