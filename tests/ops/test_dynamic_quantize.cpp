// The ops of ONNX Runtime's quantize_dynamic chains (ops/int8_matmul.cpp,
// ops/dynamic_quantize_dequantize.cpp) against ONNX's definitions, computed here in the plainest
// way: DynamicQuantizeLinear of the whole x, the integer products summed in int64, the scales
// applied in float32 in the chain's order (Cast(acc) * (x_scale * w_scale)).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::random_tensor;
using graphi::test::run_single_op;

namespace {

struct RefQuant {
  float scale, zp;
};

// ONNX DynamicQuantizeLinear's scale and zero point for x.
RefQuant ref_quant(const Tensor& x) {
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data_as<float>()[i];
    if (std::isnan(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  float s = (hi - lo) / 255.0f;
  if (s == 0.0f) s = 1.0f;
  const float zp = std::nearbyint(std::min(std::max(-lo / s, 0.0f), 255.0f));
  return {s, zp};
}

graph::Attributes attrs(std::initializer_list<std::pair<const char*, graph::Attribute>> kv) {
  graph::Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

float ref_q(float v, const RefQuant& q) {
  if (std::isnan(v)) return 0.0f;
  return std::min(std::max(std::nearbyint(v / q.scale) + q.zp, 0.0f), 255.0f);
}

}  // namespace

TEST_CASE("Int8MatMul: quantize_dynamic's MatMul chain, exactly", "[ops][quantize]") {
  // K no multiple of 4 (a partial quad), N no multiple of 64 (a masked panel), rows no multiple
  // of the kernel's 6-row blocks; per-column and one scale; with and without bias.
  const int64_t K = 42, N = 70;
  for (bool per_column : {true, false}) {
    Tensor x = random_tensor(TensorDesc{DType::kF32, {3, 7, K}}, 5, -2.0, 3.5);
    x.data_as<float>()[3] = std::numeric_limits<float>::quiet_NaN();
    Tensor w(TensorDesc{DType::kF32, {K, N}});
    for (int64_t i = 0; i < w.numel(); ++i)
      w.data_as<float>()[i] = static_cast<float>((i * 37 + 11) % 256 - 128);  // -128 .. 127
    Tensor ws = random_tensor(TensorDesc{DType::kF32, {per_column ? N : 1}}, 6, 0.001, 0.02);
    Tensor bias = random_tensor(TensorDesc{DType::kF32, {N}}, 7, -1, 1);
    const RefQuant q = ref_quant(x);
    for (int threads : {1, 3}) {
      auto r =
          run_single_op("Int8MatMul", {}, {x, w, ws, bias}, 1, threads, {false, true, true, true});
      REQUIRE(r.is_ok());
      const Tensor& y = r->outputs[0];
      CHECK(y.desc().shape == Shape{3, 7, N});
      for (int64_t row = 0; row < 21; ++row)
        for (int64_t j = 0; j < N; ++j) {
          int64_t acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<int64_t>(ref_q(x.data_as<float>()[row * K + k], q) - q.zp) *
                   static_cast<int64_t>(w.data_as<float>()[k * N + j]);
          const float s = q.scale * ws.data_as<float>()[per_column ? j : 0];
          const float want = static_cast<float>(acc) * s + bias.data_as<float>()[j];
          INFO("row " << row << " column " << j << " threads " << threads);
          REQUIRE(y.data_as<float>()[row * N + j] == want);
        }
    }
  }
  // An all-zero x: scale 1, zero point 0, y = 0.
  Tensor zero(TensorDesc{DType::kF32, {2, 8}});
  Tensor w8(TensorDesc{DType::kF32, {8, 3}});
  for (int64_t i = 0; i < w8.numel(); ++i) w8.data_as<float>()[i] = static_cast<float>(i % 7 - 3);
  Tensor one(TensorDesc{DType::kF32, {1}});
  one.data_as<float>()[0] = 1.0f;
  auto z = run_single_op("Int8MatMul", {}, {zero, w8, one}, 1, 2, {false, true, true});
  REQUIRE(z.is_ok());
  for (int64_t i = 0; i < 6; ++i) CHECK(z->outputs[0].data_as<float>()[i] == 0.0f);
  // Weights that are no int8 values, a scale that is not positive: refused, naming them.
  Tensor bad_w(TensorDesc{DType::kF32, {8, 3}});
  bad_w.data_as<float>()[4] = 0.5f;
  auto bw = run_single_op("Int8MatMul", {}, {zero, bad_w, one}, 1, 1, {false, true, true});
  REQUIRE_FALSE(bw.is_ok());
  CHECK_THAT(bw.status().message(), Catch::Contains("W[1, 1] = 0.5"));
  auto bs = run_single_op("Int8MatMul", {}, {zero, w8, Tensor(TensorDesc{DType::kF32, {1}})}, 1, 1,
                          {false, true, true});
  REQUIRE_FALSE(bs.is_ok());
  CHECK_THAT(bs.status().message(), Catch::Contains("w_scale[0]"));
  // Shapes that do not multiply.
  auto shape = run_single_op("Int8MatMul", {}, {Tensor(TensorDesc{DType::kF32, {2, 7}}), w8, one},
                             1, 1, {false, true, true});
  REQUIRE_FALSE(shape.is_ok());
  CHECK_THAT(shape.status().message(), Catch::Contains("do not multiply"));
}

TEST_CASE("DynamicQuantizeDequantize: DynamicQuantizeLinear of the whole tensor, back to float",
          "[ops][quantize]") {
  for (double lo : {-3.0, 0.5}) {  // a range across 0, and one of positive values (zp 0)
    Tensor x = random_tensor(TensorDesc{DType::kF32, {2, 5, 9, 7}}, 9, lo, 4.0);
    x.data_as<float>()[10] = std::numeric_limits<float>::quiet_NaN();
    const RefQuant q = ref_quant(x);
    x.data_as<float>()[11] = 2.5f * q.scale;  // a tie: rounds to even
    for (int threads : {1, 3}) {
      auto r = run_single_op("DynamicQuantizeDequantize", {}, {x}, 1, threads);
      REQUIRE(r.is_ok());
      for (int64_t i = 0; i < x.numel(); ++i) {
        const float want = (ref_q(x.data_as<float>()[i], q) - q.zp) * q.scale;
        INFO("element " << i << " threads " << threads);
        REQUIRE(r->outputs[0].data_as<float>()[i] == want);
      }
    }
  }
}

TEST_CASE("Int8MatMul with a given scale: a QDQ pair's QuantizeLinear, then the int8 product",
          "[ops][quantize]") {
  // uint8 (0..255) and int8 (-128..127) activations; saturation both ways and a tie included.
  const int64_t K = 19, N = 33;
  Tensor w(TensorDesc{DType::kF32, {K, N}});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data_as<float>()[i] = static_cast<float>((i * 53 + 7) % 256 - 128);
  Tensor ws = random_tensor(TensorDesc{DType::kF32, {N}}, 3, 0.001, 0.02);
  struct Case {
    double scale;
    int64_t zp, qmin, qmax;
  };
  for (const Case& c : {Case{0.021, 131, 0, 255}, Case{0.017, -3, -128, 127}}) {
    Tensor x = random_tensor(TensorDesc{DType::kF32, {13, K}}, 4, -4, 4);
    const auto s = static_cast<float>(c.scale);
    x.data_as<float>()[0] = 2.5f * s, x.data_as<float>()[1] = 1e6f, x.data_as<float>()[2] = -1e6f;
    for (int threads : {1, 3}) {
      auto r = run_single_op(
          "Int8MatMul",
          attrs({{"x_scale", c.scale}, {"x_zero_point", c.zp}, {"qmin", c.qmin}, {"qmax", c.qmax}}),
          {x, w, ws}, 1, threads, {false, true, true});
      REQUIRE(r.is_ok());
      for (int64_t row = 0; row < 13; ++row)
        for (int64_t j = 0; j < N; ++j) {
          int64_t acc = 0;
          for (int64_t k = 0; k < K; ++k) {
            const float q =
                std::min(std::max(std::nearbyint(x.data_as<float>()[row * K + k] / s) + c.zp,
                                  static_cast<float>(c.qmin)),
                         static_cast<float>(c.qmax));
            acc += (static_cast<int64_t>(q) - c.zp) *
                   static_cast<int64_t>(w.data_as<float>()[k * N + j]);
          }
          const float want = static_cast<float>(acc) * (s * ws.data_as<float>()[j]);
          INFO("zp " << c.zp << " row " << row << " column " << j << " threads " << threads);
          REQUIRE(r->outputs[0].data_as<float>()[row * N + j] == want);
        }
    }
  }
  // A zero point outside the range: refused.
  auto bad =
      run_single_op("Int8MatMul", attrs({{"x_scale", 0.1}, {"x_zero_point", int64_t{300}}}),
                    {Tensor(TensorDesc{DType::kF32, {2, K}}), w, ws}, 1, 1, {false, true, true});
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("x_zero_point 300"));
}
