// MaxPoolGrad on tiling 2x2 windows (PathNet's pools; rows wide enough for the vector path, 16
// windows per step, plus a scalar tail) and overlapping 3x3 ones (GoogleNet's), against the rule
// written out: dY goes to each window's first maximum in row-major order (strict compares: ties
// keep the earlier position, a NaN already chosen is never replaced), and with relu_input = 1 only
// when that maximum is > 0. Values on a coarse grid make ties common; some are NaN.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "graph/attributes.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

// Any window (kernel k, stride st, pad pd on every side): each window's dy goes to its first
// maximum among the in-bounds positions in row-major order; overlapping windows add up in
// window order.
Tensor max_pool_grad_ref(const Tensor& x, const Tensor& dy, int64_t k, int64_t st, int64_t pd,
                         bool relu_input) {
  const Shape& s = x.desc().shape;
  const Shape& o = dy.desc().shape;
  const int64_t planes = s[0] * s[1], H = s[2], W = s[3], OH = o[2], OW = o[3];
  Tensor dx(x.desc());
  const float* xp = x.data_as<float>();
  float* out = dx.data_as<float>();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t best = -1;
        for (int64_t h = oh * st - pd; h < oh * st - pd + k; ++h)
          for (int64_t w = ow * st - pd; w < ow * st - pd + k; ++w) {
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const int64_t at = (p * H + h) * W + w;
            if (best < 0 || xp[at] > xp[best]) best = at;
          }
        if (!relu_input || xp[best] > 0.0f)
          out[best] += dy.data_as<float>()[(p * OH + oh) * OW + ow];
      }
  return dx;
}

// X of `shape` on a coarse grid (ties are common) with a NaN every `nan_every` elements.
Tensor pool_input(const Shape& shape, uint64_t seed, int64_t nan_every) {
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, shape}, seed);
  float* xv = x.data_as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) xv[i] = std::round(xv[i] * 4.0f) / 4.0f;
  for (int64_t i = 5; i < x.numel(); i += nan_every)
    xv[i] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

// MaxPoolGrad of a k x k pool (stride, pad on every side) against max_pool_grad_ref, with and
// without relu_input, teams of 1 and 2: the same additions in the same order, so equal bits.
void check_max_pool_grad(const Tensor& x, int64_t k, int64_t stride, int64_t pad) {
  const Shape& s = x.desc().shape;
  const int64_t oh = (s[2] + 2 * pad - k) / stride + 1, ow = (s[3] + 2 * pad - k) / stride + 1;
  const Tensor dy = test::random_tensor(TensorDesc{DType::kF32, {s[0], s[1], oh, ow}}, 9);
  for (int relu : {0, 1}) {
    graph::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    a.set("relu_input", int64_t{relu});
    const Tensor want = max_pool_grad_ref(x, dy, k, stride, pad, relu == 1);
    for (int threads : {1, 2}) {
      INFO("X " << x.desc().to_string() << " kernel " << k << " stride " << stride << " pad " << pad
                << " relu_input " << relu << " threads " << threads);
      auto r = test::run_single_op("MaxPoolGrad", a, {x, dy}, 1, threads);
      REQUIRE(r.is_ok());
      REQUIRE(r->outputs[0].desc() == want.desc());
      int64_t wrong = 0;
      for (int64_t i = 0; i < want.numel(); ++i)
        wrong += r->outputs[0].data_as<float>()[i] != want.data_as<float>()[i];
      CHECK(wrong == 0);
    }
  }
}

}  // namespace

TEST_CASE("MaxPoolGrad on 2x2 tiling windows: first maximum, ties, NaN, relu_input",
          "[ops][pool][grad]") {
  // Rows of 37, 16 and 3 windows: vector blocks of 16 plus a scalar tail, and tail only.
  for (const Shape& shape : {Shape{2, 3, 6, 74}, Shape{1, 2, 4, 32}, Shape{1, 1, 2, 6}})
    check_max_pool_grad(pool_input(shape, 5, 97), 2, 2, 0);
}

TEST_CASE("MaxPoolGrad on overlapping 3x3 windows: ties, NaN, padding, relu_input",
          "[ops][pool][grad]") {
  struct P {
    int64_t stride, pad, h, w;
  };
  // GoogleNet's pools (3x3 stride 1 pad 1, stride 2 pad 1) and unpadded ones. (A 16-window
  // AVX-512 argmax for interior rows was tried and not kept: GoogleNet small's pools are 4-64
  // wide, mostly below one vector block, and the op is bound by its memory passes.)
  for (const P& p : {P{1, 1, 5, 40}, P{2, 1, 6, 70}, P{2, 0, 7, 41}, P{1, 0, 4, 19}})
    check_max_pool_grad(pool_input({2, 3, p.h, p.w}, 8, 89), 3, p.stride, p.pad);
}
