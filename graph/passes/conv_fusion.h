// fuse_conv_activations: a Conv followed by an activation (the Conv's output read by that
// activation only, not a graph output) becomes one FusedConv node (ONNX Runtime's contrib op
// name) with attributes activation / activation_params (ops/conv_activation.h): oneDNN applies
// it as an eltwise post-op while the output block is still in registers (conv + bias +
// activation in one pass over dst), and the plan loses an op and a tensor. Recognized:
//   Relu, LeakyRelu, Clip with constant (or absent) bounds (ReLU6), Sigmoid, Tanh, HardSigmoid;
//   Swish = Mul(y, Sigmoid(y)) (PyTorch's SiLU export) and HardSwish = Mul(y, HardSigmoid(y)
//   with alpha 1/6, beta 1/2) (ONNX HardSwish as the importer writes it), where y is read by
//   exactly those two nodes.
// First, per-channel constant Mul / Add / Sub nodes right after a conv with constant weights (an
// inference BatchNormalization the exporter left unfolded, which the importer writes as Mul +
// Add) are folded into the conv's weights and bias, so that its activation can fuse as well.
// A Conv3D (ops/conv_pool_3d.cpp) folds the same way and takes the piecewise-linear activations
// (Relu, LeakyRelu, Clip, HardSigmoid) as attributes of its own, staying a Conv3D.
// The fused node keeps the activation's output name; graph inputs and outputs are unchanged.
#pragma once

#include "graph/graph.h"

namespace graphi::graph::passes {

struct ConvFusionResult {
  Graph graph;            // a copy of the input when nothing changed
  int fused = 0;          // Conv + activation pairs now one FusedConv
  int affine_folded = 0;  // convs that absorbed the per-channel Mul / Add / Sub after them
};

Result<ConvFusionResult> fuse_conv_activations(const Graph& g, const ShapeInferencer& shapes);

// fuse_conv_sums (after blocked_layout): a BlockedConv (or a 3-D Conv3DNdhwc: a 3-D ResNet's
// block) without activation whose output only an
// Add of a same-shape tensor Z reads (a residual connection: ResNet's conv + x, MobileNetV2's
// projection + x) takes Z as its 4th input, and the activation that alone reads the sum (ResNet's
// ReLU after it) as its activation: Y = act(conv(X) + B + Z), one pass over the output
// (oneDNN's binary-add post-op, then the eltwise one) instead of the conv's store, the Add's
// two reads and store, and the activation's read and store. ONNX Runtime's FusedConv has the
// same input Z. A BlockedConv that has its activation already (conv + BN + LeakyReLU / SiLU, then
// the residual Add: DarkNet, CSP and YOLO blocks) takes Z with attribute sum_after_activation = 1:
// Y = act(conv(X) + B) + Z (the eltwise post-op, then the binary add). The fused node keeps the
// last fused node's output name.
struct ConvSumFusionResult {
  Graph graph;               // a copy of the input when nothing changed
  int fused = 0;             // conv + Add pairs now one BlockedConv with input Z
  int activations = 0;       // ... of which also took the activation after the Add
  int after_activation = 0;  // ... of which add Z after the conv's own activation
};

Result<ConvSumFusionResult> fuse_conv_sums(const Graph& g, const ShapeInferencer& shapes);

// fuse_conv_depthwise (after fuse_conv_sums): a 1x1 BlockedConv (stride 1, no pads, group 1,
// constant weights, no input Z) whose output only a 3x3 depthwise BlockedConv reads (pads 1,
// stride 1 or 2, constant weights and bias, no input Z): MobileNet's expansion conv and the
// depthwise conv after it. Both become one BlockedConvDw node (inputs X, W, B, Wdw, Bdw; the 1x1
// conv's attributes plus dw_strides, dw_activation, dw_activation_params): oneDNN's depthwise
// post-op, which hands the 1x1 conv's output rows to the depthwise kernel while they are in
// cache instead of writing the expanded tensor (6x the block's input) out and reading it back.
// The 1x1 conv's activation must be one oneDNN applies cheaply in registers (not Sigmoid, Tanh
// or Swish, which graphi applies after a primitive: ops/conv_pool.cpp). The fused node keeps
// the 1x1 conv's name and the depthwise conv's output name.
struct ConvDepthwiseFusionResult {
  Graph graph;    // a copy of the input when nothing changed
  int fused = 0;  // 1x1 + depthwise pairs now one BlockedConvDw
};

Result<ConvDepthwiseFusionResult> fuse_conv_depthwise(const Graph& g,
                                                      const ShapeInferencer& shapes);

// fuse_conv_input_scale (after fuse_conv_depthwise): a blocked Mul of X [N, C/B, H, W, B] by a
// run-time per-channel S [N, C/B, 1, 1, B] (a squeeze-excitation's gate) whose product only a
// 1x1 BlockedConv (group 1, no pads, constant weights) reads: conv(X * S) = (W * S) X, so the
// conv takes X and S (BlockedConvScaled, inputs X, W, B, Z, S) and scales its packed M x C
// weights each run (ConvSpec::input_scale) instead of the Mul's pass over the C x H x W
// activation (its read and its write); a batch runs the primitive once per image with that
// image's weights. Only where the weights are at most an eighth of an image of X (EfficientNet's
// blocks at 28x28 and up; its 14x14 and 7x7 stages keep the Mul). The fused node keeps the
// conv's name and output.
struct ConvInputScaleResult {
  Graph graph;    // a copy of the input when nothing changed
  int fused = 0;  // Mul + 1x1 conv pairs now one BlockedConvScaled
};
Result<ConvInputScaleResult> fuse_conv_input_scale(const Graph& g, const ShapeInferencer& shapes);

}  // namespace graphi::graph::passes
