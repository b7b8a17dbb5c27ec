// ScatterElements (torch.scatter / scatter_add / scatter_reduce: axis, reduction
// none|add|mul|max|min), ScatterND (x[idx] = v, index_put: the same reductions) and GatherND
// (batch_dims), ONNX semantics. Data float32, int32 or int64 (Scatter's reductions: float32 and
// integers alike); indices int32 or int64, negative values count from the end. An index out of
// range fails the run naming the node (TeamContext::fail) and that element is skipped.
//
// The scatters run on the team's first thread only: later updates must win (or accumulate)
// in index order, and they are small in exported models (masks, cache writes). GatherND
// splits its output slices over the team.
#include <algorithm>
#include <cstring>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Reduce { kNone, kAdd, kMul, kMax, kMin };

Result<Reduce> reduction_of(const NodeView& v) {
  GRAPHI_ASSIGN_OR_RETURN(std::string r,
                          graph::attr_string(v.node.attrs, v.where, "reduction", "none"));
  if (r == "none") return Reduce::kNone;
  if (r == "add") return Reduce::kAdd;
  if (r == "mul") return Reduce::kMul;
  if (r == "max") return Reduce::kMax;  // opset 18
  if (r == "min") return Reduce::kMin;
  return Status::unsupported(v.where + ": attribute 'reduction' = '" + r +
                             "' is not supported (none, add, mul, max, min)");
}

inline int64_t index_at(const void* p, bool i64, int64_t k) {
  return i64 ? static_cast<const int64_t*>(p)[k] : static_cast<const int32_t*>(p)[k];
}

template <typename T>
void combine(T* dst, const T* src, Reduce r) {
  if (r == Reduce::kNone)
    *dst = *src;
  else if (r == Reduce::kAdd)
    *dst = *dst + *src;
  else if (r == Reduce::kMul)
    *dst = *dst * *src;
  else if (r == Reduce::kMax)
    *dst = std::max(*dst, *src);  // as ONNX Runtime: a NaN already there stays
  else
    *dst = std::min(*dst, *src);
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

CostHint cost_scatter(const graph::Node&, std::span<const TensorDesc* const> in,
                      std::span<const TensorDesc* const> out) {
  double bytes = static_cast<double>(out[0]->bytes());
  for (const TensorDesc* d : in)
    if (d) bytes += static_cast<double>(d->bytes());
  return {static_cast<double>(in.back()->numel()), bytes};
}

// ---- ScatterElements and ScatterND

Status scatter_check(const NodeView& v, bool nd) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 3, 3));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "indices", {DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 2, "updates", {v.in(0).dtype}));
  GRAPHI_RETURN_IF_ERROR(reduction_of(v).status());
  const TensorDesc &d = v.in(0), &ix = v.in(1), &u = v.in(2);
  if (!nd) {
    // ONNX wants updates shaped like indices; PyTorch's exporter also writes torch.scatter's
    // larger src as is (only its indices-shaped corner is used, as in PyTorch): accept both.
    bool ok = ix.rank() == d.rank() && u.rank() == d.rank();
    for (size_t k = 0; ok && k < ix.shape.size(); ++k) ok = u.shape[k] >= ix.shape[k];
    if (!ok)
      return Status::invalid_graph(v.where + ": indices " + ix.to_string() + " and updates " +
                                   u.to_string() + " must have data's rank " +
                                   std::to_string(d.rank()) +
                                   " and updates at least the indices' dims");
    GRAPHI_ASSIGN_OR_RETURN(int64_t a, graph::attr_int(v.node.attrs, v.where, "axis", 0));
    GRAPHI_RETURN_IF_ERROR(normalize_axis(v, "axis", a, d).status());
    return Status::ok();
  }
  if (ix.rank() < 1 || ix.shape.back() > d.rank())
    return Status::invalid_graph(v.where + ": indices " + ix.to_string() +
                                 " must end in a dim <= data's rank " + std::to_string(d.rank()));
  Shape want(ix.shape.begin(), ix.shape.end() - 1);
  want.insert(want.end(), d.shape.begin() + ix.shape.back(), d.shape.end());
  if (u.shape != want)
    return Status::invalid_graph(v.where + ": updates " + u.to_string() + " must be " +
                                 shape_to_string(want));
  return Status::ok();
}

