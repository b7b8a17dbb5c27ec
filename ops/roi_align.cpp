// RoiAlign (ONNX opsets 10 and 16, torchvision.ops.roi_align, Mask R-CNN's pooling): Y[r, c]
// [output_height, output_width] pools X[batch_indices[r], c] over the box rois[r] = (x1, y1, x2,
// y2) (input coordinates, times spatial_scale). Each output bin averages (mode 'avg') or takes
// the max ('max') of grid_h x grid_w bilinear samples at the centres of a regular sub-grid of the
// bin; sampling_ratio > 0 fixes the grid, 0 makes it ceil(roi size / output size) per dim.
// X float32 [N, C, H, W], rois float32 [R, 4], batch_indices int64 (or int32) [R]; Y float32
// [R, C, output_height, output_width]: its shape depends on R only.
//
// coordinate_transformation_mode 'half_pixel' (opset 16's default, torchvision's aligned=True)
// shifts the box by -0.5 pixel; 'output_half_pixel' (opset 10's only behaviour, aligned=False)
// does not, and makes a box at least 1 x 1. The importer writes the attribute for opset 10.
// Computed as ONNX's reference and ONNX Runtime do (float32 coordinates, as ONNX Runtime): a
// sample more than one pixel outside the image contributes 0; one inside [-1, 0) reads the edge;
// 'max' takes, per sample, the largest of the four corner values times their bilinear weights
// (ONNX's definition: not the max of the interpolated values, which torchvision has no op for).
// A batch index outside [0, N) fails the run naming the node (its rows are zeros).
//
// Work is split over (roi, channel) planes; a plane's sample positions and weights are computed
// as it is pooled (their count depends on the run-time box when sampling_ratio is 0).
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct RoiAlignParams {
  bool half_pixel = true, max = false;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1;
  Shape out;
};

Result<RoiAlignParams> roi_align_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 3, 3));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "rois", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 2, "batch_indices", {DType::kI64, DType::kI32}));
  const auto& a = v.node.attrs;
  const std::string& w = v.where;
  RoiAlignParams p;
  GRAPHI_ASSIGN_OR_RETURN(std::string ctm,
                          graph::attr_string(a, w, "coordinate_transformation_mode", "half_pixel"));
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return Status::invalid_graph(w + ": attribute 'coordinate_transformation_mode' = '" + ctm +
                                 "' is not 'half_pixel' or 'output_half_pixel'");
  p.half_pixel = ctm == "half_pixel";
  GRAPHI_ASSIGN_OR_RETURN(std::string mode, graph::attr_string(a, w, "mode", "avg"));
  if (mode != "avg" && mode != "max")
    return Status::invalid_graph(w + ": attribute 'mode' = '" + mode + "' is not 'avg' or 'max'");
  p.max = mode == "max";
  GRAPHI_ASSIGN_OR_RETURN(p.out_h, graph::attr_int(a, w, "output_height", 1));
  GRAPHI_ASSIGN_OR_RETURN(p.out_w, graph::attr_int(a, w, "output_width", 1));
  GRAPHI_ASSIGN_OR_RETURN(p.sampling_ratio, graph::attr_int(a, w, "sampling_ratio", 0));
  GRAPHI_ASSIGN_OR_RETURN(double scale, graph::attr_float(a, w, "spatial_scale", 1.0));
  p.spatial_scale = static_cast<float>(scale);
  if (p.out_h < 1 || p.out_w < 1)
    return Status::invalid_graph(w + ": attributes 'output_height' " + std::to_string(p.out_h) +
                                 " and 'output_width' " + std::to_string(p.out_w) +
                                 " must be >= 1");
  if (p.sampling_ratio < 0)
    return Status::invalid_graph(w + ": attribute 'sampling_ratio' " +
                                 std::to_string(p.sampling_ratio) + " must be >= 0");
  const TensorDesc& x = v.in(0);
  const TensorDesc& rois = v.in(1);
  const TensorDesc& idx = v.in(2);
  if (x.rank() != 4)
    return Status::invalid_graph(w + ": input 0 (X) " + x.to_string() +
                                 " must be 4-D [N, C, H, W]");
  if (rois.rank() != 2 || rois.shape[1] != 4)
    return Status::invalid_graph(w + ": input 1 (rois) " + rois.to_string() +
                                 " must be [num_rois, 4]");
  if (idx.rank() != 1 || idx.shape[0] != rois.shape[0])
    return Status::invalid_graph(w + ": input 2 (batch_indices) " + idx.to_string() +
                                 " must be [num_rois] for rois " + rois.to_string());
  p.out = {rois.shape[0], x.shape[1], p.out_h, p.out_w};
  return p;
}

Result<std::vector<TensorDesc>> infer_roi_align(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(RoiAlignParams p, roi_align_params(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, p.out}};
}

