// Gather (ONNX semantics): the one op PyTorch exports need that cannot be folded at import time
// when its indices are run-time data (nn.Embedding: Gather(weight, token_ids)). Constant-index
// Gathers are rewritten by the ONNX importer (graph/onnx/onnx_import.cpp) into Slices where
// possible. Data may be float32, int32 or int64 (the kernel moves bytes); indices int32 or int64,
// negative values count from the end. An index out of range at run time fails the run
// (TeamContext::fail) naming the node and the index; its output row is zero-filled.
#include <cstring>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct GatherGeometry {
  int axis = 0;
  int64_t outer = 1, dim = 1, inner = 1, count = 1;  // count = number of indices
};

Result<GatherGeometry> gather_geometry(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "indices", {DType::kI32, DType::kI64}));
  const TensorDesc& data = v.in(0);
  if (data.rank() == 0)
    return Status::invalid_graph(v.where + ": cannot gather from a scalar (data has shape [])");
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, graph::attr_int(v.node.attrs, v.where, "axis", 0));
  GatherGeometry g;
  GRAPHI_ASSIGN_OR_RETURN(g.axis, normalize_axis(v, "axis", axis_attr, data));
  for (int d = 0; d < g.axis; ++d) g.outer *= data.shape[static_cast<size_t>(d)];
  g.dim = data.shape[static_cast<size_t>(g.axis)];
  for (size_t d = static_cast<size_t>(g.axis) + 1; d < data.shape.size(); ++d)
    g.inner *= data.shape[d];
  g.count = v.in(1).numel();
  return g;
}

// Reads index k of an int32 or int64 index buffer.
inline int64_t index_at(const void* p, bool i64, int64_t k) {
  return i64 ? static_cast<const int64_t*>(p)[k] : static_cast<const int32_t*>(p)[k];
}

Result<std::vector<TensorDesc>> infer_gather(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(GatherGeometry g, gather_geometry(v));
  const TensorDesc& data = v.in(0);
  const TensorDesc& idx = v.in(1);
  if (const Tensor* c = v.const_inputs.size() > 1 ? v.const_inputs[1] : nullptr) {
    for (int64_t k = 0; k < c->numel(); ++k) {
      const int64_t i = index_at(c->data(), c->dtype() == DType::kI64, k);
      if (i < -g.dim || i >= g.dim)
        return Status::invalid_graph(ctx.where + ": index " + std::to_string(i) + " (entry " +
                                     std::to_string(k) + " of indices) is out of range for axis " +
                                     std::to_string(g.axis) + " of size " + std::to_string(g.dim));
    }
  }
  Shape out(data.shape.begin(), data.shape.begin() + g.axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + g.axis + 1, data.shape.end());
  return std::vector<TensorDesc>{TensorDesc{data.dtype, out}};
}

CostHint cost_gather(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  return {0.0, 2.0 * static_cast<double>(out[0]->bytes()) + static_cast<double>(in[1]->bytes())};
}

// Output rows (outer x count, each `inner` elements) split over the team; one memcpy per row.
class GatherKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, gather_geometry(NodeView::of_kernel(ctx)));
    elem_ = dtype_size(ctx.inputs[0]->dtype);
    i64_ = ctx.inputs[1]->dtype == DType::kI64;
    where_ = ctx.where;
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(g_.outer * g_.count, team.ithr, team.nthr);
    const char* src = static_cast<const char*>(io.inputs[0]);
    char* dst = static_cast<char*>(io.outputs[0]);
    const size_t row = static_cast<size_t>(g_.inner) * elem_;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / g_.count, k = r % g_.count;
      int64_t i = index_at(io.inputs[1], i64_, k);
      if (i < 0) i += g_.dim;
      if (i < 0 || i >= g_.dim) {
        std::memset(dst + r * row, 0, row);
        team.fail(where_ + ": index " + std::to_string(index_at(io.inputs[1], i64_, k)) +
                  " is out of range for axis " + std::to_string(g_.axis) + " of size " +
                  std::to_string(g_.dim));
        continue;
      }
      std::memcpy(dst + r * row, src + (o * g_.dim + i) * static_cast<int64_t>(row), row);
    }
  }
  const char* name() const override { return "gather_copy"; }

 private:
  GatherGeometry g_;
  size_t elem_ = 4;
  bool i64_ = true;
  std::string where_;
};

std::unique_ptr<Kernel> make_gather() { return std::make_unique<GatherKernel>(); }

}  // namespace

void register_onnx_view_ops(Registry& r) {
  r.add({"Gather", infer_gather, cost_gather, false, {make_gather}});
}

}  // namespace graphi::ops
