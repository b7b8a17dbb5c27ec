// Import-time folding (graph/onnx/onnx_fold.h): the dispatcher fold_node, the shape and view ops
// (Shape, Reshape, Squeeze, Slice, Split, Gather, Concat, Transpose, Tile, Range, ...), Constant,
// and the helpers shared with onnx_fold_math.cpp (element-wise, variadic, unary and reductions).
#include "graph/onnx/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "graph/float16.h"
#include "graph/onnx/onnx_fold_internal.h"

namespace graphi::graph::onnx {

namespace fold_detail {

// Keeps values representable in the tensor's type: FLOAT rounded to float32, narrow integers
// wrapped, BOOL 0/1 (so folding a chain gives what running it in that type would).
void fit_to_type(HostTensor& t) {
  switch (t.type) {
    case kFloat:
      for (double& v : t.f) v = static_cast<double>(static_cast<float>(v));
      break;
    case kFloat16:
      for (double& v : t.f) v = static_cast<double>(round_to_half(static_cast<float>(v)));
      break;
    case kBfloat16:
      for (double& v : t.f) v = static_cast<double>(round_to_bfloat16(static_cast<float>(v)));
      break;
    case kInt32:
      for (int64_t& v : t.i) v = static_cast<int32_t>(v);
      break;
    case kInt16:
      for (int64_t& v : t.i) v = static_cast<int16_t>(v);
      break;
    case kInt8:
      for (int64_t& v : t.i) v = static_cast<int8_t>(v);
      break;
    case kUint32:
      for (int64_t& v : t.i) v = static_cast<uint32_t>(v);
      break;
    case kUint16:
      for (int64_t& v : t.i) v = static_cast<uint16_t>(v);
      break;
    case kUint8:
      for (int64_t& v : t.i) v = static_cast<uint8_t>(v);
      break;
    case kBool:
      for (int64_t& v : t.i) v = v != 0;
      break;
    default:
      break;
  }
}

void set_value(HostTensor& t, size_t k, double v) {
  if (t.is_float())
    t.f[k] = v;
  else
    t.i[k] = std::isfinite(v) ? static_cast<int64_t>(v) : 0;
}

// Copies element sk of src to element dk of dst (same type class).
void copy_elem(HostTensor& dst, size_t dk, const HostTensor& src, size_t sk) {
  if (dst.is_float())
    dst.f[dk] = src.get_f(sk);
  else
    dst.i[dk] = src.get_i(sk);
}

namespace {
// The element limit of the fold running on this thread (fold_node's `max_elements`): kept here
// rather than passed to every shape and math helper that sizes a result.
thread_local int64_t t_max_elements = kMaxFoldElements;
}  // namespace

int64_t max_fold_elements() { return t_max_elements; }

Status check_size(const Shape& s, const std::string& where) {
  const int64_t limit = t_max_elements;
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return Status::invalid_graph(where + ": negative dim in " + shape_to_string(s));
    if (d > 0 && n > limit / d)
      return Status::unsupported(
          where + ": the result " + shape_to_string(s) + " has more than " + std::to_string(limit) +
          " elements, too many to evaluate at import time (folding produces at most " +
          std::to_string(kMaxFoldElements) +
          " elements per tensor and, per model, 4 times the elements of its constants or " +
          std::to_string(kMinFoldBudget) + ", whichever is larger; graph/onnx/ONNX.md, Limits)");
    n *= d;
  }
  return Status::ok();
}

Result<int64_t> a_int(const Node& n, const char* name, int64_t dflt, const std::string& where) {
  const Attr* a = n.attr(name);
  if (!a) return dflt;
  if (a->type != kAttrInt)
    return Status::invalid_graph(where + ": attribute '" + name + "' must be INT, got " +
                                 attr_type_name(a->type));
  return a->i;
}

Result<std::optional<std::vector<int64_t>>> a_ints(const Node& n, const char* name,
                                                   const std::string& where) {
  const Attr* a = n.attr(name);
  if (!a) return std::optional<std::vector<int64_t>>();
  if (a->type != kAttrInts)
    return Status::invalid_graph(where + ": attribute '" + name + "' must be INTS, got " +
                                 attr_type_name(a->type));
  return std::optional<std::vector<int64_t>>(a->ints);
}

Status need_inputs(const Ins& in, size_t required, const std::string& where) {
  for (size_t k = 0; k < required; ++k)
    if (k >= in.size() || !in[k])
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
  return Status::ok();
}

Result<std::vector<int64_t>> ints_of(const HostTensor* t, const char* what,
                                     const std::string& where) {
  if (t->is_float() || t->shape.size() > 1)
    return Status::invalid_graph(where + ": input '" + what +
                                 "' must be a 1-D integer tensor, got " + t->desc());
  return t->i;
}

Result<int64_t> norm_axis(int64_t axis, int64_t rank, const std::string& where, const char* what) {
  if (axis < -rank || axis >= rank)
    return Status::invalid_graph(where + ": " + what + " " + std::to_string(axis) +
                                 " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// For every element of `out`, the flat index of the element of `in` (broadcast to out) it reads.
std::vector<size_t> broadcast_index(const Shape& out, const Shape& in) {
  const size_t r = out.size();
  std::vector<int64_t> st(r, 0);
  int64_t s = 1;
  for (size_t d = in.size(); d-- > 0;) {
    const size_t od = r - in.size() + d;
    st[od] = in[d] == 1 ? 0 : s;
    s *= in[d];
  }
  const auto n = static_cast<size_t>(shape_numel(out));
  std::vector<size_t> idx(n);
  std::vector<int64_t> c(r, 0);
  int64_t off = 0;
  for (size_t k = 0; k < n; ++k) {
    idx[k] = static_cast<size_t>(off);
    for (size_t d = r; d-- > 0;) {
      off += st[d];
      if (++c[d] < out[d]) break;
      off -= st[d] * out[d];
      c[d] = 0;
    }
  }
  return idx;
}

namespace {

// dst (of shape `out`) = src (of shape `in`) broadcast to `out`, copied in whole runs: the
// innermost dims where `in` already has `out`'s extent form one contiguous block per outer
// position. No per-element index map (broadcast_index): a 1 KiB model may Expand a tiny tensor
// to tens of millions of elements, and an index per element doubled the memory and, in the
// instrumented fuzzing build, took over 10 s (tests/fuzz/regressions/onnx/expand-*).
template <class T>
void expand_into(std::vector<T>& dst, const std::vector<T>& src, const Shape& out,
                 const Shape& in) {
  if (dst.empty()) return;
  const size_t r = out.size();
  Shape a(r, 1);  // `in` aligned to the output's rank
  for (size_t d = 0; d < in.size(); ++d) a[r - in.size() + d] = in[d];
  size_t split = r;
  size_t block = 1;
  while (split > 0 && a[split - 1] == out[split - 1]) {
    --split;
    block *= static_cast<size_t>(out[split]);
  }
  std::vector<int64_t> st(split, 0);  // source strides of the outer dims (0: broadcast)
  int64_t s = static_cast<int64_t>(block);
  for (size_t d = split; d-- > 0;) {
    st[d] = a[d] == 1 ? 0 : s;
    s *= a[d];
  }
  std::vector<int64_t> c(split, 0);
  int64_t off = 0;
  for (size_t k = 0; k < dst.size(); k += block) {
    std::copy_n(src.begin() + off, block, dst.begin() + static_cast<std::ptrdiff_t>(k));
    for (size_t d = split; d-- > 0;) {
      off += st[d];
      if (++c[d] < out[d]) break;
      off -= st[d] * out[d];
      c[d] = 0;
    }
  }
}

}  // namespace

// Gathers src elements by a strided walk: out[k] = src[base + sum idx_d * strides[d]].
HostTensor strided(const HostTensor& src, const Shape& out_shape,
                   const std::vector<int64_t>& strides, int64_t base) {
  HostTensor o = HostTensor::make(src.type, out_shape);
  const size_t r = out_shape.size();
  std::vector<int64_t> c(r, 0);
  int64_t off = base;
  for (size_t k = 0; k < o.numel(); ++k) {
    copy_elem(o, k, src, static_cast<size_t>(off));
    for (size_t d = r; d-- > 0;) {
      off += strides[d];
      if (++c[d] < out_shape[d]) break;
      off -= strides[d] * out_shape[d];
      c[d] = 0;
    }
  }
  return o;
}

HostTensor reshaped(const HostTensor& t, Shape s) {
  HostTensor o = t;
  o.shape = std::move(s);
  return o;
}

// Cast of every element to type `to` (ONNX Cast: float -> int truncates, -> BOOL is != 0).
Result<HostTensor> cast_to(const HostTensor& t, int64_t to, const std::string& where) {
  const auto type = static_cast<int32_t>(to);
  if (type == kString || type == kComplex64 || type == kComplex128 || type <= kUndefined ||
      type > kBfloat16)
    return Status::unsupported(where + ": Cast to " + data_type_name(type) + " is not supported");
  HostTensor o = HostTensor::make(type, t.shape);
  for (size_t k = 0; k < t.numel(); ++k) {
    if (type == kBool)
      o.i[k] = t.get_f(k) != 0.0;
    else if (o.is_float())
      o.f[k] = t.get_f(k);
    else if (t.is_float())
      o.i[k] = std::isfinite(t.f[k]) ? static_cast<int64_t>(t.f[k]) : 0;
    else
      o.i[k] = t.i[k];
  }
  fit_to_type(o);
  return o;
}

// ONNX Reshape target: 0 copies the input dim (unless allowzero), -1 is inferred.
Result<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& spec, bool allowzero,
                             const std::string& where) {
  Shape out(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t k = 0; k < spec.size(); ++k) {
    if (spec[k] == -1) {
      if (infer >= 0)
        return Status::invalid_graph(where + ": shape " + shape_to_string(spec) + " has two -1");
      infer = static_cast<int>(k);
      continue;
    }
    if (spec[k] < -1)
      return Status::invalid_graph(where + ": shape " + shape_to_string(spec) +
                                   " has a negative dim");
    out[k] = spec[k] == 0 && !allowzero ? (k < in.size() ? in[k] : -2) : spec[k];
    if (out[k] == -2)
      return Status::invalid_graph(where + ": shape " + shape_to_string(spec) + " copies dim " +
                                   std::to_string(k) + " of input " + shape_to_string(in));
    if (out[k] > 0 && known > (int64_t{1} << 50) / out[k])
      return Status::invalid_graph(where + ": shape " + shape_to_string(spec) + " is too large");
    known *= out[k];
  }
  const int64_t n = shape_numel(in);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      return Status::invalid_graph(where + ": cannot reshape " + shape_to_string(in) + " to " +
                                   shape_to_string(spec));
    out[static_cast<size_t>(infer)] = n / known;
  } else if (known != n) {
    return Status::invalid_graph(where + ": cannot reshape " + shape_to_string(in) + " to " +
                                 shape_to_string(spec));
  }
  return out;
}

Result<std::vector<int64_t>> axes_from(const Node& n, const Ins& in, size_t input_slot,
                                       int64_t opset, int64_t input_since, const std::string& where,
                                       bool* given) {
  *given = false;
  if (opset >= input_since && in.size() > input_slot && in[input_slot]) {
    *given = true;
    return ints_of(in[input_slot], "axes", where);
  }
  // Before input_since the attribute; after it, an exporter's leftover attribute is honoured as
  // graphi's run-time Reduce ops honour it (rather than silently reducing every axis).
  GRAPHI_ASSIGN_OR_RETURN(auto a, a_ints(n, "axes", where));
  if (a) *given = true;
  return a ? *a : std::vector<int64_t>{};
}

// Sorted, non-negative, duplicate-free axes for a tensor of `rank`.
Result<std::vector<int64_t>> normalize_axes(std::vector<int64_t> axes, int64_t rank,
                                            const std::string& where) {
  for (int64_t& a : axes) {
    GRAPHI_ASSIGN_OR_RETURN(a, norm_axis(a, rank, where, "axis"));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return Status::invalid_graph(where + ": repeated axis in " + shape_to_string(axes));
  return axes;
}

}  // namespace fold_detail

namespace {

using namespace fold_detail;

// Where a Slice of a tensor of shape `x` reads: the output shape, the input stride of each
// output dim and the first element. Bounds from inputs 1-4 (opset >= 10) or the attributes;
// input 0 is not read.
struct SliceGeometry {
  Shape out;
  std::vector<int64_t> strides;
  int64_t base = 0;
};

Result<SliceGeometry> slice_geometry(const Node& n, int64_t opset, const Ins& in, const Shape& x,
                                     const std::string& where) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset >= 10) {
    if (in.size() < 3 || !in[1] || !in[2])
      return Status::invalid_graph(where + ": needs inputs starts and ends");
    GRAPHI_ASSIGN_OR_RETURN(starts, ints_of(in[1], "starts", where));
    GRAPHI_ASSIGN_OR_RETURN(ends, ints_of(in[2], "ends", where));
    if (in.size() > 3 && in[3]) {
      GRAPHI_ASSIGN_OR_RETURN(axes, ints_of(in[3], "axes", where));
    }
    if (in.size() > 4 && in[4]) {
      GRAPHI_ASSIGN_OR_RETURN(steps, ints_of(in[4], "steps", where));
    }
  } else {
    GRAPHI_ASSIGN_OR_RETURN(auto s, a_ints(n, "starts", where));
    GRAPHI_ASSIGN_OR_RETURN(auto e, a_ints(n, "ends", where));
    GRAPHI_ASSIGN_OR_RETURN(auto a, a_ints(n, "axes", where));
    if (!s || !e) return Status::invalid_graph(where + ": missing attribute 'starts' or 'ends'");
    starts = *s;
    ends = *e;
    if (a) axes = *a;
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return Status::invalid_graph(where + ": starts, ends, axes and steps differ in length");
  const auto rank = static_cast<int64_t>(x.size());
  SliceGeometry g;
  g.out = x;
  const std::vector<int64_t> st = strides_of(x);
  g.strides = st;
  for (size_t k = 0; k < starts.size(); ++k) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis, norm_axis(axes[k], rank, where, "axis"));
    const int64_t dim = x[static_cast<size_t>(axis)], step = steps[k];
    if (step == 0) return Status::invalid_graph(where + ": step 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t cnt;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      cnt = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      cnt = s > e ? (s - e - step - 1) / (-step) : 0;
    }
    g.out[static_cast<size_t>(axis)] = cnt;
    g.strides[static_cast<size_t>(axis)] = st[static_cast<size_t>(axis)] * step;
    g.base += s * st[static_cast<size_t>(axis)];
  }
  return g;
}

