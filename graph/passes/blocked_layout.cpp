#include "graph/passes/blocked_layout.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

bool f32_4d(const Value& v) { return v.desc.dtype == DType::kF32 && v.desc.rank() == 4; }
bool f32_5d(const Value& v) { return v.desc.dtype == DType::kF32 && v.desc.rank() == 5; }

// A pool with dilations other than 1. A dilated AveragePool stays NCHW: its blocked variant is
// oneDNN's alone, which has only its reference code for dilated windows (ops/conv_pool.cpp).
bool dilated(const Node& n) {
  auto d = attr_ints(n.attrs, n.name, "dilations", {1, 1});
  return !d.is_ok() || std::any_of(d->begin(), d->end(), [](int64_t v) { return v != 1; });
}

std::string tag(int64_t b) { return "/nChw" + std::to_string(b) + "c"; }

// 3-D values held channels-last: their entry in the pass's block map, and their name's suffix.
constexpr int64_t kNdhwc = -1;
const char* const kNdhwcTag = "/ndhwc";
const std::vector<int64_t> kToNdhwc = {0, 2, 3, 4, 1}, kToNcdhw = {0, 4, 1, 2, 3};

// Element-wise unary ops (elementwise_unary_op) are layout-agnostic: they run on the 5-D blocked
// tensor as they are, padding lanes included.
bool layout_agnostic_binary(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

// Padded blocked values (C no multiple of B) keep their padding lanes zero, as oneDNN keeps
// its own padded memory (every primitive zeroes the padding of its output): an op that stays
// on them must map 0 to 0 (so Sigmoid, HardSigmoid, Softplus, Exp and a Clip above 0 go back to
// NCHW), and no Div (0 / 0).
bool keeps_zero(const Graph& g, const Node& n) {
  if (n.op == "Relu" || n.op == "Tanh" || n.op == "LeakyRelu" || n.op == "Elu" || n.op == "Selu" ||
      n.op == "Softsign" || n.op == "Neg" || n.op == "Abs" || n.op == "Sqrt" || n.op == "Erf" ||
      n.op == "Gelu" || n.op == "Add" || n.op == "Sub" || n.op == "Mul" ||
      n.op == "QuantizeDequantize" ||  // zero_point lies in the range: 0 -> 0
      n.op == "DynamicQuantizeDequantize")
    return true;
  if (n.op != "Clip") return false;
  const auto bounds = clip_bounds(g, n);
  return bounds && bounds->first <= 0.0 && bounds->second >= 0.0;
}

// A float constant with one value per channel of the NCHW y (pass_util's per_channel_constant:
// an imported inference BatchNormalization's scale and shift, DenseNet's pre-activation).
bool channel_constant(const Value& v, const Value& y) {
  return f32_4d(y) && per_channel_constant(v, y.desc.shape);
}

// The same for an NCDHW y: [1, C, 1, 1, 1] or [C, 1, 1, 1] (a 3-D pre-activation BatchNorm),
// held beside the channels-last y as the same floats shaped [1, 1, 1, 1, C].
bool ndhwc_constant(const Value& v, const Value& y) {
  if (!v.data || v.desc.dtype != DType::kF32 || !f32_5d(y)) return false;
  const Shape& s = v.desc.shape;
  const int64_t c = y.desc.shape[1];
  return s == Shape{1, c, 1, 1, 1} || s == Shape{c, 1, 1, 1};
}

// An operand of a binary op whose output is y that the blocked layout can hold: y's shape, or one
// value per channel ([N or 1, C, 1, 1]: squeeze-excitation's gate, a per-channel scale; or a
// channel_constant), which broadcasts over the 5-D blocked tensor as [N, C/B, 1, 1, B]. The
// same for 3-D ([N or 1, C, 1, 1, 1], as [N or 1, 1, 1, 1, C] beside a channels-last tensor),
// with ndhwc_constant and scalar operands too.
bool channel_operand(const Value& v, const Value& y) {
  if (channel_constant(v, y)) return true;
  if ((y.desc.rank() == 4 || y.desc.rank() == 5) && v.data && v.desc.numel() == 1 &&
      v.desc.dtype == DType::kF32)
    return true;  // a scalar constant (a learnable scale: HGNetV2's, LayerScale's)
  if (y.desc.rank() == 5 && ndhwc_constant(v, y)) return true;
  const int r = y.desc.rank();
  if (v.desc.dtype != DType::kF32 || y.desc.dtype != DType::kF32 || (r != 4 && r != 5) ||
      v.desc.rank() != r)
    return false;
  const Shape& s = v.desc.shape;
  const Shape& t = y.desc.shape;
  if (s == t) return true;
  if (s[1] != t[1] || (s[0] != 1 && s[0] != t[0])) return false;
  return std::all_of(s.begin() + 2, s.end(), [](int64_t d) { return d == 1; });
}

// A ConvTranspose3D the channels-last kernel (oneDNN's deconvolution) takes: constant f32
// weights, group 1, output_padding within the end pads.
bool blockable_deconv3d(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs[1] == kNoId) return false;
  const Value& w = g.value(n.inputs[1]);
  if (!w.data || !f32_5d(w)) return false;
  auto group = attr_int(n.attrs, n.name, "group", 1);
  auto pads = attr_ints(n.attrs, n.name, "pads", std::vector<int64_t>(6, 0));
  auto out_pad = attr_ints(n.attrs, n.name, "output_padding", std::vector<int64_t>(3, 0));
  if (!group.is_ok() || *group != 1 || !pads.is_ok() || pads->size() != 6 || !out_pad.is_ok() ||
      out_pad->size() != 3 || n.attrs.has("output_shape"))
    return false;
  for (size_t a = 0; a < 3; ++a)
    if ((*out_pad)[a] > (*pads)[a + 3]) return false;
  return true;
}

