// Comparisons, logic and selection with numpy broadcasting: Equal, Less, LessOrEqual, Greater,
// GreaterOrEqual, And, Or, Xor, Not, Where, and the binary Max and Min.
//
// graphi has no bool dtype: a boolean tensor is float32 holding 0 (false) or 1 (true). The
// comparisons take float32, int32 or int64 operands (both the same) and write float32 0/1;
// And/Or/Xor/Not read any non-zero float as true and write 0/1; Where's condition is such a
// float32 mask. The ONNX importer keeps track of which float32 values stand for ONNX BOOL
// tensors (graph/onnx/onnx_import.cpp). Max/Min: float32, NaN propagates (as numpy.maximum).
#include <cmath>
#include <cstring>

#include "ops/broadcast.h"
#include "ops/broadcast_walk.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Logic {
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor,
  kMax,
  kMin
};

constexpr bool is_compare(Logic k) { return k <= Logic::kGreaterOrEqual; }

template <typename T>
float compare(Logic k, T a, T b) {
  switch (k) {
    case Logic::kEqual:
      return a == b ? 1.0f : 0.0f;
    case Logic::kLess:
      return a < b ? 1.0f : 0.0f;
    case Logic::kLessOrEqual:
      return a <= b ? 1.0f : 0.0f;
    case Logic::kGreater:
      return a > b ? 1.0f : 0.0f;
    default:
      return a >= b ? 1.0f : 0.0f;
  }
}

float logic(Logic k, float a, float b) {
  const bool x = a != 0.0f, y = b != 0.0f;
  switch (k) {
    case Logic::kAnd:
      return x && y ? 1.0f : 0.0f;
    case Logic::kOr:
      return x || y ? 1.0f : 0.0f;
    case Logic::kXor:
      return x != y ? 1.0f : 0.0f;
    case Logic::kMax:
      return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    default:
      return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  }
}

template <Logic K>
Result<std::vector<TensorDesc>> infer_logic(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  if constexpr (is_compare(K)) {
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "A", {DType::kF32, DType::kI32, DType::kI64}));
    GRAPHI_RETURN_IF_ERROR(expect_same_dtype(v, 0, 2));
  } else {
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "A", {DType::kF32}));
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "B", {DType::kF32}));
  }
  GRAPHI_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.where, v.in(0).shape, v.in(1).shape));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, std::move(out)}};
}

CostHint cost_elementwise(const graph::Node&, std::span<const TensorDesc* const> in,
                          std::span<const TensorDesc* const> out) {
  double bytes = static_cast<double>(out[0]->bytes());
  for (const TensorDesc* d : in)
    if (d) bytes += static_cast<double>(d->bytes());
  return {static_cast<double>(out[0]->numel()), bytes};
}

constexpr int64_t kBlock = 16;  // output elements per cache line (float32)

// K is a template argument so each run's inner loop is one comparison the compiler vectorizes.
template <Logic K>
class LogicKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 2 || !ctx.inputs[0] || !ctx.inputs[1] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 2 inputs and 1 output");
    dtype_ = ctx.inputs[0]->dtype;
    numel_ = ctx.outputs[0]->numel();
    GRAPHI_ASSIGN_OR_RETURN(plan_, make_broadcast_plan(ctx.where, ctx.outputs[0]->shape,
                                                       ctx.inputs[0]->shape, ctx.inputs[1]->shape));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [b, e] = team_range((numel_ + kBlock - 1) / kBlock, team.ithr, team.nthr);
    const int64_t begin = std::min(numel_, b * kBlock), end = std::min(numel_, e * kBlock);
    float* y = static_cast<float*>(io.outputs[0]);
    if constexpr (!is_compare(K)) {
      const auto* a = static_cast<const float*>(io.inputs[0]);
      const auto* c = static_cast<const float*>(io.inputs[1]);
      for_each_broadcast_element<2>(plan_, begin, end, [&](int64_t i, const int64_t* off) {
        y[i] = logic(K, a[off[0]], c[off[1]]);
      });
    } else if (dtype_ == DType::kF32) {
      typed<float>(io, y, begin, end);
    } else if (dtype_ == DType::kI32) {
      typed<int32_t>(io, y, begin, end);
    } else {
      typed<int64_t>(io, y, begin, end);
    }
  }
  const char* name() const override { return "logic_broadcast"; }

 private:
  template <typename T>
  void typed(const Buffers& io, float* y, int64_t begin, int64_t end) const {
    const auto* a = static_cast<const T*>(io.inputs[0]);
    const auto* c = static_cast<const T*>(io.inputs[1]);
    for_each_broadcast_element<2>(plan_, begin, end, [&](int64_t i, const int64_t* off) {
      y[i] = compare<T>(K, a[off[0]], c[off[1]]);
    });
  }
  DType dtype_ = DType::kF32;
  int64_t numel_ = 0;
  BroadcastPlan plan_;
};

