// Data-movement ops: Concat, Split, Slice, Transpose, Reshape, Identity (ONNX semantics and
// attribute names). They move bytes, so every kernel works for f32, i32 and i64 alike. Kernels
// split the output (Split: the input) over the team in 64-byte blocks and copy maximal
// contiguous runs with memcpy.
#include <cstring>
#include <numeric>

#include "ops/registry.h"
#include "ops/shape_rules.h"
#include "ops/transpose_tiles.h"

namespace graphi::ops {
namespace {

constexpr int64_t kLineBytes = 64;

// Thread ithr's [begin, end) of n elements of `elem` bytes, in whole cache lines.
std::pair<int64_t, int64_t> line_range(int64_t n, size_t elem, int ithr, int nthr) {
  const int64_t per_line = std::max<int64_t>(1, kLineBytes / static_cast<int64_t>(elem));
  auto [b, e] = team_range((n + per_line - 1) / per_line, ithr, nthr);
  return {std::min(n, b * per_line), std::min(n, e * per_line)};
}

Status expect_data_dtype(const NodeView& v, size_t i, const char* field) {
  return expect_dtype(v, i, field, {DType::kF32, DType::kI32, DType::kI64});
}

int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

CostHint cost_copy(const graph::Node&, std::span<const TensorDesc* const> in,
                   std::span<const TensorDesc* const> out) {
  double bytes = 0;
  for (const TensorDesc* d : out) bytes += 2.0 * static_cast<double>(d->bytes());  // read + write
  return {0.0, bytes};
}

// ---- Identity, Reshape: a plain copy, or nothing where the memory plan aliased them ----

class CopyKernel final : public Kernel {
 public:
  explicit CopyKernel(const char* name) : name_(name) {}
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.size() != 1 ||
        ctx.inputs[0]->bytes() != ctx.outputs[0]->bytes())
      return Status::unsupported("expects one input and one output of the same size");
    bytes_ = static_cast<int64_t>(ctx.outputs[0]->bytes());
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (io.outputs[0] == io.inputs[0]) return;  // the memory plan aliased them (memory_plan.h)
    auto [begin, end] = line_range(bytes_, 1, team.ithr, team.nthr);
    if (begin < end)
      std::memcpy(static_cast<char*>(io.outputs[0]) + begin,
                  static_cast<const char*>(io.inputs[0]) + begin, static_cast<size_t>(end - begin));
  }
  const char* name() const override { return name_; }

 private:
  const char* name_;
  int64_t bytes_ = 0;
};

Result<std::vector<TensorDesc>> infer_identity(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_data_dtype(v, 0, "input"));
  return std::vector<TensorDesc>{v.in(0)};
}

// ONNX Reshape: 0 copies the input's dim at the same index, -1 is inferred (at most one).
Result<std::vector<TensorDesc>> infer_reshape(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 2, 1));
  GRAPHI_RETURN_IF_ERROR(expect_data_dtype(v, 0, "data"));
  const TensorDesc& in = v.in(0);
  std::vector<int64_t> spec;
  const bool has_attr = ctx.node.attrs.has("shape");
  if (v.has_input(1)) {
    if (has_attr)
      return Status::invalid_graph(ctx.where +
                                   ": give the target shape either as input 1 or as "
                                   "attribute 'shape', not both");
    GRAPHI_ASSIGN_OR_RETURN(spec, const_ints_input(v, 1, "shape"));
  } else if (has_attr) {
    GRAPHI_ASSIGN_OR_RETURN(spec, graph::attr_ints(ctx.node.attrs, ctx.where, "shape"));
  } else {
    return Status::invalid_graph(ctx.where +
                                 ": missing the target shape: give a constant int64 "
                                 "input 1 (shape) or attribute 'shape' (ints)");
  }
  const std::string spec_str = ints_to_string(spec);
  Shape out(spec.size());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == -1) {
      if (infer_at >= 0)
        return Status::invalid_graph(ctx.where + ": shape " + spec_str + " has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (spec[i] < -1)
      return Status::invalid_graph(ctx.where + ": shape " + spec_str + " has an invalid dim " +
                                   std::to_string(spec[i]) + " at index " + std::to_string(i));
    if (spec[i] == 0) {
      if (i >= in.shape.size())
        return Status::invalid_graph(ctx.where + ": shape " + spec_str + " has 0 (copy) at index " +
                                     std::to_string(i) + " but the input " +
                                     shape_to_string(in.shape) + " has rank " +
                                     std::to_string(in.rank()));
      out[i] = in.shape[i];
    } else {
      out[i] = spec[i];
    }
    // A bogus dim (e.g. 2^62 from a corrupt file) must not wrap the product around to 0.
    if (__builtin_mul_overflow(known, out[i], &known))
      return Status::invalid_graph(ctx.where + ": shape " + spec_str +
                                   " has more elements than int64 can count");
  }
  const int64_t n = in.numel();
  if (infer_at >= 0) {
    if (n % known != 0)
      return Status::invalid_graph(ctx.where + ": cannot reshape input " +
                                   shape_to_string(in.shape) + " (" + std::to_string(n) +
                                   " elements) to " + spec_str + ": " + std::to_string(n) +
                                   " is not a multiple of " + std::to_string(known));
    out[infer_at] = n / known;
  } else if (known != n) {
    return Status::invalid_graph(ctx.where + ": cannot reshape input " + shape_to_string(in.shape) +
                                 " (" + std::to_string(n) + " elements) to " + spec_str + " (" +
                                 std::to_string(known) + " elements)");
  }
  return std::vector<TensorDesc>{TensorDesc{in.dtype, out}};
}

