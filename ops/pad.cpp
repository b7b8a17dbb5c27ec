// Pad with ONNX semantics, float32, int32 or int64 (the element is only copied): modes constant
// (default), edge, reflect and opset 19's wrap (circular: index modulo the dim, any amount, as
// numpy.pad's 'wrap'); pads as the `pads` attribute (opset < 11) or a constant input 1 (opset >=
// 11; begins then ends, negative values crop), the fill value as the `value` attribute or an
// optional scalar input 2 (read at run time), and opset 18's optional constant `axes` input 3.
#include <algorithm>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class PadMode { kConstant, kEdge, kReflect, kWrap };

struct PadSpec {
  PadMode mode = PadMode::kConstant;
  std::vector<int64_t> begin, end;  // per input dim
  Shape out;
};

Result<PadSpec> pad_spec(const NodeView& v) {
  const TensorDesc& x = v.in(0);
  const auto& a = v.node.attrs;
  const size_t rank = static_cast<size_t>(x.rank());
  PadSpec p;
  GRAPHI_ASSIGN_OR_RETURN(std::string mode, graph::attr_string(a, v.where, "mode", "constant"));
  if (mode == "constant")
    p.mode = PadMode::kConstant;
  else if (mode == "edge")
    p.mode = PadMode::kEdge;
  else if (mode == "reflect")
    p.mode = PadMode::kReflect;
  else if (mode == "wrap")
    p.mode = PadMode::kWrap;
  else
    return Status::unsupported(v.where + ": attribute 'mode' is '" + mode +
                               "'; graphi supports constant, edge, reflect and wrap");
  std::vector<int64_t> pads;
  if (v.has_input(1)) {
    GRAPHI_ASSIGN_OR_RETURN(pads, const_ints_input(v, 1, "pads"));
  } else {
    GRAPHI_ASSIGN_OR_RETURN(pads, graph::attr_ints(a, v.where, "pads"));
  }
  std::vector<int64_t> axes;
  if (v.has_input(3)) {
    GRAPHI_ASSIGN_OR_RETURN(axes, const_ints_input(v, 3, "axes"));
  } else {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (pads.size() != 2 * axes.size())
    return Status::invalid_graph(v.where + ": pads " + ints_to_string(pads) + " must have " +
                                 std::to_string(2 * axes.size()) + " values (begins, then ends)");
  p.begin.assign(rank, 0);
  p.end.assign(rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    GRAPHI_ASSIGN_OR_RETURN(int d, normalize_axis(v, "axes", axes[k], x));
    p.begin[static_cast<size_t>(d)] = pads[k];
    p.end[static_cast<size_t>(d)] = pads[k + axes.size()];
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t n = x.shape[d], o = n + p.begin[d] + p.end[d];
    if (o < 1)
      return Status::invalid_graph(v.where + ": pads " + ints_to_string(pads) + " leave dim " +
                                   std::to_string(d) + " of " + x.to_string() + " empty");
    if (p.mode == PadMode::kReflect && n > 1 && (p.begin[d] >= n || p.end[d] >= n))
      return Status::unsupported(v.where + ": reflect padding of dim " + std::to_string(d) +
                                 " by more than its size - 1 is not supported");
    p.out.push_back(o);
  }
  return p;
}

Result<std::vector<TensorDesc>> infer_pad(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 4, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32, DType::kI32, DType::kI64}));
  if (v.has_input(2)) {
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 2, "constant_value", {v.in(0).dtype}));
    if (v.in(2).numel() != 1)
      return Status::invalid_graph(ctx.where + ": input 2 (constant_value) must be a scalar, got " +
                                   v.in(2).to_string());
  }
  GRAPHI_ASSIGN_OR_RETURN(PadSpec p, pad_spec(v));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, std::move(p.out)}};
}

