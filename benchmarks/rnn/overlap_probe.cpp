// graphi_overlap_probe: can the hoisted input GEMM of a batch-1 RNN step run inside the
// L2-bound recurrent GEMV and cost less than its own time? (issue 4, the 60% roofline goal at
// hidden 256, batch 1.) One thread, pinned, AVX-512.
//
//   graphi_overlap_probe [--k 256] [--cols 512] [--steps 2000] [--reps 7] [--cpu 0]
//
// Model of one thread's share of an LSTM hidden 256 step on 2 threads: y[cols] = h R where R is
// the thread's [k][cols] whole-slab panel (512 KiB, L2-resident), plus the thread's share of the
// input GEMM per step: 8 future rows of x times a 64-column strip of W ([k][cols] too; a chunk of
// 8 steps covers all cols / 64 strips once). Variants, time per step:
//   gemv            the recurrent GEMV alone (4-vector column blocks, k inner)
//   hoist           the input-GEMM share alone (8 rows x 1 vector tiles, one W load per 8 FMAs)
//   gemv+hoist      both, one after the other (what the kernel does today, in effect)
//   fused           both in one k loop: each pair of GEMV k rows also does one k row of the
//                   hoist tile, so the compute-bound FMAs sit next to the L2-bound loads
//   fused_emb       as fused, x broadcast folded into the FMA ({1to16} memory operand)
//   gemv_regfma     the GEMV plus the hoist's FMA count as register-only FMAs (no loads at all):
//                   the most any compute work could overlap the stream
//   gemv8           the GEMV with 8 accumulators (even / odd k rows)
//   gemv_panels     R copied panel-major ([cols / 64][k][64]: one contiguous stream per block),
//                   8 accumulators; gemv_panels4 the same with 4
//   split_slab / split_panels   the kernel's batch-1 k split (k rows [0, k/2) then [k/2, k),
//                   accumulating) on the row-major slab / on the panels
//   read_sum        a plain contiguous read of R with 8 sums: the L2 read rate itself
// and last, split_slab in runs of 100 steps with and without a dense 100-row input GEMM (the
// hoist, not timed) before each run: does the hoist slow the GEMV steps that follow it?
// If fused < gemv+hoist, the overlap exists and the kernel can hide (part of) the hoist.
// Run it boosted (root: setsid, autogroup nice -20); results in ops/rnn/RNN_SCHEDULE.md.
#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define PROBE_TARGET __attribute__((target("avx512f"), noinline))

struct Problem {
  int k = 256;
  int cols = 512;
  float* r = nullptr;    // [k][cols]
  float* w = nullptr;    // [k][cols]
  float* x = nullptr;    // [8][k]
  float* h = nullptr;    // [k]
  float* y = nullptr;    // [cols]
  float* pre = nullptr;  // [8][cols]
};

float* alloc_floats(size_t n, float scale) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, n * sizeof(float)) != 0) std::abort();
  float* f = static_cast<float*>(p);
  for (size_t i = 0; i < n; ++i)
    f[i] = scale * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
  return f;
}

// a[0..3] += h * the 64 floats at rq (one k row of a 64-column GEMV block).
__attribute__((target("avx512f"), always_inline)) inline void row64(const float* rq, __m512 h,
                                                                    __m512* a) {
  for (int v = 0; v < 4; ++v) a[v] = _mm512_fmadd_ps(_mm512_load_ps(rq + 16 * v), h, a[v]);
}

// y[0..64) = a (+ y when accumulating).
__attribute__((target("avx512f"), always_inline)) inline void store64(float* y, const __m512* a,
                                                                      bool accumulate) {
  for (int v = 0; v < 4; ++v)
    _mm512_store_ps(y + 16 * v,
                    accumulate ? _mm512_add_ps(a[v], _mm512_load_ps(y + 16 * v)) : a[v]);
}

