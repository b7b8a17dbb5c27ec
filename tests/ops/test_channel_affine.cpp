// ChannelAffine (ops/channel_affine.cpp): Y = act(X * S[c] + B[c]) against the definition in
// double, NCHW (S and B [C, 1, 1] and [1, C, 1, 1]) and blocked nChw16c with a padded block
// (its padding lanes stay zero), with and without Relu, on 1 and 2 threads; malformed nodes are
// errors that name the field. Tagged [channel_affine]: tests/CMakeLists.txt runs it again with
// GRAPHI_SIMD=scalar and avx2 (the portable loop instead of the AVX-512 one).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

std::string error_of(const graph::Attributes& attrs, const std::vector<Tensor>& inputs) {
  auto r = test::run_single_op("ChannelAffine", attrs, inputs, 1);
  REQUIRE_FALSE(r.is_ok());
  return r.status().message();
}

}  // namespace

TEST_CASE("ChannelAffine: X * S + B (+ Relu) per channel, NCHW and blocked",
          "[ops][channel_affine]") {
  const int64_t n = 2, c = 40, h = 5, w = 7, cb = 3;
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {n, c, h, w}}, 1);
  const Tensor s = test::random_tensor(TensorDesc{DType::kF32, {c, 1, 1}}, 2);
  const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {c, 1, 1}}, 3);
  for (bool relu : {false, true}) {
    graph::Attributes a;
    if (relu) a.set("activation", std::string("Relu"));
    auto want = [&](int64_t i) {
      const int64_t ch = i / (h * w) % c;
      const double v =
          double{x.data_as<float>()[i]} * s.data_as<float>()[ch] + double{b.data_as<float>()[ch]};
      return relu ? std::max(v, 0.0) : v;
    };
    for (int threads : {1, 2}) {
      INFO("relu " << relu << ", threads " << threads);
      // NCHW, S and B as [C, 1, 1] and as [1, C, 1, 1].
      for (bool four_d : {false, true}) {
        Tensor s4 = s, b4 = b;
        if (four_d) {
          s4 = Tensor(TensorDesc{DType::kF32, {1, c, 1, 1}});
          b4 = Tensor(TensorDesc{DType::kF32, {1, c, 1, 1}});
          std::copy_n(s.data_as<float>(), c, s4.data_as<float>());
          std::copy_n(b.data_as<float>(), c, b4.data_as<float>());
        }
        auto r = test::run_single_op("ChannelAffine", a, {x, s4, b4}, 1, threads);
        REQUIRE(r.is_ok());
        double worst = 0;
        for (int64_t i = 0; i < x.numel(); ++i)
          worst = std::max(worst, std::abs(r->outputs[0].data_as<float>()[i] - want(i)));
        CHECK(worst < 1e-6);
      }
      // Blocked [N, 3, H, W, 16]: lane l of block k is channel 16 k + l; channels 40..47 are
      // padding (zero in X, S and B, and so in Y).
      Tensor xb(TensorDesc{DType::kF32, {n, cb, h, w, 16}}),
          sb(TensorDesc{DType::kF32, {1, cb, 1, 1, 16}}),
          bb(TensorDesc{DType::kF32, {1, cb, 1, 1, 16}});
      for (int64_t ch = 0; ch < cb * 16; ++ch) {
        sb.data_as<float>()[ch] = ch < c ? s.data_as<float>()[ch] : 0.0f;
        bb.data_as<float>()[ch] = ch < c ? b.data_as<float>()[ch] : 0.0f;
      }
      auto at = [&](int64_t img, int64_t ch, int64_t p) {
        return ((img * cb + ch / 16) * h * w + p) * 16 + ch % 16;
      };
      for (int64_t img = 0; img < n; ++img)
        for (int64_t ch = 0; ch < cb * 16; ++ch)
          for (int64_t p = 0; p < h * w; ++p)
            xb.data_as<float>()[at(img, ch, p)] =
                ch < c ? x.data_as<float>()[(img * c + ch) * h * w + p] : 0.0f;
      auto r = test::run_single_op("ChannelAffine", a, {xb, sb, bb}, 1, threads);
      REQUIRE(r.is_ok());
      double worst = 0;
      bool padding_zero = true;
      for (int64_t img = 0; img < n; ++img)
        for (int64_t ch = 0; ch < cb * 16; ++ch)
          for (int64_t p = 0; p < h * w; ++p) {
            const float got = r->outputs[0].data_as<float>()[at(img, ch, p)];
            if (ch >= c)
              padding_zero = padding_zero && got == 0.0f;
            else
              worst = std::max(worst, std::abs(got - want((img * c + ch) * h * w + p)));
          }
      CHECK(worst < 1e-6);
      CHECK(padding_zero);
    }
  }
  // NaN stays NaN through the Relu (as graphi's Relu keeps it), on both layouts.
  {
    graph::Attributes a;
    a.set("activation", std::string("Relu"));
    Tensor xn = x;
    xn.data_as<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    auto r = test::run_single_op("ChannelAffine", a, {xn, s, b}, 1, 1);
    REQUIRE(r.is_ok());
    CHECK(std::isnan(r->outputs[0].data_as<float>()[5]));
    Tensor xb(TensorDesc{DType::kF32, {1, 1, 2, 2, 16}});
    Tensor sb(TensorDesc{DType::kF32, {1, 1, 1, 1, 16}}),
        bb(TensorDesc{DType::kF32, {1, 1, 1, 1, 16}});
    std::fill_n(xb.data_as<float>(), 64, -1.0f);
    std::fill_n(sb.data_as<float>(), 16, 1.0f);
    std::fill_n(bb.data_as<float>(), 16, 0.0f);
    xb.data_as<float>()[17] = std::numeric_limits<float>::quiet_NaN();
    auto rb = test::run_single_op("ChannelAffine", a, {xb, sb, bb}, 1, 1);
    REQUIRE(rb.is_ok());
    CHECK(std::isnan(rb->outputs[0].data_as<float>()[17]));
    CHECK(rb->outputs[0].data_as<float>()[16] == 0.0f);
  }
  graph::Attributes none;
  const Tensor s39 = test::random_tensor(TensorDesc{DType::kF32, {39, 1, 1}}, 4);
  CHECK_THAT(error_of(none, {x, s39, b}),
             Catch::Contains("input S must be float32 [1, 40, 1, 1] (one value per channel of X"));
  CHECK_THAT(error_of(none, {x, s, s39}), Catch::Contains("input B must be float32 [1, 40, 1, 1]"));
  graph::Attributes sig;
  sig.set("activation", std::string("Sigmoid"));
  CHECK_THAT(error_of(sig, {x, s, b}),
             Catch::Contains("attribute 'activation' = 'Sigmoid' is not supported (Relu or none)"));
  const Tensor x3 = test::random_tensor(TensorDesc{DType::kF32, {c, h, w}}, 5);
  CHECK_THAT(error_of(none, {x3, s, b}), Catch::Contains("input X must be float32 [N, C, H, W]"));
}
