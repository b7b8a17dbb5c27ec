// Unary elementwise ops with ONNX semantics, float32: Exp, Log, Sqrt, Neg, Abs, Reciprocal, Erf,
// Softplus, Softsign, Floor, Ceil, Sin, Cos, LeakyRelu(alpha), Elu(alpha), Selu(alpha, gamma),
// HardSigmoid(alpha, beta), Round (halves to even), Sign, Tan, Asin, Acos, Atan, Sinh, Cosh,
// Asinh, Acosh, Atanh, ThresholdedRelu(alpha), Shrink(bias, lambd), IsNaN, IsInf (bools as
// float32 0/1) and Clip (min/max as
// attributes before opset 11, as optional scalar inputs from opset 11; the inputs are read at
// run time, so constant and computed bounds both work). Plain loops, one per op, that the
// compiler vectorizes where libm allows; the team splits the flat tensor in cache lines.
#include <cmath>
#include <iterator>
#include <limits>

#include "ops/activations.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

enum class Unary {
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kErf,
  kSoftplus,
  kLeakyRelu,
  kElu,
  kHardSigmoid,
  kClip,
  kFloor,
  kCeil,
  kSin,
  kCos,
  kSelu,
  kSoftsign,
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
  kIsInf,
  kGelu  // ONNX opset 20's Gelu (approximate 'none' or 'tanh'); graph/passes/gelu_fusion.h makes
         // PyTorch's exact-GELU chains of earlier opsets into it
};

struct UnaryParams {
  float alpha = 0, beta = 0;    // Selu: alpha, gamma (as beta); Shrink: lambd, bias (as beta)
  bool pos = true, neg = true;  // IsInf: detect_positive, detect_negative
  bool tanh_form = false;       // Gelu: approximate = 'tanh'
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

// One loop per kind, so the switch sits outside the element loop.
void unary_loop(Unary kind, const UnaryParams& p, const float* x, float* y, int64_t n) {
  switch (kind) {
    case Unary::kExp:
      for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
      break;
    case Unary::kLog:
      for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
      break;
    case Unary::kSqrt:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
      break;
    case Unary::kNeg:
      for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
      break;
    case Unary::kAbs:
      for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
      break;
    case Unary::kReciprocal:
      for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / x[i];
      break;
    case Unary::kGelu:
      if (p.tanh_form)
        gelu_tanh_f32(x, y, n);
      else
        gelu_f32(x, y, n);
      break;
    case Unary::kErf:
      erf_f32(x, y, n);  // vectorized (ops/activations.h): std::erf was ~10 ns per element
      break;
    case Unary::kSoftplus:
      // log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0.
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v > 0.0f ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
      }
      break;
    case Unary::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? p.alpha * x[i] : x[i];
      break;
    case Unary::kElu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? p.alpha * std::expm1(x[i]) : x[i];
      break;
    case Unary::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) {
        const float v = p.alpha * x[i] + p.beta;
        y[i] = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
      }
      break;
    case Unary::kClip:
      // Comparisons keep NaN, as numpy.clip does.
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v < p.lo ? p.lo : (v > p.hi ? p.hi : v);
      }
      break;
    case Unary::kFloor:
      for (int64_t i = 0; i < n; ++i) y[i] = std::floor(x[i]);
      break;
    case Unary::kCeil:
      for (int64_t i = 0; i < n; ++i) y[i] = std::ceil(x[i]);
      break;
    case Unary::kSin:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]);
      break;
    case Unary::kCos:
      for (int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]);
      break;
    case Unary::kSelu:
      for (int64_t i = 0; i < n; ++i)
        y[i] = p.beta * (x[i] <= 0.0f ? p.alpha * std::expm1(x[i]) : x[i]);
      break;
    case Unary::kSoftsign:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::fabs(x[i]));
      break;
    case Unary::kRound:
      for (int64_t i = 0; i < n; ++i) y[i] = std::nearbyint(x[i]);  // default mode: to even
      break;
    case Unary::kSign:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? 1.0f : x[i] < 0 ? -1.0f : x[i];
      break;
    case Unary::kTan:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tan(x[i]);
      break;
    case Unary::kAsin:
      for (int64_t i = 0; i < n; ++i) y[i] = std::asin(x[i]);
      break;
    case Unary::kAcos:
      for (int64_t i = 0; i < n; ++i) y[i] = std::acos(x[i]);
      break;
    case Unary::kAtan:
      for (int64_t i = 0; i < n; ++i) y[i] = std::atan(x[i]);
      break;
    case Unary::kSinh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sinh(x[i]);
      break;
    case Unary::kCosh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::cosh(x[i]);
      break;
    case Unary::kAsinh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::asinh(x[i]);
      break;
    case Unary::kAcosh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::acosh(x[i]);
      break;
    case Unary::kAtanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::atanh(x[i]);
      break;
    case Unary::kThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > p.alpha ? x[i] : 0.0f;
      break;
    case Unary::kShrink:
      for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] < -p.alpha ? x[i] + p.beta : x[i] > p.alpha ? x[i] - p.beta : 0.0f;
      break;
    case Unary::kIsNaN:
      for (int64_t i = 0; i < n; ++i) y[i] = std::isnan(x[i]) ? 1.0f : 0.0f;
      break;
    case Unary::kIsInf:
      for (int64_t i = 0; i < n; ++i)
        y[i] = std::isinf(x[i]) && ((x[i] > 0 && p.pos) || (x[i] < 0 && p.neg)) ? 1.0f : 0.0f;
      break;
  }
}

