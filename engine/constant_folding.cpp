#include "engine/constant_folding.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "graph/passes/pass_util.h"
#include "ops/registry.h"

namespace graphi::engine {
namespace {

constexpr size_t kMaxFoldedBytes = size_t{64} << 20;

bool random_op(const std::string& op) {
  return op.rfind("Random", 0) == 0 || op == "Bernoulli" || op == "Multinomial";
}

}  // namespace

Result<ConstantFoldResult> fold_constant_nodes(std::shared_ptr<const graph::Graph> g) {
  ConstantFoldResult result;
  result.graph = g;
  std::vector<bool> is_const(g->num_values(), false), folded(g->num_nodes(), false);
  for (graph::ValueId v = 0; v < g->num_values(); ++v)
    is_const[v] = g->value(v).kind == graph::ValueKind::kConstant;
  int count = 0;
  for (graph::NodeId id = 0; id < g->num_nodes(); ++id) {
    const graph::Node& n = g->node(id);
    if (n.outputs.empty() || random_op(n.op)) continue;
    bool ok = true;
    for (graph::ValueId v : n.inputs) ok = ok && (v == graph::kNoId || is_const[v]);
    for (graph::ValueId v : n.outputs)
      ok = ok && v != graph::kNoId && !g->value(v).is_output &&
           g->value(v).desc.bytes() <= kMaxFoldedBytes;
    if (!ok) continue;
    folded[id] = true;
    ++count;
    for (graph::ValueId v : n.outputs) is_const[v] = true;
  }
  if (count == 0) return result;

  // The folded nodes as a graph of their own, its outputs the values a kept node reads.
  graph::GraphBuilder b(g->source() + " (constant part)");
  std::unordered_set<graph::ValueId> added;
  std::vector<graph::ValueId> frontier;
  for (graph::NodeId id = 0; id < g->num_nodes(); ++id) {
    const graph::Node& n = g->node(id);
    if (folded[id]) {
      std::vector<std::string> ins, outs;
      for (graph::ValueId v : n.inputs) {
        ins.push_back(v == graph::kNoId ? std::string() : g->value(v).name);
        if (v != graph::kNoId && g->value(v).kind == graph::ValueKind::kConstant &&
            added.insert(v).second)
          b.add_constant(g->value(v).name, g->value(v).data);
      }
      for (graph::ValueId v : n.outputs) outs.push_back(g->value(v).name);
      b.add_node(n.op, n.name, ins, outs, n.attrs);
      continue;
    }
    for (graph::ValueId v : n.inputs)
      if (v != graph::kNoId && g->value(v).producer != graph::kNoId &&
          folded[g->value(v).producer] && added.insert(v).second)
        frontier.push_back(v);
  }
  if (frontier.empty()) return result;  // folded values nobody reads: the passes drop them
  for (graph::ValueId v : frontier) b.add_output(g->value(v).name);
  Result<graph::Graph> part = b.finish(ops::Registry::get());
  if (!part.is_ok()) return result;
  SessionOptions o;  // sequential, one thread
  auto session = Session::create(std::make_shared<const graph::Graph>(std::move(*part)), o);
  if (!session.is_ok()) return result;
  Result<NamedTensors> values = (*session)->run({});
  if (!values.is_ok() || values->size() != frontier.size()) return result;

  graph::passes::Rewrite rw(*g);
  for (graph::NodeId id = 0; id < g->num_nodes(); ++id)
    if (folded[id]) rw.remove(id);
  for (auto& [name, t] : *values) rw.add_constant(name, std::move(t));
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph out, rw.finish(ops::Registry::get()));
  result.graph = std::make_shared<const graph::Graph>(std::move(out));
  result.folded = count;
  return result;
}

}  // namespace graphi::engine
