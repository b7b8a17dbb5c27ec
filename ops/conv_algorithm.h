// Direct or Winograd, per convolution, by measurement. oneDNN's Winograd kernels (3x3, stride 1,
// group 1, channels in multiples of 16 on AVX-512) do 2.25-4x fewer multiplications than its
// direct ones, but pay for the tile transforms: measured on a Zen 4 core, a 96->128 channel
// 3x3 conv at 28x28 ran 2.8x faster, a 128->256 one at 14x14 batch 8 2.4x slower. So the first
// primitive of each shape (and team size) times both on zero-filled buffers (the best of >= 3
// interleaved rounds over >= 40 ms) and keeps the faster
// (Winograd only when >= 5% faster: direct is the more accurate), and later ones of the same
// shape in the process reuse the verdict. Verdicts are also kept on disk, in
// conv_algorithms.json of the cache directory (ops/choice_cache.h: $GRAPHI_CACHE_DIR, else
// $XDG_CACHE_HOME/graphi, else ~/.cache/graphi), keyed by shape, team size, CPU and oneDNN
// version, so a later process on the same machine starts without measuring (delete the file to
// measure again).
//
// Used for the forward convolution and for the Conv gradient's dX (deconvolution) and dW
// (backward-weights).
//
// A third candidate, for 16-channel-blocked activations (AVX-512), group 1, constant weights,
// kernels larger than 1x1 and >= 2^26 FLOPs: the convolution computed in NHWC by oneDNN's brgemm
// kernels, src and dst reordered through scratch (ConvAlgorithm::kChannelsLast), kept when >= 5%
// faster than the others including the reorders. Measured on a Zen 5 core (2 threads, weights
// from memory as in a whole network): 512 -> 1024 channels 3x3 stride 2 at 14x14 1.85 -> 1.30 ms,
// 512 -> 512 3x3 at 7x7 0.82 -> 0.61 ms.
//
// GRAPHI_CONV_ALGORITHM selects the policy: "auto" (default: as above), "direct" (never
// Winograd or NHWC), "winograd" (wherever oneDNN has it), "nhwc" (wherever oneDNN has a brgemm
// kernel for a blocked convolution of the shapes above). The measurements of a process stop after
// GRAPHI_CONV_MEASURE_BUDGET_S (default 10 s; the rest run direct, with a note on stderr); past
// 1 s they are announced. GRAPHI_VERBOSE=dispatch prints every verdict.
#pragma once

#include <memory>
#include <string>

#include "graph/base.h"
#include "ops/onednn.h"

namespace graphi::ops {

enum class ConvAlgorithmPolicy { kAuto, kDirect, kWinograd, kChannelsLast };

// GRAPHI_CONV_ALGORITHM, read once; an unknown value warns once and means kAuto.
ConvAlgorithmPolicy conv_algorithm_policy();

// A oneDNN convolution primitive (make_conv, make_deconv or make_conv_bwd_weights as `make`)
// with the algorithm the policy picks for `spec`; spec.algorithm is ignored. `what` names the
// primitive kind in the memo key and logs. With spec.sum_input, a Winograd primitive (which takes
// no binary post-op) comes back without the sum and the activation (sums_input() false): the
// caller then adds Z and applies spec.post itself.
using ConvPrimitiveMaker = Result<std::unique_ptr<onednn::Primitive>> (*)(const onednn::ConvSpec&,
                                                                          int, bool);
Result<std::unique_ptr<onednn::Primitive>> make_fastest_conv(onednn::ConvSpec spec, int team_size,
                                                             bool allow_ref,
                                                             ConvPrimitiveMaker make,
                                                             const char* what);

// A forward convolution on plain NCHW activations with constant weights (the convolutions the
// blocked_layout pass leaves plain: channel counts that are no multiple of 8, e.g.
// ShuffleNet's 116 and 58; lone convs between plain ops): oneDNN's primitive on NCHW as
// make_fastest_conv picks it when that is a jit kernel; when oneDNN falls back to im2col + GEMM
// (or its reference code), the same convolution in the layouts oneDNN picks (nChw16c, channels
// padded to the block) with the activations reordered in and out through scratch
// (ConvSpec::staged), if oneDNN has a jit kernel for that. Not by measurement: the GEMM path
// timed alone on scratch buffers (onednn::best_run_ms) reads 2.4-3.8x faster than it runs in
// the graph (the 3 -> 116 stride-2 stem: 1.1-1.8 ms alone, 5.6-6.3 ms in `graphi run`; staged
// 2.0-2.2 ms both ways; cause not found), so such a verdict would pick it wrongly. Measured in
// `graphi run`, 2 threads: that stem 6.3 -> 2.2 ms, a 58-channel depthwise 3x3 at 56x56
// ~0.5 -> ~0.16 ms. GRAPHI_CONV_LAYOUT=plain keeps NCHW.
Result<std::unique_ptr<onednn::Primitive>> make_fastest_plain_conv(onednn::ConvSpec spec,
                                                                   int team_size, bool allow_ref);

// Forgets the verdicts of this process (not the ones on disk): for tests of the disk cache.
void forget_conv_algorithm_verdicts();

}  // namespace graphi::ops
