// Gradient rules, one per op type. Each rule gets the forward node and dL/d(output) and emits
// dL/d(input) as ordinary ops (so the scheduler sees the backward pass as more of the same DAG):
//   Add/Sub/Mul/Div  elementwise products, reduced back over broadcast axes
//   (GradEmitter::reduce_to) Sigmoid          dy * y * (1 - y)         Tanh  dy * (1 - y^2) Relu
//   ReluGrad(dy, y) = dy where y > 0 Exp  dy * y      Log   dy / x               Neg   -dy Sqrt
//   dy * 0.5 / y MatMul           dA = dy B^T, dB = A^T dy (batch dims reduced back)  Gemm  the
//   same via Gemm's
//                    trans flags and alpha; dC = beta * dy reduced to C's shape
//   Softmax          y * (dy - sum(dy * y))   LogSoftmax  dy - exp(y) * sum(dy)   (over `axis`)
//   ReduceSum/Mean   dy reshaped to keepdims form and expanded (Mean: / count)
//   Reshape: dy reshaped back; Identity: dy; Transpose: inverse perm
//   Concat -> Split of dy; Split -> Concat of the dys (zeros for outputs without a gradient);
//   Slice (step 1) -> Pad of dy with zeros; GatherElements -> ScatterElements(add) into zeros
//   Pad (constant, pads >= 0) -> Slice of dy
//   Conv (2-D)       dX = ConvTranspose(dy, W); dW = ConvGradWeight(X, dy) (group 1); dB = sum(dy)
//   MaxPool, AveragePool (2-D, windows tiling the input): dy spread back over each window;
//   MaxPool with other windows: the MaxPoolGrad op (first maximum, as PyTorch)
//   Where: dy routed by the condition; Floor, Sign, comparisons: piecewise constant, no gradient
//   BatchNormalizationTraining: dX, dscale, dB from the saved batch statistics
//   DropoutTraining: dy * Mask
//   LSTM, GRU, RNN (fused sequence ops): one LSTMGrad / GRUGrad / RNNGrad node
//   (ops/rnn/rnn_train.h)
#include "ops/gradients.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/passes/pass_util.h"
#include "ops/registry.h"
#include "ops/rnn/rnn_train.h"

