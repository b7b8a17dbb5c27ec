// Resize (ONNX opsets 10-18) with mode 'nearest', 'linear' ((multi)linear over every resized
// dim) or 'cubic' (bicubic and beyond: the 4-tap cubic convolution of every resized dim, with
// cubic_coeff_a (default -0.75, PyTorch's bicubic) and exclude_outside), float32, any rank. The
// output size comes from constant 'scales' (floor(in * scale)) or constant 'sizes' (opset 10:
// inputs X, scales; opset >= 11: X, roi, scales, sizes). coordinate_transformation_mode: half_pixel
// (default), pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn; nearest_mode:
// round_prefer_floor (default), round_prefer_ceil, floor, ceil (and graphi's 'simple', below).
// Source coordinates are clamped to the input (edge values), as ONNX's reference does (cubic: taps
// past an edge read the edge value, or are dropped and the rest renormalized with exclude_outside =
// 1). Not supported (refused with the attribute named): 'tf_crop_and_resize', opset 18's 'axes' and
// 'antialias', keep_aspect_ratio_policy other than 'stretch' (the ONNX importer rewrites 'axes'
// and the policy into full-rank inputs: constant scales and sizes together then mean "sizes is
// the output, scales the coordinate scale", not ONNX's form).
//
// Each output coordinate of each dim maps to 1 (nearest), 2 (linear) or 4 (cubic) source
// indices with weights, precomputed in init(); run() walks output elements and sums the n^k
// taps of the k resized dims, except in the common case of an image up-sampler (nearest or
// linear, only the last two dims resized), which runs row by row (run_planes).
#include <array>
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Coord {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelNn,
  kHalfPixelSymmetric  // opset 19
};
// kSimple is graphi's name (the ONNX importer's, for Resize-10 and Upsample): ceil on a
// down-sampled dim (scale < 1), floor otherwise, as ONNX Runtime computes those opsets.
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

enum class Mode { kNearest, kLinear, kCubic };

struct ResizeParams {
  Mode mode = Mode::kNearest;
  double cubic_a = -0.75;
  bool exclude_outside = false;
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
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return Status::invalid_graph(w + ": attribute 'mode' = '" + mode +
                                 "' is not an ONNX Resize mode (nearest, linear or cubic)");
  p.mode = mode == "linear" ? Mode::kLinear : mode == "cubic" ? Mode::kCubic : Mode::kNearest;
  GRAPHI_ASSIGN_OR_RETURN(p.cubic_a, graph::attr_float(a, w, "cubic_coeff_a", -0.75));
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
  else if (ctm == "half_pixel_symmetric")
    p.coord = Coord::kHalfPixelSymmetric;
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
  else if (nm == "simple")
    p.nearest = Nearest::kSimple;
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
  if (excl != 0 && excl != 1)
    return Status::invalid_graph(w + ": attribute 'exclude_outside' must be 0 or 1, got " +
                                 std::to_string(excl));
  p.exclude_outside = excl == 1;
  GRAPHI_ASSIGN_OR_RETURN(int64_t antialias, graph::attr_int(a, w, "antialias", 0));
  if (antialias != 0)
    return Status::unsupported(w + ": attribute 'antialias' = " + std::to_string(antialias) +
                               " is not supported (only 0)");
  const Shape& in = v.in(0).shape;
  // Opset 10: (X, scales); opset >= 11: (X, roi, scales, sizes). Tell them apart by count.
  const bool v10 = v.inputs.size() == 2;
  const size_t scales_i = v10 ? 1 : 2, sizes_i = 3;
  std::vector<double> scales;
  if (v.has_input(scales_i)) {
    GRAPHI_ASSIGN_OR_RETURN(scales, const_floats(v, scales_i, "scales"));
  }
  std::vector<int64_t> sizes;
  if (v.has_input(sizes_i) && !v10) {
    GRAPHI_ASSIGN_OR_RETURN(sizes, const_ints_input(v, sizes_i, "sizes"));
  }
  if (!scales.empty() && !sizes.empty()) {
    // Not ONNX (it takes one of them): the importer's form of keep_aspect_ratio_policy, where
    // sizes (round(scale * in)) fix the output and scales drive the coordinates.
    if (scales.size() != in.size() || sizes.size() != in.size())
      return Status::invalid_graph(w + ": scales and sizes must have " + std::to_string(in.size()) +
                                   " values");
    p.out = sizes;
    p.scales = scales;
    for (size_t d = 0; d < in.size(); ++d) {
      if (!(scales[d] > 0)) return Status::invalid_graph(w + ": scales must be > 0");
      p.resized_len.push_back(static_cast<double>(in[d]) * scales[d]);
    }
  } else if (!scales.empty()) {
    if (scales.size() != in.size())
      return Status::invalid_graph(w + ": input " + std::to_string(scales_i) + " (scales) has " +
                                   std::to_string(scales.size()) + " values for an input of rank " +
                                   std::to_string(in.size()));
    p.scales = scales;
    for (size_t d = 0; d < in.size(); ++d) {
      if (!(scales[d] > 0)) return Status::invalid_graph(w + ": scales must be > 0");
      // In float32, as ONNX Runtime and exporters compute it: 5 * 1.8f is 9 in float32 but
      // 8.99999976 in double (Keras' Resizing(7, 9) of a 4x5 image, tf2onnx scales 1.75, 1.8).
      p.out.push_back(static_cast<int64_t>(
          std::floor(static_cast<float>(in[d]) * static_cast<float>(scales[d]))));
      p.resized_len.push_back(static_cast<double>(in[d]) * scales[d]);
    }
  } else if (!sizes.empty()) {
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
    case Coord::kHalfPixelSymmetric: {
      // ONNX: adjustment = output length (floored) / (scale * input length); the ROI's centre
      // stays the canvas's centre. Equal to half_pixel when scale * in is a whole number.
      const double adjustment = std::floor(len_out) / len_out;
      const double offset = static_cast<double>(len_in) / 2 * (1 - adjustment);
      return offset + (xo + 0.5) / scale - 0.5;
    }
  }
  return 0.0;
}