Result<Outs> fold_slice(const Node& n, int64_t opset, const Ins& in, const std::string& where) {
  const HostTensor& x = *in[0];
  GRAPHI_ASSIGN_OR_RETURN(SliceGeometry g, slice_geometry(n, opset, in, x.shape, where));
  if (shape_numel(g.out) == 0) return Outs{HostTensor::make(x.type, g.out)};
  return Outs{strided(x, g.out, g.strides, g.base)};
}

Result<Outs> fold_split(const Node& n, int64_t opset, const Ins& in, const std::string& where) {
  const HostTensor& x = *in[0];
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, a_int(n, "axis", 0, where));
  const auto rank = static_cast<int64_t>(x.shape.size());
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, norm_axis(axis_attr, rank, where, "axis"));
  const int64_t dim = x.shape[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (opset >= 13 && in.size() > 1 && in[1]) {
    GRAPHI_ASSIGN_OR_RETURN(sizes, ints_of(in[1], "split", where));
  } else if (opset < 13) {
    GRAPHI_ASSIGN_OR_RETURN(auto a, a_ints(n, "split", where));
    if (a) sizes = *a;
  }
  const auto nout = static_cast<int64_t>(n.outputs.size());
  if (sizes.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t num, a_int(n, "num_outputs", nout, where));
    if (num < 1) return Status::invalid_graph(where + ": no outputs");
    const int64_t chunk = (dim + num - 1) / num;
    if (dim % num != 0 && !n.attr("num_outputs"))
      return Status::invalid_graph(where + ": dim " + std::to_string(dim) +
                                   " does not split into " + std::to_string(num) + " equal parts");
    for (int64_t k = 0; k < num; ++k) sizes.push_back(std::min(chunk, dim - k * chunk));
  }
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s;
  if (sum != dim || static_cast<int64_t>(sizes.size()) != nout)
    return Status::invalid_graph(where + ": split " + shape_to_string(sizes) +
                                 " does not match dim " + std::to_string(dim) + " and " +
                                 std::to_string(nout) + " outputs");
  Outs outs;
  const std::vector<int64_t> st = strides_of(x.shape);
  int64_t start = 0;
  for (int64_t s : sizes) {
    Shape os = x.shape;
    os[static_cast<size_t>(axis)] = s;
    outs.push_back(s == 0 ? HostTensor::make(x.type, os)
                          : strided(x, os, st, start * st[static_cast<size_t>(axis)]));
    start += s;
  }
  return outs;
}

