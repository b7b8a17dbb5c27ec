// The default graph pass pipeline that `graphi run` and `graphi info` apply (--no-fuse skips
// it), in this order:
//   1. rnn_fusion (graph/passes/rnn_fusion.h): unrolled LSTM / GRU cells -> sequence ops;
//   2. mm_fusion (graph/passes/mm_fusion.h): GEMMs sharing an activation -> one GEMM + Split;
//   3. phase_hoisting (graph/passes/phase_hoisting.h): per-step input projections of what is
//      left of a recurrence -> one GEMM ahead of it;
//   4. reshape_cleanup (graph/passes/reshape_cleanup.h): Reshape chains -> one Reshape;
//   4a. transpose_sink (graph/passes/transpose_sink.h): Transposes pushed through element-wise
//       ops until they cancel (tf2onnx's NHWC Keras models);
//   4a'. conv1d_lift (graph/passes/conv1d_lift.h): the ops between 1-D convs (element-wise,
//       channel Split / Concat, Pad, Slice, instance norm) computed on the convs' 4-D form,
//       without the importer's Reshapes (before the fusions below, which then see 4-D chains);
//   4b. gelu_fusion (graph/passes/gelu_fusion.h): the exact GELU's Div, Erf, Add, Mul, Mul -> Gelu;
//       hard_sigmoid_fusion (graph/passes/hard_sigmoid_fusion.h): clip(x + c, 0, h) / h ->
//       HardSigmoid (Keras' hard_sigmoid and hard_swish gate);
//       group_norm_fusion (graph/passes/group_norm_fusion.h): Reshape + InstanceNormalization +
//       Reshape (+ per-channel Mul, Add, + Relu) -> GroupNorm, which blocked_layout keeps blocked;
//   4c. matmul_epilogue (graph/passes/matmul_epilogue.h): MatMul by a constant + bias Add
//       (+ a column scale Mul, + Relu / Gelu) -> MatMulBias (oneDNN post-ops);
//   5. pad_fold (graph/passes/pad_fold.h): all-zero Pads dropped, zero Pads before a Conv or an
//      AveragePool made part of its pads;
//   5b. conv_trim (graph/passes/conv_trim.h): kernel taps that only ever meet the zero padding
//       (dilated convs on small images: DeepLabV3's ASPP) cut from the Conv;
//   6. conv_fusion (graph/passes/conv_fusion.h): Conv + activation (Relu, Clip, Swish, ...) ->
//      FusedConv (a oneDNN post-op);
//   7. conv_merge (graph/passes/conv_merge.h): convolutions sharing an input -> one wide
//      convolution (+ the identical channel-wise ops after them) + a channel Split;
//   8. channel_gather (graph/passes/channel_gather.h): channel Slices, Concats and shuffles ->
//      one ChannelGather per value something else reads (ShuffleNet's chunk + concat + shuffle);
//   9. blocked_layout (graph/passes/blocked_layout.h): conv chains in nChw16c / nChw8c;
//  10. conv_sum (graph/passes/conv_fusion.h, fuse_conv_sums): a blocked conv + the residual Add
//      (+ the activation) after it -> one BlockedConv with input Z (a oneDNN binary post-op);
//  11. conv_dw (graph/passes/conv_fusion.h, fuse_conv_depthwise): a 1x1 blocked conv + the 3x3
//      depthwise conv reading its output -> one BlockedConvDw (a oneDNN depthwise post-op);
//  12. conv_scale (graph/passes/conv_fusion.h, fuse_conv_input_scale): a squeeze-excitation's
//      channel-scale Mul + the 1x1 blocked conv after it -> one BlockedConvScaled (W * S per run);
//  13. channel_affine (graph/passes/channel_affine.h): a per-channel constant Mul + Add (an
//      unfolded BatchNormalization) + the Relu after them -> one ChannelAffine pass.
// Passes 2 and 3 only see what pass 1 did not fuse (a cell the recognizer rejects, any other
// graph). Every pass keeps the graph's inputs, outputs and their names.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::graph::passes {

