// Pow (numpy broadcasting; base float32, int32 or int64, of any of those exponents; the result
// has the base's type) and the Reduce ops (Mean, Sum, Max, Min, Prod, L1, L2,
// SumSquare, LogSum, LogSumExp; float32): what PyTorch's LayerNorm export needs (ReduceMean, Sub,
// Pow, ReduceMean, Add, Sqrt, Div, Mul, Add), F.normalize (ReduceL2) and logsumexp.
// The reductions take their axes from the attribute (ReduceMean/ReduceMax before opset 18,
// ReduceSum before 13) or from a constant input 1 (later opsets); keepdims (default 1) and
// noop_with_empty_axes (default 0: no axes reduces everything) as ONNX defines them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/broadcast.h"
#include "ops/broadcast_walk.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

// ---- Pow ----

class PowKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.size() != 2 || !ctx.inputs[0] || !ctx.inputs[1] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 2 inputs and 1 output");
    x_type_ = ctx.inputs[0]->dtype;
    y_type_ = ctx.inputs[1]->dtype;
    for (DType t : {x_type_, y_type_})
      if (t != DType::kF32 && t != DType::kI32 && t != DType::kI64)
        return Status::unsupported("base and exponent must be float32, int32 or int64");
    if (ctx.outputs[0]->dtype != x_type_)
      return Status::unsupported("output must have the base's type, got " +
                                 ctx.outputs[0]->to_string());
    GRAPHI_ASSIGN_OR_RETURN(plan_, make_broadcast_plan(ctx.where, ctx.outputs[0]->shape,
                                                       ctx.inputs[0]->shape, ctx.inputs[1]->shape));
    return Status::ok();
  }

  // Walks the merged-dims plan (for_each_broadcast_run) for outputs [begin, end); the inner run
  // has unit or zero strides.
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (x_type_ == DType::kI32)
      by_exponent<int32_t>(team, io);
    else if (x_type_ == DType::kI64)
      by_exponent<int64_t>(team, io);
    else
      by_exponent<float>(team, io);
  }
  const char* name() const override { return "pow"; }

 private:
  template <typename X>
  void by_exponent(const TeamContext& team, const Buffers& io) const noexcept {
    if (y_type_ == DType::kI32)
      run_typed<X, int32_t>(team, io);
    else if (y_type_ == DType::kI64)
      run_typed<X, int64_t>(team, io);
    else
      run_typed<X, float>(team, io);
  }
  // x ** y of an integer base (ONNX's test_pow_types_int*: the result has the base's type):
  // exact by squaring for a whole exponent >= 0, else in double and truncated, as a C cast.
  template <typename X, typename T>
  static X int_pow(X x, T y) {
    if constexpr (std::is_integral_v<T>) {
      if (y >= 0) {  // in uint64_t: an overflow wraps (as numpy) instead of being undefined
        uint64_t r = 1, b = static_cast<uint64_t>(static_cast<int64_t>(x));
        for (auto e = static_cast<uint64_t>(y); e; e >>= 1, b *= b)
          if (e & 1) r *= b;
        return static_cast<X>(static_cast<int64_t>(r));
      }
    }
    return static_cast<X>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  }
  // X: the base's element type, T: the exponent's (ONNX allows mixing them).
  template <typename X, typename T>
  void run_typed(const TeamContext& team, const Buffers& io) const noexcept {
    const BroadcastPlan& p = plan_;
    auto [begin, end] = team_range(p.numel, team.ithr, team.nthr);
    if (begin >= end) return;
    const auto* a = static_cast<const X*>(io.inputs[0]);
    const auto* b = static_cast<const T*>(io.inputs[1]);
    auto* y = static_cast<X*>(io.outputs[0]);
    const int64_t sa = p.inner_stride(0), sb = p.inner_stride(1);
    for_each_broadcast_run(p, begin, end, [&](int64_t pos, const int64_t* off, int64_t n) {
      const X* pa = a + off[0];
      const T* pb = b + off[1];
      if constexpr (!std::is_same_v<X, float>) {
        for (int64_t i = 0; i < n; ++i) y[pos + i] = int_pow(pa[i * sa], pb[i * sb]);
      } else if (sb == 0 && pb[0] == T{2}) {  // x ** 2 (LayerNorm's variance): exact and fast
        for (int64_t i = 0; i < n; ++i) y[pos + i] = pa[i * sa] * pa[i * sa];
      } else if (sb == 0 && pb[0] == T{3}) {
        // x ** 3: the tanh GELU's cube (GPT-2's gelu_new, GPT-J, ALBERT, mT5); std::pow took
        // 1.3 ms on [1, 128, 1536] where ORT takes 0.06.
        for (int64_t i = 0; i < n; ++i) y[pos + i] = pa[i * sa] * pa[i * sa] * pa[i * sa];
      } else if (sb == 0 && static_cast<double>(pb[0]) == 0.5) {
        for (int64_t i = 0; i < n; ++i) y[pos + i] = std::sqrt(pa[i * sa]);
      } else {
        for (int64_t i = 0; i < n; ++i)
          y[pos + i] = std::pow(pa[i * sa], static_cast<float>(pb[i * sb]));
      }
    });
  }
  BroadcastPlan plan_;
  DType x_type_ = DType::kF32, y_type_ = DType::kF32;
};