Result<Outs> fold_gather(const Node& n, const Ins& in, const std::string& where) {
  const HostTensor& x = *in[0];
  const HostTensor& ind = *in[1];
  if (ind.is_float())
    return Status::invalid_graph(where + ": indices must be integers, got " + ind.desc());
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, a_int(n, "axis", 0, where));
  const auto rank = static_cast<int64_t>(x.shape.size());
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, norm_axis(axis_attr, rank, where, "axis"));
  const auto ax = static_cast<size_t>(axis);
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ind.shape.begin(), ind.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  const int64_t outer = shape_numel(Shape(x.shape.begin(), x.shape.begin() + axis));
  const int64_t inner = shape_numel(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  const int64_t dim = x.shape[ax];
  GRAPHI_RETURN_IF_ERROR(check_size(out, where));
  HostTensor o = HostTensor::make(x.type, out);
  size_t k = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (size_t j = 0; j < ind.numel(); ++j) {
      int64_t idx = ind.i[j];
      if (idx < 0) idx += dim;
      if (idx < 0 || idx >= dim)
        return Status::invalid_graph(where + ": index " + std::to_string(ind.i[j]) +
                                     " is out of range for axis " + std::to_string(axis) +
                                     " of size " + std::to_string(dim));
      for (int64_t b = 0; b < inner; ++b)
        copy_elem(o, k++, x, static_cast<size_t>((a * dim + idx) * inner + b));
    }
  return Outs{std::move(o)};
}

