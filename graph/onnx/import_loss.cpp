// ONNX import, loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12, 13,
// 22; what torch.onnx.export writes for nn.NLLLoss, nn.CrossEntropyLoss, F.cross_entropy),
// composed at import from graphi ops:
//   log_prob = LogSoftmax(scores, axis = 1)                      (SoftmaxCrossEntropyLoss only)
//   ignored  = Equal(target, ignore_index)                        (with ignore_index)
//   safe     = Where(ignored, 0, target)      (an ignored target may be out of [0, C))
//   loss     = -Reshape(GatherElements(input, Reshape(safe, [N, 1, d...]), axis = 1), [N, d...])
//   w        = Gather(weight, safe)                               (with weight)
//   loss     = Where(ignored, 0, loss * w)
// then reduction none (as is), sum (ReduceSum), or mean: ReduceSum(loss) / ReduceSum(w') with
// w' = Where(ignored, 0, w) (Not(ignored) without weight), or ReduceMean(loss) when neither
// weight nor ignore_index is given. As ONNX's reference (onnx/reference/ops/
// op_negative_log_likelihood_loss.py) computes it.
#include <string>
#include <vector>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

std::optional<Status> Importer::translate_loss(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& op = n.op;
  if (op != "NegativeLogLikelihoodLoss" && op != "SoftmaxCrossEntropyLoss") return std::nullopt;
  const bool sce = op == "SoftmaxCrossEntropyLoss";
  const std::string& where = io.where;
  const std::string& name = io.name;
  const std::vector<std::string>& ins = io.ins;
  const std::vector<std::string>& outs = io.outs;
  const char* in0 = sce ? "input 0 (scores)" : "input 0 (input)";
  const char* in1 = sce ? "input 1 (labels)" : "input 1 (target)";
  const char* in2 = sce ? "input 2 (weights)" : "input 2 (weight)";
  GRAPHI_RETURN_IF_ERROR(io.need(0));
  GRAPHI_RETURN_IF_ERROR(io.need(1));

  // Attributes.
  std::string reduction = "mean";
  if (const onnx::Attr* r = n.attr("reduction")) reduction = r->s;
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return Status::invalid_graph(where + ": attribute 'reduction' is '" + reduction +
                                 "'; it must be 'none', 'sum' or 'mean'");
  const onnx::Attr* ii = n.attr("ignore_index");
  const bool ignore = ii != nullptr;

  // Inputs: float32 [N, C, d...], integer [N, d...], optional float32 [C].
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(ins[0], where));
  if (x.dtype != DType::kF32)
    return Status::unsupported(where + ": " + in0 + " is " + x.to_string() + "; graphi runs " + op +
                               " on float32 only");
  if (x.rank() < 2)
    return Status::invalid_graph(where + ": " + in0 + " is " + x.to_string() +
                                 "; it must be [N, C] or [N, C, d1, ...]");
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc t, desc_of(ins[1], where));
  if (t.dtype != DType::kI64 && t.dtype != DType::kI32)
    return Status::invalid_graph(where + ": " + in1 + " is " + t.to_string() +
                                 "; it must be int32 or int64");
  Shape want = x.shape;
  want.erase(want.begin() + 1);
  if (t.shape != want)
    return Status::invalid_graph(where + ": " + in1 + " is " + t.to_string() + "; for " + in0 +
                                 " " + x.to_string() + " it must be " + shape_to_string(want));
  const int64_t C = x.shape[1];
  const bool weighted = ins.size() > 2 && !ins[2].empty();
  if (weighted) {
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc w, desc_of(ins[2], where));
    if (w.dtype != DType::kF32)
      return Status::unsupported(where + ": " + in2 + " is " + w.to_string() + "; graphi runs " +
                                 op + " on float32 only");
    if (w.rank() != 1 || w.shape[0] != C)
      return Status::invalid_graph(where + ": " + in2 + " is " + w.to_string() +
                                   "; it must be [C] = [" + std::to_string(C) + "]");
  }
  if (outs.size() > 1 && !sce)
    return Status::invalid_graph(where + ": NegativeLogLikelihoodLoss has one output, the node " +
                                 std::to_string(outs.size()));

  auto f32_const = [&](const std::string& base, double v) {
    HostTensor h = HostTensor::make(onnx::kFloat, {1});
    h.f[0] = v;
    return add_const(base, std::move(h));
  };
  auto node = [&](const std::string& step) { return fresh(name + "/" + step); };

  // Log-probabilities.
  std::string lp = ins[0];
  if (sce) {
    Attributes a;
    a.set("axis", int64_t{1});
    lp = outs.size() > 1 ? outs[1] : node("log_prob");
    GRAPHI_RETURN_IF_ERROR(
        emit("LogSoftmax", node("log_softmax"), {ins[0]}, {lp}, std::move(a), where, &n));
  }

  // Targets safe to gather with: ignored ones replaced by 0.
  std::string target = ins[1], ignored;
  if (ignore) {
    HostTensor iv = HostTensor::make(onnx_type_of(t.dtype), {1});
    iv.i[0] = ii->i;
    HostTensor zero = HostTensor::make(onnx_type_of(t.dtype), {1});
    ignored = node("ignored");
    GRAPHI_RETURN_IF_ERROR(emit("Equal", ignored,
                                {ins[1], add_const(name + "/ignore_index", std::move(iv))},
                                {ignored}, {}, where, &n));
    target = node("safe_target");
    GRAPHI_RETURN_IF_ERROR(emit("Where", target,
                                {ignored, add_const(name + "/zero_index", std::move(zero)), ins[1]},
                                {target}, {}, where, &n));
  }

  // The last step writes the node's output.
  const bool none = reduction == "none";
  Shape t1 = t.shape;
  t1.insert(t1.begin() + 1, 1);
  const std::string tu = node("target_n1"), g = node("picked"), gs = node("picked_nd"),
                    nl = node("neg");
  GRAPHI_RETURN_IF_ERROR(emit_reshape(tu, target, t1, {tu}, where, &n));
  Attributes ga;
  ga.set("axis", int64_t{1});
  GRAPHI_RETURN_IF_ERROR(emit("GatherElements", g, {lp, tu}, {g}, std::move(ga), where, &n));
  GRAPHI_RETURN_IF_ERROR(emit_reshape(gs, g, t.shape, {gs}, where, &n));
  const bool last_is_neg = none && !weighted && !ignore;
  const std::string neg_out = last_is_neg ? outs[0] : nl;
  GRAPHI_RETURN_IF_ERROR(emit("Neg", last_is_neg ? name : nl, {gs}, {neg_out}, {}, where, &n));
  if (last_is_neg) return Status::ok();

  std::string loss = neg_out, w;  // w: per-element weights of the mean's denominator
  if (weighted) {
    const std::string wg = node("weight_of_target");
    GRAPHI_RETURN_IF_ERROR(emit("Gather", wg, {ins[2], target}, {wg}, {}, where, &n));
    const bool last = none && !ignore;
    const std::string lw = last ? outs[0] : node("weighted");
    GRAPHI_RETURN_IF_ERROR(emit("Mul", last ? name : lw, {loss, wg}, {lw}, {}, where, &n));
    if (last) return Status::ok();
    loss = lw;
    w = wg;
  }
  if (ignore) {
    const std::string zero = f32_const(name + "/zero", 0.0);
    const std::string lz = none ? outs[0] : node("unignored");
    GRAPHI_RETURN_IF_ERROR(
        emit("Where", none ? name : lz, {ignored, zero, loss}, {lz}, {}, where, &n));
    if (none) return Status::ok();
    loss = lz;
    const std::string wz = node(weighted ? "weight_unignored" : "unignored_count");
    if (weighted)
      GRAPHI_RETURN_IF_ERROR(emit("Where", wz, {ignored, zero, w}, {wz}, {}, where, &n));
    else
      GRAPHI_RETURN_IF_ERROR(emit("Not", wz, {ignored}, {wz}, {}, where, &n));
    w = wz;
  }

  Attributes ra;
  ra.set("keepdims", int64_t{0});
  if (reduction == "sum") return emit("ReduceSum", name, {loss}, {outs[0]}, ra, where, &n);
  if (w.empty()) return emit("ReduceMean", name, {loss}, {outs[0]}, ra, where, &n);
  const std::string num = node("loss_sum"), den = node("weight_sum");
  GRAPHI_RETURN_IF_ERROR(emit("ReduceSum", num, {loss}, {num}, ra, where, &n));
  GRAPHI_RETURN_IF_ERROR(emit("ReduceSum", den, {w}, {den}, ra, where, &n));
  return emit("Div", name, {num, den}, {outs[0]}, {}, where, &n);
}

}  // namespace graphi::graph::onnx_import