namespace graphi::ops {
namespace {

using graph::Attributes;
using graph::passes::GradContext;
using graph::passes::GradEmitter;
using Dx = std::vector<std::string>;

Attributes attrs_int(const char* name, int64_t v) {
  Attributes a;
  a.set(name, v);
  return a;
}

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

// Integer contents of constant input i (Reshape's shape, Slice's starts, ...).
Result<std::vector<int64_t>> const_ints(const GradContext& c, size_t i, const char* field) {
  if (i >= c.node.inputs.size() || c.node.inputs[i] == graph::kNoId)
    return Status::invalid_graph(c.where + ": input '" + field + "' is absent");
  const graph::Value& v = c.in(i);
  if (v.kind != graph::ValueKind::kConstant || !v.data)
    return Status::unsupported(c.where + ": input '" + field +
                               "' must be a constant for the gradient rule");
  std::vector<int64_t> out(static_cast<size_t>(v.desc.numel()));
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = v.desc.dtype == DType::kI64   ? v.data->data_as<int64_t>()[k]
             : v.desc.dtype == DType::kI32 ? v.data->data_as<int32_t>()[k]
                                           : 0;
  if (v.desc.dtype != DType::kI64 && v.desc.dtype != DType::kI32)
    return Status::invalid_graph(c.where + ": input '" + field + "' must be int32 or int64");
  return out;
}

// ---- elementwise binary (numpy broadcasting) ----

Status grad_add(GradContext& c, Dx& dx) {
  const Shape& ys = c.out(0).desc.shape;
  for (size_t i = 0; i < 2; ++i)
    if (c.need[i]) dx[i] = c.e.reduce_to(c.dy[0], ys, c.in(i).desc.shape);
  return Status::ok();
}

Status grad_sub(GradContext& c, Dx& dx) {
  const Shape& ys = c.out(0).desc.shape;
  if (c.need[0]) dx[0] = c.e.reduce_to(c.dy[0], ys, c.in(0).desc.shape);
  if (c.need[1]) dx[1] = c.e.reduce_to(c.e.op("Neg", {c.dy[0]}), ys, c.in(1).desc.shape);
  return Status::ok();
}

Status grad_mul(GradContext& c, Dx& dx) {
  const Shape& ys = c.out(0).desc.shape;
  if (c.need[0])
    dx[0] = c.e.reduce_to(c.e.op("Mul", {c.dy[0], c.in_name(1)}), ys, c.in(0).desc.shape);
  if (c.need[1])
    dx[1] = c.e.reduce_to(c.e.op("Mul", {c.dy[0], c.in_name(0)}), ys, c.in(1).desc.shape);
  return Status::ok();
}

Status grad_div(GradContext& c, Dx& dx) {
  const Shape& ys = c.out(0).desc.shape;
  if (c.need[0])
    dx[0] = c.e.reduce_to(c.e.op("Div", {c.dy[0], c.in_name(1)}), ys, c.in(0).desc.shape);
  if (c.need[1]) {
    // d(a/b)/db = -(a/b)/b: reuses the forward output y.
    std::string t = c.e.op("Div", {c.e.op("Mul", {c.dy[0], c.out_name(0)}), c.in_name(1)});
    dx[1] = c.e.reduce_to(c.e.op("Neg", {t}), ys, c.in(1).desc.shape);
  }
  return Status::ok();
}

// ---- elementwise unary ----

Status grad_sigmoid(GradContext& c, Dx& dx) {
  const std::string& y = c.out_name(0);
  std::string one_minus = c.e.op("Sub", {c.e.scalar(1.0f), y});
  dx[0] = c.e.op("Mul", {c.dy[0], c.e.op("Mul", {y, one_minus})}, {}, "sigmoid_grad");
  return Status::ok();
}

Status grad_tanh(GradContext& c, Dx& dx) {
  const std::string& y = c.out_name(0);
  std::string one_minus = c.e.op("Sub", {c.e.scalar(1.0f), c.e.op("Mul", {y, y})});
  dx[0] = c.e.op("Mul", {c.dy[0], one_minus}, {}, "tanh_grad");
  return Status::ok();
}

// Whether a MaxPool node's gradient is the MaxPoolGrad op (2-D, no dilation, ceil_mode 0).
bool pool_grad_is_op(const GradContext& c, const graph::Node& n) {
  auto ceil = graph::attr_int(n.attrs, c.where, "ceil_mode", 0);
  auto dil = graph::attr_ints(n.attrs, c.where, "dilations", {1, 1});
  return n.op == "MaxPool" && n.outputs.size() == 1 && ceil.is_ok() && *ceil == 0 &&
         dil.is_ok() && *dil == std::vector<int64_t>{1, 1} &&
         c.g.value(n.inputs[0]).desc.rank() == 4;
}

// Relu -> MaxPool where the Relu's output feeds only that pool (PathNet's and most CNNs'
// conv, relu, pool): the pool's MaxPoolGrad then also applies the Relu's mask (relu_input = 1:
// a window whose maximum is not > 0 passes nothing, exactly what ReluGrad would zero), and the
// Relu's own gradient is the identity. One pass over the activation instead of two.
bool relu_masked_by_pool(const GradContext& c, graph::ValueId relu_out) {
  const graph::Value& v = c.g.value(relu_out);
  if (v.is_output || v.producer == graph::kNoId || c.g.node(v.producer).op != "Relu") return false;
  const auto users = c.g.consumers(relu_out);
  return users.size() == 1 && pool_grad_is_op(c, c.g.node(users[0]));
}

Status grad_relu(GradContext& c, Dx& dx) {
  if (relu_masked_by_pool(c, c.node.outputs[0])) {
    dx[0] = c.dy[0];  // the MaxPoolGrad below already zeroed where y <= 0
    return Status::ok();
  }
  // dy where y > 0 (PyTorch's threshold_backward: zero gradient at 0), one pass
  // (ops/relu_grad.cpp).
  dx[0] = c.e.op("ReluGrad", {c.dy[0], c.out_name(0)}, {}, "relu_grad");
  return Status::ok();
}

// Where(cond, a, b): dy goes to a where cond holds, to b elsewhere (reduced back over
// broadcasting). cond is boolean: autodiff never asks for its gradient.
Status grad_where(GradContext& c, Dx& dx) {
  const Shape& ys = c.out(0).desc.shape;
  const std::string zero = c.e.scalar(0.0f);
  if (c.need[1])
    dx[1] = c.e.reduce_to(c.e.op("Where", {c.in_name(0), c.dy[0], zero}), ys, c.in(1).desc.shape);
  if (c.need[2])
    dx[2] = c.e.reduce_to(c.e.op("Where", {c.in_name(0), zero, c.dy[0]}), ys, c.in(2).desc.shape);
  return Status::ok();
}

Status grad_exp(GradContext& c, Dx& dx) {
  dx[0] = c.e.op("Mul", {c.dy[0], c.out_name(0)});
  return Status::ok();
}

Status grad_log(GradContext& c, Dx& dx) {
  dx[0] = c.e.op("Div", {c.dy[0], c.in_name(0)});
  return Status::ok();
}

Status grad_neg(GradContext& c, Dx& dx) {
  dx[0] = c.e.op("Neg", {c.dy[0]});
  return Status::ok();
}

Status grad_sqrt(GradContext& c, Dx& dx) {
  dx[0] = c.e.op("Div", {c.e.op("Mul", {c.dy[0], c.e.scalar(0.5f)}), c.out_name(0)});
  return Status::ok();
}

// ---- data movement ----

// Reshape and friends: the gradient is dy viewed in the input's shape.
Status grad_reshape(GradContext& c, Dx& dx) {
  if (c.need[0]) dx[0] = c.e.reshape(c.dy[0], c.in(0).desc.shape);
  return Status::ok();
}

Status grad_identity(GradContext& c, Dx& dx) {
  dx[0] = c.dy[0];
  return Status::ok();
}

Status grad_transpose(GradContext& c, Dx& dx) {
  const size_t rank = c.in(0).desc.shape.size();
  std::vector<int64_t> dflt(rank);
  for (size_t i = 0; i < rank; ++i) dflt[i] = static_cast<int64_t>(rank - 1 - i);
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                          graph::attr_ints(c.node.attrs, c.where, "perm", dflt));
  std::vector<int64_t> inv(rank);
  for (size_t i = 0; i < rank; ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  Attributes a;
  a.set("perm", inv);
  dx[0] = c.e.op("Transpose", {c.dy[0]}, std::move(a));
  return Status::ok();
}

Status grad_concat(GradContext& c, Dx& dx) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(c.node.attrs, c.where, "axis"));
  axis = norm_axis(axis, c.out(0).desc.shape.size());
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    sizes.push_back(c.in(i).desc.shape[static_cast<size_t>(axis)]);
  std::vector<std::string> parts = c.e.op_n("Split", {c.dy[0], c.e.ints(sizes)}, sizes.size(),
                                            attrs_int("axis", axis), "concat_grad");
  for (size_t i = 0; i < parts.size(); ++i)
    if (c.need[i]) dx[i] = parts[i];
  return Status::ok();
}

