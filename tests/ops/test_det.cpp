// Det (ops/det.cpp) against the Laplace (cofactor) expansion in long double, an algorithm that
// shares nothing with the kernel's LU; known determinants (triangular, permutations, singular,
// a NaN); batched shapes, teams of 1 and 3 threads; its errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

// det(a) for the m x m row-major matrix a by expansion along the first row.
long double laplace(const std::vector<long double>& a, int64_t m) {
  if (m == 1) return a[0];
  long double det = 0;
  std::vector<long double> minor(static_cast<size_t>((m - 1) * (m - 1)));
  for (int64_t j = 0; j < m; ++j) {
    size_t k = 0;
    for (int64_t r = 1; r < m; ++r)
      for (int64_t c = 0; c < m; ++c)
        if (c != j) minor[k++] = a[static_cast<size_t>(r * m + c)];
    const long double cof = laplace(minor, m - 1);
    det += (j % 2 ? -1 : 1) * a[static_cast<size_t>(j)] * cof;
  }
  return det;
}

Tensor det_ref(const Tensor& x) {
  const int64_t m = x.shape().back();
  Tensor y(TensorDesc{DType::kF32, Shape(x.shape().begin(), x.shape().end() - 2)});
  for (int64_t b = 0; b < y.numel(); ++b) {
    std::vector<long double> a(static_cast<size_t>(m * m));
    for (int64_t e = 0; e < m * m; ++e)
      a[static_cast<size_t>(e)] = x.data_as<float>()[b * m * m + e];
    y.data_as<float>()[b] = static_cast<float>(laplace(a, m));
  }
  return y;
}

Tensor det_of(const Tensor& x, int threads = 1) {
  auto r = run_single_op("Det", {}, {x}, 1, threads);
  if (!r.is_ok()) FAIL(r.status().message());
  CHECK(r->kernel == "det_lu_f64");
  return r->outputs[0];
}

Tensor matrix(int64_t m, std::initializer_list<float> v) {
  Tensor t(TensorDesc{DType::kF32, {m, m}});
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

}  // namespace

TEST_CASE("Det matches the cofactor expansion on batches of matrices", "[ops][det]") {
  for (const Shape& s :
       {Shape{1, 1}, Shape{3, 3}, Shape{4, 2, 2}, Shape{2, 3, 5, 5}, Shape{7, 6, 6}})
    for (int threads : {1, 3}) {
      INFO("X " << shape_to_string(s) << ", " << threads << " threads");
      const Tensor x = test::random_tensor({DType::kF32, s}, 7 + s.size(), -2, 2);
      const Tensor want = det_ref(x);
      const Tensor got = det_of(x, threads);
      REQUIRE(got.desc() == want.desc());
      for (int64_t b = 0; b < want.numel(); ++b) {
        const double w = want.data_as<float>()[b];
        CHECK(std::abs(got.data_as<float>()[b] - w) <= 1e-5 * std::max(1.0, std::abs(w)));
      }
    }
}

TEST_CASE("Det of known matrices: pivoting, singular, NaN", "[ops][det]") {
  // A zero leading entry needs a row swap (sign flip): det [[0, 1], [1, 0]] = -1.
  CHECK(det_of(matrix(2, {0, 1, 1, 0})).data_as<float>()[0] == -1.0f);
  CHECK(det_of(matrix(3, {0, 0, 2, 0, 3, 0, 5, 0, 0})).data_as<float>()[0] == -30.0f);
  CHECK(det_of(matrix(3, {2, 7, 1, 0, 3, 4, 0, 0, -1})).data_as<float>()[0] == -6.0f);
  CHECK(det_of(matrix(3, {1, 2, 3, 2, 4, 6, 0, 1, 1})).data_as<float>()[0] == 0.0f);  // rank 2
  CHECK(det_of(matrix(2, {0, 0, 0, 0})).data_as<float>()[0] == 0.0f);
  // Entries ~1e4, det -1: float32 elimination cancels to 0 here, double does not.
  CHECK(det_of(matrix(2, {10001, 10000, 10000, 9999})).data_as<float>()[0] ==
        Approx(-1.0).epsilon(1e-6));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(det_of(matrix(2, {1, 2, nan, 4})).data_as<float>()[0]));
  CHECK(std::isnan(det_of(matrix(2, {0, 0, nan, 0})).data_as<float>()[0]));
}

TEST_CASE("Det refuses non-square and non-float inputs", "[ops][det]") {
  auto err = [](const Result<test::OpRun>& r) {
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  CHECK_THAT(err(run_single_op("Det", {}, {Tensor(TensorDesc{DType::kF32, {2, 3, 4}})})),
             Catch::Contains("input 0 (X) float32[2, 3, 4] must be [..., M, M]"));
  CHECK_THAT(err(run_single_op("Det", {}, {Tensor(TensorDesc{DType::kF32, {3}})})),
             Catch::Contains("must be [..., M, M]"));
  CHECK_THAT(err(run_single_op("Det", {}, {Tensor(TensorDesc{DType::kI64, {2, 2}})})),
             Catch::Contains("input 0 (X) must be float32"));
}