// A ConvTranspose whose kernel equals its strides, without pads, dilations, output_padding or
// groups, with constant weights and bias (a U-Net / FCN up-sampler): BlockedConvTranspose.
bool patch_upsampler(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs[1] == kNoId) return false;
  const Value& w = g.value(n.inputs[1]);
  if (!w.data || w.desc.dtype != DType::kF32 || w.desc.rank() != 4) return false;
  if (n.inputs.size() > 2 && n.inputs[2] != kNoId && !g.value(n.inputs[2]).data) return false;
  const std::vector<int64_t> k = {w.desc.shape[2], w.desc.shape[3]};
  auto attr_is = [&](const char* name, std::vector<int64_t> dflt,
                     const std::vector<int64_t>& want) {
    auto a = attr_ints(n.attrs, n.name, name, std::move(dflt));
    return a.is_ok() && *a == want;
  };
  auto group = attr_int(n.attrs, n.name, "group", 1);
  auto auto_pad = attr_string(n.attrs, n.name, "auto_pad", "NOTSET");
  return group.is_ok() && *group == 1 && auto_pad.is_ok() && *auto_pad == "NOTSET" &&
         !n.attrs.has("output_shape") && attr_is("strides", {1, 1}, k) &&
         attr_is("pads", {0, 0, 0, 0}, {0, 0, 0, 0}) && attr_is("dilations", {1, 1}, {1, 1}) &&
         attr_is("output_padding", {0, 0}, {0, 0});
}

// A ReduceMean over axes 2 and 3 of a 4-D value with keepdims = 1: the axes as the attribute
// (opset < 18) or a constant input 1 (opset 18's form, as PyTorch's dynamo exporter writes a
// squeeze-excitation's pool).
bool spatial_mean(const Graph& g, const Node& n) {
  auto keep = attr_int(n.attrs, n.name, "keepdims", 1);
  if (!keep.is_ok() || *keep != 1) return false;
  auto axes = reduction_axes(g, n);
  if (!axes || axes->size() != 2) return false;
  std::vector<int64_t> a = *axes;
  for (int64_t& v : a) v = v < 0 ? v + 4 : v;
  std::sort(a.begin(), a.end());
  return a == std::vector<int64_t>{2, 3};
}

// An Add or Sub of a non-zero scalar constant: it would turn padding lanes non-zero.
bool shifts_padding(const Graph& g, const Node& n) {
  if (n.op != "Add" && n.op != "Sub") return false;
  for (ValueId v : n.inputs) {
    const std::optional<double> c = float_scalar(g, v);
    if (c && *c != 0.0) return true;
  }
  return false;
}

