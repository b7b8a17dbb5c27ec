#include "ops/onednn.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <limits>
#include <unordered_map>

#include "graph/tensor.h"
#include "ops/registry.h"  // verbose_dispatch
#include "ops/scoped_omp_threads.h"

namespace graphi::ops::onednn {

namespace {

using dnnl::memory;
using Dims = memory::dims;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// One stream per OS thread: streams are cheap handles on CPU but are not documented as safe to
// share between threads executing at the same time.
dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

Dims row_major_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

memory::desc f32_desc(const Layout& l) {
  Dims dims(l.dims.begin(), l.dims.end());
  Dims strides =
      l.strides.empty() ? row_major_strides(dims) : Dims(l.strides.begin(), l.strides.end());
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc f32_desc(const Dims& dims, memory::format_tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

Status from_dnnl(const dnnl::error& e, const std::string& what) {
  return Status::unsupported("oneDNN " + what + ": " + e.what() + " (status " +
                             std::to_string(static_cast<int>(e.status)) + ")");
}

}  // namespace

// The argument memory objects of one execution. Made once (finish()), reused by every run: a
// dnnl::memory is a heap object, and re-pointing one at a new buffer goes through oneDNN's
// argument map (heap again), so a slot re-points a handle only when the buffer moved (a
// caller's input or output; buffers of the memory plan stay put from run to run).
struct ArgSlot {
  std::atomic<bool> busy{false};
  memory src, wei, bias, dst, scratch, sum;
  memory dw_wei, dw_bias;  // ConvSpec::dw: bound once to the Impl's packed constants
  const void* src_p = nullptr;
  const void* sum_p = nullptr;
  const void* wei_p = nullptr;
  const void* bias_p = nullptr;
  const void* dst_p = nullptr;
  const void* scratch_p = nullptr;
  // The caller's buffers of staged arguments (Impl::Stage), in their plain layouts.
  memory user_src, user_wei, user_dst, user_sum;
  const void* user_src_p = nullptr;
  const void* user_wei_p = nullptr;
  const void* user_dst_p = nullptr;
  const void* user_sum_p = nullptr;
};

// Slots per primitive: one per concurrent execution of the same node (two Sessions sharing one
// Plan run it at once); a third concurrent caller builds temporary handles (allocating).
constexpr int kArgSlots = 2;

struct Primitive::Impl {
  dnnl::primitive prim;
  memory::desc src_md, wei_md, bias_md, dst_md, scratch_md;
  bool has_weights = false, has_bias = false;
  bool has_sum = false;  // ConvSpec::sum_input: Z, in dst_md, is binary post-op sum_index's src1
  int sum_index = 0;     // 1 when the eltwise post-op comes first (ConvSpec::sum_after_post)
  // ConvSpec::dw: the depthwise post-op's weights (in the layout oneDNN asked for) and bias.
  bool has_dw = false;
  memory::desc dw_wei_md, dw_bias_md;
  Tensor dw_wei, dw_bias;
  // The oneDNN argument each role binds (convolution backward-weights binds weights = diff_dst,
  // dst = diff_weights).
  int wei_arg = DNNL_ARG_WEIGHTS, dst_arg = DNNL_ARG_DST;
  Tensor packed;  // weights in the primitive's preferred layout, when packed_weights
  bool packed_weights = false;
  // ConvSpec::input_scale: the input channel of each run of `scale_run` packed weights (-1:
  // padding), and where in the scratch the scaled copy goes.
  bool input_scale = false;
  std::vector<int32_t> scale_channel;
  int64_t scale_run = 1;
  size_t scaled_offset = 0;
  int team_size = 1;
  size_t scratch_bytes = 0;         // all of the caller's scratch: oneDNN's scratchpad + stages
  size_t onednn_scratch_bytes = 0;  // oneDNN's scratchpad, at the start of the scratch buffer
  std::string impl;
  // ConvSpec::staged: an argument oneDNN computes in a layout other than the caller's is copied
  // by a reorder between the caller's buffer (user_md) and a copy at `offset` in the scratch
  // buffer: before the primitive for inputs, after it for the output.
  struct Stage {
    bool on = false;
    memory::desc user_md;
    size_t offset = 0;
    dnnl::primitive reorder;
  };
  Stage stage_src, stage_wei, stage_dst;
  // ConvAlgorithm::kChannelsLast with Z: oneDNN's brgemm kernels take no binary post-op, but a
  // sum one (dst += conv, in the chain where the binary add would be): Z is reordered into the
  // staged dst before the primitive (sum_into_dst; stage_sum.offset is stage_dst's).
  Stage stage_sum;
  bool sum_into_dst = false;
  mutable ArgSlot slots[kArgSlots];
  // The layouts the caller's buffers have (what a twin must share).
  const memory::desc& user_src_md() const { return stage_src.on ? stage_src.user_md : src_md; }
  const memory::desc& user_dst_md() const { return stage_dst.on ? stage_dst.user_md : dst_md; }
};

Primitive::Primitive(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Primitive::~Primitive() = default;
size_t Primitive::scratch_bytes() const { return impl_->scratch_bytes; }
const std::string& Primitive::impl_name() const { return impl_->impl; }
bool Primitive::weights_packed() const { return impl_->packed_weights; }
bool Primitive::sums_input() const { return impl_->has_sum; }

namespace {

// Points `m` at `p` unless it already is (oneDNN's set_data_handle allocates).
void point(memory& m, const void*& cur, const void* p) {
  if (cur == p) return;
  m.set_data_handle(const_cast<void*>(p));
  cur = p;
}

// A slot's memory objects for the primitive's descs (buffers bound on first use).
void make_slot(const Primitive::Impl& p, ArgSlot& s) {
  const dnnl::engine& eng = cpu_engine();
  s.src = memory(p.src_md, eng, DNNL_MEMORY_NONE);
  s.dst = memory(p.dst_md, eng, DNNL_MEMORY_NONE);
  if (p.has_weights) s.wei = memory(p.wei_md, eng, DNNL_MEMORY_NONE);
  if (p.has_bias) s.bias = memory(p.bias_md, eng, DNNL_MEMORY_NONE);
  if (p.onednn_scratch_bytes > 0) s.scratch = memory(p.scratch_md, eng, DNNL_MEMORY_NONE);
  if (p.has_sum) s.sum = memory(p.dst_md, eng, DNNL_MEMORY_NONE);
  if (p.has_dw) {
    s.dw_wei = memory(p.dw_wei_md, eng, const_cast<void*>(p.dw_wei.data()));
    s.dw_bias = memory(p.dw_bias_md, eng, const_cast<void*>(p.dw_bias.data()));
  }
  if (p.stage_src.on) s.user_src = memory(p.stage_src.user_md, eng, DNNL_MEMORY_NONE);
  if (p.stage_wei.on) s.user_wei = memory(p.stage_wei.user_md, eng, DNNL_MEMORY_NONE);
  if (p.stage_dst.on) s.user_dst = memory(p.stage_dst.user_md, eng, DNNL_MEMORY_NONE);
  if (p.stage_sum.on) s.user_sum = memory(p.stage_sum.user_md, eng, DNNL_MEMORY_NONE);
  s.src_p = s.wei_p = s.bias_p = s.dst_p = s.scratch_p = s.sum_p = nullptr;
  s.user_src_p = s.user_wei_p = s.user_dst_p = s.user_sum_p = nullptr;
}

// Stages one argument when oneDNN chose `prim_md` over the caller's `user_md` (ConvSpec::staged):
// its copy goes after everything already in the scratch buffer.
void add_stage(Primitive::Impl& impl, Primitive::Impl::Stage& g, const memory::desc& user_md,
               const memory::desc& prim_md, bool input) {
  if (prim_md == user_md) return;
  g.on = true;
  g.user_md = user_md;
  g.offset = (impl.scratch_bytes + 63) / 64 * 64;
  impl.scratch_bytes = g.offset + prim_md.get_size();
  const dnnl::engine& eng = cpu_engine();
  g.reorder = input ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_md, eng, prim_md))
                    : dnnl::reorder(dnnl::reorder::primitive_desc(eng, prim_md, eng, user_md));
}

// Runs a staging reorder from `from` to `to` on stream `st`.
bool run_reorder(const dnnl::primitive& r, dnnl::stream& st, const memory& from, const memory& to) {
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
  return dnnl_primitive_execute(r.get(), st.get(), 2, args) == dnnl_success;
}

// ConvSpec::input_scale: out = packed weights * scale[channel], one channel per run of
// scale_run elements (16 for oneDNN's OIhw16i16o-style AVX-512 layouts).
void scale_packed_weights(const Primitive::Impl& p, const float* scale, float* out) noexcept {
  const float* w = p.packed.data_as<float>();
  const int64_t k = p.scale_run;
  const int64_t runs = static_cast<int64_t>(p.scale_channel.size());
  for (int64_t r = 0; r < runs; ++r) {
    const int32_t c = p.scale_channel[static_cast<size_t>(r)];
    const float f = c >= 0 ? scale[c] : 0.0f;
    const float* src = w + r * k;
    float* dst = out + r * k;
    if (k == 16) {
      for (int j = 0; j < 16; ++j) dst[j] = src[j] * f;
    } else {
      for (int64_t j = 0; j < k; ++j) dst[j] = src[j] * f;
    }
  }
}

}  // namespace

int Primitive::team_size() const { return impl_->team_size; }

const Primitive* Primitive::single_thread_twin() const noexcept {
  if (impl_->team_size <= 1 || !make_twin) return nullptr;
  try {
    std::call_once(twin_once_, [this] {
      Result<std::unique_ptr<Primitive>> r = make_twin();
      // The twin must read and write the buffers the plan laid out for this primitive.
      if (r.is_ok() && (*r)->impl_->user_src_md() == impl_->user_src_md() &&
          (*r)->impl_->user_dst_md() == impl_->user_dst_md())
        twin_ = std::move(*r);
      else if (verbose_dispatch())
        std::fprintf(stderr, "graphi: oneDNN: no 1-thread twin of %s (%s)\n", impl_->impl.c_str(),
                     r.is_ok() ? "other activation layout" : r.status().message().c_str());
    });
  } catch (...) {
    return nullptr;  // bad_alloc or a system error of call_once: the team primitive runs
  }
  return twin_.get();
}

bool Primitive::execute(const float* src, const float* weights, const float* bias, float* dst,
                        void* scratch, int nthr, size_t scratch_capacity,
                        const float* sum) const noexcept {
  if (nthr == 1 && impl_->team_size > 1) {
    const Primitive* twin = single_thread_twin();
    if (twin && twin->scratch_bytes() <= scratch_capacity)
      return twin->run(src, weights, bias, dst, scratch, sum);
  }
  return run(src, weights, bias, dst, scratch, sum);
}

bool Primitive::run(const float* src, const float* weights, const float* bias, float* dst,
                    void* scratch, const float* sum) const noexcept {
  const Impl& p = *impl_;
  try {
    ArgSlot* slot = nullptr;
    for (ArgSlot& s : p.slots) {
      bool idle = false;
      if (s.busy.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
        slot = &s;
        break;
      }
    }
    ArgSlot spare;  // all slots busy: handles for this call only
    ArgSlot& s = slot ? *slot : spare;
    if (!slot) make_slot(p, s);
    struct Release {
      ArgSlot* s;
      ~Release() {
        if (s) s->busy.store(false, std::memory_order_release);
      }
    } release{slot};
    dnnl_exec_arg_t args[8];
    int n = 0;
    char* const staged = static_cast<char*>(scratch);
    // A staged argument: the primitive's memory points at its copy in scratch, the user memory
    // at the caller's buffer.
    auto bind = [&](const Primitive::Impl::Stage& g, memory& m, const void*& cur, memory& user,
                    const void*& user_cur, const void* ptr) {
      if (g.on) {
        point(user, user_cur, ptr);
        point(m, cur, staged + g.offset);
      } else {
        point(m, cur, ptr);
      }
    };
    bind(p.stage_src, s.src, s.src_p, s.user_src, s.user_src_p, src);
    args[n++] = {DNNL_ARG_SRC, s.src.get()};
    bind(p.stage_dst, s.dst, s.dst_p, s.user_dst, s.user_dst_p, dst);
    args[n++] = {p.dst_arg, s.dst.get()};
    if (p.input_scale) {
      // The packed weights times S (`weights`) per input channel, into the scratch.
      float* scaled = reinterpret_cast<float*>(staged + p.scaled_offset);
      scale_packed_weights(p, weights, scaled);
      point(s.wei, s.wei_p, scaled);
      args[n++] = {p.wei_arg, s.wei.get()};
    } else if (p.has_weights) {
      bind(p.stage_wei, s.wei, s.wei_p, s.user_wei, s.user_wei_p,
           p.packed_weights ? p.packed.data() : weights);
      args[n++] = {p.wei_arg, s.wei.get()};
    }
    if (p.has_bias) {
      point(s.bias, s.bias_p, bias);
      args[n++] = {DNNL_ARG_BIAS, s.bias.get()};
    }
    if (p.onednn_scratch_bytes > 0) {
      point(s.scratch, s.scratch_p, scratch);
      args[n++] = {DNNL_ARG_SCRATCHPAD, s.scratch.get()};
    }
    if (p.has_sum) {
      if (!sum) return false;
      bind(p.stage_sum, s.sum, s.sum_p, s.user_sum, s.user_sum_p, sum);
      if (!p.sum_into_dst)
        args[n++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.sum_index) | DNNL_ARG_SRC_1, s.sum.get()};
    }
    if (p.has_dw) {
      args[n++] = {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, s.dw_wei.get()};
      args[n++] = {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, s.dw_bias.get()};
    }
    // oneDNN opens its region with this thread's OpenMP thread count; make it the team size the
    // primitive was created for (the executor thread of one team always runs the same size).
    if (omp_get_max_threads() != p.team_size) omp_set_num_threads(p.team_size);
    dnnl::stream& st = thread_stream();
    if (p.stage_src.on && !run_reorder(p.stage_src.reorder, st, s.user_src, s.src)) return false;
    if (p.stage_wei.on && !run_reorder(p.stage_wei.reorder, st, s.user_wei, s.wei)) return false;
    if (p.stage_sum.on && !run_reorder(p.stage_sum.reorder, st, s.user_sum, s.sum)) return false;
    // The C entry point takes a plain array (the C++ execute() copies its map into a vector).
    if (dnnl_primitive_execute(p.prim.get(), st.get(), n, args) != dnnl_success) return false;
    if (p.stage_dst.on && !run_reorder(p.stage_dst.reorder, st, s.dst, s.user_dst)) return false;
    return dnnl_stream_wait(st.get()) == dnnl_success;
  } catch (...) {
    return false;
  }
}

namespace {

// ConvSpec::input_scale: which input channel each packed weight belongs to, found by packing
// c + 1 in place of each weight (0 marks padding) with the weights' own reorder, in runs as
// long as the layout keeps one channel per aligned run; and the scratch for the scaled copy.
Status map_scaled_channels(Primitive::Impl& impl, const memory::desc& user_wei_md,
                           const float* const_weights) {
  const memory::dims d = user_wei_md.dims();
  if (d.size() != 4 || !const_weights)
    return Status::unsupported(
        "oneDNN convolution: an input scale needs group 1 and constant "
        "weights");
  const size_t bytes = impl.wei_md.get_size();
  if (!impl.packed_weights) {  // oneDNN computes in the plain layout: a copy to scale from
    impl.packed = Tensor(TensorDesc{DType::kF32, {static_cast<int64_t>((bytes + 3) / 4)}});
    std::memcpy(impl.packed.data(), const_weights, bytes);
    impl.packed_weights = true;
  }
  const int64_t per_m = d[1] * d[2] * d[3];
  std::vector<float> ids(static_cast<size_t>(d[0] * per_m));
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<float>(static_cast<int64_t>(i) % per_m / (d[2] * d[3]) + 1);
  std::vector<float> packed_ids((bytes + 3) / 4, 0.0f);
  memory user(user_wei_md, cpu_engine(), ids.data());
  memory packed(impl.wei_md, cpu_engine(), packed_ids.data());
  dnnl::stream& st = thread_stream();
  dnnl::reorder(user, packed).execute(st, user, packed);
  st.wait();
  int64_t run = 16;
  const int64_t count = static_cast<int64_t>(packed_ids.size());
  auto uniform = [&](int64_t k) {
    if (count % k != 0) return false;
    for (int64_t i = 0; i < count; i += k)
      for (int64_t j = 1; j < k; ++j)
        if (packed_ids[static_cast<size_t>(i + j)] != packed_ids[static_cast<size_t>(i)])
          return false;
    return true;
  };
  while (run > 1 && !uniform(run)) run /= 2;
  impl.scale_run = run;
  impl.scale_channel.resize(static_cast<size_t>(count / run));
  for (size_t r = 0; r < impl.scale_channel.size(); ++r)
    impl.scale_channel[r] = static_cast<int32_t>(packed_ids[r * static_cast<size_t>(run)]) - 1;
  impl.scaled_offset = (impl.scratch_bytes + 63) / 64 * 64;
  impl.scratch_bytes = impl.scaled_offset + bytes;
  return Status::ok();
}

// The caller's plain layouts of a staged primitive's src and dst (ConvSpec::staged).
struct UserLayouts {
  memory::desc src, dst;
};

// Shared tail of every make_*: check the implementation, pack constant weights, stage what
// `staged` asks for, size scratch.
template <typename PD, typename Prim>
Result<std::unique_ptr<Primitive>> finish(const PD& pd, std::unique_ptr<Primitive::Impl> impl,
                                          const memory::desc& user_wei_md,
                                          const float* const_weights, bool allow_ref,
                                          const std::string& what,
                                          const UserLayouts* staged = nullptr) {
  impl->impl = pd.impl_info_str();
  if (!allow_ref && impl->impl.rfind("ref", 0) == 0)
    return Status::unsupported("oneDNN offers only its reference implementation (" + impl->impl +
                               ") for this " + what);
  impl->src_md = pd.src_desc();
  impl->dst_md = pd.dst_desc();
  impl->scratch_md = pd.scratchpad_desc();
  impl->scratch_bytes = impl->onednn_scratch_bytes = impl->scratch_md.get_size();
  if (staged) {
    add_stage(*impl, impl->stage_src, staged->src, impl->src_md, true);
    add_stage(*impl, impl->stage_dst, staged->dst, impl->dst_md, false);
    if (impl->sum_into_dst) {  // Z into the staged dst, which the sum post-op reads
      if (!impl->stage_dst.on) return Status::internal("oneDNN convolution: Z without staged dst");
      Primitive::Impl::Stage& z = impl->stage_sum;
      z.on = true;
      z.user_md = staged->dst;
      z.offset = impl->stage_dst.offset;
      z.reorder = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpu_engine(), staged->dst, cpu_engine(), impl->dst_md));
    }
  }
  if (impl->has_weights) {
    impl->wei_md = pd.weights_desc();
    if (const_weights != nullptr && impl->wei_md != user_wei_md) {
      // Reorder the constant weights once into the layout the primitive chose.
      const size_t bytes = impl->wei_md.get_size();
      impl->packed = Tensor(TensorDesc{DType::kF32, {static_cast<int64_t>((bytes + 3) / 4)}});
      memory user(user_wei_md, cpu_engine(), const_cast<float*>(const_weights));
      memory packed(impl->wei_md, cpu_engine(), impl->packed.data());
      dnnl::stream& s = thread_stream();
      dnnl::reorder(user, packed).execute(s, user, packed);
      s.wait();
      impl->packed_weights = true;
    } else if (impl->wei_md != user_wei_md) {
      if (!staged)
        return Status::internal("oneDNN chose a weights layout other than the plain one requested");
      add_stage(*impl, impl->stage_wei, user_wei_md, impl->wei_md, true);
    }
    if (impl->input_scale)
      GRAPHI_RETURN_IF_ERROR(map_scaled_channels(*impl, user_wei_md, const_weights));
  }
  impl->prim = Prim(pd);
  for (ArgSlot& slot : impl->slots) make_slot(*impl, slot);
  if (verbose_dispatch())
    std::fprintf(stderr, "graphi: oneDNN %s: %s, %d threads, scratchpad %zu bytes%s%s%s\n",
                 what.c_str(), impl->impl.c_str(), impl->team_size, impl->scratch_bytes,
                 impl->packed_weights ? ", constant weights packed" : "",
                 impl->has_dw ? ", 3x3 depthwise conv fused" : "",
                 impl->stage_src.on || impl->stage_wei.on || impl->stage_dst.on
                     ? ", staged through scratch in oneDNN's layouts"
                     : "");
  return std::make_unique<Primitive>(std::move(impl));
}

