// ONNX import, control flow. An If whose condition is known at import time (computed from
// shapes: PyTorch 2's exporter writes torch.tile and size-dependent Python branches as
// Shape -> ... -> Greater -> If) is replaced by the nodes of the branch it takes: its
// initializers become constants, its nodes are imported where the If stood (they may read any
// value of the enclosing graph), and the If's outputs name the branch's outputs. An If on a
// run-time condition (torch.cond, tf2onnx's tf.cond) imports both branches and selects each
// output with a Where on the condition, when the branches' outputs agree in shape and type:
// both are computed every run (twice the work of the taken branch), and a branch that would
// fail on the inputs of a run that does not take it fails that run. Scan and SequenceMap are
// refused: graphi graphs have no subgraphs.
//
// A Loop whose trip count and conditions are known at import time (tf2onnx writes Keras RNN
// layers it cannot fuse, e.g. a GRU, as a Loop over the time steps with a constant trip count)
// is unrolled: its body's nodes are imported once per iteration under fresh names, the
// iteration number and condition bound to constants, the loop-carried values to the previous
// iteration's; the scan outputs are stacked along a new axis 0 (a Reshape to [1, ...] per
// iteration and a Concat). A condition computed at run time, a body holding subgraphs, or more
// than kMaxLoopNodes unrolled nodes are refused.
#include <map>
#include <set>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

void Importer::subgraph_names(const onnx::Node& n, std::set<std::string>* defined,
                              std::set<std::string>* read) {
  for (const onnx::Attr& a : n.attrs) {
    if (!a.g) continue;
    for (const auto& [name, t] : a.g->initializers) defined->insert(name);
    for (const onnx::ValueInfo& v : a.g->inputs) defined->insert(v.name);
    for (const onnx::Node& m : a.g->nodes) {
      for (const std::string& o : m.outputs) defined->insert(o);
      for (const std::string& i : m.inputs) read->insert(i);
      subgraph_names(m, defined, read);
    }
    for (const onnx::ValueInfo& v : a.g->outputs) read->insert(v.name);
  }
}

std::vector<std::string> Importer::outer_reads(const onnx::Node& n) {
  std::set<std::string> defined, read;
  subgraph_names(n, &defined, &read);
  std::vector<std::string> out;
  for (const std::string& v : read)
    if (!v.empty() && !defined.count(v)) out.push_back(v);
  return out;
}

namespace {
constexpr int64_t kMaxLoopNodes = 200000;  // body nodes x iterations
}  // namespace

