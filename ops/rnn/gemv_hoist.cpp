// The portable path and the dispatch of ops/rnn/gemv_hoist.h: the GEMV through
// ops/rnn/gemv_rows.h, then the hoist rows in plain loops. The interleaved AVX-512 loop is in
// ops/rnn/gemv_hoist_avx512.cpp.
#include "ops/rnn/gemv_hoist.h"

#include <algorithm>

#include "ops/activations.h"
#include "ops/rnn/gemv_rows.h"

namespace graphi::ops {

namespace detail {
// Defined in ops/rnn/gemv_hoist_avx512.cpp.
int64_t gemv_row_hoist_avx512(const float* a, int64_t lda, const float* h, float* c, int64_t k,
                              int64_t cols, bool accumulate, HoistCursor& hc,
                              int64_t hoist_rows) noexcept;
void hoist_finish_avx512(HoistCursor& hc) noexcept;
}  // namespace detail

namespace {

// n k rows of the cursor (n <= rows_left()), crossing tiles as needed.
void hoist_rows_plain(HoistCursor& hc, int64_t n) noexcept {
  while (n > 0 && !hc.done()) {
    const int64_t m = std::min(n, hc.k - hc.q);
    if (hc.q == 0) std::fill(&hc.acc[0][0], &hc.acc[0][0] + kHoistRows * kHoistTileCols, 0.0f);
    for (int64_t qq = hc.q; qq < hc.q + m; ++qq) {
      const float* wr = hc.tile_row(qq);
      for (int r = 0; r < kHoistRows; ++r) {
        const float xv = hc.x[r * hc.ldx + qq];
        for (int64_t j = 0; j < kHoistTileCols; ++j) hc.acc[r][j] += xv * wr[j];
      }
    }
    hc.q += m;
    n -= m;
    if (hc.q == hc.k) {
      for (int r = 0; r < kHoistRows; ++r)
        std::copy(hc.acc[r], hc.acc[r] + kHoistTileCols, hc.out + r * hc.ldo + hc.col);
      hc.col += kHoistTileCols;
      hc.q = 0;
    }
  }
}

}  // namespace

bool gemv_hoist_interleaved() noexcept {
  static const bool on = active_simd_isa() == SimdIsa::kAvx512;
  return on;
}

int64_t gemv_row_hoist(const float* a, int64_t lda, const float* h, float* c, int64_t k,
                       int64_t cols, bool accumulate, HoistCursor& hc,
                       int64_t hoist_rows) noexcept {
  if (gemv_hoist_interleaved())
    return detail::gemv_row_hoist_avx512(a, lda, h, c, k, cols, accumulate, hc, hoist_rows);
  gemv_rows(a, lda, h, 0, c, 0, 1, k, cols, accumulate);
  const int64_t n = std::min(hoist_rows, hc.rows_left());
  hoist_rows_plain(hc, n);
  return n;
}

void hoist_finish(HoistCursor& hc) noexcept {
  if (gemv_hoist_interleaved()) {
    detail::hoist_finish_avx512(hc);
    return;
  }
  hoist_rows_plain(hc, hc.rows_left());
}

}  // namespace graphi::ops