// ---- Concat ----

// The output as [outer, row] where input i fills columns [col_[i], col_[i] + width_[i]).
class ConcatKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    const TensorDesc& out = *ctx.outputs[0];
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, graph::attr_int(ctx.node.attrs, ctx.where, "axis"));
    const int64_t rank = out.rank();
    const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
    elem_ = dtype_size(out.dtype);
    const int64_t inner = prod(out.shape, axis + 1, out.shape.size());
    outer_ = prod(out.shape, 0, axis);
    row_ = out.shape[axis] * inner;
    numel_ = out.numel();
    int64_t col = 0;
    for (const TensorDesc* d : ctx.inputs) {
      col_.push_back(col);
      width_.push_back(d->shape[axis] * inner);
      col += width_.back();
    }
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [pos, end] = line_range(numel_, elem_, team.ithr, team.nthr);
    if (pos >= end) return;
    int64_t row = pos / row_, c = pos % row_;
    size_t i = 0;
    while (c >= col_[i] + width_[i]) ++i;
    char* dst = static_cast<char*>(io.outputs[0]);
    while (pos < end) {
      const int64_t n = std::min(col_[i] + width_[i] - c, end - pos);
      const char* src =
          static_cast<const char*>(io.inputs[i]) + (row * width_[i] + c - col_[i]) * elem_;
      // An input the memory plan put in place (engine/memory_plan.h's Concat groups) is there.
      if (src != dst + pos * elem_) std::memcpy(dst + pos * elem_, src, n * elem_);
      pos += n;
      c += n;
      if (c == col_[i] + width_[i]) {
        if (++i == width_.size()) {
          i = 0;
          c = 0;
          ++row;
        }
      }
    }
  }
  const char* name() const override { return "concat_copy"; }

 private:
  size_t elem_ = 4;
  int64_t outer_ = 1, row_ = 1, numel_ = 0;
  std::vector<int64_t> col_, width_;
};

Result<std::vector<TensorDesc>> infer_concat(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, SIZE_MAX, v.inputs.size()));
  GRAPHI_RETURN_IF_ERROR(expect_data_dtype(v, 0, "inputs"));
  GRAPHI_RETURN_IF_ERROR(expect_same_dtype(v, 0, v.inputs.size()));
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, graph::attr_int(ctx.node.attrs, ctx.where, "axis"));
  const TensorDesc& first = v.in(0);
  if (first.rank() == 0)
    return Status::invalid_graph(ctx.where + ": cannot concatenate scalars (input 0 has shape [])");
  GRAPHI_ASSIGN_OR_RETURN(int axis, normalize_axis(v, "axis", axis_attr, first));
  Shape out = first.shape;
  for (size_t i = 1; i < v.inputs.size(); ++i) {
    const Shape& s = v.in(i).shape;
    bool ok = s.size() == first.shape.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = static_cast<int>(d) == axis || s[d] == first.shape[d];
    if (!ok)
      return Status::invalid_graph(ctx.where + ": input " + std::to_string(i) + " has shape " +
                                   shape_to_string(s) + " but input 0 has shape " +
                                   shape_to_string(first.shape) + "; all dims except axis " +
                                   std::to_string(axis) + " must match");
    out[axis] += s[axis];
  }
  return std::vector<TensorDesc>{TensorDesc{first.dtype, out}};
}

