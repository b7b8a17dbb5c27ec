#include "graph/passes/conv_trim.h"

#include <cstring>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

// The taps [lo, hi] of one spatial dim that meet the input for some output position: input
// index o * stride - pad + k * dilation in [0, size) for an o in [0, out). Taps outside the range
// read only padding.
struct TapRange {
  int64_t lo = 0, hi = -1;
};

TapRange live_taps(int64_t size, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                   int64_t dilation) {
  TapRange r;
  for (int64_t k = 0; k < kernel; ++k) {
    // The smallest o with o * stride >= pad - k * dilation (the first index >= 0).
    const int64_t need = pad - k * dilation;
    const int64_t o = need <= 0 ? 0 : (need + stride - 1) / stride;
    if (o >= out || o * stride - need >= size) continue;
    if (r.hi < r.lo) r.lo = k;
    r.hi = k;
  }
  return r;
}

}  // namespace

Result<ConvTrimResult> trim_conv_taps(const Graph& g, const ShapeInferencer& shapes) {
  ConvTrimResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op != "Conv" || n.inputs.size() < 2 || n.inputs[0] == kNoId || n.inputs[1] == kNoId ||
        n.outputs.size() != 1)
      continue;
    const Value& xv = g.value(n.inputs[0]);
    const Value& wv = g.value(n.inputs[1]);
    const Value& yv = g.value(n.outputs[0]);
    const int rank = static_cast<int>(wv.desc.rank());
    const int spatial = rank - 2;
    if (!wv.data || wv.desc.dtype != DType::kF32 || spatial < 1 ||
        static_cast<int>(xv.desc.rank()) != rank || static_cast<int>(yv.desc.rank()) != rank)
      continue;
    auto auto_pad = attr_string(n.attrs, n.name, "auto_pad", "NOTSET");
    auto pads = attr_ints(n.attrs, n.name, "pads", std::vector<int64_t>(2 * spatial, 0));
    auto strides = attr_ints(n.attrs, n.name, "strides", std::vector<int64_t>(spatial, 1));
    auto dilations = attr_ints(n.attrs, n.name, "dilations", std::vector<int64_t>(spatial, 1));
    if (!auto_pad.is_ok() || *auto_pad != "NOTSET" || !pads.is_ok() ||
        pads->size() != static_cast<size_t>(2 * spatial) || !strides.is_ok() ||
        strides->size() != static_cast<size_t>(spatial) || !dilations.is_ok() ||
        dilations->size() != static_cast<size_t>(spatial))
      continue;
    const Shape& ws = wv.desc.shape;
    std::vector<TapRange> keep(static_cast<size_t>(spatial));
    bool cut = false, ok = true;
    for (int d = 0; d < spatial && ok; ++d) {
      const size_t i = static_cast<size_t>(d);
      const int64_t size = xv.desc.shape[i + 2], out = yv.desc.shape[i + 2], k = ws[i + 2];
      const int64_t s = (*strides)[i], dil = (*dilations)[i];
      const int64_t pb = (*pads)[i], pe = (*pads)[i + spatial];
      if (size <= 0 || out <= 0 || k <= 0 || s <= 0 || dil <= 0) {
        ok = false;
        break;
      }
      keep[i] = live_taps(size, out, k, s, pb, dil);
      // No live tap at all (every output is bias only) is left to the kernel: rare, and a
      // zero-tap convolution is not an ONNX Conv.
      if (keep[i].hi < keep[i].lo) ok = false;
      // The pads shrink by the cut taps' extent; a negative one would be a crop.
      else if (pb - keep[i].lo * dil < 0 || pe - (k - 1 - keep[i].hi) * dil < 0)
        ok = false;
      else if (keep[i].lo > 0 || keep[i].hi < k - 1)
        cut = true;
    }
    if (!ok || !cut) continue;

    // The kept taps of the weights [M, C/group, k...] (row-major over the spatial dims).
    Shape kept = ws;
    for (int d = 0; d < spatial; ++d)
      kept[static_cast<size_t>(d + 2)] =
          keep[static_cast<size_t>(d)].hi - keep[static_cast<size_t>(d)].lo + 1;
    Tensor w(TensorDesc{DType::kF32, kept});
    const float* src = wv.data->data_as<float>();
    float* dst = w.data_as<float>();
    const int64_t planes = ws[0] * ws[1];
    int64_t src_plane = 1, dst_plane = 1;
    for (int d = 0; d < spatial; ++d) {
      src_plane *= ws[static_cast<size_t>(d + 2)];
      dst_plane *= kept[static_cast<size_t>(d + 2)];
    }
    for (int64_t p = 0; p < planes; ++p) {
      for (int64_t t = 0; t < dst_plane; ++t) {
        // Tap t of the kept kernel -> its index in the full one.
        int64_t rest = t, offset = 0, stride_full = 1;
        for (int d = spatial - 1; d >= 0; --d) {
          const size_t i = static_cast<size_t>(d);
          const int64_t kd = kept[i + 2];
          offset += (rest % kd + keep[i].lo) * stride_full;
          rest /= kd;
          stride_full *= ws[i + 2];
        }
        dst[p * dst_plane + t] = src[p * src_plane + offset];
      }
    }
    Attributes attrs = n.attrs;
    std::vector<int64_t> new_pads = *pads, new_dil = *dilations;
    for (int d = 0; d < spatial; ++d) {
      const size_t i = static_cast<size_t>(d);
      new_pads[i] -= keep[i].lo * (*dilations)[i];
      new_pads[i + spatial] -= (ws[i + 2] - 1 - keep[i].hi) * (*dilations)[i];
      if (kept[i + 2] == 1) new_dil[i] = 1;  // one tap: the dilation means nothing
    }
    attrs.set("pads", new_pads);
    attrs.set("dilations", new_dil);
    if (attrs.has("kernel_shape"))
      attrs.set("kernel_shape", std::vector<int64_t>(kept.begin() + 2, kept.end()));
    const std::string wn = rw.fresh(n.name.empty() ? "conv/W_trimmed" : n.name + "/W_trimmed");
    rw.add_constant(wn, std::move(w));
    std::vector<std::string> inputs;
    for (ValueId v : n.inputs) inputs.push_back(v == kNoId ? "" : g.value(v).name);
    inputs[1] = wn;
    rw.remove(id);
    rw.add_node(n.op, n.name, inputs, {yv.name}, attrs);
    ++result.trimmed;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.trimmed, shapes));
  return result;
}

}  // namespace graphi::graph::passes
