// Integer arithmetic with numpy broadcasting, for the index math PyTorch exports run on token
// ids at run time (ids * 3 + 1, ids % vocab, position ids):
// - Mod (ONNX): int32/int64 with fmod = 0 (result has the divisor's sign, Python's %) or
//   fmod = 1 (the dividend's sign, C's %); float32 with fmod = 1 (std::fmod) or fmod = 0
//   (opset 28: A - floor(A / B) * B, the divisor's sign, a zero signed like B).
// - IntBinary (graphi's, attribute op = "Add" | "Sub" | "Mul" | "Div" | "Max" | "Min"): what the
//   ONNX importer emits for Add/Sub/Mul/Div/Max/Min whose operands are int32/int64 at run time
//   (graphi's Add..Div, Max, Min are float32), and what it builds integer Neg, Abs, Sign and Clip
//   from (graph/onnx/import_elementwise.cpp). Wraps modulo 2^64 (2^32) like numpy; Div truncates
//   toward zero (ONNX/C).
// Division or Mod by zero gives 0 and fails the run naming the node (never a SIGFPE).
#include <cmath>

#include "ops/broadcast.h"
#include "ops/broadcast_walk.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class IntOp { kAdd, kSub, kMul, kDiv, kMax, kMin, kMod, kFmod };

Result<IntOp> int_op_of(const graph::Node& node, const std::string& where) {
  if (node.op == "Mod") {
    GRAPHI_ASSIGN_OR_RETURN(int64_t fmod, graph::attr_int(node.attrs, where, "fmod", 0));
    return fmod != 0 ? IntOp::kFmod : IntOp::kMod;
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string op, graph::attr_string(node.attrs, where, "op", ""));
  if (op == "Add") return IntOp::kAdd;
  if (op == "Sub") return IntOp::kSub;
  if (op == "Mul") return IntOp::kMul;
  if (op == "Div") return IntOp::kDiv;
  if (op == "Max") return IntOp::kMax;
  if (op == "Min") return IntOp::kMin;
  return Status::invalid_graph(where + ": attribute 'op' = '" + op +
                               "' is not one of Add, Sub, Mul, Div, Max, Min");
}

Result<std::vector<TensorDesc>> infer_int(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_ASSIGN_OR_RETURN(IntOp op, int_op_of(ctx.node, ctx.where));
  if (op == IntOp::kFmod || op == IntOp::kMod)
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "A", {DType::kF32, DType::kI32, DType::kI64}));
  else
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "A", {DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_same_dtype(v, 0, 2));
  GRAPHI_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.where, v.in(0).shape, v.in(1).shape));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, std::move(out)}};
}

CostHint cost_int(const graph::Node&, std::span<const TensorDesc* const> in,
                  std::span<const TensorDesc* const> out) {
  return {static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + in[1]->bytes() + out[0]->bytes())};
}

