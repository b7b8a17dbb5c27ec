#include "graph/passes/training_graph.h"

#include <algorithm>
#include <set>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {

std::optional<LossKind> loss_kind_from_name(const std::string& name) {
  if (name == "ce") return LossKind::kSoftmaxCrossEntropy;
  if (name == "mse") return LossKind::kMeanSquaredError;
  if (name == "value") return LossKind::kValue;
  return std::nullopt;
}

namespace {

// Adds g's nodes (by value names) to `b`, whose values the caller declared.
void copy_nodes(const Graph& g, GraphBuilder& b) {
  for (const Node& n : g.nodes()) {
    std::vector<std::string> ins, outs;
    for (ValueId v : n.inputs) ins.push_back(v == kNoId ? std::string() : g.value(v).name);
    for (ValueId v : n.outputs) outs.push_back(g.value(v).name);
    b.add_node(n.op, n.name, ins, outs, n.attrs);
  }
}

}  // namespace

Result<Graph> replace_constants(const Graph& g, const std::map<std::string, const Tensor*>& data,
                                const ShapeInferencer& shapes) {
  GraphBuilder b(g.source());
  size_t used = 0;
  for (const Value& v : g.values()) {
    if (v.kind == ValueKind::kInput) b.add_input(v.name, v.desc);
    if (v.kind != ValueKind::kConstant) continue;
    auto it = data.find(v.name);
    if (it == data.end()) {
      b.add_constant(v.name, v.data);
      continue;
    }
    if (it->second->desc() != v.desc)
      return Status::invalid_argument(g.source() + ": constant '" + v.name + "' is " +
                                      v.desc.to_string() + ", the replacement is " +
                                      it->second->desc().to_string());
    b.add_constant(v.name, *it->second);
    ++used;
  }
  if (used != data.size()) {
    for (const auto& [name, t] : data)
      if (!g.find_value(name) || g.value(*g.find_value(name)).kind != ValueKind::kConstant)
        return Status::invalid_argument(g.source() + ": '" + name +
                                        "' is not a constant of the graph");
  }
  copy_nodes(g, b);
  for (ValueId v : g.outputs()) b.add_output(g.value(v).name);
  for (const auto& [k, v] : g.metadata()) b.set_metadata(k, v);
  return b.finish(shapes);
}

namespace {

// Every float32 constant of rank >= 1 that `target` depends on, in value order, except the
// buffers (batch-norm running statistics).
std::vector<std::string> default_trainable(const Graph& g, ValueId target,
                                           const std::set<std::string>& buffers) {
  const std::vector<bool> feeds = values_feeding(g, target);
  std::vector<std::string> out;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const Value& val = g.value(v);
    if (feeds[v] && val.kind == ValueKind::kConstant && val.desc.dtype == DType::kF32 &&
        val.desc.rank() >= 1 && val.desc.numel() > 0 && !buffers.count(val.name))
      out.push_back(val.name);
  }
  return out;
}

// The seed of a Dropout node without a 'seed' attribute: FNV-1a of its name, so two Dropouts
// draw different masks and a model trains the same way every time.
int64_t seed_of_name(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ULL;
  return static_cast<int64_t>(h >> 1);
}

// The running statistics (inputs 3 and 4) of every BatchNormalization: constants, each read by
// that node only. They become buffers of the training graph.
Result<std::vector<std::string>> batch_norm_buffers(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes()) {
    if (n.op != "BatchNormalization") continue;
    for (size_t i = 3; i < 5; ++i) {
      const ValueId id = i < n.inputs.size() ? n.inputs[i] : kNoId;
      if (id == kNoId)
        return Status::invalid_graph(g.source() + ": " + n.where() + ": input " +
                                     std::to_string(i) + " (running statistics) is absent");
      const Value& v = g.value(id);
      if (v.kind != ValueKind::kConstant)
        return Status::unsupported(g.source() + ": " + n.where() + ": training needs the " +
                                   "running " + (i == 3 ? "mean" : "variance") + " '" + v.name +
                                   "' to be a constant (it is updated in place every step)");
      if (g.consumers(id).size() != 1)
        return Status::unsupported(g.source() + ": " + n.where() + ": the running statistics '" +
                                   v.name + "' are read by other nodes too");
      out.push_back(v.name);
    }
  }
  return out;
}

}  // namespace