Result<Outs> fold_concat(const Node& n, const Ins& in, const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis_attr, a_int(n, "axis", 0, where));
  std::vector<const HostTensor*> xs;
  for (const HostTensor* t : in)
    if (t) xs.push_back(t);
  if (xs.empty()) return Status::invalid_graph(where + ": no inputs");
  const auto rank = static_cast<int64_t>(xs[0]->shape.size());
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, norm_axis(axis_attr, rank, where, "axis"));
  const auto ax = static_cast<size_t>(axis);
  Shape out = xs[0]->shape;
  out[ax] = 0;
  for (const HostTensor* t : xs) {
    bool ok = t->shape.size() == out.size() && t->is_float() == xs[0]->is_float();
    for (size_t d = 0; ok && d < out.size(); ++d) ok = d == ax || t->shape[d] == xs[0]->shape[d];
    if (!ok)
      return Status::invalid_graph(where + ": inputs " + xs[0]->desc() + " and " + t->desc() +
                                   " do not concatenate");
    out[ax] += t->shape[ax];
  }
  HostTensor o = HostTensor::make(xs[0]->type, out);
  const int64_t outer = shape_numel(Shape(out.begin(), out.begin() + axis));
  size_t k = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (const HostTensor* t : xs) {
      const int64_t row = shape_numel(Shape(t->shape.begin() + axis, t->shape.end()));
      for (int64_t b = 0; b < row; ++b) copy_elem(o, k++, *t, static_cast<size_t>(a * row + b));
    }
  return Outs{std::move(o)};
}

Result<Outs> fold_transpose(const Node& n, const Ins& in, const std::string& where) {
  const HostTensor& x = *in[0];
  const size_t r = x.shape.size();
  std::vector<int64_t> perm(r);
  for (size_t d = 0; d < r; ++d) perm[d] = static_cast<int64_t>(r - 1 - d);
  GRAPHI_ASSIGN_OR_RETURN(auto p, a_ints(n, "perm", where));
  if (p) perm = *p;
  std::vector<bool> seen(r, false);
  bool ok = perm.size() == r;
  for (size_t d = 0; ok && d < r; ++d) {
    ok = perm[d] >= 0 && perm[d] < static_cast<int64_t>(r) && !seen[static_cast<size_t>(perm[d])];
    if (ok) seen[static_cast<size_t>(perm[d])] = true;
  }
  if (!ok)
    return Status::invalid_graph(where + ": perm " + shape_to_string(perm) +
                                 " is not a permutation");
  const std::vector<int64_t> st = strides_of(x.shape);
  Shape out(r);
  std::vector<int64_t> strides(r);
  for (size_t d = 0; d < r; ++d) {
    out[d] = x.shape[static_cast<size_t>(perm[d])];
    strides[d] = st[static_cast<size_t>(perm[d])];
  }
  return Outs{strided(x, out, strides, 0)};
}

Result<Outs> fold_constant(const Node& n, const std::string& where) {
  if (n.attrs.size() != 1)
    return Status::invalid_graph(where + ": Constant needs exactly one value attribute, has " +
                                 std::to_string(n.attrs.size()));
  const Attr& a = n.attrs[0];
  if (a.name == "value" && a.t) return Outs{*a.t};
  if (a.name == "value_float" && a.type == kAttrFloat) {
    HostTensor t = HostTensor::make(kFloat, {});
    t.f[0] = a.f;
    return Outs{t};
  }
  if (a.name == "value_floats" && a.type == kAttrFloats) {
    HostTensor t = HostTensor::make(kFloat, {static_cast<int64_t>(a.floats.size())});
    for (size_t k = 0; k < a.floats.size(); ++k) t.f[k] = a.floats[k];
    return Outs{t};
  }
  if (a.name == "value_int" && a.type == kAttrInt) {
    HostTensor t = HostTensor::make(kInt64, {});
    t.i[0] = a.i;
    return Outs{t};
  }
  if (a.name == "value_ints" && a.type == kAttrInts) {
    HostTensor t = HostTensor::make(kInt64, {static_cast<int64_t>(a.ints.size())});
    t.i = a.ints;
    return Outs{t};
  }
  return Status::unsupported(where + ": Constant with attribute '" + a.name + "' (" +
                             attr_type_name(a.type) +
                             ") is not supported (strings and sparse "
                             "tensors are not)");
}

}  // namespace

using namespace fold_detail;

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b, const std::string& where) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t x = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    const int64_t y = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1)
      return Status::invalid_graph(where + ": shapes " + shape_to_string(a) + " and " +
                                   shape_to_string(b) + " do not broadcast");
    out[k] = x == 1 ? y : x;
  }
  return out;
}

