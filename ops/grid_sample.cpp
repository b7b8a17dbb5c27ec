// GridSample (ONNX opsets 16 and 20, PyTorch's F.grid_sample): Y[n, c, p] samples X[n, c] at the
// normalized location grid[n, p, :] ((x, y) or (x, y, z): last spatial dim first), float32.
// X [N, C, D1..Dk], grid [N, O1..Ok, k], Y [N, C, O1..Ok], k = 1 to 3 spatial dims (opset 16
// has k = 2 only; the importer checks that). Attributes: mode 'linear' / 'nearest' / 'cubic'
// (opset 16's 'bilinear' and 'bicubic' accepted as the same), padding_mode 'zeros' / 'border' /
// 'reflection', align_corners 0/1.
//
// Follows ONNX's reference (onnx/reference/ops/op_grid_sample.py) step by step, per dim:
//  1. denormalize: align_corners ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2 (float32,
//     as the reference and PyTorch compute it);
//  2. nearest: round half to even (std::nearbyint, PyTorch's rounding);
//  3. a coordinate outside [lo, hi] (align_corners ? [0, len - 1] : [-0.5, len - 0.5]) is
//     clamped to [0, len - 1] (border) or reflected into [lo, hi] (reflection);
//  4. taps: floor(x) and floor(x) + 1 (linear), floor(x) - 1 .. floor(x) + 2 with Keys' cubic
//     weights, A = -0.75 (cubic), or x itself (nearest); a tap outside [0, len) reads 0 (zeros),
//     the nearest edge (border) or its reflection (reflection).
// One deliberate difference: cubic with border padding skips step 3 and pads the taps only, as
// PyTorch's bicubic and ONNX Runtime do (onnxruntime issue 10607). The reference's clamp moves
// a point just outside the image onto the edge, where its 4 taps no longer reach the interior
// (up to 0.2 off PyTorch on a unit-variance image). For reflection step 3 changes nothing (the
// reflected image is symmetric about the borders) and keeps far points' taps in range.
// Non-finite grid values sample zeros (as PyTorch); a dim of length 1 with reflection and
// align_corners reflects to 0 (the reference divides by zero there).
//
// Work is split over (n, output point): the taps of a point are computed once and applied to all
// C channels (flat offsets and product weights, up to 4^3 of them).
#include <array>
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Mode { kLinear, kNearest, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

constexpr int kMaxDims = 3;

struct GridSampleParams {
  Mode mode = Mode::kLinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
  int k = 2;  // spatial dims
  Shape out;
};

Result<GridSampleParams> grid_sample_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "grid", {DType::kF32}));
  const auto& a = v.node.attrs;
  const std::string& w = v.where;
  GridSampleParams p;
  GRAPHI_ASSIGN_OR_RETURN(std::string mode, graph::attr_string(a, w, "mode", "linear"));
  if (mode == "linear" || mode == "bilinear")
    p.mode = Mode::kLinear;
  else if (mode == "nearest")
    p.mode = Mode::kNearest;
  else if (mode == "cubic" || mode == "bicubic")
    p.mode = Mode::kCubic;
  else
    return Status::invalid_graph(w + ": attribute 'mode' = '" + mode +
                                 "' is not a GridSample mode (linear, nearest or cubic; opset 16: "
                                 "bilinear, nearest or bicubic)");
  GRAPHI_ASSIGN_OR_RETURN(std::string pad, graph::attr_string(a, w, "padding_mode", "zeros"));
  if (pad == "zeros")
    p.padding = Padding::kZeros;
  else if (pad == "border")
    p.padding = Padding::kBorder;
  else if (pad == "reflection")
    p.padding = Padding::kReflection;
  else
    return Status::invalid_graph(
        w + ": attribute 'padding_mode' = '" + pad +
        "' is not a GridSample padding mode (zeros, border or reflection)");
  GRAPHI_ASSIGN_OR_RETURN(int64_t ac, graph::attr_int(a, w, "align_corners", 0));
  if (ac != 0 && ac != 1)
    return Status::invalid_graph(w + ": attribute 'align_corners' must be 0 or 1, got " +
                                 std::to_string(ac));
  p.align_corners = ac == 1;
  const TensorDesc& x = v.in(0);
  const TensorDesc& g = v.in(1);
  if (x.rank() < 3 || x.rank() > 2 + kMaxDims)
    return Status::unsupported(w + ": input 0 (X) " + x.to_string() +
                               " must be [N, C, D1..Dk] with 1 to 3 spatial dims (rank 3 to 5)");
  p.k = static_cast<int>(x.rank()) - 2;
  if (g.rank() != x.rank())
    return Status::invalid_graph(w + ": input 1 (grid) " + g.to_string() + " must have rank " +
                                 std::to_string(x.rank()) + " ([N, O1..Ok, k]) for X " +
                                 x.to_string());
  if (g.shape[0] != x.shape[0])
    return Status::invalid_graph(w + ": input 1 (grid) " + g.to_string() +
                                 " has a batch other than X's " + x.to_string());
  if (g.shape.back() != p.k)
    return Status::invalid_graph(w + ": input 1 (grid) " + g.to_string() + " must have last dim " +
                                 std::to_string(p.k) + " (the spatial rank of X " + x.to_string() +
                                 "), got " + std::to_string(g.shape.back()));
  p.out = {x.shape[0], x.shape[1]};
  for (int d = 0; d < p.k; ++d) p.out.push_back(g.shape[static_cast<size_t>(1 + d)]);
  return p;
}