Status Importer::unroll_loop(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& where = io.where;
  const onnx::Attr* body_attr = n.attr("body");
  if (!body_attr || !body_attr->g)
    return Status::invalid_graph(where + ": attribute 'body' (a graph) is missing");
  const onnx::GraphProto& body = *body_attr->g;
  const size_t carried = n.inputs.size() < 2 ? 0 : n.inputs.size() - 2;
  if (body.inputs.size() != carried + 2 || body.outputs.size() < carried + 1)
    return Status::invalid_graph(
        where + ": its body has " + std::to_string(body.inputs.size()) + " inputs and " +
        std::to_string(body.outputs.size()) + " outputs; a Loop with " + std::to_string(carried) +
        " loop-carried values needs " + std::to_string(carried + 2) + " inputs and at least " +
        std::to_string(carried + 1) + " outputs");
  const size_t scans = body.outputs.size() - 1 - carried;
  if (n.outputs.size() > carried + scans)
    return Status::invalid_graph(where + ": has " + std::to_string(n.outputs.size()) +
                                 " outputs, its body makes " + std::to_string(carried + scans));
  // Trip count M and the first condition: absent or constants (checked first: a data-dependent
  // `while` is the usual reason, and its body's If is only the exporter's lowering of `and`).
  auto scalar_const = [&](size_t k, const char* what) -> Result<std::optional<double>> {
    if (k >= n.inputs.size() || n.inputs[k].empty()) return std::optional<double>();
    if (!is_const(n.inputs[k]))
      return unsupported_op(n, std::string("with a ") + what + " computed at run time (input " +
                                   std::to_string(k) + " '" + n.inputs[k] +
                                   "'); graphi unrolls a Loop only when its trip "
                                   "count and conditions are known at import time");
    const HostTensor* h = host(n.inputs[k]);
    if (h->numel() != 1)
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" + what +
                                   ") must hold one element, got " + h->desc());
    return std::optional<double>(h->get_f(0));
  };
  GRAPHI_ASSIGN_OR_RETURN(std::optional<double> trip, scalar_const(0, "trip count"));
  GRAPHI_ASSIGN_OR_RETURN(std::optional<double> cond0, scalar_const(1, "condition"));
  if (!trip && !cond0)
    return unsupported_op(n, "without a trip count or a condition (an endless loop)");
  for (const onnx::Node& m : body.nodes)
    for (const onnx::Attr& a : m.attrs)
      if (a.g)
        return unsupported_op(n, "with a subgraph inside its body (node '" + m.name + "' (" + m.op +
                                     ")): graphi unrolls only Loop bodies without one");
  const int64_t body_nodes = std::max<int64_t>(1, static_cast<int64_t>(body.nodes.size()));
  const int64_t max_iter = kMaxLoopNodes / body_nodes;
  if (trip && *trip > static_cast<double>(max_iter))
    return unsupported_op(n, "with " + std::to_string(static_cast<int64_t>(*trip)) +
                                 " iterations of " + std::to_string(body_nodes) +
                                 " nodes: more than graphi unrolls (" +
                                 std::to_string(kMaxLoopNodes) + " nodes)");
  // Body initializers: the same values every iteration, added once.
  std::map<std::string, std::string> shared;  // body name -> enclosing-graph name
  for (const auto& [name, t] : body.initializers) {
    const std::string v = fresh(n.name + "/" + name);
    ValState s;
    s.is_const = true;
    s.host = t;
    vals_[v] = std::move(s);
    shared[name] = v;
  }
  std::vector<std::string> cur(carried);  // loop-carried values, current names
  for (size_t j = 0; j < carried; ++j) {
    GRAPHI_RETURN_IF_ERROR(io.need(j + 2));
    cur[j] = n.inputs[j + 2];
  }
  std::vector<std::vector<std::string>> scan_vals(scans);
  bool cond = !cond0 || *cond0 != 0.0;
  const int64_t limit = trip ? static_cast<int64_t>(*trip) : max_iter;
  int64_t it = 0;
  for (; it < limit && cond; ++it) {
    const std::string tag = "@" + std::to_string(it);
    std::map<std::string, std::string> ren = shared;
    HostTensor iter_t = HostTensor::make(onnx::kInt64, {});
    iter_t.i[0] = it;
    ren[body.inputs[0].name] = add_const(n.name + "/iter" + tag, std::move(iter_t));
    HostTensor cond_t = HostTensor::make(onnx::kBool, {});
    cond_t.i[0] = 1;
    ren[body.inputs[1].name] = add_const(n.name + "/cond" + tag, std::move(cond_t));
    for (size_t j = 0; j < carried; ++j) ren[body.inputs[j + 2].name] = cur[j];
    for (const onnx::Node& m : body.nodes) {
      onnx::Node c = m;
      c.name = (m.name.empty() ? m.op : m.name) + tag;
      for (std::string& in : c.inputs)
        if (auto r = ren.find(in); r != ren.end()) in = r->second;
      for (std::string& o : c.outputs) {
        if (o.empty()) continue;
        const std::string v = fresh(o + tag);
        ren[o] = v;
        o = v;
      }
      Status s = import_node(c);
      if (!s.is_ok()) return s.with_context(where + ", iteration " + std::to_string(it));
    }
    auto out_of = [&](size_t k) -> Result<std::string> {
      const std::string& o = body.outputs[k].name;
      auto r = ren.find(o);
      const std::string v = r != ren.end() ? r->second : o;  // an outer value passed through
      if (!vals_.count(v))
        return Status::invalid_graph(where + ": body output '" + o + "' is not produced");
      return v;
    };
    GRAPHI_ASSIGN_OR_RETURN(std::string c_out, out_of(0));
    if (!is_const(c_out))
      return unsupported_op(n, "whose condition is computed at run time (body output '" +
                                   body.outputs[0].name +
                                   "'); graphi unrolls a Loop only when "
                                   "its trip count and conditions are known at import time");
    cond = host(c_out)->get_f(0) != 0.0;
    for (size_t j = 0; j < carried; ++j) {
      GRAPHI_ASSIGN_OR_RETURN(cur[j], out_of(j + 1));
    }
    for (size_t k = 0; k < scans; ++k) {
      GRAPHI_ASSIGN_OR_RETURN(std::string v, out_of(1 + carried + k));
      scan_vals[k].push_back(v);
    }
  }
  if (!trip && cond)
    return unsupported_op(n, "whose condition stays true for " + std::to_string(max_iter) +
                                 " iterations (more than graphi unrolls)");
  // Outputs: the final loop-carried values, then the stacked scan outputs.
  for (size_t j = 0; j < carried && j < n.outputs.size(); ++j) {
    if (n.outputs[j].empty()) continue;
    if (vals_.count(n.outputs[j]))
      return Status::invalid_graph(where + ": output '" + n.outputs[j] + "' is already defined");
    vals_[n.outputs[j]] = ValState(vals_.at(cur[j]));
  }
  for (size_t k = 0; k < scans && carried + k < n.outputs.size(); ++k) {
    const std::string& out = n.outputs[carried + k];
    if (out.empty()) continue;
    if (scan_vals[k].empty())
      return unsupported_op(n, "that runs no iteration: its scan outputs would be empty");
    std::vector<std::string> parts;
    for (size_t t = 0; t < scan_vals[k].size(); ++t) {
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(scan_vals[k][t], where));
      Shape s{1};
      s.insert(s.end(), d.shape.begin(), d.shape.end());
      const std::string p = fresh(out + "/step" + std::to_string(t));
      GRAPHI_RETURN_IF_ERROR(emit_reshape(p, scan_vals[k][t], s, {p}, where, &n));
      parts.push_back(p);
    }
    Attributes a;
    a.set("axis", int64_t{0});
    GRAPHI_RETURN_IF_ERROR(
        emit("Concat", fresh(out + "/stack"), parts, {out}, std::move(a), where, &n));
  }
  return Status::ok();
}

