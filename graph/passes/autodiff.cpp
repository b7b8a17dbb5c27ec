#include "graph/passes/autodiff.h"

#include <cstring>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

std::string GradEmitter::fresh(const std::string& hint) {
  for (;;) {
    std::string name =
        "grad/" + (hint.empty() ? std::string("t") : hint) + "_" + std::to_string(counter_++);
    if (!g_.find_value(name)) return name;
  }
}

std::vector<std::string> GradEmitter::op_n(const std::string& type,
                                           const std::vector<std::string>& inputs, size_t n,
                                           Attributes attrs, const std::string& hint) {
  const std::string node = fresh(hint.empty() ? type : hint);
  std::vector<std::string> outs;
  for (size_t i = 0; i < n; ++i) outs.push_back(n == 1 ? node : node + ":" + std::to_string(i));
  b_.add_node(type, node, inputs, outs, std::move(attrs));
  return outs;
}

std::string GradEmitter::op(const std::string& type, const std::vector<std::string>& inputs,
                            Attributes attrs, const std::string& hint) {
  return op_n(type, inputs, 1, std::move(attrs), hint)[0];
}

std::string GradEmitter::scalar(float x) {
  Tensor t(TensorDesc{DType::kF32, {}});
  *t.data_as<float>() = x;
  const std::string name = fresh("const");
  b_.add_constant(name, std::move(t));
  return name;
}

std::string GradEmitter::ints(const std::vector<int64_t>& v) {
  const std::string name = fresh("ints");
  b_.add_constant(name, i64_tensor(v));
  return name;
}

std::string GradEmitter::zeros(const TensorDesc& d) {
  const std::string name = fresh("zeros");
  b_.add_constant(name, Tensor(TensorDesc{DType::kF32, d.shape}));
  return name;
}

std::string GradEmitter::reduce_to(const std::string& v, const Shape& from, const Shape& to) {
  if (from == to) return v;
  const size_t lead = from.size() - std::min(from.size(), to.size());
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  std::string r = v;
  if (!axes.empty()) {
    Attributes a;
    a.set("keepdims", int64_t{1});
    r = op("ReduceSum", {v, ints(axes)}, std::move(a), "reduce");
  }
  return reshape(r, to);
}

std::string GradEmitter::reshape(const std::string& v, const Shape& to) {
  if (to.empty()) {
    Attributes a;
    a.set("keepdims", int64_t{0});
    return op("ReduceSum", {v}, std::move(a), "to_scalar");
  }
  return op("Reshape", {v, ints(to)}, {}, "reshape");
}

namespace {

// Sum of the contributions (an Add chain in arrival order, so results do not depend on hashing).
std::string sum_of(GradEmitter& e, const std::vector<std::string>& parts, const std::string& hint) {
  std::string acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) acc = e.op("Add", {acc, parts[i]}, {}, hint + "/sum");
  return acc;
}

}  // namespace

std::vector<bool> values_feeding(const Graph& g, ValueId target) {
  std::vector<bool> feeds(g.num_values(), false);
  feeds[target] = true;
  for (NodeId n = static_cast<NodeId>(g.num_nodes()); n-- > 0;) {
    bool any = false;
    for (ValueId v : g.node(n).outputs) any = any || feeds[v];
    if (any)
      for (ValueId v : g.node(n).inputs)
        if (v != kNoId) feeds[v] = true;
  }
  return feeds;
}

