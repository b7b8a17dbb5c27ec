// The interleaved AVX-512 loop of ops/rnn/gemv_hoist.h: each 64-column block of the recurrent
// GEMV (four accumulators, A streamed from L2) does one k row of the current hoist tile (one W
// vector, kHoistRows broadcasts of x, kHoistRows FMAs into register accumulators) per two of
// its own k rows, so the out-of-order core can issue the tile's FMAs while the GEMV's loads
// wait on L2. Compiled for AVX-512 by ops/vec_math.h's target switch and reached only through
// ops/rnn/gemv_hoist.cpp after the CPU check; no std:: templates under the target (see there).
#include "ops/rnn/gemv_hoist.h"
#include "ops/rnn/gemv_rows.h"

#define GRAPHI_VEC_AVX512
#include "ops/vec_math.h"

namespace {

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

using graphi::ops::HoistCursor;
using graphi::ops::kHoistRows;
using graphi::ops::kHoistTileCols;

// The tile's accumulators: from the cursor (zero when the tile has not started).
inline void tile_load(const HoistCursor& hc, __m512* t) {
#pragma GCC unroll 8
  for (int r = 0; r < kHoistRows; ++r)
    t[r] = hc.q == 0 ? _mm512_setzero_ps() : _mm512_load_ps(hc.acc[r]);
}

// Back into the cursor; a finished tile goes to out and the cursor moves to the next one.
inline void tile_save(HoistCursor& hc, const __m512* t) {
  if (hc.q == hc.k) {
#pragma GCC unroll 8
    for (int r = 0; r < kHoistRows; ++r) _mm512_storeu_ps(hc.out + r * hc.ldo + hc.col, t[r]);
    hc.col += kHoistTileCols;
    hc.q = 0;
    return;
  }
#pragma GCC unroll 8
  for (int r = 0; r < kHoistRows; ++r) _mm512_store_ps(hc.acc[r], t[r]);
}

// n k rows of the current tile alone (n <= k - q).
void tile_rows(HoistCursor& hc, int64_t n) {
  __m512 t[kHoistRows];
  tile_load(hc, t);
  const float* wq = hc.tile_row(hc.q);
  const float* xq = hc.x + hc.q;
  const int64_t ldx = hc.ldx, pw = hc.panel;
  for (int64_t i = 0; i < n; ++i, wq += pw, ++xq) {
    const __m512 wv = _mm512_loadu_ps(wq);
#pragma GCC unroll 8
    for (int r = 0; r < kHoistRows; ++r) t[r] = _mm512_fmadd_ps(_mm512_set1_ps(xq[r * ldx]), wv, t[r]);
  }
  hc.q += n;
  tile_save(hc, t);
}

// n k rows of the cursor, crossing tiles.
void hoist_rows(HoistCursor& hc, int64_t n) {
  while (n > 0 && !hc.done()) {
    const int64_t m = min64(n, hc.k - hc.q);
    tile_rows(hc, m);
    n -= m;
  }
}

// One 64-column block of the GEMV over k rows with up to `budget` hoist rows interleaved;
// returns the hoist rows done.
int64_t block64(const float* a, int64_t lda, const float* h, float* c, int64_t k, bool accumulate,
                HoistCursor& hc, int64_t budget) {
  __m512 g0 = _mm512_setzero_ps(), g1 = _mm512_setzero_ps(), g2 = _mm512_setzero_ps(),
         g3 = _mm512_setzero_ps();
  int64_t q = 0, done = 0;
  while (budget > done && !hc.done() && k - q >= 2) {
    const int64_t n = min64(min64((k - q) / 2, budget - done), hc.k - hc.q);
    __m512 t[kHoistRows];
    tile_load(hc, t);
    const float* aq = a + q * lda;
    const float* wq = hc.tile_row(hc.q);
    const float* xq = hc.x + hc.q;
    const int64_t ldx = hc.ldx, pw = hc.panel;
    for (int64_t i = 0; i < n; ++i, aq += 2 * lda, q += 2, wq += pw, ++xq) {
      const __m512 h0 = _mm512_set1_ps(h[q]);
      g0 = _mm512_fmadd_ps(_mm512_loadu_ps(aq), h0, g0);
      g1 = _mm512_fmadd_ps(_mm512_loadu_ps(aq + 16), h0, g1);
      g2 = _mm512_fmadd_ps(_mm512_loadu_ps(aq + 32), h0, g2);
      g3 = _mm512_fmadd_ps(_mm512_loadu_ps(aq + 48), h0, g3);
      const __m512 wv = _mm512_loadu_ps(wq);
#pragma GCC unroll 4
      for (int r = 0; r < kHoistRows / 2; ++r)
        t[r] = _mm512_fmadd_ps(_mm512_set1_ps(xq[r * ldx]), wv, t[r]);
      const __m512 h1 = _mm512_set1_ps(h[q + 1]);
      const float* aq1 = aq + lda;
      g0 = _mm512_fmadd_ps(_mm512_loadu_ps(aq1), h1, g0);
      g1 = _mm512_fmadd_ps(_mm512_loadu_ps(aq1 + 16), h1, g1);
      g2 = _mm512_fmadd_ps(_mm512_loadu_ps(aq1 + 32), h1, g2);
      g3 = _mm512_fmadd_ps(_mm512_loadu_ps(aq1 + 48), h1, g3);
#pragma GCC unroll 4
      for (int r = kHoistRows / 2; r < kHoistRows; ++r)
        t[r] = _mm512_fmadd_ps(_mm512_set1_ps(xq[r * ldx]), wv, t[r]);
    }
    hc.q += n;
    done += n;
    tile_save(hc, t);
  }
  for (const float* aq = a + q * lda; q < k; ++q, aq += lda) {
    const __m512 h0 = _mm512_set1_ps(h[q]);
    g0 = _mm512_fmadd_ps(_mm512_loadu_ps(aq), h0, g0);
    g1 = _mm512_fmadd_ps(_mm512_loadu_ps(aq + 16), h0, g1);
    g2 = _mm512_fmadd_ps(_mm512_loadu_ps(aq + 32), h0, g2);
    g3 = _mm512_fmadd_ps(_mm512_loadu_ps(aq + 48), h0, g3);
  }
  if (accumulate) {
    g0 = _mm512_add_ps(g0, _mm512_loadu_ps(c));
    g1 = _mm512_add_ps(g1, _mm512_loadu_ps(c + 16));
    g2 = _mm512_add_ps(g2, _mm512_loadu_ps(c + 32));
    g3 = _mm512_add_ps(g3, _mm512_loadu_ps(c + 48));
  }
  _mm512_storeu_ps(c, g0);
  _mm512_storeu_ps(c + 16, g1);
  _mm512_storeu_ps(c + 32, g2);
  _mm512_storeu_ps(c + 48, g3);
  return done;
}

}  // namespace

namespace graphi::ops::detail {

int64_t gemv_row_hoist_avx512(const float* a, int64_t lda, const float* h, float* c, int64_t k,
                              int64_t cols, bool accumulate, HoistCursor& hc,
                              int64_t hoist_rows) noexcept {
  int64_t left = min64(hoist_rows, hc.rows_left());
  const int64_t want = left;
  const int64_t nb = cols / 64;
  for (int64_t b = 0; b < nb; ++b) {
    // An even share of what is left for each remaining block.
    const int64_t share = (left + (nb - b) - 1) / (nb - b);
    left -= block64(a + b * 64, lda, h, c + b * 64, k, accumulate, hc, share);
  }
  if (cols > nb * 64) gemv_rows(a + nb * 64, lda, h, 0, c + nb * 64, 0, 1, k, cols - nb * 64, accumulate);
  return want - left;
}

void hoist_finish_avx512(HoistCursor& hc) noexcept { hoist_rows(hc, hc.rows_left()); }

}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
