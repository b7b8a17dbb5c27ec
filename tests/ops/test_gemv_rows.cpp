// The small-row GEMM of ops/rnn/gemv_rows.h (every ISA path this CPU runs) and TiledGemm's use of
// it, against a naive double-precision loop: rows 1..4 (and 5 through TiledGemm), odd k and column
// counts (not multiples of the vector width), lda > cols, accumulate on and off, and C's
// neighbours (columns >= cols, other rows' padding) untouched.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "ops/rnn/gemv_rows.h"
#include "ops/rnn/tiled_gemm.h"

using namespace graphi::ops;

namespace {

std::vector<float> rnd(size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// C[r][j] = (acc ? C0[r][j] : 0) + sum_q B[r][q] A[q][j], in double.
std::vector<double> naive(const std::vector<float>& a, int64_t lda, const std::vector<float>& b,
                          int64_t ldb, const std::vector<float>& c0, int64_t ldc, int64_t rows,
                          int64_t k, int64_t cols, bool acc) {
  std::vector<double> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      double s = acc ? c0[r * ldc + j] : 0.0;
      for (int64_t q = 0; q < k; ++q) s += double(b[r * ldb + q]) * a[q * lda + j];
      out[r * cols + j] = s;
    }
  return out;
}

}  // namespace

TEST_CASE("gemv_rows matches a naive loop on every ISA path", "[gemv_rows]") {
  std::mt19937 gen(7);
  for (SimdIsa isa : {SimdIsa::kScalar, SimdIsa::kAvx2, SimdIsa::kAvx512}) {
    const GemvRowsFn fn = gemv_rows_kernel(isa);
    if (!fn) continue;
    for (int64_t rows = 1; rows <= kGemvMaxRows; ++rows)
      for (int64_t k : {1, 7, 64, 129})
        for (int64_t cols : {1, 5, 16, 17, 33, 64, 100, 200})
          for (bool acc : {false, true}) {
            INFO("isa " << simd_isa_name(isa) << " rows " << rows << " k " << k << " cols " << cols
                        << " acc " << acc);
            const int64_t lda = cols + 3, ldb = k + 5, ldc = cols + 7;
            // A holds exactly k rows of lda floats minus the unused tail of the last row, so
            // a read past column `cols` of the last row would leave the allocation.
            std::vector<float> a = rnd((k - 1) * lda + cols, gen);
            std::vector<float> b = rnd(rows * ldb, gen);
            std::vector<float> c = rnd(rows * ldc, gen);
            const std::vector<float> c0 = c;
            fn(a.data(), lda, b.data(), ldb, c.data(), ldc, rows, k, cols, acc);
            const std::vector<double> want = naive(a, lda, b, ldb, c0, ldc, rows, k, cols, acc);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t j = 0; j < cols; ++j)
                REQUIRE(std::abs(c[r * ldc + j] - want[r * cols + j]) <=
                        1e-5 * (1.0 + std::sqrt(double(k))));
              for (int64_t j = cols; j < ldc; ++j) REQUIRE(c[r * ldc + j] == c0[r * ldc + j]);
            }
          }
  }
}

TEST_CASE("TiledGemm on packed panels matches a naive loop for few rows", "[gemv_rows]") {
  std::mt19937 gen(11);
  for (int64_t n = 1; n <= kGemvMaxRows + 1; ++n)
    for (int64_t m : {13, 48, 100, 300})
      for (int64_t k : {9, 64, 70})
        for (int64_t panel : {16, 64, 256})
          for (bool reverse : {false, true})
            for (const std::vector<int64_t>& splits :
                 {std::vector<int64_t>{}, {k / 3}, {k / 4, k / 2 + 1}}) {
              INFO("n " << n << " m " << m << " k " << k << " panel " << panel << " k blocks "
                        << splits.size() + 1);
              // Row-major [k][m] reference and its panel-major packing (padding = NaN: never used).
              std::vector<float> a = rnd(k * m, gen);
              std::vector<float> packed(TiledGemm::packed_floats(m, k, panel), std::nanf(""));
              const int64_t ldb = k + 3, ldc = m + 5;
              TiledGemm g = TiledGemm::create_panels(m, k, panel, ldb, ldc, {n}, splits);
              for (int64_t q = 0; q < k; ++q)
                for (int64_t j = 0; j < m; ++j) {
                  const int64_t at = g.offset(j, q);
                  REQUIRE(at >= 0);
                  REQUIRE(at < static_cast<int64_t>(packed.size()));
                  REQUIRE(std::isnan(packed[at]));  // every element in a place of its own
                  packed[at] = a[q * m + j];
                }
              if (splits.empty())
                for (int64_t q = 0; q < k; ++q)
                  for (int64_t j = 0; j < m; ++j)
                    REQUIRE(g.offset(j, q) == TiledGemm::panel_offset(j, q, k, panel));
              std::vector<float> b = rnd(n * ldb, gen);
              std::vector<float> c(n * ldc, 0.5f);
              g.run(packed.data(), b.data(), c.data(), n, reverse);
              const std::vector<double> want = naive(a, m, b, ldb, c, ldc, n, k, m, false);
              for (int64_t r = 0; r < n; ++r) {
                for (int64_t j = 0; j < m; ++j)
                  REQUIRE(std::abs(c[r * ldc + j] - want[r * m + j]) <= 1e-4);
                for (int64_t j = m; j < ldc; ++j) REQUIRE(c[r * ldc + j] == 0.5f);
              }
            }
}