Result<TrainingGraph> build_training_graph(const Graph& g, const TrainingSpec& spec,
                                           const GradientRules& rules,
                                           const ShapeInferencer& shapes) {
  const std::string src = g.source() + ": ";
  TrainingGraph tg;
  std::string pred = spec.prediction;
  if (pred.empty()) {
    if (g.outputs().empty())
      return Status::invalid_graph(src + "the graph has no output to train on");
    pred = g.value(g.outputs()[0]).name;
  }
  auto pred_id = g.find_value(pred);
  if (!pred_id)
    return Status::invalid_argument(src + "prediction value '" + pred + "' is not in the graph");
  const TensorDesc pd = g.value(*pred_id).desc;
  if (pd.dtype != DType::kF32)
    return Status::invalid_argument(src + "prediction '" + pred + "' must be float32, got " +
                                    pd.to_string());

  GRAPHI_ASSIGN_OR_RETURN(tg.buffers, batch_norm_buffers(g));
  const std::set<std::string> buffers(tg.buffers.begin(), tg.buffers.end());
  tg.weights = spec.trainable.empty() ? default_trainable(g, *pred_id, buffers) : spec.trainable;
  if (tg.weights.empty())
    return Status::invalid_argument(src + "no trainable weights: '" + pred +
                                    "' depends on no float32 constant of rank >= 1");
  std::set<std::string> trainable(tg.weights.begin(), tg.weights.end());
  for (const std::string& w : tg.weights) {
    auto id = g.find_value(w);
    if (!id || g.value(*id).kind != ValueKind::kConstant)
      return Status::invalid_argument(src + "trainable '" + w + "' is not a constant of the graph");
    if (buffers.count(w))
      return Status::invalid_argument(src + "'" + w + "' is a BatchNormalization running " +
                                      "statistic: it is updated from the batches, not trained");
  }

  // 1. The forward graph with the weights as inputs, plus the loss.
  GraphBuilder b(g.source());
  for (const Value& v : g.values()) {
    if (v.kind == ValueKind::kInput) {
      b.add_input(v.name, v.desc);
      tg.data_inputs.push_back(v.name);
    } else if (v.kind == ValueKind::kConstant) {
      if (trainable.count(v.name) || buffers.count(v.name))
        b.add_input(v.name, v.desc);
      else
        b.add_constant(v.name, v.data);
    }
  }
  auto taken = [&](const std::string& name) { return g.find_value(name).has_value(); };
  bool has_dropout = false;
  for (const Node& n : g.nodes()) has_dropout = has_dropout || n.op == "Dropout";
  if (has_dropout || (spec.optimizer_step && spec.optimizer.kind == "adam")) {
    tg.step_input = "opt/step";
    if (taken(tg.step_input))
      return Status::invalid_argument(src + "value name 'opt/step' is taken");
    b.add_input(tg.step_input, TensorDesc{DType::kI64, {}});
  }
  // The forward pass in training mode: BatchNormalization with batch statistics (and an in-place
  // update of its running statistics, added with the optimizer below), Dropout with a mask.
  struct StatsUpdate {
    std::string node, running_mean, running_var, mean, var;
    double momentum;
    int64_t count;
  };
  std::vector<StatsUpdate> stats_updates;
  for (const Node& n : g.nodes()) {
    std::vector<std::string> ins, outs;
    for (ValueId v : n.inputs) ins.push_back(v == kNoId ? std::string() : g.value(v).name);
    for (ValueId v : n.outputs) outs.push_back(g.value(v).name);
    const std::string where = src + n.where();
    if (n.op == "BatchNormalization") {
      GRAPHI_ASSIGN_OR_RETURN(double eps, attr_float(n.attrs, where, "epsilon", 1e-5));
      GRAPHI_ASSIGN_OR_RETURN(double momentum, attr_float(n.attrs, where, "momentum", 0.9));
      const std::string stats = n.name + "/batch_";
      for (const char* suffix : {"mean", "invstd", "var"})
        if (taken(stats + suffix))
          return Status::invalid_argument(src + "value name '" + stats + suffix + "' is taken");
      Attributes a;
      a.set("epsilon", eps);
      b.add_node("BatchNormalizationTraining", n.name, {ins[0], ins[1], ins[2]},
                 {outs[0], stats + "mean", stats + "invstd", stats + "var"}, std::move(a));
      const Shape& xs = g.value(n.inputs[0]).desc.shape;
      int64_t count = 1;
      for (size_t d = 0; d < xs.size(); ++d)
        if (d != 1) count *= xs[d];
      stats_updates.push_back({n.name + "/running_stats", ins[3], ins[4], stats + "mean",
                               stats + "var", momentum, count});
    } else if (n.op == "Dropout") {
      GRAPHI_ASSIGN_OR_RETURN(double ratio, attr_float(n.attrs, where, "ratio", 0.5));
      GRAPHI_ASSIGN_OR_RETURN(int64_t seed, attr_int(n.attrs, where, "seed", seed_of_name(n.name)));
      if (taken(n.name + "/mask"))
        return Status::invalid_argument(src + "value name '" + n.name + "/mask' is taken");
      Attributes a;
      a.set("ratio", ratio);
      a.set("seed", seed);
      b.add_node("DropoutTraining", n.name, {ins[0], tg.step_input}, {outs[0], n.name + "/mask"},
                 std::move(a));
    } else {
      b.add_node(n.op, n.name, ins, outs, n.attrs);
    }
  }
  for (const char* name : {"loss", "loss/logp", "loss/labels2d", "loss/labels2d_shape",
                           "loss/picked", "loss/mean", "loss/diff", "loss/sq"})
    if (taken(name))
      return Status::invalid_argument(src + "value name '" + name +
                                      "' is taken; the training graph needs it");
  Attributes keep0;
  keep0.set("keepdims", int64_t{0});
  switch (spec.loss) {
    case LossKind::kValue:
      if (pd.numel() != 1)
        return Status::invalid_argument(src + "loss value '" + pred +
                                        "' must have one element, got " + pd.to_string());
      b.add_node("Identity", "loss", {pred}, {"loss"});
      break;
    case LossKind::kSoftmaxCrossEntropy: {
      if (pd.rank() != 2)
        return Status::invalid_argument(src + "cross-entropy needs logits [N, C]; '" + pred +
                                        "' is " + pd.to_string());
      if (taken(spec.label_input))
        return Status::invalid_argument(src + "label input name '" + spec.label_input +
                                        "' is taken");
      b.add_input(spec.label_input, TensorDesc{DType::kI64, {pd.shape[0]}});
      b.add_constant("loss/labels2d_shape", i64_tensor({pd.shape[0], 1}));
      Attributes ax;
      ax.set("axis", int64_t{1});
      b.add_node("LogSoftmax", "loss/logp", {pred}, {"loss/logp"}, ax);
      b.add_node("Reshape", "loss/labels2d", {spec.label_input, "loss/labels2d_shape"},
                 {"loss/labels2d"});
      b.add_node("GatherElements", "loss/picked", {"loss/logp", "loss/labels2d"}, {"loss/picked"},
                 ax);
      b.add_node("ReduceMean", "loss/mean", {"loss/picked"}, {"loss/mean"}, keep0);
      b.add_node("Neg", "loss", {"loss/mean"}, {"loss"});
      tg.data_inputs.push_back(spec.label_input);
      break;
    }
    case LossKind::kMeanSquaredError:
      if (taken(spec.label_input))
        return Status::invalid_argument(src + "target input name '" + spec.label_input +
                                        "' is taken");
      b.add_input(spec.label_input, pd);
      b.add_node("Sub", "loss/diff", {pred, spec.label_input}, {"loss/diff"});
      b.add_node("Mul", "loss/sq", {"loss/diff", "loss/diff"}, {"loss/sq"});
      b.add_node("ReduceMean", "loss", {"loss/sq"}, {"loss"}, keep0);
      tg.data_inputs.push_back(spec.label_input);
      break;
  }
  b.add_output("loss");
  for (const auto& [k, v] : g.metadata()) b.set_metadata(k, v);
  b.set_metadata(
      "graphi.training",
      "loss + gradients" + std::string(spec.optimizer_step ? " + " + spec.optimizer.kind : ""));
  GRAPHI_ASSIGN_OR_RETURN(Graph fwd, b.finish(shapes));

  // 2. Gradients.
  AutodiffOptions ao;
  ao.grads_as_outputs = spec.grads_as_outputs;
  GRAPHI_ASSIGN_OR_RETURN(AutodiffResult ad,
                          differentiate(fwd, "loss", tg.weights, rules, shapes, ao));
  tg.grads = ad.grads;
  if (!spec.optimizer_step) {
    tg.graph = std::move(ad.graph);
    return tg;
  }

  // 3. The optimizer's in-place updates, each after every other reader of its weight.
  const OptimizerSpec& o = spec.optimizer;
  if (o.kind != "sgd" && o.kind != "adam")
    return Status::invalid_argument("unknown optimizer '" + o.kind + "' (sgd or adam)");
  if (!(o.lr >= 0))
    return Status::invalid_argument("learning rate must be >= 0, got " + std::to_string(o.lr));
  const Graph& gg = ad.graph;
  GraphBuilder u = GraphBuilder::from_graph(gg);
  // The running statistics, in place (nothing else reads them in the step graph).
  for (const StatsUpdate& su : stats_updates) {
    if (gg.find_value(su.node))
      return Status::invalid_argument(src + "value name '" + su.node + "' is taken");
    Attributes a;
    a.set("momentum", su.momentum);
    a.set("count", su.count);
    u.add_node("BatchNormStatsUpdate", su.node, {su.running_mean, su.running_var, su.mean, su.var},
               {su.node}, std::move(a));
  }
  for (const std::string& w : tg.weights) {
    const ValueId wid = *gg.find_value(w);
    const TensorDesc& wd = gg.value(wid).desc;
    std::vector<std::string> ins = {w, tg.grads.at(w)};
    Attributes a;
    a.set("lr", o.lr);
    a.set("weight_decay", o.weight_decay);
    std::string op;
    if (o.kind == "sgd") {
      op = "SGDUpdate";
      a.set("momentum", o.momentum);
      if (o.momentum != 0.0) {
        tg.state.push_back({"opt/" + w + "/velocity", wd});
        ins.push_back(tg.state.back().name);
      } else {
        ins.push_back("");
      }
    } else {
      op = "AdamUpdate";
      a.set("beta1", o.beta1);
      a.set("beta2", o.beta2);
      a.set("epsilon", o.epsilon);
      tg.state.push_back({"opt/" + w + "/m", wd});
      ins.push_back(tg.state.back().name);
      tg.state.push_back({"opt/" + w + "/v", wd});
      ins.push_back(tg.state.back().name);
      ins.push_back(tg.step_input);
    }
    // Ordering inputs: one output of every node that reads the old weight.
    std::set<NodeId> readers(gg.consumers(wid).begin(), gg.consumers(wid).end());
    for (NodeId r : readers) ins.push_back(gg.value(gg.node(r).outputs[0]).name);
    const std::string node = "opt/" + w;
    if (gg.find_value(node + "/done"))
      return Status::invalid_argument(src + "value name '" + node + "/done' is taken");
    u.add_node(op, node, ins, {node + "/done"}, std::move(a));
  }
  for (const TrainingGraph::StateInput& s : tg.state) u.add_input(s.name, s.desc);
  GRAPHI_ASSIGN_OR_RETURN(tg.graph, u.finish(shapes));
  return tg;
}

}  // namespace graphi::graph::passes
