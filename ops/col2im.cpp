// Col2Im (ONNX opset 18, PyTorch's nn.Fold / F.fold): the inverse of im2col. Input X
// [N, C * prod(block_shape), L] holds, for each of the L sliding-block positions (row-major over
// the k spatial dims), the C * prod(block_shape) values of one block; Y [N, C, *image_shape] sums
// every block value into the image element it came from (overlapping blocks add up). Inputs 1 and
// 2, image_shape and block_shape, are constant int64 vectors of k >= 1 entries; attributes
// dilations, pads (k begins then k ends) and strides, as for Conv. L must equal the number of
// block positions, prod over d of (image[d] + pad_begin[d] + pad_end[d] - dilation[d] *
// (block[d] - 1) - 1) / stride[d] + 1, as ONNX's reference and PyTorch require.
//
// init() maps every (block element, position) pair to its flat image offset (-1 in the padding),
// so run() reads X in order and scatters; work is split over the N * C output planes, each
// summed by one thread (block element by block element).
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct Col2ImParams {
  std::vector<int64_t> image, block, dilations, pads, strides;
  int64_t c = 0, block_size = 1, positions = 1;
  Shape out;
};

Result<Col2ImParams> col2im_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 3, 3));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32}));
  const std::string& w = v.where;
  Col2ImParams p;
  GRAPHI_ASSIGN_OR_RETURN(p.image, const_ints_input(v, 1, "image_shape"));
  GRAPHI_ASSIGN_OR_RETURN(p.block, const_ints_input(v, 2, "block_shape"));
  const size_t k = p.image.size();
  if (k == 0 || p.block.size() != k)
    return Status::invalid_graph(w + ": inputs 1 (image_shape) " + ints_to_string(p.image) +
                                 " and 2 (block_shape) " + ints_to_string(p.block) +
                                 " must have the same number (>= 1) of spatial dims");
  for (size_t d = 0; d < k; ++d)
    if (p.image[d] < 1 || p.block[d] < 1)
      return Status::invalid_graph(w + ": image_shape " + ints_to_string(p.image) +
                                   " and block_shape " + ints_to_string(p.block) +
                                   " must be positive");
  const auto& a = v.node.attrs;
  auto list = [&](const char* name, int64_t fill, size_t n,
                  int64_t min) -> Result<std::vector<int64_t>> {
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> vals,
                            graph::attr_ints(a, w, name, std::vector<int64_t>(n, fill)));
    if (vals.size() != n)
      return Status::invalid_graph(w + ": attribute '" + name + "' " + ints_to_string(vals) +
                                   " must have " + std::to_string(n) + " entries");
    for (int64_t x : vals)
      if (x < min)
        return Status::invalid_graph(w + ": attribute '" + name + "' " + ints_to_string(vals) +
                                     " must be >= " + std::to_string(min));
    return vals;
  };
  GRAPHI_ASSIGN_OR_RETURN(p.dilations, list("dilations", 1, k, 1));
  GRAPHI_ASSIGN_OR_RETURN(p.pads, list("pads", 0, 2 * k, 0));
  GRAPHI_ASSIGN_OR_RETURN(p.strides, list("strides", 1, k, 1));
  const TensorDesc& x = v.in(0);
  if (x.rank() != 3)
    return Status::invalid_graph(w + ": input 0 " + x.to_string() +
                                 " must be 3-D [N, C * prod(block_shape), L]");
  for (size_t d = 0; d < k; ++d) {
    const int64_t span = p.image[d] + p.pads[d] + p.pads[k + d] - p.dilations[d] * (p.block[d] - 1);
    if (span < 1)
      return Status::invalid_graph(w + ": block_shape " + ints_to_string(p.block) +
                                   " (dilated) does not fit image_shape " +
                                   ints_to_string(p.image) + " with pads " +
                                   ints_to_string(p.pads) + " in dim " + std::to_string(d));
    p.block_size *= p.block[d];
    p.positions *= (span - 1) / p.strides[d] + 1;
  }
  if (x.shape[1] % p.block_size != 0)
    return Status::invalid_graph(w + ": input 0 " + x.to_string() +
                                 ": dim 1 must be a multiple of " + std::to_string(p.block_size) +
                                 " (prod(block_shape) " + ints_to_string(p.block) + ")");
  if (x.shape[2] != p.positions)
    return Status::invalid_graph(
        w + ": input 0 " + x.to_string() + ": dim 2 must be " + std::to_string(p.positions) +
        ", the number of block positions of image_shape " + ints_to_string(p.image) +
        ", block_shape " + ints_to_string(p.block) + " and the attributes");
  p.c = x.shape[1] / p.block_size;
  p.out = {x.shape[0], p.c};
  p.out.insert(p.out.end(), p.image.begin(), p.image.end());
  return p;
}

Result<std::vector<TensorDesc>> infer_col2im(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(Col2ImParams p, col2im_params(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, p.out}};
}

CostHint cost_col2im(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  return {static_cast<double>(in[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class Col2ImKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(Col2ImParams p, col2im_params(NodeView::of_kernel(ctx)));
    const size_t k = p.image.size();
    planes_ = p.out[0] * p.c;
    plane_ = shape_numel(p.image);
    block_size_ = p.block_size;
    positions_ = p.positions;
    std::vector<int64_t> counts(k);
    for (size_t d = 0; d < k; ++d)
      counts[d] = (p.image[d] + p.pads[d] + p.pads[k + d] - p.dilations[d] * (p.block[d] - 1) - 1) /
                      p.strides[d] +
                  1;
    // offset_[b * positions_ + l]: where block element b at position l lands, or -1.
    offset_.assign(static_cast<size_t>(block_size_ * positions_), -1);
    std::vector<int64_t> bi(k), li(k);
    for (int64_t b = 0; b < block_size_; ++b) {
      int64_t r = b;
      for (size_t d = k; d-- > 0;) {
        bi[d] = r % p.block[d];
        r /= p.block[d];
      }
      for (int64_t l = 0; l < positions_; ++l) {
        int64_t s = l, off = 0;
        bool inside = true;
        for (size_t d = k; d-- > 0;) {
          li[d] = s % counts[d];
          s /= counts[d];
        }
        for (size_t d = 0; d < k; ++d) {
          const int64_t pos = li[d] * p.strides[d] - p.pads[d] + bi[d] * p.dilations[d];
          inside = inside && pos >= 0 && pos < p.image[d];
          off = off * p.image[d] + pos;
        }
        if (inside) offset_[static_cast<size_t>(b * positions_ + l)] = off;
      }
    }
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    auto [begin, end] = team_range(planes_, team.ithr, team.nthr);
    for (int64_t pl = begin; pl < end; ++pl) {
      float* yp = y + pl * plane_;
      std::fill(yp, yp + plane_, 0.0f);
      const float* xp = x + pl * block_size_ * positions_;
      for (int64_t b = 0; b < block_size_; ++b) {
        const int64_t* ob = offset_.data() + b * positions_;
        const float* xb = xp + b * positions_;
        for (int64_t l = 0; l < positions_; ++l)
          if (ob[l] >= 0) yp[ob[l]] += xb[l];
      }
    }
  }

  const char* name() const override { return "col2im_f32"; }

 private:
  int64_t planes_ = 0, plane_ = 1, block_size_ = 1, positions_ = 1;
  std::vector<int64_t> offset_;
};

std::unique_ptr<Kernel> make_col2im() { return std::make_unique<Col2ImKernel>(); }

}  // namespace

void register_col2im_op(Registry& r) {
  r.add({"Col2Im", infer_col2im, cost_col2im, false, {make_col2im}});
}

}  // namespace graphi::ops
