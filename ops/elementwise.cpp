// Elementwise ops: Add, Sub, Mul, Div (numpy broadcasting), Sigmoid, Tanh, Relu. f32 only.
// Kernels split the flat output over the team in 64-byte blocks (no two threads write one cache
// line); binary ops walk a merged-dims broadcast plan (ops/broadcast.h) whose inner loops have
// unit or zero strides, so the compiler vectorizes them; the loops are compiled per ISA
// (ops/elementwise_simd.h) and chosen once at init.
#include <cmath>

#include "ops/activations.h"
#include "ops/broadcast.h"
#include "ops/elementwise_simd.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"
// Last: the loop templates, compiled here for the baseline target.
#include "ops/elementwise_loops.h"

namespace graphi::ops {
namespace {

constexpr int64_t kBlock = 16;  // floats per 64-byte cache line

// Thread ithr's [begin, end) of n elements, split in whole cache lines.
std::pair<int64_t, int64_t> block_range(int64_t n, int ithr, int nthr) {
  auto [b, e] = team_range((n + kBlock - 1) / kBlock, ithr, nthr);
  return {std::min(n, b * kBlock), std::min(n, e * kBlock)};
}

// ---- binary ----

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(BinaryKind kind, const char* name) : kind_(kind), name_(name) {}

  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 2 || !ctx.inputs[0] || !ctx.inputs[1] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 2 inputs and 1 output");
    for (const TensorDesc* d : {ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]})
      if (d->dtype != DType::kF32)
        return Status::unsupported("float32 only, got " + d->to_string());
    GRAPHI_ASSIGN_OR_RETURN(plan_, make_broadcast_plan(ctx.where, ctx.outputs[0]->shape,
                                                       ctx.inputs[0]->shape, ctx.inputs[1]->shape));
    merge_periodic_inner(plan_);  // blocked tensor x per-channel vector: long runs, not 16-long
    fn_ = active_eltwise_loops().binary[static_cast<int>(kind_)];
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = block_range(plan_.numel, team.ithr, team.nthr);
    fn_(plan_, static_cast<const float*>(io.inputs[0]), static_cast<const float*>(io.inputs[1]),
        static_cast<float*>(io.outputs[0]), begin, end);
  }
  const char* name() const override { return name_; }

 private:
  BinaryKind kind_;
  const char* name_;
  BroadcastPlan plan_;
  BinaryRangeFn fn_ = nullptr;
};

Result<std::vector<TensorDesc>> infer_binary(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "A", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "B", {DType::kF32}));
  GRAPHI_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.where, v.in(0).shape, v.in(1).shape));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, std::move(out)}};
}

CostHint cost_binary(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  return {static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + in[1]->bytes() + out[0]->bytes())};
}

// ---- unary ----

// Within a few ulp for all x: exp never overflows because its argument is -|x| <= 0, so large
// |x| gives 0 or 1 instead of inf/inf; NaN falls through to the second branch and stays NaN.
void sigmoid_loop(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = src[i];
    if (x >= 0.0f) {
      dst[i] = 1.0f / (1.0f + std::exp(-x));
    } else {
      const float e = std::exp(x);
      dst[i] = e / (1.0f + e);
    }
  }
}

void tanh_loop(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = std::tanh(src[i]);
}

using UnaryFn = void (*)(const float* src, float* dst, int64_t n);

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(UnaryFn fn, const char* name) : fn_(fn), name_(name) {}
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 1 || !ctx.inputs[0] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 1 input and 1 output");
    if (ctx.inputs[0]->dtype != DType::kF32) return Status::unsupported("float32 only");
    numel_ = ctx.outputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = block_range(numel_, team.ithr, team.nthr);
    if (begin < end)
      fn_(static_cast<const float*>(io.inputs[0]) + begin,
          static_cast<float*>(io.outputs[0]) + begin, end - begin);
  }
  const char* name() const override { return name_; }

 private:
  UnaryFn fn_;
  const char* name_;
  int64_t numel_ = 0;
};

Result<std::vector<TensorDesc>> infer_unary(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  return std::vector<TensorDesc>{v.in(0)};
}

// Flops per element of the transcendental ops: exp/tanh cost about as much as ~8 FMAs in a
// polynomial evaluation; the hint only has to rank ops against each other.
template <int kFlopsPerElement>
CostHint cost_unary(const graph::Node&, std::span<const TensorDesc* const> in,
                    std::span<const TensorDesc* const> out) {
  return {static_cast<double>(kFlopsPerElement * out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

template <BinaryKind K>
std::unique_ptr<Kernel> make_binary() {
  static constexpr const char* kNames[] = {"add_f32", "sub_f32", "mul_f32", "div_f32"};
  return std::make_unique<BinaryKernel>(K, kNames[static_cast<int>(K)]);
}
// SIMD paths first (ops/activations.h: <= 1e-6 absolute error, exact limits, NaN kept), the
// libm loops as the reference-grade fallback.
std::unique_ptr<Kernel> make_sigmoid_simd() {
  return std::make_unique<UnaryKernel>(sigmoid_f32, "sigmoid_simd");
}
std::unique_ptr<Kernel> make_tanh_simd() {
  return std::make_unique<UnaryKernel>(tanh_f32, "tanh_simd");
}
std::unique_ptr<Kernel> make_sigmoid() {
  return std::make_unique<UnaryKernel>(sigmoid_loop, "sigmoid_libm");
}
std::unique_ptr<Kernel> make_tanh() {
  return std::make_unique<UnaryKernel>(tanh_loop, "tanh_libm");
}
std::unique_ptr<Kernel> make_relu() {
  return std::make_unique<UnaryKernel>(active_eltwise_loops().relu, "relu_f32");
}

}  // namespace

namespace detail {
// Defined in ops/elementwise_avx2.cpp and ops/elementwise_avx512.cpp.
extern const EltwiseLoops kEltwiseLoopsAvx2;
extern const EltwiseLoops kEltwiseLoopsAvx512;
}  // namespace detail

const EltwiseLoops* eltwise_loops(SimdIsa isa) {
  static const EltwiseLoops kBaseline = make_eltwise_loops(SimdIsa::kScalar);
  if (!simd_isa_supported(isa)) return nullptr;
  switch (isa) {
    case SimdIsa::kScalar:
      return &kBaseline;
    case SimdIsa::kAvx2:
      return &detail::kEltwiseLoopsAvx2;
    case SimdIsa::kAvx512:
      return &detail::kEltwiseLoopsAvx512;
  }
  return nullptr;
}

const EltwiseLoops& active_eltwise_loops() {
  static const EltwiseLoops* loops = eltwise_loops(active_simd_isa());  // thread-safe init
  return *loops;
}

void register_elementwise_ops(Registry& r) {
  r.add({"Add", infer_binary, cost_binary, false, {make_binary<BinaryKind::kAdd>}});
  r.add({"Sub", infer_binary, cost_binary, false, {make_binary<BinaryKind::kSub>}});
  r.add({"Mul", infer_binary, cost_binary, false, {make_binary<BinaryKind::kMul>}});
  r.add({"Div", infer_binary, cost_binary, false, {make_binary<BinaryKind::kDiv>}});
  r.add({"Sigmoid", infer_unary, cost_unary<8>, false, {make_sigmoid_simd, make_sigmoid}});
  r.add({"Tanh", infer_unary, cost_unary<8>, false, {make_tanh_simd, make_tanh}});
  r.add({"Relu", infer_unary, cost_unary<1>, false, {make_relu}});
}

}  // namespace graphi::ops
