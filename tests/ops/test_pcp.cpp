// PCP (DeepCPU 5.2.3): partition choice against hand-computed cases, block coverage, and the PCP
// GEMM executor against a naive double-accumulating GEMM on every partition of P = 1..4.
#include <omp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "ops/rnn/pcp_gemm.h"
#include "ops/rnn/pcp_partition.h"

using namespace graphi::ops;

namespace {

PcpPartition choose(int64_t i, int64_t j, int64_t k, int p, PcpOptions opt = {}) {
  auto r = pcp_choose(GemmDims{i, j, k}, p, opt);
  REQUIRE(r.is_ok());
  return *r;
}

void check_part(const PcpPartition& p, int xi, int xj, int xk) {
  INFO("got " << p.xi << "x" << p.xj << "x" << p.xk << " cost " << p.cost);
  CHECK(p.xi == xi);
  CHECK(p.xj == xj);
  CHECK(p.xk == xk);
}

}  // namespace

// All costs below are worked by hand from Xj|A| + Xi|B| + 2 Xk|C| (Theorem 5.2).
TEST_CASE("pcp partition: hand-computed cases of Theorem 5.2") {
  // Batch-1 LSTM step, H = 256: C[1, 4H] = h[1, H] x U[H, 4H]. |A| = 256, |B| = 262144, |C| = 1024.
  //   1x2x1: 2*256 + 262144 + 2*1024  = 264704   <- min
  //   1x1x2:   256 + 262144 + 4*1024  = 266496
  //   2x1x1: Xi = 2 > I = 1, not allowed.
  PcpPartition p = choose(1, 1024, 256, 2);
  check_part(p, 1, 2, 1);
  CHECK(p.cost == 264704);

  // Splitting K wins: I = 64, J = 16, K = 4096. |A| = 262144, |B| = 65536, |C| = 1024.
  //   2x1x1:   262144 + 2*65536 + 2*1024 = 395264
  //   1x2x1: 2*262144 +   65536 + 2*1024 = 591872
  //   1x1x2:   262144 +   65536 + 4*1024 = 331776   <- min
  p = choose(64, 16, 4096, 2);
  check_part(p, 1, 1, 2);
  CHECK(p.cost == 331776);

  // P prime (3): I = 4, J = 96, K = 64. |A| = 256, |B| = 6144, |C| = 384.
  //   3x1x1:   256 + 3*6144 + 2*384 = 19456
  //   1x3x1: 3*256 +   6144 + 2*384 =  7680   <- min
  //   1x1x3:   256 +   6144 + 6*384 =  8704
  p = choose(4, 96, 64, 3);
  check_part(p, 1, 3, 1);
  CHECK(p.cost == 7680);

  // P = 5 (prime) with J = 2 and I = 1: only 1x1x5 fits: 1000 + 2000 + 10*2 = 3020.
  p = choose(1, 2, 1000, 5);
  check_part(p, 1, 1, 5);
  CHECK(p.cost == 3020);

  // P larger than a dimension: I = 1, J = 2, K = 1000, P = 4. |A| = 1000, |B| = 2000, |C| = 2.
  //   1x1x4: 1000 + 2000 + 8*2 = 3016   <- min
  //   1x2x2: 2000 + 2000 + 4*2 = 4008
  //   1x4x1, 2x*, 4x1x1: do not fit (J = 2, I = 1).
  p = choose(1, 2, 1000, 4);
  check_part(p, 1, 1, 4);
  CHECK(p.cost == 3016);

  // Square-ish batch: I = 16, J = 64, K = 64, P = 4. |A| = 1024, |B| = 4096, |C| = 1024.
  //   1x4x1: 4096 + 4096 + 2048 = 10240   <- min (tied with 1x2x2)
  //   2x2x1: 2048 + 8192 + 2048 = 12288
  //   1x2x2: 2048 + 4096 + 4096 = 10240   (equal cost; fewer K splits wins the tie)
  //   1x1x4: 1024 + 4096 + 8192 = 13312
  //   4x1x1: 1024 + 16384 + 2048 = 19456
  //   2x1x2: 1024 + 8192 + 4096 = 13312
  p = choose(16, 64, 64, 4);
  check_part(p, 1, 4, 1);
  CHECK(p.cost == 10240);
  auto all = pcp_candidates(GemmDims{16, 64, 64}, 4);
  REQUIRE(all.size() == 6);
  CHECK(all[1].xj == 2);
  CHECK(all[1].xk == 2);
  CHECK(all[1].cost == 10240);
}

