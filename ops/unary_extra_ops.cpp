// More elementwise float32 ops with ONNX semantics, for exported models that use them on
// run-time data: Round (halves to even, as ONNX and numpy), Sign, Tan, Asin, Acos, Atan, Sinh,
// Cosh, Asinh, Acosh, Atanh, ThresholdedRelu (alpha), Shrink (bias, lambd), IsNaN and IsInf
// (detect_positive, detect_negative; the result is a bool: float32 0/1, see ops/logic_ops.cpp).
// Plain loops; the team splits the flat tensor.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Ux {
  kRound,
  kSign,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kThresholdedRelu,
  kShrink,
  kIsNaN,
  kIsInf
};

struct UxParams {
  float alpha = 1.0f, bias = 0.0f, lambd = 0.5f;
  bool pos = true, neg = true;
};

Result<UxParams> ux_params(Ux k, const graph::Node& node, const std::string& where) {
  UxParams p;
  const auto& a = node.attrs;
  if (k == Ux::kThresholdedRelu) {
    GRAPHI_ASSIGN_OR_RETURN(double alpha, graph::attr_float(a, where, "alpha", 1.0));
    p.alpha = static_cast<float>(alpha);
  } else if (k == Ux::kShrink) {
    GRAPHI_ASSIGN_OR_RETURN(double bias, graph::attr_float(a, where, "bias", 0.0));
    GRAPHI_ASSIGN_OR_RETURN(double lambd, graph::attr_float(a, where, "lambd", 0.5));
    p.bias = static_cast<float>(bias);
    p.lambd = static_cast<float>(lambd);
  } else if (k == Ux::kIsInf) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t pos, graph::attr_int(a, where, "detect_positive", 1));
    GRAPHI_ASSIGN_OR_RETURN(int64_t neg, graph::attr_int(a, where, "detect_negative", 1));
    p.pos = pos != 0;
    p.neg = neg != 0;
  }
  return p;
}

void ux_loop(Ux k, const UxParams& p, const float* x, float* y, int64_t n) {
  switch (k) {
    case Ux::kRound:
      for (int64_t i = 0; i < n; ++i) y[i] = std::nearbyint(x[i]);  // default mode: to even
      break;
    case Ux::kSign:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? 1.0f : x[i] < 0 ? -1.0f : x[i];
      break;
    case Ux::kTan:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tan(x[i]);
      break;
    case Ux::kAsin:
      for (int64_t i = 0; i < n; ++i) y[i] = std::asin(x[i]);
      break;
    case Ux::kAcos:
      for (int64_t i = 0; i < n; ++i) y[i] = std::acos(x[i]);
      break;
    case Ux::kAtan:
      for (int64_t i = 0; i < n; ++i) y[i] = std::atan(x[i]);
      break;
    case Ux::kSinh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sinh(x[i]);
      break;
    case Ux::kCosh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::cosh(x[i]);
      break;
    case Ux::kAsinh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::asinh(x[i]);
      break;
    case Ux::kAcosh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::acosh(x[i]);
      break;
    case Ux::kAtanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::atanh(x[i]);
      break;
    case Ux::kThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > p.alpha ? x[i] : 0.0f;
      break;
    case Ux::kShrink:
      for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] < -p.lambd ? x[i] + p.bias : x[i] > p.lambd ? x[i] - p.bias : 0.0f;
      break;
    case Ux::kIsNaN:
      for (int64_t i = 0; i < n; ++i) y[i] = std::isnan(x[i]) ? 1.0f : 0.0f;
      break;
    case Ux::kIsInf:
      for (int64_t i = 0; i < n; ++i)
        y[i] = std::isinf(x[i]) && ((x[i] > 0 && p.pos) || (x[i] < 0 && p.neg)) ? 1.0f : 0.0f;
      break;
  }
}

template <Ux K>
Result<std::vector<TensorDesc>> infer_ux(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(ux_params(K, ctx.node, ctx.where).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_ux(const graph::Node&, std::span<const TensorDesc* const> in,
                 std::span<const TensorDesc* const> out) {
  return {8.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class UxKernel final : public Kernel {
 public:
  explicit UxKernel(Ux k) : kind_(k) {}
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 1 || !ctx.inputs[0] || ctx.inputs[0]->dtype != DType::kF32)
      return Status::unsupported("expects one float32 input");
    GRAPHI_ASSIGN_OR_RETURN(p_, ux_params(kind_, ctx.node, ctx.where));
    numel_ = ctx.outputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [b, e] = team_range(numel_, team.ithr, team.nthr);
    ux_loop(kind_, p_, static_cast<const float*>(io.inputs[0]) + b,
            static_cast<float*>(io.outputs[0]) + b, e - b);
  }
  const char* name() const override { return "unary_extra_f32"; }

 private:
  Ux kind_;
  UxParams p_;
  int64_t numel_ = 0;
};

template <Ux K>
std::unique_ptr<Kernel> make_ux() {
  return std::make_unique<UxKernel>(K);
}

template <Ux K>
OpDef ux_def(const char* type) {
  return OpDef{type, infer_ux<K>, cost_ux, false, {make_ux<K>}};
}

}  // namespace

void register_unary_extra_ops(Registry& r) {
  r.add(ux_def<Ux::kRound>("Round"));
  r.add(ux_def<Ux::kSign>("Sign"));
  r.add(ux_def<Ux::kTan>("Tan"));
  r.add(ux_def<Ux::kAsin>("Asin"));
  r.add(ux_def<Ux::kAcos>("Acos"));
  r.add(ux_def<Ux::kAtan>("Atan"));
  r.add(ux_def<Ux::kSinh>("Sinh"));
  r.add(ux_def<Ux::kCosh>("Cosh"));
  r.add(ux_def<Ux::kAsinh>("Asinh"));
  r.add(ux_def<Ux::kAcosh>("Acosh"));
  r.add(ux_def<Ux::kAtanh>("Atanh"));
  r.add(ux_def<Ux::kThresholdedRelu>("ThresholdedRelu"));
  r.add(ux_def<Ux::kShrink>("Shrink"));
  r.add(ux_def<Ux::kIsNaN>("IsNaN"));
  r.add(ux_def<Ux::kIsInf>("IsInf"));
}

}  // namespace graphi::ops