// 4-D activations: plain NCHW, or oneDNN's channel-blocked nChw8c / nChw16c. 3-D (`vol`):
// ncdhw, or channels-last ndhwc.
memory::format_tag activation_tag(int block, bool vol = false, bool channels_last = false) {
  using tag = memory::format_tag;
  if (vol) return channels_last ? tag::ndhwc : tag::ncdhw;
  return block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : tag::nchw;
}

// A FusedConv activation as oneDNN eltwise post-ops (HardSigmoid: linear, then clip to [0, 1]).
void append_post_op(dnnl::post_ops& ops, const ConvPostOp& p) {
  using A = dnnl::algorithm;
  switch (p.kind) {
    case ConvActivation::kNone:
      return;
    case ConvActivation::kRelu:
      return ops.append_eltwise(1.0f, A::eltwise_relu, 0.0f, 0.0f);
    case ConvActivation::kLeakyRelu:
      return ops.append_eltwise(1.0f, A::eltwise_relu, p.alpha, 0.0f);
    case ConvActivation::kClip:
      return ops.append_eltwise(1.0f, A::eltwise_clip, p.alpha, p.beta);
    case ConvActivation::kSigmoid:
      return ops.append_eltwise(1.0f, A::eltwise_logistic, 0.0f, 0.0f);
    case ConvActivation::kTanh:
      return ops.append_eltwise(1.0f, A::eltwise_tanh, 0.0f, 0.0f);
    case ConvActivation::kHardSigmoid:
      ops.append_eltwise(1.0f, A::eltwise_linear, p.alpha, p.beta);
      return ops.append_eltwise(1.0f, A::eltwise_clip, 0.0f, 1.0f);
    case ConvActivation::kSwish:
      return ops.append_eltwise(1.0f, A::eltwise_swish, 1.0f, 0.0f);
    case ConvActivation::kHardSwish:
      return ops.append_eltwise(1.0f, A::eltwise_hardswish, 0.0f, 0.0f);
    case ConvActivation::kGelu:
      return ops.append_eltwise(1.0f, A::eltwise_gelu_erf, 0.0f, 0.0f);
    case ConvActivation::kGeluTanh:
      return ops.append_eltwise(1.0f, A::eltwise_gelu_tanh, 0.0f, 0.0f);
  }
}

