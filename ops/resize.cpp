// Resize (ONNX opsets 10-18) with mode 'nearest' or 'linear' ((multi)linear over every resized
// dim), float32, any rank. The output size comes from constant 'scales' (floor(in * scale)) or
// constant 'sizes' (opset 10: inputs X, scales; opset >= 11: X, roi, scales, sizes).
// coordinate_transformation_mode: half_pixel (default), pytorch_half_pixel, align_corners,
// asymmetric, tf_half_pixel_for_nn; nearest_mode: round_prefer_floor (default),
// round_prefer_ceil, floor, ceil. Source coordinates are clamped to the input (edge values), as
// ONNX's reference does. Not supported (refused with the attribute named): mode 'cubic',
// 'tf_crop_and_resize', opset 18's 'axes' and keep_aspect_ratio_policy other than 'stretch'.
//
// Each output coordinate of each dim maps to two source indices and a weight, precomputed in
// init(); run() walks output elements and sums the 2^k corners of the k resized dims.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Coord { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelNn };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeParams {
  bool linear = false;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  Shape out;
  std::vector<double> scales;  // per dim: out / in, or the given scale
  // Per dim: the resized length the coordinate formulas use: in * scale with scales (not
  // floored, as ONNX's reference: align_corners downsampling by 0.6 of 4 uses 2.4), else out.
  std::vector<double> resized_len;
};

Result<std::vector<double>> const_floats(const NodeView& v, size_t i, const char* field) {
  const Tensor* t = i < v.const_inputs.size() ? v.const_inputs[i] : nullptr;
  if (!t)
    return Status::unsupported(v.where + ": input " + std::to_string(i) + " (" + field +
                               ") must be a constant (known at import time)");
  if (t->dtype() != DType::kF32)
    return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + field +
                                 ") must be float32, got " + t->desc().to_string());
  std::vector<double> out(static_cast<size_t>(t->numel()));
  for (size_t k = 0; k < out.size(); ++k) out[k] = t->data_as<float>()[k];
  return out;
}