Result<std::vector<TensorDesc>> infer_grid_sample(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(GridSampleParams p, grid_sample_params(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, p.out}};
}

CostHint cost_grid_sample(const graph::Node& node, std::span<const TensorDesc* const> in,
                          std::span<const TensorDesc* const> out) {
  // Taps per output value: 2^k, 4^k or 1, two flops each.
  const graph::Attribute* a = node.attrs.find("mode");
  const std::string* m = a ? std::get_if<std::string>(a) : nullptr;
  const std::string mode = m ? *m : "linear";
  const int64_t k = static_cast<int64_t>(in[0]->rank()) - 2;
  const double per =
      mode == "nearest" ? 1 : std::pow(mode == "linear" || mode == "bilinear" ? 2 : 4, k);
  return {2.0 * per * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + in[1]->bytes() + out[0]->bytes())};
}

// The reference's _gs_reflect: x folded into [lo, hi] by reflections at the borders. floor
// instead of int(): no overflow on huge coordinates.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (!(range > 0)) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double n = std::floor(dx / range);
  const double r = dx - n * range;
  const bool even = std::fmod(n, 2.0) == 0;
  const double y = x < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
  return std::clamp(y, lo, hi);
}

// Keys' cubic convolution weights (A = -0.75) of the taps floor(x) - 1 .. floor(x) + 2, t = x -
// floor(x) (the reference's _gs_get_cubic_coeffs).
std::array<float, 4> cubic_weights(float t) {
  constexpr float A = -0.75f;
  auto near = [](float s) { return ((A + 2) * s - (A + 3)) * s * s + 1; };       // |s| <= 1
  auto far = [](float s) { return ((A * s - 5 * A) * s + 8 * A) * s - 4 * A; };  // 1 < |s| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

class GridSampleKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, grid_sample_params(NodeView::of_kernel(ctx)));
    const Shape& x = ctx.inputs[0]->shape;
    n_ = x[0];
    c_ = x[1];
    in_plane_ = 1;
    out_plane_ = 1;
    for (int d = 0; d < p_.k; ++d) {
      in_len_[d] = x[static_cast<size_t>(2 + d)];
      in_plane_ *= in_len_[d];
      out_plane_ *= p_.out[static_cast<size_t>(2 + d)];
    }
    in_stride_[p_.k - 1] = 1;
    for (int d = p_.k - 1; d > 0; --d) in_stride_[d - 1] = in_stride_[d] * in_len_[d];
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* grid = static_cast<const float*>(io.inputs[1]);
    auto* y = static_cast<float*>(io.outputs[0]);
    const int k = p_.k;
    auto [begin, end] = team_range(n_ * out_plane_, team.ithr, team.nthr);
    DimTaps taps[kMaxDims];
    int64_t offs[64];
    float wts[64];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / out_plane_, pt = item % out_plane_;
      // grid's last dim holds (x, y[, z]): the innermost spatial dim first.
      const float* g = grid + item * k;
      for (int d = 0; d < k; ++d) taps[d] = dim_taps(g[k - 1 - d], d);
      // Flatten the taps' product into offsets and weights; zero-padded taps drop out.
      int count = 1;
      offs[0] = 0;
      wts[0] = 1;
      for (int d = 0; d < k; ++d) {
        const DimTaps& t = taps[d];
        int next = 0;
        int64_t no[64];
        float nw[64];
        for (int a = 0; a < count; ++a)
          for (int j = 0; j < t.n; ++j) {
            no[next] = offs[a] + t.idx[j] * in_stride_[d];
            nw[next++] = wts[a] * t.w[j];
          }
        count = next;
        std::copy(no, no + count, offs);
        std::copy(nw, nw + count, wts);
      }
      const float* xn = x + n * c_ * in_plane_;
      float* yn = y + n * c_ * out_plane_ + pt;
      for (int64_t c = 0; c < c_; ++c) {
        const float* xc = xn + c * in_plane_;
        float acc = 0;
        for (int j = 0; j < count; ++j) acc += wts[j] * xc[offs[j]];
        yn[c * out_plane_] = acc;
      }
    }
  }

  const char* name() const override {
    return p_.mode == Mode::kCubic     ? "grid_sample_cubic_f32"
           : p_.mode == Mode::kNearest ? "grid_sample_nearest_f32"
                                       : "grid_sample_linear_f32";
  }

 private:
  // The in-range taps of one dim of one point: index and weight (zeros padding: taps outside
  // are left out; border and reflection: mapped inside).
  struct DimTaps {
    int n = 0;
    int64_t idx[4] = {0, 0, 0, 0};
    float w[4] = {0, 0, 0, 0};
  };

  DimTaps dim_taps(float g, int d) const {
    DimTaps t;
    const int64_t len = in_len_[d];
    const auto lenf = static_cast<float>(len);
    float xf =
        p_.align_corners ? (g + 1.0f) / 2.0f * (lenf - 1.0f) : ((g + 1.0f) * lenf - 1.0f) / 2.0f;
    if (!std::isfinite(xf)) return t;  // nothing read: a zero
    if (p_.mode == Mode::kNearest) xf = std::nearbyint(xf);
    const double lo = p_.align_corners ? 0.0 : -0.5;
    const double hi =
        p_.align_corners ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5;
    double xs = xf;
    if (xs < lo || xs > hi) {
      if (p_.padding == Padding::kBorder && p_.mode != Mode::kCubic)
        xs = std::clamp(xs, 0.0, static_cast<double>(len - 1));
      else if (p_.padding == Padding::kReflection)
        xs = reflect(xs, lo, hi);
    }
    // The reference keeps coordinates in float32. Farther than 2 outside every tap reads zeros
    // (zeros) or the edge (cubic's border): clamping keeps the integer conversions defined.
    xs =
        std::clamp(static_cast<double>(static_cast<float>(xs)), -4.0, static_cast<double>(len) + 3);
    const auto xv = static_cast<float>(xs);
    auto add = [&](int64_t i, float w) {
      if (i < 0 || i >= len) {
        if (p_.padding == Padding::kZeros) return;
        if (p_.padding == Padding::kBorder)
          i = std::clamp<int64_t>(i, 0, len - 1);
        else
          i = std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0,
                                  len - 1);
      }
      t.idx[t.n] = i;
      t.w[t.n++] = w;
    };
    if (p_.mode == Mode::kNearest) {
      add(static_cast<int64_t>(xv), 1.0f);
    } else {
      const float fl = std::floor(xv);
      const float r = xv - fl;
      const auto i0 = static_cast<int64_t>(fl);
      if (p_.mode == Mode::kLinear) {
        add(i0, 1.0f - r);
        add(i0 + 1, r);
      } else {
        const std::array<float, 4> w = cubic_weights(r);
        for (int j = 0; j < 4; ++j) add(i0 - 1 + j, w[static_cast<size_t>(j)]);
      }
    }
    return t;
  }

  GridSampleParams p_;
  int64_t n_ = 0, c_ = 0, in_plane_ = 1, out_plane_ = 1;
  int64_t in_len_[kMaxDims] = {1, 1, 1};
  int64_t in_stride_[kMaxDims] = {1, 1, 1};
};

std::unique_ptr<Kernel> make_grid_sample() { return std::make_unique<GridSampleKernel>(); }

}  // namespace

void register_grid_sample_op(Registry& r) {
  r.add({"GridSample", infer_grid_sample, cost_grid_sample, false, {make_grid_sample}});
}

}  // namespace graphi::ops
