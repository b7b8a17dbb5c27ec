// Import-time folding of element-wise, variadic, unary and reduction ops on constants (the
// shape and view ops and the dispatcher are in onnx_fold.cpp).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "graph/onnx/onnx_fold_internal.h"

namespace graphi::graph::onnx::fold_detail {

// Elementwise op over broadcast inputs; `fn` gets the inputs' element indices.
Result<HostTensor> elementwise(
    const Ins& xs, int32_t out_type, const std::string& where,
    const std::function<void(HostTensor&, size_t, const std::vector<size_t>&)>& fn) {
  Shape out = xs[0]->shape;
  for (size_t k = 1; k < xs.size(); ++k) {
    GRAPHI_ASSIGN_OR_RETURN(out, broadcast_shapes(out, xs[k]->shape, where));
  }
  GRAPHI_RETURN_IF_ERROR(check_size(out, where));
  std::vector<std::vector<size_t>> maps;
  for (const HostTensor* x : xs) maps.push_back(broadcast_index(out, x->shape));
  HostTensor o = HostTensor::make(out_type, out);
  std::vector<size_t> at(xs.size());
  for (size_t k = 0; k < o.numel(); ++k) {
    for (size_t j = 0; j < xs.size(); ++j) at[j] = maps[j][k];
    fn(o, k, at);
  }
  fit_to_type(o);
  return o;
}

namespace {

// Mod-28 with fmod 0 on floats: A - floor(A / B) * B as ONNX specifies it, through fmod so that
// infinities and zeros come out as the spec lists (a zero signed like B; A infinite or B zero:
// NaN; B infinite: A, or B when their signs differ). ops/int_arith.cpp computes the same.
double floor_mod(double x, double y) {
  double r = std::fmod(x, y);
  if (r == 0.0) return std::copysign(0.0, y);
  if ((r < 0.0) != (y < 0.0)) r += y;
  return r;
}

Status same_type(const Ins& xs, const std::string& where) {
  for (const HostTensor* x : xs)
    if (x->type != xs[0]->type)
      return Status::invalid_graph(where + ": inputs of types " + data_type_name(xs[0]->type) +
                                   " and " + data_type_name(x->type) + " differ");
  return Status::ok();
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Result<Outs> fold_binary(const std::string& op, const Node& n, const Ins& in,
                         const std::string& where) {
  GRAPHI_RETURN_IF_ERROR(need_inputs(in, 2, where));
  const Ins xs{in[0], in[1]};
  const bool cmp = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                   op == "GreaterOrEqual";
  const bool logic = op == "And" || op == "Or" || op == "Xor";
  if (op != "Pow") GRAPHI_RETURN_IF_ERROR(same_type(xs, where));
  const HostTensor &a = *xs[0], &b = *xs[1];
  const int32_t out_type = cmp || logic ? kBool : a.type;
  const bool fl = a.is_float();
  GRAPHI_ASSIGN_OR_RETURN(int64_t fmod, a_int(n, "fmod", 0, where));
  if (!fl && (op == "Div" || op == "Mod"))
    for (int64_t v : b.i)
      if (v == 0) return Status::invalid_graph(where + ": integer division by zero");
  GRAPHI_ASSIGN_OR_RETURN(
      HostTensor o,
      elementwise(xs, out_type, where, [&](HostTensor& o, size_t k, const std::vector<size_t>& at) {
        if (fl || op == "Pow") {
          const double x = a.get_f(at[0]), y = b.get_f(at[1]);
          double r = 0;
          if (op == "Add")
            r = x + y;
          else if (op == "Sub")
            r = x - y;
          else if (op == "Mul")
            r = x * y;
          else if (op == "Div")
            r = x / y;
          else if (op == "Pow")
            r = std::pow(x, y);
          else if (op == "Mod")
            r = fmod ? std::fmod(x, y) : floor_mod(x, y);
          else if (op == "Equal")
            r = x == y;
          else if (op == "Less")
            r = x < y;
          else if (op == "Greater")
            r = x > y;
          else if (op == "LessOrEqual")
            r = x <= y;
          else if (op == "GreaterOrEqual")
            r = x >= y;
          set_value(o, k, r);
        } else {
          const int64_t x = a.i[at[0]], y = b.i[at[1]];
          int64_t r = 0;
          if (op == "Add")
            r = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
          else if (op == "Sub")
            r = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
          else if (op == "Mul")
            r = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
          else if (op == "Div")
            r = x / y;
          else if (op == "Mod")
            r = fmod ? x % y : x - floor_div(x, y) * y;
          else if (op == "Equal")
            r = x == y;
          else if (op == "Less")
            r = x < y;
          else if (op == "Greater")
            r = x > y;
          else if (op == "LessOrEqual")
            r = x <= y;
          else if (op == "GreaterOrEqual")
            r = x >= y;
          else if (op == "And")
            r = x && y;
          else if (op == "Or")
            r = x || y;
          else if (op == "Xor")
            r = (x != 0) != (y != 0);
          o.i[k] = r;
        }
      }));
  return Outs{std::move(o)};
}

Result<Outs> fold_variadic(const std::string& op, const Ins& in, const std::string& where) {
  Ins xs;
  for (const HostTensor* t : in)
    if (t) xs.push_back(t);
  if (xs.empty()) return Status::invalid_graph(where + ": no inputs");
  GRAPHI_RETURN_IF_ERROR(same_type(xs, where));
  const bool fl = xs[0]->is_float();
  GRAPHI_ASSIGN_OR_RETURN(HostTensor o,
                          elementwise(xs, xs[0]->type, where,
                                      [&](HostTensor& o, size_t k, const std::vector<size_t>& at) {
                                        if (fl) {
                                          double r = xs[0]->f[at[0]];
                                          for (size_t j = 1; j < xs.size(); ++j) {
                                            const double v = xs[j]->f[at[j]];
                                            if (op == "Min")
                                              r = std::isnan(v) ? v : std::min(r, v);
                                            else if (op == "Max")
                                              r = std::isnan(v) ? v : std::max(r, v);
                                            else
                                              r += v;  // Sum, Mean
                                          }
                                          if (op == "Mean") r /= static_cast<double>(xs.size());
                                          o.f[k] = r;
                                        } else {
                                          int64_t r = xs[0]->i[at[0]];
                                          for (size_t j = 1; j < xs.size(); ++j) {
                                            const int64_t v = xs[j]->i[at[j]];
                                            if (op == "Min")
                                              r = std::min(r, v);
                                            else if (op == "Max")
                                              r = std::max(r, v);
                                            else
                                              r += v;
                                          }
                                          if (op == "Mean") r /= static_cast<int64_t>(xs.size());
                                          o.i[k] = r;
                                        }
                                      }));
  return Outs{std::move(o)};
}

Result<Outs> fold_unary(const std::string& op, const Ins& in, const std::string& where) {
  const HostTensor& x = *in[0];
  HostTensor o = x;
  if (op == "Not") {
    if (x.type != kBool) return Status::invalid_graph(where + ": Not needs BOOL, got " + x.desc());
    for (int64_t& v : o.i) v = !v;
    return Outs{std::move(o)};
  }
  if (!x.is_float()) {
    for (int64_t& v : o.i) {
      if (op == "Neg")
        v = -v;
      else if (op == "Abs")
        v = v < 0 ? -v : v;
      else if (op == "Sign")
        v = (v > 0) - (v < 0);
      else if (op == "Relu")
        v = std::max<int64_t>(v, 0);
      else if (op == "Identity" || op == "Floor" || op == "Ceil" || op == "Round")
        continue;
      else
        return Status::unsupported(where + ": " + op + " of an integer tensor (" + x.desc() +
                                   ") is not supported at import time");
    }
    fit_to_type(o);
    return Outs{std::move(o)};
  }
  for (double& v : o.f) {
    if (op == "Neg")
      v = -v;
    else if (op == "Abs")
      v = std::fabs(v);
    else if (op == "Sqrt")
      v = std::sqrt(v);
    else if (op == "Exp")
      v = std::exp(v);
    else if (op == "Log")
      v = std::log(v);
    else if (op == "Floor")
      v = std::floor(v);
    else if (op == "Ceil")
      v = std::ceil(v);
    else if (op == "Round")
      v = std::nearbyint(v);
    else if (op == "Reciprocal")
      v = 1.0 / v;
    else if (op == "Sign")
      v = (v > 0) - (v < 0);
    else if (op == "Relu")
      v = std::max(v, 0.0);
    else if (op == "Sigmoid")
      v = 1.0 / (1.0 + std::exp(-v));
    else if (op == "Tanh")
      v = std::tanh(v);
  }
  fit_to_type(o);
  return Outs{std::move(o)};
}

Result<Outs> fold_reduce(const std::string& op, const Node& n, int64_t opset, const Ins& in,
                         const std::string& where) {
  const HostTensor& x = *in[0];
  const auto rank = static_cast<int64_t>(x.shape.size());
  bool given = false;
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                          axes_from(n, in, 1, opset, op == "ReduceSum" ? 13 : 18, where, &given));
  GRAPHI_ASSIGN_OR_RETURN(int64_t keep, a_int(n, "keepdims", 1, where));
  GRAPHI_ASSIGN_OR_RETURN(int64_t noop, a_int(n, "noop_with_empty_axes", 0, where));
  if (axes.empty()) {
    if (noop) return Outs{x};
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  GRAPHI_ASSIGN_OR_RETURN(axes, normalize_axes(axes, rank, where));
  std::vector<bool> red(static_cast<size_t>(rank), false);
  for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
  Shape kept, out;
  for (int64_t d = 0; d < rank; ++d) {
    kept.push_back(red[static_cast<size_t>(d)] ? 1 : x.shape[static_cast<size_t>(d)]);
    if (!red[static_cast<size_t>(d)] || keep) out.push_back(kept.back());
  }
  HostTensor o = HostTensor::make(x.type, kept);
  // Outputs that no element reaches (a reduced dim of size 0) keep the reduction's identity:
  // ONNX's empty product is 1, an empty min / max the largest / smallest value of the type.
  for (size_t j = 0; j < o.numel(); ++j) {
    if (op == "ReduceProd") {
      set_value(o, j, 1.0);
    } else if (op == "ReduceMin" || op == "ReduceMax") {
      const bool mn = op == "ReduceMin";
      if (o.is_float())
        o.f[j] =
            mn ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
      else
        o.i[j] = mn ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    }
  }
  std::vector<bool> first(o.numel(), true);
  std::vector<int64_t> count(o.numel(), 0);
  const std::vector<size_t> to = broadcast_index(x.shape, kept);  // x element -> output element
  for (size_t k = 0; k < x.numel(); ++k) {
    const size_t j = to[k];
    const double v = x.get_f(k);
    double cur = o.get_f(j);
    if (first[j])
      cur = op == "ReduceProd" ? 1.0 : (op == "ReduceMin" || op == "ReduceMax") ? v : 0.0;
    first[j] = false;
    if (op == "ReduceSum" || op == "ReduceMean")
      cur += v;
    else if (op == "ReduceProd")
      cur *= v;
    else if (op == "ReduceMin")
      cur = std::min(cur, v);
    else if (op == "ReduceMax")
      cur = std::max(cur, v);
    ++count[j];
    if (o.is_float())
      o.f[j] = cur;
    else
      o.i[j] = static_cast<int64_t>(cur);
  }
  if (op == "ReduceMean")
    for (size_t j = 0; j < o.numel(); ++j)
      set_value(o, j, o.get_f(j) / static_cast<double>(std::max<int64_t>(count[j], 1)));
  if (!x.is_float() && op != "ReduceMean") {  // exact integer sums/products
    for (size_t j = 0; j < o.numel(); ++j) o.i[j] = op == "ReduceProd" ? 1 : 0;
    std::fill(first.begin(), first.end(), true);
    for (size_t k = 0; k < x.numel(); ++k) {
      const size_t j = to[k];
      const int64_t v = x.i[k];
      if (op == "ReduceSum")
        o.i[j] += v;
      else if (op == "ReduceProd")
        o.i[j] *= v;
      else
        o.i[j] = first[j] ? v : op == "ReduceMin" ? std::min(o.i[j], v) : std::max(o.i[j], v);
      first[j] = false;
    }
  }
  fit_to_type(o);
  o.shape = out;
  return Outs{std::move(o)};
}

}  // namespace graphi::graph::onnx::fold_detail