dnnl::algorithm conv_algorithm(const ConvSpec& s) {
  return s.algorithm == ConvAlgorithm::kWinograd ? dnnl::algorithm::convolution_winograd
                                                 : dnnl::algorithm::convolution_direct;
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// ConvSpec::dw: checks that the fused primitive writes the depthwise output in the caller's
// blocked layout, and packs its constant weights (ONNX [oc, 1, 3, 3] = goihw with g = oc) into
// the layout oneDNN chose, and its bias (zeros when the conv has none), once.
Status pack_depthwise_post_op(const dnnl::convolution_forward::primitive_desc& pd,
                              const ConvSpec& s, Primitive::Impl& impl) {
  const int64_t dh = (s.oh - 1) / s.dw.stride + 1, dwd = (s.ow - 1) / s.dw.stride + 1;
  if (pd.dst_desc() != f32_desc({s.n, s.oc, dh, dwd}, activation_tag(s.dst_block)))
    return Status::unsupported("oneDNN convolution: the fused depthwise conv's output is not " +
                               std::to_string(s.dst_block) + "-channel blocked");
  impl.has_dw = true;
  impl.dw_wei_md =
      pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
  impl.dw_bias_md = pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS);
  if (impl.dw_bias_md != f32_desc({s.oc}, memory::format_tag::a))
    return Status::unsupported("oneDNN convolution: unexpected depthwise bias layout");
  impl.dw_wei =
      Tensor(TensorDesc{DType::kF32, {static_cast<int64_t>((impl.dw_wei_md.get_size() + 3) / 4)}});
  impl.dw_bias = Tensor(TensorDesc{DType::kF32, {s.oc}});
  float* bias = impl.dw_bias.data_as<float>();
  for (int64_t m = 0; m < s.oc; ++m) bias[m] = s.dw.bias ? s.dw.bias[m] : 0.0f;
  memory user(f32_desc({s.oc, 1, 1, 3, 3}, memory::format_tag::goihw), cpu_engine(),
              const_cast<float*>(s.dw.weights));
  memory packed(impl.dw_wei_md, cpu_engine(), impl.dw_wei.data());
  dnnl::stream& st = thread_stream();
  dnnl::reorder(user, packed).execute(st, user, packed);
  st.wait();
  return Status::ok();
}