TEST_CASE("pcp partition: fewer threads than the team when the GEMM is too small") {
  // I = J = K = 1: only 1x1x1 fits any team.
  PcpPartition p = choose(1, 1, 1, 4);
  check_part(p, 1, 1, 1);
  CHECK(p.threads() == 1);
  // I = 1, J = 2, K = 1, P = 3: no factorization of 3 fits; of 2, 1x2x1 does.
  p = choose(1, 2, 1, 3);
  check_part(p, 1, 2, 1);
  CHECK(p.threads() == 2);
  CHECK_FALSE(pcp_block(GemmDims{1, 2, 1}, p, 2).active);
}

TEST_CASE("pcp partition: cross-step variant (5.2.3) is the paper's piecewise cost") {
  // I = 64, J = 256, K = 256, P = 2, T = 100 steps. |A| = 16384, |B| = 65536 (256 KiB),
  // |C| = 16384. Per-step cost (Theorem 5.2): 2x1x1 180224, 1x2x1 131072, 1x1x2 147456.
  PcpOptions opt;
  opt.seq_len = 100;

  // No L2 information: T x Theorem 5.2, so 1x2x1 at 100 * 131072.
  PcpPartition p = choose(64, 256, 256, 2, opt);
  check_part(p, 1, 2, 1);
  CHECK(p.cost == 13107200);
  CHECK_FALSE(p.weights_in_l2);

  // L2 = 1 MiB: every B block fits (256 KiB for 2x1x1), B is read once per thread:
  //   2x1x1: 100*(16384 + 2*16384) + 2*65536   = 5046272   <- min
  //   1x2x1: 100*(2*16384 + 2*16384) + 65536   = 6619136
  //   1x1x2: 100*(16384 + 4*16384) + 65536     = 8257536
  opt.l2_bytes = 1 << 20;
  p = choose(64, 256, 256, 2, opt);
  check_part(p, 2, 1, 1);
  CHECK(p.cost == 5046272);
  CHECK(p.weights_in_l2);

  // L2 = 128 KiB: 2x1x1's block (all of B, 256 KiB) no longer fits, 1x2x1's (128 KiB) does:
  //   2x1x1: 100 * 180224                        = 18022400
  //   1x2x1: 100*(2*16384 + 2*16384) + 65536     =  6619136   <- min
  //   1x1x2: 100*(16384 + 4*16384) + 65536       =  8257536
  opt.l2_bytes = 128 << 10;
  p = choose(64, 256, 256, 2, opt);
  check_part(p, 1, 2, 1);
  CHECK(p.cost == 6619136);
  CHECK(p.weights_in_l2);
  bool fits = true;
  CHECK(pcp_cost(GemmDims{64, 256, 256}, 2, 1, 1, opt, &fits) == 18022400);
  CHECK_FALSE(fits);

  // Batch-1 LSTM, H = 256, T = 100, 2 MiB L2: U (1 MiB) halves fit either way.
  //   1x2x1: 100*(2*256 + 2*1024) + 262144 = 518144   <- min
  //   1x1x2: 100*(256 + 4*1024) + 262144   = 697344
  opt.l2_bytes = 2 << 20;
  p = choose(1, 1024, 256, 2, opt);
  check_part(p, 1, 2, 1);
  CHECK(p.cost == 518144);
}

TEST_CASE("pcp partition: the choice is the brute-force minimum") {
  std::mt19937 gen(42);
  std::uniform_int_distribution<int> dim(1, 300), threads(1, 12), l2(0, 3);
  for (int trial = 0; trial < 300; ++trial) {
    const GemmDims d{dim(gen), dim(gen), dim(gen)};
    const int P = threads(gen);
    PcpOptions opt;
    opt.seq_len = trial % 2 ? 50 : 1;
    opt.l2_bytes = int64_t(l2(gen)) * 64 * 1024;
    INFO("I=" << d.i << " J=" << d.j << " K=" << d.k << " P=" << P << " T=" << opt.seq_len
              << " L2=" << opt.l2_bytes);
    // Independent brute force over all triples; largest feasible p first.
    double best = -1;
    int best_p = 0;
    for (int p = P; p >= 1 && best < 0; --p) {
      for (int xi = 1; xi <= p; ++xi)
        for (int xj = 1; xj <= p; ++xj)
          for (int xk = 1; xk <= p; ++xk) {
            if (xi * xj * xk != p || xi > d.i || xj > d.j || xk > d.k) continue;
            const double A = double(d.i) * d.k, B = double(d.k) * d.j, C = double(d.i) * d.j;
            const bool in_l2 =
                opt.l2_bytes > 0 && opt.seq_len > 1 && B / (xj * xk) * 4 <= double(opt.l2_bytes);
            const double cost = in_l2 ? opt.seq_len * (xj * A + 2 * xk * C) + xi * B
                                      : opt.seq_len * (xj * A + xi * B + 2 * xk * C);
            if (best < 0 || cost < best) best = cost, best_p = p;
          }
    }
    PcpPartition p = choose(d.i, d.j, d.k, P, opt);
    CHECK(p.threads() == best_p);
    CHECK(p.cost == best);
    CHECK(p.xi <= d.i);
    CHECK(p.xj <= d.j);
    CHECK(p.xk <= d.k);
  }
}