// The kernel's batch-1 k split: k rows [k0, k1) of every 64-column block, accumulating.
PROBE_TARGET void gemv_krange(const Problem& p, const float* base, int64_t col_step, int64_t ld,
                              int k0, int k1, bool acc) {
  for (int j = 0; j < p.cols; j += 64) {
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    const float* rq = base + j * col_step + int64_t(k0) * ld;
    for (int q = k0; q < k1; ++q, rq += ld) {
      row64(rq, _mm512_set1_ps(p.h[q]), a);
    }
    store64(p.y + j, a, acc);
  }
}

// The recurrent GEMV alone: all k rows of the row-major slab.
PROBE_TARGET void gemv(const Problem& p) { gemv_krange(p, p.r, 1, p.cols, 0, p.k, false); }

// pre[8][strip .. strip + 64) = x[8][k] W[k][strip ..]: four 8-row x 1-vector tiles.
PROBE_TARGET void hoist(const Problem& p, int strip) {
  for (int v = 0; v < 4; ++v) {
    const int j = strip + v * 16;
    __m512 c[8];
    for (int r = 0; r < 8; ++r) c[r] = _mm512_setzero_ps();
    const float* wq = p.w + j;
    for (int q = 0; q < p.k; ++q, wq += p.cols) {
      const __m512 wv = _mm512_load_ps(wq);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r)
        c[r] = _mm512_fmadd_ps(_mm512_set1_ps(p.x[r * p.k + q]), wv, c[r]);
    }
    for (int r = 0; r < 8; ++r) _mm512_store_ps(p.pre + r * p.cols + j, c[r]);
  }
}

// GEMV blocks b = 2v, 2v+1 each run k rows of R; alongside, hoist tile v (8 rows x vector v of
// the strip) advances one k row per two GEMV rows, so tile v's k range is split over the pair.
// `panels`: R as [cols / 64][k][64] (one contiguous stream per GEMV block) instead of p.r.
template <bool kEmbedded>
PROBE_TARGET void fused(const Problem& p, int strip, const float* panels = nullptr) {
  const int half = p.k / 2;
  const int64_t rld = panels ? 64 : p.cols;
  for (int b = 0; b < p.cols / 64; ++b) {
    const int v = (b / 2) % 4;  // 8 blocks -> 4 hoist vectors
    const int j = strip + v * 16;
    __m512 c[8];
    for (int r = 0; r < 8; ++r)
      c[r] = (b % 2 == 0) ? _mm512_setzero_ps() : _mm512_load_ps(p.pre + r * p.cols + j);
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    const float* rq = panels ? panels + int64_t(b) * 64 * p.k : p.r + b * 64;
    const int q0 = (b % 2) * half;
    const float* wq = p.w + static_cast<int64_t>(q0) * p.cols + j;
    for (int q = 0; q < p.k; q += 2, rq += 2 * rld, wq += p.cols) {
      const __m512 h0 = _mm512_set1_ps(p.h[q]);
      row64(rq, h0, a);
      const __m512 wv = _mm512_load_ps(wq);
      const float* xq = p.x + q0 + q / 2;
      if constexpr (kEmbedded) {
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) c[r] = _mm512_fmadd_ps(_mm512_set1_ps(xq[r * p.k]), wv, c[r]);
      } else {
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          __m512 xr = _mm512_set1_ps(xq[r * p.k]);
          __asm__("" : "+v"(xr));
          c[r] = _mm512_fmadd_ps(xr, wv, c[r]);
        }
      }
      const __m512 h1 = _mm512_set1_ps(p.h[q + 1]);
      const float* rq1 = rq + rld;
      row64(rq1, h1, a);
#pragma GCC unroll 4
      for (int r = 4; r < 8; ++r) c[r] = _mm512_fmadd_ps(_mm512_set1_ps(xq[r * p.k]), wv, c[r]);
    }
    store64(p.y + b * 64, a, false);
    for (int r = 0; r < 8; ++r) _mm512_store_ps(p.pre + r * p.cols + j, c[r]);
  }
}

