// The int8 GEMM of the RNN kernels' int8 weights (ops/rnn/gemm_int8.h): the quantizers against
// hand-worked values (ONNX DynamicQuantizeLinear's definition), and every path this CPU runs
// (AVX512-VNNI's vpdpbusd, the reference path) against a naive double-precision evaluation of
// sb * sa * sum (qb - zb) * qa over the same quantized operands, over row counts, column tails,
// k not a multiple of 4, quad ranges (with the matching column sums), accumulation and the
// reversed panel walk; and the end-to-end error of quantize -> GEMM against the fp32 product.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/rnn/gemm_int8.h"

using namespace graphi;
using namespace graphi::ops;

TEST_CASE("gemm int8: weight and activation quantizers", "[gemm_int8]") {
  const float w[3] = {0.5f, -1.27f, 0.0f};
  const float sw = int8_weight_scale(w, 3, 1);
  CHECK(sw == Approx(0.01f));
  CHECK(int8_quantize_weight(0.5f, sw) == 50);
  CHECK(int8_quantize_weight(-1.27f, sw) == -127);
  CHECK(int8_quantize_weight(-5.0f, sw) == -127);  // saturates symmetrically
  const float zeros[2] = {0.0f, 0.0f};
  CHECK(int8_weight_scale(zeros, 2, 1) == 1.0f);

  // DynamicQuantizeLinear: range [min(0, -1), max(0, 1.55)] = 2.55 -> scale 0.01, zero point
  // round(1 / 0.01) = 100; 1.55 -> 255, -1 -> 0, 0.004 -> 100 (round 0.4), 0.005 -> 100 (0.5
  // rounds to even), 0.015 -> 102 (1.5 rounds to even).
  const float x[6] = {1.55f, -1.0f, 0.0f, 0.004f, 0.005f, 0.015f};
  uint8_t q[6];
  float s;
  int32_t zp;
  int8_quantize_row(x, 0, 6, q, &s, &zp);
  CHECK(s == Approx(0.01f));
  CHECK(zp == 100);
  CHECK(q[0] == 255);
  CHECK(q[1] == 0);
  CHECK(q[2] == 100);
  CHECK(q[3] == 100);
  CHECK(q[4] == 100);
  CHECK(q[5] == 102);
  // All positive: the range starts at 0, zero point 0; all zero: scale 1, zero point 0.
  const float pos[2] = {0.51f, 0.255f};
  int8_quantize_row(pos, 0, 2, q, &s, &zp);
  CHECK(zp == 0);
  CHECK(q[0] == 255);
  CHECK(q[1] == 128);  // 0.255 / 0.002 = 127.5 -> 128 (even)
  int8_quantize_row(zeros, 0, 2, q, &s, &zp);
  CHECK(s == 1.0f);
  CHECK(zp == 0);
  CHECK(q[0] == 0);
  // A sub-range [k0, k1) writes out[0 .. k1 - k0).
  uint8_t sub[2] = {7, 7};
  int8_quantize_row(x, 1, 3, sub, &s, &zp);
  CHECK(zp == 255);  // range [-1, 0]
  CHECK(sub[0] == 0);
  CHECK(sub[1] == 255);
}

TEST_CASE("gemm int8: the dispatched quantizer gives the portable one's bytes", "[gemm_int8]") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.5f, 1.0f);
  for (int64_t n : {1, 5, 16, 17, 40, 256, 1000}) {
    std::vector<float> x(static_cast<size_t>(n + 3));
    for (float& v : x) v = u(rng);
    x[1] = 0.25f;  // exact ties appear too
    std::vector<uint8_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    float sa, sb;
    int32_t za, zb;
    int8_quantize_row(x.data(), 3, n + 3, a.data(), &sa, &za);
    int8_quantize_row_portable(x.data(), 3, n + 3, b.data(), &sb, &zb);
    INFO("n " << n);
    CHECK(sa == sb);
    CHECK(za == zb);
    CHECK(a == b);
  }
}

