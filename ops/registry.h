// The op registry: the single table of op type -> shape rule, cost hint, small-op flag and an
// ordered list of kernels (first that accepts wins). It implements graph::ShapeInferencer so
// graph/ can validate without knowing ops/.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/kernel.h"

namespace graphi::ops {

// Work of one execution of a node, for levels, the profiler's first guess and `graphi info`.
struct CostHint {
  double flops = 0;  // floating point operations (an FMA counts 2)
  double bytes = 0;  // bytes read + written
};

using ShapeFn = Result<std::vector<TensorDesc>> (*)(const graph::InferContext& ctx);
// Called with the node's input descs (nullptr if absent) and inferred output descs.
using CostFn = CostHint (*)(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                            std::span<const TensorDesc* const> outputs);
using KernelFactory = std::unique_ptr<Kernel> (*)();

struct OpDef {
  std::string type;  // "MatMul"
  ShapeFn infer = nullptr;
  CostFn cost = nullptr;
  // Scalar/bookkeeping ops (Reshape, Identity, ...) that are always cheap: run inline by the
  // executor that made them ready, never on a team.
  bool small = false;
  std::vector<KernelFactory> kernels;  // preference order; the last is the generic fallback
};

class Registry : public graph::ShapeInferencer {
 public:
  static const Registry& get();  // the process-wide table, built on first use

  const OpDef* find(const std::string& type) const;
  std::vector<std::string> op_types() const;  // sorted, for --help and error messages

  Result<std::vector<TensorDesc>> infer(const graph::InferContext& ctx) const override;
  CostHint cost(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                std::span<const TensorDesc* const> outputs) const;
  // First kernel of the op's list that accepts ctx. If none does, the error lists every
  // kernel's reason. Set GRAPHI_VERBOSE=dispatch to print refusals as they happen.
  Result<std::unique_ptr<Kernel>> select(const KernelContext& ctx) const;

  void add(OpDef def);  // used while building the table

  // Adds an op to the process-wide table of get() after it was built: the mechanism behind
  // register_custom_op() (ops/custom_op.h, which checks the OpDef first and documents when it
  // may be called). Registrations are serialized by a mutex; readers of the table are not.
  // kInvalidArgument if the type is already registered.
  static Status add_to_process_table(OpDef def);

