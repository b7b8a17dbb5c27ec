// Elementwise ops: Add, Sub, Mul, Div (numpy broadcasting), Sigmoid, Tanh, Relu. f32 only.
// Kernels split the flat output over the team in 64-byte blocks (no two threads write one cache
// line); binary ops walk a merged-dims broadcast plan (ops/broadcast.h) whose inner loops have
// unit or zero strides, so the compiler vectorizes them.
#include <cmath>

#include "ops/activations.h"
#include "ops/broadcast.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

constexpr int64_t kBlock = 16;  // floats per 64-byte cache line

// Thread ithr's [begin, end) of n elements, split in whole cache lines.
std::pair<int64_t, int64_t> block_range(int64_t n, int ithr, int nthr) {
  auto [b, e] = team_range((n + kBlock - 1) / kBlock, ithr, nthr);
  return {std::min(n, b * kBlock), std::min(n, e * kBlock)};
}

// ---- binary ----

enum class BinaryKind { kAdd, kSub, kMul, kDiv };

template <BinaryKind K>
inline float apply(float x, float y) {
  if constexpr (K == BinaryKind::kAdd) return x + y;
  if constexpr (K == BinaryKind::kSub) return x - y;
  if constexpr (K == BinaryKind::kMul) return x * y;
  if constexpr (K == BinaryKind::kDiv) return x / y;
}

// One run of the broadcast plan; each operand's step is 1 (walks) or 0 (held).
template <BinaryKind K>
void binary_run(float* dst, const float* a, const float* b, int64_t n, int64_t sa, int64_t sb) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = apply<K>(a[i], b[i]);
  } else if (sa == 1) {
    const float y = b[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = apply<K>(a[i], y);
  } else if (sb == 1) {
    const float x = a[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = apply<K>(x, b[i]);
  } else {
    const float v = apply<K>(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  }
}

template <BinaryKind K>
void binary_range(const BroadcastPlan& p, const float* a, const float* b, float* dst, int64_t begin,
                  int64_t end) {
  if (p.rank == 1) {  // same shape, or a scalar operand: one flat loop
    binary_run<K>(dst + begin, a + begin * p.a_strides[0], b + begin * p.b_strides[0], end - begin,
                  p.a_strides[0], p.b_strides[0]);
    return;
  }
  for_each_broadcast_run(p, a, b, dst, begin, end, binary_run<K>);
}

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(BinaryKind kind, const char* name) : kind_(kind), name_(name) {}

  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 2 || !ctx.inputs[0] || !ctx.inputs[1] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 2 inputs and 1 output");
    for (const TensorDesc* d : {ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]})
      if (d->dtype != DType::kF32) return Status::unsupported("float32 only, got " + d->to_string());
    GRAPHI_ASSIGN_OR_RETURN(plan_, make_broadcast_plan(ctx.where, ctx.outputs[0]->shape,
                                                       ctx.inputs[0]->shape, ctx.inputs[1]->shape));
    switch (kind_) {
      case BinaryKind::kAdd: fn_ = binary_range<BinaryKind::kAdd>; break;
      case BinaryKind::kSub: fn_ = binary_range<BinaryKind::kSub>; break;
      case BinaryKind::kMul: fn_ = binary_range<BinaryKind::kMul>; break;
      case BinaryKind::kDiv: fn_ = binary_range<BinaryKind::kDiv>; break;
    }
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = block_range(plan_.numel, team.ithr, team.nthr);
    fn_(plan_, static_cast<const float*>(io.inputs[0]), static_cast<const float*>(io.inputs[1]),
        static_cast<float*>(io.outputs[0]), begin, end);
  }
  const char* name() const override { return name_; }

 private:
  using RangeFn = void (*)(const BroadcastPlan&, const float*, const float*, float*, int64_t, int64_t);
  BinaryKind kind_;
  const char* name_;
  BroadcastPlan plan_;
  RangeFn fn_ = nullptr;
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

// Exact to float rounding for all x: exp never overflows because its argument is -|x| <= 0, so
// large |x| gives 0 or 1 instead of inf/inf; NaN falls through to the second branch and stays NaN.
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

// x < 0 ? 0 : x keeps NaN (as numpy.maximum(x, 0) does) and vectorizes to a compare + blend.
void relu_loop(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] < 0.0f ? 0.0f : src[i];
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
      fn_(static_cast<const float*>(io.inputs[0]) + begin, static_cast<float*>(io.outputs[0]) + begin,
          end - begin);
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
std::unique_ptr<Kernel> make_sigmoid_simd() { return std::make_unique<UnaryKernel>(sigmoid_f32, "sigmoid_simd"); }
std::unique_ptr<Kernel> make_tanh_simd() { return std::make_unique<UnaryKernel>(tanh_f32, "tanh_simd"); }
std::unique_ptr<Kernel> make_sigmoid() { return std::make_unique<UnaryKernel>(sigmoid_loop, "sigmoid_libm"); }
std::unique_ptr<Kernel> make_tanh() { return std::make_unique<UnaryKernel>(tanh_loop, "tanh_libm"); }
std::unique_ptr<Kernel> make_relu() { return std::make_unique<UnaryKernel>(relu_loop, "relu_f32"); }

}  // namespace

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
