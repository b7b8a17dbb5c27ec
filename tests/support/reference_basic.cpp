#include "tests/support/reference_basic.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace graphi::test {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("reference: " + what);
}

// Flat row-major position -> multi-index, and back.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = flat % shape[k];
    flat /= shape[k];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + idx[k];
  return flat;
}

void copy_element(const Tensor& src, int64_t src_pos, Tensor& dst, int64_t dst_pos) {
  const size_t e = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.data()) + dst_pos * e,
              static_cast<const char*>(src.data()) + src_pos * e, e);
}

int64_t fix_axis(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  require(axis >= -r && axis < r, "axis out of range");
  return axis < 0 ? axis + r : axis;
}

}  // namespace

Tensor binary_ref(const std::string& op, const Tensor& a, const Tensor& b) {
  require(a.dtype() == DType::kF32 && b.dtype() == DType::kF32, "binary ops take float32");
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const size_t rank = std::max(sa.size(), sb.size());
  // Right-align both shapes, padding with 1s on the left.
  Shape pa(rank - sa.size(), 1), pb(rank - sb.size(), 1);
  pa.insert(pa.end(), sa.begin(), sa.end());
  pb.insert(pb.end(), sb.begin(), sb.end());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    require(pa[k] == pb[k] || pa[k] == 1 || pb[k] == 1, "shapes do not broadcast");
    out[k] = std::max(pa[k], pb[k]);
  }
  Tensor y(TensorDesc{DType::kF32, out});
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, out), ia(rank), ib(rank);
    for (size_t k = 0; k < rank; ++k) {
      ia[k] = pa[k] == 1 ? 0 : idx[k];
      ib[k] = pb[k] == 1 ? 0 : idx[k];
    }
    const double x = a.data_as<float>()[ravel(ia, pa)];
    const double z = b.data_as<float>()[ravel(ib, pb)];
    double r;
    if (op == "Add")
      r = x + z;
    else if (op == "Sub")
      r = x - z;
    else if (op == "Mul")
      r = x * z;
    else if (op == "Div")
      r = x / z;
    else
      throw std::invalid_argument("reference: unknown binary op " + op);
    y.data_as<float>()[i] = static_cast<float>(r);
  }
  return y;
}

Tensor unary_ref(const std::string& op, const Tensor& x) {
  require(x.dtype() == DType::kF32, "unary ops take float32");
  Tensor y(x.desc());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data_as<float>()[i];
    double r;
    if (op == "Sigmoid")
      r = 1.0 / (1.0 + std::exp(-v));
    else if (op == "Tanh")
      r = std::tanh(v);
    else if (op == "Relu")
      r = std::isnan(v) ? v : (v > 0 ? v : 0.0);
    else
      throw std::invalid_argument("reference: unknown unary op " + op);
    y.data_as<float>()[i] = static_cast<float>(r);
  }
  return y;
}

Tensor softmax_ref(const Tensor& x, int64_t axis_in) {
  require(x.dtype() == DType::kF32, "softmax takes float32");
  const Shape& s = x.shape();
  const size_t axis = static_cast<size_t>(fix_axis(axis_in, s.size()));
  Tensor y(x.desc());
  const float* xv = x.data_as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    // y[idx] = exp(x[idx] - max_j x[idx with axis=j]) / sum_j exp(x[idx with axis=j] - max).
    std::vector<int64_t> idx = unravel(i, s);
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < s[axis]; ++j) {
      std::vector<int64_t> o = idx;
      o[axis] = j;
      m = std::max(m, static_cast<double>(xv[ravel(o, s)]));
    }
    double sum = 0;
    for (int64_t j = 0; j < s[axis]; ++j) {
      std::vector<int64_t> o = idx;
      o[axis] = j;
      sum += std::exp(xv[ravel(o, s)] - m);
    }
    y.data_as<float>()[i] = static_cast<float>(std::exp(xv[i] - m) / sum);
  }
  return y;
}