Result<std::vector<TensorDesc>> infer_pow(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 2, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 1, "Y", {DType::kF32, DType::kI32, DType::kI64}));
  GRAPHI_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.where, v.in(0).shape, v.in(1).shape));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, std::move(out)}};
}

CostHint cost_pow(const graph::Node&, std::span<const TensorDesc* const> in,
                  std::span<const TensorDesc* const> out) {
  return {static_cast<double>(16 * out[0]->numel()),
          static_cast<double>(in[0]->bytes() + in[1]->bytes() + out[0]->bytes())};
}

std::unique_ptr<Kernel> make_pow() { return std::make_unique<PowKernel>(); }

// ---- reductions ----

enum class Reduce { kMean, kSum, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Which dims of the input a node reduces, and its output shape.
struct ReduceShape {
  std::vector<bool> reduced;  // per input dim
  Shape out;
  bool noop = false;  // noop_with_empty_axes = 1 and no axes: the output is the input
};

Result<ReduceShape> reduce_shape(const NodeView& v) {
  const TensorDesc& x = v.in(0);
  const auto& a = v.node.attrs;
  GRAPHI_ASSIGN_OR_RETURN(int64_t keepdims, graph::attr_int(a, v.where, "keepdims", 1));
  GRAPHI_ASSIGN_OR_RETURN(int64_t noop_empty,
                          graph::attr_int(a, v.where, "noop_with_empty_axes", 0));
  std::vector<int64_t> axes;
  if (v.has_input(1)) {
    if (a.has("axes"))
      return Status::invalid_graph(v.where + ": axes given both as attribute and as input 1");
    GRAPHI_ASSIGN_OR_RETURN(axes, const_ints_input(v, 1, "axes"));
  } else {
    GRAPHI_ASSIGN_OR_RETURN(axes, graph::attr_ints(a, v.where, "axes", {}));
  }
  ReduceShape r;
  const int64_t rank = x.rank();
  r.reduced.assign(static_cast<size_t>(rank), axes.empty());
  if (axes.empty() && noop_empty != 0) {
    r.noop = true;
    r.reduced.assign(static_cast<size_t>(rank), false);
  }
  for (int64_t ax : axes) {
    GRAPHI_ASSIGN_OR_RETURN(int k, normalize_axis(v, "axes", ax, x));
    if (r.reduced[static_cast<size_t>(k)])
      return Status::invalid_graph(v.where + ": axis " + std::to_string(ax) +
                                   " appears twice in axes " + ints_to_string(axes));
    r.reduced[static_cast<size_t>(k)] = true;
  }
  for (size_t d = 0; d < r.reduced.size(); ++d) {
    if (!r.reduced[d])
      r.out.push_back(x.shape[d]);
    else if (keepdims != 0)
      r.out.push_back(1);
  }
  return r;
}

// ReduceMax / ReduceMin / ReduceSum / ReduceProd also take int32 and int64 data (PyTorch
// exports `t.max(dim)` of an index tensor as ReduceMax), with the input's dtype out: integer
// sums and products wrap as numpy's do; the others (means, norms, logs) are float32 only.
bool integer_reduce(const std::string& op) {
  return op == "ReduceMax" || op == "ReduceMin" || op == "ReduceSum" || op == "ReduceProd";
}

Result<std::vector<TensorDesc>> infer_reduce(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 2, 1));
  if (integer_reduce(ctx.node.op))
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32, DType::kI32, DType::kI64}));
  else
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "data", {DType::kF32}));
  GRAPHI_ASSIGN_OR_RETURN(ReduceShape r, reduce_shape(v));
  return std::vector<TensorDesc>{TensorDesc{v.in(0).dtype, std::move(r.out)}};
}