struct PipelineOptions {
  bool rnn_fusion = true;
  bool mm_fusion = true;
  bool phase_hoisting = true;
  bool reshape_cleanup = true;
  bool transpose_sink = true;
  bool conv1d_lift = true;
  bool gelu_fusion = true;
  bool hard_sigmoid_fusion = true;
  bool group_norm_fusion = true;
  bool matmul_epilogue = true;
  bool pad_fold = true;
  bool conv_trim = true;
  bool conv_reparam = true;
  bool conv_fusion = true;
  bool conv_merge = true;
  bool channel_gather = true;
  bool blocked_layout = true;
  bool conv_sum = true;
  bool conv_dw = true;
  bool conv_scale = true;
  bool channel_affine = true;
  // blocked_layout's channel block: 16 for oneDNN's AVX-512 kernels, 8 for its AVX2 ones
  // (engine::optimize_graph asks oneDNN which ISA it dispatches to).
  int conv_block = 16;
  // blocked_layout keeps chains of 3-D ops channels-last (NDHWC) where oneDNN computes 3-D
  // convolutions in it (engine::optimize_graph asks onednn::prefers_channels_last_3d()).
  bool conv3d_channels_last = false;
};

// Every pass by the name GRAPHI_PASSES and PassReport::pass use, in pipeline order, with the
// option that switches it.
struct PassSwitch {
  const char* name;
  bool PipelineOptions::*on;
};
inline constexpr PassSwitch kPassSwitches[] = {
    {"rnn_fusion", &PipelineOptions::rnn_fusion},
    {"mm_fusion", &PipelineOptions::mm_fusion},
    {"phase_hoisting", &PipelineOptions::phase_hoisting},
    {"reshape_cleanup", &PipelineOptions::reshape_cleanup},
    {"transpose_sink", &PipelineOptions::transpose_sink},
    {"conv1d_lift", &PipelineOptions::conv1d_lift},
    {"gelu_fusion", &PipelineOptions::gelu_fusion},
    {"hard_sigmoid_fusion", &PipelineOptions::hard_sigmoid_fusion},
    {"group_norm_fusion", &PipelineOptions::group_norm_fusion},
    {"matmul_epilogue", &PipelineOptions::matmul_epilogue},
    {"pad_fold", &PipelineOptions::pad_fold},
    {"conv_trim", &PipelineOptions::conv_trim},
    {"conv_reparam", &PipelineOptions::conv_reparam},
    {"conv_fusion", &PipelineOptions::conv_fusion},
    {"conv_merge", &PipelineOptions::conv_merge},
    {"channel_gather", &PipelineOptions::channel_gather},
    {"blocked_layout", &PipelineOptions::blocked_layout},
    {"conv_sum", &PipelineOptions::conv_sum},
    {"conv_dw", &PipelineOptions::conv_dw},
    {"conv_scale", &PipelineOptions::conv_scale},
    {"channel_affine", &PipelineOptions::channel_affine},
};

struct PassReport {
  std::string pass;  // "rnn_fusion", "mm_fusion", "phase_hoisting", "reshape_cleanup",
                     // "gelu_fusion", "group_norm_fusion", "matmul_epilogue", "pad_fold",
                     // "conv_trim", "conv_reparam", "conv_fusion", "conv_merge", "channel_gather",
                     // "blocked_layout", "conv_sum", "conv_dw", "conv_scale", "channel_affine"
  std::string did;   // e.g. "fused 6 LSTM cells into 2 LSTM sequence ops, ..."
  int changes = 0;   // rewrites made (0: the pass changed nothing)
};

struct PipelineResult {
  Graph graph;
  std::vector<PassReport> reports;  // one per pass that ran, in order
  int lstm_cells = 0, lstm_sequences = 0, gru_cells = 0, gru_sequences = 0;
  int rnn_cells = 0, rnn_sequences = 0;
  int mm_groups = 0, mm_members = 0, hoisted_groups = 0, hoisted_members = 0;
  int reshapes_collapsed = 0;
  int transposes_removed = 0;
  int gelus_fused = 0;
  int hard_sigmoids_fused = 0;
  int group_norms_fused = 0;
  int matmul_epilogues = 0;
  int pads_removed = 0, pads_folded = 0;
  int convs_trimmed = 0;
  int conv_reparams = 0;
  int convs_fused = 0;
  int conv_groups = 0, conv_members = 0;
  int channel_gathers = 0, channel_ops_composed = 0;
  int blocked_ops = 0, layout_reorders = 0;
  int conv_sums = 0;
  int conv_dws = 0;
  int conv_scales = 0;
  int channel_affines = 0;
  bool changed() const;
  // One line: what the passes that changed the graph did, "; "-separated ("" if none did).
  std::string summary() const;
};

// `shapes` validates every intermediate graph (pass ops::Registry::get()).
Result<PipelineResult> run_passes(const Graph& g, const ShapeInferencer& shapes,
                                  const PipelineOptions& options = {});

}  // namespace graphi::graph::passes
