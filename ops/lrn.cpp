// LRN (ONNX): local response normalization across channels, as AlexNet/GoogLeNet/CaffeNet use
// it: y = x / (bias + alpha / size * sum of x^2 over the `size` channels centred on c)^beta,
// the window running from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), clipped to
// the channels. Input [N, C, ...] float32; the team splits the N * C planes.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct LrnParams {
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
  int64_t size = 1, n = 1, c = 1, plane = 1;
};

Result<LrnParams> lrn_params(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 1, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "X", {DType::kF32}));
  const TensorDesc& x = v.in(0);
  if (x.rank() < 3)
    return Status::invalid_graph(v.where + ": input X " + x.to_string() +
                                 " must be [N, C, D1, ...]");
  LrnParams p;
  const auto& a = v.node.attrs;
  GRAPHI_ASSIGN_OR_RETURN(p.alpha, graph::attr_float(a, v.where, "alpha", 1e-4));
  GRAPHI_ASSIGN_OR_RETURN(p.beta, graph::attr_float(a, v.where, "beta", 0.75));
  GRAPHI_ASSIGN_OR_RETURN(p.bias, graph::attr_float(a, v.where, "bias", 1.0));
  GRAPHI_ASSIGN_OR_RETURN(p.size, graph::attr_int(a, v.where, "size"));
  if (p.size < 1)
    return Status::invalid_graph(v.where + ": attribute 'size' must be >= 1, got " +
                                 std::to_string(p.size));
  p.n = x.shape[0];
  p.c = x.shape[1];
  for (size_t d = 2; d < x.shape.size(); ++d) p.plane *= x.shape[d];
  return p;
}

Result<std::vector<TensorDesc>> infer_lrn(const graph::InferContext& ctx) {
  NodeView v = NodeView::of(ctx);
  GRAPHI_RETURN_IF_ERROR(lrn_params(v).status());
  return std::vector<TensorDesc>{v.in(0)};
}

CostHint cost_lrn(const graph::Node&, std::span<const TensorDesc* const> in,
                  std::span<const TensorDesc* const> out) {
  return {16.0 * static_cast<double>(out[0]->numel()),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class LrnKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, lrn_params(NodeView::of_kernel(ctx)));
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    const int64_t lo = (p_.size - 1) / 2, hi = p_.size - 1 - lo;
    auto [begin, end] = team_range(p_.n * p_.c, team.ithr, team.nthr);
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t n = nc / p_.c, c = nc % p_.c;
      const int64_t c0 = std::max<int64_t>(0, c - lo), c1 = std::min(p_.c - 1, c + hi);
      const float* xn = x + n * p_.c * p_.plane;
      for (int64_t i = 0; i < p_.plane; ++i) {
        double sq = 0;
        for (int64_t k = c0; k <= c1; ++k) {
          const double v = xn[k * p_.plane + i];
          sq += v * v;
        }
        const double d = std::pow(p_.bias + p_.alpha / static_cast<double>(p_.size) * sq, p_.beta);
        y[nc * p_.plane + i] = static_cast<float>(xn[c * p_.plane + i] / d);
      }
    }
  }
  const char* name() const override { return "lrn_f32"; }

 private:
  LrnParams p_;
};

std::unique_ptr<Kernel> make_lrn() { return std::make_unique<LrnKernel>(); }

}  // namespace

void register_lrn_op(Registry& r) { r.add({"LRN", infer_lrn, cost_lrn, false, {make_lrn}}); }

}  // namespace graphi::ops