// The GEMV with 8 register-only FMAs (8 independent chains, no loads) per two k rows: the
// cheapest possible "hoist" work. If even this costs its full time, nothing compute-bound
// can hide under the stream.
PROBE_TARGET void gemv_regfma(const Problem& p) {
  __m512 c[8];
  for (int r = 0; r < 8; ++r) c[r] = _mm512_set1_ps(p.h[r]);
  const __m512 m = _mm512_set1_ps(0.999f), add = _mm512_set1_ps(0.001f);
  for (int j = 0; j < p.cols; j += 64) {
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    const float* rq = p.r + j;
    for (int q = 0; q < p.k; q += 2, rq += 2 * p.cols) {
      const __m512 h0 = _mm512_set1_ps(p.h[q]);
      row64(rq, h0, a);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) c[r] = _mm512_fmadd_ps(c[r], m, add);
      const __m512 h1 = _mm512_set1_ps(p.h[q + 1]);
      const float* rq1 = rq + p.cols;
      row64(rq1, h1, a);
    }
    store64(p.y + j, a, false);
  }
  for (int r = 1; r < 8; ++r) c[0] = _mm512_add_ps(c[0], c[r]);
  _mm512_store_ps(p.pre, c[0]);
}

// GEMV variants of the read pattern alone: 8 accumulators (even / odd k rows), and a
// panel-major copy of R ([cols / 64][k][64], each block one contiguous stream).
PROBE_TARGET void gemv8(const Problem& p) {
  for (int j = 0; j < p.cols; j += 64) {
    __m512 a[8];
    for (int i = 0; i < 8; ++i) a[i] = _mm512_setzero_ps();
    const float* rq = p.r + j;
    for (int q = 0; q < p.k; q += 2, rq += 2 * p.cols) {
      const __m512 h0 = _mm512_set1_ps(p.h[q]), h1 = _mm512_set1_ps(p.h[q + 1]);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        a[v] = _mm512_fmadd_ps(_mm512_load_ps(rq + 16 * v), h0, a[v]);
        a[4 + v] = _mm512_fmadd_ps(_mm512_load_ps(rq + p.cols + 16 * v), h1, a[4 + v]);
      }
    }
    for (int v = 0; v < 4; ++v) _mm512_store_ps(p.y + j + 16 * v, _mm512_add_ps(a[v], a[4 + v]));
  }
}

PROBE_TARGET void gemv_panels(const Problem& p, const float* panels) {
  for (int j = 0; j < p.cols; j += 64) {
    __m512 a[8];
    for (int i = 0; i < 8; ++i) a[i] = _mm512_setzero_ps();
    const float* rq = panels + static_cast<int64_t>(j) * p.k;
    for (int q = 0; q < p.k; q += 2, rq += 128) {
      const __m512 h0 = _mm512_set1_ps(p.h[q]), h1 = _mm512_set1_ps(p.h[q + 1]);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        a[v] = _mm512_fmadd_ps(_mm512_load_ps(rq + 16 * v), h0, a[v]);
        a[4 + v] = _mm512_fmadd_ps(_mm512_load_ps(rq + 64 + 16 * v), h1, a[4 + v]);
      }
    }
    for (int v = 0; v < 4; ++v) _mm512_store_ps(p.y + j + 16 * v, _mm512_add_ps(a[v], a[4 + v]));
  }
}

PROBE_TARGET void gemv_panels4(const Problem& p, const float* panels) {
  gemv_krange(p, panels, p.k, 64, 0, p.k, false);
}

