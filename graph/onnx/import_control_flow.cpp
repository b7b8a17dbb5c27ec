// ONNX import, control flow. An If whose condition is known at import time (computed from
// shapes: PyTorch 2's exporter writes torch.tile and size-dependent Python branches as
// Shape -> ... -> Greater -> If) is replaced by the nodes of the branch it takes: its
// initializers become constants, its nodes are imported where the If stood (they may read any
// value of the enclosing graph), and the If's outputs name the branch's outputs. An If on a
// run-time condition, Loop, Scan and SequenceMap are refused: graphi graphs have no subgraphs.
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

std::optional<Status> Importer::translate_control_flow(NodeIn& io) {
  const onnx::Node& n = io.n;
  if (n.op == "Loop" || n.op == "Scan" || n.op == "SequenceMap")
    return unsupported_op(n,
                          "(control flow: graphi graphs have no subgraphs; export without "
                          "data-dependent Python control flow, or unroll it)");
  if (n.op != "If") return std::nullopt;
  GRAPHI_RETURN_IF_ERROR(io.need(0));
  const std::string& cond = n.inputs[0];
  if (!is_const(cond))
    return unsupported_op(n, "with a condition computed at run time (input 0 '" + cond +
                                 "'); graphi inlines an If only when its condition is known at "
                                 "import time (e.g. computed from shapes)");
  const onnx::HostTensor* c = host(cond);
  if (c->numel() != 1)
    return Status::invalid_graph(io.where + ": input 0 (cond) must hold one element, got " +
                                 c->desc());
  const char* branch = c->get_f(0) != 0.0 ? "then_branch" : "else_branch";
  const onnx::Attr* a = n.attr(branch);
  if (!a || !a->g)
    return Status::invalid_graph(io.where + ": attribute '" + branch + "' (a graph) is missing");
  const onnx::GraphProto& g = *a->g;
  if (g.outputs.size() != n.outputs.size())
    return Status::invalid_graph(io.where + ": its " + branch + " has " +
                                 std::to_string(g.outputs.size()) + " outputs, the If " +
                                 std::to_string(n.outputs.size()));
  for (const auto& [name, t] : g.initializers) {
    if (vals_.count(name))
      return Status::invalid_graph(io.where + ": " + branch + " initializer '" + name +
                                   "' is already defined");
    ValState s;
    s.is_const = true;
    s.host = t;
    vals_[name] = std::move(s);
  }
  // Exporters write a branch's nodes in topological order (ONNX requires it).
  for (const onnx::Node& m : g.nodes) {
    Status s = import_node(m);
    if (!s.is_ok()) return s.with_context(io.where + ", " + branch);
  }
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

}  // namespace graphi::graph::onnx_import
