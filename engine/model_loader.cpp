#include "engine/model_loader.h"

#include <cstdlib>
#include <filesystem>

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
  graph::passes::PipelineOptions options;
  const char* env = std::getenv("GRAPHI_PASSES");
  if (!env || !*env) return options;
  options.rnn_fusion = options.mm_fusion = options.phase_hoisting = options.reshape_cleanup =
      options.gelu_fusion = options.matmul_epilogue = options.pad_fold = options.conv_fusion =
          options.conv_merge = options.channel_gather = options.blocked_layout = options.conv_sum =
              options.conv_dw = options.conv_scale = options.channel_affine = false;
  const std::string list = env;
  for (size_t pos = 0; pos <= list.size();) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(pos, end - pos);
    if (name == "rnn_fusion")
      options.rnn_fusion = true;
    else if (name == "mm_fusion")
      options.mm_fusion = true;
    else if (name == "phase_hoisting")
      options.phase_hoisting = true;
    else if (name == "reshape_cleanup")
      options.reshape_cleanup = true;
    else if (name == "gelu_fusion")
      options.gelu_fusion = true;
    else if (name == "matmul_epilogue")
      options.matmul_epilogue = true;
    else if (name == "pad_fold")
      options.pad_fold = true;
    else if (name == "conv_fusion")
      options.conv_fusion = true;
    else if (name == "conv_merge")
      options.conv_merge = true;
    else if (name == "channel_gather")
      options.channel_gather = true;
    else if (name == "blocked_layout")
      options.blocked_layout = true;
    else if (name == "conv_sum")
      options.conv_sum = true;
    else if (name == "conv_dw")
      options.conv_dw = true;
    else if (name == "conv_scale")
      options.conv_scale = true;
    else if (name == "channel_affine")
      options.channel_affine = true;
    else if (!name.empty())
      return Status::invalid_argument(
          "GRAPHI_PASSES: unknown pass '" + name +
          "' (known: rnn_fusion, mm_fusion, phase_hoisting, reshape_cleanup, gelu_fusion, "
          "matmul_epilogue, "
          "pad_fold, "
          "conv_fusion, conv_merge, channel_gather, blocked_layout, conv_sum, conv_dw, "
          "conv_scale)");
    pos = end + 1;
  }
  return options;
}

Result<OptimizedGraph> optimize_graph(std::shared_ptr<const graph::Graph> g) {
  GRAPHI_ASSIGN_OR_RETURN(graph::passes::PipelineOptions options, pipeline_options_from_env());
  options.conv_block = ops::onednn::preferred_activation_block();
  GRAPHI_ASSIGN_OR_RETURN(graph::passes::PipelineResult p,
                          graph::passes::run_passes(*g, ops::Registry::get(), options));
  OptimizedGraph out;
  out.summary = p.summary();
  out.graph = p.changed() ? std::make_shared<const graph::Graph>(std::move(p.graph)) : std::move(g);
  return out;
}

}  // namespace graphi::engine