TEST_CASE("gemm int8: quantizing with a given scale divides, as QuantizeLinear does",
          "[gemm_int8]") {
  // Against the definition in double (x / scale rounded to float32 first, as the division is a
  // float32 one): ties both ways, saturation, NaN; every length around the 16-lane vectors.
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const float scale = 0.0173f, zp = 117.0f;
  for (int64_t n : {1, 15, 16, 17, 33, 250}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = u(rng);
    x[0] = 2.5f * scale;
    if (n > 2) x[1] = -3.5f * scale, x[2] = std::numeric_limits<float>::quiet_NaN();
    if (n > 4) x[3] = 1e6f, x[4] = -1e6f;
    std::vector<uint8_t> got(static_cast<size_t>(n));
    int8_quantize_values(x.data(), n, scale, zp, got.data());
    for (int64_t i = 0; i < n; ++i) {
      const float d = x[static_cast<size_t>(i)] / scale;
      const double want =
          std::isnan(d) ? 0.0 : std::clamp(std::nearbyint(double{d}) + zp, 0.0, 255.0);
      INFO("n " << n << " x " << x[static_cast<size_t>(i)]);
      CHECK(static_cast<double>(got[static_cast<size_t>(i)]) == want);
    }
  }
}

namespace {

struct Shape4 {
  int64_t rows, m, k, panel, q0, q1;
  bool accumulate, reverse;
};

// Random A (quantized per column) and B rows (quantized per row), `fn` against the double
// evaluation of the quantized product over quad rows [q0, q1); returns the fp32 product's
// max |error| relative to the largest |C| when q0..q1 is all of k (else 0).
double check_gemm(GemmInt8Fn fn, const Shape4& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(size_t(s.k * s.m)), b(size_t(s.rows * s.k));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng) * 0.7f + 0.2f;  // off-centre: a non-trivial zero point
  const int64_t kq = int8_quads(s.k);
  std::vector<uint32_t> ap(size_t(int8_packed_words(s.m, s.k, s.panel)), 0u);
  std::vector<float> sa(size_t(s.m));
  std::vector<int8_t> qa(size_t(s.k * s.m));
  std::vector<int32_t> colsum(size_t(s.m), 0);
  const int64_t q1 = s.q1 < 0 ? kq : s.q1;
  for (int64_t j = 0; j < s.m; ++j) {
    sa[size_t(j)] = int8_weight_scale(&a[size_t(j)], s.k, s.m);
    for (int64_t kk = 0; kk < s.k; ++kk) {
      const int8_t q = int8_quantize_weight(a[size_t(kk * s.m + j)], sa[size_t(j)]);
      qa[size_t(kk * s.m + j)] = q;
      reinterpret_cast<int8_t*>(&ap[size_t(int8_word_offset(j, kk / 4, s.k, s.panel))])[kk & 3] = q;
      if (kk / 4 >= s.q0 && kk / 4 < q1) colsum[size_t(j)] += q;
    }
  }
  const int64_t ldb = kq + 2 + 3;  // padded rows; scale and zero point after the data
  std::vector<uint32_t> bq(size_t(s.rows * ldb), 0xa5a5a5a5u);
  std::vector<uint8_t> qb(size_t(s.rows * s.k));
  std::vector<float> sb(size_t(s.rows));
  std::vector<int32_t> zb(size_t(s.rows));
  for (int64_t r = 0; r < s.rows; ++r) {
    uint32_t* row = &bq[size_t(r * ldb)];
    row[kq - 1] = 0xffffffffu;  // bytes past k: A is 0 there, whatever B holds
    int8_quantize_row(&b[size_t(r * s.k)], 0, s.k, reinterpret_cast<uint8_t*>(row), &sb[size_t(r)],
                      &zb[size_t(r)]);
    std::memcpy(&qb[size_t(r * s.k)], row, size_t(s.k));
    std::memcpy(row + kq, &sb[size_t(r)], 4);
    row[kq + 1] = uint32_t(zb[size_t(r)]);
  }
  const int64_t ldc = s.m + 5;
  std::vector<float> c(size_t(s.rows * ldc), 0.25f), c0 = c;
  Int8GemmArgs g;
  g.a = ap.data();
  g.m = s.m;
  g.k = s.k;
  g.panel = s.panel;
  g.a_scale = sa.data();
  g.colsum = colsum.data();
  g.b = bq.data();
  g.ldb = ldb;
  g.bp = bq.data() + kq;
  g.c = c.data();
  g.ldc = ldc;
  g.rows = s.rows;
  g.q0 = s.q0;
  g.q1 = s.q1;
  g.accumulate = s.accumulate;
  g.reverse = s.reverse;
  fn(g);
  double worst_rel = 0, cmax = 0, emax = 0;
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[size_t(r * ldc + j)];
      if (j >= s.m) {  // never written past m
        CHECK(got == c0[size_t(r * ldc + j)]);
        continue;
      }
      double want = 0, exact = 0;
      for (int64_t kk = s.q0 * 4; kk < std::min(s.k, q1 * 4); ++kk) {
        want += double(qb[size_t(r * s.k + kk)] - zb[size_t(r)]) * qa[size_t(kk * s.m + j)];
        exact += double(b[size_t(r * s.k + kk)]) * a[size_t(kk * s.m + j)];
      }
      want *= double(sa[size_t(j)]) * sb[size_t(r)];
      if (s.accumulate) {
        want += 0.25;
        exact += 0.25;
      }
      INFO("row " << r << " col " << j << " rows " << s.rows << " m " << s.m << " k " << s.k
                  << " panel " << s.panel << " q " << s.q0 << ".." << s.q1);
      REQUIRE(std::abs(got - want) <= 1e-5 * (1 + std::abs(want)));
      cmax = std::max(cmax, std::abs(exact));
      emax = std::max(emax, std::abs(got - exact));
    }
  worst_rel = cmax > 0 ? emax / cmax : 0;
  return s.q0 == 0 && s.q1 < 0 ? worst_rel : 0;
}

}  // namespace