TEST_CASE("pcp partition: candidates enumerate every factorization") {
  const GemmDims big{1000, 1000, 1000};
  CHECK(pcp_candidates(big, 1).size() == 1);
  CHECK(pcp_candidates(big, 2).size() == 3);
  CHECK(pcp_candidates(big, 4).size() == 6);
  CHECK(pcp_candidates(big, 12).size() == 18);  // ordered triples with product 12
  CHECK(pcp_candidates(big, 7).size() == 3);
  CHECK(pcp_candidates(GemmDims{1, 1000, 1000}, 4).size() == 3);  // xi must be 1
  CHECK(pcp_candidates(big, 0).empty());
}

TEST_CASE("pcp partition: blocks tile the iteration space exactly once") {
  const GemmDims shapes[] = {{1, 1024, 256}, {5, 37, 11}, {3, 300, 2}, {7, 7, 7}, {20, 129, 64}};
  for (const GemmDims& d : shapes) {
    for (int P = 1; P <= 6; ++P) {
      for (const PcpPartition& part : pcp_candidates(d, P)) {
        INFO("I=" << d.i << " J=" << d.j << " K=" << d.k << " part " << part.xi << "x" << part.xj
                  << "x" << part.xk);
        std::vector<int> hits(d.i * d.j * d.k, 0);
        for (int t = 0; t < part.threads(); ++t) {
          PcpBlock b = pcp_block(d, part, t);
          REQUIRE(b.active);
          REQUIRE(b.i0 < b.i1);
          REQUIRE(b.j0 < b.j1);
          REQUIRE(b.k0 < b.k1);
          CHECK(t == (b.bi * part.xj + b.bj) * part.xk + b.bk);
          for (int64_t i = b.i0; i < b.i1; ++i)
            for (int64_t j = b.j0; j < b.j1; ++j)
              for (int64_t k = b.k0; k < b.k1; ++k) ++hits[(i * d.j + j) * d.k + k];
          if (d.j >= 8 * 16 * part.xj) CHECK(b.j0 % 16 == 0);
        }
        CHECK_FALSE(pcp_block(d, part, part.threads()).active);
        int bad = 0;
        for (int h : hits) bad += h != 1;
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("pcp partition: bad arguments are errors") {
  CHECK(pcp_choose(GemmDims{0, 4, 4}, 2).status().code() == graphi::StatusCode::kInvalidArgument);
  CHECK(pcp_choose(GemmDims{4, 4, 4}, 0).status().code() == graphi::StatusCode::kInvalidArgument);
  PcpOptions opt;
  opt.seq_len = 0;
  auto r = pcp_choose(GemmDims{4, 4, 4}, 2, opt);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("seq_len") != std::string::npos);
}

namespace {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

// Runs `g` on a team of `team` OpenMP threads; false if the runtime gave fewer threads.
bool run_on_team(const PcpGemm& g, int team, const float* a, const float* b, float* c) {
  const size_t bytes = (g.scratch_bytes() + 63) / 64 * 64;
  std::unique_ptr<void, AlignedFree> scratch(bytes ? std::aligned_alloc(64, bytes) : nullptr);
  SpinBarrier barrier(team);
  std::atomic<bool> full_team{true};
#pragma omp parallel num_threads(team)
  {
    if (omp_get_num_threads() != team) {
      full_team = false;
    } else {
      TeamContext ctx;
      ctx.ithr = omp_get_thread_num();
      ctx.nthr = team;
      ctx.scratch = scratch.get();
      ctx.scratch_bytes = bytes;
      g.run(ctx, &barrier, a, b, c);
    }
  }
  return full_team;
}

}  // namespace

TEST_CASE("pcp gemm: every partition of P = 1..4 matches a naive GEMM") {
  struct Shape {
    int64_t m, n, k;
  };
  // Hand-picked shapes (batch-1 LSTM step, K = 1, tiny) plus seeded random ones.
  std::vector<Shape> shapes = {{1, 1024, 256}, {1, 17, 5},   {3, 64, 33},   {7, 100, 1},
                               {20, 48, 129},  {4, 300, 64}, {10, 16, 512}, {2, 3, 4}};
  std::mt19937 gen(99);
  std::uniform_int_distribution<int64_t> rm(1, 24), rn(1, 200), rk(1, 300);
  for (int i = 0; i < 6; ++i) shapes.push_back({rm(gen), rn(gen), rk(gen)});
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    for (bool padded : {false, true}) {
      const int64_t lda = s.k + (padded ? 3 : 0), ldb = s.n + (padded ? 5 : 0),
                    ldc = s.n + (padded ? 2 : 0);
      std::vector<float> A(s.m * lda), B(s.k * ldb), C0(s.m * ldc);
      for (float& v : A) v = dist(gen);
      for (float& v : B) v = dist(gen);
      for (float& v : C0) v = dist(gen);
      std::vector<double> ab(s.m * s.n, 0.0);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < s.k; ++k) acc += double(A[i * lda + k]) * B[k * ldb + j];
          ab[i * s.n + j] = acc;
        }
      const double tol = 1e-5 * std::sqrt(double(s.k));
      for (int P = 1; P <= 4; ++P) {
        for (const PcpPartition& part : pcp_candidates(GemmDims{s.m, s.n, s.k}, P)) {
          for (bool acc : {false, true}) {
            INFO("m=" << s.m << " n=" << s.n << " k=" << s.k << " padded=" << padded << " part "
                      << part.xi << "x" << part.xj << "x" << part.xk << " accumulate=" << acc);
            PcpGemmDesc desc{s.m, s.n, s.k, lda, ldb, ldc, acc};
            auto g = PcpGemm::create(desc, part, P);
            REQUIRE(g.is_ok());
            CHECK(g->needs_barrier() == (part.xk > 1));
            CHECK((g->scratch_bytes() > 0) == (part.xk > 1));
            std::vector<float> C(C0);
            REQUIRE(run_on_team(*g, P, A.data(), B.data(), C.data()));
            double err = 0;
            int pad_changed = 0;
            for (int64_t i = 0; i < s.m; ++i) {
              for (int64_t j = 0; j < s.n; ++j) {
                const double want = ab[i * s.n + j] + (acc ? C0[i * ldc + j] : 0.0);
                err = std::max(err,
                               std::fabs(C[i * ldc + j] - want) / std::max(1.0, std::fabs(want)));
              }
              for (int64_t j = s.n; j < ldc; ++j) pad_changed += C[i * ldc + j] != C0[i * ldc + j];
            }
            CHECK(err <= tol);
            CHECK(pad_changed == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("pcp gemm: a team larger than the partition, with and without a K split") {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t m = 2, n = 40, k = 70;
  std::vector<float> A(m * k), B(k * n);
  for (float& v : A) v = dist(gen);
  for (float& v : B) v = dist(gen);
  for (PcpPartition part : {PcpPartition{1, 2, 1}, PcpPartition{1, 1, 2}, PcpPartition{1, 1, 1}}) {
    INFO("part " << part.xi << "x" << part.xj << "x" << part.xk << " on a team of 3");
    auto g = PcpGemm::create(PcpGemmDesc{m, n, k, k, n, n, false}, part, 3);
    REQUIRE(g.is_ok());
    std::vector<float> C(m * n, 123.0f);
    REQUIRE(run_on_team(*g, 3, A.data(), B.data(), C.data()));
    double err = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t q = 0; q < k; ++q) want += double(A[i * k + q]) * B[q * n + j];
        err = std::max(err, std::fabs(C[i * n + j] - want));
      }
    CHECK(err <= 1e-5 * std::sqrt(double(k)));
  }
}

TEST_CASE("pcp gemm: create rejects bad descriptions with a reason") {
  const PcpPartition one{1, 1, 1};
  auto r = PcpGemm::create(PcpGemmDesc{4, 8, 16, 15, 8, 8, false}, one, 1);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == graphi::StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("lda >= k") != std::string::npos);
  r = PcpGemm::create(PcpGemmDesc{4, 8, 16, 16, 8, 8, false}, PcpPartition{8, 1, 1}, 8);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("does not fit") != std::string::npos);
  r = PcpGemm::create(PcpGemmDesc{4, 8, 16, 16, 8, 8, false}, PcpPartition{1, 2, 2}, 2);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("team has 2") != std::string::npos);
  r = PcpGemm::create(PcpGemmDesc{0, 8, 16, 16, 8, 8, false}, one, 1);
  REQUIRE_FALSE(r.is_ok());
}