// ---- Split ----

// The input as [outer, row]; output o takes columns [col_[o], col_[o] + width_[o]).
class SplitKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    const TensorDesc& in = *ctx.inputs[0];
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr,
                            graph::attr_int(ctx.node.attrs, ctx.where, "axis", 0));
    const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + in.rank() : axis_attr);
    elem_ = dtype_size(in.dtype);
    const int64_t inner = prod(in.shape, axis + 1, in.shape.size());
    row_ = in.shape[axis] * inner;
    numel_ = in.numel();
    int64_t col = 0;
    for (const TensorDesc* d : ctx.outputs) {
      col_.push_back(col);
      width_.push_back(d->shape[axis] * inner);
      col += width_.back();
    }
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [pos, end] = line_range(numel_, elem_, team.ithr, team.nthr);
    if (pos >= end) return;
    int64_t row = pos / row_, c = pos % row_;
    size_t o = 0;
    while (c >= col_[o] + width_[o]) ++o;
    const char* src = static_cast<const char*>(io.inputs[0]);
    while (pos < end) {
      const int64_t n = std::min(col_[o] + width_[o] - c, end - pos);
      char* dst = static_cast<char*>(io.outputs[o]);
      std::memcpy(dst + (row * width_[o] + c - col_[o]) * elem_, src + pos * elem_, n * elem_);
      pos += n;
      c += n;
      if (c == col_[o] + width_[o]) {
        if (++o == width_.size()) {
          o = 0;
          c = 0;
          ++row;
        }
      }
    }
  }
  const char* name() const override { return "split_copy"; }

 private:
  size_t elem_ = 4;
  int64_t row_ = 1, numel_ = 0;
  std::vector<int64_t> col_, width_;
};

// Sizes from input 1 or attribute 'split'; otherwise an equal split over the declared outputs
// (ONNX 18's 'num_outputs' allows a smaller last chunk, as ONNX specifies).
Result<std::vector<TensorDesc>> infer_split(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 2, 1));
  GRAPHI_RETURN_IF_ERROR(expect_data_dtype(v, 0, "input"));
  const TensorDesc& in = v.in(0);
  if (in.rank() == 0)
    return Status::invalid_graph(ctx.where + ": cannot split a scalar (input has shape [])");
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, graph::attr_int(ctx.node.attrs, ctx.where, "axis", 0));
  GRAPHI_ASSIGN_OR_RETURN(int axis, normalize_axis(v, "axis", axis_attr, in));
  const int64_t dim = in.shape[axis];
  const int64_t n_out = static_cast<int64_t>(ctx.num_outputs);
  const bool has_attr = ctx.node.attrs.has("split");
  std::vector<int64_t> sizes;
  if (v.has_input(1) || has_attr) {
    if (v.has_input(1) && has_attr)
      return Status::invalid_graph(ctx.where +
                                   ": give the split sizes either as input 1 or as "
                                   "attribute 'split', not both");
    if (v.has_input(1)) {
      GRAPHI_ASSIGN_OR_RETURN(sizes, const_ints_input(v, 1, "split"));
    } else {
      GRAPHI_ASSIGN_OR_RETURN(sizes, graph::attr_ints(ctx.node.attrs, ctx.where, "split"));
    }
    const std::string s = ints_to_string(sizes);
    if (static_cast<int64_t>(sizes.size()) != n_out)
      return Status::invalid_graph(ctx.where + ": 'split' = " + s + " has " +
                                   std::to_string(sizes.size()) + " entries but the node has " +
                                   std::to_string(n_out) + " outputs");
    int64_t sum = 0;
    for (int64_t x : sizes) {
      if (x < 1)
        return Status::invalid_graph(ctx.where + ": 'split' = " + s +
                                     " has a size below 1 (empty "
                                     "outputs are not supported)");
      if (x > dim)  // also keeps the sum from overflowing on corrupt sizes
        return Status::invalid_graph(ctx.where + ": 'split' = " + s + " has a size above " +
                                     std::to_string(dim) + ", the size of axis " +
                                     std::to_string(axis) + " of input " +
                                     shape_to_string(in.shape));
      sum += x;
    }
    if (sum != dim)
      return Status::invalid_graph(ctx.where + ": 'split' = " + s + " sums to " +
                                   std::to_string(sum) + " but axis " + std::to_string(axis) +
                                   " of input " + shape_to_string(in.shape) + " has size " +
                                   std::to_string(dim));
  } else {
    GRAPHI_ASSIGN_OR_RETURN(int64_t num_attr,
                            graph::attr_int(ctx.node.attrs, ctx.where, "num_outputs", 0));
    if (num_attr != 0 && num_attr != n_out)
      return Status::invalid_graph(ctx.where +
                                   ": attribute 'num_outputs' = " + std::to_string(num_attr) +
                                   " but the node has " + std::to_string(n_out) + " outputs");
    if (n_out < 1) return Status::invalid_graph(ctx.where + ": has no outputs");
    if (dim % n_out == 0) {
      sizes.assign(static_cast<size_t>(n_out), dim / n_out);
    } else if (num_attr != 0) {
      const int64_t chunk = (dim + n_out - 1) / n_out;
      const int64_t last = dim - chunk * (n_out - 1);
      if (last < 1)
        return Status::invalid_graph(ctx.where + ": axis " + std::to_string(axis) + " of input " +
                                     shape_to_string(in.shape) + " is too short for " +
                                     std::to_string(n_out) + " outputs");
      sizes.assign(static_cast<size_t>(n_out - 1), chunk);
      sizes.push_back(last);
    } else {
      return Status::invalid_graph(ctx.where + ": axis " + std::to_string(axis) + " of input " +
                                   shape_to_string(in.shape) + " (size " + std::to_string(dim) +
                                   ") does not divide into " + std::to_string(n_out) +
                                   " equal outputs; give attribute 'split'");
    }
  }
  std::vector<TensorDesc> out;
  for (int64_t x : sizes) {
    TensorDesc d = in;
    d.shape[axis] = x;
    out.push_back(d);
  }
  return out;
}

