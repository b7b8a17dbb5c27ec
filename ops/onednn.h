// The oneDNN adapter: the only file that includes dnnl.hpp (2.x `desc` API; 3.x removed ::desc,
// see DEPENDENCIES.md 1). Kernels describe a primitive with plain structs of dims and strides,
// get back an opaque Primitive at init time, and execute it at run time on user pointers.
//
// Contract of every Primitive:
// - created once per node, with omp_set_num_threads(team_size) on the creating thread, because
//   oneDNN sizes its work split and scratchpad for the thread count it sees at creation;
// - scratchpad_mode::user: scratch_bytes() is what the kernel reports, and execute() runs on the
//   caller's scratch (TeamContext::scratch), so one Primitive may run on any thread and on two
//   threads at once (each with its own scratch and outputs);
// - execute() opens oneDNN's own OpenMP region with team_size threads; called inside an active
//   region it would run single-threaded, so kernels using it set opens_own_region() = true;
// - execute() with nthr = 1 on a primitive made for a team (a sequential run narrowed to one
//   thread because other Sessions' runs hold the CPUs, engine/run_width.h) runs the primitive's
//   1-thread twin instead, made on the first such call (same spec, team size 1; its own packed
//   weights) and kept: without it every oneDNN op of a narrowed run opened a team of team_size
//   anyway, i.e. more threads in flight than the run claimed, and in a process whose OpenMP
//   threads exceed the CPUs (libgomp's throttled spin) each op paid a futex wake-up of its
//   sleeping worker. If the twin cannot be made (or needs more scratch than the caller has),
//   the team primitive runs as before;
// - execute() never throws and allocates nothing in graphi (except once, making the 1-thread
//   twin on the first narrowed call; above): the dnnl::memory handles of the
//   arguments are made at creation (two slots, for two concurrent callers) and re-pointed only
//   when a buffer moved; the arguments go to oneDNN's C entry point as a stack array. What
//   libdnnl allocates inside its own execute call is measured by tests/alloc (docs/CNN.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/base.h"
#include "ops/conv_activation.h"

