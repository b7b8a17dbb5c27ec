// Index-producing and index-consuming ops with ONNX semantics: ArgMax and ArgMin (axis,
// keepdims, select_last_index; int64 output), TopK (K as a constant input, or attribute 'k'
// before opset 10; axis, largest, sorted; values and int64 indices, equal values in index
// order) and GatherElements (data float32/int32/int64, int32/int64 indices, negative indices
// count from the end; an index out of range fails the run naming the node).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct AxisLanes {
  int axis = 0;
  int64_t outer = 1, len = 1, inner = 1;
};

Result<AxisLanes> axis_lanes(const NodeView& v, const TensorDesc& x, int64_t default_axis) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t a, graph::attr_int(v.node.attrs, v.where, "axis", default_axis));
  AxisLanes l;
  GRAPHI_ASSIGN_OR_RETURN(l.axis, normalize_axis(v, "axis", a, x));
  for (int d = 0; d < l.axis; ++d) l.outer *= x.shape[static_cast<size_t>(d)];
  for (int d = l.axis + 1; d < x.rank(); ++d) l.inner *= x.shape[static_cast<size_t>(d)];
  l.len = x.shape[static_cast<size_t>(l.axis)];
  return l;
}

CostHint cost_index(const graph::Node&, std::span<const TensorDesc* const> in,
                    std::span<const TensorDesc* const> out) {
  double bytes = 0;
  for (const TensorDesc* d : in)
    if (d) bytes += static_cast<double>(d->bytes());
  for (const TensorDesc* d : out) bytes += static_cast<double>(d->bytes());
  return {static_cast<double>(in[0]->numel()), bytes};
}

// ---- ArgMax / ArgMin

struct ArgParams {
  AxisLanes l;
  bool keepdims = true, last = false;
};

Result<ArgParams> arg_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32, DType::kI32, DType::kI64}));
  ArgParams p;
  GRAPHI_ASSIGN_OR_RETURN(p.l, axis_lanes(v, v.in(0), 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t keep, graph::attr_int(v.node.attrs, v.where, "keepdims", 1));
  GRAPHI_ASSIGN_OR_RETURN(int64_t last,
                          graph::attr_int(v.node.attrs, v.where, "select_last_index", 0));
  p.keepdims = keep != 0;
  p.last = last != 0;
  return p;
}

Result<std::vector<TensorDesc>> infer_arg(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(ArgParams p, arg_params(v));
  Shape out = v.in(0).shape;
  if (p.keepdims)
    out[static_cast<size_t>(p.l.axis)] = 1;
  else
    out.erase(out.begin() + p.l.axis);
  return std::vector<TensorDesc>{TensorDesc{DType::kI64, out}};
}

class ArgKernel final : public Kernel {
 public:
  explicit ArgKernel(bool max) : max_(max) {}
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, arg_params(NodeView::of_kernel(ctx)));
    dtype_ = ctx.inputs[0]->dtype;
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (dtype_ == DType::kF32)
      typed<float>(team, io);
    else if (dtype_ == DType::kI32)
      typed<int32_t>(team, io);
    else
      typed<int64_t>(team, io);
  }
  const char* name() const override { return max_ ? "argmax" : "argmin"; }

 private:
  template <typename T>
  void typed(const TeamContext& team, const Buffers& io) const {
    const auto* x = static_cast<const T*>(io.inputs[0]);
    auto* y = static_cast<int64_t*>(io.outputs[0]);
    const AxisLanes& l = p_.l;
    auto [begin, end] = team_range(l.outer * l.inner, team.ithr, team.nthr);
    for (int64_t lane = begin; lane < end; ++lane) {
      const int64_t o = lane / l.inner, i = lane % l.inner;
      const T* p = x + o * l.len * l.inner + i;
      int64_t best = 0;
      T bv = p[0];
      for (int64_t k = 1; k < l.len; ++k) {
        const T v = p[k * l.inner];
        const bool better = max_ ? (p_.last ? v >= bv : v > bv) : (p_.last ? v <= bv : v < bv);
        if (better) {
          bv = v;
          best = k;
        }
      }
      y[lane] = best;
    }
  }
  bool max_;
  ArgParams p_;
  DType dtype_ = DType::kF32;
};

std::unique_ptr<Kernel> make_argmax() { return std::make_unique<ArgKernel>(true); }
std::unique_ptr<Kernel> make_argmin() { return std::make_unique<ArgKernel>(false); }

// ---- TopK

struct TopKParams {
  AxisLanes l;
  int64_t k = 1;
  bool largest = true;
};

