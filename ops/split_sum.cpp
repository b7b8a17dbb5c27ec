// SplitSum(X) -> Y (graphi's own op, attributes axis and parts): the sum of X's `parts` equal
// slices along `axis`, Y = X[.., 0:s, ..] + X[.., s:2s, ..] + ... (s = dim / parts): what a Split
// into equal parts followed by Adds that sum every part once computes, in one pass without the
// parts' copies. graph/passes/conv_merge.h emits it for PathNet's layer (six modules' outputs,
// one merged convolution, summed); on a channel-blocked tensor [N, C/B, H, W, B] a split of whole
// blocks is axis 1 of the 5-D shape, so the op runs on blocked values as they are.
#include <algorithm>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct Geometry {
  int64_t outer = 1, parts = 1, inner = 1;  // X = [outer, parts, inner], Y = [outer, inner]
};

Result<Geometry> geometry(const graph::Node& node, const std::string& where, const TensorDesc& in,
                          Shape* out_shape) {
  if (in.dtype != DType::kF32)
    return Status::invalid_graph(where + ": input X must be float32, got " + in.to_string());
  if (in.rank() == 0)
    return Status::invalid_graph(where + ": cannot split a scalar (X has shape [])");
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(node.attrs, where, "axis", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t parts, graph::attr_int(node.attrs, where, "parts"));
  const int64_t rank = in.rank();
  if (axis < -rank || axis >= rank)
    return Status::invalid_graph(where + ": attribute 'axis' = " + std::to_string(axis) +
                                 " is out of range for X " + in.to_string());
  if (axis < 0) axis += rank;
  const int64_t dim = in.shape[static_cast<size_t>(axis)];
  if (parts < 1 || dim % parts != 0)
    return Status::invalid_graph(where + ": attribute 'parts' = " + std::to_string(parts) +
                                 " must be >= 1 and divide X's axis " + std::to_string(axis) +
                                 " (" + std::to_string(dim) + ")");
  Geometry g;
  g.parts = parts;
  for (int64_t i = 0; i < axis; ++i) g.outer *= in.shape[static_cast<size_t>(i)];
  g.inner = dim / parts;
  for (int64_t i = axis + 1; i < rank; ++i) g.inner *= in.shape[static_cast<size_t>(i)];
  if (out_shape) {
    *out_shape = in.shape;
    (*out_shape)[static_cast<size_t>(axis)] = dim / parts;
  }
  return g;
}

Result<std::vector<TensorDesc>> infer_split_sum(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  Shape out;
  GRAPHI_RETURN_IF_ERROR(geometry(ctx.node, ctx.where, v.in(0), &out).status());
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, std::move(out)}};
}

CostHint cost_split_sum(const graph::Node&, std::span<const TensorDesc* const> in,
                        std::span<const TensorDesc* const> out) {
  return {static_cast<double>(in[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class SplitSumKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 1 || !ctx.inputs[0] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 1 input and 1 output");
    GRAPHI_ASSIGN_OR_RETURN(geo_, geometry(ctx.node, ctx.where, *ctx.inputs[0], nullptr));
    return Status::ok();
  }
  // The output's elements in whole cache lines per thread; each output element sums its parts
  // in order (part 0 first, as the Add chain it replaces does).
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const int64_t n = geo_.outer * geo_.inner;
    constexpr int64_t kLine = 16;
    auto [b, e] = team_range((n + kLine - 1) / kLine, team.ithr, team.nthr);
    int64_t pos = std::min(n, b * kLine);
    const int64_t end = std::min(n, e * kLine);
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    const int64_t inner = geo_.inner, stride = geo_.parts * inner;
    while (pos < end) {
      const int64_t o = pos / inner, i0 = pos % inner;
      const int64_t len = std::min(inner - i0, end - pos);
      const float* src = x + o * stride + i0;
      float* __restrict dst = y + pos;
      for (int64_t i = 0; i < len; ++i) dst[i] = src[i];
      for (int64_t p = 1; p < geo_.parts; ++p) {
        const float* __restrict sp = src + p * inner;
        for (int64_t i = 0; i < len; ++i) dst[i] += sp[i];
      }
      pos += len;
    }
  }
  const char* name() const override { return "split_sum"; }

 private:
  Geometry geo_;
};

std::unique_ptr<Kernel> make_split_sum() { return std::make_unique<SplitSumKernel>(); }

}  // namespace

void register_split_sum_op(Registry& r) {
  r.add({"SplitSum", infer_split_sum, cost_split_sum, false, {make_split_sum}});
}

}  // namespace graphi::ops
