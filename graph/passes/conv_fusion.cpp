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
  if (n.op == "Gelu" && n.inputs.size() == 1) {
    // FastViT's / ConvNeXt-style ConvMlp: conv 1x1, GELU, conv 1x1 (gelu_fusion made it Gelu).
    auto approx = attr_string(n.attrs, n.name, "approximate", "none");
    if (!approx.is_ok() || (*approx != "none" && *approx != "tanh")) return std::nullopt;
    return Activation{*approx == "tanh" ? "GeluTanh" : "Gelu", {}};
  }
  if (n.op == "Clip") {
    const auto bounds = clip_bounds(g, n);
    if (!bounds) return std::nullopt;
    // oneDNN's clip takes finite float bounds.
    const double fmax = std::numeric_limits<float>::max();
    return Activation{"Clip", {std::max(bounds->first, -fmax), std::min(bounds->second, fmax)}};
  }
  return std::nullopt;
}

// The per-output-channel values of constant c as read by a binary op with a conv output of `oc`
// channels and `rank` dims ([N, oc, H, W], or [N, oc, D, H, W] for Conv3D): one value for all (a
// scalar), or oc values along dim 1 ([oc, 1, 1], [1, oc, 1, 1]; [oc, 1, 1, 1], ...); empty when
// c is not such a constant.
std::vector<float> channel_constant(const Value& c, int64_t oc, size_t rank) {
  if (!c.data || c.data->dtype() != DType::kF32) return {};
  const Shape& s = c.desc.shape;
  const int64_t n = c.desc.numel();
  const float* v = c.data->data_as<float>();
  if (n == 1 && s.size() <= rank) return std::vector<float>(static_cast<size_t>(oc), v[0]);
  if (n != oc || s.size() < rank - 1 || s.size() > rank) return {};
  for (size_t d = 0; d < s.size(); ++d)
    if (d != s.size() - (rank - 1) && s[d] != 1) return {};
  return std::vector<float>(v, v + n);
}

// Conv3D takes the activations oneDNN applies in registers (no exp-based one: graph/passes/
// conv_fusion.h; its kernel runs no vectorized pass after the primitive as FusedConv's does).
bool conv3d_takes(const std::string& activation) {
  return activation == "Relu" || activation == "LeakyRelu" || activation == "Clip" ||
         activation == "HardSigmoid";
}

// Conv (constant weights and bias) followed by per-channel constant Mul / Add / Sub nodes (the
// conv output read by that node only): folded into the conv's weights and bias, as an ONNX
// importer's inference BatchNormalization (Mul + Add) after a conv that the exporter did not
// fold, so the activation after it can then fuse too.
Result<Graph> fold_conv_affine(const Graph& g, const ShapeInferencer& shapes, int* folded) {
  Rewrite rw(g);
  int count = 0;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& conv = g.node(id);
    const bool vol = conv.op == "Conv3D";
    if ((conv.op != "Conv" && !vol) || conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    const Value& wv = g.value(conv.inputs[1]);
    const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoId;
    const size_t rank = vol ? 5 : 4;
    if (!wv.data || wv.data->dtype() != DType::kF32 || static_cast<size_t>(wv.desc.rank()) != rank)
      continue;
    if (has_bias && !g.value(conv.inputs[2]).data) continue;
    const int64_t oc = wv.desc.shape[0];
    std::vector<double> scale(static_cast<size_t>(oc), 1.0), shift(static_cast<size_t>(oc), 0.0);
    ValueId y = conv.outputs[0];
    std::vector<NodeId> chain;
    for (;;) {
      if (g.value(y).is_output || g.consumers(y).size() != 1) break;
      const NodeId rid = g.consumers(y)[0];
      const Node& r = g.node(rid);
      if ((r.op != "Mul" && r.op != "Add" && r.op != "Sub") || r.inputs.size() != 2 ||
          r.outputs.size() != 1 || g.value(r.outputs[0]).desc != g.value(y).desc)
        break;
      const int k = r.inputs[0] == y ? 1 : 0;  // the other operand
      if (r.inputs[1 - k] != y || r.inputs[k] == y) break;
      const std::vector<float> c = channel_constant(g.value(r.inputs[k]), oc, rank);
      if (c.empty() || (r.op == "Sub" && k == 0)) break;  // c - y is not an affine of y here
      for (int64_t o = 0; o < oc; ++o) {
        const double v = c[static_cast<size_t>(o)];
        if (r.op == "Mul") {
          scale[o] *= v;
          shift[o] *= v;
        } else {
          shift[o] += r.op == "Add" ? v : -v;
        }
      }
      chain.push_back(rid);
      y = r.outputs[0];
    }
    if (chain.empty()) continue;
    Tensor w(wv.desc), b(TensorDesc{DType::kF32, {oc}});
    const int64_t per = wv.desc.numel() / oc;
    const float* w0 = wv.data->data_as<float>();
    const float* b0 = has_bias ? g.value(conv.inputs[2]).data->data_as<float>() : nullptr;
    for (int64_t o = 0; o < oc; ++o) {
      for (int64_t i = 0; i < per; ++i)
        w.data_as<float>()[o * per + i] = static_cast<float>(w0[o * per + i] * scale[o]);
      b.data_as<float>()[o] = static_cast<float>((b0 ? b0[o] : 0.0) * scale[o] + shift[o]);
    }
    const std::string wn = rw.fresh(conv.name + "/w_folded"),
                      bn = rw.fresh(conv.name + "/b_folded");
    rw.add_constant(wn, std::move(w));
    rw.add_constant(bn, std::move(b));
    rw.remove(id);
    for (NodeId r : chain) rw.remove(r);
    rw.add_node(conv.op, conv.name, {g.value(conv.inputs[0]).name, wn, bn}, {g.value(y).name},
                conv.attrs);
    ++count;
  }
  *folded = count;
  if (count == 0) return g;
  return rw.finish(shapes);
}

}  // namespace