namespace {

// g with every node between a differentiated value and the loss that has a training form
// rewritten into it, or nullopt when there is none (or names do not resolve: the caller reports).
Result<std::optional<Graph>> with_training_forms(const Graph& g, const std::string& loss,
                                                 const std::vector<std::string>& wrt,
                                                 const GradientRules& rules,
                                                 const ShapeInferencer& shapes) {
  auto loss_id = g.find_value(loss);
  if (!loss_id) return std::optional<Graph>();
  std::vector<bool> depends(g.num_values(), false);
  for (const std::string& w : wrt)
    if (auto id = g.find_value(w)) depends[*id] = true;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    bool any = false;
    for (ValueId v : g.node(n).inputs) any = any || (v != kNoId && depends[v]);
    if (any)
      for (ValueId v : g.node(n).outputs) depends[v] = true;
  }
  const std::vector<bool> feeds = values_feeding(g, *loss_id);
  std::vector<std::optional<TrainingForm>> forms(g.num_nodes());
  bool any_form = false;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    bool on_path = false;
    for (ValueId v : node.outputs) on_path = on_path || (depends[v] && feeds[v]);
    if (!on_path) continue;
    forms[n] = rules.training_form(node);
    if (forms[n] && forms[n]->num_outputs <= node.outputs.size()) forms[n].reset();  // already
    any_form = any_form || forms[n].has_value();
  }
  if (!any_form) return std::optional<Graph>();
  GraphBuilder b(g.source());
  for (const Value& v : g.values()) {
    if (v.kind == ValueKind::kInput) b.add_input(v.name, v.desc);
    if (v.kind == ValueKind::kConstant) b.add_constant(v.name, v.data);
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    std::vector<std::string> ins, outs;
    for (ValueId v : node.inputs) ins.push_back(v == kNoId ? std::string() : g.value(v).name);
    for (ValueId v : node.outputs) outs.push_back(g.value(v).name);
    if (!forms[n]) {
      b.add_node(node.op, node.name, ins, outs, node.attrs);
      continue;
    }
    for (size_t k = outs.size(); k < forms[n]->num_outputs; ++k) {
      std::string name = "grad/saved_" + node.name + "_" + std::to_string(k);
      while (g.find_value(name)) name += "_";
      outs.push_back(name);
    }
    b.add_node(node.op, node.name, ins, outs, forms[n]->attrs);
  }
  for (ValueId v : g.outputs()) b.add_output(g.value(v).name);
  for (const auto& [k, v] : g.metadata()) b.set_metadata(k, v);
  GRAPHI_ASSIGN_OR_RETURN(Graph out, b.finish(shapes));
  return std::optional<Graph>(std::move(out));
}

Result<AutodiffResult> differentiate_as_is(const Graph& g, const std::string& loss,
                                           const std::vector<std::string>& wrt,
                                           const GradientRules& rules,
                                           const ShapeInferencer& shapes,
                                           const AutodiffOptions& options);

}  // namespace

Result<AutodiffResult> differentiate(const Graph& g, const std::string& loss,
                                     const std::vector<std::string>& wrt,
                                     const GradientRules& rules, const ShapeInferencer& shapes,
                                     const AutodiffOptions& options) {
  GRAPHI_ASSIGN_OR_RETURN(std::optional<Graph> trained,
                          with_training_forms(g, loss, wrt, rules, shapes));
  return differentiate_as_is(trained ? *trained : g, loss, wrt, rules, shapes, options);
}