TEST_CASE("gemm int8: every path against the naive quantized product", "[gemm_int8]") {
  int paths = 0;
  for (Int8Path p : {Int8Path::kReference, Int8Path::kAvx512Vnni}) {
    GemmInt8Fn fn = gemm_int8_kernel(p);
    if (!fn) {
      WARN("int8 path " << int8_path_name(p) << " not supported on this CPU; skipped");
      continue;
    }
    ++paths;
    INFO("path " << int8_path_name(p));
    uint64_t seed = 1;
    double worst = 0;
    for (int64_t rows : {1, 2, 5, 6, 7, 13})
      for (int64_t m : {1, 16, 37, 64, 100, 200})
        for (int64_t k : {1, 3, 4, 17, 64, 129})
          for (int64_t panel : {16, 64, 256}) {
            worst =
                std::max(worst, check_gemm(fn, {rows, m, k, panel, 0, -1, false, false}, ++seed));
            if (k >= 64 && rows <= 2) {
              const int64_t kq = int8_quads(k);
              check_gemm(fn, {rows, m, k, panel, 2, kq - 3, true, false}, ++seed);
              check_gemm(fn, {rows, m, k, panel, 0, kq / 2, false, true}, ++seed);
              check_gemm(fn, {rows, m, k, panel, kq / 2, kq, true, true}, ++seed);
            }
          }
    // Quantization error against the fp32 product: under 10% of the largest |C| (k = 1..3 is
    // the worst: no averaging)
    // (one u8 step of B and half an s8 step of A per product, summed at random signs).
    CHECK(worst < 0.1);
    std::printf("gemm int8 (%s): worst |C_int8 - C_fp32| / max |C| = %.3g\n", int8_path_name(p),
                worst);
  }
  CHECK(paths >= 1);
  CHECK(gemm_int8_kernel(active_int8_path()) != nullptr);
}