const std::vector<std::string>& foldable_ops() {
  static const std::vector<std::string> kOps = [] {
    std::vector<std::string> v = {"Abs",
                                  "Add",
                                  "And",
                                  "BlackmanWindow",
                                  "Cast",
                                  "CastLike",
                                  "Ceil",
                                  "Clip",
                                  "Concat",
                                  "Constant",
                                  "ConstantOfShape",
                                  "DequantizeLinear",
                                  "Div",
                                  "Dropout",
                                  "Equal",
                                  "Exp",
                                  "Expand",
                                  "EyeLike",
                                  "Flatten",
                                  "Floor",
                                  "Gather",
                                  "Greater",
                                  "GreaterOrEqual",
                                  "HammingWindow",
                                  "HannWindow",
                                  "Identity",
                                  "Less",
                                  "LessOrEqual",
                                  "Log",
                                  "Max",
                                  "Mean",
                                  "MelWeightMatrix",
                                  "Min",
                                  "Mod",
                                  "Mul",
                                  "Neg",
                                  "Not",
                                  "OneHot",
                                  "Or",
                                  "Pow",
                                  "QuantizeLinear",
                                  "Range",
                                  "Reciprocal",
                                  "ReduceMax",
                                  "ReduceMean",
                                  "ReduceMin",
                                  "ReduceProd",
                                  "ReduceSum",
                                  "Relu",
                                  "Reshape",
                                  "Round",
                                  "ScatterElements",
                                  "ScatterND",
                                  "Shape",
                                  "Sigmoid",
                                  "Sign",
                                  "Size",
                                  "Slice",
                                  "Split",
                                  "Sqrt",
                                  "Squeeze",
                                  "Sub",
                                  "Sum",
                                  "Tanh",
                                  "Tile",
                                  "Transpose",
                                  "Trilu",
                                  "Unsqueeze",
                                  "Where",
                                  "Xor"};
    std::sort(v.begin(), v.end());
    return v;
  }();
  return kOps;
}

bool is_foldable_op(const std::string& op) {
  const auto& v = foldable_ops();
  return std::binary_search(v.begin(), v.end(), op);
}