Status grad_split(GradContext& c, Dx& dx) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(c.node.attrs, c.where, "axis", 0));
  axis = norm_axis(axis, c.in(0).desc.shape.size());
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.node.outputs.size(); ++i)
    parts.push_back(c.dy[i].empty() ? c.e.zeros(c.out(i).desc) : c.dy[i]);
  dx[0] =
      parts.size() == 1 ? parts[0] : c.e.op("Concat", parts, attrs_int("axis", axis), "split_grad");
  return Status::ok();
}

Status grad_slice(GradContext& c, Dx& dx) {
  const Shape& xs = c.in(0).desc.shape;
  const size_t rank = xs.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.node.inputs.size() >= 3) {
    GRAPHI_ASSIGN_OR_RETURN(starts, const_ints(c, 1, "starts"));
    GRAPHI_ASSIGN_OR_RETURN(ends, const_ints(c, 2, "ends"));
    if (c.node.inputs.size() > 3 && c.node.inputs[3] != graph::kNoId) {
      GRAPHI_ASSIGN_OR_RETURN(axes, const_ints(c, 3, "axes"));
    }
    if (c.node.inputs.size() > 4 && c.node.inputs[4] != graph::kNoId) {
      GRAPHI_ASSIGN_OR_RETURN(steps, const_ints(c, 4, "steps"));
    }
  } else {
    GRAPHI_ASSIGN_OR_RETURN(starts, graph::attr_ints(c.node.attrs, c.where, "starts"));
    GRAPHI_ASSIGN_OR_RETURN(ends, graph::attr_ints(c.node.attrs, c.where, "ends"));
    GRAPHI_ASSIGN_OR_RETURN(axes, graph::attr_ints(c.node.attrs, c.where, "axes", {}));
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t k = 0; k < starts.size(); ++k) {
    if (!steps.empty() && steps[k] != 1)
      return Status::unsupported(c.where + ": the Slice gradient supports step 1 only, got step " +
                                 std::to_string(steps[k]));
    const size_t ax = static_cast<size_t>(norm_axis(axes[k], rank));
    const int64_t d = xs[ax];
    int64_t b = starts[k] < 0 ? starts[k] + d : starts[k];
    b = std::clamp<int64_t>(b, 0, d);
    pads[ax] = b;
    pads[rank + ax] = d - b - c.out(0).desc.shape[ax];
  }
  dx[0] = c.e.op("Pad", {c.dy[0], c.e.ints(pads)}, {}, "slice_grad");
  return Status::ok();
}