Result<ConvFusionResult> fuse_conv_activations(const Graph& g0, const ShapeInferencer& shapes) {
  ConvFusionResult result;
  GRAPHI_ASSIGN_OR_RETURN(Graph folded, fold_conv_affine(g0, shapes, &result.affine_folded));
  const Graph& g = result.affine_folded > 0 ? folded : g0;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& conv = g.node(id);
    const bool vol = conv.op == "Conv3D";  // keeps its op, with the activation attributes
    if ((conv.op != "Conv" && !vol) || conv.outputs.size() != 1) continue;
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
    if (!act || (vol && !conv3d_takes(act->name))) continue;
    rw.remove(id);
    for (NodeId r : removed) rw.remove(r);
    Attributes attrs = conv.attrs;
    attrs.set("activation", act->name);
    if (!act->params.empty()) attrs.set("activation_params", act->params);
    std::vector<std::string> inputs;
    for (ValueId v : conv.inputs) inputs.push_back(v == kNoId ? "" : g.value(v).name);
    rw.add_node(vol ? "Conv3D" : "FusedConv", conv.name, inputs, {g.value(out).name}, attrs);
    ++result.fused;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

Result<ConvSumFusionResult> fuse_conv_sums(const Graph& g, const ShapeInferencer& shapes) {
  ConvSumFusionResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& conv = g.node(id);
    // 2-D blocked convs, and 3-D ones on channels-last tensors.
    if ((conv.op != "BlockedConv" && conv.op != "Conv3DNdhwc") || conv.outputs.size() != 1 ||
        conv.inputs.size() > 3)
      continue;
    // A conv with its activation already (DarkNet's and YOLO's conv + BN + LeakyReLU / SiLU,
    // then the residual Add): Z is added after the activation, and nothing more is fused.
    const bool after_activation = conv.attrs.has("activation");
    if (after_activation && conv.op != "BlockedConv") continue;
    const ValueId y = conv.outputs[0];
    // y's only reader is the Add, so Z cannot depend on y: no cycle.
    if (g.value(y).is_output || g.consumers(y).size() != 1) continue;
    const NodeId add_id = g.consumers(y)[0];
    const Node& add = g.node(add_id);
    // rw.removed: both operands are such convs (ResNet's down-sampling shortcut); one takes it.
    if (rw.removed(add_id) || add.op != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1)
      continue;
    const ValueId z = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
    if (z == y || z == kNoId || g.value(z).desc != g.value(y).desc ||
        g.value(add.outputs[0]).desc != g.value(y).desc)
      continue;
    ValueId out = add.outputs[0];
    std::vector<NodeId> removed = {id, add_id};
    std::optional<Activation> act;
    if (!after_activation && !g.value(out).is_output && g.consumers(out).size() == 1) {
      const Node& a = g.node(g.consumers(out)[0]);
      act = activation_of(g, a);
      if (act && a.inputs[0] == out && g.value(a.outputs[0]).desc == g.value(y).desc) {
        removed.push_back(g.consumers(out)[0]);
        out = a.outputs[0];
      } else {
        act.reset();
      }
    }
    for (NodeId r : removed) rw.remove(r);
    Attributes attrs = conv.attrs;
    if (after_activation) {
      attrs.set("sum_after_activation", int64_t{1});
      ++result.after_activation;
    }
    if (act) {
      attrs.set("activation", act->name);
      if (!act->params.empty()) attrs.set("activation_params", act->params);
    }
    std::vector<std::string> inputs;
    for (ValueId v : conv.inputs) inputs.push_back(v == kNoId ? "" : g.value(v).name);
    inputs.resize(3);  // an absent bias is ""
    inputs.push_back(g.value(z).name);
    rw.add_node(conv.op, conv.name, inputs, {g.value(out).name}, attrs);
    ++result.fused;
    if (act) ++result.activations;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

namespace {

// ints attribute `name` of n equals `want` (absent: equals `absent`).
bool ints_are(const Node& n, const char* name, const std::vector<int64_t>& absent,
              const std::vector<int64_t>& want) {
  auto v = attr_ints(n.attrs, n.name, name, absent);
  return v.is_ok() && *v == want;
}

bool no_auto_pad(const Node& n) {
  auto a = attr_string(n.attrs, n.name, "auto_pad", "NOTSET");
  return a.is_ok() && *a == "NOTSET";
}

bool is_constant(const Graph& g, ValueId v) { return v != kNoId && g.value(v).data != nullptr; }

}  // namespace

Result<ConvDepthwiseFusionResult> fuse_conv_depthwise(const Graph& g,
                                                      const ShapeInferencer& shapes) {
  ConvDepthwiseFusionResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& pw = g.node(id);
    if (pw.op != "BlockedConv" || pw.outputs.size() != 1 || pw.inputs.size() < 2 ||
        pw.inputs.size() > 3 || !is_constant(g, pw.inputs[1]))
      continue;
    const Shape& w = g.value(pw.inputs[1]).desc.shape;
    if (w.size() != 4 || w[2] != 1 || w[3] != 1 || !no_auto_pad(pw) ||
        !ints_are(pw, "strides", {1, 1}, {1, 1}) ||
        !ints_are(pw, "pads", {0, 0, 0, 0}, {0, 0, 0, 0}) ||
        !ints_are(pw, "dilations", {1, 1}, {1, 1}))
      continue;
    auto group = attr_int(pw.attrs, pw.name, "group", 1);
    auto act = attr_string(pw.attrs, pw.name, "activation", "");
    if (!group.is_ok() || *group != 1 || !act.is_ok() || *act == "Sigmoid" || *act == "Tanh" ||
        *act == "Swish")
      continue;
    const ValueId y = pw.outputs[0];
    if (g.value(y).is_output || g.consumers(y).size() != 1) continue;
    const Node& dw = g.node(g.consumers(y)[0]);
    const int64_t m = w[0];
    if (dw.op != "BlockedConv" || dw.outputs.size() != 1 || dw.inputs.size() < 2 ||
        dw.inputs.size() > 3 || dw.inputs[0] != y || !is_constant(g, dw.inputs[1]) ||
        (dw.inputs.size() == 3 && dw.inputs[2] != kNoId && !is_constant(g, dw.inputs[2])) ||
        g.value(dw.inputs[1]).desc.shape != Shape{m, 1, 3, 3} || !no_auto_pad(dw) ||
        !ints_are(dw, "pads", {0, 0, 0, 0}, {1, 1, 1, 1}) ||
        !ints_are(dw, "dilations", {1, 1}, {1, 1}))
      continue;
    auto dw_group = attr_int(dw.attrs, dw.name, "group", 1);
    auto strides = attr_ints(dw.attrs, dw.name, "strides", {1, 1});
    auto block = attr_int(pw.attrs, pw.name, "block", 0);
    auto dw_block = attr_int(dw.attrs, dw.name, "block", 0);
    if (!dw_group.is_ok() || *dw_group != m || !strides.is_ok() ||
        (*strides != std::vector<int64_t>{1, 1} && *strides != std::vector<int64_t>{2, 2}) ||
        !block.is_ok() || !dw_block.is_ok() || *block != *dw_block)
      continue;
    rw.remove(id);
    rw.remove(g.consumers(y)[0]);
    Attributes attrs = pw.attrs;
    attrs.set("dw_strides", *strides);
    if (const Attribute* a = dw.attrs.find("activation")) attrs.set("dw_activation", *a);
    if (const Attribute* a = dw.attrs.find("activation_params"))
      attrs.set("dw_activation_params", *a);
    auto name_of = [&](const std::vector<ValueId>& in, size_t i) {
      return i < in.size() && in[i] != kNoId ? g.value(in[i]).name : std::string();
    };
    rw.add_node("BlockedConvDw", pw.name,
                {name_of(pw.inputs, 0), name_of(pw.inputs, 1), name_of(pw.inputs, 2),
                 name_of(dw.inputs, 1), name_of(dw.inputs, 2)},
                {g.value(dw.outputs[0]).name}, attrs);
    ++result.fused;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

Result<ConvInputScaleResult> fuse_conv_input_scale(const Graph& g, const ShapeInferencer& shapes) {
  ConvInputScaleResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& mul = g.node(id);
    if (mul.op != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1 ||
        mul.inputs[0] == kNoId || mul.inputs[1] == kNoId)
      continue;
    const ValueId y = mul.outputs[0];
    const Shape& ys = g.value(y).desc.shape;
    if (g.value(y).desc.dtype != DType::kF32 || ys.size() != 5) continue;
    // X has the product's shape, S one scale per image and channel; either order.
    const Shape per_channel{ys[0], ys[1], 1, 1, ys[4]};
    int xi = -1;
    for (int k = 0; k < 2; ++k)
      if (g.value(mul.inputs[k]).desc.shape == ys &&
          g.value(mul.inputs[1 - k]).desc.shape == per_channel &&
          g.value(mul.inputs[1 - k]).desc.dtype == DType::kF32 &&
          !is_constant(g, mul.inputs[1 - k]))
        xi = k;
    if (xi < 0 || g.value(y).is_output) continue;
    const NodeId ci = sole_reader(g, y);
    if (ci == kNoId) continue;
    const Node& conv = g.node(ci);
    if (conv.op != "BlockedConv" || conv.outputs.size() != 1 || conv.inputs.size() < 2 ||
        conv.inputs.size() > 4 || conv.inputs[0] != y || !is_constant(g, conv.inputs[1]))
      continue;
    const Shape& w = g.value(conv.inputs[1]).desc.shape;
    auto group = attr_int(conv.attrs, conv.name, "group", 1);
    auto block = attr_int(conv.attrs, conv.name, "block", 0);
    if (w.size() != 4 || w[2] != 1 || w[3] != 1 || !group.is_ok() || *group != 1 ||
        !block.is_ok() || *block != ys[4] || !no_auto_pad(conv) ||
        !ints_are(conv, "pads", {0, 0, 0, 0}, {0, 0, 0, 0}))
      continue;
    // Scaling M x C weights per image each run against the Mul's pass over X. Measured
    // (EfficientNet-like b1, 2 threads): a clear win at 56x56 and up (the Mul took 20-70 us, the
    // conv grew 2-10); at 14x14, where the weights are 1/2 to 1/1.2 of X, the conv grew as much as
    // the Mul took (its input, read by the pool long before, comes colder than the Mul's fresh
    // product).
    if (8 * w[0] * w[1] > ys[1] * ys[2] * ys[3] * ys[4]) continue;
    auto name_of = [&](size_t i) {
      return i < conv.inputs.size() && conv.inputs[i] != kNoId ? g.value(conv.inputs[i]).name
                                                               : std::string();
    };
    rw.remove(id);
    rw.remove(ci);
    rw.add_node("BlockedConvScaled", conv.name,
                {g.value(mul.inputs[xi]).name, name_of(1), name_of(2), name_of(3),
                 g.value(mul.inputs[1 - xi]).name},
                {g.value(conv.outputs[0]).name}, conv.attrs);
    ++result.fused;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

}  // namespace graphi::graph::passes