TEST_CASE("TiledGemm register tiles (the hoisted projection) match a naive loop", "[gemv_rows]") {
  std::mt19937 gen(12);
  // Many rows (the T * B of a hoist), k past one 1024 tile and not a multiple of it, columns
  // past the last full panel; with and without k blocks.
  for (int64_t n : {37, 100})
    for (int64_t m : {100})
      for (int64_t k : {70, 1030, 2500})
        for (int64_t panel : {16, 64})
          for (const std::vector<int64_t>& splits : {std::vector<int64_t>{}, {k / 3}}) {
            INFO("n " << n << " m " << m << " k " << k << " panel " << panel << " k blocks "
                      << splits.size() + 1);
            std::vector<float> a = rnd(k * m, gen);
            std::vector<float> packed(TiledGemm::packed_floats(m, k, panel), 0.0f);
            const int64_t ldb = k + 1, ldc = m + 3;
            TiledGemm g = TiledGemm::create_panels(m, k, panel, ldb, ldc, {n}, splits, true);
            for (int64_t q = 0; q < k; ++q)
              for (int64_t j = 0; j < m; ++j) packed[g.offset(j, q)] = a[q * m + j];
            std::vector<float> b = rnd(n * ldb, gen);
            std::vector<float> c(n * ldc, 0.5f);
            g.run(packed.data(), b.data(), c.data(), n);
            const std::vector<double> want = naive(a, m, b, ldb, c, ldc, n, k, m, false);
            double err = 0;
            bool padding_kept = true;
            for (int64_t r = 0; r < n; ++r) {
              for (int64_t j = 0; j < m; ++j)
                err = std::max(err, std::abs(c[r * ldc + j] - want[r * m + j]));
              for (int64_t j = m; j < ldc; ++j) padding_kept &= c[r * ldc + j] == 0.5f;
            }
            CHECK(err <= 1e-3);
            CHECK(padding_kept);
          }
}

TEST_CASE("TiledGemm run_row_k_range: a k split accumulates to the full row product",
          "[gemv_rows]") {
  std::mt19937 gen(5);
  for (int64_t m : {20, 64, 130})
    for (int64_t k : {1, 33, 96})
      for (int64_t panel : {16, 128}) {
        std::vector<float> a = rnd(k * m, gen);
        std::vector<float> b = rnd(k, gen);
        const std::vector<double> want =
            naive(a, m, b, k, std::vector<float>(m), m, 1, k, m, false);
        for (int64_t k0 : {int64_t{0}, k / 3})
          for (int64_t k1 : {k0, (k0 + k + 1) / 2, k})
            // k blocks: none, the own range's (as the RNN kernel packs them), one across it.
            for (const std::vector<int64_t>& splits :
                 {std::vector<int64_t>{}, {k0, k1}, {(k0 + k1) / 2}}) {
              TiledGemm g = TiledGemm::create_panels(m, k, panel, k, m, {1}, splits);
              std::vector<float> packed(TiledGemm::packed_floats(m, k, panel), std::nanf(""));
              for (int64_t q = 0; q < k; ++q)
                for (int64_t j = 0; j < m; ++j) packed[g.offset(j, q)] = a[q * m + j];
              INFO("m " << m << " k " << k << " panel " << panel << " own [" << k0 << ", " << k1
                        << ") k splits " << splits.size());
              std::vector<float> c(m, 7.0f);
              g.run_row_k_range(packed.data(), b.data(), c.data(), k0, k1, false);  // own part
              g.run_row_k_range(packed.data(), b.data(), c.data(), 0, k0, true, true);
              g.run_row_k_range(packed.data(), b.data(), c.data(), k1, k, true);
              for (int64_t j = 0; j < m; ++j) REQUIRE(std::abs(c[j] - want[j]) <= 1e-4);
            }
      }
}
