#include "ops/rnn/tiled_gemm.h"

#include <algorithm>

#include "ops/rnn/gemv_rows.h"

namespace graphi::ops {

TiledGemm TiledGemm::create_panels(int64_t m, int64_t k, int64_t panel, int64_t ldb, int64_t ldc,
                                   const std::set<int64_t>& ns,
                                   const std::vector<int64_t>& k_splits, bool register_tiles) {
  // Panel p of block [b0, b1) starts at a + m_pad * b0 + p * panel * (b1 - b0), rows within it
  // `panel` floats apart (one block: a + p * panel * k).
  std::vector<int64_t> bounds = {0, k};
  for (int64_t b : k_splits)
    if (b > 0 && b < k) bounds.push_back(b);
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  const int64_t m_pad = (m + panel - 1) / panel * panel;
  std::vector<KBlock> blocks;
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    blocks.push_back({bounds[i], bounds[i + 1], m_pad * bounds[i], bounds[i + 1] - bounds[i]});
  return make(m, k, panel, panel, k, ldb, ldc, ns, std::move(blocks), register_tiles);
}

int64_t TiledGemm::offset(int64_t col, int64_t q) const noexcept {
  for (const KBlock& b : kblocks_)
    if (q < b.k1) return b.base + col / mt_ * mt_ * b.col_step + (q - b.k0) * lda_ + col % mt_;
  return -1;
}

int64_t TiledGemm::block_kt(int64_t kk) const noexcept {
  const int64_t nk = (kk + kt_ - 1) / kt_;
  return (kk + nk - 1) / std::max<int64_t>(1, nk);
}

TiledGemm TiledGemm::create_row_major(int64_t m, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                      const std::set<int64_t>& ns) {
  const int64_t nmax = ns.empty() ? 1 : *ns.rbegin();
  const int64_t mt = std::min<int64_t>(m, std::min<int64_t>(nmax, 32) <= 2 ? 256 : 32);
  return make(m, k, std::max<int64_t>(1, mt), lda, 1, ldb, ldc, ns);
}

TiledGemm TiledGemm::make(int64_t m, int64_t k, int64_t mt, int64_t lda, int64_t col_step,
                          int64_t ldb, int64_t ldc, const std::set<int64_t>& ns,
                          std::vector<KBlock> blocks, bool register_tiles) {
  TiledGemm g;
  g.kblocks_ = blocks.empty() ? std::vector<KBlock>{{0, k, 0, col_step}} : std::move(blocks);
  g.m_ = m;
  g.k_ = k;
  g.mt_ = mt;
  g.lda_ = lda;
  g.ldb_ = ldb;
  g.ldc_ = ldc;
  const int64_t nmax = ns.empty() ? 1 : *ns.rbegin();
  // Measured on this 2-core AVX-512 VM: 32 x 32 x 256 tiles reach ~140 GFLOP/s per core
  // (64 x 32 x 128: ~118); GEMV-like calls (1-2 rows) stream A and want wide tiles.
  g.nt_ = std::min<int64_t>(nmax, 32);
  constexpr int64_t kBudget = 64 * 64 * 64;
  g.kt_ = std::max<int64_t>(1, kBudget / (g.mt_ * g.nt_));  // the largest k tile
  if (register_tiles && nmax >= 32) {
    g.nt_ = std::clamp<int64_t>(512 / g.mt_, 1, 32);
    g.kt_ = std::max<int64_t>(1, 8192 / g.nt_);  // B's tile: 32 KiB, in L1
  }
  std::set<int64_t> nn_set;
  for (int64_t n : ns) {
    if (n >= g.nt_) nn_set.insert(g.nt_);
    if (n % g.nt_) nn_set.insert(n % g.nt_);
  }
  for (int64_t m0 = 0; m0 < m; m0 += g.mt_) {
    const int64_t mm = std::min(g.mt_, m - m0);
    for (int64_t nn : nn_set)
      for (const KBlock& b : g.kblocks_) {
        const int64_t kt = g.block_kt(b.k1 - b.k0);
        for (int64_t k0 = b.k0; k0 < b.k1; k0 += kt) g.add(mm, nn, std::min(kt, b.k1 - k0), k0 > 0);
      }
  }
  return g;
}

void TiledGemm::run(const float* a, const float* b, float* c, int64_t n,
                    bool reverse) const noexcept {
  const int64_t np = (m_ + mt_ - 1) / mt_;
  if (n == 1) {
    // One row (batch 1): each panel once over the block's k with ops/rnn/gemv_rows.h (~4% faster
    // than LIBXSMM's n = 1 code on a 512 KiB panel set, LSTM h256 b1 0.69 -> 0.645 ms). For 2-4
    // rows LIBXSMM stays ahead (k256 m512: 4.4 vs 4.7 us at 2 rows, 6.2 vs 6.9 at 4).
    for (const KBlock& kb : kblocks_)
      for (int64_t pi = 0; pi < np; ++pi) {
        const int64_t m0 = (reverse ? np - 1 - pi : pi) * mt_;
        gemv_rows(a + kb.base + m0 * kb.col_step, lda_, b + kb.k0, ldb_, c + m0, ldc_, n,
                  kb.k1 - kb.k0, std::min(mt_, m_ - m0), kb.k0 > 0);
      }
    return;
  }
  for (const KBlock& kb : kblocks_) {
    const int64_t kt = block_kt(kb.k1 - kb.k0);
    for (int64_t pi = 0; pi < np; ++pi) {
      const int64_t m0 = (reverse ? np - 1 - pi : pi) * mt_;
      const int64_t mm = std::min(mt_, m_ - m0);
      const float* tile = a + kb.base + m0 * kb.col_step;
      for (int64_t n0 = 0; n0 < n; n0 += nt_) {
        const int64_t nn = std::min(nt_, n - n0);
        for (int64_t k0 = kb.k0; k0 < kb.k1; k0 += kt) {
          const int64_t kk = std::min(kt, kb.k1 - k0);
          const float* at = tile + (k0 - kb.k0) * lda_;
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
}

void TiledGemm::run_row_k_range(const float* a, const float* b, float* c, int64_t k0, int64_t k1,
                                bool accumulate, bool reverse) const noexcept {
  const int64_t np = (m_ + mt_ - 1) / mt_;
  for (const KBlock& kb : kblocks_) {
    const int64_t q0 = std::max(k0, kb.k0), q1 = std::min(k1, kb.k1);
    if (q1 <= q0) continue;
    for (int64_t pi = 0; pi < np; ++pi) {
      const int64_t m0 = (reverse ? np - 1 - pi : pi) * mt_;
      gemv_rows(a + kb.base + m0 * kb.col_step + (q0 - kb.k0) * lda_, lda_, b + q0, ldb_, c + m0,
                ldc_, 1, q1 - q0, std::min(mt_, m_ - m0), accumulate);
    }
    accumulate = true;
  }
  if (!accumulate) std::fill(c, c + m_, 0.0f);
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
