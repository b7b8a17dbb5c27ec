// GroupNorm (ops/group_norm.cpp) against the definition in double (mean and variance of each
// (image, group) over its channels and pixels, then * scale + bias per channel, then Relu), NCHW
// and channel-blocked with groups inside one block, groups spanning blocks, groups that straddle
// blocks (24 channels per group over 16-lane blocks), padded blocks (their lanes stay zero), one
// group and one group per channel; 1 and 2 threads; malformed nodes are errors naming the field.
// Tagged [group_norm]: tests/CMakeLists.txt runs it again with GRAPHI_SIMD=scalar and avx2.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

// The definition, in double, of NCHW x.
std::vector<double> group_norm_ref(const Tensor& x, const Tensor& s, const Tensor& b,
                                   int64_t groups, double eps, bool relu) {
  const int64_t n = x.desc().shape[0], c = x.desc().shape[1];
  const int64_t pixels = x.numel() / n / c, cpg = c / groups;
  const float* xv = x.data_as<float>();
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t off = (i * c + g * cpg) * pixels, len = cpg * pixels;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < len; ++k) mean += xv[off + k];
      mean /= static_cast<double>(len);
      for (int64_t k = 0; k < len; ++k) var += (xv[off + k] - mean) * (xv[off + k] - mean);
      var /= static_cast<double>(len);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t ch = g * cpg + k / pixels;
        double v = (xv[off + k] - mean) / std::sqrt(var + eps) * s.data_as<float>()[ch] +
                   b.data_as<float>()[ch];
        y[static_cast<size_t>(off + k)] = relu ? std::max(v, 0.0) : v;
      }
    }
  return y;
}

// NCHW [N, C, H, W] -> [N, ceil(C/B), H, W, B], padding lanes zero.
Tensor to_blocked(const Tensor& x, int64_t block) {
  const Shape& s = x.desc().shape;
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3], cb = (c + block - 1) / block;
  Tensor t(TensorDesc{DType::kF32, {n, cb, s[2], s[3], block}});
  std::fill_n(t.data_as<float>(), t.numel(), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        t.data_as<float>()[((i * cb + ch / block) * hw + p) * block + ch % block] =
            x.data_as<float>()[(i * c + ch) * hw + p];
  return t;
}

std::string error_of(const graph::Attributes& attrs, const std::vector<Tensor>& inputs) {
  auto r = test::run_single_op("GroupNorm", attrs, inputs, 1);
  REQUIRE_FALSE(r.is_ok());
  return r.status().message();
}

}  // namespace

TEST_CASE("GroupNorm: per-group statistics, per-channel affine, NCHW and blocked",
          "[ops][group_norm]") {
  struct Case {
    int64_t c, groups, block;
  };
  // 8 channels a group in 16 lanes (BiT), 24 a group (units of 48 channels), padded blocks
  // (40 = 2.5 blocks of 16), one group, one group per channel, 8-lane blocks (AVX2).
  for (const Case k : {Case{32, 4, 16}, Case{48, 2, 16}, Case{40, 5, 16}, Case{64, 1, 16},
                       Case{24, 24, 16}, Case{24, 4, 8}, Case{20, 5, 8}}) {
    const int64_t n = 2, h = 5, w = 7;
    // An offset mean (x in [2, 4]) so a one-pass variance would lose digits.
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {n, k.c, h, w}}, 11, 2.0, 4.0);
    const Tensor s = test::random_tensor(TensorDesc{DType::kF32, {k.c}}, 12);
    const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {k.c}}, 13);
    for (bool relu : {false, true}) {
      graph::Attributes a;
      a.set("num_groups", k.groups);
      a.set("epsilon", 1e-5);
      if (relu) a.set("activation", std::string("Relu"));
      const std::vector<double> want = group_norm_ref(x, s, b, k.groups, 1e-5, relu);
      for (int threads : {1, 2}) {
        INFO("C " << k.c << ", groups " << k.groups << ", block " << k.block << ", relu " << relu
                  << ", threads " << threads);
        auto r = test::run_single_op("GroupNorm", a, {x, s, b}, 1, threads);
        REQUIRE(r.is_ok());
        double worst = 0;
        for (int64_t i = 0; i < x.numel(); ++i)
          worst = std::max(
              worst, std::abs(r->outputs[0].data_as<float>()[i] - want[static_cast<size_t>(i)]));
        CHECK(worst < 2e-5);

        graph::Attributes ab = a;
        ab.set("block", k.block);
        auto rb = test::run_single_op("GroupNorm", ab, {to_blocked(x, k.block), s, b}, 1, threads);
        REQUIRE(rb.is_ok());
        const int64_t cb = (k.c + k.block - 1) / k.block;
        double worst_b = 0;
        bool padding_zero = true;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t ch = 0; ch < cb * k.block; ++ch)
            for (int64_t p = 0; p < h * w; ++p) {
              const float got =
                  rb->outputs[0].data_as<float>()[((i * cb + ch / k.block) * h * w + p) * k.block +
                                                  ch % k.block];
              if (ch >= k.c)
                padding_zero = padding_zero && got == 0.0f;
              else
                worst_b = std::max(
                    worst_b, std::abs(got - want[static_cast<size_t>((i * k.c + ch) * h * w + p)]));
            }
        CHECK(worst_b < 2e-5);
        CHECK(padding_zero);
      }
    }
  }
  // NaN stays NaN through the Relu.
  {
    Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 16, 2, 2}}, 14);
    const Tensor s = test::random_tensor(TensorDesc{DType::kF32, {16}}, 15);
    x.data_as<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    graph::Attributes a;
    a.set("num_groups", int64_t{2});
    a.set("activation", std::string("Relu"));
    auto r = test::run_single_op("GroupNorm", a, {x, s, s}, 1, 1);
    REQUIRE(r.is_ok());
    CHECK(std::isnan(r->outputs[0].data_as<float>()[1]));         // its group's mean is NaN
    CHECK_FALSE(std::isnan(r->outputs[0].data_as<float>()[40]));  // the other group
  }
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 12, 3, 3}}, 16);
  const Tensor s = test::random_tensor(TensorDesc{DType::kF32, {12}}, 17);
  const Tensor s11 = test::random_tensor(TensorDesc{DType::kF32, {11}}, 18);
  graph::Attributes a;
  a.set("num_groups", int64_t{5});
  CHECK_THAT(error_of(a, {x, s, s}),
             Catch::Contains("attribute 'num_groups' = 5 must divide the 12 channels of X"));
  a.set("num_groups", int64_t{4});
  CHECK_THAT(error_of(a, {x, s11, s}),
             Catch::Contains("input X must be [N, C, D1, ...] with C = 11 (the scale's length)"));
  const Tensor s12b = test::random_tensor(TensorDesc{DType::kF32, {12, 1}}, 19);
  CHECK_THAT(error_of(a, {x, s, s12b}),
             Catch::Contains("input 2 (bias) must be float32[12] (one value per channel)"));
  graph::Attributes sig = a;
  sig.set("activation", std::string("Sigmoid"));
  CHECK_THAT(error_of(sig, {x, s, s}),
             Catch::Contains("attribute 'activation' = 'Sigmoid' is not supported (Relu or none)"));
  graph::Attributes blk = a;
  blk.set("block", int64_t{16});
  CHECK_THAT(
      error_of(blk, {x, s, s}),
      Catch::Contains("input X must be channel-blocked [N, ceil(C/B), H, W, B] with B = 16"));
}