// ---- Transpose, Slice: a strided gather into a contiguous output ----

// dst[i] = src[base + sum_d idx_d(i) * strides[d]] with dims merged where the source is
// contiguous across them; strides may be negative (Slice with negative steps).
struct GatherPlan {
  static constexpr int kMaxRank = 16;
  int rank = 1;
  int64_t numel = 1, base = 0;
  int64_t dims[kMaxRank] = {1};
  int64_t strides[kMaxRank] = {0};
};

Result<GatherPlan> make_gather_plan(const std::string& where, const Shape& dims,
                                    const std::vector<int64_t>& strides, int64_t base) {
  GatherPlan p;
  p.base = base;
  p.numel = shape_numel(dims);
  int r = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (r > 0 && p.strides[r - 1] == strides[d] * dims[d]) {
      p.dims[r - 1] *= dims[d];
      p.strides[r - 1] = strides[d];
      continue;
    }
    if (r == GatherPlan::kMaxRank)
      return Status::unsupported(where + ": more than " + std::to_string(GatherPlan::kMaxRank) +
                                 " non-mergeable dims");
    p.dims[r] = dims[d];
    p.strides[r] = strides[d];
    ++r;
  }
  p.rank = std::max(r, 1);
  return p;
}

template <typename T>
void strided_copy(T* dst, const T* src, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
}

// Copies output elements [begin, end) of the plan; T is a same-size stand-in for the dtype.
template <typename T>
void gather_range(const GatherPlan& p, const T* src, T* dst, int64_t begin, int64_t end) {
  const int r = p.rank;
  int64_t idx[GatherPlan::kMaxRank] = {0};
  int64_t off = p.base, rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    off += idx[d] * p.strides[d];
  }
  const int64_t row = p.dims[r - 1], s = p.strides[r - 1];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = std::min(row - idx[r - 1], end - pos);
    if (s == 1)
      std::memcpy(dst + pos, src + off, static_cast<size_t>(n) * sizeof(T));
    else
      strided_copy(dst + pos, src + off, n, s);
    pos += n;
    if (pos >= end) break;
    off -= idx[r - 1] * s;  // back to the row start, then carry into the outer dims
    idx[r - 1] = 0;
    for (int d = r - 2; d >= 0; --d) {
      off += p.strides[d];
      if (++idx[d] < p.dims[d]) break;
      off -= idx[d] * p.strides[d];
      idx[d] = 0;
    }
  }
}