Result<ResizeParams> resize_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 4, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  const auto& a = v.node.attrs;
  const std::string& w = v.where;
  ResizeParams p;
  GRAPHI_ASSIGN_OR_RETURN(std::string mode, graph::attr_string(a, w, "mode", "nearest"));
  if (mode != "nearest" && mode != "linear")
    return Status::unsupported(w + ": attribute 'mode' = '" + mode +
                               "' is not supported (nearest or linear)");
  p.linear = mode == "linear";
  GRAPHI_ASSIGN_OR_RETURN(std::string ctm,
                          graph::attr_string(a, w, "coordinate_transformation_mode", "half_pixel"));
  if (ctm == "half_pixel")
    p.coord = Coord::kHalfPixel;
  else if (ctm == "pytorch_half_pixel")
    p.coord = Coord::kPytorchHalfPixel;
  else if (ctm == "align_corners")
    p.coord = Coord::kAlignCorners;
  else if (ctm == "asymmetric")
    p.coord = Coord::kAsymmetric;
  else if (ctm == "tf_half_pixel_for_nn")
    p.coord = Coord::kTfHalfPixelNn;
  else
    return Status::unsupported(w + ": attribute 'coordinate_transformation_mode' = '" + ctm +
                               "' is not supported");
  GRAPHI_ASSIGN_OR_RETURN(std::string nm,
                          graph::attr_string(a, w, "nearest_mode", "round_prefer_floor"));
  if (nm == "round_prefer_floor")
    p.nearest = Nearest::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil")
    p.nearest = Nearest::kRoundPreferCeil;
  else if (nm == "floor")
    p.nearest = Nearest::kFloor;
  else if (nm == "ceil")
    p.nearest = Nearest::kCeil;
  else
    return Status::unsupported(w + ": attribute 'nearest_mode' = '" + nm + "' is not supported");
  if (a.has("axes"))
    return Status::unsupported(w + ": attribute 'axes' is not supported (give all dims)");
  GRAPHI_ASSIGN_OR_RETURN(std::string kar,
                          graph::attr_string(a, w, "keep_aspect_ratio_policy", "stretch"));
  if (kar != "stretch")
    return Status::unsupported(w + ": attribute 'keep_aspect_ratio_policy' = '" + kar +
                               "' is not supported");
  GRAPHI_ASSIGN_OR_RETURN(int64_t excl, graph::attr_int(a, w, "exclude_outside", 0));
  if (excl != 0)
    return Status::unsupported(w + ": attribute 'exclude_outside' = 1 is not supported");
  const Shape& in = v.in(0).shape;
  // Opset 10: (X, scales); opset >= 11: (X, roi, scales, sizes). Tell them apart by count.
  const bool v10 = v.inputs.size() == 2;
  const size_t scales_i = v10 ? 1 : 2, sizes_i = 3;
  std::vector<double> scales;
  if (v.has_input(scales_i)) {
    GRAPHI_ASSIGN_OR_RETURN(scales, const_floats(v, scales_i, "scales"));
  }
  if (!scales.empty()) {
    if (scales.size() != in.size())
      return Status::invalid_graph(w + ": input " + std::to_string(scales_i) + " (scales) has " +
                                   std::to_string(scales.size()) + " values for an input of rank " +
                                   std::to_string(in.size()));
    p.scales = scales;
    for (size_t d = 0; d < in.size(); ++d) {
      if (!(scales[d] > 0)) return Status::invalid_graph(w + ": scales must be > 0");
      p.out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scales[d])));
      p.resized_len.push_back(static_cast<double>(in[d]) * scales[d]);
    }
  } else if (v.has_input(sizes_i)) {
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, const_ints_input(v, sizes_i, "sizes"));
    if (sizes.size() != in.size())
      return Status::invalid_graph(w + ": input 3 (sizes) has " + std::to_string(sizes.size()) +
                                   " values for an input of rank " + std::to_string(in.size()));
    p.out = sizes;
    for (size_t d = 0; d < in.size(); ++d) {
      p.scales.push_back(static_cast<double>(sizes[d]) / static_cast<double>(in[d]));
      p.resized_len.push_back(static_cast<double>(sizes[d]));
    }
  } else {
    return Status::invalid_graph(w + ": needs 'scales' or 'sizes'");
  }
  for (int64_t d : p.out)
    if (d < 1)
      return Status::unsupported(w + ": output shape " + shape_to_string(p.out) +
                                 " is empty (graphi has no empty tensors)");
  return p;
}

Result<std::vector<TensorDesc>> infer_resize(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(ResizeParams p, resize_params(v));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, p.out}};
}