// The primitives for a given team size; make_* below add the recipe of the 1-thread twin.
Result<std::unique_ptr<Primitive>> make_matmul_for(const MatMulSpec& spec, int team_size,
                                                   bool allow_ref) {
  try {
    ScopedOmpThreads threads(team_size);
    auto impl = std::make_unique<Primitive::Impl>();
    impl->team_size = team_size;
    impl->has_weights = true;
    impl->has_bias = spec.bias.has_value();
    const memory::desc user_wei = f32_desc(spec.weights);
    const memory::desc wei =
        spec.const_weights ? f32_desc(Dims(spec.weights.dims.begin(), spec.weights.dims.end()),
                                      memory::format_tag::any)
                           : user_wei;
    const memory::desc bias = impl->has_bias ? f32_desc(*spec.bias) : memory::desc();
    impl->bias_md = bias;
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (spec.output_scale != 1.0f) attr.set_output_scales(0, {spec.output_scale});
    if (spec.post.kind != ConvActivation::kNone) {
      dnnl::post_ops ops;
      append_post_op(ops, spec.post);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::desc d(f32_desc(spec.src), wei, bias, f32_desc(spec.dst));
    dnnl::matmul::primitive_desc pd(d, attr, cpu_engine());
    return finish<dnnl::matmul::primitive_desc, dnnl::matmul>(
        pd, std::move(impl), user_wei, spec.const_weights, allow_ref, "matmul");
  } catch (const dnnl::error& e) {
    return from_dnnl(e, "matmul");
  }
}

Result<std::unique_ptr<Primitive>> make_conv_for(const ConvSpec& s, int team_size, bool allow_ref) {
  const bool vol = s.d > 0;  // 3-D: ncdhw or ndhwc activations
  if (vol && (s.src_block || s.dst_block || s.dw.stride > 0 || s.input_scale))
    return Status::unsupported(
        "oneDNN convolution: a 3-D convolution takes no blocks, fused depthwise conv or input "
        "scale");
  if (s.channels_last && !vol)
    return Status::unsupported("oneDNN convolution: channels-last is for 3-D convolutions");
  try {
    ScopedOmpThreads threads(team_size);
    auto impl = std::make_unique<Primitive::Impl>();
    impl->team_size = team_size;
    impl->has_weights = true;
    impl->has_bias = s.has_bias;
    using tag = memory::format_tag;
    // [.., D,] H, W: the spatial dims of a 2-D spec, or of a 3-D one with the depth first.
    auto sp = [vol](int64_t d, int64_t h, int64_t w) { return vol ? Dims{d, h, w} : Dims{h, w}; };
    auto with = [](Dims lead, const Dims& spatial) {
      lead.insert(lead.end(), spatial.begin(), spatial.end());
      return lead;
    };
    // ONNX weights [OC, C/g, KH, KW] are oneDNN's goihw [g, OC/g, C/g, KH, KW] in the same bytes.
    const bool grouped = s.group > 1;
    const Dims kernel = sp(s.kd, s.kh, s.kw);
    const Dims wei_dims = grouped ? with({s.group, s.oc / s.group, s.c / s.group}, kernel)
                                  : with({s.oc, s.c}, kernel);
    const tag user_wei_tag =
        vol ? (grouped ? tag::goidhw : tag::oidhw) : (grouped ? tag::goihw : tag::oihw);
    const memory::desc user_wei = f32_desc(wei_dims, user_wei_tag);
    // Staged: the weights always; src and dst only when the caller's are plain (a blocked
    // activation is already what oneDNN's fast kernels read: with plain weights beside it,
    // oneDNN 2.6 has only its reference kernel, ~100x slower).
    const bool nhwc = s.algorithm == ConvAlgorithm::kChannelsLast;
    if (nhwc && (vol || !s.src_block || !s.dst_block || grouped || !s.const_weights ||
                 s.dw.stride > 0 || s.input_scale || s.staged))
      return Status::unsupported(
          "oneDNN convolution: NHWC compute is for 2-D group-1 convolutions with constant weights "
          "on blocked activations");
    const bool staged = s.staged || nhwc;
    const bool staged_act = staged && !s.src_block && !s.dst_block;
    const memory::desc wei = s.const_weights || staged ? f32_desc(wei_dims, tag::any) : user_wei;
    const Dims src_dims = with({s.n, s.c}, sp(s.d, s.h, s.w)),
               dst_dims = with({s.n, s.oc}, sp(s.od, s.oh, s.ow));
    const UserLayouts user{f32_desc(src_dims, activation_tag(s.src_block, vol, s.channels_last)),
                           f32_desc(dst_dims, activation_tag(s.dst_block, vol, s.channels_last))};
    const memory::desc src = nhwc         ? f32_desc(src_dims, tag::nhwc)
                             : staged_act ? f32_desc(src_dims, tag::any)
                                          : user.src;
    const memory::desc dst = nhwc         ? f32_desc(dst_dims, tag::nhwc)
                             : staged_act ? f32_desc(dst_dims, tag::any)
                                          : user.dst;
    const memory::desc bias = s.has_bias ? f32_desc({s.oc}, tag::a) : memory::desc();
    impl->bias_md = bias;
    // Weights given every run (training): forward_training, whose Winograd kernel takes plain
    // blocked weights and transforms them inside (forward_inference's wants them pre-transformed,
    // a separate reorder per run). oneDNN's dilation counts the holes: ONNX d is oneDNN d - 1.
    const auto prop =
        s.const_weights ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
    dnnl::convolution_forward::desc d(
        prop, conv_algorithm(s), src, wei, bias, dst, sp(s.stride_d, s.stride_h, s.stride_w),
        sp(s.dilation_d - 1, s.dilation_h - 1, s.dilation_w - 1),
        sp(s.pad_front, s.pad_top, s.pad_left), sp(s.pad_back, s.pad_bottom, s.pad_right));
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (s.sum_input && staged_act)
      return Status::unsupported(
          "oneDNN convolution: an added tensor Z needs the caller's dst layout");
    impl->has_sum = s.sum_input;
    if (s.input_scale && (staged || !s.const_weights || grouped))
      return Status::unsupported(
          "oneDNN convolution: an input scale needs constant weights, group 1, not staged");
    impl->input_scale = s.input_scale;
    const bool dw = s.dw.stride > 0;
    if (dw && (s.sum_input || staged || !s.dst_block || !s.const_weights || !s.dw.weights ||
               s.kh != 1 || s.kw != 1 || s.group != 1))
      return Status::unsupported(
          "oneDNN convolution: a fused depthwise conv needs a 1x1 conv with constant weights on "
          "blocked activations, without an added tensor Z");
    if (s.post.kind != ConvActivation::kNone || s.sum_input || dw) {
      dnnl::post_ops ops;
      const bool sum_last = s.sum_after_post && s.post.kind != ConvActivation::kNone;
      // Z: a binary-add post-op in the caller's dst layout; in NHWC a sum post-op on the staged
      // dst that holds Z (the brgemm kernels take no binary post-op).
      impl->sum_into_dst = s.sum_input && nhwc;
      auto add_z = [&] {
        if (impl->sum_into_dst)
          ops.append_sum(1.0f);
        else
          ops.append_binary(dnnl::algorithm::binary_add, user.dst);
      };
      if (s.sum_input && !sum_last) add_z();
      append_post_op(ops, s.post);
      if (s.sum_input && sum_last) {
        impl->sum_index = ops.len();  // after the activation's eltwise post-op(s)
        add_z();
      }
      if (dw) {
        using dt = memory::data_type;
        ops.append_dw(dt::f32, dt::f32, dt::f32, 3, s.dw.stride, 1, 0, {});
        append_post_op(ops, s.dw.post);
      }
      attr.set_post_ops(ops);
    }
    dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
    if (nhwc && std::string(pd.impl_info_str()).find("brg") == std::string::npos)
      return Status::unsupported(std::string("oneDNN convolution: no brgemm kernel in NHWC (") +
                                 pd.impl_info_str() + ")");
    if (dw) GRAPHI_RETURN_IF_ERROR(pack_depthwise_post_op(pd, s, *impl));
    return finish<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(
        pd, std::move(impl), user_wei, s.const_weights, allow_ref, "convolution",
        staged ? &user : nullptr);
  } catch (const dnnl::error& e) {
    return from_dnnl(e, "convolution");
  }
}

Result<std::unique_ptr<Primitive>> make_deconv_for(const ConvSpec& s, int team_size,
                                                   bool allow_ref) {
  if (s.group != 1 || s.src_block || s.dst_block || s.post.kind != ConvActivation::kNone ||
      s.sum_input || (s.channels_last && s.d == 0))
    return Status::unsupported(
        "oneDNN deconvolution: only group 1, NCHW / NCDHW / NDHWC, no activation");
  const bool vol = s.d > 0;  // 3-D: ncdhw or ndhwc, weights [oc, c, kd, kh, kw]
  try {
    ScopedOmpThreads threads(team_size);
    auto impl = std::make_unique<Primitive::Impl>();
    impl->team_size = team_size;
    impl->has_weights = true;
    impl->has_bias = s.has_bias;
    using tag = memory::format_tag;
    auto sp = [vol](int64_t d, int64_t h, int64_t w) { return vol ? Dims{d, h, w} : Dims{h, w}; };
    auto with = [](Dims lead, const Dims& spatial) {
      lead.insert(lead.end(), spatial.begin(), spatial.end());
      return lead;
    };
    // oneDNN's deconvolution weights are {OC = s.c, IC = s.oc, KH, KW}; the bytes [s.oc][s.c]
    // [KH][KW] are that with tag iohw (no copy, no reorder: the weights change every step).
    const Dims wei_dims = with({s.c, s.oc}, sp(s.kd, s.kh, s.kw));
    const Dims src_dims = with({s.n, s.oc}, sp(s.od, s.oh, s.ow)),
               dst_dims = with({s.n, s.c}, sp(s.d, s.h, s.w));
    const memory::desc user_wei = f32_desc(wei_dims, vol ? tag::iodhw : tag::iohw);
    const tag act = activation_tag(0, vol, s.channels_last);
    const UserLayouts user{f32_desc(src_dims, act), f32_desc(dst_dims, act)};
    const memory::desc src = s.staged ? f32_desc(src_dims, tag::any) : user.src;
    const memory::desc dst = s.staged ? f32_desc(dst_dims, tag::any) : user.dst;
    const memory::desc wei = s.staged || s.const_weights ? f32_desc(wei_dims, tag::any) : user_wei;
    const memory::desc bias = s.has_bias ? f32_desc({s.c}, tag::a) : memory::desc();
    impl->bias_md = bias;
    dnnl::deconvolution_forward::desc d(
        dnnl::prop_kind::forward_inference,
        s.algorithm == ConvAlgorithm::kWinograd ? dnnl::algorithm::deconvolution_winograd
                                                : dnnl::algorithm::deconvolution_direct,
        src, wei, bias, dst, sp(s.stride_d, s.stride_h, s.stride_w),
        sp(s.dilation_d - 1, s.dilation_h - 1, s.dilation_w - 1),
        sp(s.pad_front, s.pad_top, s.pad_left), sp(s.pad_back, s.pad_bottom, s.pad_right));
    dnnl::deconvolution_forward::primitive_desc pd(d, user_scratchpad_attr(), cpu_engine());
    return finish<dnnl::deconvolution_forward::primitive_desc, dnnl::deconvolution_forward>(
        pd, std::move(impl), user_wei, s.const_weights, allow_ref, "deconvolution",
        s.staged ? &user : nullptr);
  } catch (const dnnl::error& e) {
    return from_dnnl(e, "deconvolution");
  }
}

Result<std::unique_ptr<Primitive>> make_conv_bwd_weights_for(const ConvSpec& s, int team_size,
                                                             bool allow_ref) {
  if (s.group != 1 || s.src_block || s.dst_block || s.post.kind != ConvActivation::kNone ||
      s.has_bias || s.sum_input)
    return Status::unsupported(
        "oneDNN convolution backward-weights: only group 1, plain NCHW, no bias or ReLU");
  try {
    ScopedOmpThreads threads(team_size);
    auto impl = std::make_unique<Primitive::Impl>();
    impl->team_size = team_size;
    impl->has_weights = true;
    impl->wei_arg = DNNL_ARG_DIFF_DST;
    impl->dst_arg = DNNL_ARG_DIFF_WEIGHTS;
    using tag = memory::format_tag;
    const memory::desc user_src = f32_desc({s.n, s.c, s.h, s.w}, tag::nchw);
    const memory::desc user_wei = f32_desc({s.oc, s.c, s.kh, s.kw}, tag::oihw);
    const memory::desc user_dst = f32_desc({s.n, s.oc, s.oh, s.ow}, tag::nchw);
    auto pick = [&](const memory::desc& user, const Dims& dims) {
      return s.staged ? f32_desc(dims, tag::any) : user;
    };
    const memory::desc src = pick(user_src, {s.n, s.c, s.h, s.w});
    const memory::desc wei = pick(user_wei, {s.oc, s.c, s.kh, s.kw});
    const memory::desc dst = pick(user_dst, {s.n, s.oc, s.oh, s.ow});
    const Dims strides{s.stride_h, s.stride_w}, dil{s.dilation_h - 1, s.dilation_w - 1},
        pl{s.pad_top, s.pad_left}, pr{s.pad_bottom, s.pad_right};
    // The forward primitive descriptor is only oneDNN's hint for the backward one.
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, conv_algorithm(s), src,
                                       wei, dst, strides, dil, pl, pr);
    dnnl::convolution_forward::primitive_desc fpd(fd, cpu_engine());
    dnnl::convolution_backward_weights::desc d(conv_algorithm(s), src, wei, dst, strides, dil, pl,
                                               pr);
    dnnl::convolution_backward_weights::primitive_desc pd(d, user_scratchpad_attr(), cpu_engine(),
                                                          fpd);
    impl->impl = pd.impl_info_str();
    if (!allow_ref && impl->impl.rfind("ref", 0) == 0)
      return Status::unsupported("oneDNN offers only its reference implementation (" + impl->impl +
                                 ") for this convolution backward-weights");
    // Roles: src = X, "weights" = diff_dst (an input), dst = diff_weights (the output).
    impl->src_md = pd.src_desc();
    impl->wei_md = pd.diff_dst_desc();
    impl->dst_md = pd.diff_weights_desc();
    impl->scratch_md = pd.scratchpad_desc();
    impl->scratch_bytes = impl->onednn_scratch_bytes = impl->scratch_md.get_size();
    if (s.staged) {
      add_stage(*impl, impl->stage_src, user_src, impl->src_md, true);
      add_stage(*impl, impl->stage_wei, user_dst, impl->wei_md, true);
      add_stage(*impl, impl->stage_dst, user_wei, impl->dst_md, false);
    } else if (impl->src_md != user_src || impl->wei_md != user_dst || impl->dst_md != user_wei) {
      return Status::internal("oneDNN chose a layout other than the plain one requested");
    }
    impl->prim = dnnl::convolution_backward_weights(pd);
    for (ArgSlot& slot : impl->slots) make_slot(*impl, slot);
    if (verbose_dispatch())
      std::fprintf(stderr,
                   "graphi: oneDNN convolution backward-weights: %s, %d threads, "
                   "scratchpad %zu bytes\n",
                   impl->impl.c_str(), impl->team_size, impl->scratch_bytes);
    return std::make_unique<Primitive>(std::move(impl));
  } catch (const dnnl::error& e) {
    return from_dnnl(e, "convolution backward-weights");
  }
}

