// CenterCropPad (ONNX opset 18, torchvision's CenterCrop with padding): each dim of `axes`
// (attribute, default every dim; negative counts from the end) becomes the length given by the
// constant int64 input `shape` (one entry per axis): a longer input is cropped around its centre
// (start (in - out) / 2, rounded down), a shorter one padded with zeros around it (before:
// (out - in) / 2, rounded down; the rest after), as ONNX's reference does. Any graphi dtype (the
// kernel copies elements). Work is split over the output's rows (all dims but the last): each row
// is zeros, or zeros around one copied run of the input.
#include <cstring>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct CropPadParams {
  Shape in, out;
  std::vector<int64_t> in_start, out_start, copy;  // per dim: first input/output index, length
};

Result<CropPadParams> crop_pad_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  const std::string& w = v.where;
  const TensorDesc& x = v.in(0);
  if (x.rank() < 1)
    return Status::invalid_graph(w + ": input 0 (input_data) " + x.to_string() +
                                 " must have rank >= 1");
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> shape, const_ints_input(v, 1, "shape"));
  std::vector<int64_t> all(static_cast<size_t>(x.rank()));
  for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                          graph::attr_ints(v.node.attrs, w, "axes", all));
  if (shape.size() != axes.size())
    return Status::invalid_graph(w + ": input 1 (shape) " + ints_to_string(shape) + " must have " +
                                 std::to_string(axes.size()) + " entries, one per axis of " +
                                 ints_to_string(axes));
  CropPadParams p;
  p.in = x.shape;
  p.out = x.shape;
  std::vector<bool> seen(all.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    GRAPHI_ASSIGN_OR_RETURN(int a, normalize_axis(v, "axes", axes[i], x));
    if (seen[static_cast<size_t>(a)])
      return Status::invalid_graph(w + ": attribute 'axes' " + ints_to_string(axes) +
                                   " names dim " + std::to_string(a) + " twice");
    seen[static_cast<size_t>(a)] = true;
    if (shape[i] < 1)
      return Status::unsupported(w + ": input 1 (shape) " + ints_to_string(shape) +
                                 " has a length < 1 (empty tensors are not supported)");
    p.out[static_cast<size_t>(a)] = shape[i];
  }
  for (size_t d = 0; d < p.in.size(); ++d) {
    const int64_t i = p.in[d], o = p.out[d];
    p.in_start.push_back(i > o ? (i - o) / 2 : 0);
    p.out_start.push_back(o > i ? (o - i) / 2 : 0);
    p.copy.push_back(std::min(i, o));
  }
  return p;
}

Result<std::vector<TensorDesc>> infer_crop_pad(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(CropPadParams p, crop_pad_params(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{ctx.inputs[0]->dtype, p.out}};
}

CostHint cost_crop_pad(const graph::Node&, std::span<const TensorDesc* const>,
                       std::span<const TensorDesc* const> out) {
  return {0, 2.0 * static_cast<double>(out[0]->bytes())};
}

class CenterCropPadKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, crop_pad_params(NodeView::of_kernel(ctx)));
    elem_ = dtype_size(ctx.inputs[0]->dtype);
    in_stride_.assign(p_.in.size(), 1);
    for (size_t d = p_.in.size() - 1; d-- > 0;) in_stride_[d] = in_stride_[d + 1] * p_.in[d + 1];
    rows_ = shape_numel(Shape(p_.out.begin(), p_.out.end() - 1));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const char*>(io.inputs[0]);
    auto* y = static_cast<char*>(io.outputs[0]);
    const size_t last = p_.out.size() - 1;
    const auto row_bytes = static_cast<size_t>(p_.out[last]) * elem_;
    auto [begin, end] = team_range(rows_, team.ithr, team.nthr);
    for (int64_t r = begin; r < end; ++r) {
      char* yr = y + static_cast<size_t>(r) * row_bytes;
      // The input row this output row copies from, if every outer index falls in the copy.
      int64_t rem = r, src = 0;
      bool inside = true;
      for (size_t d = last; d-- > 0;) {
        const int64_t o = rem % p_.out[d];
        rem /= p_.out[d];
        const int64_t j = o - p_.out_start[d];
        inside = inside && j >= 0 && j < p_.copy[d];
        src += (j + p_.in_start[d]) * in_stride_[d];
      }
      if (!inside) {
        std::memset(yr, 0, row_bytes);
        continue;
      }
      const auto head = static_cast<size_t>(p_.out_start[last]) * elem_;
      const auto body = static_cast<size_t>(p_.copy[last]) * elem_;
      std::memset(yr, 0, head);
      std::memcpy(yr + head, x + static_cast<size_t>(src + p_.in_start[last]) * elem_, body);
      std::memset(yr + head + body, 0, row_bytes - head - body);
    }
  }

  const char* name() const override { return "center_crop_pad"; }

 private:
  CropPadParams p_;
  size_t elem_ = 4;
  std::vector<int64_t> in_stride_;
  int64_t rows_ = 1;
};

std::unique_ptr<Kernel> make_center_crop_pad() { return std::make_unique<CenterCropPadKernel>(); }

}  // namespace

void register_center_crop_pad_op(Registry& r) {
  r.add({"CenterCropPad", infer_crop_pad, cost_crop_pad, false, {make_center_crop_pad}});
}

}  // namespace graphi::ops