CostHint cost_reduce(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  return {static_cast<double>(in[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class ReduceKernel final : public Kernel {
 public:
  explicit ReduceKernel(Reduce kind) : kind_(kind) {}

  Status init(const KernelContext& ctx) override {
    if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.size() != 1)
      return Status::unsupported("expects 1 or 2 inputs and 1 output");
    dtype_ = ctx.inputs[0]->dtype;
    if (dtype_ != DType::kF32 && !integer_reduce(ctx.node.op))
      return Status::unsupported("float32 only");
    NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_ASSIGN_OR_RETURN(ReduceShape r, reduce_shape(v));
    // Merge adjacent dims that are both kept or both reduced (dims of 1 go away), so the
    // common cases are [outer, reduced] (LayerNorm) or [reduced, inner].
    const Shape& s = ctx.inputs[0]->shape;
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == 1) continue;
      if (!dims_.empty() && red_.back() == r.reduced[d]) {
        dims_.back() *= s[d];
      } else {
        dims_.push_back(s[d]);
        red_.push_back(r.reduced[d]);
      }
    }
    if (dims_.size() > static_cast<size_t>(BroadcastPlan::kMaxRank))
      return Status::unsupported("more than " + std::to_string(BroadcastPlan::kMaxRank) +
                                 " alternating kept/reduced dims");
    // Strides of the input (row-major over the merged dims).
    strides_.assign(dims_.size(), 1);
    for (size_t d = dims_.size(); d-- > 1;) strides_[d - 1] = strides_[d] * dims_[d];
    out_numel_ = ctx.outputs[0]->numel();
    count_ = 1;
    for (size_t d = 0; d < dims_.size(); ++d)
      if (red_[d]) count_ *= dims_[d];
    return Status::ok();
  }

  // Each team member computes a range of output elements; each output element walks its
  // reduced positions (an odometer over the reduced dims, innermost contiguous when the last
  // dim is reduced). Sums and products accumulate in double; Max/Min keep NaN as numpy does.
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(out_numel_, team.ithr, team.nthr);
    if (dtype_ == DType::kI64)
      return run_integer(static_cast<const int64_t*>(io.inputs[0]),
                         static_cast<int64_t*>(io.outputs[0]), begin, end);
    if (dtype_ == DType::kI32)
      return run_integer(static_cast<const int32_t*>(io.inputs[0]),
                         static_cast<int32_t*>(io.outputs[0]), begin, end);
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    const int rank = static_cast<int>(dims_.size());
    if ((kind_ == Reduce::kSum || kind_ == Reduce::kMean || kind_ == Reduce::kL1 ||
         kind_ == Reduce::kL2 || kind_ == Reduce::kSumSquare) &&
        rank >= 2 && !red_.back()) {
      // a bias gradient's [rows, units] -> [units]; ConvNeXt-V2's GRN norm over H and W of NHWC
      sum_kept_inner(x, y, begin, end);
      return;
    }
    for (int64_t o = begin; o < end; ++o) {
      y[o] = reduce_one(x, base_of(o));
    }
  }
  const char* name() const override {
    if (dtype_ != DType::kF32) return "reduce_integer";
    static constexpr const char* kNames[] = {
        "reduce_mean_f32",    "reduce_sum_f32",        "reduce_max_f32", "reduce_min_f32",
        "reduce_prod_f32",    "reduce_l1_f32",         "reduce_l2_f32",  "reduce_sum_square_f32",
        "reduce_log_sum_f32", "reduce_log_sum_exp_f32"};
    return kNames[static_cast<int>(kind_)];
  }

 private:
  // The input offset of output o's first element: o decomposed over the kept dims.
  int64_t base_of(int64_t o) const noexcept {
    int64_t base = 0, rem = o;
    for (int d = static_cast<int>(dims_.size()) - 1; d >= 0; --d) {
      if (red_[static_cast<size_t>(d)]) continue;
      base += (rem % dims_[static_cast<size_t>(d)]) * strides_[static_cast<size_t>(d)];
      rem /= dims_[static_cast<size_t>(d)];
    }
    return base;
  }

  // One odometer step over the reduced dims [0, top]: off moves to the next reduced position
  // (ridx holds the digits; it wraps to all zeros after the last).
  void next_reduced(int64_t& off, int64_t* ridx, int top) const noexcept {
    for (int d = top; d >= 0; --d) {
      if (!red_[static_cast<size_t>(d)]) continue;
      off += strides_[static_cast<size_t>(d)];
      if (++ridx[d] < dims_[static_cast<size_t>(d)]) break;
      off -= ridx[d] * strides_[static_cast<size_t>(d)];
      ridx[d] = 0;
    }
  }

  // Integer Max / Min / Sum / Prod (sums and products in wrapping unsigned 64-bit arithmetic,
  // then narrowed: numpy's overflow behaviour, no undefined behaviour).
  template <typename T>
  void run_integer(const T* x, T* y, int64_t begin, int64_t end) const noexcept {
    for (int64_t o = begin; o < end; ++o) {
      const int64_t base = base_of(o);
      if (kind_ == Reduce::kMax || kind_ == Reduce::kMin) {
        T m = x[base];
        for_each_reduced(x, base,
                         [&](T v) { m = kind_ == Reduce::kMax ? std::max(m, v) : std::min(m, v); });
        y[o] = m;
      } else {
        uint64_t acc = kind_ == Reduce::kProd ? 1 : 0;
        for_each_reduced(x, base, [&](T v) {
          const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(v));
          acc = kind_ == Reduce::kProd ? acc * u : acc + u;
        });
        y[o] = static_cast<T>(static_cast<int64_t>(acc));
      }
    }
  }

  // Calls f(x[off]) for every reduced position of the output element at input offset base.
  template <typename T, typename F>
  void for_each_reduced(const T* x, int64_t base, F&& f) const {
    const int rank = static_cast<int>(dims_.size());
    int64_t ridx[BroadcastPlan::kMaxRank] = {};
    int64_t off = base;
    for (int64_t k = 0; k < count_; ++k) {
      f(x[off]);
      next_reduced(off, ridx, rank - 1);
    }
  }

  // Sum of n contiguous floats (of their squares, of their absolute values: kTerm): 16 float
  // partial sums (independent chains the compiler vectorizes), flushed into a double every 256
  // elements, so float rounding stays that of 16 terms.
  enum class Term { kValue, kSquare, kAbs };
  template <Term kTerm>
  static float term(float v) {
    return kTerm == Term::kSquare ? v * v : kTerm == Term::kAbs ? std::fabs(v) : v;
  }
  template <Term kTerm = Term::kValue>
  static double sum_run(const float* x, int64_t n) {
    double s = 0;
    int64_t i = 0;
    while (i + 16 <= n) {
      float acc[16] = {};
      const int64_t end = std::min(n - n % 16, i + 256);
      for (; i < end; i += 16)
        for (int j = 0; j < 16; ++j) acc[j] += term<kTerm>(x[i + j]);
      for (int j = 0; j < 16; ++j) s += acc[j];
    }
    for (; i < n; ++i) s += term<kTerm>(x[i]);
    return s;
  }

  // The sum over the reduced positions of the output element at `base` when the innermost dim
  // is reduced: an odometer over the other reduced dims, sum_run over each contiguous run.
  template <Term kTerm = Term::kValue>
  double sum_by_runs(const float* x, int64_t base) const {
    const int rank = static_cast<int>(dims_.size());
    const int64_t run = dims_.back(), runs = count_ / run;
    int64_t ridx[BroadcastPlan::kMaxRank] = {};
    int64_t off = base;
    double sum = 0;
    for (int64_t k = 0; k < runs; ++k) {
      sum += sum_run<kTerm>(x + off, run);
      next_reduced(off, ridx, rank - 2);
    }
    return sum;
  }

  // Sum / Mean (and L1, L2, SumSquare: of |x|, of x^2) when the innermost dim is kept: outputs
  // [begin, end) in blocks of consecutive inner positions (contiguous in x and y); each reduced
  // position adds a block-long row of x into double accumulators (rows in order, so the result
  // does not depend on the split).
  void sum_kept_inner(const float* x, float* y, int64_t begin, int64_t end) const noexcept {
    constexpr int64_t kBlockLen = 256;
    const int rank = static_cast<int>(dims_.size());
    const int64_t inner = dims_.back();
    double acc[kBlockLen];
    for (int64_t o = begin; o < end;) {
      const int64_t len = std::min({kBlockLen, end - o, inner - o % inner});
      const int64_t base = base_of(o);
      std::fill(acc, acc + len, 0.0);
      int64_t ridx[BroadcastPlan::kMaxRank] = {};
      int64_t off = base;
      for (int64_t k = 0; k < count_; ++k) {
        const float* row = x + off;
        if (kind_ == Reduce::kL2 || kind_ == Reduce::kSumSquare)
          for (int64_t j = 0; j < len; ++j) acc[j] += double{row[j]} * row[j];
        else if (kind_ == Reduce::kL1)
          for (int64_t j = 0; j < len; ++j) acc[j] += std::fabs(double{row[j]});
        else
          for (int64_t j = 0; j < len; ++j) acc[j] += row[j];
        next_reduced(off, ridx, rank - 1);
      }
      const double scale = kind_ == Reduce::kMean ? 1.0 / static_cast<double>(count_) : 1.0;
      for (int64_t j = 0; j < len; ++j)
        y[o + j] = static_cast<float>(kind_ == Reduce::kL2 ? std::sqrt(acc[j]) : acc[j] * scale);
      o += len;
    }
  }

  float reduce_one(const float* x, int64_t base) const {
    constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
    switch (kind_) {
      case Reduce::kMax:
      case Reduce::kMin: {
        const bool is_max = kind_ == Reduce::kMax;
        float m = is_max ? -std::numeric_limits<float>::infinity()
                         : std::numeric_limits<float>::infinity();
        bool nan = false;
        for_each_reduced(x, base, [&](float v) {
          nan |= std::isnan(v);
          m = is_max ? (v > m ? v : m) : (v < m ? v : m);
        });
        return nan ? kNan : m;
      }
      case Reduce::kProd: {
        double p = 1;
        for_each_reduced(x, base, [&](float v) { p *= v; });
        return static_cast<float>(p);
      }
      case Reduce::kLogSumExp: {
        // max + log(sum(exp(v - max))): no overflow for large v.
        float m = -std::numeric_limits<float>::infinity();
        bool nan = false;
        for_each_reduced(x, base, [&](float v) {
          nan |= std::isnan(v);
          m = v > m ? v : m;
        });
        if (nan) return kNan;
        if (std::isinf(m)) return m;  // all -inf: log(0); any +inf: +inf
        double sum = 0;
        for_each_reduced(x, base, [&](float v) { sum += std::exp(double{v} - m); });
        return static_cast<float>(m + std::log(sum));
      }
      default: {
        double sum = 0;
        // Contiguous runs (the innermost dim reduced, >= 16 long): the fast path.
        const bool runs = !dims_.empty() && red_.back() && dims_.back() >= 16;
        const bool squares = kind_ == Reduce::kL2 || kind_ == Reduce::kSumSquare;
        if (runs && squares)
          sum = sum_by_runs<Term::kSquare>(x, base);
        else if (runs && kind_ == Reduce::kL1)
          sum = sum_by_runs<Term::kAbs>(x, base);
        else if (kind_ == Reduce::kL1)
          for_each_reduced(x, base, [&](float v) { sum += std::fabs(double{v}); });
        else if (squares)
          for_each_reduced(x, base, [&](float v) { sum += double{v} * v; });
        else if (runs)
          sum = sum_by_runs(x, base);
        else
          for_each_reduced(x, base, [&](float v) { sum += v; });
        if (kind_ == Reduce::kMean) sum /= static_cast<double>(count_);
        if (kind_ == Reduce::kL2) sum = std::sqrt(sum);
        if (kind_ == Reduce::kLogSum) sum = std::log(sum);
        return static_cast<float>(sum);
      }
    }
  }

  Reduce kind_;
  DType dtype_ = DType::kF32;
  std::vector<int64_t> dims_, strides_;
  std::vector<bool> red_;
  int64_t out_numel_ = 0, count_ = 1;
};

template <Reduce K>
std::unique_ptr<Kernel> make_reduce() {
  return std::make_unique<ReduceKernel>(K);
}

template <Reduce K>
OpDef reduce_def(const char* type) {
  return OpDef{type, infer_reduce, cost_reduce, false, {make_reduce<K>}};
}

}  // namespace

void register_reduce_ops(Registry& r) {
  r.add({"Pow", infer_pow, cost_pow, false, {make_pow}});
  r.add(reduce_def<Reduce::kMean>("ReduceMean"));
  r.add(reduce_def<Reduce::kSum>("ReduceSum"));
  r.add(reduce_def<Reduce::kMax>("ReduceMax"));
  r.add(reduce_def<Reduce::kMin>("ReduceMin"));
  r.add(reduce_def<Reduce::kProd>("ReduceProd"));
  r.add(reduce_def<Reduce::kL1>("ReduceL1"));
  r.add(reduce_def<Reduce::kL2>("ReduceL2"));
  r.add(reduce_def<Reduce::kSumSquare>("ReduceSumSquare"));
  r.add(reduce_def<Reduce::kLogSum>("ReduceLogSum"));
  r.add(reduce_def<Reduce::kLogSumExp>("ReduceLogSumExp"));
}

}  // namespace graphi::ops