// The If's `branch` subgraph imported in place: its initializers become constants, its nodes
// are imported in their (topological) order and may read the enclosing graph's values.
Result<const onnx::GraphProto*> Importer::import_branch(const onnx::Node& n, const char* branch,
                                                        const std::string& where) {
  const onnx::Attr* a = n.attr(branch);
  if (!a || !a->g)
    return Status::invalid_graph(where + ": attribute '" + branch + "' (a graph) is missing");
  const onnx::GraphProto& g = *a->g;
  if (g.outputs.size() != n.outputs.size())
    return Status::invalid_graph(where + ": its " + branch + " has " +
                                 std::to_string(g.outputs.size()) + " outputs, the If " +
                                 std::to_string(n.outputs.size()));
  for (const auto& [name, t] : g.initializers) {
    if (vals_.count(name))
      return Status::invalid_graph(where + ": " + branch + " initializer '" + name +
                                   "' is already defined");
    ValState s;
    s.is_const = true;
    s.host = t;
    vals_[name] = std::move(s);
  }
  for (const onnx::Node& m : g.nodes) {
    Status s = import_node(m);
    if (!s.is_ok()) return s.with_context(where + ", " + branch);
  }
  return &g;
}

std::optional<Status> Importer::translate_control_flow(NodeIn& io) {
  const onnx::Node& n = io.n;
  if (n.op == "Loop") return unroll_loop(io);
  if (n.op == "Scan" || n.op == "SequenceMap")
    return unsupported_op(n,
                          "(control flow: graphi graphs have no subgraphs; export without "
                          "data-dependent Python control flow, or unroll it)");
  if (n.op != "If") return std::nullopt;
  GRAPHI_RETURN_IF_ERROR(io.need(0));
  const std::string& cond = n.inputs[0];
  if (!is_const(cond)) return import_runtime_if(io);
  const onnx::HostTensor* c = host(cond);
  if (c->numel() != 1)
    return Status::invalid_graph(io.where + ": input 0 (cond) must hold one element, got " +
                                 c->desc());
  const char* branch = c->get_f(0) != 0.0 ? "then_branch" : "else_branch";
  GRAPHI_ASSIGN_OR_RETURN(const onnx::GraphProto* gp, import_branch(n, branch, io.where));
  const onnx::GraphProto& g = *gp;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    auto it = vals_.find(g.outputs[k].name);
    if (it == vals_.end())
      return Status::invalid_graph(io.where + ": " + branch + " output '" + g.outputs[k].name +
                                   "' is not produced by any of its nodes");
    if (vals_.count(n.outputs[k]))
      return Status::invalid_graph(io.where + ": output '" + n.outputs[k] + "' is already defined");
    vals_[n.outputs[k]] = ValState(it->second);  // the same value under the If's name
  }
  return Status::ok();
}