 private:
  std::map<std::string, OpDef> defs_;
};

// Registration functions, one per op family file (called once by Registry::get()).
void register_elementwise_ops(Registry& r);  // ops/elementwise.cpp: Add..Div, Sigmoid, Tanh, Relu
void register_shape_ops(
    Registry& r);  // ops/shape_ops.cpp: Concat, Split, Slice, Transpose, Reshape, Identity
void register_softmax_op(Registry& r);        // ops/softmax.cpp
void register_gemm_ops(Registry& r);          // ops/gemm.cpp: MatMul, Gemm
void register_conv_pool_ops(Registry& r);     // ops/conv_pool.cpp: Conv, MaxPool, AveragePool
void register_conv_pool_3d_ops(Registry& r);  // ops/conv_pool_3d.cpp: Conv3D, MaxPool3D, ...
void register_rnn_ops(Registry& r);           // ops/rnn/rnn_sequence.cpp: LSTM, GRU, RNN
void register_onnx_view_ops(Registry& r);     // ops/onnx_view_ops.cpp: Gather
void register_phased_lstm_op(Registry& r);    // ops/rnn/phased_lstm.cpp: PhasedLSTM
void register_unary_ops(Registry& r);  // ops/unary_ops.cpp: Exp, Log, Erf, LeakyRelu, ..., Clip,
                                       // Round, trig, IsNaN, IsInf
void register_reduce_ops(
    Registry& r);  // ops/reduce_ops.cpp: Pow, ReduceMean, ReduceSum, ... (10 Reduce ops)
void register_pad_op(Registry& r);               // ops/pad.cpp: Pad
void register_max_pool_grad_op(Registry& r);     // ops/max_pool_grad.cpp: MaxPoolGrad
void register_relu_grad_op(Registry& r);         // ops/relu_grad.cpp: ReluGrad
void register_split_sum_op(Registry& r);         // ops/split_sum.cpp: SplitSum
void register_channel_gather_op(Registry& r);    // ops/channel_gather.cpp: ChannelGather
void register_channel_affine_op(Registry& r);    // ops/channel_affine.cpp: ChannelAffine
void register_group_norm_op(Registry& r);        // ops/group_norm.cpp: GroupNorm
void register_conv_grad_weight_op(Registry& r);  // ops/conv_grad_weight.cpp: ConvGradWeight
void register_logic_ops(
    Registry& r);  // ops/logic_ops.cpp: Equal, Less, ..., And, Or, Not, Where, Max, Min
void register_cast_op(Registry& r);                         // ops/cast_op.cpp: Cast
void register_quantize_dequantize_op(Registry& r);          // ops/quantize_dequantize.cpp
void register_int8_matmul_op(Registry& r);                  // ops/int8_matmul.cpp
void register_dynamic_quantize_dequantize_op(Registry& r);  // ops/dynamic_quantize_dequantize.cpp
void register_norm_ops(Registry& r);  // ops/norm_ops.cpp: LayerNormalization, InstanceNormalization
void register_log_softmax_op(Registry& r);  // ops/log_softmax.cpp: LogSoftmax
void register_index_ops(Registry& r);  // ops/index_ops.cpp: ArgMax, ArgMin, TopK, GatherElements
void register_tile_expand_ops(Registry& r);     // ops/tile_expand.cpp: Expand, Tile
void register_resize_op(Registry& r);           // ops/resize.cpp: Resize
void register_grid_sample_op(Registry& r);      // ops/grid_sample.cpp: GridSample
void register_det_op(Registry& r);              // ops/det.cpp: Det
void register_col2im_op(Registry& r);           // ops/col2im.cpp: Col2Im
void register_center_crop_pad_op(Registry& r);  // ops/center_crop_pad.cpp: CenterCropPad
void register_roi_align_op(Registry& r);        // ops/roi_align.cpp: RoiAlign
void register_pool_nd_ops(Registry& r);         // ops/pool_nd.cpp: MaxPoolWithIndices, LpPool
void register_max_unpool_op(Registry& r);       // ops/max_unpool.cpp: MaxUnpool
void register_int_arith_ops(
    Registry& r);  // ops/int_arith.cpp: Mod, IntBinary (integer Add/Sub/Mul/Div)
void register_conv_transpose_op(Registry& r);  // ops/conv_transpose.cpp: ConvTranspose
void register_cumsum_op(Registry& r);          // ops/cumsum.cpp: CumSum
void register_signal_ops(Registry& r);         // ops/signal_ops.cpp: DFT, STFT, MelWeightMatrix
void register_einsum_op(Registry& r);          // ops/einsum.cpp: Einsum
void register_scatter_gather_nd_ops(
    Registry& r);  // ops/scatter_gather_nd.cpp: ScatterElements, ScatterND, GatherND
void register_lrn_op(Registry& r);  // ops/lrn.cpp: LRN
void register_optimizer_ops(
    Registry& r);  // ops/optimizer_ops.cpp: SGDUpdate, AdamUpdate (in place)
void register_batch_norm_ops(Registry& r);  // ops/batch_norm_ops.cpp: BatchNormalization,
                                            // BatchNormalizationTraining, BatchNormStatsUpdate
void register_dropout_ops(Registry& r);     // ops/dropout_ops.cpp: Dropout, DropoutTraining

// GRAPHI_VERBOSE contains "dispatch": kernel selection, oneDNN implementations and the
// convolution algorithm verdicts are printed on stderr.
bool verbose_dispatch();

}  // namespace graphi::ops