Result<std::unique_ptr<Primitive>> make_pool_for(const PoolSpec& s, int team_size, bool allow_ref) {
  const bool vol = s.d > 0;  // 3-D: ncdhw or ndhwc for the caller
  if (vol && s.block) return Status::unsupported("oneDNN pooling: a 3-D pooling takes no blocks");
  if (s.staged && !vol) return Status::unsupported("oneDNN pooling: only a 3-D pooling is staged");
  if (s.channels_last && !vol)
    return Status::unsupported("oneDNN pooling: channels-last is for 3-D pooling");
  try {
    ScopedOmpThreads threads(team_size);
    auto impl = std::make_unique<Primitive::Impl>();
    impl->team_size = team_size;
    auto sp = [vol](int64_t d, int64_t h, int64_t w) { return vol ? Dims{d, h, w} : Dims{h, w}; };
    Dims src_dims{s.n, s.c}, dst_dims{s.n, s.c};
    for (int64_t v : sp(s.d, s.h, s.w)) src_dims.push_back(v);
    for (int64_t v : sp(s.od, s.oh, s.ow)) dst_dims.push_back(v);
    const memory::format_tag act = activation_tag(s.block, vol, s.channels_last);
    const UserLayouts user{f32_desc(src_dims, act), f32_desc(dst_dims, act)};
    const memory::format_tag inner = s.staged ? memory::format_tag::nCdhw16c : act;
    const memory::desc src = f32_desc(src_dims, inner);
    const memory::desc dst = f32_desc(dst_dims, inner);
    const UserLayouts* stage = s.staged ? &user : nullptr;
    const dnnl::algorithm alg = s.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                : s.kind == PoolKind::kAvgIncludePad
                                    ? dnnl::algorithm::pooling_avg_include_padding
                                    : dnnl::algorithm::pooling_avg_exclude_padding;
    const Dims strides = sp(s.stride_d, s.stride_h, s.stride_w), kernel = sp(s.kd, s.kh, s.kw),
               pad_l = sp(s.pad_front, s.pad_top, s.pad_left),
               pad_r = sp(s.pad_back, s.pad_bottom, s.pad_right);
    if (s.dilation_d != 1 || s.dilation_h != 1 || s.dilation_w != 1) {
      // pooling_v2: oneDNN's pooling with dilation (which counts the holes: ONNX d - 1).
      dnnl::pooling_v2_forward::desc d(
          dnnl::prop_kind::forward_inference, alg, src, dst, strides, kernel,
          sp(s.dilation_d - 1, s.dilation_h - 1, s.dilation_w - 1), pad_l, pad_r);
      dnnl::pooling_v2_forward::primitive_desc pd(d, user_scratchpad_attr(), cpu_engine());
      return finish<dnnl::pooling_v2_forward::primitive_desc, dnnl::pooling_v2_forward>(
          pd, std::move(impl), memory::desc(), nullptr, allow_ref, "pooling", stage);
    }
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, strides,
                                  kernel, pad_l, pad_r);
    dnnl::pooling_forward::primitive_desc pd(d, user_scratchpad_attr(), cpu_engine());
    return finish<dnnl::pooling_forward::primitive_desc, dnnl::pooling_forward>(
        pd, std::move(impl), memory::desc(), nullptr, allow_ref, "pooling", stage);
  } catch (const dnnl::error& e) {
    return from_dnnl(e, "pooling");
  }
}