Result<TopKParams> topk_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 2, 1));
  // int64/int32 X: pack_padded_sequence(enforce_sorted=False) exports a TopK over the lengths.
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32, DType::kI32, DType::kI64}));
  TopKParams p;
  GRAPHI_ASSIGN_OR_RETURN(p.l, axis_lanes(v, v.in(0), -1));
  if (v.has_input(1)) {
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> k, const_ints_input(v, 1, "K"));
    if (k.size() != 1)
      return Status::invalid_graph(v.where + ": input 1 (K) must hold one value, got " +
                                   std::to_string(k.size()));
    p.k = k[0];
  } else {
    GRAPHI_ASSIGN_OR_RETURN(p.k, graph::attr_int(v.node.attrs, v.where, "k"));
  }
  if (p.k < 1 || p.k > p.l.len)
    return Status::unsupported(v.where + ": K = " + std::to_string(p.k) +
                               " is not supported for an axis of size " + std::to_string(p.l.len) +
                               " (1 <= K <= size)");
  GRAPHI_ASSIGN_OR_RETURN(int64_t largest, graph::attr_int(v.node.attrs, v.where, "largest", 1));
  p.largest = largest != 0;
  return p;
}

Result<std::vector<TensorDesc>> infer_topk(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(TopKParams p, topk_params(v));
  Shape out = v.in(0).shape;
  out[static_cast<size_t>(p.l.axis)] = p.k;
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, out}, TensorDesc{DType::kI64, out}};
}

class TopKKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, topk_params(NodeView::of_kernel(ctx)));
    if (ctx.outputs.size() != 2) return Status::unsupported("expects 2 outputs");
    team_ = std::max(1, ctx.team_size);
    dtype_ = ctx.inputs[0]->dtype;
    return Status::ok();
  }
  size_t scratch_bytes() const override {
    return static_cast<size_t>(team_) * static_cast<size_t>(p_.l.len) * sizeof(int64_t);
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    switch (dtype_) {
      case DType::kI32:
        return run_typed<int32_t>(team, io);
      case DType::kI64:
        return run_typed<int64_t>(team, io);
      default:
        return run_typed<float>(team, io);
    }
  }
  const char* name() const override { return "topk"; }

 private:
  template <typename T>
  void run_typed(const TeamContext& team, const Buffers& io) const noexcept {
    const AxisLanes& l = p_.l;
    const auto* x = static_cast<const T*>(io.inputs[0]);
    auto* vals = static_cast<T*>(io.outputs[0]);
    auto* idx = static_cast<int64_t*>(io.outputs[1]);
    int64_t* order = static_cast<int64_t*>(team.scratch) + team.ithr * l.len;
    auto [begin, end] = team_range(l.outer * l.inner, team.ithr, team.nthr);
    for (int64_t lane = begin; lane < end; ++lane) {
      const int64_t o = lane / l.inner, i = lane % l.inner;
      const T* p = x + o * l.len * l.inner + i;
      for (int64_t k = 0; k < l.len; ++k) order[k] = k;
      // Larger (smaller) first; equal values keep index order.
      auto before = [&](int64_t a, int64_t b) {
        const T va = p[a * l.inner], vb = p[b * l.inner];
        if (va != vb) return p_.largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order, order + p_.k, order + l.len, before);
      const int64_t base = o * p_.k * l.inner + i;
      for (int64_t k = 0; k < p_.k; ++k) {
        vals[base + k * l.inner] = p[order[k] * l.inner];
        idx[base + k * l.inner] = order[k];
      }
    }
  }

  TopKParams p_;
  int team_ = 1;
  DType dtype_ = DType::kF32;
};

std::unique_ptr<Kernel> make_topk() { return std::make_unique<TopKKernel>(); }

// ---- GatherElements

Result<AxisLanes> gather_elements_check(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "indices", {DType::kI32, DType::kI64}));
  const TensorDesc &d = v.in(0), &ix = v.in(1);
  if (d.rank() != ix.rank() || d.rank() == 0)
    return Status::invalid_graph(v.where + ": data " + d.to_string() + " and indices " +
                                 ix.to_string() + " must have the same rank >= 1");
  GRAPHI_ASSIGN_OR_RETURN(AxisLanes l, axis_lanes(v, d, 0));
  for (int k = 0; k < d.rank(); ++k)
    if (k != l.axis && ix.shape[static_cast<size_t>(k)] > d.shape[static_cast<size_t>(k)])
      return Status::invalid_graph(v.where + ": indices " + ix.to_string() + " exceed data " +
                                   d.to_string() + " in dim " + std::to_string(k));
  return l;
}