CostHint cost_resize(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  return {4.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

// Source coordinate of output coordinate x of a dim (ONNX's coordinate transformations).
double source_coord(Coord c, int64_t x, double scale, int64_t len_in, double len_out) {
  const auto xo = static_cast<double>(x);
  switch (c) {
    case Coord::kHalfPixel:
      return (xo + 0.5) / scale - 0.5;
    case Coord::kPytorchHalfPixel:
      return len_out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners:
      return len_out > 1 ? xo * static_cast<double>(len_in - 1) / (len_out - 1) : 0.0;
    case Coord::kAsymmetric:
      return xo / scale;
    case Coord::kTfHalfPixelNn:
      return (xo + 0.5) / scale;
  }
  return 0.0;
}

class ResizeKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, resize_params(NodeView::of_kernel(ctx)));
    in_ = ctx.inputs[0]->shape;
    const size_t r = in_.size();
    if (r > 12) return Status::unsupported(ctx.where + ": rank > 12 is not supported");
    in_strides_.assign(r, 1);
    for (size_t d = r; d-- > 1;) in_strides_[d - 1] = in_strides_[d] * in_[d];
    numel_ = ctx.outputs[0]->numel();
    // Per dim, per output coordinate: (i0, i1, w1) with value = (1 - w1) x[i0] + w1 x[i1].
    maps_.resize(r);
    resized_.clear();
    for (size_t d = 0; d < r; ++d) {
      const int64_t n_in = in_[d], n_out = p_.out[d];
      auto& m = maps_[d];
      m.resize(static_cast<size_t>(n_out));
      for (int64_t x = 0; x < n_out; ++x) {
        double s = source_coord(p_.coord, x, p_.scales[d], n_in, p_.resized_len[d]);
        Tap t;
        if (p_.linear) {
          s = std::clamp(s, 0.0, static_cast<double>(n_in - 1));
          const auto i0 = static_cast<int64_t>(std::floor(s));
          t.i0 = i0;
          t.i1 = std::min(i0 + 1, n_in - 1);
          t.w1 = static_cast<float>(s - static_cast<double>(i0));
        } else {
          double i;
          switch (p_.nearest) {
            case Nearest::kRoundPreferFloor:
              i = (s == std::floor(s) + 0.5) ? std::floor(s) : std::round(s);
              break;
            case Nearest::kRoundPreferCeil:
              i = std::round(s);
              break;
            case Nearest::kFloor:
              i = std::floor(s);
              break;
            default:
              i = std::ceil(s);
          }
          t.i0 = t.i1 = std::clamp<int64_t>(static_cast<int64_t>(i), 0, n_in - 1);
        }
        m[static_cast<size_t>(x)] = t;
      }
      // Dims whose taps all have weight 0 on i1 need no corners (any mode, any length).
      bool blends = false;
      for (const Tap& t : m) blends = blends || (t.w1 != 0.0f && t.i1 != t.i0);
      if (p_.linear && blends) resized_.push_back(static_cast<int>(d));
    }
    if (resized_.size() > 10) return Status::unsupported(ctx.where + ": too many resized dims");
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(numel_, team.ithr, team.nthr);
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    const size_t r = in_.size();
    const Tap* taps[12];
    for (int64_t e = begin; e < end; ++e) {
      int64_t rem = e, base = 0;
      for (size_t d = r; d-- > 0;) {
        const int64_t c = rem % p_.out[d];
        rem /= p_.out[d];
        taps[d] = &maps_[d][static_cast<size_t>(c)];
        base += taps[d]->i0 * in_strides_[d];
      }
      if (!p_.linear || resized_.empty()) {
        y[e] = x[base];
        continue;
      }
      // Sum over the corners of the resized dims: bit j of `corner` picks i1 in resized_[j].
      double acc = 0;
      const size_t k = resized_.size();
      for (uint32_t corner = 0; corner < (1u << k); ++corner) {
        double w = 1;
        int64_t off = base;
        for (size_t j = 0; j < k; ++j) {
          const auto d = static_cast<size_t>(resized_[j]);
          const Tap& t = *taps[d];
          if (corner & (1u << j)) {
            w *= t.w1;
            off += (t.i1 - t.i0) * in_strides_[d];
          } else {
            w *= 1.0 - t.w1;
          }
        }
        if (w != 0) acc += w * x[off];
      }
      y[e] = static_cast<float>(acc);
    }
  }
  const char* name() const override {
    return p_.linear ? "resize_linear_f32" : "resize_nearest_f32";
  }

 private:
  struct Tap {
    int64_t i0 = 0, i1 = 0;
    float w1 = 0;
  };
  ResizeParams p_;
  Shape in_;
  std::vector<int64_t> in_strides_;
  std::vector<std::vector<Tap>> maps_;
  std::vector<int> resized_;
  int64_t numel_ = 0;
};

std::unique_ptr<Kernel> make_resize() { return std::make_unique<ResizeKernel>(); }

}  // namespace

void register_resize_op(Registry& r) {
  r.add({"Resize", infer_resize, cost_resize, false, {make_resize}});
}

}  // namespace graphi::ops