struct ReorderSpec {
  int64_t n, c, h, w;
  int block;
  bool to_blocked;
};

Result<std::unique_ptr<Primitive>> make_reorder_for(const ReorderSpec& s, int team_size,
                                                    bool allow_ref) {
  try {
    ScopedOmpThreads threads(team_size);
    auto impl = std::make_unique<Primitive::Impl>();
    impl->team_size = team_size;
    const memory::desc plain = f32_desc({s.n, s.c, s.h, s.w}, memory::format_tag::nchw);
    const memory::desc blocked = f32_desc({s.n, s.c, s.h, s.w}, activation_tag(s.block));
    const memory::desc& from = s.to_blocked ? plain : blocked;
    const memory::desc& to = s.to_blocked ? blocked : plain;
    dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to, user_scratchpad_attr());
    return finish<dnnl::reorder::primitive_desc, dnnl::reorder>(pd, std::move(impl), memory::desc(),
                                                                nullptr, allow_ref, "reorder");
  } catch (const dnnl::error& e) {
    return from_dnnl(e, "reorder");
  }
}

// The primitive for `team_size`, with the recipe of its 1-thread twin (Primitive::execute).
template <typename Spec, typename Make>
Result<std::unique_ptr<Primitive>> with_twin(const Spec& spec, int team_size, bool allow_ref,
                                             Make make) {
  Result<std::unique_ptr<Primitive>> r = make(spec, team_size, allow_ref);
  if (r.is_ok() && team_size > 1)
    (*r)->make_twin = [spec, allow_ref, make] { return make(spec, 1, allow_ref); };
  return r;
}

}  // namespace