// Pad (constant mode, pads >= 0, no axes input): the gradient is the slice of dy at X's place;
// the fill value gets no gradient (refused if it is trainable).
Status grad_pad(GradContext& c, Dx& dx) {
  GRAPHI_ASSIGN_OR_RETURN(std::string mode,
                          graph::attr_string(c.node.attrs, c.where, "mode", "constant"));
  if (mode != "constant")
    return Status::unsupported(c.where + ": the Pad gradient supports mode 'constant' only, got '" +
                               mode + "'");
  if (c.node.inputs.size() > 3 && c.node.inputs[3] != graph::kNoId)
    return Status::unsupported(c.where + ": the Pad gradient does not support the 'axes' input");
  if (c.need.size() > 2 && c.need[2])
    return Status::unsupported(c.where +
                               ": the Pad gradient does not differentiate the fill value");
  std::vector<int64_t> pads;
  if (c.node.inputs.size() > 1 && c.node.inputs[1] != graph::kNoId) {
    GRAPHI_ASSIGN_OR_RETURN(pads, const_ints(c, 1, "pads"));
  } else {
    GRAPHI_ASSIGN_OR_RETURN(pads, graph::attr_ints(c.node.attrs, c.where, "pads"));
  }
  const Shape& xs = c.in(0).desc.shape;
  const size_t rank = xs.size();
  if (pads.size() != 2 * rank)
    return Status::invalid_graph(c.where + ": 'pads' has " + std::to_string(pads.size()) +
                                 " values for rank " + std::to_string(rank));
  std::vector<int64_t> starts, ends;
  for (size_t d = 0; d < rank; ++d) {
    if (pads[d] < 0 || pads[rank + d] < 0)
      return Status::unsupported(c.where + ": the Pad gradient does not support negative pads");
    starts.push_back(pads[d]);
    ends.push_back(pads[d] + xs[d]);
  }
  if (c.need[0])
    dx[0] = c.e.op("Slice", {c.dy[0], c.e.ints(starts), c.e.ints(ends)}, {}, "pad_grad");
  return Status::ok();
}

Status grad_gather_elements(GradContext& c, Dx& dx) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(c.node.attrs, c.where, "axis", 0));
  Attributes a;
  a.set("axis", axis);
  a.set("reduction", std::string("add"));
  dx[0] = c.e.op("ScatterElements", {c.e.zeros(c.in(0).desc), c.in_name(1), c.dy[0]}, std::move(a),
                 "gather_grad");
  return Status::ok();
}

// ---- matrix products ----

std::string swap_last2(GradEmitter& e, const std::string& v, size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  Attributes a;
  a.set("perm", perm);
  return e.op("Transpose", {v}, std::move(a));
}

Status grad_matmul(GradContext& c, Dx& dx) {
  const Shape &as = c.in(0).desc.shape, &bs = c.in(1).desc.shape, &ys = c.out(0).desc.shape;
  if (as.size() < 2 || bs.size() < 2)
    return Status::unsupported(c.where + ": the MatMul gradient needs operands of rank >= 2, got " +
                               shape_to_string(as) + " and " + shape_to_string(bs));
  Shape batch(ys.begin(), ys.end() - 2);
  if (c.need[0] && bs.size() == 2) {
    // B shared by every batch (so A is not broadcast): dA = dy' B^T over the flattened rows, one
    // Gemm with transB, no Transpose of B (in the unrolled RNN training steps the Transposes of
    // the recurrent weights took a fifth of the step).
    const int64_t n = ys.back();
    const bool flat = as.size() == 2;
    std::string y2 = flat ? c.dy[0] : c.e.op("Reshape", {c.dy[0], c.e.ints({-1, n})});
    Attributes a;
    a.set("transB", int64_t{1});
    std::string g = c.e.op("Gemm", {y2, c.in_name(1)}, std::move(a), "matmul_dA");
    dx[0] = flat ? g : c.e.op("Reshape", {g, c.e.ints(as)});
  } else if (c.need[0]) {
    // dA = dy B^T, of shape batch + [M, K], summed over the batch dims A broadcast along.
    std::string g =
        c.e.op("MatMul", {c.dy[0], swap_last2(c.e, c.in_name(1), bs.size())}, {}, "matmul_dA");
    Shape s = batch;
    s.push_back(as[as.size() - 2]);
    s.push_back(as.back());
    dx[0] = c.e.reduce_to(g, s, as);
  }
  if (c.need[1]) {
    std::string g;
    Shape s;
    if (bs.size() == 2) {
      // B shared by every batch: one GEMM over the flattened rows, dB = A'^T dy' (transA: no
      // Transpose node).
      const int64_t k = as.back(), n = ys.back();
      const bool flat = as.size() == 2;
      std::string a2 = flat ? c.in_name(0) : c.e.op("Reshape", {c.in_name(0), c.e.ints({-1, k})});
      std::string y2 = flat ? c.dy[0] : c.e.op("Reshape", {c.dy[0], c.e.ints({-1, n})});
      Attributes a;
      a.set("transA", int64_t{1});
      dx[1] = c.e.op("Gemm", {a2, y2}, std::move(a), "matmul_dB");
      return Status::ok();
    }
    g = c.e.op("MatMul", {swap_last2(c.e, c.in_name(0), as.size()), c.dy[0]}, {}, "matmul_dB");
    s = batch;
    s.push_back(bs[bs.size() - 2]);
    s.push_back(bs.back());
    dx[1] = c.e.reduce_to(g, s, bs);
  }
  return Status::ok();
}