namespace {

Result<std::vector<HostTensor>> fold_node_unlimited(const Node& n, int64_t opset, const Ins& in,
                                                    const std::string& where) {
  const std::string& op = n.op;
  if (op == "Constant") return fold_constant(n, where);
  if (op != "ConstantOfShape" && op != "Concat" && op != "Sum" && op != "Min" && op != "Max" &&
      op != "Mean")
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 1, where));
  if (op == "Shape") {
    const Shape& s = in[0]->shape;
    const auto r = static_cast<int64_t>(s.size());
    GRAPHI_ASSIGN_OR_RETURN(int64_t start, a_int(n, "start", 0, where));
    GRAPHI_ASSIGN_OR_RETURN(int64_t end, a_int(n, "end", r, where));
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    HostTensor t = HostTensor::make(kInt64, {end - start});
    for (int64_t k = start; k < end; ++k)
      t.i[static_cast<size_t>(k - start)] = s[static_cast<size_t>(k)];
    return Outs{t};
  }
  if (op == "EyeLike") {
    // Ones on the k-th diagonal of a 2-D shape: only the input's shape and type are read.
    const Shape& s = in[0]->shape;
    if (s.size() != 2)
      return Status::invalid_graph(where + ": input must be 2-D, got " + shape_to_string(s));
    GRAPHI_ASSIGN_OR_RETURN(int64_t k, a_int(n, "k", 0, where));
    GRAPHI_ASSIGN_OR_RETURN(int64_t type, a_int(n, "dtype", in[0]->type, where));
    GRAPHI_RETURN_IF_ERROR(check_size(s, where));
    HostTensor t = HostTensor::make(static_cast<int32_t>(type), s);
    for (int64_t r = 0; r < s[0]; ++r)
      if (r + k >= 0 && r + k < s[1]) t.set(static_cast<size_t>(r * s[1] + r + k), 1);
    return Outs{std::move(t)};
  }
  if (op == "OneHot") {
    // values[1] where indices (k or k - depth) meet position k along `axis`, values[0] elsewhere.
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 3, where));
    if (in[1]->numel() != 1 || in[2]->numel() != 2)
      return Status::invalid_graph(where + ": depth must be a scalar and values two elements");
    const double depth_f = in[1]->get_f(0);
    if (!(depth_f >= 1 && depth_f <= static_cast<double>(max_fold_elements())))
      return Status::invalid_graph(where + ": depth " + std::to_string(depth_f) +
                                   " is out of range");
    const auto depth = static_cast<int64_t>(depth_f);
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis, a_int(n, "axis", -1, where));
    const Shape& is = in[0]->shape;
    const auto r = static_cast<int64_t>(is.size()) + 1;
    if (axis < -r || axis >= r) return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += r;
    Shape out = is;
    out.insert(out.begin() + axis, depth);
    GRAPHI_RETURN_IF_ERROR(check_size(out, where));
    HostTensor t = HostTensor::make(in[2]->type, out);
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis); d < is.size(); ++d) inner *= is[d];
    const int64_t outer = shape_numel(is) / std::max<int64_t>(inner, 1);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < depth; ++k)
        for (int64_t i = 0; i < inner; ++i) {
          const auto idx = static_cast<int64_t>(in[0]->get_f(static_cast<size_t>(o * inner + i)));
          const bool hot = idx == k || idx == k - depth;
          const auto at = static_cast<size_t>((o * depth + k) * inner + i);
          if (t.is_float())
            t.f[at] = in[2]->get_f(hot ? 1 : 0);
          else
            t.i[at] = in[2]->get_i(hot ? 1 : 0);
        }
    return Outs{std::move(t)};
  }
  if (op == "Size") {
    HostTensor t = HostTensor::make(kInt64, {});
    t.i[0] = shape_numel(in[0]->shape);
    return Outs{t};
  }
  if (op == "Identity") return Outs{*in[0]};
  if (op == "Dropout") {
    Outs o{*in[0]};
    if (n.outputs.size() > 1) {
      HostTensor mask = HostTensor::make(kBool, in[0]->shape);
      std::fill(mask.i.begin(), mask.i.end(), 1);
      o.push_back(std::move(mask));
    }
    return o;
  }
  if (op == "ConstantOfShape") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 1, where));
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ints_of(in[0], "input", where));
    GRAPHI_RETURN_IF_ERROR(check_size(shape, where));
    HostTensor v = HostTensor::make(kFloat, {1});
    if (const Attr* a = n.attr("value")) {
      if (!a->t || a->t->numel() != 1)
        return Status::invalid_graph(where + ": attribute 'value' must be a one-element tensor");
      v = *a->t;
    }
    HostTensor o = HostTensor::make(v.type, shape);
    for (size_t k = 0; k < o.numel(); ++k) copy_elem(o, k, v, 0);
    return Outs{std::move(o)};
  }
  if (op == "Cast") {
    GRAPHI_ASSIGN_OR_RETURN(int64_t to, a_int(n, "to", -1, where));
    GRAPHI_ASSIGN_OR_RETURN(HostTensor o, cast_to(*in[0], to, where));
    return Outs{std::move(o)};
  }
  if (op == "CastLike") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 2, where));
    GRAPHI_ASSIGN_OR_RETURN(HostTensor o, cast_to(*in[0], in[1]->type, where));
    return Outs{std::move(o)};
  }
  if (op == "Reshape") {
    std::vector<int64_t> spec;
    if (opset >= 5) {
      GRAPHI_RETURN_IF_ERROR(need_inputs(in, 2, where));
      GRAPHI_ASSIGN_OR_RETURN(spec, ints_of(in[1], "shape", where));
    } else {
      GRAPHI_ASSIGN_OR_RETURN(auto a, a_ints(n, "shape", where));
      if (!a) return Status::invalid_graph(where + ": missing attribute 'shape'");
      spec = *a;
    }
    GRAPHI_ASSIGN_OR_RETURN(int64_t allowzero, a_int(n, "allowzero", 0, where));
    GRAPHI_ASSIGN_OR_RETURN(Shape s, reshape_target(in[0]->shape, spec, allowzero != 0, where));
    return Outs{reshaped(*in[0], s)};
  }
  if (op == "Flatten") {
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis, a_int(n, "axis", 1, where));
    const Shape& s = in[0]->shape;
    const auto r = static_cast<int64_t>(s.size());
    if (axis < -r || axis > r) return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += r;
    return Outs{reshaped(*in[0], {shape_numel(Shape(s.begin(), s.begin() + axis)),
                                  shape_numel(Shape(s.begin() + axis, s.end()))})};
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    bool given = false;
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                            axes_from(n, in, 1, opset, 13, where, &given));
    const Shape& s = in[0]->shape;
    Shape out;
    if (op == "Squeeze") {
      GRAPHI_ASSIGN_OR_RETURN(axes, normalize_axes(axes, static_cast<int64_t>(s.size()), where));
      for (size_t d = 0; d < s.size(); ++d) {
        const bool listed = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
        if (listed && s[d] != 1)
          return Status::invalid_graph(where + ": cannot squeeze axis " + std::to_string(d) +
                                       " of " + shape_to_string(s));
        if (!(listed || (axes.empty() && s[d] == 1))) out.push_back(s[d]);
      }
    } else {
      if (!given) return Status::invalid_graph(where + ": Unsqueeze needs axes");
      const auto r = static_cast<int64_t>(s.size() + axes.size());
      GRAPHI_ASSIGN_OR_RETURN(axes, normalize_axes(axes, r, where));
      size_t src = 0;
      for (int64_t d = 0; d < r; ++d)
        out.push_back(std::binary_search(axes.begin(), axes.end(), d) ? 1 : s[src++]);
    }
    return Outs{reshaped(*in[0], out)};
  }
  if (op == "Concat") return fold_concat(n, in, where);
  if (op == "Gather") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 2, where));
    return fold_gather(n, in, where);
  }
  if (op == "Slice") return fold_slice(n, opset, in, where);
  if (op == "Split") return fold_split(n, opset, in, where);
  if (op == "Transpose") return fold_transpose(n, in, where);
  if (op == "Expand") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 2, where));
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ints_of(in[1], "shape", where));
    GRAPHI_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(in[0]->shape, shape, where));
    GRAPHI_RETURN_IF_ERROR(check_size(out, where));
    HostTensor o = HostTensor::make(in[0]->type, out);
    if (o.is_float())
      expand_into(o.f, in[0]->f, out, in[0]->shape);
    else
      expand_into(o.i, in[0]->i, out, in[0]->shape);
    return Outs{std::move(o)};
  }
  if (op == "Tile") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 2, where));
    GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> reps, ints_of(in[1], "repeats", where));
    const Shape& s = in[0]->shape;
    if (reps.size() != s.size())
      return Status::invalid_graph(where + ": repeats do not match the rank");
    Shape out(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      if (reps[d] < 0) return Status::invalid_graph(where + ": negative repeat");
      if (reps[d] > max_fold_elements()) return Status::unsupported(where + ": repeats too large");
      out[d] = s[d] * reps[d];
    }
    GRAPHI_RETURN_IF_ERROR(check_size(out, where));
    HostTensor o = HostTensor::make(in[0]->type, out);
    const std::vector<int64_t> st = strides_of(s);
    std::vector<int64_t> c(out.size(), 0);
    for (size_t k = 0; k < o.numel(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < out.size(); ++d) off += (c[d] % s[d]) * st[d];
      copy_elem(o, k, *in[0], static_cast<size_t>(off));
      for (size_t d = out.size(); d-- > 0;) {
        if (++c[d] < out[d]) break;
        c[d] = 0;
      }
    }
    return Outs{std::move(o)};
  }
  if (op == "ScatterElements") {
    // data[..., indices[i], ...] = updates[i] along `axis` on constants: PyTorch 2's exporter
    // writes select_scatter this way (BEiT's relative-position index: 40 of them, all constant).
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 3, where));
    const HostTensor &x = *in[0], &idx = *in[1], &upd = *in[2];
    if (idx.is_float()) return Status::invalid_graph(where + ": indices must be integers");
    if (upd.is_float() != x.is_float())
      return Status::invalid_graph(where + ": updates must have the data's type");
    const Shape& xs = x.shape;
    if (idx.shape != upd.shape || idx.shape.size() != xs.size())
      return Status::invalid_graph(where + ": indices " + shape_to_string(idx.shape) +
                                   " and updates " + shape_to_string(upd.shape) +
                                   " must have one shape of the data's rank " +
                                   std::to_string(xs.size()));
    GRAPHI_ASSIGN_OR_RETURN(int64_t axis, a_int(n, "axis", 0, where));
    const auto r = static_cast<int64_t>(xs.size());
    if (axis < -r || axis >= r) return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += r;
    for (size_t d = 0; d < xs.size(); ++d)
      if (static_cast<int64_t>(d) != axis && idx.shape[d] > xs[d])
        return Status::invalid_graph(where + ": indices " + shape_to_string(idx.shape) +
                                     " exceed the data " + shape_to_string(xs));
    const Attr* ra = n.attr("reduction");
    const std::string reduction = ra && ra->type == kAttrString ? ra->s : "none";
    if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
        reduction != "min")
      return Status::unsupported(where + ": reduction '" + reduction + "'");
    HostTensor o = x;
    const std::vector<int64_t> xst = strides_of(xs), ist = strides_of(idx.shape);
    const int64_t dim = xs[static_cast<size_t>(axis)];
    for (size_t e = 0; e < idx.numel(); ++e) {
      int64_t v = idx.i[e];
      if (v < 0) v += dim;
      if (v < 0 || v >= dim)
        return Status::invalid_graph(where + ": index " + std::to_string(idx.i[e]) +
                                     " is out of range for axis " + std::to_string(axis) +
                                     " of size " + std::to_string(dim));
      int64_t off = 0, rem = static_cast<int64_t>(e);
      for (size_t d = 0; d < xs.size(); ++d) {
        const int64_t c = rem / ist[d];
        rem %= ist[d];
        off += (static_cast<int64_t>(d) == axis ? v : c) * xst[d];
      }
      auto apply = [&](auto& dst, auto val) {
        auto& t = dst[static_cast<size_t>(off)];
        if (reduction == "add")
          t += val;
        else if (reduction == "mul")
          t *= val;
        else if (reduction == "max")
          t = std::max(t, val);
        else if (reduction == "min")
          t = std::min(t, val);
        else
          t = val;
      };
      if (o.is_float())
        apply(o.f, upd.f[e]);
      else
        apply(o.i, upd.i[e]);
    }
    return Outs{std::move(o)};
  }
  if (op == "ScatterND") {
    // x[indices] = updates on constants: PyTorch 2's exporter writes slice assignment
    // (`mask[a:b, c:d] = k`, Swin's shifted-window masks) as Slice + ScatterND, with empty
    // slices where a window covers the whole dim: folded here, none of it is left to run.
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 3, where));
    const HostTensor &x = *in[0], &idx = *in[1], &upd = *in[2];
    if (idx.is_float()) return Status::invalid_graph(where + ": indices must be integers");
    if (upd.is_float() != x.is_float())
      return Status::invalid_graph(where + ": updates must have the data's type");
    const Shape& xs = x.shape;
    const Shape& is = idx.shape;
    if (is.empty()) return Status::invalid_graph(where + ": indices must have rank >= 1");
    const int64_t q = is.back();
    if (q < 1 || q > static_cast<int64_t>(xs.size()))
      return Status::invalid_graph(where + ": the indices' last dim must be in [1, rank]");
    // updates shape = indices.shape[:-1] + data.shape[q:]
    Shape want(is.begin(), is.end() - 1);
    want.insert(want.end(), xs.begin() + q, xs.end());
    if (upd.shape != want)
      return Status::invalid_graph(where + ": updates " + shape_to_string(upd.shape) +
                                   " do not match indices " + shape_to_string(is) + " and data " +
                                   shape_to_string(xs));
    const Attr* ra = n.attr("reduction");
    if (ra && ra->type != kAttrString)
      return Status::invalid_graph(where + ": attribute 'reduction' must be STRING");
    const std::string reduction = ra ? ra->s : "none";
    if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
        reduction != "min")
      return Status::unsupported(where + ": reduction '" + reduction + "'");
    int64_t slice = 1;  // elements per index tuple
    for (size_t d = static_cast<size_t>(q); d < xs.size(); ++d) slice *= xs[d];
    HostTensor o = x;
    const size_t tuples = idx.numel() / static_cast<size_t>(q);
    for (size_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t d = 0; d < q; ++d) {
        int64_t v = idx.i[t * static_cast<size_t>(q) + static_cast<size_t>(d)];
        const int64_t dim = xs[static_cast<size_t>(d)];
        if (v < 0) v += dim;
        if (v < 0 || v >= dim)
          return Status::invalid_graph(where + ": index " + std::to_string(v) +
                                       " out of range for dim " + std::to_string(d) + " (size " +
                                       std::to_string(dim) + ")");
        off = off * dim + v;
      }
      for (int64_t e = 0; e < slice; ++e) {
        const size_t dst = static_cast<size_t>(off * slice + e);
        const size_t src = t * static_cast<size_t>(slice) + static_cast<size_t>(e);
        const double a = o.get_f(dst), b = upd.get_f(src);
        const double v = reduction == "add"   ? a + b
                         : reduction == "mul" ? a * b
                         : reduction == "max" ? std::max(a, b)
                         : reduction == "min" ? std::min(a, b)
                                              : b;
        if (o.is_float())
          o.f[dst] = v;
        else
          o.i[dst] = reduction == "none" ? upd.i[src] : static_cast<int64_t>(v);
      }
    }
    fit_to_type(o);
    return Outs{std::move(o)};
  }
  if (op == "Trilu") {
    // torch.triu/tril of a constant (a causal mask): keep j - i >= k (upper) or <= k (lower)
    // in the last two dims, zero elsewhere.
    const Shape& s = in[0]->shape;
    if (s.size() < 2) return Status::invalid_graph(where + ": input must have rank >= 2");
    int64_t k = 0;
    if (in.size() > 1 && in[1]) {
      if (in[1]->numel() != 1 || in[1]->is_float())
        return Status::invalid_graph(where + ": input 1 (k) must be an integer scalar");
      k = in[1]->i[0];
    }
    GRAPHI_ASSIGN_OR_RETURN(int64_t upper, a_int(n, "upper", 1, where));
    const int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
    HostTensor o = *in[0];
    for (size_t e = 0; e < o.numel(); ++e) {
      const auto j = static_cast<int64_t>(e) % cols, i = static_cast<int64_t>(e) / cols % rows;
      if (upper ? j - i >= k : j - i <= k) continue;
      o.set(e, 0);
    }
    return Outs{std::move(o)};
  }
  if (op == "Range") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 3, where));
    for (size_t k = 0; k < 3; ++k)
      if (in[k]->numel() != 1) return Status::invalid_graph(where + ": inputs must be scalars");
    const double start = in[0]->get_f(0), limit = in[1]->get_f(0), delta = in[2]->get_f(0);
    if (delta == 0) return Status::invalid_graph(where + ": delta is 0");
    const double c = std::max(0.0, std::ceil((limit - start) / delta));
    if (!(c <= static_cast<double>(max_fold_elements())))
      return Status::unsupported(where + ": range too long to evaluate at import time");
    const auto count = static_cast<int64_t>(c);
    HostTensor o = HostTensor::make(in[0]->type, {count});
    for (int64_t k = 0; k < count; ++k) {
      if (o.is_float())
        o.f[static_cast<size_t>(k)] = start + static_cast<double>(k) * delta;
      else
        o.i[static_cast<size_t>(k)] = in[0]->i[0] + k * in[2]->i[0];
    }
    fit_to_type(o);
    return Outs{std::move(o)};
  }
  if (op == "Where") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 3, where));
    const Ins xs{in[0], in[1], in[2]};
    if (in[1]->type != in[2]->type) return Status::invalid_graph(where + ": X and Y types differ");
    GRAPHI_ASSIGN_OR_RETURN(
        HostTensor o, elementwise(xs, in[1]->type, where,
                                  [&](HostTensor& o, size_t k, const std::vector<size_t>& at) {
                                    copy_elem(o, k, in[0]->get_i(at[0]) ? *in[1] : *in[2],
                                              in[0]->get_i(at[0]) ? at[1] : at[2]);
                                  }));
    return Outs{std::move(o)};
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Pow" ||
      op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
      op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor")
    return fold_binary(op, n, in, where);
  if (op == "Sum" || op == "Min" || op == "Max" || op == "Mean")
    return fold_variadic(op, in, where);
  if (op.rfind("Reduce", 0) == 0) return fold_reduce(op, n, opset, in, where);
  if (op == "QuantizeLinear" || op == "DequantizeLinear") return fold_quantize(op, n, in, where);
  if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow" ||
      op == "MelWeightMatrix")
    return fold_signal(op, n, in, where);
  if (op == "Clip") {
    // Bounds: inputs 1 and 2 (opset >= 11, each optional) or attributes min / max (before).
    // timm's TF-style "same" padding clamps its computed pads at 0 before the Pad.
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 1, where));
    std::optional<double> lo, hi;
    if (opset < 11) {
      if (const onnx::Attr* a = n.attr("min")) lo = a->f;
      if (const onnx::Attr* a = n.attr("max")) hi = a->f;
    } else {
      for (size_t k : {size_t{1}, size_t{2}}) {
        if (k >= in.size() || !in[k]) continue;
        if (in[k]->numel() != 1)
          return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" +
                                       (k == 1 ? "min" : "max") + ") must be a scalar, got " +
                                       in[k]->desc());
        (k == 1 ? lo : hi) = in[k]->get_f(0);
      }
    }
    HostTensor o = *in[0];
    for (size_t e = 0; e < o.numel(); ++e) {
      if (o.is_float()) {
        double v = o.f[e];
        if (lo && v < *lo) v = *lo;  // NaN stays NaN
        if (hi && v > *hi) v = *hi;
        o.f[e] = v;
      } else {
        int64_t v = o.i[e];
        if (lo && static_cast<double>(v) < *lo) v = static_cast<int64_t>(*lo);
        if (hi && static_cast<double>(v) > *hi) v = static_cast<int64_t>(*hi);
        o.i[e] = v;
      }
    }
    return Outs{std::move(o)};
  }
  if (is_foldable_op(op)) return fold_unary(op, in, where);
  return Status::unsupported(where + ": op " + op + " cannot be evaluated at import time");
}

}  // namespace

Result<Shape> slice_shape(const Node& n, int64_t opset,
                          const std::vector<const HostTensor*>& inputs, const Shape& x,
                          const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(SliceGeometry g, slice_geometry(n, opset, inputs, x, where));
  return g.out;
}

Result<std::vector<HostTensor>> fold_node(const Node& n, int64_t opset, const Ins& in,
                                          const std::string& where, int64_t max_elements) {
  // The limit for this fold's helpers, restored on return (folds do not nest, but stay exact).
  struct LimitScope {
    int64_t saved = fold_detail::t_max_elements;
    explicit LimitScope(int64_t m) { fold_detail::t_max_elements = std::min(m, kMaxFoldElements); }
    ~LimitScope() { fold_detail::t_max_elements = saved; }
  } limit_scope(max_elements);
  return fold_node_unlimited(n, opset, in, where);
}

}  // namespace graphi::graph::onnx
