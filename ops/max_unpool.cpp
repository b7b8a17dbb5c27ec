// MaxUnpool (ONNX opsets 9 and 11; PyTorch's nn.MaxUnpool2d after return_indices=True): a
// zero tensor Y with X's values scattered to the positions I gives, Y.flat[I.flat[i]] =
// X.flat[i]. X float32 [N, C, D1..Dk] (k >= 1), I int64 of X's shape holding flat positions in
// the whole of Y (MaxPool's Indices: (n * C + c) * volume + spatial offset). Y's shape is the
// optional third input output_shape (a constant: the importer folds the Shape ops PyTorch
// writes; N and C must be X's), else per spatial dim (in - 1) * stride - pad_begin - pad_end +
// kernel (attributes kernel_shape, strides, pads). With output_shape, positions are taken in
// that shape, as ONNX Runtime and PyTorch do (onnx/onnx#2398: ONNX's own
// test_maxunpool_export_with_output_shape expects them in the default shape instead). Positions
// outside Y fail the run naming the node; when two elements go to one position the later one
// (in X's order) stays.
//
// The team splits Y: each thread zeroes its part and writes the elements of X that land there,
// so no two threads write one element and the result does not depend on the team size.
#include <algorithm>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

Result<Shape> max_unpool_shape(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 3, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "I", {DType::kI64}));
  const TensorDesc& x = v.in(0);
  const std::string& where = v.where;
  if (x.rank() < 3)
    return Status::invalid_graph(where + ": input 0 (X) " + x.to_string() +
                                 " must be [N, C, D1..Dk] with at least 1 spatial dim");
  if (v.in(1).shape != x.shape)
    return Status::invalid_graph(where + ": input 1 (I) " + v.in(1).to_string() +
                                 " must have the shape of X " + x.to_string());
  const size_t k = static_cast<size_t>(x.rank()) - 2;
  auto ints = [&](const char* name, int64_t dflt, size_t count,
                  int64_t min) -> Result<std::vector<int64_t>> {
    GRAPHI_ASSIGN_OR_RETURN(
        auto a, graph::attr_ints(v.node.attrs, where, name, std::vector<int64_t>(count, dflt)));
    bool ok = a.size() == count;
    for (int64_t e : a) ok = ok && e >= min;
    if (!ok)
      return Status::invalid_graph(where + ": attribute '" + name + "' must be " +
                                   std::to_string(count) + " ints >= " + std::to_string(min) +
                                   " for X " + x.to_string() + ", got " + ints_to_string(a));
    return a;
  };
  if (!v.node.attrs.has("kernel_shape"))
    return Status::invalid_graph(where + ": attribute 'kernel_shape' is missing");
  GRAPHI_ASSIGN_OR_RETURN(auto kernel, ints("kernel_shape", 1, k, 1));
  GRAPHI_ASSIGN_OR_RETURN(auto strides, ints("strides", 1, k, 1));
  GRAPHI_ASSIGN_OR_RETURN(auto pads, ints("pads", 0, 2 * k, 0));
  Shape y = x.shape;
  if (v.has_input(2)) {
    GRAPHI_ASSIGN_OR_RETURN(y, const_ints_input(v, 2, "output_shape"));
    if (y.size() != x.shape.size() || y[0] != x.shape[0] || y[1] != x.shape[1] ||
        std::any_of(y.begin(), y.end(), [](int64_t d) { return d < 1; }))
      return Status::invalid_graph(where + ": input 2 (output_shape) " + shape_to_string(y) +
                                   " must be a shape of X's rank with X's N and C (X " +
                                   x.to_string() + ") and dims >= 1");
    int64_t numel = 1;
    for (int64_t d : y)
      if (__builtin_mul_overflow(numel, d, &numel) || numel > (int64_t{1} << 40))
        return Status::invalid_graph(where + ": input 2 (output_shape) " + shape_to_string(y) +
                                     " is too large");
    return y;
  }
  for (size_t a = 0; a < k; ++a) {
    int64_t full;
    if (__builtin_mul_overflow(x.shape[2 + a] - 1, strides[a], &full) ||
        __builtin_add_overflow(full, kernel[a], &full) || full > (int64_t{1} << 40))
      return Status::invalid_graph(where + ": kernel_shape " + ints_to_string(kernel) +
                                   " or strides " + ints_to_string(strides) + " overflow for X " +
                                   x.to_string());
    y[2 + a] = full - pads[a] - pads[a + k];
    if (y[2 + a] < 1)
      return Status::invalid_graph(where + ": pads " + ints_to_string(pads) +
                                   " leave no output along dim " + std::to_string(a + 2) +
                                   " of X " + x.to_string() + " (unpooled size " +
                                   std::to_string(full) + ")");
  }
  return y;
}

Result<std::vector<TensorDesc>> infer_max_unpool(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(Shape y, max_unpool_shape(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, std::move(y)}};
}

CostHint cost_max_unpool(const graph::Node&, std::span<const TensorDesc* const> inputs,
                         std::span<const TensorDesc* const> outputs) {
  CostHint c;
  c.flops = static_cast<double>(outputs[0]->numel() + inputs[0]->numel());
  c.bytes = static_cast<double>(inputs[0]->bytes() + inputs[1]->bytes() + outputs[0]->bytes());
  return c;
}

class MaxUnpoolKernel final : public Kernel {
 public:
  const char* name() const override { return "maxunpool_loop"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(Shape y, max_unpool_shape(NodeView::of_kernel(ctx)));
    y_numel_ = 1;
    for (int64_t d : y) y_numel_ *= d;
    x_numel_ = static_cast<int64_t>(ctx.inputs[0]->numel());
    bad_index_ = ctx.where + ": input 1 (I) holds a position outside the output's " +
                 std::to_string(y_numel_) + " elements";
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* x = static_cast<const float*>(io.inputs[0]);
    const int64_t* ind = static_cast<const int64_t*>(io.inputs[1]);
    float* y = static_cast<float*>(io.outputs[0]);
    auto [y0, y1] = team_range(y_numel_, team.ithr, team.nthr);
    std::fill(y + y0, y + y1, 0.0f);
    bool bad = false;
    for (int64_t i = 0; i < x_numel_; ++i) {
      const int64_t at = ind[i];
      if (at >= y0 && at < y1)
        y[at] = x[i];
      else if (at < 0 || at >= y_numel_)
        bad = true;
    }
    if (bad) team.fail(bad_index_);
  }

 private:
  int64_t y_numel_ = 0, x_numel_ = 0;
  std::string bad_index_;  // the run's error, built here: run() must not allocate
};

}  // namespace

void register_max_unpool_op(Registry& r) {
  r.add(OpDef{
      "MaxUnpool", infer_max_unpool, cost_max_unpool, false, {[]() -> std::unique_ptr<Kernel> {
        return std::make_unique<MaxUnpoolKernel>();
      }}});
}

}  // namespace graphi::ops