void fail_output(const char* kernel, float* y, int64_t count) noexcept {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr, "graphi: %s: oneDNN execution failed; output set to NaN\n", kernel);
  std::fill(y, y + count, std::numeric_limits<float>::quiet_NaN());
}

Result<std::unique_ptr<Primitive>> make_matmul(const MatMulSpec& spec, int team_size,
                                               bool allow_ref) {
  return with_twin(spec, team_size, allow_ref, make_matmul_for);
}

Result<std::unique_ptr<Primitive>> make_conv(const ConvSpec& spec, int team_size, bool allow_ref) {
  return with_twin(spec, team_size, allow_ref, make_conv_for);
}

Result<std::unique_ptr<Primitive>> make_pool(const PoolSpec& spec, int team_size, bool allow_ref) {
  return with_twin(spec, team_size, allow_ref, make_pool_for);
}

Result<std::unique_ptr<Primitive>> make_layout_reorder(int64_t n, int64_t c, int64_t h, int64_t w,
                                                       int block, bool to_blocked, int team_size) {
  if (block != 8 && block != 16) return Status::unsupported("reorder: block must be 8 or 16");
  return with_twin(ReorderSpec{n, c, h, w, block, to_blocked}, team_size, false, make_reorder_for);
}

Result<std::unique_ptr<Primitive>> make_deconv(const ConvSpec& spec, int team_size,
                                               bool allow_ref) {
  return with_twin(spec, team_size, allow_ref, make_deconv_for);
}

