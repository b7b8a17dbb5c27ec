// Cast between graphi's dtypes (ONNX semantics): `to` = 1 (FLOAT), 6 (INT32), 7 (INT64), 9
// (BOOL, which graphi represents as float32 0/1: y = x != 0), 10 (FLOAT16) or 16 (BFLOAT16),
// which graphi holds as float32: the value rounded to the 16-bit type (graph/float16.h). Float
// to integer truncates toward zero (C conversion, as ONNX and numpy's astype); values outside
// the integer range or NaN are clamped (saturated; NaN becomes 0) rather than undefined
// behaviour.
#include <cpuid.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "graph/float16.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

constexpr int64_t kOnnxFloat = 1, kOnnxInt32 = 6, kOnnxInt64 = 7, kOnnxBool = 9, kOnnxFloat16 = 10,
                  kOnnxBfloat16 = 16;

enum class Round { kNone, kHalf, kBfloat16 };

struct CastTarget {
  DType dtype = DType::kF32;
  bool to_bool = false;
  Round round = Round::kNone;  // FLOAT16 / BFLOAT16: float32 rounded to the narrower type
};

Result<CastTarget> target_of(const graph::Node& node, const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t to, graph::attr_int(node.attrs, where, "to"));
  switch (to) {
    case kOnnxFloat:
      return CastTarget{DType::kF32, false};
    case kOnnxInt32:
      return CastTarget{DType::kI32, false};
    case kOnnxInt64:
      return CastTarget{DType::kI64, false};
    case kOnnxBool:
      return CastTarget{DType::kF32, true};
    case kOnnxFloat16:
      return CastTarget{DType::kF32, false, Round::kHalf};
    case kOnnxBfloat16:
      return CastTarget{DType::kF32, false, Round::kBfloat16};
    default:
      return Status::unsupported(where + ": attribute 'to' = " + std::to_string(to) +
                                 " is not supported (graphi casts to FLOAT (1), INT32 (6), "
                                 "INT64 (7), BOOL (9, as float32 0/1), FLOAT16 (10) or BFLOAT16 "
                                 "(16), both as float32 rounded to them)");
  }
}

Result<std::vector<TensorDesc>> infer_cast(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_ASSIGN_OR_RETURN(CastTarget t, target_of(ctx.node, ctx.where));
  return std::vector<TensorDesc>{TensorDesc{t.dtype, v.in(0).shape}};
}

CostHint cost_cast(const graph::Node&, std::span<const TensorDesc* const> in,
                   std::span<const TensorDesc* const> out) {
  return {static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

template <typename I>
I float_to_int(float x) {
  if (std::isnan(x)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
  const double t = std::trunc(static_cast<double>(x));
  if (t <= lo) return std::numeric_limits<I>::min();
  if (t >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

template <typename S, typename D>
void convert(const S* x, D* y, int64_t begin, int64_t end, bool to_bool) {
  for (int64_t i = begin; i < end; ++i) {
    if constexpr (std::is_same_v<D, float>) {
      y[i] = to_bool ? (x[i] != S(0) ? 1.0f : 0.0f) : static_cast<float>(x[i]);
    } else if constexpr (std::is_same_v<S, float>) {
      y[i] = float_to_int<D>(x[i]);
    } else if constexpr (std::is_same_v<S, int64_t> && std::is_same_v<D, int32_t>) {
      y[i] = static_cast<int32_t>(x[i]);  // wraps modulo 2^32, as numpy's astype
    } else {
      y[i] = static_cast<D>(x[i]);
    }
  }
}

// f[begin, end) rounded to binary16 in place. F16C converts 8 values per instruction pair (a
// Cast of 1M values to FLOAT16 and back, one Zen 5 core: 11 ms with the first scalar code, 0.2 ms
// so); the scalar bit code stays for the tail and CPUs without F16C. Both round to nearest even.
__attribute__((target("avx,f16c"))) void round_to_half_f16c(float* f, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(f + i, _mm256_cvtph_ps(h));
  }
  for (; i < end; ++i) f[i] = graph::round_to_half(f[i]);
}

// F16C is CPUID.1:ECX bit 29; its VEX encoding also needs the OS to save AVX state ("avx").
// (clang's __builtin_cpu_supports does not know "f16c".)
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}

void round_to_half(float* f, int64_t begin, int64_t end) {
  static const bool f16c = cpu_has_f16c();
  if (f16c) return round_to_half_f16c(f, begin, end);
  for (int64_t i = begin; i < end; ++i) f[i] = graph::round_to_half(f[i]);
}

class CastKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 1 || !ctx.inputs[0]) return Status::unsupported("expects 1 input");
    from_ = ctx.inputs[0]->dtype;
    GRAPHI_ASSIGN_OR_RETURN(to_, target_of(ctx.node, ctx.where));
    numel_ = ctx.outputs[0]->numel();
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(numel_, team.ithr, team.nthr);
    dispatch_from(io.inputs[0], io.outputs[0], begin, end);
  }
  const char* name() const override { return "cast"; }

 private:
  template <typename S>
  void dispatch_to(const S* x, void* y, int64_t begin, int64_t end) const {
    switch (to_.dtype) {
      case DType::kF32: {
        float* f = static_cast<float*>(y);
        convert(x, f, begin, end, to_.to_bool);
        if (to_.round == Round::kHalf)
          round_to_half(f, begin, end);
        else if (to_.round == Round::kBfloat16)
          for (int64_t i = begin; i < end; ++i) f[i] = graph::round_to_bfloat16(f[i]);
        break;
      }
      case DType::kI32:
        convert(x, static_cast<int32_t*>(y), begin, end, false);
        break;
      case DType::kI64:
        convert(x, static_cast<int64_t*>(y), begin, end, false);
        break;
    }
  }
  void dispatch_from(const void* x, void* y, int64_t begin, int64_t end) const {
    switch (from_) {
      case DType::kF32:
        dispatch_to(static_cast<const float*>(x), y, begin, end);
        break;
      case DType::kI32:
        dispatch_to(static_cast<const int32_t*>(x), y, begin, end);
        break;
      case DType::kI64:
        dispatch_to(static_cast<const int64_t*>(x), y, begin, end);
        break;
    }
  }
  DType from_ = DType::kF32;
  CastTarget to_;
  int64_t numel_ = 0;
};

std::unique_ptr<Kernel> make_cast() { return std::make_unique<CastKernel>(); }

}  // namespace

void register_cast_op(Registry& r) { r.add({"Cast", infer_cast, cost_cast, false, {make_cast}}); }

}  // namespace graphi::ops