namespace graphi::ops::onednn {

// A dense f32 tensor view: logical dims and strides in elements (row-major when strides are
// empty). Strides express transposes (e.g. Gemm's transA) without copying.
struct Layout {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};

// dst = output_scale * (src x weights + bias), batched with numpy broadcasting of the leading
// dims (every layout has the same rank, 2..12; a broadcast dim is 1). oneDNN applies the output
// scale after the bias (checked on this build), so a caller wanting alpha*AB + beta*C passes a
// bias of (beta/alpha)*C.
struct MatMulSpec {
  Layout src, weights, dst;
  std::optional<Layout> bias;  // each dim equal to dst's or 1
  float output_scale = 1.0f;
  // Constant weights: packed once into the layout the primitive prefers (format_tag::any);
  // execute() then ignores its weights argument. nullptr: weights come with every run.
  const float* const_weights = nullptr;
  // An activation on dst (an eltwise post-op, after the output scale): MatMulBias.
  ConvPostOp post;
};

// The algorithm a convolution primitive (and its deconvolution / backward-weights twins) asks
// oneDNN for. Winograd (oneDNN 2.6 on AVX-512: 3x3, stride 1, channels in multiples of 16;
// F(4x4, 3x3) or F(2x2, 3x3) tiles) does 2.25-4x fewer multiplications than direct at ~1e-6
// relative error; which one is faster depends on the shape and the machine, so
// ops/conv_algorithm.h measures them.
// kChannelsLast: direct, computed in NHWC where oneDNN 2.6 has its brgemm kernels (AVX-512; on
// a Zen 5 core 15-40% faster than its nChw16c direct ones for 3x3 convs with many channels on
// small images, and less hurt by weights that come from memory), for a caller whose activations
// are channel-blocked: src and dst go through scratch in NHWC (2-D, group 1, constant weights,
// no fused depthwise conv or input scale).
enum class ConvAlgorithm { kDirect, kWinograd, kChannelsLast };

// 2-D convolution, NCHW src/dst, ONNX weights [OC, C/group, KH, KW], optional bias [OC] (3-D:
// `d` below).
struct ConvSpec {
  int64_t n = 0, c = 0, h = 0, w = 0;  // src
  int64_t oc = 0, oh = 0, ow = 0;      // dst channels and spatial size
  int64_t kh = 0, kw = 0, group = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;  // ONNX convention: 1 = dense kernel
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool has_bias = false;
  ConvPostOp post;  // activation on the output, a oneDNN eltwise post-op
  // dst = post(conv + bias + Z): a tensor Z in dst's layout added before the activation (a
  // residual connection), as oneDNN's binary-add post-op while the output block is in registers.
  // execute() takes Z as `sum`. Not with staged activations.
  bool sum_input = false;
  // With sum_input: dst = post(conv + bias) + Z instead (the binary-add post-op after the
  // eltwise one: a residual Add after the conv's activation, DarkNet / YOLO blocks).
  bool sum_after_post = false;
  int src_block = 0, dst_block = 0;      // 8 or 16: nChw{B}c instead of nchw
  const float* const_weights = nullptr;  // as in MatMulSpec: packed once when given
  // Plain NCHW (and oihw) buffers for the caller, but oneDNN picks the layouts it computes in
  // (format_tag::any: nChw16c and blocked weights for its direct AVX-512 kernels instead of
  // im2col + GEMM); each argument it wants in another layout is reordered through the scratch
  // buffer at run time (inputs before, the output after). For weights that change every run
  // (training) and the gradient primitives, where no graph pass lays the tensors out blocked.
  bool staged = false;
  // Constant weights scaled per input channel at run time (BlockedConvScaled): execute() takes
  // S [c] where the weights go and multiplies the packed weights by it into the scratch before
  // the primitive runs (no reorder per run). Group 1, constant weights, not staged.
  bool input_scale = false;
  ConvAlgorithm algorithm = ConvAlgorithm::kDirect;
  // A 3x3 depthwise convolution (pad 1, stride dw.stride) fused after this one (oneDNN's
  // depthwise post-op, BlockedConvDw of graph/passes/conv_fusion.h): the 1x1 conv's output rows
  // go to the depthwise kernel while they are in cache, and dst is the depthwise output
  // [n, oc, (oh - 1) / stride + 1, ...]. Blocked activations and constant weights only.
  struct Depthwise {
    int64_t stride = 0;              // 1 or 2; 0: no depthwise conv
    const float* weights = nullptr;  // [oc, 1, 3, 3]
    const float* bias = nullptr;     // [oc], or nullptr
    ConvPostOp post;                 // its activation
  } dw;
  // A 3-D (volumetric) convolution when d > 0: src [n, c, d, h, w] (ncdhw), dst [n, oc, od, oh,
  // ow], weights [oc, c/group, kd, kh, kw]; no blocks, fused depthwise conv or input scale
  // (ops/conv_pool_3d.cpp). ONNX conventions as above.
  int64_t d = 0, od = 0, kd = 1, stride_d = 1, dilation_d = 1, pad_front = 0, pad_back = 0;
  // 3-D only: src and dst channels-last for the caller (ndhwc: [n, d, h, w, c] in memory), the
  // layout oneDNN's brgemm convolutions compute in on AVX-512 (preferred_3d_layout()).
  bool channels_last = false;
};

enum class PoolKind { kMax, kAvgIncludePad, kAvgExcludePad };

// 2-D pooling, NCHW (3-D: `d` below). Max pooling treats padding as -inf; average pooling either
// counts padded elements in the divisor (ONNX count_include_pad=1) or not.
struct PoolSpec {
  PoolKind kind = PoolKind::kMax;
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // ONNX convention (1 = dense); max pooling only
  int block = 0;                           // 8 or 16: src and dst in nChw{B}c instead of nchw
  // 3-D pooling when d > 0: src [n, c, d, h, w], dst [n, c, od, oh, ow], ncdhw for the caller.
  int64_t d = 0, od = 0, kd = 1, stride_d = 1, dilation_d = 1, pad_front = 0, pad_back = 0;
  // 3-D only: pool in nCdhw16c, src and dst reordered through scratch (oneDNN 2.6's jit pooling
  // on ncdhw was 20x slower than that here: ops/conv_pool_3d.cpp measures both).
  bool staged = false;
  bool channels_last = false;  // 3-D only: src and dst ndhwc for the caller
};

class Primitive {
 public:
  struct Impl;
  explicit Primitive(std::unique_ptr<Impl> impl);
  ~Primitive();
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;

  size_t scratch_bytes() const;  // the user scratchpad size
  // oneDNN's implementation name ("brg:avx512_core", "jit:avx512_core", "ref:any", ...).
  const std::string& impl_name() const;
  bool weights_packed() const;  // constant weights were reordered into a blocked layout
  bool sums_input() const;      // made with ConvSpec::sum_input: execute() adds `sum`

  int team_size() const;
  // Runs the primitive on the calling thread's stream with the creation team size, or, when
  // nthr is 1 and the team is larger, on its 1-thread twin (see the contract above). Pointers by
  // role (weights/bias may be nullptr when unused or packed). `scratch` must hold
  // scratch_bytes() and be 64-byte aligned (oneDNN's Winograd kernels use aligned vector moves
  // on it); `scratch_capacity` is what it really holds (the twin runs only if its
  // scratchpad fits). Returns false if oneDNN reported an error (not expected after a
  // successful creation); never throws.
  // `sum`: ConvSpec::sum_input's Z (nullptr otherwise).
  bool execute(const float* src, const float* weights, const float* bias, float* dst, void* scratch,
               int nthr = 0, size_t scratch_capacity = 0,
               const float* sum = nullptr) const noexcept;
  // The 1-thread twin execute(nthr = 1) runs, made now if not yet tried; nullptr when the
  // primitive is already single-threaded or the twin could not be made (tests, verbose).
  const Primitive* single_thread_twin() const noexcept;