Tensor concat_ref(const std::vector<Tensor>& xs, int64_t axis_in) {
  require(!xs.empty(), "concat needs inputs");
  const size_t axis = static_cast<size_t>(fix_axis(axis_in, xs[0].shape().size()));
  Shape out = xs[0].shape();
  out[axis] = 0;
  for (const Tensor& t : xs) out[axis] += t.shape()[axis];
  Tensor y(TensorDesc{xs[0].dtype(), out});
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, out);
    // Find the input whose range along the axis holds idx[axis].
    size_t k = 0;
    while (idx[axis] >= xs[k].shape()[axis]) idx[axis] -= xs[k++].shape()[axis];
    copy_element(xs[k], ravel(idx, xs[k].shape()), y, i);
  }
  return y;
}

std::vector<Tensor> split_ref(const Tensor& x, int64_t axis_in, const std::vector<int64_t>& sizes) {
  const size_t axis = static_cast<size_t>(fix_axis(axis_in, x.shape().size()));
  std::vector<Tensor> ys;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    Shape s = x.shape();
    s[axis] = n;
    Tensor y(TensorDesc{x.dtype(), s});
    for (int64_t i = 0; i < y.numel(); ++i) {
      std::vector<int64_t> idx = unravel(i, s);
      idx[axis] += offset;
      copy_element(x, ravel(idx, x.shape()), y, i);
    }
    offset += n;
    ys.push_back(std::move(y));
  }
  require(offset == x.shape()[axis], "split sizes do not add up");
  return ys;
}

Tensor slice_ref(const Tensor& x, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                 std::vector<int64_t> steps) {
  const Shape& in = x.shape();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  // Per input dim: the indices taken, listed one by one (no closed form, to stay independent).
  std::vector<std::vector<int64_t>> taken(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    for (int64_t j = 0; j < in[d]; ++j) taken[d].push_back(j);
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t d = static_cast<size_t>(fix_axis(axes[i], in.size()));
    const int64_t dim = in[d], step = steps[i];
    require(step != 0, "step 0");
    // ONNX: negative start/end add dim, then clamp to [0, dim] (step > 0) or [-1, dim-1] (step <
    // 0).
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    taken[d].clear();
    if (step > 0) {
      s = std::max<int64_t>(0, std::min(s, dim));
      e = std::max<int64_t>(0, std::min(e, dim));
      for (int64_t j = s; j < e; j += step) taken[d].push_back(j);
    } else {
      s = std::max<int64_t>(0, std::min(s, dim - 1));
      e = std::max<int64_t>(-1, std::min(e, dim - 1));
      for (int64_t j = s; j > e; j += step) taken[d].push_back(j);
    }
  }
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) out[d] = static_cast<int64_t>(taken[d].size());
  Tensor y(TensorDesc{x.dtype(), out});
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, out);
    for (size_t d = 0; d < in.size(); ++d) idx[d] = taken[d][static_cast<size_t>(idx[d])];
    copy_element(x, ravel(idx, in), y, i);
  }
  return y;
}

Tensor transpose_ref(const Tensor& x, std::vector<int64_t> perm) {
  const Shape& in = x.shape();
  if (perm.empty())
    for (size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  require(perm.size() == in.size(), "perm length");
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = in[static_cast<size_t>(perm[i])];
  Tensor y(TensorDesc{x.dtype(), out});
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, out), src(in.size());
    for (size_t k = 0; k < in.size(); ++k) src[static_cast<size_t>(perm[k])] = idx[k];
    copy_element(x, ravel(src, in), y, i);
  }
  return y;
}

Tensor reshape_ref(const Tensor& x, const std::vector<int64_t>& shape) {
  Shape out(shape.begin(), shape.end());
  int64_t known = 1;
  size_t minus = out.size();
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0) out[i] = x.shape().at(i);
    if (out[i] == -1)
      minus = i;
    else
      known *= out[i];
  }
  if (minus < out.size()) out[minus] = x.numel() / known;
  require(shape_numel(out) == x.numel(), "reshape size mismatch");
  Tensor y(TensorDesc{x.dtype(), out});
  for (int64_t i = 0; i < y.numel(); ++i) copy_element(x, i, y, i);
  return y;
}

}  // namespace graphi::test