Status grad_gemm(GradContext& c, Dx& dx) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t ta, graph::attr_int(c.node.attrs, c.where, "transA", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t tb, graph::attr_int(c.node.attrs, c.where, "transB", 0));
  GRAPHI_ASSIGN_OR_RETURN(double alpha, graph::attr_float(c.node.attrs, c.where, "alpha", 1.0));
  GRAPHI_ASSIGN_OR_RETURN(double beta, graph::attr_float(c.node.attrs, c.where, "beta", 1.0));
  auto gemm = [&](const std::string& a, const std::string& b, int64_t t_a, int64_t t_b,
                  const char* hint) {
    Attributes at;
    at.set("transA", t_a);
    at.set("transB", t_b);
    at.set("alpha", alpha);
    return c.e.op("Gemm", {a, b}, std::move(at), hint);
  };
  const std::string &A = c.in_name(0), &B = c.in_name(1), &dy = c.dy[0];
  // Y = alpha op(A) op(B): dop(A) = alpha dy op(B)^T, dop(B) = alpha op(A)^T dy.
  if (c.need[0])
    dx[0] = ta == 0 ? gemm(dy, B, 0, 1 - tb, "gemm_dA") : gemm(B, dy, tb, 1, "gemm_dA");
  if (c.need[1])
    dx[1] = tb == 0 ? gemm(A, dy, 1 - ta, 0, "gemm_dB") : gemm(dy, A, 1, ta, "gemm_dB");
  if (c.node.inputs.size() > 2 && c.need[2]) {
    std::string g = c.e.reduce_to(dy, c.out(0).desc.shape, c.in(2).desc.shape);
    dx[2] = beta == 1.0 ? g : c.e.op("Mul", {g, c.e.scalar(static_cast<float>(beta))});
  }
  return Status::ok();
}

// ---- softmax family ----

Status grad_softmax(GradContext& c, Dx& dx) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(c.node.attrs, c.where, "axis", -1));
  const std::string& y = c.out_name(0);
  std::string s = c.e.op("ReduceSum", {c.e.op("Mul", {c.dy[0], y}), c.e.ints({axis})},
                         attrs_int("keepdims", 1));
  dx[0] = c.e.op("Mul", {y, c.e.op("Sub", {c.dy[0], s})}, {}, "softmax_grad");
  return Status::ok();
}

Status grad_log_softmax(GradContext& c, Dx& dx) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(c.node.attrs, c.where, "axis", -1));
  std::string s = c.e.op("ReduceSum", {c.dy[0], c.e.ints({axis})}, attrs_int("keepdims", 1));
  std::string p = c.e.op("Exp", {c.out_name(0)});
  dx[0] = c.e.op("Sub", {c.dy[0], c.e.op("Mul", {p, s})}, {}, "log_softmax_grad");
  return Status::ok();
}

// ---- reductions ----

template <bool kMean>
Status grad_reduce(GradContext& c, Dx& dx) {
  const Shape& xs = c.in(0).desc.shape;
  std::vector<int64_t> axes;
  if (c.node.inputs.size() > 1 && c.node.inputs[1] != graph::kNoId) {
    GRAPHI_ASSIGN_OR_RETURN(axes, const_ints(c, 1, "axes"));
  } else {
    GRAPHI_ASSIGN_OR_RETURN(axes, graph::attr_ints(c.node.attrs, c.where, "axes", {}));
  }
  GRAPHI_ASSIGN_OR_RETURN(int64_t noop,
                          graph::attr_int(c.node.attrs, c.where, "noop_with_empty_axes", 0));
  if (axes.empty() && noop != 0) {
    dx[0] = c.dy[0];
    return Status::ok();
  }
  std::vector<bool> reduced(xs.size(), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(norm_axis(a, xs.size()))] = true;
  Shape kept = xs;
  int64_t count = 1;
  for (size_t i = 0; i < xs.size(); ++i)
    if (reduced[i]) {
      kept[i] = 1;
      count *= xs[i];
    }
  if (xs.empty()) {  // a scalar reduces to itself
    dx[0] = c.dy[0];
    return Status::ok();
  }
  std::string g = c.e.reshape(c.dy[0], kept);
  if (kMean) g = c.e.op("Mul", {g, c.e.scalar(1.0f / static_cast<float>(count))});
  dx[0] = c.e.op("Expand", {g, c.e.ints(xs)}, {}, kMean ? "reduce_mean_grad" : "reduce_sum_grad");
  return Status::ok();
}