Result<std::unique_ptr<Primitive>> make_conv_bwd_weights(const ConvSpec& spec, int team_size,
                                                         bool allow_ref) {
  return with_twin(spec, team_size, allow_ref, make_conv_bwd_weights_for);
}

std::vector<double> best_run_ms(const std::vector<const Primitive*>& prims, int min_rounds,
                                double min_ms, int max_rounds) {
  if (prims.empty() || omp_in_parallel()) return {};
  // One buffer per role, as large as the largest primitive's user-side argument.
  size_t src = 0, wei = 0, bias = 0, dst = 0, scratch = 0;
  for (const Primitive* p : prims) {
    const Primitive::Impl& i = *p->impl_;
    if (i.team_size > omp_get_num_procs()) return {};
    src = std::max(src, i.user_src_md().get_size());
    dst = std::max(dst, i.user_dst_md().get_size());
    if (i.has_weights)
      wei = std::max(wei, (i.stage_wei.on ? i.stage_wei.user_md : i.wei_md).get_size());
    if (i.has_bias) bias = std::max(bias, i.bias_md.get_size());
    scratch = std::max(scratch, i.scratch_bytes);
  }
  try {
    auto zeros = [](size_t bytes) {  // 64-byte aligned, as the engine's buffers are
      return Tensor(TensorDesc{DType::kF32, {static_cast<int64_t>((bytes + 3) / 4 + 1)}});
    };
    Tensor s = zeros(src), w = zeros(wei), b = zeros(bias), d = zeros(dst), sc = zeros(scratch),
           z = zeros(dst);  // a ConvSpec::sum_input's Z has dst's layout
    std::vector<double> best(prims.size(), std::numeric_limits<double>::infinity());
    const auto start = std::chrono::steady_clock::now();
    auto elapsed_ms = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
    };
    for (int round = 0; round <= min_rounds || (round <= max_rounds && elapsed_ms() < min_ms);
         ++round) {
      for (size_t k = 0; k < prims.size(); ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        if (!prims[k]->run(s.data_as<float>(), w.data_as<float>(), b.data_as<float>(),
                           d.data_as<float>(), sc.data(), z.data_as<float>()))
          return {};
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (round > 0) best[k] = std::min(best[k], ms);  // round 0 warms up
      }
    }
    return best;
  } catch (const std::bad_alloc&) {
    return {};
  }
}

int preferred_activation_block() {
  // The ISA oneDNN dispatches to (DNNL_MAX_CPU_ISA caps it).
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? 16 : 8;
}

bool prefers_channels_last_3d() {
  static const bool answer = [] {
    try {
      using tag = memory::format_tag;
      const Dims src{1, 64, 8, 28, 28}, wei{64, 64, 3, 3, 3};
      dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          f32_desc(src, tag::any), f32_desc(wei, tag::any), memory::desc(), f32_desc(src, tag::any),
          {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {1, 1, 1});
      dnnl::convolution_forward::primitive_desc pd(d, cpu_engine());
      return pd.src_desc() == f32_desc(src, tag::ndhwc);
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return answer;
}

std::string version_string() {
  const dnnl_version_t* v = dnnl::version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (cpu runtime " +
         (v->cpu_runtime == DNNL_RUNTIME_OMP ? std::string("OMP")
                                             : std::to_string(v->cpu_runtime)) +
         ")";
}

}  // namespace graphi::ops::onednn
