#include "graph/passes/conv_fusion.h"

#include <cmath>
#include <limits>
#include <optional>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

namespace {

// The activation a node applies to its input 0, as FusedConv's attributes; nullopt for any
// other node (or a Clip whose bounds are not constants).
struct Activation {
  std::string name;
  std::vector<double> params;
};

// One float of a constant scalar input i of n, or `dflt` when the input is absent.
std::optional<double> const_scalar(const Graph& g, const Node& n, size_t i, double dflt) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoId) return dflt;
  const Value& v = g.value(n.inputs[i]);
  if (!v.data || v.data->dtype() != DType::kF32 || v.data->numel() != 1) return std::nullopt;
  return static_cast<double>(v.data->data_as<float>()[0]);
}

std::optional<Activation> activation_of(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
  if (n.op == "Relu" || n.op == "Sigmoid" || n.op == "Tanh")
    return n.inputs.size() == 1 ? std::optional<Activation>(Activation{n.op, {}}) : std::nullopt;
  if (n.op == "LeakyRelu") {
    auto alpha = attr_float(n.attrs, n.name, "alpha", 0.01);
    if (!alpha.is_ok()) return std::nullopt;
    return Activation{"LeakyRelu", {*alpha}};
  }
  if (n.op == "HardSigmoid") {
    auto alpha = attr_float(n.attrs, n.name, "alpha", 0.2);
    auto beta = attr_float(n.attrs, n.name, "beta", 0.5);
    if (!alpha.is_ok() || !beta.is_ok()) return std::nullopt;
    return Activation{"HardSigmoid", {*alpha, *beta}};
  }
  if (n.op == "Clip") {
    // Opset >= 11: bounds as (optional) inputs; before: attributes min / max.
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::optional<double> lo = const_scalar(g, n, 1, -kInf), hi = const_scalar(g, n, 2, kInf);
    if (n.inputs.size() == 1) {
      auto a = attr_float(n.attrs, n.name, "min", -kInf);
      auto b = attr_float(n.attrs, n.name, "max", kInf);
      if (!a.is_ok() || !b.is_ok()) return std::nullopt;
      lo = *a;
      hi = *b;
    }
    if (!lo || !hi || !(*lo <= *hi)) return std::nullopt;
    // oneDNN's clip takes finite float bounds.
    const double fmax = std::numeric_limits<float>::max();
    return Activation{"Clip", {std::max(*lo, -fmax), std::min(*hi, fmax)}};
  }
  return std::nullopt;
}

}  // namespace

Result<ConvFusionResult> fuse_conv_activations(const Graph& g, const ShapeInferencer& shapes) {
  ConvFusionResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& conv = g.node(id);
    if (conv.op != "Conv" || conv.outputs.size() != 1) continue;
    const ValueId y = conv.outputs[0];
    if (g.value(y).is_output) continue;
    const auto readers = g.consumers(y);
    std::optional<Activation> act;
    std::vector<NodeId> removed;
    ValueId out = kNoId;
    if (readers.size() == 1) {
      const Node& a = g.node(readers[0]);
      act = activation_of(g, a);
      if (act && a.inputs[0] == y) {
        removed = {readers[0]};
        out = a.outputs[0];
      } else {
        act.reset();
      }
    } else if (readers.size() == 2) {
      // y * Sigmoid(y) (Swish) or y * HardSigmoid(y) with alpha 1/6, beta 1/2 (HardSwish).
      for (int k = 0; k < 2 && !act; ++k) {
        const Node& gate = g.node(readers[static_cast<size_t>(k)]);
        const Node& mul = g.node(readers[static_cast<size_t>(1 - k)]);
        std::optional<Activation> ga = activation_of(g, gate);
        if (!ga || gate.inputs[0] != y || mul.op != "Mul" || mul.inputs.size() != 2 ||
            mul.outputs.size() != 1)
          continue;
        const ValueId s = gate.outputs[0];
        if (g.value(s).is_output || g.consumers(s).size() != 1 ||
            !((mul.inputs[0] == y && mul.inputs[1] == s) ||
              (mul.inputs[0] == s && mul.inputs[1] == y)))
          continue;
        if (ga->name == "Sigmoid") {
          act = Activation{"Swish", {}};
        } else if (ga->name == "HardSigmoid" && std::abs(ga->params[0] - 1.0 / 6.0) < 1e-6 &&
                   std::abs(ga->params[1] - 0.5) < 1e-6) {
          act = Activation{"HardSwish", {}};
        } else {
          continue;
        }
        removed = {readers[static_cast<size_t>(k)], readers[static_cast<size_t>(1 - k)]};
        out = mul.outputs[0];
      }
    }
    if (!act) continue;
    rw.remove(id);
    for (NodeId r : removed) rw.remove(r);
    Attributes attrs = conv.attrs;
    attrs.set("activation", act->name);
    if (!act->params.empty()) attrs.set("activation_params", act->params);
    std::vector<std::string> inputs;
    for (ValueId v : conv.inputs) inputs.push_back(v == kNoId ? "" : g.value(v).name);
    rw.add_node("FusedConv", conv.name, inputs, {g.value(out).name}, attrs);
    ++result.fused;
  }
  if (result.fused == 0) {
    result.graph = g;
    return result;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  return result;
}

}  // namespace graphi::graph::passes