// ---- convolution and pooling (2-D, NCHW) ----

struct Conv2d {
  std::vector<int64_t> strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1}, kernel;
  int64_t group = 1;
};

Result<Conv2d> conv_attrs(const GradContext& c, const Shape& kernel) {
  const graph::Attributes& a = c.node.attrs;
  Conv2d g;
  GRAPHI_ASSIGN_OR_RETURN(std::string auto_pad,
                          graph::attr_string(a, c.where, "auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET")
    return Status::unsupported(c.where + ": the gradient rule needs explicit pads, got auto_pad " +
                               auto_pad);
  GRAPHI_ASSIGN_OR_RETURN(g.strides, graph::attr_ints(a, c.where, "strides", g.strides));
  GRAPHI_ASSIGN_OR_RETURN(g.pads, graph::attr_ints(a, c.where, "pads", g.pads));
  GRAPHI_ASSIGN_OR_RETURN(g.dilations, graph::attr_ints(a, c.where, "dilations", g.dilations));
  GRAPHI_ASSIGN_OR_RETURN(g.kernel, graph::attr_ints(a, c.where, "kernel_shape", kernel));
  GRAPHI_ASSIGN_OR_RETURN(g.group, graph::attr_int(a, c.where, "group", 1));
  if (g.strides.size() != 2 || g.pads.size() != 4 || g.dilations.size() != 2 ||
      g.kernel.size() != 2)
    return Status::unsupported(c.where + ": the gradient rule supports 2-D (NCHW) only");
  return g;
}

// Conv: dX = ConvTranspose(dy, W) with the same strides/pads/dilations/group (and the
// output_padding that restores X's size); dW = ConvGradWeight(X, dy) (ops/conv_grad_weight.cpp,
// oneDNN's backward-weights primitive; was a Conv over channels-as-batch); dB = sum of dy over
// N, H, W.
Status grad_conv(GradContext& c, Dx& dx) {
  const Shape &xs = c.in(0).desc.shape, &ws = c.in(1).desc.shape, &ys = c.out(0).desc.shape;
  if (xs.size() != 4)
    return Status::unsupported(c.where + ": the Conv gradient supports 2-D (NCHW) only");
  GRAPHI_ASSIGN_OR_RETURN(Conv2d g, conv_attrs(c, {ws[2], ws[3]}));
  if (c.need[0]) {
    std::vector<int64_t> out_pad(2);
    for (size_t d = 0; d < 2; ++d)
      out_pad[d] = xs[2 + d] - (g.strides[d] * (ys[2 + d] - 1) +
                                (g.kernel[d] - 1) * g.dilations[d] + 1 - g.pads[d] - g.pads[2 + d]);
    Attributes a;
    a.set("strides", g.strides);
    a.set("pads", g.pads);
    a.set("dilations", g.dilations);
    a.set("group", g.group);
    a.set("output_padding", out_pad);
    dx[0] = c.e.op("ConvTranspose", {c.dy[0], c.in_name(1)}, std::move(a), "conv_dX");
  }
  if (c.need[1]) {
    if (g.group != 1)
      return Status::unsupported(c.where +
                                 ": the Conv weight gradient supports group 1 only, got " +
                                 std::to_string(g.group));
    Attributes a;
    a.set("strides", g.strides);
    a.set("pads", g.pads);
    a.set("dilations", g.dilations);
    a.set("kernel_shape", std::vector<int64_t>{ws[2], ws[3]});
    dx[1] = c.e.op("ConvGradWeight", {c.in_name(0), c.dy[0]}, std::move(a), "conv_dW");
  }
  if (c.node.inputs.size() > 2 && c.need[2])
    dx[2] =
        c.e.op("ReduceSum", {c.dy[0], c.e.ints({0, 2, 3})}, attrs_int("keepdims", 0), "conv_dB");
  return Status::ok();
}

// MaxPool / AveragePool with windows that tile the input exactly (kernel = strides, no pads,
// no dilation, H and W multiples of the kernel; GlobalAveragePool arrives as such an
// AveragePool): dy is spread back over each window through a [N, C, OH, 1, OW, 1] view;
// AveragePool divides it by the window size, MaxPool keeps it where x equals the window's max.
template <bool kMax>
Status grad_pool(GradContext& c, Dx& dx) {
  const Shape &xs = c.in(0).desc.shape, &ys = c.out(0).desc.shape;
  if (xs.size() != 4)
    return Status::unsupported(c.where + ": the pooling gradient supports 2-D (NCHW) only");
  GRAPHI_ASSIGN_OR_RETURN(Conv2d g, conv_attrs(c, {}));
  GRAPHI_ASSIGN_OR_RETURN(int64_t ceil_mode,
                          graph::attr_int(c.node.attrs, c.where, "ceil_mode", 0));
  bool tiles = ceil_mode == 0 && g.strides == g.kernel &&
               g.dilations == std::vector<int64_t>{1, 1} &&
               g.pads == std::vector<int64_t>{0, 0, 0, 0} && xs[2] == ys[2] * g.kernel[0] &&
               xs[3] == ys[3] * g.kernel[1];
  if (kMax && pool_grad_is_op(c, c.node)) {
    // The gradient-only MaxPoolGrad op (ops/max_pool_grad.cpp), for tiling windows too: one op
    // instead of the seven of the composed form below (Expand/Equal/Mul took a fifth of the
    // PathNet step), and dy goes to the first maximum of a window as in PyTorch, where the
    // composed form gave it to every tied maximum.
    Attributes a;
    a.set("kernel_shape", g.kernel);
    a.set("strides", g.strides);
    a.set("pads", g.pads);
    if (relu_masked_by_pool(c, c.node.inputs[0])) a.set("relu_input", int64_t{1});
    dx[0] = c.e.op("MaxPoolGrad", {c.in_name(0), c.dy[0]}, std::move(a), "maxpool_grad");
    return Status::ok();
  }
  if (!tiles)
    return Status::unsupported(c.where +
                               ": the pooling gradient supports non-overlapping windows that tile "
                               "the input (kernel = strides, no pads or dilation), and MaxPool "
                               "with any windows without dilation or ceil_mode, only");
  const Shape six = {xs[0], xs[1], ys[2], 1, ys[3], 1};
  const Shape wide = {xs[0], xs[1], ys[2], g.kernel[0], ys[3], g.kernel[1]};
  auto spread = [&](const std::string& v) {
    return c.e.reshape(c.e.op("Expand", {c.e.reshape(v, six), c.e.ints(wide)}), xs);
  };
  if (kMax) {
    std::string mask = c.e.op("Equal", {c.in_name(0), spread(c.out_name(0))});
    dx[0] = c.e.op("Mul", {spread(c.dy[0]), mask}, {}, "maxpool_grad");
  } else {
    const float inv = 1.0f / static_cast<float>(g.kernel[0] * g.kernel[1]);
    dx[0] = c.e.op("Mul", {spread(c.dy[0]), c.e.scalar(inv)}, {}, "avgpool_grad");
  }
  return Status::ok();
}

// ---- training-mode normalization and dropout ----

// BatchNormalizationTraining (X, scale, B) -> Y, Mean, InvStdDev, Var over the channel dim 1, with
// M = N * spatial elements per channel, xhat = (X - Mean) * InvStdDev (torch's
// batch_norm_backward):
//   dB = sum(dY), dscale = sum(dY * xhat)   (sums over every dim but 1)
//   dX = scale * InvStdDev * (dY - dB / M - xhat * dscale / M)
// The statistics are read from the forward node's outputs, not recomputed.
Status grad_batch_norm_training(GradContext& c, Dx& dx) {
  for (size_t k = 1; k < c.dy.size(); ++k)
    if (!c.dy[k].empty())
      return Status::unsupported(c.where +
                                 ": the BatchNormalization gradient flows through Y "
                                 "only; output " +
                                 std::to_string(k) + " ('" + c.out_name(k) +
                                 "') is used on the way to the loss");
  if (c.node.outputs.size() < 3)
    return Status::unsupported(c.where +
                               ": the gradient rule needs the Mean and InvStdDev outputs");
  const Shape& xs = c.in(0).desc.shape;
  const int64_t ch = xs[1];
  Shape cs(xs.size(), 1);
  cs[1] = ch;
  std::vector<int64_t> axes;
  int64_t count = 1;
  for (size_t d = 0; d < xs.size(); ++d)
    if (d != 1) {
      axes.push_back(static_cast<int64_t>(d));
      count *= xs[d];
    }
  const std::string& dy = c.dy[0];
  const std::string ax = c.e.ints(axes);
  const std::string mean = c.e.reshape(c.out_name(1), cs), inv = c.e.reshape(c.out_name(2), cs);
  const std::string xhat = c.e.op("Mul", {c.e.op("Sub", {c.in_name(0), mean}), inv}, {}, "bn_xhat");
  const std::string db = c.e.op("ReduceSum", {dy, ax}, attrs_int("keepdims", 0), "bn_dB");
  const std::string dscale =
      c.e.op("ReduceSum", {c.e.op("Mul", {dy, xhat}), ax}, attrs_int("keepdims", 0), "bn_dscale");
  if (c.need[1]) dx[1] = dscale;
  if (c.need[2]) dx[2] = db;
  if (c.need[0]) {
    const std::string inv_m = c.e.scalar(1.0f / static_cast<float>(count));
    const std::string mean_db = c.e.op("Mul", {c.e.reshape(db, cs), inv_m});
    const std::string mean_ds = c.e.op("Mul", {c.e.reshape(dscale, cs), inv_m});
    const std::string centred =
        c.e.op("Sub", {c.e.op("Sub", {dy, mean_db}), c.e.op("Mul", {xhat, mean_ds})});
    const std::string k = c.e.op("Mul", {c.e.reshape(c.in_name(1), cs), inv});
    dx[0] = c.e.op("Mul", {centred, k}, {}, "bn_dX");
  }
  return Status::ok();
}

// DropoutTraining (X, step) -> Y = X * Mask, Mask: dX = dY * Mask (the forward's own mask).
Status grad_dropout_training(GradContext& c, Dx& dx) {
  if (c.dy.size() > 1 && !c.dy[1].empty())
    return Status::unsupported(c.where +
                               ": the Dropout mask output is used on the way to the loss");
  if (c.node.outputs.size() < 2)
    return Status::unsupported(c.where + ": the gradient rule needs the Mask output");
  if (c.need[0]) dx[0] = c.e.op("Mul", {c.dy[0], c.out_name(1)}, {}, "dropout_grad");
  return Status::ok();
}

class GradientTable final : public graph::passes::GradientRules {
 public:
  GradientTable() {
    rules_ = {
        {"Add", grad_add},
        {"Sub", grad_sub},
        {"Mul", grad_mul},
        {"Div", grad_div},
        {"Sigmoid", grad_sigmoid},
        {"Tanh", grad_tanh},
        {"Relu", grad_relu},
        {"Exp", grad_exp},
        {"Where", grad_where},
        {"Log", grad_log},
        {"Neg", grad_neg},
        {"Sqrt", grad_sqrt},
        {"Reshape", grad_reshape},
        {"Identity", grad_identity},
        {"Transpose", grad_transpose},
        {"Concat", grad_concat},
        {"Split", grad_split},
        {"Slice", grad_slice},
        {"GatherElements", grad_gather_elements},
        {"Pad", grad_pad},
        {"MatMul", grad_matmul},
        {"Gemm", grad_gemm},
        {"Softmax", grad_softmax},
        {"LogSoftmax", grad_log_softmax},
        {"ReduceSum", grad_reduce<false>},
        {"ReduceMean", grad_reduce<true>},
        {"Conv", grad_conv},
        {"MaxPool", grad_pool<true>},
        {"AveragePool", grad_pool<false>},
        {"BatchNormalizationTraining", grad_batch_norm_training},
        {"DropoutTraining", grad_dropout_training},
        {"LSTM", rnn_grad_rule},  // ops/rnn/rnn_grad_rule.cpp (BPTT, ops/rnn/rnn_train.h)
        {"GRU", rnn_grad_rule},
        {"RNN", rnn_grad_rule},
        {"PhasedLSTM", rnn_grad_rule},
    };
  }
  // Zero gradient almost everywhere (PyTorch's backward of floor, sign and the comparisons is
  // zero; the jumps are not differentiated): the PhasedLSTM phase u - floor(u) thus gets
  // d/du = 1, as torch.remainder's backward gives, and Where's condition no gradient.
  bool piecewise_constant(const std::string& op) const override {
    static const std::set<std::string> kOps = {"Floor", "Ceil",    "Round",          "Sign",
                                               "Less",  "Greater", "LessOrEqual",    "Equal",
                                               "GreaterOrEqual"};
    return kOps.count(op) != 0;
  }
  graph::passes::GradRule find(const std::string& op) const override {
    auto it = rules_.find(op);
    return it == rules_.end() ? nullptr : it->second;
  }
  std::optional<graph::passes::TrainingForm> training_form(const graph::Node& node) const override {
    return rnn_training_form(node);
  }
  std::vector<std::string> ops() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : rules_) out.push_back(k);
    return out;
  }

 private:
  std::map<std::string, graph::passes::GradRule> rules_;
};

const GradientTable& table() {
  static const GradientTable t;
  return t;
}

}  // namespace

const graph::passes::GradientRules& gradient_rules() { return table(); }
std::vector<std::string> differentiable_ops() { return table().ops(); }
std::vector<std::string> piecewise_constant_ops() {
  std::vector<std::string> out;
  for (const std::string& op : Registry::get().op_types())
    if (table().piecewise_constant(op)) out.push_back(op);
  return out;
}

}  // namespace graphi::ops
