// Pools with 1 to 3 spatial dims run by loops (ops/pool_window.h), float32 X [N, C, D1..Dk]:
//   MaxPoolWithIndices: ONNX MaxPool whose second output, Indices (int64), is read (the
//     importer gives that node this name; the MaxPool that reads Y alone keeps oneDNN, ops/
//     conv_pool.cpp). Y is the max over the window's taps inside X (pads never win; the first
//     maximum in row-major window order wins ties, and a NaN tap wins, as in PyTorch);
//     Indices is its flat position in X, padding not counted: (n * C + c) * D1..Dk + the tap's
//     spatial offset, row-major (storage_order 0) or column-major (storage_order 1: the first
//     spatial dim varies fastest), as ONNX defines them. Attributes kernel_shape, strides, pads,
//     dilations, storage_order.
//   LpPool: Y = (sum of |x|^p over the window's taps inside X)^(1/p), integer p >= 1 (attribute
//     p, default 2): padding adds nothing. Attributes kernel_shape, strides, pads, dilations
//     (LpPool-18); GlobalLpPool arrives as an LpPool whose kernel is X's spatial dims.
// auto_pad and ceil_mode arrive as explicit pads (graph/onnx/import_conv_pool.cpp). The team
// splits the output rows (n, c, and every output dim but the last).
#include <cmath>
#include <limits>

#include "ops/pool_window.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

bool is_lp(const graph::Node& node) { return node.op == "LpPool"; }

struct PoolNd {
  PoolWindow w;
  bool column_major = false;  // MaxPoolWithIndices: storage_order 1
  int64_t p = 2;              // LpPool
};

Result<PoolNd> pool_nd(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                       size_t num_outputs, const std::string& where) {
  const bool lp = is_lp(node);
  if (inputs.size() != 1 || !inputs[0])
    return Status::invalid_graph(where + ": " + node.op + " takes exactly 1 input X, got " +
                                 std::to_string(inputs.size()));
  const size_t want = lp ? 1 : 2;
  if (num_outputs != want)
    return Status::invalid_graph(where + ": " + node.op + " has " +
                                 (lp ? "1 output Y" : "2 outputs, Y and Indices") + ", got " +
                                 std::to_string(num_outputs));
  PoolNd r;
  GRAPHI_ASSIGN_OR_RETURN(r.w, read_pool_window(node, *inputs[0], where, true));
  if (lp) {
    GRAPHI_ASSIGN_OR_RETURN(r.p, graph::attr_int(node.attrs, where, "p", 2));
    if (r.p < 1)
      return Status::invalid_graph(where + ": attribute 'p' must be >= 1 (the norm's order), got " +
                                   std::to_string(r.p));
  } else {
    GRAPHI_ASSIGN_OR_RETURN(int64_t order, graph::attr_int(node.attrs, where, "storage_order", 0));
    if (order != 0 && order != 1)
      return Status::invalid_graph(where +
                                   ": attribute 'storage_order' must be 0 (row major) or 1 "
                                   "(column major), got " +
                                   std::to_string(order));
    r.column_major = order == 1;
  }
  return r;
}

Shape out_shape(const PoolWindow& w) {
  Shape s{w.n, w.c};
  for (int a = 3 - w.k; a < 3; ++a) s.push_back(w.out[static_cast<size_t>(a)]);
  return s;
}

Result<std::vector<TensorDesc>> infer_pool_nd(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(PoolNd r, pool_nd(ctx.node, ctx.inputs, ctx.num_outputs, ctx.where));
  const Shape y = out_shape(r.w);
  if (is_lp(ctx.node)) return std::vector<TensorDesc>{TensorDesc{DType::kF32, y}};
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, y}, TensorDesc{DType::kI64, y}};
}

CostHint cost_pool_nd(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                      std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const graph::Attribute* ks = node.attrs.find("kernel_shape");
  const auto* k = ks ? std::get_if<std::vector<int64_t>>(ks) : nullptr;
  double window = 1;
  if (k)
    for (int64_t v : *k) window *= static_cast<double>(v);
  c.flops = static_cast<double>(outputs[0]->numel()) * window * (is_lp(node) ? 2.0 : 1.0);
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  for (const TensorDesc* d : outputs) c.bytes += static_cast<double>(d->bytes());
  return c;
}

