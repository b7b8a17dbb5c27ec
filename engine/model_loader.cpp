#include "engine/model_loader.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/constant_folding.h"
#include "graph/graph_file.h"
#include "ops/onednn.h"
#include "ops/registry.h"

namespace graphi::engine {

Result<std::shared_ptr<const graph::Graph>> load_model(const std::string& path,
                                                       const graph::ImportOptions& onnx) {
  std::error_code ec;
  if (path.empty()) return Status::invalid_argument("model path is empty");
  if (!std::filesystem::exists(path, ec)) return Status::io_error(path + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    return Status::io_error(path + ": is a directory, not a model file");
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, graph::read_graph_file(path, ops::Registry::get(), onnx));
  return std::make_shared<const graph::Graph>(std::move(g));
}

Result<graph::passes::PipelineOptions> pipeline_options_from_env() {
  using graph::passes::kPassSwitches;
  graph::passes::PipelineOptions options;
  const char* env = std::getenv("GRAPHI_PASSES");
  if (!env || !*env) return options;
  for (const auto& [pass, on] : kPassSwitches) options.*on = false;
  const std::string list = env;
  for (size_t pos = 0; pos <= list.size();) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(pos, end - pos);
    bool known = name.empty();
    for (const auto& [pass, on] : kPassSwitches)
      if (name == pass) options.*on = known = true;
    if (!known) {
      std::string all;
      for (const auto& [pass, on] : kPassSwitches)
        all += (all.empty() ? "" : ", ") + std::string(pass);
      return Status::invalid_argument("GRAPHI_PASSES: unknown pass '" + name + "' (known: " + all +
                                      ")");
    }
    pos = end + 1;
  }
  return options;
}

Result<OptimizedGraph> optimize_graph(std::shared_ptr<const graph::Graph> g) {
  using graph::passes::PipelineOptions;
  using graph::passes::PipelineResult;
  GRAPHI_ASSIGN_OR_RETURN(PipelineOptions options, pipeline_options_from_env());
  options.conv_block = ops::onednn::preferred_activation_block();
  // Asking oneDNN makes a primitive descriptor: only for graphs with 3-D convolutions.
  for (graph::NodeId id = 0; id < g->num_nodes() && !options.conv3d_channels_last; ++id)
    if (g->node(id).op == "Conv3D")
      options.conv3d_channels_last = ops::onednn::prefers_channels_last_3d();
  // RNN cell fusion first (a cell's h_prev R with a constant zero initial state must still look
  // like one), then the constant nodes are evaluated (engine/constant_folding.h), then the other
  // passes, which then see constant weights where the exporter computed them.
  PipelineOptions cells = options, rest = options;
  for (const auto& [pass, on] : graph::passes::kPassSwitches) cells.*on = false;
  cells.rnn_fusion = options.rnn_fusion;
  rest.rnn_fusion = false;
  GRAPHI_ASSIGN_OR_RETURN(PipelineResult p1,
                          graph::passes::run_passes(*g, ops::Registry::get(), cells));
  if (p1.changed()) g = std::make_shared<const graph::Graph>(std::move(p1.graph));
  GRAPHI_ASSIGN_OR_RETURN(ConstantFoldResult folded, fold_constant_nodes(std::move(g)));
  g = std::move(folded.graph);
  GRAPHI_ASSIGN_OR_RETURN(PipelineResult p2,
                          graph::passes::run_passes(*g, ops::Registry::get(), rest));
  OptimizedGraph out;
  std::vector<std::string> parts;
  if (!p1.summary().empty()) parts.push_back(p1.summary());
  if (folded.folded > 0)
    parts.push_back("evaluated " + std::to_string(folded.folded) + " node" +
                    (folded.folded == 1 ? "" : "s") + " of constants once");
  if (!p2.summary().empty()) parts.push_back(p2.summary());
  for (const std::string& part : parts) out.summary += (out.summary.empty() ? "" : "; ") + part;
  out.graph =
      p2.changed() ? std::make_shared<const graph::Graph>(std::move(p2.graph)) : std::move(g);
  return out;
}

}  // namespace graphi::engine