constexpr int64_t kBlock = 16;  // floats per 64-byte cache line

// The node's parameters from its attributes (defaults as ONNX defines them).
Result<UnaryParams> params_of(Unary kind, const graph::Node& node, const std::string& where) {
  UnaryParams p;
  const auto& a = node.attrs;
  if (kind == Unary::kLeakyRelu) {
    GRAPHI_ASSIGN_OR_RETURN(double alpha, graph::attr_float(a, where, "alpha", 0.01));
    p.alpha = static_cast<float>(alpha);
  } else if (kind == Unary::kElu) {
    GRAPHI_ASSIGN_OR_RETURN(double alpha, graph::attr_float(a, where, "alpha", 1.0));
    p.alpha = static_cast<float>(alpha);
  } else if (kind == Unary::kHardSigmoid) {
    GRAPHI_ASSIGN_OR_RETURN(double alpha, graph::attr_float(a, where, "alpha", 0.2));
    GRAPHI_ASSIGN_OR_RETURN(double beta, graph::attr_float(a, where, "beta", 0.5));
    p.alpha = static_cast<float>(alpha);
    p.beta = static_cast<float>(beta);
  } else if (kind == Unary::kSelu) {
    GRAPHI_ASSIGN_OR_RETURN(double alpha,
                            graph::attr_float(a, where, "alpha", 1.67326319217681884765625));
    GRAPHI_ASSIGN_OR_RETURN(double gamma,
                            graph::attr_float(a, where, "gamma", 1.05070102214813232421875));
    p.alpha = static_cast<float>(alpha);
    p.beta = static_cast<float>(gamma);
  } else if (kind == Unary::kThresholdedRelu) {
    GRAPHI_ASSIGN_OR_RETURN(double alpha, graph::attr_float(a, where, "alpha", 1.0));
    p.alpha = static_cast<float>(alpha);
  } else if (kind == Unary::kShrink) {
    GRAPHI_ASSIGN_OR_RETURN(double bias, graph::attr_float(a, where, "bias", 0.0));
    GRAPHI_ASSIGN_OR_RETURN(double lambd, graph::attr_float(a, where, "lambd", 0.5));
    p.alpha = static_cast<float>(lambd);
    p.beta = static_cast<float>(bias);
  } else if (kind == Unary::kIsInf) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t pos, graph::attr_int(a, where, "detect_positive", 1));
    GRAPHI_ASSIGN_OR_RETURN(int64_t neg, graph::attr_int(a, where, "detect_negative", 1));
    p.pos = pos != 0;
    p.neg = neg != 0;
  } else if (kind == Unary::kGelu) {
    Result<std::string> approx = graph::attr_string(a, where, "approximate", "none");
    if (!approx.is_ok()) return approx.status();
    if (*approx != "none" && *approx != "tanh")
      return Status::invalid_graph(where + ": attribute 'approximate' = '" + *approx +
                                   "' (ONNX Gelu takes 'none' or 'tanh')");
    p.tanh_form = *approx == "tanh";
  } else if (kind == Unary::kClip) {
    GRAPHI_ASSIGN_OR_RETURN(double lo, graph::attr_float(a, where, "min", -HUGE_VAL));
    GRAPHI_ASSIGN_OR_RETURN(double hi, graph::attr_float(a, where, "max", HUGE_VAL));
    p.lo = static_cast<float>(lo);
    p.hi = static_cast<float>(hi);
  }
  return p;
}