// The 4 weights of the cubic convolution kernel (Keys, coefficient a) for the taps at
// floor(s) - 1 .. floor(s) + 2, r = s - floor(s) (ONNX's reference, PyTorch's bicubic).
std::array<double, 4> cubic_weights(double r, double a) {
  auto near = [a](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
  auto far = [a](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // 1 < |t| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
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
    // Per dim, per output coordinate: value = sum over j < n of w[j] x[idx[j]].
    maps_.resize(r);
    resized_.clear();
    for (size_t d = 0; d < r; ++d) {
      const int64_t n_in = in_[d], n_out = p_.out[d];
      auto& m = maps_[d];
      m.resize(static_cast<size_t>(n_out));
      for (int64_t x = 0; x < n_out; ++x) {
        double s = source_coord(p_.coord, x, p_.scales[d], n_in, p_.resized_len[d]);
        Tap t;
        if (p_.mode == Mode::kLinear) {
          s = std::clamp(s, 0.0, static_cast<double>(n_in - 1));
          const auto i0 = static_cast<int64_t>(std::floor(s));
          t.n = 2;
          t.idx[0] = i0;
          t.idx[1] = std::min(i0 + 1, n_in - 1);
          t.w[1] = s - static_cast<double>(i0);
          t.w[0] = 1.0 - t.w[1];
        } else if (p_.mode == Mode::kCubic) {
          // Not clamped: taps past an edge read the edge value (or drop out).
          const double fl = std::floor(s);
          const std::array<double, 4> w = cubic_weights(s - fl, p_.cubic_a);
          double sum = 0;
          t.n = 4;
          for (int j = 0; j < 4; ++j) {
            const int64_t i = static_cast<int64_t>(fl) - 1 + j;
            const bool outside = i < 0 || i >= n_in;
            t.idx[j] = std::clamp<int64_t>(i, 0, n_in - 1);
            t.w[j] = p_.exclude_outside && outside ? 0.0 : w[static_cast<size_t>(j)];
            sum += t.w[j];
          }
          if (p_.exclude_outside && sum != 0)
            for (double& v : t.w) v /= sum;
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
            case Nearest::kSimple:
              i = p_.scales[d] < 1 ? std::ceil(s) : std::floor(s);
              break;
            default:
              i = std::ceil(s);
          }
          t.idx[0] = std::clamp<int64_t>(static_cast<int64_t>(i), 0, n_in - 1);
        }
        // Taps of weight 0 (an integral source coordinate) cost nothing: drop them.
        int k = 0;
        for (int j = 0; j < t.n; ++j)
          if (t.w[j] != 0.0) {
            t.idx[k] = t.idx[j];
            t.w[k++] = t.w[j];
          }
        if (t.n > 1) t.n = std::max(k, 1);
        m[static_cast<size_t>(x)] = t;
      }
      // Dims where every output coordinate reads one source element need no blending.
      bool blends = false;
      for (const Tap& t : m) blends = blends || t.n > 1;
      if (blends) resized_.push_back(static_cast<int>(d));
    }
    if (resized_.size() > 10) return Status::unsupported(ctx.where + ": too many resized dims");
    // The common case (an up-sampler of NCHW images: only the last two dims resized, nearest or
    // linear): per output row, one or two source rows, and per output column precomputed
    // source columns and weights; the generic walk below costs ~20x more per element.
    planes_ = p_.mode != Mode::kCubic && r >= 2;
    for (size_t d = 0; planes_ && d + 2 < r; ++d) {
      planes_ = p_.out[d] == in_[d];
      for (int64_t x = 0; planes_ && x < p_.out[d]; ++x) {
        const Tap& t = maps_[d][static_cast<size_t>(x)];
        planes_ = t.n == 1 && t.idx[0] == x;
      }
    }
    if (planes_) {
      for (size_t d : {r - 2, r - 1}) {
        std::vector<Tap2>& v = d == r - 2 ? rows_ : cols_;
        for (const Tap& t : maps_[d])
          v.push_back({t.idx[0], t.n > 1 ? t.idx[1] : t.idx[0], static_cast<float>(t.w[0]),
                       t.n > 1 ? static_cast<float>(t.w[1]) : 0.0f, t.n > 1});
      }
    }
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (planes_) return run_planes(team, io);
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
        base += taps[d]->idx[0] * in_strides_[d];
      }
      if (resized_.empty()) {
        y[e] = x[base];
        continue;
      }
      // Sum over the taps of the resized dims: pick[j] is the tap taken in dim resized_[j]
      // (a mixed-radix counter over their tap counts).
      const size_t k = resized_.size();
      int pick[10] = {};
      double acc = 0;
      for (;;) {
        double w = 1;
        int64_t off = base;
        for (size_t j = 0; j < k; ++j) {
          const auto d = static_cast<size_t>(resized_[j]);
          const Tap& t = *taps[d];
          w *= t.w[pick[j]];
          off += (t.idx[pick[j]] - t.idx[0]) * in_strides_[d];
        }
        acc += w * x[off];
        size_t j = 0;
        while (j < k && ++pick[j] == taps[resized_[j]]->n) pick[j++] = 0;
        if (j == k) break;
      }
      y[e] = static_cast<float>(acc);
    }
  }
  // Output rows of every plane split over the team; a row blends one or two source rows, each
  // value one or two source columns (float weights: within an ulp or two of the double walk).
  void run_planes(const TeamContext& team, const Buffers& io) const noexcept {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    const size_t r = in_.size();
    const int64_t ih = in_[r - 2], iw = in_[r - 1];
    const auto oh = static_cast<int64_t>(rows_.size()), ow = static_cast<int64_t>(cols_.size());
    auto [begin, end] = team_range(numel_ / ow, team.ithr, team.nthr);
    const Tap2* cols = cols_.data();
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / oh;
      const Tap2& ty = rows_[static_cast<size_t>(row % oh)];
      const float* a = x + (plane * ih + ty.i0) * iw;
      const float* b = x + (plane * ih + ty.i1) * iw;
      float* out = y + row * ow;
      if (!ty.two) {
        for (int64_t k = 0; k < ow; ++k) {
          const Tap2& t = cols[k];
          out[k] = t.two ? t.w0 * a[t.i0] + t.w1 * a[t.i1] : a[t.i0];
        }
      } else {
        for (int64_t k = 0; k < ow; ++k) {
          const Tap2& t = cols[k];
          const float va = t.two ? t.w0 * a[t.i0] + t.w1 * a[t.i1] : a[t.i0];
          const float vb = t.two ? t.w0 * b[t.i0] + t.w1 * b[t.i1] : b[t.i0];
          out[k] = ty.w0 * va + ty.w1 * vb;
        }
      }
    }
  }

  const char* name() const override {
    if (planes_) return p_.mode == Mode::kLinear ? "resize_linear_planes" : "resize_nearest_planes";
    return p_.mode == Mode::kCubic    ? "resize_cubic_f32"
           : p_.mode == Mode::kLinear ? "resize_linear_f32"
                                      : "resize_nearest_f32";
  }

 private:
  struct Tap {
    int n = 1;  // taps in use
    int64_t idx[4] = {0, 0, 0, 0};
    double w[4] = {1, 0, 0, 0};
  };
  ResizeParams p_;
  Shape in_;
  std::vector<int64_t> in_strides_;
  std::vector<std::vector<Tap>> maps_;
  std::vector<int> resized_;
  int64_t numel_ = 0;
  // run_planes: the last two dims' taps (two = false: one source, weight 1).
  struct Tap2 {
    int64_t i0 = 0, i1 = 0;
    float w0 = 1, w1 = 0;
    bool two = false;
  };
  bool planes_ = false;
  std::vector<Tap2> rows_, cols_;
};

std::unique_ptr<Kernel> make_resize() { return std::make_unique<ResizeKernel>(); }

}  // namespace

void register_resize_op(Registry& r) {
  r.add({"Resize", infer_resize, cost_resize, false, {make_resize}});
}

}  // namespace graphi::ops
