// ONNX import, element-wise and math ops: Cast, CastLike, integer Add/Sub/Mul/Div/Max/Min/Neg/Abs/
// Sign/Clip, Mish, Celu, PRelu, HardSwish, Trilu (a constant mask),
// GroupNormalization (as InstanceNormalization over the groups), Mean/Sum/Max/Min over many inputs,
// opset < 13 Softmax/LogSoftmax, Hardmax (ArgMax == iota), Reduce* with empty axes, and opset < 7
// broadcasting.
#include <algorithm>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

std::optional<Status> Importer::translate_elementwise(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& op = n.op;
  const std::string& where = io.where;
  [[maybe_unused]] const std::string& name = io.name;
  [[maybe_unused]] std::vector<std::string>& ins = io.ins;
  [[maybe_unused]] const std::vector<std::string>& outs = io.outs;
  [[maybe_unused]] auto need = [&](size_t k) { return io.need(k); };
  if (op == "Cast" || op == "CastLike") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    int32_t to_type = 0;
    if (op == "CastLike") {  // Cast to the second input's element type (known at import)
      GRAPHI_RETURN_IF_ERROR(need(1));
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc like, desc_of(ins[1], where));
      const HostTensor* h = host(ins[1]);
      // A run-time FLOAT16 / BFLOAT16 graph input is float32 here: its declared type counts.
      const auto declared = [&](const std::vector<std::string>& l) {
        return std::find(l.begin(), l.end(), ins[1]) != l.end();
      };
      to_type = h                            ? h->type
                : declared(float16_values_)  ? onnx::kFloat16
                : declared(bfloat16_values_) ? onnx::kBfloat16
                                             : onnx_type_of(like.dtype);
    } else {
      const onnx::Attr* to = n.attr("to");
      if (!to || to->type != onnx::kAttrInt)
        return Status::invalid_graph(where + ": missing attribute 'to'");
      to_type = static_cast<int32_t>(to->i);
    }
    // FLOAT16 / BFLOAT16 are float32 in graphi: the Cast keeps only the rounding to them.
    const bool to_16 = to_type == onnx::kFloat16 || to_type == onnx::kBfloat16;
    if (to_type != onnx::kBool && !to_16 && graphi_dtype(to_type) == d.dtype)
      return emit("Identity", name, {ins[0]}, outs, {}, where, &n);
    if (to_type != onnx::kBool && !graphi_dtype(to_type))
      return Status::unsupported(where + ": Cast of a run-time " + d.to_string() + " to " +
                                 onnx::data_type_name(to_type) +
                                 " is not supported (graphi computes in float32, int32 and "
                                 "int64; BOOL is float32 0/1, FLOAT16 and BFLOAT16 float32 "
                                 "rounded to them)");
    // A bool (float32 0/1) cast to FLOAT is an identity in graphi's Cast too (ops/cast_op.cpp).
    Attributes a;
    a.set("to", int64_t{to_type});
    return emit("Cast", name, {ins[0]}, outs, std::move(a), where, &n);
  }
  if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && ins.size() == 2 &&
      !ins[0].empty() && !ins[1].empty()) {
    // Integer operands at run time (index math on token ids): graphi's IntBinary
    // (ops/int_arith.cpp); graphi's Add..Div are float32.
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc a, desc_of(ins[0], where));
    if (a.dtype != DType::kF32) return emit_int_binary(op, name, ins[0], ins[1], outs[0], n, where);
  }
  if ((op == "Neg" || op == "Abs" || op == "Sign" || op == "Clip") && !ins.empty() &&
      !ins[0].empty()) {
    // Integer X at run time (torch.clamp / abs / sign on int64): IntBinary chains, exact and
    // wrapping like numpy (Neg and Abs of the most negative value give itself).
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(ins[0], where));
    if (x.dtype != DType::kF32) {
      auto scalar = [&](const std::string& tag, int64_t v) {
        HostTensor t = HostTensor::make(onnx_type_of(x.dtype), {});
        t.i[0] = v;
        return add_const(name + "/" + tag, std::move(t));
      };
      if (op == "Neg")
        return emit_int_binary("Sub", name, scalar("zero", 0), ins[0], outs[0], n, where);
      if (op == "Abs") {
        const std::string neg = fresh(name + "/neg");
        GRAPHI_RETURN_IF_ERROR(
            emit_int_binary("Sub", neg, scalar("zero", 0), ins[0], neg, n, where));
        return emit_int_binary("Max", name, ins[0], neg, outs[0], n, where);
      }
      // Sign is Clip(x, -1, 1); Clip's absent bounds are skipped.
      std::string lo, hi;
      if (op == "Sign") {
        lo = scalar("minus_one", -1);
        hi = scalar("one", 1);
      } else {
        if (ins.size() > 1) lo = ins[1];
        if (ins.size() > 2) hi = ins[2];
      }
      std::string acc = ins[0];
      if (!lo.empty()) {
        const std::string out = hi.empty() ? outs[0] : fresh(name + "/at_least_min");
        GRAPHI_RETURN_IF_ERROR(
            emit_int_binary("Max", hi.empty() ? name : out, acc, lo, out, n, where));
        acc = out;
      }
      if (!hi.empty()) return emit_int_binary("Min", name, acc, hi, outs[0], n, where);
      if (lo.empty()) return emit("Identity", name, {ins[0]}, outs, {}, where, &n);
      return Status::ok();
    }
  }
  if (op == "Mish") {
    // x * tanh(softplus(x)), ONNX's definition (opset 18).
    GRAPHI_RETURN_IF_ERROR(need(0));
    const std::string sp = fresh(name + "/softplus"), th = fresh(name + "/tanh");
    GRAPHI_RETURN_IF_ERROR(emit("Softplus", sp, {ins[0]}, {sp}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Tanh", th, {sp}, {th}, {}, where, &n));
    return emit("Mul", name, {ins[0], th}, outs, {}, where, &n);
  }
  if (op == "Swish" || op == "SwiGLU") {
    // Swish-24: x * Sigmoid(alpha * x) (alpha 1: the y * Sigmoid(y) conv fusion recognizes);
    // SwiGLU-28: Swish(A) * B, A and B of one shape.
    GRAPHI_RETURN_IF_ERROR(need(0));
    const bool glu = op == "SwiGLU";
    if (glu) {
      GRAPHI_RETURN_IF_ERROR(need(1));
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc a, desc_of(ins[0], where));
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc bv, desc_of(ins[1], where));
      if (a.shape != bv.shape)
        return Status::invalid_graph(where + ": inputs A " + a.to_string() + " and B " +
                                     bv.to_string() + " must have the same shape");
    }
    const onnx::Attr* al = n.attr("alpha");
    const double alpha = al ? al->f : 1.0;
    std::string gate_in = ins[0];
    if (alpha != 1.0) {
      HostTensor t = HostTensor::make(onnx::kFloat, {1});
      t.f[0] = alpha;
      gate_in = fresh(name + "/scaled");
      GRAPHI_RETURN_IF_ERROR(emit("Mul", gate_in,
                                  {ins[0], add_const(name + "/alpha", std::move(t))}, {gate_in}, {},
                                  where, &n));
    }
    const std::string sg = fresh(name + "/sigmoid");
    GRAPHI_RETURN_IF_ERROR(emit("Sigmoid", sg, {gate_in}, {sg}, {}, where, &n));
    if (!glu) return emit("Mul", name, {ins[0], sg}, outs, {}, where, &n);
    const std::string sw = fresh(name + "/swish");
    GRAPHI_RETURN_IF_ERROR(emit("Mul", sw, {ins[0], sg}, {sw}, {}, where, &n));
    return emit("Mul", name, {sw, ins[1]}, outs, {}, where, &n);
  }
  if (op == "RMSNormalization") {
    // Opset 23: X / Sqrt(ReduceMean(X * X over [axis, rank)) + epsilon) * scale (float32: the
    // stash type changes nothing).
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(ins[0], where));
    if (x.dtype != DType::kF32 || x.rank() < 1)
      return Status::invalid_graph(where + ": input X must be a float32 tensor, got " +
                                   x.to_string());
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : -1;
    if (axis < -x.rank() || axis >= x.rank())
      return Status::invalid_graph(where + ": attribute 'axis' = " + std::to_string(axis) +
                                   " is out of range for X " + x.to_string());
    if (axis < 0) axis += x.rank();
    const onnx::Attr* ep = n.attr("epsilon");
    const double epsilon = ep ? ep->f : 1e-5;
    std::vector<int64_t> axes;
    for (int64_t d = axis; d < x.rank(); ++d) axes.push_back(d);
    HostTensor eps = HostTensor::make(onnx::kFloat, {1});
    eps.f[0] = epsilon;
    const std::string sq = fresh(name + "/square"), ms = fresh(name + "/mean_square"),
                      me = fresh(name + "/plus_epsilon"), rms = fresh(name + "/rms"),
                      nm = fresh(name + "/normalized");
    GRAPHI_RETURN_IF_ERROR(emit("Mul", sq, {ins[0], ins[0]}, {sq}, {}, where, &n));
    Attributes ra;
    ra.set("axes", axes);
    ra.set("keepdims", int64_t{1});
    GRAPHI_RETURN_IF_ERROR(emit("ReduceMean", ms, {sq}, {ms}, std::move(ra), where, &n));
    GRAPHI_RETURN_IF_ERROR(
        emit("Add", me, {ms, add_const(name + "/epsilon", std::move(eps))}, {me}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Sqrt", rms, {me}, {rms}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Div", nm, {ins[0], rms}, {nm}, {}, where, &n));
    return emit("Mul", name, {nm, ins[1]}, outs, {}, where, &n);
  }
  if (op == "Celu") {
    // alpha * Elu(x / alpha) (alpha = 1: Elu itself).
    GRAPHI_RETURN_IF_ERROR(need(0));
    const onnx::Attr* al = n.attr("alpha");
    const double alpha = al ? al->f : 1.0;
    if (!(alpha > 0)) return Status::invalid_graph(where + ": attribute 'alpha' must be > 0");
    if (alpha == 1.0) return emit("Elu", name, {ins[0]}, outs, {}, where, &n);
    auto scalar = [&](const std::string& tag, double v) {
      HostTensor t = HostTensor::make(onnx::kFloat, {1});
      t.f[0] = v;
      return add_const(name + "/" + tag, std::move(t));
    };
    const std::string xs = fresh(name + "/scaled_in"), e = fresh(name + "/elu");
    GRAPHI_RETURN_IF_ERROR(emit("Div", xs, {ins[0], scalar("alpha", alpha)}, {xs}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Elu", e, {xs}, {e}, {}, where, &n));
    return emit("Mul", name, {e, scalar("alpha_out", alpha)}, outs, {}, where, &n);
  }
  if (op == "PRelu") {
    // Relu(x) + slope * Min(x, 0): exact (one of the two terms is 0), slope broadcast as ONNX's
    // unidirectional rule allows (nn.PReLU exports [C, 1, 1]).
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    HostTensor zero = HostTensor::make(onnx::kFloat, {1});
    const std::string pos = fresh(name + "/relu"), neg = fresh(name + "/min"),
                      scaled = fresh(name + "/scaled");
    GRAPHI_RETURN_IF_ERROR(emit("Relu", pos, {ins[0]}, {pos}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Min", neg, {ins[0], add_const(name + "/zero", std::move(zero))},
                                {neg}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Mul", scaled, {ins[1], neg}, {scaled}, {}, where, &n));
    return emit("Add", name, {pos, scaled}, outs, {}, where, &n);
  }
  if (op == "HardSwish") {
    // x * HardSigmoid(x; 1/6, 1/2), which is ONNX's definition.
    GRAPHI_RETURN_IF_ERROR(need(0));
    Attributes a;
    a.set("alpha", 1.0 / 6.0);
    a.set("beta", 0.5);
    const std::string hs = fresh(name + "/hard_sigmoid");
    GRAPHI_RETURN_IF_ERROR(emit("HardSigmoid", hs, {ins[0]}, {hs}, std::move(a), where, &n));
    return emit("Mul", name, {ins[0], hs}, outs, {}, where, &n);
  }
  if (op == "Trilu") {
    // torch.tril / torch.triu of a run-time tensor (constants fold at import): shapes are
    // static, so the kept triangle of the last two dims is a constant mask, Where(mask, X, 0).
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(ins[0], where));
    if (x.rank() < 2)
      return Status::invalid_graph(where + ": input X must have rank >= 2, got " + x.to_string());
    int64_t k = 0;
    if (ins.size() > 1 && !ins[1].empty()) {
      const HostTensor* kt = host(ins[1]);
      if (!kt)
        return Status::unsupported(where +
                                   ": input 1 (k) computed at run time is not supported "
                                   "(graphi needs the diagonal offset at import)");
      if (kt->numel() != 1 || kt->is_float())
        return Status::invalid_graph(where + ": input 1 (k) must be an integer scalar");
      k = kt->i[0];
    }
    const onnx::Attr* up = n.attr("upper");
    const bool upper = !up || up->i != 0;
    const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape[x.shape.size() - 1];
    HostTensor mask = HostTensor::make(onnx::kBool, {rows, cols});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        mask.i[static_cast<size_t>(i * cols + j)] = (upper ? j - i >= k : j - i <= k) ? 1 : 0;
    return emit("Where", name,
                {add_const(name + "/triangle", std::move(mask)), ins[0],
                 add_const(name + "/zero", HostTensor::make(onnx_type_of(x.dtype), {}))},
                outs, {}, where, &n);
  }
  if (op == "GroupNormalization") {
    // InstanceNormalization of x viewed as [N, G, C/G * spatial] (one group = one "channel";
    // unit scale, zero bias), back to x's shape, then * scale + bias per channel. Opset 21 has
    // one scale and bias per channel, 18-20 one per group (repeated over its C/G channels here).
    for (size_t k = 0; k < 3; ++k) GRAPHI_RETURN_IF_ERROR(need(k));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(ins[0], where));
    if (x.dtype != DType::kF32 || x.rank() < 3)
      return Status::invalid_graph(where + ": input X must be float32 [N, C, D1, ...], got " +
                                   x.to_string());
    const onnx::Attr* ng = n.attr("num_groups");
    if (!ng || ng->type != onnx::kAttrInt)
      return Status::invalid_graph(where + ": missing attribute 'num_groups'");
    const int64_t groups = ng->i, c = x.shape[1];
    if (groups < 1 || c % groups != 0)
      return Status::invalid_graph(where + ": attribute 'num_groups' = " + std::to_string(groups) +
                                   " must divide the " + std::to_string(c) + " channels of X " +
                                   x.to_string());
    const onnx::Attr* ep = n.attr("epsilon");
    const double epsilon = ep ? ep->f : 1e-5;
    const int64_t per_param = opset_ >= 21 ? c : groups;
    for (size_t k : {size_t{1}, size_t{2}}) {
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[k], where));
      if (d.dtype != DType::kF32 || d.shape != Shape{per_param})
        return Status::invalid_graph(
            where + ": input " + (k == 1 ? "scale" : "bias") + " must be float32[" +
            std::to_string(per_param) + "] (one per " + (opset_ >= 21 ? "channel" : "group") +
            " at opset " + std::to_string(opset_) + "), got " + d.to_string());
    }
    const int64_t per_group = x.numel() / x.shape[0] / groups;
    const std::string grouped = fresh(name + "/grouped"), normed = fresh(name + "/normed"),
                      back = fresh(name + "/ungrouped"), scaled = fresh(name + "/scaled");
    GRAPHI_RETURN_IF_ERROR(
        emit_reshape(grouped, ins[0], {x.shape[0], groups, per_group}, {grouped}, where, &n));
    HostTensor ones = HostTensor::make(onnx::kFloat, {groups});
    std::fill(ones.f.begin(), ones.f.end(), 1.0);
    Attributes a;
    a.set("epsilon", epsilon);
    GRAPHI_RETURN_IF_ERROR(
        emit("InstanceNormalization", normed,
             {grouped, add_const(name + "/unit_scale", std::move(ones)),
              add_const(name + "/zero_bias", HostTensor::make(onnx::kFloat, {groups}))},
             {normed}, std::move(a), where, &n));
    GRAPHI_RETURN_IF_ERROR(emit_reshape(back, normed, x.shape, {back}, where, &n));
    // scale / bias as [C, 1, ..., 1] (a group's value repeated over its channels before 21).
    Shape per_channel(static_cast<size_t>(x.rank() - 1), 1);
    per_channel[0] = c;
    auto channel_param = [&](const std::string& v, const std::string& tag) -> Result<std::string> {
      std::string src = v;
      if (per_param != c) {
        const std::string col = fresh(name + "/" + tag + "_col"),
                          rep = fresh(name + "/" + tag + "_repeated");
        GRAPHI_RETURN_IF_ERROR(emit_reshape(col, v, {groups, 1}, {col}, where, &n));
        GRAPHI_RETURN_IF_ERROR(emit(
            "Expand", rep, {col, add_ints_const(name + "/" + tag + "_shape", {groups, c / groups})},
            {rep}, {}, where, &n));
        src = rep;
      }
      const std::string out = fresh(name + "/" + tag + "_per_channel");
      GRAPHI_RETURN_IF_ERROR(emit_reshape(out, src, per_channel, {out}, where, &n));
      return out;
    };
    GRAPHI_ASSIGN_OR_RETURN(std::string sc, channel_param(ins[1], "scale"));
    GRAPHI_ASSIGN_OR_RETURN(std::string bi, channel_param(ins[2], "bias"));
    GRAPHI_RETURN_IF_ERROR(emit("Mul", scaled, {back, sc}, {scaled}, {}, where, &n));
    return emit("Add", name, {scaled, bi}, outs, {}, where, &n);
  }
  if (op == "Mean") {
    // Sum chain, then Div by the input count.
    std::vector<std::string> xs;
    for (const std::string& x : ins)
      if (!x.empty()) xs.push_back(x);
    if (xs.empty()) return Status::invalid_graph(where + ": no inputs");
    std::string acc = xs[0];
    for (size_t k = 1; k < xs.size(); ++k) {
      const std::string out = fresh(name + "/partial" + std::to_string(k));
      GRAPHI_RETURN_IF_ERROR(emit("Add", out, {acc, xs[k]}, {out}, {}, where, &n));
      acc = out;
    }
    HostTensor count = HostTensor::make(onnx::kFloat, {1});
    count.f[0] = static_cast<double>(xs.size());
    return emit("Div", name, {acc, add_const(name + "/count", std::move(count))}, outs, {}, where,
                &n);
  }
  if (op == "Sum" || op == "Max" || op == "Min") {
    const std::string bin = op == "Sum" ? "Add" : op;
    std::vector<std::string> xs;
    for (const std::string& x : ins)
      if (!x.empty()) xs.push_back(x);
    if (xs.empty()) return Status::invalid_graph(where + ": no inputs");
    if (xs.size() == 1) return emit("Identity", name, xs, outs, {}, where, &n);
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc first, desc_of(xs[0], where));
    const bool integer = first.dtype != DType::kF32;  // IntBinary chains (ops/int_arith.cpp)
    std::string acc = xs[0];
    for (size_t k = 1; k < xs.size(); ++k) {
      const bool last = k + 1 == xs.size();
      const std::string out = last ? outs[0] : fresh(name + "/partial" + std::to_string(k));
      const std::string node = last ? name : fresh(name + "/" + bin + std::to_string(k));
      GRAPHI_RETURN_IF_ERROR(integer ? emit_int_binary(bin, node, acc, xs[k], out, n, where)
                                     : emit(bin, node, {acc, xs[k]}, {out}, {}, where, &n));
      acc = out;
    }
    return Status::ok();
  }
  // Hardmax along `axis` of x (shape xs): ArgMax (the first maximal index) == k, k = 0..len-1
  // along the axis, which Equal writes as float32 1/0.
  auto hardmax = [&](const std::string& x, const Shape& xs, int64_t axis, const std::string& node,
                     const std::vector<std::string>& out) -> Status {
    const std::string am = fresh(name + "/argmax");
    Attributes a;
    a.set("axis", axis);
    a.set("keepdims", int64_t{1});
    a.set("select_last_index", int64_t{0});
    GRAPHI_RETURN_IF_ERROR(emit("ArgMax", am, {x}, {am}, std::move(a), where, &n));
    Shape ks(xs.size(), 1);
    ks[static_cast<size_t>(axis)] = xs[static_cast<size_t>(axis)];
    HostTensor k = HostTensor::make(onnx::kInt64, ks);
    for (size_t j = 0; j < k.numel(); ++j) k.i[j] = static_cast<int64_t>(j);
    return emit("Equal", node, {am, add_const(name + "/iota", std::move(k))}, out, {}, where, &n);
  };
  if (op == "Hardmax" && opset_ >= 13) {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : -1;
    if (axis < -d.rank() || axis >= d.rank())
      return Status::invalid_graph(where + ": attribute 'axis' = " + std::to_string(axis) +
                                   " is out of range for input " + d.to_string());
    if (axis < 0) axis += d.rank();
    return hardmax(ins[0], d.shape, axis, name, outs);
  }
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset_ < 13) {
    // Opsets 1-12 flatten the input to 2-D at `axis` (default 1) and normalize each row.
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : 1;
    const int64_t rank = d.rank();
    if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
      return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += rank;
    Attributes a;
    a.set("axis", int64_t{-1});
    if (axis >= rank - 1)
      return op == "Hardmax" ? hardmax(ins[0], d.shape, rank - 1, name, outs)
                             : emit(op, name, {ins[0]}, outs, a, where, &n);
    const Shape flat{shape_numel(Shape(d.shape.begin(), d.shape.begin() + axis)),
                     shape_numel(Shape(d.shape.begin() + axis, d.shape.end()))};
    const std::string x2 = fresh(name + "/flat"), y2 = fresh(name + "/flat_out");
    GRAPHI_RETURN_IF_ERROR(emit("Reshape", fresh(name + "/flatten"),
                                {ins[0], add_ints_const(name + "/flat_shape", flat)}, {x2}, {},
                                where, &n));
    GRAPHI_RETURN_IF_ERROR(op == "Hardmax"
                               ? hardmax(x2, flat, 1, fresh(name + "/hardmax"), {y2})
                               : emit(op, fresh(name + "/softmax"), {x2}, {y2}, a, where, &n));
    return emit("Reshape", name, {y2, add_ints_const(name + "/shape", d.shape)}, outs, {}, where,
                &n);
  }
  if (op.rfind("Reduce", 0) == 0 && ins.size() > 1 && !ins[1].empty()) {
    // An empty constant axes input means "no axes" (graphi has no empty tensors): drop it;
    // the op then reduces everything, or nothing with noop_with_empty_axes = 1.
    const HostTensor* axes = host(ins[1]);
    if (axes && axes->numel() == 0) ins.resize(1);
  }
  return std::nullopt;
}

