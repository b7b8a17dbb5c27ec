#include "engine/rnn_weights_option.h"

#include "graph/passes/pass_util.h"
#include "ops/registry.h"
#include "ops/rnn/rnn_sequence.h"

namespace graphi::engine {

Result<std::shared_ptr<const graph::Graph>> apply_rnn_weights(std::shared_ptr<const graph::Graph> g,
                                                              const std::string& precision) {
  if (precision.empty()) return g;
  GRAPHI_ASSIGN_OR_RETURN(ops::RnnWeights w,
                          ops::parse_rnn_weights(precision, "session option rnn_weights"));
  graph::passes::Rewrite rw(*g);
  bool any = false;
  for (graph::NodeId id = 0; id < g->num_nodes(); ++id) {
    const graph::Node& n = g->node(id);
    if (n.op != "LSTM" && n.op != "GRU" && n.op != "RNN") continue;
    if (n.attrs.has(ops::kRnnWeightsAttr)) continue;
    // fp32 is the kernels' default: only a file's own precision needs overriding.
    if (w == ops::RnnWeights::kF32 && !n.attrs.has(ops::kRnnFileWeightsAttr)) continue;
    std::vector<std::string> ins, outs;
    for (graph::ValueId v : n.inputs) ins.push_back(v == graph::kNoId ? "" : g->value(v).name);
    for (graph::ValueId v : n.outputs) outs.push_back(g->value(v).name);
    graph::Attributes a = n.attrs;
    a.set(ops::kRnnWeightsAttr, std::string(ops::rnn_weights_name(w)));
    rw.remove(id);
    rw.add_node(n.op, n.name, ins, outs, a);
    any = true;
  }
  if (!any) return g;
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph out, rw.finish(ops::Registry::get()));
  return std::make_shared<const graph::Graph>(std::move(out));
}

}  // namespace graphi::engine