  // Set by make_*: how to make the same primitive for one thread.
  std::function<Result<std::unique_ptr<Primitive>>()> make_twin;

 private:
  bool run(const float* src, const float* weights, const float* bias, float* dst, void* scratch,
           const float* sum) const noexcept;
  friend std::vector<double> best_run_ms(const std::vector<const Primitive*>&, int, double, int);
  std::unique_ptr<Impl> impl_;
  mutable std::once_flag twin_once_;
  mutable std::unique_ptr<Primitive> twin_;
};

// A Primitive::execute that failed (not expected after a successful creation): said on stderr
// once per process, and the `count` floats of the output are NaN rather than stale bytes.
void fail_output(const char* kernel, float* y, int64_t count) noexcept;

// Create a primitive for `team_size` threads. Any oneDNN error, and oneDNN offering only its
// slow reference implementation ("ref:any") when `allow_ref` is false, come back as
// Status::unsupported with oneDNN's reason, so the calling kernel can decline.
Result<std::unique_ptr<Primitive>> make_matmul(const MatMulSpec& spec, int team_size,
                                               bool allow_ref = false);
Result<std::unique_ptr<Primitive>> make_conv(const ConvSpec& spec, int team_size,
                                             bool allow_ref = false);
Result<std::unique_ptr<Primitive>> make_pool(const PoolSpec& spec, int team_size,
                                             bool allow_ref = false);
// NCHW [n, c, h, w] <-> nChw{block}c (to_blocked: from NCHW): oneDNN's jit reorder, ~5x the
// bandwidth of a plain transpose loop. execute(src, nullptr, nullptr, dst).
Result<std::unique_ptr<Primitive>> make_layout_reorder(int64_t n, int64_t c, int64_t h, int64_t w,
                                                       int block, bool to_blocked, int team_size);

// ONNX ConvTranspose (group 1, plain NCHW; 3-D also channels-last) as oneDNN's deconvolution,
// described by the convolution it reverses (how the Conv gradient uses it for dX): execute(src = dY
// [n, oc, oh, ow], weights = W [oc, c, kh, kw] (the Conv's weights, ConvTranspose's [C, M, kH,
// kW]), bias [c] or nullptr, dst = dX [n, c, h, w]). No bias-free ReLU, blocking or groups. 3-D
// with ConvSpec::d (ncdhw, W [oc, c, kd, kh, kw]).
Result<std::unique_ptr<Primitive>> make_deconv(const ConvSpec& conv, int team_size,
                                               bool allow_ref = false);

// The Conv weight gradient (group 1, plain NCHW, no bias) as oneDNN's convolution
// backward-weights, described by the forward convolution: execute(src = X [n, c, h, w],
// weights = dY [n, oc, oh, ow], bias nullptr, dst = dW [oc, c, kh, kw]).
Result<std::unique_ptr<Primitive>> make_conv_bwd_weights(const ConvSpec& conv, int team_size,
                                                         bool allow_ref = false);

// The best wall time (ms) of each primitive over rounds of interleaved executions after one
// warm-up round, on zero-filled buffers sized for all of them, each with its creation team: at
// least `min_rounds`, and more while the rounds took less than `min_ms` in all (up to
// `max_rounds`), so a burst of other load (another process's spinning thread pool) does not
// hit every round. Empty when it cannot be measured here: inside an OpenMP parallel region (the
// primitive would run on one thread), a team larger than the CPUs, or a failed execution. Allocates
// the buffers: for choices made at init.
std::vector<double> best_run_ms(const std::vector<const Primitive*>& prims, int min_rounds,
                                double min_ms, int max_rounds);

// The channel block of the activation layout oneDNN's convolution kernels run fastest on this
// CPU: 16 where it dispatches AVX-512 kernels (nChw16c), else 8 (AVX2's nChw8c).
int preferred_activation_block();

// Whether oneDNN's fastest 3-D f32 convolution here computes in channels-last ndhwc (what its
// `any` format picks for a representative 3x3x3 convolution: brgemm kernels on AVX-512), so
// that chains of 3-D ops are worth keeping channels-last (graph/passes/blocked_layout.h).
// Asked once per process.
bool prefers_channels_last_3d();

// "oneDNN 2.6.3 (cpu runtime OMP)": for `graphi info` and logs.
std::string version_string();

}  // namespace graphi::ops::onednn