// Wrapping arithmetic through the unsigned type (signed overflow is undefined in C++).
template <typename T>
T apply(IntOp op, T a, T b, bool& div0) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case IntOp::kAdd:
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case IntOp::kSub:
      return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    case IntOp::kMul:
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case IntOp::kMax:
      return a < b ? b : a;
    case IntOp::kMin:
      return b < a ? b : a;
    default:
      break;
  }
  if (b == 0) {
    div0 = true;
    return 0;
  }
  if (b == -1) {  // min / -1 overflows: wrap like numpy
    if (op == IntOp::kDiv) return static_cast<T>(U(0) - static_cast<U>(a));
    return 0;
  }
  if (op == IntOp::kDiv) return a / b;
  T r = a % b;  // C: sign of a
  if (op == IntOp::kMod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

class IntKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 2 || !ctx.inputs[0] || !ctx.inputs[1])
      return Status::unsupported("expects 2 inputs");
    GRAPHI_ASSIGN_OR_RETURN(op_, int_op_of(ctx.node, ctx.where));
    dtype_ = ctx.inputs[0]->dtype;
    numel_ = ctx.outputs[0]->numel();
    GRAPHI_ASSIGN_OR_RETURN(plan_, make_broadcast_plan(ctx.where, ctx.outputs[0]->shape,
                                                       ctx.inputs[0]->shape, ctx.inputs[1]->shape));
    where_ = ctx.where;
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(numel_, team.ithr, team.nthr);
    bool div0 = false;
    if (dtype_ == DType::kI64) {
      typed<int64_t>(io, begin, end, div0);
    } else if (dtype_ == DType::kI32) {
      typed<int32_t>(io, begin, end, div0);
    } else if (op_ == IntOp::kFmod) {  // float32
      const auto* a = static_cast<const float*>(io.inputs[0]);
      const auto* b = static_cast<const float*>(io.inputs[1]);
      auto* y = static_cast<float*>(io.outputs[0]);
      for_each_broadcast_element<2>(plan_, begin, end, [&](int64_t i, const int64_t* off) {
        y[i] = std::fmod(a[off[0]], b[off[1]]);
      });
    } else {  // float32, fmod 0: the remainder moved to the divisor's sign
      const auto* a = static_cast<const float*>(io.inputs[0]);
      const auto* b = static_cast<const float*>(io.inputs[1]);
      auto* y = static_cast<float*>(io.outputs[0]);
      for_each_broadcast_element<2>(plan_, begin, end, [&](int64_t i, const int64_t* off) {
        const float d = b[off[1]];
        float r = std::fmod(a[off[0]], d);
        if (r == 0.0f)
          r = std::copysign(0.0f, d);
        else if ((r < 0.0f) != (d < 0.0f))
          r += d;
        y[i] = r;
      });
    }
    if (div0) team.fail(where_ + ": integer division by zero");
  }
  const char* name() const override { return "int_binary"; }

 private:
  // The op becomes a template argument, so Add/Sub/Mul runs are branch-free loops.
  template <typename T>
  void typed(const Buffers& io, int64_t begin, int64_t end, bool& div0) const {
    switch (op_) {
      case IntOp::kAdd:
        return typed_op<T, IntOp::kAdd>(io, begin, end, div0);
      case IntOp::kSub:
        return typed_op<T, IntOp::kSub>(io, begin, end, div0);
      case IntOp::kMul:
        return typed_op<T, IntOp::kMul>(io, begin, end, div0);
      case IntOp::kDiv:
        return typed_op<T, IntOp::kDiv>(io, begin, end, div0);
      case IntOp::kMax:
        return typed_op<T, IntOp::kMax>(io, begin, end, div0);
      case IntOp::kMin:
        return typed_op<T, IntOp::kMin>(io, begin, end, div0);
      case IntOp::kMod:
        return typed_op<T, IntOp::kMod>(io, begin, end, div0);
      case IntOp::kFmod:
        return typed_op<T, IntOp::kFmod>(io, begin, end, div0);
    }
  }
  template <typename T, IntOp Op>
  void typed_op(const Buffers& io, int64_t begin, int64_t end, bool& div0) const {
    const auto* a = static_cast<const T*>(io.inputs[0]);
    const auto* b = static_cast<const T*>(io.inputs[1]);
    auto* y = static_cast<T*>(io.outputs[0]);
    for_each_broadcast_element<2>(plan_, begin, end, [&](int64_t i, const int64_t* off) {
      y[i] = apply<T>(Op, a[off[0]], b[off[1]], div0);
    });
  }
  IntOp op_ = IntOp::kAdd;
  DType dtype_ = DType::kI64;
  int64_t numel_ = 0;
  BroadcastPlan plan_;
  std::string where_;
};

std::unique_ptr<Kernel> make_int() { return std::make_unique<IntKernel>(); }

}  // namespace

void register_int_arith_ops(Registry& r) {
  r.add({"Mod", infer_int, cost_int, false, {make_int}});
  r.add({"IntBinary", infer_int, cost_int, false, {make_int}});
}

}  // namespace graphi::ops
