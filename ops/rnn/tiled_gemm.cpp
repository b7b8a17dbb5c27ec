#include "ops/rnn/tiled_gemm.h"

#include <algorithm>

#include "ops/rnn/gemv_rows.h"

namespace graphi::ops {

TiledGemm TiledGemm::create_panels(int64_t m, int64_t k, int64_t panel, int64_t ldb, int64_t ldc,
                                   const std::set<int64_t>& ns) {
  // Panel p starts at a + p * panel * k, rows within it `panel` floats apart.
  return make(m, k, panel, panel, k, ldb, ldc, ns);
}

TiledGemm TiledGemm::create_row_major(int64_t m, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                      const std::set<int64_t>& ns) {
  const int64_t nmax = ns.empty() ? 1 : *ns.rbegin();
  const int64_t mt = std::min<int64_t>(m, std::min<int64_t>(nmax, 32) <= 2 ? 256 : 32);
  return make(m, k, std::max<int64_t>(1, mt), lda, 1, ldb, ldc, ns);
}

TiledGemm TiledGemm::make(int64_t m, int64_t k, int64_t mt, int64_t lda, int64_t col_step,
                          int64_t ldb, int64_t ldc, const std::set<int64_t>& ns) {
  TiledGemm g;
  g.m_ = m;
  g.k_ = k;
  g.mt_ = mt;
  g.lda_ = lda;
  g.col_step_ = col_step;
  g.ldb_ = ldb;
  g.ldc_ = ldc;
  const int64_t nmax = ns.empty() ? 1 : *ns.rbegin();
  // Measured on this 2-core AVX-512 VM: 32 x 32 x 256 tiles reach ~140 GFLOP/s per core
  // (64 x 32 x 128: ~118); GEMV-like calls (1-2 rows) stream A and want wide tiles.
  g.nt_ = std::min<int64_t>(nmax, 32);
  constexpr int64_t kBudget = 64 * 64 * 64;
  const int64_t kt = std::max<int64_t>(1, kBudget / (g.mt_ * g.nt_));
  const int64_t nk = (k + kt - 1) / kt;
  g.kt_ = (k + nk - 1) / nk;
  std::set<int64_t> nn_set;
  for (int64_t n : ns) {
    if (n >= g.nt_) nn_set.insert(g.nt_);
    if (n % g.nt_) nn_set.insert(n % g.nt_);
  }
  for (int64_t m0 = 0; m0 < m; m0 += g.mt_) {
    const int64_t mm = std::min(g.mt_, m - m0);
    for (int64_t nn : nn_set)
      for (int64_t k0 = 0; k0 < k; k0 += g.kt_) g.add(mm, nn, std::min(g.kt_, k - k0), k0 > 0);
  }
  return g;
}

void TiledGemm::run(const float* a, const float* b, float* c, int64_t n,
                    bool reverse) const noexcept {
  const int64_t np = (m_ + mt_ - 1) / mt_;
  if (n == 1) {
    // One row (batch 1): each panel once over all k with ops/rnn/gemv_rows.h (~4% faster than
    // LIBXSMM's n = 1 code on a 512 KiB panel set, LSTM h256 b1 0.69 -> 0.645 ms). For 2-4 rows
    // LIBXSMM stays ahead (k256 m512: 4.4 vs 4.7 us at 2 rows, 6.2 vs 6.9 at 4).
    for (int64_t pi = 0; pi < np; ++pi) {
      const int64_t m0 = (reverse ? np - 1 - pi : pi) * mt_;
      gemv_rows(a + m0 * col_step_, lda_, b, ldb_, c + m0, ldc_, n, k_, std::min(mt_, m_ - m0),
                false);
    }
    return;
  }
  for (int64_t pi = 0; pi < np; ++pi) {
    const int64_t m0 = (reverse ? np - 1 - pi : pi) * mt_;
    const int64_t mm = std::min(mt_, m_ - m0);
    const float* tile = a + m0 * col_step_;
    for (int64_t n0 = 0; n0 < n; n0 += nt_) {
      const int64_t nn = std::min(nt_, n - n0);
      for (int64_t k0 = 0; k0 < k_; k0 += kt_) {
        const int64_t kk = std::min(kt_, k_ - k0);
        const float* at = tile + k0 * lda_;
        const float* bt = b + n0 * ldb_ + k0;
        float* ct = c + n0 * ldc_ + m0;
        const Entry* e = find(mm, nn, kk, k0 > 0);
        if (e && e->kernel.valid()) {
          e->kernel(at, bt, ct);
        } else {
          naive(at, bt, ct, mm, nn, kk, k0 > 0);
        }
      }
    }
  }
}

void TiledGemm::run_row_k_range(const float* a, const float* b, float* c, int64_t k0, int64_t k1,
                                bool accumulate, bool reverse) const noexcept {
  if (k1 <= k0) {
    if (!accumulate) std::fill(c, c + m_, 0.0f);
    return;
  }
  const int64_t np = (m_ + mt_ - 1) / mt_;
  for (int64_t pi = 0; pi < np; ++pi) {
    const int64_t m0 = (reverse ? np - 1 - pi : pi) * mt_;
    gemv_rows(a + m0 * col_step_ + k0 * lda_, lda_, b + k0, ldb_, c + m0, ldc_, 1, k1 - k0,
              std::min(mt_, m_ - m0), accumulate);
  }
}

void TiledGemm::add(int64_t mm, int64_t nn, int64_t kk, bool acc) {
  if (find(mm, nn, kk, acc)) return;
  xsmm::SmmShape s;
  s.m = static_cast<int>(mm);
  s.n = static_cast<int>(nn);
  s.k = static_cast<int>(kk);
  s.lda = static_cast<int>(lda_);
  s.ldb = static_cast<int>(ldb_);
  s.ldc = static_cast<int>(ldc_);
  s.beta = acc ? 1.0f : 0.0f;
  auto k = xsmm::dispatch_smm(s);
  entries_.push_back({mm, nn, kk, acc, k.is_ok() ? *k : xsmm::SmmKernel()});
}

const TiledGemm::Entry* TiledGemm::find(int64_t mm, int64_t nn, int64_t kk,
                                        bool acc) const noexcept {
  for (const Entry& e : entries_)
    if (e.mm == mm && e.nn == nn && e.kk == kk && e.acc == acc) return &e;
  return nullptr;
}

void TiledGemm::naive(const float* a, const float* b, float* c, int64_t mm, int64_t nn, int64_t kk,
                      bool acc) const noexcept {
  for (int64_t r = 0; r < nn; ++r) {
    float* crow = c + r * ldc_;
    if (!acc) std::fill(crow, crow + mm, 0.0f);
    for (int64_t q = 0; q < kk; ++q) {
      const float bv = b[r * ldb_ + q];
      const float* arow = a + q * lda_;
      for (int64_t i = 0; i < mm; ++i) crow[i] += arow[i] * bv;
    }
  }
}

}  // namespace graphi::ops
