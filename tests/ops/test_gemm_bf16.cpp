// The bf16 GEMM of the RNN kernels' bf16 weights (ops/rnn/gemm_bf16.h): the fp32 <-> bf16
// conversion against hand-worked bit patterns, and every path this CPU runs (AVX512-BF16's
// vdpbf16ps, the converted fp32 path) against a naive double-precision product of the same
// bf16-rounded operands, over row counts, column tails, odd k, pair ranges, accumulation and
// the reversed panel walk.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/rnn/gemm_bf16.h"

using namespace graphi;
using namespace graphi::ops;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST_CASE("gemm bf16: fp32 -> bf16 rounds to nearest even", "[gemm_bf16]") {
  CHECK(bf16_from_f32(1.0f) == 0x3f80);
  CHECK(bf16_from_f32(-2.0f) == 0xc000);
  CHECK(bf16_from_f32(0.0f) == 0x0000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  CHECK(bf16_from_f32(from_bits(0x3f808000u)) == 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (0x3f82).
  CHECK(bf16_from_f32(from_bits(0x3f818000u)) == 0x3f82);
  // Just above the half rounds up, just below rounds down.
  CHECK(bf16_from_f32(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(bf16_from_f32(from_bits(0x3f807fffu)) == 0x3f80);
  // The largest float rounds to infinity; infinities and NaN keep their class.
  CHECK(bf16_from_f32(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(bf16_from_f32(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(std::isnan(f32_from_bf16(bf16_from_f32(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(f32_from_bf16(bf16_from_f32(from_bits(0x7f800001u)))));  // signalling NaN
  CHECK(f32_from_bf16(0x3f81) == 1.0f + 1.0f / 128);
  CHECK(bits(f32_from_bf16(0xc000)) == 0xc0000000u);

  const float x[5] = {1.0f, -2.0f, 0.5f, 3.0f, 1.0f + 1.0f / 128};
  uint32_t pairs[3] = {0, 0, 0};
  bf16_pack_row(x, 0, 5, pairs);
  CHECK(pairs[0] == (0x3f80u | (0xc000u << 16)));
  CHECK(pairs[1] == (0x3f00u | (0x4040u << 16)));
  CHECK(pairs[2] == 0x3f81u);  // odd k: the upper half is 0
  uint32_t tail[1] = {0xffffffffu};
  bf16_pack_row(x, 2, 4, tail);  // k in [2, 4): one pair
  CHECK(tail[0] == pairs[1]);
}

namespace {

struct Shape2 {
  int64_t rows, m, k, panel, q0, q1;
  bool accumulate, reverse;
};

// Packs a random [k x m] A and [rows x k] B, runs `fn`, compares with the double product of the
// bf16-rounded values over pair rows [q0, q1).
void check_gemm(GemmBf16Fn fn, const Shape2& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(size_t(s.k * s.m)), b(size_t(s.rows * s.k));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  std::vector<uint32_t> ap(size_t(bf16_packed_words(s.m, s.k, s.panel)), 0u);
  for (int64_t q = 0; q < s.k; ++q)
    for (int64_t j = 0; j < s.m; ++j)
      bf16_pack_set(ap.data(), j, q, s.k, s.panel, a[size_t(q * s.m + j)]);
  const int64_t ldb = bf16_pairs(s.k) + 3;
  std::vector<uint32_t> bp(size_t(s.rows * ldb), 0xdeadbeefu);
  for (int64_t r = 0; r < s.rows; ++r)
    bf16_pack_row(&b[size_t(r * s.k)], 0, s.k, &bp[size_t(r * ldb)]);
  const int64_t ldc = s.m + 5;
  std::vector<float> c(size_t(s.rows * ldc)), c0(c.size());
  for (float& v : c0) v = u(rng);
  c = c0;
  Bf16GemmArgs g;
  g.a = ap.data();
  g.m = s.m;
  g.k = s.k;
  g.panel = s.panel;
  g.b = bp.data();
  g.ldb = ldb;
  g.c = c.data();
  g.ldc = ldc;
  g.rows = s.rows;
  g.q0 = s.q0;
  g.q1 = s.q1;
  g.accumulate = s.accumulate;
  g.reverse = s.reverse;
  fn(g);
  auto r16 = [](float v) { return double(f32_from_bf16(bf16_from_f32(v))); };
  const int64_t q1 = s.q1 < 0 ? bf16_pairs(s.k) : s.q1;
  double worst = 0;
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t j = 0; j < ldc; ++j) {
      const double got = c[size_t(r * ldc + j)];
      if (j >= s.m) {  // past the columns: untouched
        CHECK(got == c0[size_t(r * ldc + j)]);
        continue;
      }
      double want = s.accumulate ? double(c0[size_t(r * ldc + j)]) : 0.0;
      for (int64_t q = 2 * s.q0; q < std::min(2 * q1, s.k); ++q)
        want += r16(b[size_t(r * s.k + q)]) * r16(a[size_t(q * s.m + j)]);
      worst = std::max(worst, std::abs(got - want));
    }
  INFO("rows " << s.rows << " m " << s.m << " k " << s.k << " panel " << s.panel << " q " << s.q0
               << ".." << s.q1 << " acc " << s.accumulate << " rev " << s.reverse);
  // fp32 accumulation of <= 300 products of magnitude <= 1.
  CHECK(worst < 2e-5 * std::sqrt(double(s.k)) + 1e-6);
}

}  // namespace

TEST_CASE("gemm bf16: every path this CPU runs vs the double product of bf16 operands",
          "[gemm_bf16]") {
  int paths = 0;
  for (Bf16Path p : {Bf16Path::kConverted, Bf16Path::kAvx512Bf16}) {
    GemmBf16Fn fn = gemm_bf16_kernel(p);
    INFO("path " << bf16_path_name(p));
    if (!fn) {
      CHECK(!bf16_path_supported(p));
      continue;
    }
    ++paths;
    uint64_t seed = 1;
    for (int64_t rows : {1, 2, 5, 6, 7, 13})
      for (int64_t m : {1, 16, 37, 64, 100, 256})
        for (int64_t k : {1, 2, 31, 64, 257})
          for (int64_t panel : {16, 64, 256}) {
            if (panel > 16 && m < 16) continue;
            const int64_t kp = bf16_pairs(k);
            check_gemm(fn, {rows, m, k, panel, 0, -1, false, false}, seed++);
            if (rows <= 2 || m == 100) {
              check_gemm(fn, {rows, m, k, panel, kp / 2, kp, true, true}, seed++);
              check_gemm(fn, {rows, m, k, panel, 0, kp / 2, false, seed % 2 == 0}, seed++);
            }
          }
  }
  CHECK(paths >= 1);
  // The active path is one of them.
  CHECK(bf16_path_supported(active_bf16_path()));
}