template <bool kNd>
Result<std::vector<TensorDesc>> infer_scatter(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(scatter_check(v, kNd));
  return std::vector<TensorDesc>{v.in(0)};
}

class ScatterKernel final : public Kernel {
 public:
  explicit ScatterKernel(bool nd) : nd_(nd) {}
  Status init(const KernelContext& ctx) override {
    NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_RETURN_IF_ERROR(scatter_check(v, nd_));
    GRAPHI_ASSIGN_OR_RETURN(red_, reduction_of(v));
    data_ = ctx.inputs[0]->shape;
    idx_ = ctx.inputs[1]->shape;
    upd_ = ctx.inputs[2]->shape;
    dtype_ = ctx.inputs[0]->dtype;
    i64_ = ctx.inputs[1]->dtype == DType::kI64;
    if (!nd_) {
      GRAPHI_ASSIGN_OR_RETURN(int64_t a, graph::attr_int(ctx.node.attrs, ctx.where, "axis", 0));
      GRAPHI_ASSIGN_OR_RETURN(axis_, normalize_axis(v, "axis", a, *ctx.inputs[0]));
    }
    where_ = ctx.where;
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (team.ithr != 0) return;  // ordered updates: one thread (see the file comment)
    switch (dtype_) {
      case DType::kF32:
        typed<float>(team, io);
        break;
      case DType::kI32:
        typed<int32_t>(team, io);
        break;
      case DType::kI64:
        typed<int64_t>(team, io);
        break;
    }
  }
  const char* name() const override { return nd_ ? "scatter_nd" : "scatter_elements"; }

 private:
  template <typename T>
  void typed(const TeamContext& team, const Buffers& io) const {
    const T* x = static_cast<const T*>(io.inputs[0]);
    const T* u = static_cast<const T*>(io.inputs[2]);
    T* y = static_cast<T*>(io.outputs[0]);
    const int64_t n = shape_numel(data_);
    if (y != x) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(T));
    const auto st = strides_of(data_);
    bool bad = false;
    if (!nd_) {
      const int64_t count = shape_numel(idx_), dim = data_[static_cast<size_t>(axis_)];
      const auto ust = strides_of(upd_);
      for (int64_t e = 0; e < count; ++e) {
        int64_t rem = e, off = 0, uoff = 0;
        for (size_t d = idx_.size(); d-- > 0;) {
          const int64_t c = rem % idx_[d];
          rem /= idx_[d];
          if (static_cast<int>(d) != axis_) off += c * st[d];
          uoff += c * ust[d];
        }
        int64_t i = index_at(io.inputs[1], i64_, e);
        if (i < 0) i += dim;
        if (i < 0 || i >= dim) {
          bad = true;
          continue;
        }
        combine(y + off + i * st[static_cast<size_t>(axis_)], u + uoff, red_);
      }
    } else {
      const auto k = static_cast<size_t>(idx_.back());
      const int64_t tuples = shape_numel(Shape(idx_.begin(), idx_.end() - 1));
      int64_t slice = 1;
      for (size_t d = k; d < data_.size(); ++d) slice *= data_[d];
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off = 0;
        bool ok = true;
        for (size_t j = 0; j < k; ++j) {
          int64_t i =
              index_at(io.inputs[1], i64_, t * static_cast<int64_t>(k) + static_cast<int64_t>(j));
          if (i < 0) i += data_[j];
          if (i < 0 || i >= data_[j]) ok = false;
          off += i * st[j];
        }
        if (!ok) {
          bad = true;
          continue;
        }
        for (int64_t s = 0; s < slice; ++s) combine(y + off + s, u + t * slice + s, red_);
      }
    }
    if (bad) team.fail(where_ + ": an index is out of range for data " + shape_to_string(data_));
  }
  bool nd_;
  Reduce red_ = Reduce::kNone;
  Shape data_, idx_, upd_;
  DType dtype_ = DType::kF32;
  bool i64_ = true;
  int axis_ = 0;
  std::string where_;
};

std::unique_ptr<Kernel> make_scatter_elements() { return std::make_unique<ScatterKernel>(false); }
std::unique_ptr<Kernel> make_scatter_nd() { return std::make_unique<ScatterKernel>(true); }

// ---- GatherND

struct GatherNdGeometry {
  int64_t b = 0, k = 0;
  int64_t batches = 1, tuples = 1, slice = 1;  // tuples per batch
  Shape out;
};

