// CenterCropPad (ops/center_crop_pad.cpp) against a loop written from ONNX's definition (each
// output element reads the input element at the same offset from the centred copy region, or is
// zero), cropping, padding and both at once, on the axes of ONNX's examples (all dims, CHW, HWC,
// negative), float32 and int64, teams of 1 and 3 threads; its errors.
#include <catch2/catch.hpp>
#include <cstring>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

constexpr auto ints = test::i64_tensor;

// out[d] lengths given; input index = out index - pad_start + crop_start per dim.
template <typename T>
Tensor crop_pad_ref(const Tensor& x, const Shape& out) {
  Tensor y(TensorDesc{x.dtype(), out});
  const Shape& in = x.shape();
  for (int64_t e = 0; e < y.numel(); ++e) {
    int64_t rem = e, src = 0, stride = 1;
    bool inside = true;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t o = rem % out[d];
      rem /= out[d];
      const int64_t crop = in[d] > out[d] ? (in[d] - out[d]) / 2 : 0;
      const int64_t pad = out[d] > in[d] ? (out[d] - in[d]) / 2 : 0;
      const int64_t i = o - pad + crop;
      inside = inside && i >= 0 && i < in[d];
      src += i * stride;
      stride *= in[d];
    }
    y.data_as<T>()[e] = inside ? x.data_as<T>()[src] : T(0);
  }
  return y;
}

}  // namespace

TEST_CASE("CenterCropPad crops and pads around the centre as ONNX defines",
          "[ops][center_crop_pad]") {
  struct Case {
    Shape in;
    std::vector<int64_t> shape, axes;  // axes empty: attribute absent (every dim)
    Shape out;
  };
  const std::vector<Case> cases = {
      {{20, 10, 3}, {10, 7, 3}, {}, {10, 7, 3}},    // crop (test_center_crop_pad_crop)
      {{10, 7, 3}, {20, 10, 3}, {}, {20, 10, 3}},   // pad
      {{20, 8, 3}, {10, 10, 3}, {}, {10, 10, 3}},   // crop one dim, pad another
      {{3, 20, 8}, {10, 9}, {1, 2}, {3, 10, 9}},    // CHW axes
      {{20, 8, 3}, {10, 9}, {0, 1}, {10, 9, 3}},    // HWC axes
      {{20, 8, 3}, {10, 9}, {-3, -2}, {10, 9, 3}},  // negative axes
      {{7, 5}, {4, 8}, {}, {4, 8}},                 // odd differences round down before
      {{9}, {4}, {}, {4}}};                         // rank 1
  for (const Case& c : cases)
    for (DType dt : {DType::kF32, DType::kI64})
      for (int threads : {1, 3}) {
        INFO("input " << shape_to_string(c.in) << " shape " << shape_to_string(c.shape) << " axes "
                      << shape_to_string(c.axes) << " " << dtype_name(dt) << ", " << threads
                      << " threads");
        Tensor x = test::random_tensor({DType::kF32, c.in}, 5);
        if (dt == DType::kI64) {
          Tensor xi(TensorDesc{DType::kI64, c.in});
          for (int64_t e = 0; e < x.numel(); ++e)
            xi.data_as<int64_t>()[e] = static_cast<int64_t>(x.data_as<float>()[e] * 1000);
          x = std::move(xi);
        }
        graph::Attributes a;
        if (!c.axes.empty()) a.set("axes", c.axes);
        auto r = run_single_op("CenterCropPad", a, {x, ints(c.shape)}, 1, threads, {false, true});
        if (!r.is_ok()) FAIL(r.status().message());
        CHECK(r->kernel == "center_crop_pad");
        const Tensor want =
            dt == DType::kF32 ? crop_pad_ref<float>(x, c.out) : crop_pad_ref<int64_t>(x, c.out);
        REQUIRE(r->outputs[0].desc() == want.desc());
        CHECK(std::memcmp(r->outputs[0].data(), want.data(), want.bytes()) == 0);
      }
}

TEST_CASE("CenterCropPad refuses bad nodes naming the field", "[ops][center_crop_pad]") {
  auto err = [](const Result<test::OpRun>& r) {
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  const Tensor x(TensorDesc{DType::kF32, {4, 5, 3}});
  const std::vector<bool> consts{false, true};
  CHECK_THAT(err(run_single_op("CenterCropPad", {}, {x, ints({2, 2, 2})}, 1, 1, {})),
             Catch::Contains("must be a constant"));
  CHECK_THAT(err(run_single_op("CenterCropPad", {}, {x, ints({2, 2})}, 1, 1, consts)),
             Catch::Contains("input 1 (shape) [2, 2] must have 3 entries"));
  graph::Attributes a;
  a.set("axes", std::vector<int64_t>{0, 3});
  CHECK_THAT(err(run_single_op("CenterCropPad", a, {x, ints({2, 2})}, 1, 1, consts)),
             Catch::Contains("axes"));
  a.set("axes", std::vector<int64_t>{1, -2});
  CHECK_THAT(err(run_single_op("CenterCropPad", a, {x, ints({2, 2})}, 1, 1, consts)),
             Catch::Contains("names dim 1 twice"));
  CHECK_THAT(err(run_single_op("CenterCropPad", {}, {x, ints({2, 0, 2})}, 1, 1, consts)),
             Catch::Contains("empty tensors"));
}
