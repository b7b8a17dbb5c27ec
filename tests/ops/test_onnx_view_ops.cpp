// Gather (ops/onnx_view_ops.cpp) against a naive reference written from the ONNX definition:
// every axis, scalar / 1-D / 2-D indices, negative indices, int32 and int64 indices, float and
// int64 data, teams of 1 and 2 threads; errors for bad inputs and out-of-range constant indices.
#include <catch2/catch.hpp>
#include <cstring>

#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

Tensor index_tensor(DType dt, const Shape& shape, const std::vector<int64_t>& v) {
  Tensor t(TensorDesc{dt, shape});
  for (size_t k = 0; k < v.size(); ++k) {
    if (dt == DType::kI64)
      t.data_as<int64_t>()[k] = v[k];
    else
      t.data_as<int32_t>()[k] = static_cast<int32_t>(v[k]);
  }
  return t;
}

// out[a, j..., b] = data[a, idx[j...], b] with a over dims before axis, b over dims after.
Tensor reference_gather(const Tensor& data, const std::vector<int64_t>& idx, const Shape& idx_shape,
                        int axis) {
  const Shape& s = data.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t dim = s[static_cast<size_t>(axis)];
  Shape out(s.begin(), s.begin() + axis);
  out.insert(out.end(), idx_shape.begin(), idx_shape.end());
  out.insert(out.end(), s.begin() + axis + 1, s.end());
  Tensor o(TensorDesc{data.dtype(), out});
  const size_t e = dtype_size(data.dtype());
  int64_t pos = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t i : idx) {
      const int64_t r = i < 0 ? i + dim : i;
      for (int64_t b = 0; b < inner; ++b, ++pos)
        std::memcpy(static_cast<char*>(o.data()) + pos * e,
                    static_cast<const char*>(data.data()) + ((a * dim + r) * inner + b) * e, e);
    }
  return o;
}

}  // namespace

TEST_CASE("onnx view ops: Gather matches the reference") {
  struct Case {
    Shape data;
    int axis;
    Shape idx_shape;
    std::vector<int64_t> idx;
  };
  const std::vector<Case> cases = {
      {{5, 3}, 0, {}, {2}},                   // scalar index: drops the axis
      {{5, 3}, 0, {4}, {4, 0, -1, 2}},        // nn.Embedding rows, negative index
      {{2, 6, 3}, 1, {2, 2}, {5, 0, 1, -6}},  // 2-D indices in the middle
      {{2, 3, 7}, 2, {3}, {6, 6, 0}},         // last axis, repeats
      {{2, 3, 7}, -1, {1}, {3}},              // negative axis
  };
  for (const Case& c : cases)
    for (DType idt : {DType::kI32, DType::kI64})
      for (DType ddt : {DType::kF32, DType::kI64})
        for (int threads : {1, 2})
          for (bool constant : {false, true}) {
            INFO("data " << shape_to_string(c.data) << " axis " << c.axis << " threads " << threads
                         << " constant indices " << constant);
            Tensor data = test::random_tensor(TensorDesc{ddt, c.data}, 11, -100, 100);
            Tensor idx = index_tensor(idt, c.idx_shape, c.idx);
            graph::Attributes a;
            a.set("axis", int64_t{c.axis});
            const int axis = c.axis < 0 ? c.axis + static_cast<int>(c.data.size()) : c.axis;
            Tensor want = reference_gather(data, c.idx, c.idx_shape, axis);
            auto r = run_single_op("Gather", a, {data, idx}, 1, threads, {false, constant});
            REQUIRE(r.is_ok());
            REQUIRE(r->outputs[0].desc() == want.desc());
            CHECK(std::memcmp(r->outputs[0].data(), want.data(), want.bytes()) == 0);
            CHECK(r->kernel == "gather_copy");
          }
}

TEST_CASE("onnx view ops: Gather errors name the node and field") {
  Tensor data(TensorDesc{DType::kF32, {4, 2}});
  graph::Attributes a;
  auto r =
      run_single_op("Gather", a, {data, index_tensor(DType::kI64, {1}, {4})}, 1, 1, {false, true});
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("index 4 (entry 0 of indices) is out of range for axis 0 of size 4"));
  r = run_single_op("Gather", a, {data, data}, 1, 1);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("indices"));
  a.set("axis", int64_t{2});
  r = run_single_op("Gather", a, {data, index_tensor(DType::kI64, {1}, {0})}, 1, 1);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("axis"));
}
