// Det (ONNX opset 11, torch.linalg.det): the determinant of each square matrix of a float32
// X [..., M, M]; Y has X's shape without the last two dims (a scalar for a 2-D X).
//
// Gaussian elimination with partial pivoting (LU, as LAPACK's getrf that numpy and PyTorch call)
// in double: det = (-1)^swaps * prod(U's diagonal). Double keeps the product accurate for the
// sizes models use (M up to a few hundred) where float32 elimination loses digits to
// cancellation. A singular matrix gives 0 (an exactly zero pivot column) or the tiny value
// rounding leaves, as LAPACK does; NaN is taken as the largest pivot, so a NaN in the matrix
// gives NaN. Work is split over the matrices; each thread eliminates in its own slice of the
// scratch.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

Result<std::vector<TensorDesc>> infer_det(const graph::InferContext& ctx) {
  const NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  const TensorDesc& x = v.in(0);
  if (x.rank() < 2 || x.shape[x.shape.size() - 1] != x.shape[x.shape.size() - 2])
    return Status::invalid_graph(v.where + ": input 0 (X) " + x.to_string() +
                                 " must be [..., M, M] (square matrices in its last two dims)");
  return std::vector<TensorDesc>{
      TensorDesc{DType::kF32, Shape(x.shape.begin(), x.shape.end() - 2)}};
}

CostHint cost_det(const graph::Node&, std::span<const TensorDesc* const> in,
                  std::span<const TensorDesc* const> out) {
  const double m = static_cast<double>(in[0]->shape.back());
  return {2.0 / 3.0 * m * m * m * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

// The determinant of the m x m row-major matrix `a` (overwritten with its LU factors).
double lu_det(double* a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t p = k;
    double best = std::fabs(a[k * m + k]);
    for (int64_t i = k + 1; i < m && !std::isnan(best); ++i) {
      const double v = std::fabs(a[i * m + k]);
      if (v > best || std::isnan(v)) {
        best = v;
        p = i;
      }
    }
    if (best == 0) return 0;  // the column is zero below the diagonal: singular
    if (p != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[p * m + j]);
      det = -det;
    }
    const double pivot = a[k * m + k];
    det *= pivot;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / pivot;
      if (f == 0) continue;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

class DetKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    const Shape& x = ctx.inputs[0]->shape;
    m_ = x.back();
    count_ = ctx.outputs[0]->numel();
    scratch_ = static_cast<size_t>(ctx.team_size) * static_cast<size_t>(m_ * m_) * sizeof(double);
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    double* a = static_cast<double*>(team.scratch) + static_cast<int64_t>(team.ithr) * m_ * m_;
    auto [begin, end] = team_range(count_, team.ithr, team.nthr);
    for (int64_t b = begin; b < end; ++b) {
      const float* xb = x + b * m_ * m_;
      for (int64_t e = 0; e < m_ * m_; ++e) a[e] = xb[e];
      y[b] = static_cast<float>(lu_det(a, m_));
    }
  }

  size_t scratch_bytes() const override { return scratch_; }
  const char* name() const override { return "det_lu_f64"; }

 private:
  int64_t m_ = 0, count_ = 0;
  size_t scratch_ = 0;
};

std::unique_ptr<Kernel> make_det() { return std::make_unique<DetKernel>(); }

}  // namespace

void register_det_op(Registry& r) { r.add({"Det", infer_det, cost_det, false, {make_det}}); }

}  // namespace graphi::ops
