// Int8MatMul: a float32 x [..., K] times constant int8 weights, with x quantized to 8 bits per
// tensor at run time and the products summed exactly in int32 (ops/rnn/gemm_int8.h: vpdpbusd on
// AVX512-VNNI, else the same integers portably):
//   y[r][j] = float(sum_k (q[r][k] - x_zp) * W[k][j]) * (x_scale * w_scale[j]) (+ bias[j])
// Two ways to get q (graph/onnx/ONNX.md, "Quantized models"):
// - dynamically (no x_scale attribute), as ONNX DynamicQuantizeLinear does
// (ops/dynamic_quantize.h):
//   ONNX Runtime's quantize_dynamic MatMul chain (DynamicQuantizeLinear -> MatMulInteger -> Cast ->
//   Mul by the product of the scales; com.microsoft.DynamicQuantizeMatMul in one node), computed
//   bit for bit as that chain defines it;
// - with a given scale (attributes x_scale, x_zero_point, qmin, qmax: the quantized type's range,
//   0..255 or -128..127), as QuantizeLinear does: a QDQ model's QuantizeLinear -> DequantizeLinear
//   pair before a MatMul with DequantizeLinear'd int8 weights, whose float32 value it gives up to
//   the rounding of the float sums (the int32 sum is exact).
// Inputs: x [..., K]; W [K, N], a float32 constant holding the weights minus their zero point
// (integers in [-128, 127]; the importer subtracts it); w_scale [N] or [1]; bias [N] (optional).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "ops/dynamic_quantize.h"
#include "ops/registry.h"
#include "ops/rnn/gemm_int8.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

constexpr int64_t kPanel = 64;  // gemm_int8's 64-column register blocks, one per panel

// A given scale (QuantizeLinear's), or nullopt: q - qmin is the u8 the kernel multiplies, so the
// zero point it takes is x_zero_point - qmin (an int8 q, -128..127, becomes q + 128).
Result<std::optional<DynamicQuant>> static_quant(const graph::Node& node,
                                                 const std::string& where) {
  if (!node.attrs.has("x_scale")) return std::optional<DynamicQuant>();
  GRAPHI_ASSIGN_OR_RETURN(double scale, graph::attr_float(node.attrs, where, "x_scale", 0.0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t zp, graph::attr_int(node.attrs, where, "x_zero_point", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t qmin, graph::attr_int(node.attrs, where, "qmin", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t qmax, graph::attr_int(node.attrs, where, "qmax", 255));
  if (!(scale > 0.0) || !std::isfinite(scale))
    return Status::invalid_graph(where + ": x_scale must be a positive finite number, got " +
                                 std::to_string(scale));
  if (qmax - qmin != 255 || (qmin != 0 && qmin != -128) || zp < qmin || zp > qmax)
    return Status::invalid_graph(where + ": x_zero_point " + std::to_string(zp) + " and [qmin, " +
                                 "qmax] = [" + std::to_string(qmin) + ", " + std::to_string(qmax) +
                                 "] must be an 8-bit type's range and a value in it");
  DynamicQuant s;
  s.scale = static_cast<float>(scale);
  s.zero_point = static_cast<float>(zp - qmin);
  return std::optional<DynamicQuant>(s);
}

Result<std::vector<TensorDesc>> infer_int8_matmul(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, 4, 3));
  for (size_t i = 0; i < v.inputs.size(); ++i)
    if (v.inputs[i]) GRAPHI_RETURN_IF_ERROR(expect_dtype(v, i, "input", {DType::kF32}));
  const TensorDesc& x = v.in(0);
  const TensorDesc& w = v.in(1);
  if (x.rank() < 1 || w.rank() != 2 || x.shape.back() != w.shape[0])
    return Status::invalid_graph(ctx.where + ": x " + x.to_string() + " and W " + w.to_string() +
                                 " do not multiply (x [..., K], W [K, N])");
  const int64_t n = w.shape[1];
  const int64_t ns = v.in(2).numel();
  if (v.in(2).rank() > 1 || (ns != 1 && ns != n))
    return Status::invalid_graph(ctx.where + ": w_scale " + v.in(2).to_string() +
                                 " must be [1] or [" + std::to_string(n) + "]");
  if (v.inputs.size() > 3 && v.inputs[3] && (v.in(3).rank() != 1 || v.in(3).numel() != n))
    return Status::invalid_graph(ctx.where + ": bias " + v.in(3).to_string() + " must be [" +
                                 std::to_string(n) + "]");
  Shape out = x.shape;
  out.back() = n;
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, out}};
}

CostHint cost_int8_matmul(const graph::Node&, std::span<const TensorDesc* const> in,
                          std::span<const TensorDesc* const> out) {
  const double k = static_cast<double>(in[1]->shape[0]);
  return {2.0 * k * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes()) + in[1]->bytes() / 4.0};
}