Status Importer::emit_int_binary(const std::string& op, const std::string& name,
                                 const std::string& a, const std::string& b, const std::string& out,
                                 const onnx::Node& n, const std::string& where) {
  Attributes attrs;
  attrs.set("op", op);
  return emit("IntBinary", name, {a, b}, {out}, std::move(attrs), where, &n);
}

Result<onnx::Node> Importer::legacy_broadcast(const onnx::Node& n, const std::string& where) {
  onnx::Node out = n;
  const onnx::Attr* bc = n.attr("broadcast");
  const onnx::Attr* ax = n.attr("axis");
  std::erase_if(out.attrs,
                [](const onnx::Attr& a) { return a.name == "broadcast" || a.name == "axis"; });
  if (!bc || bc->i == 0 || !ax || n.inputs.size() < 2 || n.inputs[0].empty() || n.inputs[1].empty())
    return out;  // equal shapes, or B aligned with A's trailing dims: numpy does the same
  auto shape_of = [&](const std::string& v) -> Shape {
    const HostTensor* h = host(v);
    return h ? h->shape : vals_.at(v).desc.shape;
  };
  const Shape a = shape_of(n.inputs[0]), b = shape_of(n.inputs[1]);
  int64_t axis = ax->i;
  const auto ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    return Status::invalid_graph(where + ": legacy broadcast of B " + shape_to_string(b) +
                                 " at axis " + std::to_string(ax->i) + " does not fit A " +
                                 shape_to_string(a));
  Shape target = b;
  target.resize(static_cast<size_t>(ra - axis), 1);
  if (target == b) return out;
  if (const HostTensor* h = host(n.inputs[1])) {
    HostTensor t = *h;
    t.shape = target;
    out.inputs[1] = add_const(n.inputs[1] + "/aligned", std::move(t));
    return out;
  }
  const std::string name = fresh(n.inputs[1] + "/aligned");
  node_names_.insert(name);
  GRAPHI_RETURN_IF_ERROR(emit("Reshape", name,
                              {n.inputs[1], add_ints_const(name + "/shape", target)}, {name}, {},
                              where, &n));
  out.inputs[1] = name;
  return out;
}

}  // namespace graphi::graph::onnx_import
