// Expand (numpy broadcast of the input to a constant shape) and Tile (constant repeats), ONNX
// semantics, for float32, int32 and int64 data: copies with an index map, no arithmetic.
#include "ops/broadcast.h"
#include "ops/broadcast_walk.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

Result<std::vector<TensorDesc>> infer_expand(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> shape, const_ints_input(v, 1, "shape"));
  GRAPHI_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.where, v.in(0).shape, shape));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, out}};
}

Result<Shape> tile_shape(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> reps, const_ints_input(v, 1, "repeats"));
  const Shape& s = v.in(0).shape;
  if (reps.size() != s.size())
    return Status::invalid_graph(v.where + ": input 1 (repeats) has " +
                                 std::to_string(reps.size()) + " values for an input of rank " +
                                 std::to_string(s.size()));
  Shape out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    if (reps[d] < 1)
      return Status::unsupported(v.where + ": repeats " + ints_to_string(reps) +
                                 " is not supported (each >= 1; graphi has no empty tensors)");
    out[d] = s[d] * reps[d];
  }
  return out;
}

Result<std::vector<TensorDesc>> infer_tile(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(Shape out, tile_shape(v));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, out}};
}

CostHint cost_copy(const graph::Node&, std::span<const TensorDesc* const> in,
                   std::span<const TensorDesc* const> out) {
  return {0.0, static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

// Both are a broadcast copy (ops/broadcast.h). Expand: the input broadcast to the output shape.
// Tile: output dim d of size r*s (repeats r of input dim s) is [r, s] in row-major order, so the
// output is [r0, s0, r1, s1, ...] reading the input as [1, s0, 1, s1, ...]; the plan merges
// what it can (Tile of [B, H] by [1, 4] is B runs of H copied 4 times).
class CopyMapKernel final : public Kernel {
 public:
  explicit CopyMapKernel(bool tile) : tile_(tile) {}
  Status init(const KernelContext& ctx) override {
    const TensorDesc& in = *ctx.inputs[0];
    const TensorDesc& out = *ctx.outputs[0];
    elem_ = dtype_size(in.dtype);
    if (!tile_) {
      GRAPHI_ASSIGN_OR_RETURN(plan_, make_broadcast_plan(ctx.where, out.shape, in.shape));
      return Status::ok();
    }
    if (out.shape.size() != in.shape.size())
      return Status::unsupported("output rank differs from the input's");
    Shape out2, in2;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      if (in.shape[d] == 0 || out.shape[d] % in.shape[d] != 0)
        return Status::unsupported("output dims are not multiples of the input's");
      out2.insert(out2.end(), {out.shape[d] / in.shape[d], in.shape[d]});
      in2.insert(in2.end(), {1, in.shape[d]});
    }
    auto plan = make_broadcast_plan(ctx.where, out2, in2);
    if (!plan.is_ok())  // only past 16 dims that are both repeated and longer than 1
      return Status::unsupported(ctx.where + ": Tile of " + shape_to_string(in.shape) + " to " +
                                 shape_to_string(out.shape) + " needs more than " +
                                 std::to_string(BroadcastPlan::kMaxRank) + " loop dims");
    plan_ = *plan;
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(plan_.numel, team.ithr, team.nthr);
    if (elem_ == 4)
      typed<uint32_t>(io, begin, end);
    else
      typed<uint64_t>(io, begin, end);
  }
  const char* name() const override { return tile_ ? "tile_copy" : "expand_copy"; }

 private:
  template <typename T>
  void typed(const Buffers& io, int64_t begin, int64_t end) const {
    const T* x = static_cast<const T*>(io.inputs[0]);
    T* y = static_cast<T*>(io.outputs[0]);
    for_each_broadcast_element<1>(plan_, begin, end,
                                  [&](int64_t i, const int64_t* off) { y[i] = x[off[0]]; });
  }
  bool tile_;
  size_t elem_ = 4;
  BroadcastPlan plan_;
};

std::unique_ptr<Kernel> make_expand() { return std::make_unique<CopyMapKernel>(false); }
std::unique_ptr<Kernel> make_tile() { return std::make_unique<CopyMapKernel>(true); }

}  // namespace

void register_tile_expand_ops(Registry& r) {
  r.add({"Expand", infer_expand, cost_copy, false, {make_expand}});
  r.add({"Tile", infer_tile, cost_copy, false, {make_tile}});
}

}  // namespace graphi::ops
