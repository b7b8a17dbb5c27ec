// SplitSum (ops/split_sum.cpp): the sum of equal slices along an axis against a naive loop, on
// every axis of a 4-D and a 5-D tensor, 1 and 2 threads, and its refusals.
#include <catch2/catch.hpp>

#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

Tensor naive_split_sum(const Tensor& x, int axis, int64_t parts) {
  const Shape& s = x.desc().shape;
  Shape out = s;
  out[axis] /= parts;
  Tensor y(TensorDesc{DType::kF32, out});
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t piece = out[axis] * inner;
  const float* px = x.data_as<float>();
  float* py = y.data_as<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < piece; ++i) {
      double acc = 0;
      for (int64_t p = 0; p < parts; ++p) acc += px[(o * parts + p) * piece + i];
      py[o * piece + i] = static_cast<float>(acc);
    }
  return y;
}

}  // namespace

TEST_CASE("SplitSum equals the naive sum of its parts on every axis", "[ops][split_sum]") {
  for (const Shape& shape : {Shape{3, 12, 5, 7}, Shape{2, 6, 4, 3, 16}}) {
    for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
      for (int64_t parts : {int64_t{1}, int64_t{2}, int64_t{3}}) {
        if (shape[axis] % parts != 0) continue;
        const Tensor x = test::random_tensor(TensorDesc{DType::kF32, shape}, 40 + axis);
        graph::Attributes a;
        a.set("axis", int64_t{axis});
        a.set("parts", parts);
        const Tensor want = naive_split_sum(x, axis, parts);
        for (int threads : {1, 2}) {
          INFO("rank " << shape.size() << " axis " << axis << " parts " << parts << " threads "
                       << threads);
          auto r = test::run_single_op("SplitSum", a, {x}, 1, threads);
          REQUIRE(r.is_ok());
          CHECK(r->outputs[0].desc().shape == want.desc().shape);
          CHECK(test::max_rel_error(r->outputs[0], want) < 1e-6);
        }
      }
    }
  }
}

TEST_CASE("SplitSum refuses parts that do not divide the axis, and a bad axis",
          "[ops][split_sum]") {
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 6, 3}}, 3);
  for (auto [axis, parts, what] :
       {std::tuple{1, int64_t{4}, "'parts' = 4"}, std::tuple{3, int64_t{2}, "'axis' = 3"},
        std::tuple{1, int64_t{0}, "'parts' = 0"}}) {
    graph::Attributes a;
    a.set("axis", int64_t{axis});
    a.set("parts", parts);
    auto r = test::run_single_op("SplitSum", a, {x}, 1, 1);
    INFO(what);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains(what) && Catch::Contains("SplitSum"));
  }
}