CostHint cost_pad(const graph::Node&, std::span<const TensorDesc* const> in,
                  std::span<const TensorDesc* const> out) {
  return {0.0, static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class PadKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 1 to 4 inputs and 1 output");
    dtype_ = ctx.inputs[0]->dtype;
    if (dtype_ != DType::kF32 && dtype_ != DType::kI32 && dtype_ != DType::kI64)
      return Status::unsupported("float32, int32 or int64 only");
    NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_ASSIGN_OR_RETURN(PadSpec p, pad_spec(v));
    GRAPHI_ASSIGN_OR_RETURN(value_, graph::attr_float(ctx.node.attrs, ctx.where, "value", 0.0));
    has_value_input_ = ctx.inputs.size() > 2 && ctx.inputs[2];
    const Shape& in = ctx.inputs[0]->shape;
    rank_ = in.size();
    out_ = p.out;
    if (rank_ == 0) return Status::ok();
    // Per dim: output index -> input index, or -1 for the fill value.
    std::vector<int64_t> in_strides(rank_, 1);
    for (size_t d = rank_; d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
    map_.resize(rank_);
    for (size_t d = 0; d < rank_; ++d) {
      const int64_t n = in[d];
      for (int64_t o = 0; o < out_[d]; ++o) {
        int64_t i = o - p.begin[d];
        if (i < 0 || i >= n) {
          if (p.mode == PadMode::kConstant)
            i = -1;
          else if (p.mode == PadMode::kEdge)
            i = std::clamp<int64_t>(i, 0, n - 1);
          else if (p.mode == PadMode::kWrap)
            i = ((i % n) + n) % n;
          else  // reflect (the edge is not repeated); a dim of 1 reflects onto itself
            i = n == 1 ? 0 : (i < 0 ? -i : 2 * (n - 1) - i);
        }
        // Stored as an element offset into the input, so rows need no multiplication.
        map_[d].push_back(i < 0 ? -1 : i * in_strides[d]);
      }
    }
    rows_ = 1;
    for (size_t d = 0; d + 1 < rank_; ++d) rows_ *= out_[d];
    return Status::ok();
  }

  // The team splits output rows (all dims but the last); each row is one odometer step.
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (dtype_ == DType::kI32)
      typed<int32_t>(team, io);
    else if (dtype_ == DType::kI64)
      typed<int64_t>(team, io);
    else
      typed<float>(team, io);
  }
  const char* name() const override { return "pad"; }

 private:
  template <typename T>
  void typed(const TeamContext& team, const Buffers& io) const noexcept {
    const auto* x = static_cast<const T*>(io.inputs[0]);
    auto* y = static_cast<T*>(io.outputs[0]);
    const T fill = has_value_input_ ? *static_cast<const T*>(io.inputs[2]) : static_cast<T>(value_);
    if (rank_ == 0) {
      if (team.ithr == 0) y[0] = x[0];
      return;
    }
    auto [begin, end] = team_range(rows_, team.ithr, team.nthr);
    const int64_t row = out_[rank_ - 1];
    const std::vector<int64_t>& inner = map_[rank_ - 1];
    for (int64_t r = begin; r < end; ++r) {
      // The input offset of this output row, or -1 if some outer index falls in the padding.
      int64_t off = 0, rem = r;
      bool pad_row = false;
      for (size_t d = rank_ - 1; d-- > 0;) {
        const int64_t m = map_[d][static_cast<size_t>(rem % out_[d])];
        rem /= out_[d];
        if (m < 0) pad_row = true;
        off += m;
      }
      T* dst = y + r * row;
      if (pad_row) {
        std::fill(dst, dst + row, fill);
        continue;
      }
      for (int64_t j = 0; j < row; ++j) {
        const int64_t m = inner[static_cast<size_t>(j)];
        dst[j] = m < 0 ? fill : x[off + m];
      }
    }
  }
  DType dtype_ = DType::kF32;
  size_t rank_ = 0;
  Shape out_;
  std::vector<std::vector<int64_t>> map_;
  int64_t rows_ = 1;
  double value_ = 0;
  bool has_value_input_ = false;
};

std::unique_ptr<Kernel> make_pad() { return std::make_unique<PadKernel>(); }

}  // namespace

void register_pad_op(Registry& r) { r.add({"Pad", infer_pad, cost_pad, false, {make_pad}}); }

}  // namespace graphi::ops