// Calls f(input offset in the volume, z, y, x) for each tap of output (od, oy, ox) inside X, in
// row-major window order.
template <typename F>
inline void for_each_tap(const PoolWindow& w, int64_t od, int64_t oy, int64_t ox, F&& f) {
  for (int64_t kz = 0; kz < w.kernel[0]; ++kz) {
    const int64_t iz = od * w.stride[0] - w.pad_begin[0] + kz * w.dil[0];
    if (iz < 0 || iz >= w.in[0]) continue;
    for (int64_t ky = 0; ky < w.kernel[1]; ++ky) {
      const int64_t iy = oy * w.stride[1] - w.pad_begin[1] + ky * w.dil[1];
      if (iy < 0 || iy >= w.in[1]) continue;
      for (int64_t kx = 0; kx < w.kernel[2]; ++kx) {
        const int64_t ix = ox * w.stride[2] - w.pad_begin[2] + kx * w.dil[2];
        if (ix < 0 || ix >= w.in[2]) continue;
        f((iz * w.in[1] + iy) * w.in[2] + ix, iz, iy, ix);
      }
    }
  }
}

class MaxPoolIndicesKernel final : public Kernel {
 public:
  const char* name() const override { return "maxpool_indices_loop"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(r_, pool_nd(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const PoolWindow& w = r_.w;
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    int64_t* ind = static_cast<int64_t*>(io.outputs[1]);
    const int64_t rows = w.n * w.c * w.out[0] * w.out[1];
    auto [r0, r1] = team_range(rows, team.ithr, team.nthr);
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t oy = row % w.out[1], od = row / w.out[1] % w.out[0],
                    plane = row / (w.out[1] * w.out[0]);
      const float* xv = x + plane * w.in_volume();
      for (int64_t ox = 0; ox < w.out[2]; ++ox) {
        float best = 0.0f;
        int64_t at = -1;  // the window's offset of best; -1: no tap yet
        int64_t iz0 = 0, iy0 = 0, ix0 = 0;
        for_each_tap(w, od, oy, ox, [&](int64_t off, int64_t iz, int64_t iy, int64_t ix) {
          const float v = xv[off];
          if (at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
            best = v;
            at = off;
            iz0 = iz, iy0 = iy, ix0 = ix;
          }
        });
        // read_pool_window refuses pads that leave a window without taps.
        const int64_t spatial = r_.column_major ? iz0 + (iy0 + ix0 * w.in[1]) * w.in[0] : at;
        const int64_t o = row * w.out[2] + ox;
        y[o] = best;
        ind[o] = plane * w.in_volume() + spatial;
      }
    }
  }

 private:
  PoolNd r_;
};

class LpPoolKernel final : public Kernel {
 public:
  const char* name() const override { return "lppool_loop"; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(r_, pool_nd(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const PoolWindow& w = r_.w;
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    const int64_t rows = w.n * w.c * w.out[0] * w.out[1];
    auto [r0, r1] = team_range(rows, team.ithr, team.nthr);
    const double inv_p = 1.0 / static_cast<double>(r_.p);
    const auto p = static_cast<double>(r_.p);
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t oy = row % w.out[1], od = row / w.out[1] % w.out[0],
                    plane = row / (w.out[1] * w.out[0]);
      const float* xv = x + plane * w.in_volume();
      float* yr = y + row * w.out[2];
      for (int64_t ox = 0; ox < w.out[2]; ++ox) {
        // p = 1 and 2 (nn.LPPool2d's usual norms) without pow; any other p in double.
        double acc = 0;
        if (r_.p == 1)
          for_each_tap(w, od, oy, ox,
                       [&](int64_t off, int64_t, int64_t, int64_t) { acc += std::fabs(xv[off]); });
        else if (r_.p == 2)
          for_each_tap(w, od, oy, ox, [&](int64_t off, int64_t, int64_t, int64_t) {
            acc += static_cast<double>(xv[off]) * xv[off];
          });
        else
          for_each_tap(w, od, oy, ox, [&](int64_t off, int64_t, int64_t, int64_t) {
            acc += std::pow(std::fabs(static_cast<double>(xv[off])), p);
          });
        yr[ox] = static_cast<float>(r_.p == 1   ? acc
                                    : r_.p == 2 ? std::sqrt(acc)
                                                : std::pow(acc, inv_p));
      }
    }
  }

 private:
  PoolNd r_;
};

}  // namespace

void register_pool_nd_ops(Registry& r) {
  r.add(OpDef{
      "MaxPoolWithIndices", infer_pool_nd, cost_pool_nd, false, {[]() -> std::unique_ptr<Kernel> {
        return std::make_unique<MaxPoolIndicesKernel>();
      }}});
  r.add(OpDef{"LpPool", infer_pool_nd, cost_pool_nd, false, {[]() -> std::unique_ptr<Kernel> {
                return std::make_unique<LpPoolKernel>();
              }}});
}

}  // namespace graphi::ops