class UnaryOpKernel final : public Kernel {
 public:
  UnaryOpKernel(Unary kind, const char* name) : kind_(kind), name_(name) {}

  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 1 input and 1 output");
    if (ctx.inputs[0]->dtype != DType::kF32) return Status::unsupported("float32 only");
    if (kind_ != Unary::kClip && ctx.inputs.size() != 1)
      return Status::unsupported("expects 1 input");
    GRAPHI_ASSIGN_OR_RETURN(params_, params_of(kind_, ctx.node, ctx.where));
    has_min_ = ctx.inputs.size() > 1 && ctx.inputs[1];
    has_max_ = ctx.inputs.size() > 2 && ctx.inputs[2];
    numel_ = ctx.outputs[0]->numel();
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [b, e] = team_range((numel_ + kBlock - 1) / kBlock, team.ithr, team.nthr);
    const int64_t begin = std::min(numel_, b * kBlock), end = std::min(numel_, e * kBlock);
    if (begin >= end) return;
    UnaryParams p = params_;
    // Clip from opset 11: scalar bounds as inputs (the shape rule checked they are scalars).
    if (has_min_) p.lo = *static_cast<const float*>(io.inputs[1]);
    if (has_max_) p.hi = *static_cast<const float*>(io.inputs[2]);
    unary_loop(kind_, p, static_cast<const float*>(io.inputs[0]) + begin,
               static_cast<float*>(io.outputs[0]) + begin, end - begin);
  }
  const char* name() const override { return name_; }

 private:
  Unary kind_;
  const char* name_;
  UnaryParams params_;
  bool has_min_ = false, has_max_ = false;
  int64_t numel_ = 0;
};

template <Unary K>
Result<std::vector<TensorDesc>> infer_unary_op(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  if constexpr (K == Unary::kClip) {
    GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 3, 1));
    static const char* kFields[] = {"input", "min", "max"};
    for (size_t i = 1; i < 3; ++i) {
      if (!v.has_input(i)) continue;
      GRAPHI_RETURN_IF_ERROR(expect_dtype(v, i, kFields[i], {DType::kF32}));
      if (v.in(i).numel() != 1)
        return Status::invalid_graph(ctx.where + ": input " + std::to_string(i) + " (" +
                                     kFields[i] + ") must be a scalar, got " + v.in(i).to_string());
    }
  } else {
    GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  }
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  GRAPHI_RETURN_IF_ERROR(params_of(K, ctx.node, ctx.where).status());  // attribute types
  return std::vector<TensorDesc>{v.in(0)};
}