// Both branches imported, then output k = Where(cond, then_k, else_k).
Status Importer::import_runtime_if(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& cond = n.inputs[0];
  const TensorDesc& cd = vals_.at(cond).desc;
  if (cd.numel() != 1)
    return Status::invalid_graph(io.where + ": input 0 (cond) must hold one element, got " +
                                 cd.to_string());
  std::vector<std::string> outs[2];
  const char* names[2] = {"then_branch", "else_branch"};
  for (int b = 0; b < 2; ++b) {
    // ONNX names are unique across a model's subgraphs, so both branches import under their
    // own names (a clash is refused by import_node as a value defined twice).
    GRAPHI_ASSIGN_OR_RETURN(const onnx::GraphProto* gp, import_branch(n, names[b], io.where));
    const onnx::GraphProto& g = *gp;
    for (const onnx::ValueInfo& v : g.outputs) {
      if (!vals_.count(v.name))
        return Status::invalid_graph(io.where + ": " + names[b] + " output '" + v.name +
                                     "' is not produced by any of its nodes");
      outs[b].push_back(v.name);
    }
  }
  auto desc_of = [&](const std::string& v) -> TensorDesc {
    const ValState& st = vals_.at(v);
    if (!st.is_const) return st.desc;
    TensorDesc d;
    d.shape = st.host->shape;
    // BOOL constants become float32 0/1 (onnx_import.cpp), as run-time bools are.
    if (auto dt = st.host->type == onnx::kBool ? DType::kF32 : graphi_dtype(st.host->type))
      d.dtype = *dt;
    return d;
  };
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    const TensorDesc a = desc_of(outs[0][k]), b = desc_of(outs[1][k]);
    if (a.shape != b.shape || a.dtype != b.dtype)
      return Status::unsupported(
          io.where + ": output " + std::to_string(k) + " is " + a.to_string() +
          " in the then_branch but " + b.to_string() +
          " in the else_branch; graphi runs an If on a run-time condition by computing both "
          "branches and selecting, which needs outputs of one shape and type");
    GRAPHI_RETURN_IF_ERROR(emit("Where",
                                io.name + (n.outputs.size() > 1 ? "/" + std::to_string(k) : ""),
                                {cond, outs[0][k], outs[1][k]}, {n.outputs[k]}, {}, io.where, &n));
  }
  return Status::ok();
}

}  // namespace graphi::graph::onnx_import