namespace {

Result<AutodiffResult> differentiate_as_is(const Graph& g, const std::string& loss,
                                           const std::vector<std::string>& wrt,
                                           const GradientRules& rules,
                                           const ShapeInferencer& shapes,
                                           const AutodiffOptions& options) {
  const std::string src = g.source() + ": ";
  auto loss_id = g.find_value(loss);
  if (!loss_id)
    return Status::invalid_argument(src + "loss value '" + loss + "' is not in the graph");
  const Value& lv = g.value(*loss_id);
  if (lv.desc.dtype != DType::kF32 || lv.desc.numel() != 1)
    return Status::invalid_argument(src + "loss value '" + loss +
                                    "' must be a float32 value with one element, got " +
                                    lv.desc.to_string());
  if (wrt.empty())
    return Status::invalid_argument(src + "nothing to differentiate by (no trainable values)");

  // Values that depend on a differentiated value (forward reach).
  std::vector<bool> depends(g.num_values(), false);
  std::vector<ValueId> wrt_ids;
  for (const std::string& w : wrt) {
    auto id = g.find_value(w);
    if (!id)
      return Status::invalid_argument(src + "trainable value '" + w + "' is not in the graph");
    const Value& v = g.value(*id);
    if (v.kind == ValueKind::kIntermediate)
      return Status::invalid_argument(
          src + "trainable value '" + w +
          "' is produced by a node; only constants and inputs can be trained");
    if (v.desc.dtype != DType::kF32)
      return Status::invalid_argument(src + "trainable value '" + w + "' must be float32, got " +
                                      v.desc.to_string());
    if (depends[*id])
      return Status::invalid_argument(src + "trainable value '" + w + "' is listed twice");
    depends[*id] = true;
    wrt_ids.push_back(*id);
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    bool any = false;
    for (ValueId v : g.node(n).inputs) any = any || (v != kNoId && depends[v]);
    if (any)
      for (ValueId v : g.node(n).outputs) depends[v] = true;
  }
  const std::vector<bool> feeds = values_feeding(g, *loss_id);

  GraphBuilder b = GraphBuilder::from_graph(g);
  GradEmitter e(g, b);
  AutodiffResult result;
  result.forward_nodes = static_cast<int>(g.num_nodes());
  std::vector<std::vector<std::string>> contrib(g.num_values());
  {
    Tensor one(lv.desc);
    *one.data_as<float>() = 1.0f;
    const std::string seed = e.fresh("seed");
    b.add_constant(seed, std::move(one));
    contrib[*loss_id].push_back(seed);
  }

  for (NodeId n = static_cast<NodeId>(g.num_nodes()); n-- > 0;) {
    const Node& node = g.node(n);
    bool on_path = false;
    for (ValueId v : node.outputs)
      on_path = on_path || (depends[v] && feeds[v] && !contrib[v].empty());
    if (!on_path) continue;
    GradRule rule = rules.find(node.op);
    if (!rule)
      return Status::unsupported(
          src + node.where() + ": no gradient rule for op type '" + node.op +
          "' (it lies between a trainable value and the loss; see docs/TRAINING.md)");
    GradContext ctx{g, node, {}, {}, e, src + node.where()};
    for (ValueId v : node.outputs)
      ctx.dy.push_back(contrib[v].empty() ? std::string() : sum_of(e, contrib[v], node.name));
    for (ValueId v : node.inputs) ctx.need.push_back(v != kNoId && depends[v]);
    std::vector<std::string> dx(node.inputs.size());
    GRAPHI_RETURN_IF_ERROR(rule(ctx, dx));
    if (dx.size() != node.inputs.size())
      return Status::internal(ctx.where + ": gradient rule returned " + std::to_string(dx.size()) +
                              " input gradients for " + std::to_string(node.inputs.size()) +
                              " inputs");
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!ctx.need[i]) continue;
      if (dx[i].empty())
        return Status::unsupported(ctx.where + ": the gradient rule of '" + node.op +
                                   "' does not differentiate input " + std::to_string(i) + " ('" +
                                   g.value(node.inputs[i]).name + "')");
      contrib[node.inputs[i]].push_back(dx[i]);
    }
  }

  for (ValueId w : wrt_ids) {
    const Value& v = g.value(w);
    std::string gname;
    if (contrib[w].empty()) {
      gname = e.zeros(v.desc);
    } else {
      gname = sum_of(e, contrib[w], v.name);
    }
    if (options.grads_as_outputs) {
      const std::string out = "grad/" + v.name;
      if (g.find_value(out))
        return Status::invalid_argument(src + "value name '" + out + "' is taken");
      b.add_node("Identity", out, {gname}, {out});
      b.add_output(out);
      gname = out;
    }
    result.grads[v.name] = gname;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, b.finish(shapes));
  result.gradient_nodes = static_cast<int>(result.graph.num_nodes()) - result.forward_nodes;
  return result;
}

}  // namespace

}  // namespace graphi::graph::passes