// Transcendental ops count as ~8 flops per element (as Sigmoid/Tanh in ops/elementwise.cpp).
template <int kFlopsPerElement>
CostHint cost_unary_op(const graph::Node&, std::span<const TensorDesc* const> in,
                       std::span<const TensorDesc* const> out) {
  return {static_cast<double>(kFlopsPerElement * out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

template <Unary K>
std::unique_ptr<Kernel> make_unary_op() {
  static constexpr const char* kNames[] = {
      "exp_f32",          "log_f32",   "sqrt_f32",     "neg_f32",        "abs_f32",
      "reciprocal_f32",   "erf_f32",   "softplus_f32", "leaky_relu_f32", "elu_f32",
      "hard_sigmoid_f32", "clip_f32",  "floor_f32",    "ceil_f32",       "sin_f32",
      "cos_f32",          "selu_f32",  "softsign_f32", "round_f32",      "sign_f32",
      "tan_f32",          "asin_f32",  "acos_f32",     "atan_f32",       "sinh_f32",
      "cosh_f32",         "asinh_f32", "acosh_f32",    "atanh_f32",      "thresholded_relu_f32",
      "shrink_f32",       "isnan_f32", "isinf_f32",    "gelu_f32"};
  static_assert(std::size(kNames) == static_cast<size_t>(Unary::kGelu) + 1);
  return std::make_unique<UnaryOpKernel>(K, kNames[static_cast<int>(K)]);
}

template <Unary K, int kFlops>
OpDef unary_def(const char* type) {
  return OpDef{type, infer_unary_op<K>, cost_unary_op<kFlops>, false, {make_unary_op<K>}};
}

}  // namespace

void register_unary_ops(Registry& r) {
  r.add(unary_def<Unary::kExp, 8>("Exp"));
  r.add(unary_def<Unary::kLog, 8>("Log"));
  r.add(unary_def<Unary::kSqrt, 4>("Sqrt"));
  r.add(unary_def<Unary::kNeg, 1>("Neg"));
  r.add(unary_def<Unary::kAbs, 1>("Abs"));
  r.add(unary_def<Unary::kReciprocal, 4>("Reciprocal"));
  r.add(unary_def<Unary::kErf, 8>("Erf"));
  r.add(unary_def<Unary::kGelu, 12>("Gelu"));
  r.add(unary_def<Unary::kSoftplus, 16>("Softplus"));
  r.add(unary_def<Unary::kLeakyRelu, 1>("LeakyRelu"));
  r.add(unary_def<Unary::kElu, 8>("Elu"));
  r.add(unary_def<Unary::kHardSigmoid, 2>("HardSigmoid"));
  r.add(unary_def<Unary::kClip, 2>("Clip"));
  r.add(unary_def<Unary::kFloor, 1>("Floor"));
  r.add(unary_def<Unary::kCeil, 1>("Ceil"));
  r.add(unary_def<Unary::kSin, 8>("Sin"));
  r.add(unary_def<Unary::kCos, 8>("Cos"));
  r.add(unary_def<Unary::kSelu, 8>("Selu"));
  r.add(unary_def<Unary::kSoftsign, 4>("Softsign"));
  r.add(unary_def<Unary::kRound, 8>("Round"));
  r.add(unary_def<Unary::kSign, 8>("Sign"));
  r.add(unary_def<Unary::kTan, 8>("Tan"));
  r.add(unary_def<Unary::kAsin, 8>("Asin"));
  r.add(unary_def<Unary::kAcos, 8>("Acos"));
  r.add(unary_def<Unary::kAtan, 8>("Atan"));
  r.add(unary_def<Unary::kSinh, 8>("Sinh"));
  r.add(unary_def<Unary::kCosh, 8>("Cosh"));
  r.add(unary_def<Unary::kAsinh, 8>("Asinh"));
  r.add(unary_def<Unary::kAcosh, 8>("Acosh"));
  r.add(unary_def<Unary::kAtanh, 8>("Atanh"));
  r.add(unary_def<Unary::kThresholdedRelu, 8>("ThresholdedRelu"));
  r.add(unary_def<Unary::kShrink, 8>("Shrink"));
  r.add(unary_def<Unary::kIsNaN, 8>("IsNaN"));
  r.add(unary_def<Unary::kIsInf, 8>("IsInf"));
}

}  // namespace graphi::ops
