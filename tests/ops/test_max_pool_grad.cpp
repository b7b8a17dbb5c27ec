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

Tensor max_pool_grad_2x2_ref(const Tensor& x, const Tensor& dy, bool relu_input) {
  const Shape& s = x.desc().shape;
  const int64_t planes = s[0] * s[1], H = s[2], W = s[3], OH = H / 2, OW = W / 2;
  Tensor dx(x.desc());  // zero-filled
  const float* xp = x.data_as<float>();
  const float* g = dy.data_as<float>();
  float* out = dx.data_as<float>();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t best = (p * H + 2 * oh) * W + 2 * ow;
        for (int64_t dh = 0; dh < 2; ++dh)
          for (int64_t dw = 0; dw < 2; ++dw) {
            const int64_t at = (p * H + 2 * oh + dh) * W + 2 * ow + dw;
            if (xp[at] > xp[best]) best = at;
          }
        if (!relu_input || xp[best] > 0.0f) out[best] = g[(p * OH + oh) * OW + ow];
      }
  return dx;
}

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

}  // namespace

TEST_CASE("MaxPoolGrad on 2x2 tiling windows: first maximum, ties, NaN, relu_input",
          "[ops][pool][grad]") {
  for (const Shape& shape : {Shape{2, 3, 6, 74}, Shape{1, 2, 4, 32}, Shape{1, 1, 2, 6}}) {
    Tensor x = test::random_tensor(TensorDesc{DType::kF32, shape}, 5);
    float* xv = x.data_as<float>();
    for (int64_t i = 0; i < x.numel(); ++i) xv[i] = std::round(xv[i] * 4.0f) / 4.0f;  // ties
    for (int64_t i = 7; i < x.numel(); i += 97) xv[i] = std::numeric_limits<float>::quiet_NaN();
    const Tensor dy = test::random_tensor(
        TensorDesc{DType::kF32, {shape[0], shape[1], shape[2] / 2, shape[3] / 2}}, 6);
    for (int relu : {0, 1}) {
      graph::Attributes a;
      a.set("kernel_shape", std::vector<int64_t>{2, 2});
      a.set("strides", std::vector<int64_t>{2, 2});
      a.set("relu_input", int64_t{relu});
      const Tensor want = max_pool_grad_2x2_ref(x, dy, relu == 1);
      for (int threads : {1, 2}) {
        INFO("X " << x.desc().to_string() << " relu_input " << relu << " threads " << threads);
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
}

TEST_CASE("MaxPoolGrad on overlapping 3x3 windows: ties, NaN, padding, relu_input",
          "[ops][pool][grad]") {
  struct P {
    int64_t stride, pad, h, w;
  };
  // GoogleNet's pools (3x3 stride 1 pad 1, stride 2 pad 1) and unpadded ones. (A 16-window
  // AVX-512 argmax for interior rows was tried and not kept: GoogleNet small's pools are 4-64
  // wide, mostly below one vector block, and the op is bound by its memory passes.)
  for (const P& p : {P{1, 1, 5, 40}, P{2, 1, 6, 70}, P{2, 0, 7, 41}, P{1, 0, 4, 19}}) {
    const Shape shape{2, 3, p.h, p.w};
    Tensor x = test::random_tensor(TensorDesc{DType::kF32, shape}, 8);
    float* xv = x.data_as<float>();
    for (int64_t i = 0; i < x.numel(); ++i) xv[i] = std::round(xv[i] * 4.0f) / 4.0f;  // ties
    for (int64_t i = 5; i < x.numel(); i += 89) xv[i] = std::numeric_limits<float>::quiet_NaN();
    const int64_t oh = (p.h + 2 * p.pad - 3) / p.stride + 1,
                  ow = (p.w + 2 * p.pad - 3) / p.stride + 1;
    const Tensor dy = test::random_tensor(TensorDesc{DType::kF32, {2, 3, oh, ow}}, 9);
    for (int relu : {0, 1}) {
      graph::Attributes a;
      a.set("kernel_shape", std::vector<int64_t>{3, 3});
      a.set("strides", std::vector<int64_t>{p.stride, p.stride});
      a.set("pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad});
      a.set("relu_input", int64_t{relu});
      const Tensor want = max_pool_grad_ref(x, dy, 3, p.stride, p.pad, relu == 1);
      for (int threads : {1, 2}) {
        INFO("X " << x.desc().to_string() << " stride " << p.stride << " pad " << p.pad
                  << " relu_input " << relu << " threads " << threads);
        auto r = test::run_single_op("MaxPoolGrad", a, {x, dy}, 1, threads);
        REQUIRE(r.is_ok());
        REQUIRE(r->outputs[0].desc() == want.desc());
        // The same additions in the same order: equal bits.
        int64_t wrong = 0;
        for (int64_t i = 0; i < want.numel(); ++i)
          wrong += r->outputs[0].data_as<float>()[i] != want.data_as<float>()[i];
        CHECK(wrong == 0);
      }
    }
  }
}