// A scalar operand (Clip's min / max): rank 0 or one element.
bool scalar(const Value& v) { return v.desc.numel() == 1; }

// One rewrite. `reordered`: the "value/nChwBc" keys of plain values some node reads blocked
// (from a first rewrite), so that a pool of such a value can read the reordered copy whatever
// the node order; `keys` gets this rewrite's.
Result<BlockedLayoutResult> rewrite(const Graph& g, const ShapeInferencer& shapes, int64_t b,
                                    bool ndhwc, const std::unordered_set<std::string>& reordered,
                                    std::unordered_set<std::string>* keys) {
  BlockedLayoutResult result;
  Rewrite rw(g);
  std::unordered_map<ValueId, int64_t> block;               // blocked values -> B or kNdhwc
  std::unordered_map<ValueId, std::string> bname;           // ... -> the blocked tensor's name
  std::unordered_map<std::string, std::string> to_blocked;  // "plain/nChwBc" -> ToBlocked output
  std::unordered_set<ValueId> needs_plain;  // blocked values an added node reads in NCHW
  auto is_blocked = [&](ValueId v, int64_t want) {
    auto it = block.find(v);
    return it != block.end() && (want == 0 || it->second == want);
  };
  // Blocked with padding lanes: C no multiple of the block (channels-last has none).
  auto padded = [&](ValueId v) {
    return g.value(v).desc.rank() == 4 && g.value(v).desc.shape[1] % b != 0;
  };
  auto plain_name = [&](ValueId v) {
    if (block.count(v)) needs_plain.insert(v);
    return g.value(v).name;
  };
  // The blocked version of v: v itself, or one ToBlocked per value (zero padding lanes); for a
  // 5-D v one Transpose to channels-last.
  auto blocked_input = [&](ValueId v) -> std::string {
    if (is_blocked(v, 0)) return bname.at(v);
    const bool vol = g.value(v).desc.rank() == 5;
    const std::string suffix = vol ? kNdhwcTag : tag(b);
    const std::string key = g.value(v).name + suffix;
    auto it = to_blocked.find(key);
    if (it != to_blocked.end()) return it->second;
    const std::string out = rw.fresh(g.value(v).name + "/to" + suffix.substr(1));
    Attributes a;
    if (vol)
      a.set("perm", kToNdhwc);
    else
      a.set("block", b);
    rw.add_node(vol ? "Transpose" : "ToBlocked", rw.fresh(out + "/reorder"), {plain_name(v)}, {out},
                a);
    ++result.reorders;
    to_blocked[key] = out;
    return out;
  };
  // A per-channel constant (channel_constant) as [1, ceil(C/B), 1, 1, B], zero padding lanes:
  // a new constant, one per value.
  auto blocked_constant = [&](ValueId v) -> std::string {
    const std::string key = g.value(v).name + tag(b);
    auto it = to_blocked.find(key);
    if (it != to_blocked.end()) return it->second;
    const Value& cv = g.value(v);
    const int64_t c = cv.desc.numel(), cb = (c + b - 1) / b;
    Tensor t(TensorDesc{DType::kF32, {1, cb, 1, 1, b}});
    float* dst = t.data_as<float>();
    std::fill(dst, dst + cb * b, 0.0f);
    std::copy(cv.data->data_as<float>(), cv.data->data_as<float>() + c, dst);
    const std::string name = rw.fresh(cv.name + tag(b));
    rw.add_constant(name, std::move(t));
    to_blocked[key] = name;
    return name;
  };
  // An ndhwc_constant as [1, 1, 1, 1, C]: a new constant, one per value.
  auto ndhwc_constant_of = [&](ValueId v) -> std::string {
    const std::string key = g.value(v).name + kNdhwcTag;
    auto it = to_blocked.find(key);
    if (it != to_blocked.end()) return it->second;
    const Value& cv = g.value(v);
    Tensor t(TensorDesc{DType::kF32, {1, 1, 1, 1, cv.desc.numel()}});
    std::copy(cv.data->data_as<float>(), cv.data->data_as<float>() + cv.desc.numel(),
              t.data_as<float>());
    const std::string name = rw.fresh(cv.name + kNdhwcTag);
    rw.add_constant(name, std::move(t));
    to_blocked[key] = name;
    return name;
  };
  auto make_blocked = [&](NodeId id, const std::string& op, std::vector<std::string> inputs,
                          Attributes attrs) {
    const Node& n = g.node(id);
    const ValueId y = n.outputs[0];
    const bool vol = g.value(y).desc.rank() == 5;
    block[y] = vol ? kNdhwc : b;
    bname[y] = rw.fresh(g.value(y).name + (vol ? std::string(kNdhwcTag) : tag(b)));
    rw.remove(id);
    rw.add_node(op, n.name, inputs, {bname[y]}, std::move(attrs));
    ++result.blocked_ops;
  };

  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op == "Split" && !n.inputs.empty() && n.inputs[0] != kNoId &&
        (n.inputs.size() == 1 ||  // else the sizes as a constant input 1 (opsets 13-17)
         (n.inputs.size() == 2 && (n.inputs[1] == kNoId || g.value(n.inputs[1]).data))) &&
        is_blocked(n.inputs[0], 0) && f32_4d(g.value(n.inputs[0])) && !padded(n.inputs[0])) {
      // A channel Split of a blocked value into whole blocks (conv_merge's Split after a wide
      // convolution, a gated activation's chunk(2, 1)) is a Split on axis 1 of the 5-D tensor,
      // in blocks. The sizes are the outputs' channels, however the Split gives them (its
      // `split` attribute or input, opset 18's `num_outputs`, equal parts).
      auto axis = attr_int(n.attrs, n.name, "axis", 0);
      std::vector<int64_t> blocks;
      for (ValueId y : n.outputs) {
        if (y == kNoId || !f32_4d(g.value(y)) || g.value(y).desc.shape[1] % b != 0) break;
        blocks.push_back(g.value(y).desc.shape[1] / b);
      }
      if (!axis.is_ok() || (*axis != 1 && *axis != -3) || blocks.size() != n.outputs.size())
        continue;
      std::vector<std::string> outs;
      for (ValueId y : n.outputs) {
        block[y] = b;
        bname[y] = rw.fresh(g.value(y).name + tag(b));
        outs.push_back(bname[y]);
      }
      Attributes a;
      a.set("axis", int64_t{1});
      a.set("split", blocks);
      rw.remove(id);
      rw.add_node("Split", n.name, {bname.at(n.inputs[0])}, outs, a);
      ++result.blocked_ops;
      continue;
    }
    if (n.op == "SplitSum" && n.inputs.size() == 1 && n.inputs[0] != kNoId &&
        is_blocked(n.inputs[0], 0) && f32_4d(g.value(n.inputs[0])) && n.outputs.size() == 1) {
      // Parts of whole blocks: the same sum over axis 1 of the 5-D tensor.
      auto axis = attr_int(n.attrs, n.name, "axis", 0);
      auto parts = attr_int(n.attrs, n.name, "parts", 1);
      const int64_t c = g.value(n.inputs[0]).desc.shape[1];
      if (!axis.is_ok() || (*axis != 1 && *axis != -3) || !parts.is_ok() || *parts < 1 ||
          c % *parts != 0 || (c / *parts) % b != 0)
        continue;
      Attributes a;
      a.set("axis", int64_t{1});
      a.set("parts", *parts);
      make_blocked(id, "SplitSum", {bname.at(n.inputs[0])}, a);
      continue;
    }
    if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == kNoId) continue;
    const ValueId x = n.inputs[0];
    const Value& xv = g.value(x);
    const Value& yv = g.value(n.outputs[0]);
    if (!f32_4d(yv) && !(ndhwc && f32_5d(yv))) continue;
    if (n.op == "Conv3D" && f32_5d(xv)) {
      // Group 1 (oneDNN's brgemm kernels) or depthwise (ops/conv_pool_3d.cpp's channels-last
      // kernel), with constant weights (weights given every run belong to a training step,
      // whose gradient ops read NCDHW).
      auto group = attr_int(n.attrs, n.name, "group", 1);
      const bool depthwise =
          group.is_ok() && *group == xv.desc.shape[1] && *group == yv.desc.shape[1];
      if (!group.is_ok() || (*group != 1 && !depthwise) || n.inputs.size() < 2 ||
          n.inputs[1] == kNoId || g.value(n.inputs[1]).data == nullptr)
        continue;
      std::vector<std::string> in = {blocked_input(x)};
      for (size_t i = 1; i < n.inputs.size(); ++i)
        in.push_back(n.inputs[i] == kNoId ? "" : g.value(n.inputs[i]).name);
      make_blocked(id, "Conv3DNdhwc", in, n.attrs);
    } else if ((n.op == "MaxPool3D" || (n.op == "AveragePool3D" && !dilated(n))) &&
               n.inputs.size() == 1 && (is_blocked(x, 0) || reordered.count(xv.name + kNdhwcTag))) {
      make_blocked(id, n.op + "Ndhwc", {blocked_input(x)}, n.attrs);
    } else if (n.op == "ConvTranspose3D" && is_blocked(x, 0) && blockable_deconv3d(g, n)) {
      std::vector<std::string> in = {bname.at(x)};
      for (size_t i = 1; i < n.inputs.size(); ++i)
        in.push_back(n.inputs[i] == kNoId ? "" : g.value(n.inputs[i]).name);
      make_blocked(id, "ConvTranspose3DNdhwc", in, n.attrs);
    } else if ((n.op == "Conv" || n.op == "FusedConv") && f32_4d(xv)) {
      auto group = attr_int(n.attrs, n.name, "group", 1);
      const int64_t c = xv.desc.shape[1], m = yv.desc.shape[1];
      // Group 1, or depthwise (one channel per group in and out): oneDNN's jit depthwise
      // kernels run in nChw{B}c only; in NCHW a depthwise conv falls to im2col + a GEMM per
      // group (the zoo MobileNet's dilated one: 33 us of a 56 us run at batch 8).
      if (!group.is_ok()) continue;
      // Weights that change every run (a training step's) stay plain: the gradient ops read
      // NCHW, so a blocked forward only moves its reorders to their inputs, and measured slower
      // (PathNet small step 46-51 vs 33 ms, GoogleNet small 661-705 vs 590-632 ms, 2 threads).
      if (n.inputs.size() < 2 || n.inputs[1] == kNoId || g.value(n.inputs[1]).data == nullptr)
        continue;
      const bool depthwise = *group > 1 && *group == c && *group == m;
      // Groups of whole blocks in and out (RegNet's and ResNeXt's group convs, 16 or more
      // channels per group on AVX-512): oneDNN's jit kernels run them in nChw{B}c directly; in
      // NCHW they went through im2col + a GEMM per group between two reorders.
      const bool block_groups = *group > 1 && c % *group == 0 && m % *group == 0 &&
                                (c / *group) % b == 0 && (m / *group) % b == 0;
      // A depth multiplier k (group = C, M = k C: FastViT's down-sampling 7x7 and 3x3 convs):
      // oneDNN has only its reference code or a GEMM per group for it. Output channel o reads
      // input channel o / k, so it is the depthwise conv (same weights) of X with each channel
      // repeated k times: a ChannelGather of the blocked X, then a blocked depthwise conv.
      const bool multiplier = *group > 1 && *group == c && m % c == 0 && m > c;
      if (*group != 1 && !depthwise && !block_groups && !multiplier) continue;
      // Channel counts that are no multiple of B are padded to whole blocks (oneDNN's jit
      // kernels take padded nChw16c: MobileNetV2's 24, ShuffleNet's 58 and 116); only a conv
      // with a plain input and fewer than 8 outputs (a read-out) stays plain.
      std::vector<std::string> in;
      if (multiplier) {
        std::vector<int64_t> source(static_cast<size_t>(m), 0), channel;
        for (int64_t o = 0; o < m; ++o) channel.push_back(o / (m / c));
        // One repeat per input and multiplier (FastViT's 7x7 and 3x3 branches share theirs).
        const std::string key = xv.name + "/x" + std::to_string(m / c) + tag(b);
        auto it = to_blocked.find(key);
        if (it == to_blocked.end()) {
          Attributes ga;
          ga.set("source", source);
          ga.set("channel", channel);
          ga.set("block", b);
          const std::string rep = rw.fresh(xv.name + "/repeated" + tag(b));
          rw.add_node("ChannelGather", rw.fresh(n.name + "/repeat"), {blocked_input(x)}, {rep}, ga);
          it = to_blocked.emplace(key, rep).first;
        }
        in.push_back(it->second);
      } else if (is_blocked(x, 0))
        in.push_back(bname.at(x));
      else if (m < 8)
        continue;
      else if (c < 8 && !depthwise)
        in.push_back(plain_name(x));  // the first layer: oneDNN reads NCHW, writes blocked
      else
        in.push_back(blocked_input(x));
      for (size_t i = 1; i < n.inputs.size(); ++i)
        in.push_back(n.inputs[i] == kNoId ? "" : g.value(n.inputs[i]).name);
      Attributes a = n.attrs;
      a.set("block", b);
      if (multiplier) a.set("group", m);
      make_blocked(id, "BlockedConv", in, a);
    } else if ((n.op == "MaxPool" || (n.op == "AveragePool" && !dilated(n))) &&
               n.inputs.size() == 1 && (is_blocked(x, 0) || reordered.count(xv.name + tag(b)))) {
      // A plain input that is reordered for another reader anyway (inception's pool branch
      // beside the convs reading the block input): pool the reordered copy, so the pool's
      // output needs no reorder of its own before the conv after it. Padding lanes: 0 in, 0
      // out (oneDNN zeroes them).
      Attributes a = n.attrs;
      a.set("block", b);
      make_blocked(id, "Blocked" + n.op, {blocked_input(x)}, a);
    } else if (n.op == "ReduceMean" && is_blocked(x, 0) && f32_4d(xv) && spatial_mean(g, n)) {
      // The mean over H and W kept as [N, C, 1, 1] (a squeeze-excitation's pool as tf2onnx
      // writes it) is a global AveragePool: blocked, padding lanes 0 in and out.
      Attributes a;
      a.set("kernel_shape", std::vector<int64_t>{xv.desc.shape[2], xv.desc.shape[3]});
      a.set("block", b);
      make_blocked(id, "BlockedAveragePool", {bname.at(x)}, a);
    } else if (n.op == "GroupNorm" && is_blocked(x, 0) && f32_4d(xv) && !n.attrs.has("block") &&
               n.inputs.size() == 3) {
      // Groups are lanes of the blocks (ops/group_norm.cpp); padding lanes stay zero.
      Attributes a = n.attrs;
      a.set("block", b);
      make_blocked(id, "GroupNorm",
                   {bname.at(x), g.value(n.inputs[1]).name, g.value(n.inputs[2]).name}, a);
    } else if (n.op == "ConvTranspose" && is_blocked(x, 0) && f32_4d(xv) && patch_upsampler(g, n)) {
      // Each input pixel's output patch is a 1x1 convolution + a shuffle of whole B-lane
      // vectors (ops/conv_transpose.cpp), so the decoder of a U-Net stays blocked.
      std::vector<std::string> in = {bname.at(x)};
      for (size_t i = 1; i < n.inputs.size(); ++i)
        in.push_back(n.inputs[i] == kNoId ? "" : g.value(n.inputs[i]).name);
      Attributes a = n.attrs;
      a.set("block", b);
      make_blocked(id, "BlockedConvTranspose", in, a);
    } else if ((elementwise_unary_op(n.op) ||
                n.op == "DynamicQuantizeDequantize") &&  // its min / max: of any layout
               is_blocked(x, 0) &&
               (!padded(x) || keeps_zero(g, n)) &&
               std::all_of(n.inputs.begin() + 1, n.inputs.end(),
                           [&](ValueId v) { return v == kNoId || scalar(g.value(v)); })) {
      std::vector<std::string> in = {bname.at(x)};
      for (size_t i = 1; i < n.inputs.size(); ++i)
        in.push_back(n.inputs[i] == kNoId ? "" : g.value(n.inputs[i]).name);
      make_blocked(id, n.op, in, n.attrs);
    } else if (layout_agnostic_binary(n.op) && n.inputs.size() == 2 && n.inputs[1] != kNoId &&
               channel_operand(g.value(n.inputs[0]), yv) &&
               channel_operand(g.value(n.inputs[1]), yv) &&
               (is_blocked(n.inputs[0], 0) || is_blocked(n.inputs[1], 0)) &&
               (!padded(n.outputs[0]) || (keeps_zero(g, n) && !shifts_padding(g, n)))) {
      // The other operand's padding lanes are zero too (ToBlocked pads with zeros); a constant
      // per-channel operand is laid out blocked here, once.
      auto operand = [&](ValueId v) -> std::string {
        if (is_blocked(v, 0)) return bname.at(v);
        if (channel_constant(g.value(v), yv)) return blocked_constant(v);
        if (ndhwc_constant(g.value(v), yv)) return ndhwc_constant_of(v);
        if (g.value(v).data && g.value(v).desc.numel() == 1) return g.value(v).name;  // scalar
        return blocked_input(v);
      };
      make_blocked(id, n.op, {operand(n.inputs[0]), operand(n.inputs[1])}, {});
    } else if (n.op == "ChannelGather" && !n.attrs.has("block") &&
               std::any_of(n.inputs.begin(), n.inputs.end(),
                           [&](ValueId v) { return v != kNoId && is_blocked(v, 0); }) &&
               std::all_of(n.inputs.begin(), n.inputs.end(),
                           [&](ValueId v) { return v != kNoId && f32_4d(g.value(v)); })) {
      // Lane permutes of whole vectors (ops/channel_gather.cpp); channels index the padded
      // blocks as they index the NCHW planes, and the output's padding lanes are written zero.
      std::vector<std::string> in;
      for (ValueId v : n.inputs) in.push_back(blocked_input(v));
      Attributes a = n.attrs;
      a.set("block", b);
      make_blocked(id, "ChannelGather", in, a);
    } else if (n.op == "Concat" && is_blocked(x, 0)) {
      // Whole blocks only: a padded input would leave its padding inside the result.
      // Channels-last: the channel axis is the last.
      auto axis = attr_int(n.attrs, n.name, "axis", 0);
      const auto rank = static_cast<int64_t>(yv.desc.rank());
      if (!axis.is_ok() || (*axis != 1 && *axis != 1 - rank)) continue;
      const int64_t kind = block.at(x);
      bool all = true;
      for (ValueId v : n.inputs) all = all && v != kNoId && is_blocked(v, kind) && !padded(v);
      if (!all) continue;
      std::vector<std::string> in;
      for (ValueId v : n.inputs) in.push_back(bname.at(v));
      Attributes a;
      a.set("axis", kind == kNdhwc ? int64_t{4} : int64_t{1});
      make_blocked(id, "Concat", in, a);
    }
  }
  if (keys)
    for (const auto& kv : to_blocked) keys->insert(kv.first);
  if (result.blocked_ops == 0) {
    result.graph = g;
    return result;
  }
  // Back to NCHW, under the original name, where a plain node, an added node or the graph
  // reads a blocked value.
  for (const auto& [v, vb] : block) {
    bool plain_reader = g.value(v).is_output || needs_plain.count(v) > 0;
    for (NodeId c : g.consumers(v)) plain_reader = plain_reader || !rw.removed(c);
    if (!plain_reader) continue;
    Attributes a;
    if (vb == kNdhwc) {
      a.set("perm", kToNcdhw);
      rw.add_node("Transpose", rw.fresh(g.value(v).name + "/to_ncdhw"), {bname.at(v)},
                  {g.value(v).name}, a);
      ++result.reorders;
      continue;
    }
    a.set("block", b);
    if (padded(v)) a.set("channels", g.value(v).desc.shape[1]);  // drop the padding lanes
    rw.add_node("FromBlocked", rw.fresh(g.value(v).name + "/to_nchw"), {bname.at(v)},
                {g.value(v).name}, a);
    ++result.reorders;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  return result;
}

}  // namespace

Result<BlockedLayoutResult> to_blocked_layout(const Graph& g, const ShapeInferencer& shapes,
                                              int block, bool ndhwc) {
  if (block != 8 && block != 16)
    return Status::invalid_argument("blocked_layout: block must be 8 or 16, got " +
                                    std::to_string(block));
  std::unordered_set<std::string> reordered;
  GRAPHI_ASSIGN_OR_RETURN(BlockedLayoutResult first,
                          rewrite(g, shapes, block, ndhwc, {}, &reordered));
  if (first.blocked_ops == 0 || reordered.empty()) return first;
  return rewrite(g, shapes, block, ndhwc, reordered, nullptr);
}

}  // namespace graphi::graph::passes