template <Logic K>
std::unique_ptr<Kernel> make_logic() {
  return std::make_unique<LogicKernel<K>>();
}

template <Logic K>
OpDef logic_def(const char* type) {
  return OpDef{type, infer_logic<K>, cost_elementwise, false, {make_logic<K>}};
}

// Not: 1 where x == 0.
Result<std::vector<TensorDesc>> infer_not(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  return std::vector<TensorDesc>{v.in(0)};
}

class NotKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 1 || !ctx.inputs[0] || ctx.inputs[0]->dtype != DType::kF32)
      return Status::unsupported("expects one float32 input");
    numel_ = ctx.outputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(numel_, team.ithr, team.nthr);
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] == 0.0f ? 1.0f : 0.0f;
  }
  const char* name() const override { return "not_f32"; }

 private:
  int64_t numel_ = 0;
};

std::unique_ptr<Kernel> make_not() { return std::make_unique<NotKernel>(); }

// Where(condition, X, Y): X where condition != 0, else Y; three-way broadcasting.
Result<std::vector<TensorDesc>> infer_where(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 3, 3));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "condition", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "X", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_same_dtype(v, 1, 3));
  GRAPHI_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(ctx.where, v.in(0).shape, v.in(1).shape));
  GRAPHI_ASSIGN_OR_RETURN(s, broadcast_shapes(ctx.where, s, v.in(2).shape));
  return std::vector<TensorDesc>{TensorDesc{v.in(1).dtype, std::move(s)}};
}

class WhereKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 3 || !ctx.inputs[0] || !ctx.inputs[1] || !ctx.inputs[2])
      return Status::unsupported("expects 3 inputs");
    elem_ = dtype_size(ctx.outputs[0]->dtype);
    numel_ = ctx.outputs[0]->numel();
    GRAPHI_ASSIGN_OR_RETURN(
        plan_, make_broadcast_plan(ctx.where, ctx.outputs[0]->shape, ctx.inputs[0]->shape,
                                   ctx.inputs[1]->shape, ctx.inputs[2]->shape));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [b, e] = team_range((numel_ + kBlock - 1) / kBlock, team.ithr, team.nthr);
    const int64_t begin = std::min(numel_, b * kBlock), end = std::min(numel_, e * kBlock);
    if (elem_ == 4)
      select<uint32_t>(io, begin, end);
    else
      select<uint64_t>(io, begin, end);
  }
  const char* name() const override { return "where_broadcast"; }

 private:
  // T: a same-size stand-in for the value dtype (the select only copies).
  template <typename T>
  void select(const Buffers& io, int64_t begin, int64_t end) const {
    const auto* c = static_cast<const float*>(io.inputs[0]);
    const auto* x = static_cast<const T*>(io.inputs[1]);
    const auto* y = static_cast<const T*>(io.inputs[2]);
    auto* out = static_cast<T*>(io.outputs[0]);
    for_each_broadcast_element<3>(plan_, begin, end, [&](int64_t i, const int64_t* off) {
      const T xv = x[off[1]], yv = y[off[2]];  // both loads, so the select vectorizes
      out[i] = c[off[0]] != 0.0f ? xv : yv;
    });
  }
  size_t elem_ = 4;
  int64_t numel_ = 0;
  BroadcastPlan plan_;
};

std::unique_ptr<Kernel> make_where() { return std::make_unique<WhereKernel>(); }

}  // namespace

void register_logic_ops(Registry& r) {
  r.add(logic_def<Logic::kEqual>("Equal"));
  r.add(logic_def<Logic::kLess>("Less"));
  r.add(logic_def<Logic::kLessOrEqual>("LessOrEqual"));
  r.add(logic_def<Logic::kGreater>("Greater"));
  r.add(logic_def<Logic::kGreaterOrEqual>("GreaterOrEqual"));
  r.add(logic_def<Logic::kAnd>("And"));
  r.add(logic_def<Logic::kOr>("Or"));
  r.add(logic_def<Logic::kXor>("Xor"));
  r.add(logic_def<Logic::kMax>("Max"));
  r.add(logic_def<Logic::kMin>("Min"));
  r.add({"Not", infer_not, cost_elementwise, false, {make_not}});
  r.add({"Where", infer_where, cost_elementwise, false, {make_where}});
}

}  // namespace graphi::ops