Result<GatherNdGeometry> gather_nd_geometry(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "indices", {DType::kI32, DType::kI64}));
  const TensorDesc &d = v.in(0), &ix = v.in(1);
  GatherNdGeometry g;
  GRAPHI_ASSIGN_OR_RETURN(g.b, graph::attr_int(v.node.attrs, v.where, "batch_dims", 0));
  if (ix.rank() < 1 || g.b < 0 || g.b >= std::min(d.rank(), ix.rank()))
    return Status::invalid_graph(v.where + ": batch_dims = " + std::to_string(g.b) +
                                 " does not fit data " + d.to_string() + " and indices " +
                                 ix.to_string());
  g.k = ix.shape.back();
  if (g.k < 1 || g.b + g.k > d.rank())
    return Status::invalid_graph(v.where + ": indices " + ix.to_string() +
                                 " index more dims than data " + d.to_string() + " has");
  for (int64_t j = 0; j < g.b; ++j)
    if (ix.shape[static_cast<size_t>(j)] != d.shape[static_cast<size_t>(j)])
      return Status::invalid_graph(v.where + ": the batch dims of indices " + ix.to_string() +
                                   " and data " + d.to_string() + " differ");
  for (int64_t j = 0; j < g.b; ++j) g.batches *= d.shape[static_cast<size_t>(j)];
  for (size_t j = static_cast<size_t>(g.b); j + 1 < ix.shape.size(); ++j) g.tuples *= ix.shape[j];
  for (size_t j = static_cast<size_t>(g.b + g.k); j < d.shape.size(); ++j) g.slice *= d.shape[j];
  g.out.assign(ix.shape.begin(), ix.shape.end() - 1);
  g.out.insert(g.out.end(), d.shape.begin() + g.b + g.k, d.shape.end());
  return g;
}

Result<std::vector<TensorDesc>> infer_gather_nd(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_ASSIGN_OR_RETURN(GatherNdGeometry g, gather_nd_geometry(v));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, g.out}};
}

class GatherNdKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, gather_nd_geometry(NodeView::of_kernel(ctx)));
    data_ = ctx.inputs[0]->shape;
    st_ = strides_of(data_);
    elem_ = dtype_size(ctx.inputs[0]->dtype);
    i64_ = ctx.inputs[1]->dtype == DType::kI64;
    where_ = ctx.where;
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(g_.batches * g_.tuples, team.ithr, team.nthr);
    const char* x = static_cast<const char*>(io.inputs[0]);
    char* y = static_cast<char*>(io.outputs[0]);
    const int64_t batch_stride = g_.b > 0 ? st_[static_cast<size_t>(g_.b - 1)] : 0;
    const size_t bytes = static_cast<size_t>(g_.slice) * elem_;
    for (int64_t t = begin; t < end; ++t) {
      int64_t off = (t / g_.tuples) * batch_stride;
      bool ok = true;
      for (int64_t j = 0; j < g_.k; ++j) {
        const auto dim = static_cast<size_t>(g_.b + j);
        int64_t i = index_at(io.inputs[1], i64_, t * g_.k + j);
        if (i < 0) i += data_[dim];
        if (i < 0 || i >= data_[dim]) ok = false;
        off += i * st_[dim];
      }
      if (!ok) {
        std::memset(y + t * static_cast<int64_t>(bytes), 0, bytes);
        team.fail(where_ + ": an index is out of range for data " + shape_to_string(data_));
        continue;
      }
      std::memcpy(y + t * static_cast<int64_t>(bytes), x + off * static_cast<int64_t>(elem_),
                  bytes);
    }
  }
  const char* name() const override { return "gather_nd"; }

 private:
  GatherNdGeometry g_;
  Shape data_;
  std::vector<int64_t> st_;
  size_t elem_ = 4;
  bool i64_ = true;
  std::string where_;
};

std::unique_ptr<Kernel> make_gather_nd() { return std::make_unique<GatherNdKernel>(); }

}  // namespace

void register_scatter_gather_nd_ops(Registry& r) {
  r.add({"ScatterElements", infer_scatter<false>, cost_scatter, false, {make_scatter_elements}});
  r.add({"ScatterND", infer_scatter<true>, cost_scatter, false, {make_scatter_nd}});
  r.add({"GatherND", infer_gather_nd, cost_scatter, false, {make_gather_nd}});
}

}  // namespace graphi::ops