// Contiguous strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

class GatherKernel : public Kernel {
 public:
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = line_range(plan_.numel, elem_, team.ithr, team.nthr);
    if (begin >= end) return;
    if (elem_ == 8)
      gather_range(plan_, static_cast<const int64_t*>(io.inputs[0]),
                   static_cast<int64_t*>(io.outputs[0]), begin, end);
    else
      gather_range(plan_, static_cast<const int32_t*>(io.inputs[0]),
                   static_cast<int32_t*>(io.outputs[0]), begin, end);
  }

 protected:
  const GatherPlan& plan() const { return plan_; }
  Status set_plan(const KernelContext& ctx, const Shape& out, const std::vector<int64_t>& strides,
                  int64_t base) {
    elem_ = dtype_size(ctx.inputs[0]->dtype);
    if (elem_ != 4 && elem_ != 8) return Status::unsupported("element size must be 4 or 8 bytes");
    GRAPHI_ASSIGN_OR_RETURN(plan_, make_gather_plan(ctx.where, out, strides, base));
    return Status::ok();
  }

 private:
  GatherPlan plan_;
  size_t elem_ = 4;
};

// Transpose: perm (default: reversed dims); out dim i is input dim perm[i].
Result<std::vector<int64_t>> transpose_perm(const NodeView& v) {
  const TensorDesc& in = v.in(0);
  std::vector<int64_t> dflt(in.shape.size());
  for (size_t i = 0; i < dflt.size(); ++i) dflt[i] = static_cast<int64_t>(dflt.size() - 1 - i);
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                          graph::attr_ints(v.node.attrs, v.where, "perm", dflt));
  std::vector<bool> seen(in.shape.size(), false);
  bool ok = perm.size() == in.shape.size();
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < in.rank() && !seen[static_cast<size_t>(perm[i])];
    if (ok) seen[static_cast<size_t>(perm[i])] = true;
  }
  if (!ok)
    return Status::invalid_graph(v.where + ": attribute 'perm' = " + ints_to_string(perm) +
                                 " is not a permutation of 0.." + std::to_string(in.rank() - 1) +
                                 " for input of shape " + shape_to_string(in.shape));
  return perm;
}

Result<std::vector<TensorDesc>> infer_transpose(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_data_dtype(v, 0, "data"));
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> perm, transpose_perm(v));
  TensorDesc out = v.in(0);
  for (size_t i = 0; i < perm.size(); ++i)
    out.shape[i] = v.in(0).shape[static_cast<size_t>(perm[i])];
  return std::vector<TensorDesc>{out};
}