Result<std::vector<TensorDesc>> infer_gather_elements(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(gather_elements_check(v).status());
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, v.in(1).shape}};
}

class GatherElementsKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(AxisLanes l, gather_elements_check(NodeView::of_kernel(ctx)));
    axis_ = l.axis;
    data_ = ctx.inputs[0]->shape;
    idx_ = ctx.inputs[1]->shape;
    elem_ = dtype_size(ctx.inputs[0]->dtype);
    i64_ = ctx.inputs[1]->dtype == DType::kI64;
    numel_ = ctx.outputs[0]->numel();
    dstride_.assign(data_.size(), 1);
    for (size_t d = data_.size() - 1; d > 0; --d) dstride_[d - 1] = dstride_[d] * data_[d];
    where_ = ctx.where;
    return Status::ok();
  }
  // Row by row over the index's last dim: a row's place in the data (its coordinates but the
  // axis's) is found once per row, then each element adds its index along the axis, and its
  // last-dim coordinate unless the axis is the last dim. Per-element divisions had taken ~5 ns
  // a value (DeBERTa's [6, 128, 512] by [6, 128, 128]: 0.52 ms a call; BigBird's 5-D ones 0.78).
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (numel_ == 0) return;
    const int64_t inner = idx_.back(), rows = numel_ / inner;
    const size_t last = idx_.size() - 1;
    const bool along_last = axis_ == static_cast<int>(last);
    const int64_t dim = data_[static_cast<size_t>(axis_)];
    auto [r0, r1] = team_range(rows, team.ithr, team.nthr);
    const char* src = static_cast<const char*>(io.inputs[0]);
    char* dst = static_cast<char*>(io.outputs[0]);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rem = r, off = 0;
      for (size_t d = last; d-- > 0;) {
        if (static_cast<int>(d) != axis_) off += rem % idx_[d] * dstride_[d];
        rem /= idx_[d];
      }
      const int64_t e0 = r * inner;
      if (elem_ == 4 && i64_) {  // float32 data, int64 indices: the common case, inline
        const auto* ix = static_cast<const int64_t*>(io.inputs[1]) + e0;
        const auto* xs = reinterpret_cast<const float*>(src);
        auto* ys = reinterpret_cast<float*>(dst) + e0;
        const int64_t step = dstride_[static_cast<size_t>(axis_)];
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t i = ix[j] < 0 ? ix[j] + dim : ix[j];
          if (i >= 0 && i < dim)
            ys[j] = xs[off + i * step + (along_last ? 0 : j)];
          else
            copy_element(team, src, io.inputs[1], dst, e0 + j, along_last ? off : off + j, dim);
        }
        continue;
      }
      for (int64_t j = 0; j < inner; ++j)
        copy_element(team, src, io.inputs[1], dst, e0 + j, along_last ? off : off + j, dim);
    }
  }
  const char* name() const override { return "gather_elements"; }

 private:
  // Output element e: data at `off` (its place without the axis) + index e along the axis; an
  // index out of range is a zero and the run's error.
  void copy_element(const TeamContext& team, const char* src, const void* index, char* dst,
                    int64_t e, int64_t off, int64_t dim) const noexcept {
    int64_t i =
        i64_ ? static_cast<const int64_t*>(index)[e] : static_cast<const int32_t*>(index)[e];
    if (i < 0) i += dim;
    const auto es = static_cast<int64_t>(elem_);
    if (i < 0 || i >= dim) {
      std::fill(dst + e * es, dst + (e + 1) * es, 0);
      team.fail(where_ + ": index out of range for axis " + std::to_string(axis_) + " of size " +
                std::to_string(dim));
      return;
    }
    std::memcpy(dst + e * es, src + (off + i * dstride_[static_cast<size_t>(axis_)]) * es, elem_);
  }

  int axis_ = 0;
  Shape data_, idx_;
  std::vector<int64_t> dstride_;
  size_t elem_ = 4;
  bool i64_ = true;
  int64_t numel_ = 0;
  std::string where_;
};

std::unique_ptr<Kernel> make_gather_elements() { return std::make_unique<GatherElementsKernel>(); }

}  // namespace

void register_index_ops(Registry& r) {
  r.add({"ArgMax", infer_arg, cost_index, false, {make_argmax}});
  r.add({"ArgMin", infer_arg, cost_index, false, {make_argmin}});
  r.add({"TopK", infer_topk, cost_index, false, {make_topk}});
  r.add({"GatherElements", infer_gather_elements, cost_index, false, {make_gather_elements}});
}

}  // namespace graphi::ops
