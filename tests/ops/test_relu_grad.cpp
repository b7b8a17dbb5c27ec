// ReluGrad (ops/relu_grad.cpp) against its definition: dY where Y > 0, else 0 (zero at exactly 0
// and for a NaN Y, as PyTorch's threshold_backward), on 1 and 3 threads; shape errors name the
// inputs.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using test::run_single_op;

TEST_CASE("ReluGrad passes dY where Y > 0 and zero elsewhere", "[ops][training]") {
  const int64_t n = 1003;  // not a multiple of any vector width
  Tensor dy = test::random_tensor({DType::kF32, {n}}, 3, -2, 2);
  Tensor y = test::random_tensor({DType::kF32, {n}}, 4, -1, 1);
  float* yp = y.data_as<float>();
  yp[0] = 0.0f;
  yp[1] = -0.0f;
  yp[2] = std::numeric_limits<float>::quiet_NaN();
  yp[3] = std::numeric_limits<float>::min();
  for (int threads : {1, 3}) {
    auto r = run_single_op("ReluGrad", {}, {dy, y}, 1, threads);
    REQUIRE(r.is_ok());
    const float* got = r->outputs[0].data_as<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float want = yp[i] > 0.0f ? dy.data_as<float>()[i] : 0.0f;
      INFO("element " << i << " y " << yp[i] << ", " << threads << " threads");
      CHECK(got[i] == want);
    }
  }
  auto bad = run_single_op("ReluGrad", {}, {dy, test::random_tensor({DType::kF32, {n, 1}}, 5)}, 1,
                           1);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("same shape") != std::string::npos);
}