class Int8MatMulKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(static_, static_quant(ctx.node, ctx.where));
    const Tensor* w = ctx.constant(1);
    const Tensor* s = ctx.constant(2);
    if (!w || !s) return Status::unsupported(ctx.where + ": W and w_scale must be constants");
    k_ = ctx.inputs[1]->shape[0];
    n_ = ctx.inputs[1]->shape[1];
    rows_ = ctx.inputs[0]->numel() / std::max<int64_t>(k_, 1);
    kq_ = int8_quads(k_);
    ldb_ = kq_ + 2;  // the row's quads, then its scale and zero point (gemm_int8.h)
    const float* wv = w->data_as<float>();
    packed_.assign(static_cast<size_t>(int8_packed_words(n_, k_, kPanel)), 0u);
    colsum_.assign(static_cast<size_t>(n_), 0);
    for (int64_t kk = 0; kk < k_; ++kk)
      for (int64_t j = 0; j < n_; ++j) {
        const float v = wv[kk * n_ + j];
        if (!(v >= -128.0f && v <= 127.0f) || v != std::nearbyint(v))
          return Status::invalid_graph(ctx.where + ": W[" + std::to_string(kk) + ", " +
                                       std::to_string(j) + "] = " + std::to_string(v) +
                                       " is not an int8 value (weights minus zero point)");
        const auto q = static_cast<int8_t>(v);
        uint32_t& word = packed_[static_cast<size_t>(int8_word_offset(j, kk / 4, k_, kPanel))];
        word |= static_cast<uint32_t>(static_cast<uint8_t>(q)) << (8 * (kk % 4));
        colsum_[static_cast<size_t>(j)] += q;
      }
    const float* sv = s->data_as<float>();
    scale_.resize(static_cast<size_t>(n_));
    for (int64_t j = 0; j < n_; ++j) {
      const float sj = sv[s->numel() == 1 ? 0 : j];
      if (!(sj > 0.0f) || !std::isfinite(sj))
        return Status::invalid_graph(ctx.where + ": w_scale[" + std::to_string(j) + "] = " +
                                     std::to_string(sj) + " (must be positive and finite)");
      scale_[static_cast<size_t>(j)] = sj;
    }
    if (ctx.inputs.size() > 3 && ctx.inputs[3]) {
      const Tensor* b = ctx.constant(3);
      if (!b) return Status::unsupported(ctx.where + ": bias must be a constant");
      bias_.assign(b->data_as<float>(), b->data_as<float>() + n_);
    }
    return Status::ok();
  }

  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override {
    return static_cast<size_t>(rows_ * ldb_) * sizeof(uint32_t);
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    auto* b = static_cast<uint32_t*>(team.scratch);
    const int64_t total = rows_ * k_;
    const int64_t np = (n_ + kPanel - 1) / kPanel;
    // Row chunks only when the panels alone do not give every thread two (many cores).
    const int64_t row_chunks = std::min<int64_t>(
        std::max<int64_t>(1, (2 * team.nthr + np - 1) / np), std::max<int64_t>(1, rows_ / 6));
    float lo = 0.0f, hi = 0.0f;
#pragma omp parallel num_threads(team.nthr)
    {
      const int ithr = omp_get_thread_num(), nthr = omp_get_num_threads();
      // Static: saturate(round(x / s) + zp - qmin, 0, 255) = q - qmin, a u8.
      const DynamicQuant dq = static_ ? *static_ : dynamic_quant_of_team(x, total, lo, hi);
      {
        auto [r0, r1] = team_range(rows_, ithr, nthr);
        for (int64_t r = r0; r < r1; ++r) {
          uint32_t* row = b + r * ldb_;
          auto* bytes = reinterpret_cast<uint8_t*>(row);
          const float* xr = x + r * k_;
          row[kq_ - 1] = 0;  // the bytes past K (W is 0 there)
          int8_quantize_values(xr, k_, dq.scale, dq.zero_point, bytes);
          std::memcpy(row + kq_, &dq.scale, 4);
          row[kq_ + 1] = static_cast<uint32_t>(dq.zero_point);
        }
      }
#pragma omp barrier
      auto [t0, t1] = team_range(np * row_chunks, ithr, nthr);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t p = t / row_chunks, rc = t % row_chunks;
        auto [r0, r1] = team_range(rows_, static_cast<int>(rc), static_cast<int>(row_chunks));
        if (r0 == r1) continue;
        const int64_t m0 = p * kPanel;
        Int8GemmArgs g;
        g.a = packed_.data() + m0 * kq_;
        g.m = std::min(kPanel, n_ - m0);
        g.k = k_;
        g.panel = kPanel;
        g.a_scale = scale_.data() + m0;
        g.colsum = colsum_.data() + m0;
        g.b = b + r0 * ldb_;
        g.ldb = ldb_;
        g.bp = g.b + kq_;
        g.c = y + r0 * n_ + m0;
        g.ldc = n_;
        g.rows = r1 - r0;
        gemm_int8(g);
        if (!bias_.empty())
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t j = 0; j < g.m; ++j)
              y[r * n_ + m0 + j] += bias_[static_cast<size_t>(m0 + j)];
      }
    }
  }
  const char* name() const override {
    return active_int8_path() == Int8Path::kAvx512Vnni ? "int8_matmul_avx512_vnni"
                                                       : "int8_matmul_reference";
  }

 private:
  std::optional<DynamicQuant> static_;  // x_scale given
  int64_t k_ = 0, n_ = 0, rows_ = 0, kq_ = 0, ldb_ = 0;
  std::vector<uint32_t> packed_;
  std::vector<int32_t> colsum_;
  std::vector<float> scale_, bias_;
};

std::unique_ptr<Kernel> make_int8_matmul() { return std::make_unique<Int8MatMulKernel>(); }

}  // namespace

void register_int8_matmul_op(Registry& r) {
  r.add({"Int8MatMul", infer_int8_matmul, cost_int8_matmul, false, {make_int8_matmul}});
}

}  // namespace graphi::ops