class TransposeKernel final : public GatherKernel {
 public:
  Status init(const KernelContext& ctx) override {
    NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> perm, transpose_perm(v));
    const std::vector<int64_t> in_strides = contiguous_strides(ctx.inputs[0]->shape);
    std::vector<int64_t> strides(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) strides[i] = in_strides[static_cast<size_t>(perm[i])];
    GRAPHI_RETURN_IF_ERROR(set_plan(ctx, ctx.outputs[0]->shape, strides, 0));
    // A batch of 2-D transposes (the output's last merged dim strided in the source, the one
    // before it contiguous; 4-byte elements, both sides >= 8): copied in tiles
    // (ops/transpose_tiles.h) instead of element by element. With fewer than 8 output columns
    // (a 3-channel image to channels-last), a loop over the source rows interleaving them.
    const GatherPlan& p = plan();
    const int r = p.rank;
    if (dtype_size(ctx.inputs[0]->dtype) == 4 && r >= 2 && p.strides[r - 2] == 1 &&
        p.strides[r - 1] > 1 && p.dims[r - 2] >= 8 && p.dims[r - 1] >= 1) {
      narrow_ = p.dims[r - 1] < 8;
      cols_ = p.dims[r - 2];
      rows_ = p.dims[r - 1];
      ld_ = p.strides[r - 1];
      // Source offset of each batch (the outer merged dims), in output order.
      int64_t batches = 1;
      for (int d = 0; d < r - 2; ++d) batches *= p.dims[d];
      batch_off_.assign(static_cast<size_t>(batches), 0);
      for (int64_t b = 0; b < batches; ++b) {
        int64_t rem = b, off = 0;
        for (int d = r - 3; d >= 0; --d) {
          off += rem % p.dims[d] * p.strides[d];
          rem /= p.dims[d];
        }
        batch_off_[static_cast<size_t>(b)] = off;
      }
    }
    return Status::ok();
  }
  const char* name() const override { return "transpose_gather"; }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (batch_off_.empty()) return GatherKernel::run(team, io);
    if (narrow_) return run_narrow(team, io);
    // Units of 64 source columns x 256 source rows, so a team shares even a single transpose.
    const int64_t col_units = (cols_ + kCols - 1) / kCols, row_units = (rows_ + kRows - 1) / kRows;
    const int64_t per_batch = col_units * row_units;
    auto [u0, u1] =
        team_range(static_cast<int64_t>(batch_off_.size()) * per_batch, team.ithr, team.nthr);
    const float* src = static_cast<const float*>(io.inputs[0]);
    float* dst = static_cast<float*>(io.outputs[0]);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / per_batch, c0 = u % per_batch / row_units * kCols,
                    r0 = u % row_units * kRows;
      transpose_block_f32(src + batch_off_[static_cast<size_t>(b)] + r0 * ld_ + c0, ld_,
                          dst + b * cols_ * rows_ + c0 * rows_ + r0, rows_,
                          std::min(kRows, rows_ - r0), std::min(kCols, cols_ - c0));
    }
  }

 private:
  // Fewer than 8 source rows (rows_): dst[x * rows_ + y] = src[y * ld_ + x], units of 4096
  // source columns.
  void run_narrow(const TeamContext& team, const Buffers& io) const noexcept {
    constexpr int64_t kUnit = 4096;
    const int64_t per_batch = (cols_ + kUnit - 1) / kUnit;
    auto [u0, u1] =
        team_range(static_cast<int64_t>(batch_off_.size()) * per_batch, team.ithr, team.nthr);
    const float* src = static_cast<const float*>(io.inputs[0]);
    float* dst = static_cast<float*>(io.outputs[0]);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / per_batch, x0 = u % per_batch * kUnit, x1 = std::min(cols_, x0 + kUnit);
      const float* s = src + batch_off_[static_cast<size_t>(b)];
      float* d = dst + b * cols_ * rows_;
      for (int64_t y = 0; y < rows_; ++y)
        for (int64_t x = x0; x < x1; ++x) d[x * rows_ + y] = s[y * ld_ + x];
    }
  }

  static constexpr int64_t kCols = 64, kRows = 256;
  int64_t cols_ = 0, rows_ = 0, ld_ = 0;  // the output's last two dims; the source's row stride
  bool narrow_ = false;                   // rows_ < 8: run_narrow
  std::vector<int64_t> batch_off_;        // empty: the element-by-element gather
};

// Slice, per input dim: the first index taken, the step and how many elements are taken.
struct SliceParams {
  std::vector<int64_t> start, step, count;
};

