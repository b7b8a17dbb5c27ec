// CumSum (ONNX opset 11/14) and CumProd (opset 26): running sums / products along one axis (a
// constant scalar input), with the `exclusive` and `reverse` attributes; float32 (accumulated in
// double), int32 and int64 (wrapping). PyTorch exports torch.cumsum this way, e.g. position ids
// from an attention mask.
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct ScanLanes {
  int64_t outer = 1, len = 1, inner = 1;
  bool exclusive = false, reverse = false;
};

Result<ScanLanes> scan_lanes(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "x", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> axis, const_ints_input(v, 1, "axis"));
  if (axis.size() != 1) return Status::invalid_graph(v.where + ": input 1 (axis) must be a scalar");
  const TensorDesc& x = v.in(0);
  GRAPHI_ASSIGN_OR_RETURN(int a, normalize_axis(v, "axis", axis[0], x));
  ScanLanes l;
  for (int d = 0; d < a; ++d) l.outer *= x.shape[static_cast<size_t>(d)];
  for (int d = a + 1; d < x.rank(); ++d) l.inner *= x.shape[static_cast<size_t>(d)];
  l.len = x.shape[static_cast<size_t>(a)];
  GRAPHI_ASSIGN_OR_RETURN(int64_t ex, graph::attr_int(v.node.attrs, v.where, "exclusive", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t rev, graph::attr_int(v.node.attrs, v.where, "reverse", 0));
  l.exclusive = ex != 0;
  l.reverse = rev != 0;
  return l;
}

Result<std::vector<TensorDesc>> infer_cumsum(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(scan_lanes(v).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_cumsum(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  return {static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class CumSumKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(l_, scan_lanes(NodeView::of_kernel(ctx)));
    dtype_ = ctx.inputs[0]->dtype;
    product_ = ctx.node.op == "CumProd";
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (dtype_ == DType::kF32)
      typed<float, double>(team, io);
    else if (dtype_ == DType::kI32)
      typed<int32_t, uint32_t>(team, io);
    else
      typed<int64_t, uint64_t>(team, io);
  }
  const char* name() const override { return product_ ? "cumprod" : "cumsum"; }

 private:
  // Acc: double for float32; the unsigned type for integers (wrapping, no UB).
  template <typename T, typename Acc>
  void typed(const TeamContext& team, const Buffers& io) const {
    const auto* x = static_cast<const T*>(io.inputs[0]);
    auto* y = static_cast<T*>(io.outputs[0]);
    auto [begin, end] = team_range(l_.outer * l_.inner, team.ithr, team.nthr);
    for (int64_t lane = begin; lane < end; ++lane) {
      const int64_t o = lane / l_.inner, i = lane % l_.inner;
      const T* xp = x + o * l_.len * l_.inner + i;
      T* yp = y + o * l_.len * l_.inner + i;
      Acc acc = product_ ? 1 : 0;
      for (int64_t s = 0; s < l_.len; ++s) {
        const int64_t k = (l_.reverse ? l_.len - 1 - s : s) * l_.inner;
        if (l_.exclusive) yp[k] = static_cast<T>(acc);
        if (product_)
          acc *= static_cast<Acc>(xp[k]);
        else
          acc += static_cast<Acc>(xp[k]);
        if (!l_.exclusive) yp[k] = static_cast<T>(acc);
      }
    }
  }
  ScanLanes l_;
  DType dtype_ = DType::kF32;
  bool product_ = false;
};

std::unique_ptr<Kernel> make_cumsum() { return std::make_unique<CumSumKernel>(); }

}  // namespace

void register_cumsum_op(Registry& r) {
  r.add({"CumSum", infer_cumsum, cost_cumsum, false, {make_cumsum}});
  r.add({"CumProd", infer_cumsum, cost_cumsum, false, {make_cumsum}});
}

}  // namespace graphi::ops
