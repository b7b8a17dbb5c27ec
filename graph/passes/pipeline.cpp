#include "graph/passes/pipeline.h"

#include <tuple>

#include "graph/passes/blocked_layout.h"
#include "graph/passes/channel_affine.h"
#include "graph/passes/channel_gather.h"
#include "graph/passes/conv1d_lift.h"
#include "graph/passes/conv_fusion.h"
#include "graph/passes/conv_merge.h"
#include "graph/passes/conv_reparam.h"
#include "graph/passes/conv_trim.h"
#include "graph/passes/gelu_fusion.h"
#include "graph/passes/group_norm_fusion.h"
#include "graph/passes/hard_sigmoid_fusion.h"
#include "graph/passes/matmul_epilogue.h"
#include "graph/passes/mm_fusion.h"
#include "graph/passes/pad_fold.h"
#include "graph/passes/phase_hoisting.h"
#include "graph/passes/reshape_cleanup.h"
#include "graph/passes/rnn_fusion.h"
#include "graph/passes/transpose_sink.h"

namespace graphi::graph::passes {
namespace {

std::string plural(int n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

bool PipelineResult::changed() const {
  for (const PassReport& r : reports)
    if (r.changes > 0) return true;
  return false;
}

std::string PipelineResult::summary() const {
  std::string s;
  for (const PassReport& r : reports)
    if (r.changes > 0) s += (s.empty() ? "" : "; ") + r.did;
  return s;
}

Result<PipelineResult> run_passes(const Graph& g, const ShapeInferencer& shapes,
                                  const PipelineOptions& options) {
  PipelineResult out;
  out.graph = g;
  if (options.rnn_fusion) {
    GRAPHI_ASSIGN_OR_RETURN(RnnFusionResult r, fuse_rnn_cells(out.graph, shapes));
    out.lstm_cells = r.lstm_cells;
    out.lstm_sequences = r.lstm_sequences;
    out.gru_cells = r.gru_cells;
    out.gru_sequences = r.gru_sequences;
    out.rnn_cells = r.rnn_cells;
    out.rnn_sequences = r.rnn_sequences;
    // Only the cell kinds that were fused: "fused 40 LSTM cells into 2 LSTM sequence ops".
    std::string did;
    for (const auto& [cells, sequences, kind] : {std::tuple{r.lstm_cells, r.lstm_sequences, "LSTM"},
                                                 std::tuple{r.gru_cells, r.gru_sequences, "GRU"},
                                                 std::tuple{r.rnn_cells, r.rnn_sequences, "RNN"}})
      if (sequences > 0)
        did += (did.empty() ? "fused " : ", ") + std::to_string(cells) + " " + kind +
               " cells into " + plural(sequences, std::string(kind) + " sequence op");
    out.reports.push_back({"rnn_fusion", did, r.sequences});
    if (r.sequences > 0) out.graph = std::move(r.graph);
  }
  if (options.mm_fusion) {
    GRAPHI_ASSIGN_OR_RETURN(MmFusionResult r, fuse_shared_matmuls(out.graph, shapes));
    out.mm_groups = r.groups;
    out.mm_members = r.members;
    out.reports.push_back({"mm_fusion",
                           "merged " + plural(r.members, "GEMM") + " sharing an input into " +
                               std::to_string(r.groups),
                           r.groups});
    if (r.groups > 0) out.graph = std::move(r.graph);
  }
  if (options.phase_hoisting) {
    GRAPHI_ASSIGN_OR_RETURN(HoistResult r, hoist_input_projections(out.graph, shapes));
    out.hoisted_groups = r.groups;
    out.hoisted_members = r.members;
    out.reports.push_back({"phase_hoisting",
                           "hoisted " + plural(r.members, "per-step input projection") + " into " +
                               plural(r.groups, "GEMM"),
                           r.groups});
    if (r.groups > 0) out.graph = std::move(r.graph);
  }
  if (options.reshape_cleanup) {
    GRAPHI_ASSIGN_OR_RETURN(ReshapeCleanupResult r, collapse_reshapes(out.graph, shapes));
    out.reshapes_collapsed = r.collapsed;
    out.reports.push_back(
        {"reshape_cleanup", "collapsed " + plural(r.collapsed, "Reshape chain"), r.collapsed});
    if (r.collapsed > 0) out.graph = std::move(r.graph);
  }
  if (options.transpose_sink) {
    GRAPHI_ASSIGN_OR_RETURN(TransposeSinkResult r, sink_transposes(out.graph, shapes));
    out.transposes_removed = r.removed;
    out.reports.push_back(
        {"transpose_sink",
         "pushed Transposes through element-wise ops: " + plural(r.removed, "Transpose") +
             " fewer (of " + std::to_string(r.transposes) + ")",
         r.removed});
    if (r.removed > 0) out.graph = std::move(r.graph);
  }
  if (options.conv1d_lift) {
    GRAPHI_ASSIGN_OR_RETURN(Conv1dLiftResult r, lift_conv1d_chains(out.graph, shapes));
    out.reports.push_back({"conv1d_lift",
                           "ran " + plural(r.lifted, "op") +
                               " between 1-D convs in their 4-D form (" +
                               plural(r.removed, "Reshape") + " fewer)",
                           r.lifted});
    if (r.lifted > 0 || r.removed > 0) out.graph = std::move(r.graph);
  }
  if (options.gelu_fusion) {
    GRAPHI_ASSIGN_OR_RETURN(GeluFusionResult r, fuse_gelu(out.graph, shapes));
    out.gelus_fused = r.fused;
    out.reports.push_back(
        {"gelu_fusion", "fused " + plural(r.fused, "exact GELU chain") + " into Gelu", r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  if (options.hard_sigmoid_fusion) {
    GRAPHI_ASSIGN_OR_RETURN(HardSigmoidFusionResult r, fuse_hard_sigmoid(out.graph, shapes));
    out.hard_sigmoids_fused = r.fused;
    out.reports.push_back(
        {"hard_sigmoid_fusion",
         "fused " + plural(r.fused, "clip(x + c, 0, h) / h chain") + " into HardSigmoid", r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  if (options.group_norm_fusion) {
    GRAPHI_ASSIGN_OR_RETURN(GroupNormFusionResult r, fuse_group_norm(out.graph, shapes));
    out.group_norms_fused = r.fused;
    std::string did =
        "fused " + plural(r.fused, "GroupNorm / InstanceNorm chain") + " into GroupNorm";
    if (r.affine + r.with_relu > 0)
      did += " (" + std::to_string(r.affine) + " with the per-channel affine after, " +
             std::to_string(r.with_relu) + " with the Relu)";
    out.reports.push_back({"group_norm_fusion", did, r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  if (options.matmul_epilogue) {
    GRAPHI_ASSIGN_OR_RETURN(MatMulEpilogueResult r, fuse_matmul_epilogues(out.graph, shapes));
    out.matmul_epilogues = r.fused;
    std::string did = "fused " + plural(r.fused, "MatMul + bias Add") + " into MatMulBias";
    if (r.scales + r.activations > 0)
      did += " (" + std::to_string(r.scales) + " with a column scale, " +
             std::to_string(r.activations) + " with the activation after)";
    out.reports.push_back({"matmul_epilogue", did, r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  if (options.pad_fold) {
    GRAPHI_ASSIGN_OR_RETURN(PadFoldResult r, fold_pads(out.graph, shapes));
    out.pads_removed = r.removed;
    out.pads_folded = r.folded;
    std::string did;
    if (r.removed > 0) did = "dropped " + plural(r.removed, "all-zero Pad");
    if (r.folded > 0)
      did += (did.empty() ? "folded " : ", folded ") + plural(r.folded, "zero Pad") +
             " into the Conv / AveragePool after it";
    if (r.cropped > 0)
      did += (did.empty() ? "" : ", ") + std::string("took ") + plural(r.cropped, "crop") +
             " of a Conv's padding out of its pads";
    out.reports.push_back({"pad_fold", did, r.removed + r.folded + r.cropped});
    if (r.removed + r.folded + r.cropped > 0) out.graph = std::move(r.graph);
  }
  if (options.conv_trim) {
    GRAPHI_ASSIGN_OR_RETURN(ConvTrimResult r, trim_conv_taps(out.graph, shapes));
    out.convs_trimmed = r.trimmed;
    out.reports.push_back(
        {"conv_trim",
         "cut the taps that only meet padding from " + plural(r.trimmed, "dilated Conv"),
         r.trimmed});
    if (r.trimmed > 0) out.graph = std::move(r.graph);
  }
  if (options.conv_reparam) {
    GRAPHI_ASSIGN_OR_RETURN(ConvReparamResult r, reparameterize_conv_branches(out.graph, shapes));
    out.conv_reparams = r.merged;
    out.reports.push_back({"conv_reparam",
                           "merged " + plural(r.branches, "summed conv / identity term") +
                               " into " + plural(r.merged, "Conv"),
                           r.merged});
    if (r.merged > 0) out.graph = std::move(r.graph);
  }
  if (options.conv_fusion) {
    GRAPHI_ASSIGN_OR_RETURN(ConvFusionResult r, fuse_conv_activations(out.graph, shapes));
    out.convs_fused = r.fused;
    std::string did = "fused " + plural(r.fused, "Conv + activation pair") + " into FusedConv";
    if (r.affine_folded > 0)
      did = "folded the per-channel scale/shift after " + plural(r.affine_folded, "Conv") +
            " into their weights, " + did;
    out.reports.push_back({"conv_fusion", did, r.fused + r.affine_folded});
    if (r.fused + r.affine_folded > 0) out.graph = std::move(r.graph);
  }
  if (options.conv_merge) {
    GRAPHI_ASSIGN_OR_RETURN(ConvMergeResult r, merge_sibling_convs(out.graph, shapes));
    out.conv_groups = r.groups;
    out.conv_members = r.members;
    std::string did = "merged " + plural(r.members, "convolution") + " sharing an input into " +
                      std::to_string(r.groups);
    if (r.sunk > 0) did += " (and " + plural(r.sunk, "per-branch op kind") + " after them)";
    if (r.summed > 0) did += ", " + plural(r.summed, "summed group") + " as SplitSum";
    out.reports.push_back({"conv_merge", did, r.groups});
    if (r.groups > 0) out.graph = std::move(r.graph);
  }
  if (options.channel_gather) {
    GRAPHI_ASSIGN_OR_RETURN(ChannelGatherResult r, gather_channels(out.graph, shapes));
    out.channel_gathers = r.gathers;
    out.channel_ops_composed = r.composed;
    const int changes = r.gathers + r.composed;
    out.reports.push_back({"channel_gather",
                           "composed channel Slices / Concats / shuffles into " +
                               plural(r.gathers, "ChannelGather") + " (" +
                               std::to_string(r.composed) + " more composed away)",
                           changes});
    if (changes > 0) out.graph = std::move(r.graph);
  }
  if (options.blocked_layout) {
    GRAPHI_ASSIGN_OR_RETURN(
        BlockedLayoutResult r,
        to_blocked_layout(out.graph, shapes, options.conv_block, options.conv3d_channels_last));
    out.blocked_ops = r.blocked_ops;
    out.layout_reorders = r.reorders;
    out.reports.push_back({"blocked_layout",
                           "ran " + plural(r.blocked_ops, "op") + " in nChw" +
                               std::to_string(options.conv_block) + "c" +
                               (options.conv3d_channels_last ? " or NDHWC" : "") + " with " +
                               plural(r.reorders, "reorder"),
                           r.blocked_ops});
    if (r.blocked_ops > 0) out.graph = std::move(r.graph);
  }
  if (options.conv_sum) {
    GRAPHI_ASSIGN_OR_RETURN(ConvSumFusionResult r, fuse_conv_sums(out.graph, shapes));
    out.conv_sums = r.fused;
    std::string did = "fused " + plural(r.fused, "residual Add") + " into the conv before it";
    if (r.activations > 0)
      did += " (" + std::to_string(r.activations) + " with the activation after)";
    if (r.after_activation > 0)
      did += " (" + std::to_string(r.after_activation) + " after the conv's activation)";
    out.reports.push_back({"conv_sum", did, r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  if (options.conv_dw) {
    GRAPHI_ASSIGN_OR_RETURN(ConvDepthwiseFusionResult r, fuse_conv_depthwise(out.graph, shapes));
    out.conv_dws = r.fused;
    out.reports.push_back(
        {"conv_dw", "fused " + plural(r.fused, "1x1 + depthwise conv pair") + " into BlockedConvDw",
         r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  if (options.conv_scale) {
    GRAPHI_ASSIGN_OR_RETURN(ConvInputScaleResult r, fuse_conv_input_scale(out.graph, shapes));
    out.conv_scales = r.fused;
    out.reports.push_back({"conv_scale",
                           "folded " + plural(r.fused, "channel-scale Mul") +
                               " into the 1x1 conv after it (BlockedConvScaled)",
                           r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  if (options.channel_affine) {
    GRAPHI_ASSIGN_OR_RETURN(ChannelAffineResult r, fuse_channel_affine(out.graph, shapes));
    out.channel_affines = r.fused;
    std::string did = "fused " + plural(r.fused, "per-channel Mul + Add") + " into ChannelAffine";
    if (r.with_relu > 0) did += " (" + std::to_string(r.with_relu) + " with the Relu after)";
    out.reports.push_back({"channel_affine", did, r.fused});
    if (r.fused > 0) out.graph = std::move(r.graph);
  }
  return out;
}

}  // namespace graphi::graph::passes