// One 100-row input GEMM of the thread's W slab ([k][cols], 32-column panels of it read with a
// 10 x 32 register block): the hoist as the kernel runs it once per sequence.
PROBE_TARGET void dense_gemm(const float* w, const float* x, float* out, int k, int cols) {
  for (int p = 0; p < cols; p += 32)
    for (int rb = 0; rb < 100; rb += 10) {
      __m512 acc[10][2];
      for (int r = 0; r < 10; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      for (int q = 0; q < k; ++q) {
        const __m512 a0 = _mm512_loadu_ps(w + int64_t(q) * cols + p);
        const __m512 a1 = _mm512_loadu_ps(w + int64_t(q) * cols + p + 16);
#pragma GCC unroll 10
        for (int r = 0; r < 10; ++r) {
          const __m512 br = _mm512_set1_ps(x[(rb + r) * k + q]);
          acc[r][0] = _mm512_fmadd_ps(a0, br, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(a1, br, acc[r][1]);
        }
      }
      for (int r = 0; r < 10; ++r) {
        _mm512_storeu_ps(out + (rb + r) * cols + p, acc[r][0]);
        _mm512_storeu_ps(out + (rb + r) * cols + p + 16, acc[r][1]);
      }
    }
}

// Pure read of R with 8 independent sums: the L2 read rate of this pattern, no GEMV structure.
PROBE_TARGET void read_sum(const Problem& p) {
  __m512 a[8];
  for (int i = 0; i < 8; ++i) a[i] = _mm512_setzero_ps();
  const float* r = p.r;
  const int64_t n = int64_t(p.k) * p.cols;
  for (int64_t i = 0; i < n; i += 128) {
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) a[v] = _mm512_add_ps(a[v], _mm512_load_ps(r + i + 16 * v));
  }
  for (int v = 1; v < 8; ++v) a[0] = _mm512_add_ps(a[0], a[v]);
  _mm512_store_ps(p.y, a[0]);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double time_per_step(int steps, F&& step) {
  for (int s = 0; s < 200; ++s) step(s);
  const double t0 = now_s();
  for (int s = 0; s < steps; ++s) step(s);
  return (now_s() - t0) / steps * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  Problem p;
  int steps = 2000, reps = 7, cpu = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--k")
      p.k = v;
    else if (a == "--cols")
      p.cols = v;
    else if (a == "--steps")
      steps = v;
    else if (a == "--reps")
      reps = v;
    else if (a == "--cpu")
      cpu = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (p.k % 2 != 0 || p.cols % 128 != 0) {
    std::fprintf(stderr, "--k must be even and --cols a multiple of 128\n");
    return 2;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
  p.r = alloc_floats(size_t(p.k) * p.cols, 0.01f);
  p.w = alloc_floats(size_t(p.k) * p.cols, 0.01f);
  p.x = alloc_floats(size_t(8) * p.k, 1.0f);
  p.h = alloc_floats(p.k, 1.0f);
  p.y = alloc_floats(p.cols, 0.0f);
  p.pre = alloc_floats(size_t(8) * p.cols, 0.0f);
  const int strips = p.cols / 64;
  const char* names[] = {"gemv",          "hoist",        "gemv+hoist", "fused",
                         "fused_emb",     "gemv_regfma",  "gemv8",      "gemv_panels",
                         "read_sum",      "gemv_panels4", "split_slab", "split_panels",
                         "panels4+hoist", "fused_panels"};
  constexpr int kVariants = 14;
  float* panels = alloc_floats(size_t(p.k) * p.cols, 0.01f);
  std::vector<std::vector<double>> t(kVariants);
  float* xs = alloc_floats(size_t(100) * p.k, 1.0f);
  float* xw = alloc_floats(size_t(100) * p.cols, 0.0f);
  for (int rep = 0; rep < reps; ++rep) {
    t[0].push_back(time_per_step(steps, [&](int) { gemv(p); }));
    t[1].push_back(time_per_step(steps, [&](int s) { hoist(p, (s % strips) * 64); }));
    t[2].push_back(time_per_step(steps, [&](int s) {
      gemv(p);
      hoist(p, (s % strips) * 64);
    }));
    t[3].push_back(time_per_step(steps, [&](int s) { fused<false>(p, (s % strips) * 64); }));
    t[4].push_back(time_per_step(steps, [&](int s) { fused<true>(p, (s % strips) * 64); }));
    t[5].push_back(time_per_step(steps, [&](int) { gemv_regfma(p); }));
    t[6].push_back(time_per_step(steps, [&](int) { gemv8(p); }));
    t[7].push_back(time_per_step(steps, [&](int) { gemv_panels(p, panels); }));
    t[8].push_back(time_per_step(steps, [&](int) { read_sum(p); }));
    t[9].push_back(time_per_step(steps, [&](int) { gemv_panels4(p, panels); }));
    t[10].push_back(time_per_step(steps, [&](int) {
      gemv_krange(p, p.r, 1, p.cols, 0, p.k / 2, false);
      gemv_krange(p, p.r, 1, p.cols, p.k / 2, p.k, true);
    }));
    t[11].push_back(time_per_step(steps, [&](int) {
      gemv_krange(p, panels, p.k, 64, 0, p.k / 2, false);
      gemv_krange(p, panels, p.k, 64, p.k / 2, p.k, true);
    }));
    t[12].push_back(time_per_step(steps, [&](int s) {
      gemv_panels4(p, panels);
      hoist(p, (s % strips) * 64);
    }));
    t[13].push_back(
        time_per_step(steps, [&](int s) { fused<false>(p, (s % strips) * 64, panels); }));
  }
  // After a dense GEMM: runs of 100 k-split GEMV steps, each run preceded (or not) by the
  // 100-row input GEMM; only the GEMV steps are timed.
  std::vector<double> plain_runs, after_runs;
  for (int rep = 0; rep < reps; ++rep)
    for (int with = 0; with < 2; ++with) {
      double sum = 0;
      for (int run = 0; run < std::max(1, steps / 100); ++run) {
        if (with) dense_gemm(p.w, xs, xw, p.k, p.cols);
        const double t0 = now_s();
        for (int s = 0; s < 100; ++s) {
          gemv_krange(p, p.r, 1, p.cols, 0, p.k / 2, false);
          gemv_krange(p, p.r, 1, p.cols, p.k / 2, p.k, true);
        }
        sum += now_s() - t0;
      }
      (with ? after_runs : plain_runs).push_back(sum / (std::max(1, steps / 100) * 100) * 1e6);
    }
  // Check fused computes the same y and pre as the separate kernels.
  std::vector<float> y0(p.y, p.y + p.cols), pre0(p.pre, p.pre + 8 * p.cols);
  gemv(p);
  hoist(p, 0);
  std::vector<float> y1(p.y, p.y + p.cols), pre1(p.pre, p.pre + 8 * p.cols);
  fused<false>(p, 0);
  float err = 0;
  for (int i = 0; i < p.cols; ++i) err = std::max(err, std::abs(p.y[i] - y1[i]));
  for (int i = 0; i < 64; ++i)
    for (int r = 0; r < 8; ++r)
      err = std::max(err, std::abs(p.pre[r * p.cols + i] - pre1[r * p.cols + i]));
  std::printf("k %d cols %d (R %zu KiB), %d steps x %d reps, cpu %d, max |fused - separate| %.2e\n",
              p.k, p.cols, size_t(p.k) * p.cols * 4 / 1024, steps, reps, cpu, err);
  const double bytes = double(p.k) * p.cols * 4;
  for (int v = 0; v < kVariants; ++v) {
    std::sort(t[v].begin(), t[v].end());
    const double med = t[v][t[v].size() / 2];
    std::printf("%-12s %7.3f us/step  (min %7.3f)  R rate %6.1f GB/s\n", names[v], med, t[v][0],
                v == 1 ? 0.0 : bytes / med * 1e-3);
  }
  std::sort(plain_runs.begin(), plain_runs.end());
  std::sort(after_runs.begin(), after_runs.end());
  std::printf(
      "split_slab in runs of 100 steps: %.3f us/step alone, %.3f after a 100-row input GEMM "
      "per run (GEMM not timed)\n",
      plain_runs[plain_runs.size() / 2], after_runs[after_runs.size() / 2]);
  return 0;
}