// ONNX Slice (opset 13: starts, ends, axes, steps as constant inputs 1-4; opset 1 style: the same
// names as attributes). Indices below 0 count from the end; out-of-range ones are clamped.
Result<SliceParams> slice_params(const NodeView& v) {
  const TensorDesc& in = v.in(0);
  const graph::Attributes& attrs = v.node.attrs;
  std::vector<int64_t> starts, ends, axes, steps;
  const bool from_inputs = v.inputs.size() > 1;
  if (from_inputs) {
    for (const char* a : {"starts", "ends", "axes", "steps"})
      if (attrs.has(a))
        return Status::invalid_graph(
            v.where + ": attribute '" + a +
            "' given together with inputs; "
            "give starts/ends/axes/steps either as inputs or as attributes");
    GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 5, 3));
    GRAPHI_ASSIGN_OR_RETURN(starts, const_ints_input(v, 1, "starts"));
    GRAPHI_ASSIGN_OR_RETURN(ends, const_ints_input(v, 2, "ends"));
    if (v.has_input(3)) {
      GRAPHI_ASSIGN_OR_RETURN(axes, const_ints_input(v, 3, "axes"));
    }
    if (v.has_input(4)) {
      GRAPHI_ASSIGN_OR_RETURN(steps, const_ints_input(v, 4, "steps"));
    }
  } else {
    GRAPHI_ASSIGN_OR_RETURN(starts, graph::attr_ints(attrs, v.where, "starts"));
    GRAPHI_ASSIGN_OR_RETURN(ends, graph::attr_ints(attrs, v.where, "ends"));
    GRAPHI_ASSIGN_OR_RETURN(axes, graph::attr_ints(attrs, v.where, "axes", {}));
    GRAPHI_ASSIGN_OR_RETURN(steps, graph::attr_ints(attrs, v.where, "steps", {}));
  }
  const size_t k = starts.size();
  if (axes.empty()) {
    axes.resize(k);
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(k, 1);
  if (ends.size() != k || axes.size() != k || steps.size() != k)
    return Status::invalid_graph(v.where + ": starts " + ints_to_string(starts) + ", ends " +
                                 ints_to_string(ends) + ", axes " + ints_to_string(axes) +
                                 " and steps " + ints_to_string(steps) +
                                 " must have the same length");
  SliceParams p;
  const size_t rank = in.shape.size();
  p.start.assign(rank, 0);
  p.step.assign(rank, 1);
  p.count = in.shape;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    GRAPHI_ASSIGN_OR_RETURN(int axis, normalize_axis(v, "axes", axes[i], in));
    if (seen[static_cast<size_t>(axis)])
      return Status::invalid_graph(v.where + ": axes " + ints_to_string(axes) + " repeat axis " +
                                   std::to_string(axis));
    seen[static_cast<size_t>(axis)] = true;
    const int64_t dim = in.shape[static_cast<size_t>(axis)], step = steps[i];
    if (step == 0)
      return Status::invalid_graph(v.where + ": steps " + ints_to_string(steps) + " contain 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t n;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    if (n == 0)
      return Status::invalid_graph(
          v.where + ": the slice of axis " + std::to_string(axis) + " (size " +
          std::to_string(dim) + ", start " + std::to_string(starts[i]) + ", end " +
          std::to_string(ends[i]) + ", step " + std::to_string(step) + ") of input " +
          shape_to_string(in.shape) + " is empty; empty tensors are not supported");
    p.start[static_cast<size_t>(axis)] = s;
    p.step[static_cast<size_t>(axis)] = step;
    p.count[static_cast<size_t>(axis)] = n;
  }
  return p;
}

Result<std::vector<TensorDesc>> infer_slice(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 5, 1));
  GRAPHI_RETURN_IF_ERROR(expect_data_dtype(v, 0, "data"));
  GRAPHI_ASSIGN_OR_RETURN(SliceParams p, slice_params(v));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, p.count}};
}

class SliceKernel final : public GatherKernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(SliceParams p, slice_params(NodeView::of_kernel(ctx)));
    const std::vector<int64_t> in_strides = contiguous_strides(ctx.inputs[0]->shape);
    std::vector<int64_t> strides(in_strides.size());
    int64_t base = 0;
    for (size_t d = 0; d < strides.size(); ++d) {
      strides[d] = in_strides[d] * p.step[d];
      base += p.start[d] * in_strides[d];
    }
    return set_plan(ctx, p.count, strides, base);
  }
  const char* name() const override { return "slice_gather"; }
};

std::unique_ptr<Kernel> make_identity() { return std::make_unique<CopyKernel>("identity_copy"); }
std::unique_ptr<Kernel> make_reshape() { return std::make_unique<CopyKernel>("reshape_copy"); }
std::unique_ptr<Kernel> make_concat() { return std::make_unique<ConcatKernel>(); }
std::unique_ptr<Kernel> make_split() { return std::make_unique<SplitKernel>(); }
std::unique_ptr<Kernel> make_transpose() { return std::make_unique<TransposeKernel>(); }
std::unique_ptr<Kernel> make_slice() { return std::make_unique<SliceKernel>(); }

}  // namespace

void register_shape_ops(Registry& r) {
  r.add({"Concat", infer_concat, cost_copy, false, {make_concat}});
  r.add({"Split", infer_split, cost_copy, false, {make_split}});
  r.add({"Slice", infer_slice, cost_copy, false, {make_slice}});
  r.add({"Transpose", infer_transpose, cost_copy, false, {make_transpose}});
  r.add({"Reshape", infer_reshape, cost_copy, true, {make_reshape}});
  r.add({"Identity", infer_identity, cost_copy, true, {make_identity}});
}

}  // namespace graphi::ops