CostHint cost_roi_align(const graph::Node& node, std::span<const TensorDesc* const> in,
                        std::span<const TensorDesc* const> out) {
  // Samples per bin are unknown before run time when sampling_ratio is 0: count 2 x 2.
  const graph::Attribute* s = node.attrs.find("sampling_ratio");
  const int64_t* sr = s ? std::get_if<int64_t>(s) : nullptr;
  const double grid = sr && *sr > 0 ? static_cast<double>(*sr * *sr) : 4.0;
  return {8.0 * grid * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class RoiAlignKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, roi_align_params(NodeView::of_kernel(ctx)));
    const Shape& x = ctx.inputs[0]->shape;
    n_ = x[0];
    c_ = x[1];
    h_ = x[2];
    w_ = x[3];
    rois_ = p_.out[0];
    idx64_ = ctx.inputs[2]->dtype == DType::kI64;
    where_ = ctx.where;
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const auto* rois = static_cast<const float*>(io.inputs[1]);
    auto* y = static_cast<float*>(io.outputs[0]);
    const int64_t bins = p_.out_h * p_.out_w;
    auto [begin, end] = team_range(rois_ * c_, team.ithr, team.nthr);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / c_, c = item % c_;
      float* yp = y + item * bins;
      const int64_t b = idx64_ ? static_cast<const int64_t*>(io.inputs[2])[r]
                               : static_cast<const int32_t*>(io.inputs[2])[r];
      if (b < 0 || b >= n_) {
        std::fill(yp, yp + bins, 0.0f);
        team.fail(where_ + ": batch_indices[" + std::to_string(r) + "] = " + std::to_string(b) +
                  " is out of range for X's batch of " + std::to_string(n_));
        continue;
      }
      pool(x + (b * c_ + c) * h_ * w_, rois + r * 4, yp);
    }
  }

  const char* name() const override { return p_.max ? "roi_align_max_f32" : "roi_align_avg_f32"; }

 private:
  // One (roi, channel) plane: `img` is X[b, c] [H, W], `box` the roi's 4 coordinates.
  void pool(const float* img, const float* box, float* out) const {
    const float offset = p_.half_pixel ? 0.5f : 0.0f;
    const float x0 = box[0] * p_.spatial_scale - offset;
    const float y0 = box[1] * p_.spatial_scale - offset;
    const float x1 = box[2] * p_.spatial_scale - offset;
    const float y1 = box[3] * p_.spatial_scale - offset;
    float roi_w = x1 - x0, roi_h = y1 - y0;
    if (!p_.half_pixel) {  // a malformed box becomes 1 x 1
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    const float bin_h = roi_h / static_cast<float>(p_.out_h);
    const float bin_w = roi_w / static_cast<float>(p_.out_w);
    const int64_t grid_h = grid(bin_h), grid_w = grid(bin_w);
    const float count = static_cast<float>(std::max<int64_t>(grid_h * grid_w, 1));
    const auto hf = static_cast<float>(h_), wf = static_cast<float>(w_);
    for (int64_t ph = 0; ph < p_.out_h; ++ph)
      for (int64_t pw = 0; pw < p_.out_w; ++pw) {
        float acc = 0;
        bool first = true;
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const float yy = y0 + static_cast<float>(ph) * bin_h +
                           (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const float xx = x0 + static_cast<float>(pw) * bin_w +
                             (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(grid_w);
            float v = 0;  // a sample more than a pixel outside: weights 0
            if (!(yy < -1.0f || yy > hf || xx < -1.0f || xx > wf)) {
              float sy = std::max(yy, 0.0f), sx = std::max(xx, 0.0f);
              auto ylo = static_cast<int64_t>(sy), xlo = static_cast<int64_t>(sx);
              int64_t yhi = ylo + 1, xhi = xlo + 1;
              if (ylo >= h_ - 1) {
                yhi = ylo = h_ - 1;
                sy = static_cast<float>(ylo);
              }
              if (xlo >= w_ - 1) {
                xhi = xlo = w_ - 1;
                sx = static_cast<float>(xlo);
              }
              const float ly = sy - static_cast<float>(ylo), lx = sx - static_cast<float>(xlo);
              const float hy = 1.0f - ly, hx = 1.0f - lx;
              const float t1 = hy * hx * img[ylo * w_ + xlo], t2 = hy * lx * img[ylo * w_ + xhi];
              const float t3 = ly * hx * img[yhi * w_ + xlo], t4 = ly * lx * img[yhi * w_ + xhi];
              v = p_.max ? std::max(std::max(t1, t2), std::max(t3, t4)) : t1 + t2 + t3 + t4;
            }
            if (!p_.max)
              acc += v;
            else if (first || v > acc)
              acc = v;
            first = false;
          }
        }
        out[ph * p_.out_w + pw] = p_.max ? acc : acc / count;
      }
  }

  // Samples per bin along one dim: sampling_ratio, or ceil(bin size) (0 for an empty or
  // non-finite box; capped so that a huge box cannot make the count overflow).
  int64_t grid(float bin) const {
    if (p_.sampling_ratio > 0) return p_.sampling_ratio;
    if (!(bin > 0)) return 0;
    return static_cast<int64_t>(std::ceil(std::min(bin, 65536.0f)));
  }

  RoiAlignParams p_;
  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, rois_ = 0;
  bool idx64_ = true;
  std::string where_;
};

std::unique_ptr<Kernel> make_roi_align() { return std::make_unique<RoiAlignKernel>(); }

}  // namespace

void register_roi_align_op(Registry& r) {
  r.add({"RoiAlign", infer_roi_align, cost_roi_align, false, {make_roi_align}});
}

}  // namespace graphi::ops
