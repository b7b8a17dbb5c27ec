// FusedConv activations (see conv_activation.h).
#include "ops/conv_activation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace graphi::ops {

namespace {

struct Named {
  const char* name;
  ConvActivation kind;
  size_t params;
};
constexpr Named kNamed[] = {
    {"Relu", ConvActivation::kRelu, 0},   {"LeakyRelu", ConvActivation::kLeakyRelu, 1},
    {"Clip", ConvActivation::kClip, 2},   {"Sigmoid", ConvActivation::kSigmoid, 0},
    {"Tanh", ConvActivation::kTanh, 0},   {"HardSigmoid", ConvActivation::kHardSigmoid, 2},
    {"Swish", ConvActivation::kSwish, 0}, {"HardSwish", ConvActivation::kHardSwish, 0},
    {"Gelu", ConvActivation::kGelu, 0},   {"GeluTanh", ConvActivation::kGeluTanh, 0},
};

}  // namespace

float ConvPostOp::apply(float x) const noexcept {
  switch (kind) {
    case ConvActivation::kNone:
      return x;
    case ConvActivation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case ConvActivation::kLeakyRelu:
      return x >= 0.0f ? x : alpha * x;
    case ConvActivation::kClip:
      return std::min(std::max(x, alpha), beta);
    case ConvActivation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case ConvActivation::kTanh:
      return std::tanh(x);
    case ConvActivation::kHardSigmoid:
      return std::clamp(alpha * x + beta, 0.0f, 1.0f);
    case ConvActivation::kSwish:
      return x / (1.0f + std::exp(-x));
    case ConvActivation::kHardSwish:
      return x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f);
    case ConvActivation::kGelu:
      return static_cast<float>(0.5 * x * (1.0 + std::erf(x * 0.70710678118654752)));
    case ConvActivation::kGeluTanh:
      return static_cast<float>(0.5 * x *
                                (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
  }
  return x;
}

std::string ConvPostOp::to_string() const {
  for (const Named& n : kNamed)
    if (n.kind == kind) {
      char buf[96];
      if (n.params == 1)
        std::snprintf(buf, sizeof buf, "%s(%g)", n.name, alpha);
      else if (n.params == 2)
        std::snprintf(buf, sizeof buf, "%s(%g,%g)", n.name, alpha, beta);
      else
        std::snprintf(buf, sizeof buf, "%s", n.name);
      return buf;
    }
  return "";
}

Result<ConvPostOp> conv_post_op(const graph::Node& node, const std::string& where,
                                const std::string& prefix) {
  const std::string act_attr = prefix + "activation", params_attr = prefix + "activation_params";
  GRAPHI_ASSIGN_OR_RETURN(std::string act, graph::attr_string(node.attrs, where, act_attr, ""));
  GRAPHI_ASSIGN_OR_RETURN(std::vector<double> params,
                          graph::attr_floats(node.attrs, where, params_attr, {}));
  ConvPostOp p;
  if (act.empty()) {
    if (!params.empty())
      return Status::invalid_graph(where + ": attribute '" + params_attr + "' without '" +
                                   act_attr + "'");
    return p;
  }
  const Named* found = nullptr;
  for (const Named& n : kNamed)
    if (act == n.name) found = &n;
  if (!found)
    return Status::unsupported(where + ": attribute '" + act_attr + "' = '" + act +
                               "' is not supported (Relu, LeakyRelu, Clip, Sigmoid, Tanh, "
                               "HardSigmoid, Swish, HardSwish, Gelu, GeluTanh)");
  if (params.size() != found->params)
    return Status::invalid_graph(where + ": activation " + act + " takes " +
                                 std::to_string(found->params) + " '" + params_attr + "', got " +
                                 std::to_string(params.size()));
  p.kind = found->kind;
  if (!params.empty()) p.alpha = static_cast<float>(params[0]);
  if (params.size() > 1) p.beta = static_cast<float>(params[1]);
  if (p.kind == ConvActivation::kClip && !(p.alpha <= p.beta))
    return Status::invalid_graph(where + ": Clip activation needs min <= max, got " +
                                 p.to_string());
  return p;
}

}  // namespace graphi::ops
