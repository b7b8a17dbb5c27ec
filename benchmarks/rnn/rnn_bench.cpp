// graphi_bench_rnn: graphi's fused LSTM/GRU sequence ops (ops/rnn/rnn_sequence.h) against oneDNN
// 2.6's lstm_forward and lbr_gru_forward primitives, in the same process (issue 4, Benchmark).
// The other peers (ONNX Runtime, PyTorch) run in their own processes; benchmarks/rnn/peers/
// run_all.py drives all of them, this binary included (--serve), interleaved.
//
//   graphi_bench_rnn [--full] [--threads 1,2] [--cells lstm,gru] [--hidden 64,256]
//                    [--batch 1,10] [--seq 100] [--budget-ms 250] [--csv FILE]
//   graphi_bench_rnn --serve --threads T     (line protocol on stdin/stdout, see serve())
//   graphi_bench_rnn --bf16 [--rounds N] [--dump DIR] ... graphi fp32 / bf16 / int8 weights
//                    against oneDNN fp32 / bf16 / int8 (run_bf16(); scripts/bench_rnn_bf16.sh
//                    adds ONNX Runtime fp32 and DynamicQuantizeLSTM)
//
// Configurations: DeepCPU Table 1 (input = hidden in {64, 256, 1024}, batch in {1, 10, 20},
// sequence 100) plus hidden 256 batch 1 at sequence 1 and 10. Hidden 1024 at batch 10 and 20
// only with --full (each run takes hundreds of ms). --hidden/--batch/--seq keep a subset.
//
// graphi: a one-node graph (X input; W, R, B constants, so the weights are packed once at
// Session creation) run by engine::Session with the sequential executor and a team of k; a
// second Session of the same node with graphi_wcs_shuffle = 1 (thread-to-block mapping rotated
// every step, which defeats weight-centric streamlining) shows what WCS buys.
// oneDNN: forward_inference, weights in format_tag::any reordered once from the same values
// (gate blocks permuted from ONNX order), primitives created once, executed on the calling
// thread after omp_set_num_threads(k). GRU is compared like for like: graphi's GRU with
// linear_before_reset = 1 against lbr_gru_forward. All get zero initial states and produce
// the whole output sequence Y; the max abs difference to graphi's Y is printed per row.
// GRAPHI_BENCH_RNN_SCHEDULE="threads,xi,xj,chunk,tile,zigzag" forces that schedule on graphi's
// node (the node attribute graphi_schedule; ops/rnn/RNN_SCHEDULE.md) instead of the search.
//
// Timing: per row, two rounds over all rows; within a row the implementations take turns
// sample by sample, the order rotated each sample (one untimed warm-up each first). Each turn
// is one untimed run and one timed run (session 27), so every implementation is timed with its
// own weights in the caches, as the peers in their own processes are (their runs follow each
// other); with one run per turn, the others' runs had left hidden 1024's 32 MiB of weights
// (LSTM) out of a 32 MiB L3 before every sample. (On the Zen 5 guest the two ways measured the
// same within the host's drift: LSTM h1024 b1 11.0-11.3 ms either way.) Medians over both
// rounds' samples; the per-round ratios show the drift between rounds.
//
// Roofline (measured here, per thread count): FP32 FMA peak, and L2 / L3 read bandwidth. The
// bound of a configuration is max(GEMM flops / peak, weight read time), where the recurrent
// weights R are read once per step and the input weights W once (the hoisted input GEMM): the
// share of R that fits the team's L2 caches (threads x L2 per core) from L2, the rest from L3
// (W from L3 too when R does not fit). The bound credits a kernel with the whole L2, so no
// kernel can beat it.
#include <immintrin.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "benchmarks/bench_util.h"
#include "benchmarks/handoff.h"
#include "dnnl.hpp"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "models/weights.h"
#include "ops/registry.h"
#include "ops/rnn/rnn_sequence.h"

using namespace graphi;
using namespace graphi::bench;

namespace {

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "graphi_bench_rnn: %s\nusage: graphi_bench_rnn [--full] [--threads 1,2] "
               "[--cells lstm,gru] [--hidden LIST] [--batch LIST] [--seq LIST] [--budget-ms MS] "
               "[--csv FILE] [--bf16 [--rounds N] [--dump DIR]]\n       graphi_bench_rnn --serve "
               "--threads T\n",
               msg.c_str());
  std::exit(2);
}

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "graphi_bench_rnn: %s\n", msg.c_str());
  std::exit(1);
}

// ---- roofline -----------------------------------------------------------------------------

struct Roofline {
  int threads = 1;
  double fma_gflops = 0, l2_gbs = 0, l3_gbs = 0;
  // Read bandwidth from memory: what a model whose weights do not stay in the cache between
  // runs streams them at (the CNN benchmark's weights column).
  double dram_gbs = 0;
  // Core-to-core round trip (ns, twice benchmarks/handoff.h's one-way hand-off; 0 for one
  // thread or when two CPUs are not available): what every batch-1 step's exchange pays. On a KVM
  // guest it depends on where the host puts the vCPUs at that moment (AMD Zen 5 guest: 120 or
  // 530-600 ns), so each run records it.
  double xcore_ns = 0;
  int64_t l2_bytes_per_core = 0, l3_bytes = 0;
  std::string isa;
};

// The size of one cache of `level` that cpu0 uses: sysfs first (one instance: on the AMD EPYC
// guests glibc's sysconf says 384 MiB for the 32 MiB L3 of a CCD, the whole package's), then
// sysconf.
int64_t cache_bytes(int level, int64_t fallback) {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(level == 2 ? 2 : 3) +
                  "/size");
  std::string s;
  if (f >> s && !s.empty()) {
    int64_t n = std::atoll(s.c_str());
    if (s.back() == 'K') n <<= 10;
    if (s.back() == 'M') n <<= 20;
    if (n > 0) return n;
  }
  const long v = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  return v > 0 ? v : fallback;
}

volatile float g_sink;  // keeps the measuring loops' results alive

// `iters` x 16 independent FMA chains of 16 lanes (enough to fill two FMA ports of latency 4).
__attribute__((target("avx512f"), noinline)) void fma_loop_avx512(int64_t iters) {
  __m512 a[16];
  for (int j = 0; j < 16; ++j) a[j] = _mm512_set1_ps(1.0f + 0.01f * float(j));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  __m512 s = a[0];
  for (int j = 1; j < 16; ++j) s = _mm512_add_ps(s, a[j]);
  float v[16];
  _mm512_storeu_ps(v, s);
  g_sink = v[0] + v[15];
}

// AVX2: 12 chains of 8 lanes (16 ymm registers, two hold m and c).
__attribute__((target("avx2,fma"), noinline)) void fma_loop_avx2(int64_t iters) {
  __m256 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm256_set1_ps(1.0f + 0.01f * float(j));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) a[j] = _mm256_fmadd_ps(a[j], m, c);
  __m256 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, a[j]);
  float v[8];
  _mm256_storeu_ps(v, s);
  g_sink = v[0] + v[7];
}

// Sums `n` floats `passes` times with 8 independent accumulators (loads, not adds, limit it).
__attribute__((target("avx512f"), noinline)) void read_loop_avx512(const float* p, int64_t n,
                                                                   int64_t passes) {
  __m512 a[8];
  for (auto& v : a) v = _mm512_setzero_ps();
  for (int64_t r = 0; r < passes; ++r)
    for (int64_t i = 0; i + 128 <= n; i += 128)
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) a[j] = _mm512_add_ps(a[j], _mm512_load_ps(p + i + 16 * j));
  __m512 s = a[0];
  for (int j = 1; j < 8; ++j) s = _mm512_add_ps(s, a[j]);
  float v[16];
  _mm512_storeu_ps(v, s);
  g_sink = v[0] + v[15];
}

__attribute__((target("avx2"), noinline)) void read_loop_avx2(const float* p, int64_t n,
                                                              int64_t passes) {
  __m256 a[8];
  for (auto& v : a) v = _mm256_setzero_ps();
  for (int64_t r = 0; r < passes; ++r)
    for (int64_t i = 0; i + 64 <= n; i += 64)
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) a[j] = _mm256_add_ps(a[j], _mm256_load_ps(p + i + 8 * j));
  __m256 s = a[0];
  for (int j = 1; j < 8; ++j) s = _mm256_add_ps(s, a[j]);
  float v[8];
  _mm256_storeu_ps(v, s);
  g_sink = v[0] + v[7];
}

// Runs body(thread) on `threads` OpenMP threads `reps` times between barriers and returns the
// shortest wall time of one repetition in seconds.
template <typename Body>
double best_parallel_seconds(int threads, int reps, Body body) {
  double best = 1e30;
#pragma omp parallel num_threads(threads)
  {
    for (int r = 0; r < reps; ++r) {
#pragma omp barrier
      double t0 = 0;
#pragma omp master
      t0 = now_ns();
      body(omp_get_thread_num());
#pragma omp barrier
#pragma omp master
      best = std::min(best, (now_ns() - t0) * 1e-9);
    }
  }
  return best;
}

// Aggregate read bandwidth (GB/s) of `threads` threads each summing its own buffer of `bytes`,
// `per_rep` bytes per thread and repetition (2e9: ~20 ms at ~100 GB/s per thread).
double read_bandwidth(int threads, int64_t bytes, bool avx512, double per_rep = 2e9) {
  const int64_t n = std::max<int64_t>(bytes / 4 / 128 * 128, 128);
  std::vector<float*> bufs(size_t(threads), nullptr);
  const int64_t passes = std::max<int64_t>(1, int64_t(per_rep / double(n * 4)));
  const double s = best_parallel_seconds(threads, 5, [&](int t) {
    if (!bufs[size_t(t)]) {  // first touch by the reading thread
      bufs[size_t(t)] = static_cast<float*>(std::aligned_alloc(64, size_t(n) * 4));
      for (int64_t i = 0; i < n; ++i) bufs[size_t(t)][i] = float(i & 7);
    }
    if (avx512)
      read_loop_avx512(bufs[size_t(t)], n, passes);
    else
      read_loop_avx2(bufs[size_t(t)], n, passes);
  });
  for (float* b : bufs) std::free(b);
  return double(threads) * double(passes) * double(n) * 4.0 / s * 1e-9;
}

Roofline measure_roofline(int threads) {
  Roofline r;
  r.threads = threads;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  r.isa = avx512 ? "avx512" : "avx2";
  const int64_t iters = 2'000'000;
  const double flops_per_iter = avx512 ? 16.0 * 16 * 2 : 12.0 * 8 * 2;
  const double s = best_parallel_seconds(threads, 10, [&](int) {
    if (avx512)
      fma_loop_avx512(iters);
    else
      fma_loop_avx2(iters);
  });
  r.fma_gflops = double(threads) * double(iters) * flops_per_iter / s * 1e-9;
  r.l2_bytes_per_core = cache_bytes(2, 1 << 20);
  r.l3_bytes = cache_bytes(3, 32 << 20);
  // L2: half of a core's L2 each (out of L1, safely inside L2). L3: 8 MiB each (the 16 MiB
  // recurrent weights of an LSTM at hidden 1024 on 2 threads), capped to a share of L3.
  r.l2_gbs = read_bandwidth(threads, r.l2_bytes_per_core / 2, avx512);
  const int64_t l3_each = std::min<int64_t>(8 << 20, r.l3_bytes / (2 * threads));
  r.l3_gbs = read_bandwidth(threads, std::max<int64_t>(l3_each, 2 * r.l2_bytes_per_core), avx512);
  // Memory: each thread's buffer twice an L3 (the threads may sit under different L3s: a guest's
  // two vCPUs on two CCDs read 64 MiB at 176 GB/s), at most 2 GiB together, ~0.5 GB per thread
  // and repetition (~20 ms at 25 GB/s per thread).
  const int64_t dram_each =
      std::max<int64_t>(16 << 20, std::min<int64_t>(2 * r.l3_bytes, (int64_t{2} << 30) / threads));
  r.dram_gbs = read_bandwidth(threads, dram_each, avx512, 5e8);
  if (threads >= 2) r.xcore_ns = std::max(0.0, 2 * measure_handoff_ns());
  return r;
}

// ---- configurations and weights -------------------------------------------------------------

struct Config {
  bool lstm = true;
  int64_t hidden = 0, batch = 0, seq = 0;  // input = hidden
  int threads = 1;
  int gates() const { return lstm ? 4 : 3; }
  std::string cell() const { return lstm ? "LSTM" : "GRU-lbr"; }
  std::string name() const {
    return std::string(lstm ? "LSTM" : "GRU") + " h" + std::to_string(hidden) + " b" +
           std::to_string(batch) + " s" + std::to_string(seq) + " t" + std::to_string(threads);
  }
  // Multiply-adds of the GEMMs only (x and h projections), 2 flops each.
  double flops() const {
    return 2.0 * double(seq) * double(batch) * double(hidden + hidden) * double(gates() * hidden);
  }
  int64_t r_bytes() const { return int64_t(gates()) * hidden * hidden * 4; }
  int64_t w_bytes() const { return int64_t(gates()) * hidden * hidden * 4; }  // input = hidden
  // The roofline bound (see the file comment): R read every step, W once.
  bool r_in_l2(const Roofline& m) const {
    return r_bytes() <= int64_t(threads) * m.l2_bytes_per_core;
  }
  // Bytes of weights read per call from L2 and from L3 (see the file comment).
  double l2_read_bytes(const Roofline& m) const {
    const double team_l2 = double(threads) * double(m.l2_bytes_per_core);
    return double(seq) * std::min(double(r_bytes()), team_l2) +
           (r_in_l2(m) ? double(w_bytes()) : 0);
  }
  double l3_read_bytes(const Roofline& m) const {
    const double team_l2 = double(threads) * double(m.l2_bytes_per_core);
    return double(seq) * std::max(0.0, double(r_bytes()) - team_l2) +
           (r_in_l2(m) ? 0 : double(w_bytes()));
  }
  double bound_ms(const Roofline& m) const {
    const double mem = l2_read_bytes(m) / (m.l2_gbs * 1e9) + l3_read_bytes(m) / (m.l3_gbs * 1e9);
    return std::max(flops() / (m.fma_gflops * 1e9), mem) * 1e3;
  }
};

// ONNX-layout weights of one layer (D = 1): W [G*H, I], R [G*H, H], B [2*G*H] (Wb then Rb),
// and the input X [T, B, I]. Seeded by the configuration (not the thread count), so every
// process and thread count sees the same values.
struct Weights {
  std::vector<float> w, r, b, x;
};

Weights make_weights(const Config& c) {
  const int64_t G = c.gates(), H = c.hidden, I = c.hidden;
  const uint64_t seed = (c.lstm ? 1u : 2u) * 1'000'003ull + uint64_t(H) * 10'007ull +
                        uint64_t(c.batch) * 101ull + uint64_t(c.seq);
  models::WeightRng rng(seed);
  const float bound = 1.0f / std::sqrt(float(H));  // PyTorch's init range
  Weights wt;
  wt.w.resize(size_t(G * H * I));
  wt.r.resize(size_t(G * H * H));
  wt.b.resize(size_t(2 * G * H));
  wt.x.resize(size_t(c.seq * c.batch * I));
  for (float& v : wt.w) v = rng.uniform(-bound, bound);
  for (float& v : wt.r) v = rng.uniform(-bound, bound);
  for (float& v : wt.b) v = rng.uniform(-bound, bound);
  for (float& v : wt.x) v = rng.uniform(-1, 1);
  return wt;
}

// Writes a float32 C-order .npy file (format 1.0).
void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape,
               const float* data, size_t n) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(3, 4)"; one dim keeps "(3,)"
  if (!dims.empty() && dims.back() == ' ') dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = uint16_t(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(data), std::streamsize(n * sizeof(float)));
  if (!f) fail("cannot write " + path.string());
}

// ---- graphi -------------------------------------------------------------------------------

struct GraphiRunner {
  std::unique_ptr<engine::Session> session;
  engine::NamedTensors inputs;

  void init(const Config& c, const Weights& wt, bool wcs_shuffle, const char* weights = nullptr) {
    const int64_t G = c.gates(), H = c.hidden, I = c.hidden;
    auto constant = [](const Shape& shape, const std::vector<float>& v) {
      Tensor t(TensorDesc{DType::kF32, shape});
      std::memcpy(t.data_as<float>(), v.data(), v.size() * sizeof(float));
      return t;
    };
    graph::GraphBuilder b("rnn_bench");
    b.add_input("X", TensorDesc{DType::kF32, {c.seq, c.batch, I}});
    b.add_constant("W", constant({1, G * H, I}, wt.w));
    b.add_constant("R", constant({1, G * H, H}, wt.r));
    b.add_constant("B", constant({1, 2 * G * H}, wt.b));
    graph::Attributes a;
    a.set("hidden_size", H);
    if (!c.lstm) a.set("linear_before_reset", int64_t{1});
    if (wcs_shuffle) a.set(ops::kWcsShuffleAttr, int64_t{1});
    // Experiments: force one schedule ("threads,xi,xj,chunk,tile,zigzag") on graphi's node.
    if (const char* forced = std::getenv("GRAPHI_BENCH_RNN_SCHEDULE"); forced && !wcs_shuffle)
      a.set(ops::kScheduleAttr, std::string(forced));
    b.add_node(c.lstm ? "LSTM" : "GRU", "rnn", {"X", "W", "R", "B"}, {"Y"}, a);
    b.add_output("Y");
    auto g = b.finish(ops::Registry::get());
    if (!g.is_ok()) fail(g.status().message());
    engine::SessionOptions o;
    o.threads = c.threads;
    if (weights) o.rnn_weights = weights;
    auto s = engine::Session::create(std::make_shared<const graph::Graph>(std::move(g).value()), o);
    if (!s.is_ok()) fail(s.status().message());
    session = std::move(s).value();
    inputs.emplace_back("X", constant({c.seq, c.batch, I}, wt.x));
  }
  // Runs once; copies Y [T, 1, B, H] into `y` when given.
  void run(std::vector<float>* y = nullptr) {
    auto out = session->run(inputs);
    if (!out.is_ok()) fail(out.status().message());
    if (y) {
      const Tensor& t = (*out)[0].second;
      y->assign(t.data_as<float>(), t.data_as<float>() + t.numel());
    }
  }
};

// ---- oneDNN -------------------------------------------------------------------------------

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct DnnlRunner {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::primitive prim;
  dnnl::memory src, w_layer, w_iter, bias, dst;
  int threads = 1;

  bool bf16 = false;  // bf16 src, weights and dst (bias f32): oneDNN's bf16 RNN configuration
  // int8 (LSTM only, as oneDNN 2.6 has it): u8 src quantized statically (x * kDataScale +
  // kDataShift, x and h in [-1, 1]), s8 weights with one scale per gate and output unit, f32
  // bias and dst.
  bool int8 = false;
  static constexpr float kDataScale = 127.0f, kDataShift = 128.0f;
  dnnl::memory dst_f32;  // dst converted back, for the accuracy column

  // precision: 0 fp32, 1 bf16, 2 int8.
  void init(const Config& c, const Weights& wt, const std::vector<float>& x, int precision = 0) {
    threads = c.threads;
    bf16 = precision == 1;
    int8 = precision == 2;
    if (int8 && !c.lstm) fail("oneDNN int8: LSTM only");
    const dt wdt = bf16 ? dt::bf16 : int8 ? dt::s8 : dt::f32;
    const dt ddt = bf16 ? dt::bf16 : int8 ? dt::u8 : dt::f32;
    omp_set_num_threads(threads);
    const int64_t G = c.gates(), H = c.hidden, I = c.hidden, T = c.seq, N = c.batch;
    // oneDNN gate g takes ONNX gate onnx_gate[g]. LSTM: oneDNN (i, f, c~, o), ONNX (i, o, f, c~).
    // lbr GRU: oneDNN (u, r, h~), ONNX (z, r, h~), z == u.
    const std::vector<int64_t> onnx_gate =
        c.lstm ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 1, 2};
    // User layouts ldigo: [1, 1, in, G, H]; element (in, g, h) = ONNX M[onnx_gate[g]*H + h][in].
    auto to_ldigo = [&](const std::vector<float>& m, int64_t in_dim) {
      std::vector<float> out(size_t(in_dim * G * H));
      for (int64_t i = 0; i < in_dim; ++i)
        for (int64_t g = 0; g < G; ++g)
          for (int64_t h = 0; h < H; ++h)
            out[size_t((i * G + g) * H + h)] =
                m[size_t((onnx_gate[size_t(g)] * H + h) * in_dim + i)];
      return out;
    };
    std::vector<float> wl = to_ldigo(wt.w, I), wi = to_ldigo(wt.r, H);
    // Bias ldgo. LSTM: Wb + Rb per gate. lbr GRU: G + 1 blocks, u and r get Wb + Rb, block 2
    // is Wb of h~ (outside r *), block 3 is Rb of h~ (inside r * (U h + b)).
    const int64_t bias_gates = c.lstm ? G : G + 1;
    std::vector<float> bl(size_t(bias_gates * H));
    const float* wb = wt.b.data();
    const float* rb = wt.b.data() + G * H;
    for (int64_t g = 0; g < G; ++g)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t o = onnx_gate[size_t(g)] * H + h;
        bl[size_t(g * H + h)] = (!c.lstm && g == 2) ? wb[o] : wb[o] + rb[o];
      }
    if (!c.lstm)
      for (int64_t h = 0; h < H; ++h) bl[size_t(3 * H + h)] = rb[2 * H + h];

    const dnnl::memory::desc src_md({T, N, I}, ddt, tag::tnc);
    const dnnl::memory::desc dst_md({T, N, H}, int8 ? dt::f32 : wdt, tag::tnc);
    const dnnl::memory::desc wl_any({1, 1, I, G, H}, wdt, tag::any);
    const dnnl::memory::desc wi_any({1, 1, H, G, H}, wdt, tag::any);
    const dnnl::memory::desc wl_user({1, 1, I, G, H}, dt::f32, tag::ldigo);
    const dnnl::memory::desc wi_user({1, 1, H, G, H}, dt::f32, tag::ldigo);
    const dnnl::memory::desc bias_md({1, 1, bias_gates, H}, dt::f32, tag::ldgo);
    const dnnl::memory::desc none;  // zero initial states; final states not requested
    const auto dir = dnnl::rnn_direction::unidirectional_left2right;
    const auto prop = dnnl::prop_kind::forward_inference;
    dnnl::memory::desc wl_md, wi_md;
    // int8: per (gate, unit) weight scales, 127 / max |w| over the input dim of both W and R
    // (oneDNN takes one scale per output channel for both).
    // The weights reorders take the primitive's attributes: oneDNN's RNN weights reorder
    // quantizes with rnn_weights_qparams and folds the data shift's compensation into the packed
    // weights from rnn_data_qparams.
    dnnl::primitive_attr attr;
    if (int8) {
      std::vector<float> scales(size_t(G * H), 0.0f);
      for (int64_t i = 0; i < I; ++i)
        for (int64_t gh = 0; gh < G * H; ++gh)
          scales[size_t(gh)] = std::max(scales[size_t(gh)], std::abs(wl[size_t(i * G * H + gh)]));
      for (int64_t i = 0; i < H; ++i)
        for (int64_t gh = 0; gh < G * H; ++gh)
          scales[size_t(gh)] = std::max(scales[size_t(gh)], std::abs(wi[size_t(i * G * H + gh)]));
      for (float& s : scales) s = s > 0 ? 127.0f / s : 1.0f;
      const int mask = (1 << 3) | (1 << 4);
      attr.set_rnn_data_qparams(kDataScale, kDataShift);
      attr.set_rnn_weights_qparams(mask, scales);
    }
    if (c.lstm) {
      dnnl::lstm_forward::primitive_desc pd(
          dnnl::lstm_forward::desc(prop, dir, src_md, none, none, wl_any, wi_any, bias_md, dst_md,
                                   none, none),
          attr, eng);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
      prim = dnnl::lstm_forward(pd);
    } else {
      dnnl::lbr_gru_forward::primitive_desc pd(
          dnnl::lbr_gru_forward::desc(prop, dir, src_md, none, wl_any, wi_any, bias_md, dst_md,
                                      none),
          eng);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
      prim = dnnl::lbr_gru_forward(pd);
    }
    // Reorder the user weights once into the primitive's format.
    dnnl::memory wl_u(wl_user, eng, wl.data()), wi_u(wi_user, eng, wi.data());
    w_layer = dnnl::memory(wl_md, eng);
    w_iter = dnnl::memory(wi_md, eng);
    dnnl::reorder(dnnl::reorder::primitive_desc(wl_u, w_layer, attr)).execute(strm, wl_u, w_layer);
    dnnl::reorder(dnnl::reorder::primitive_desc(wi_u, w_iter, attr)).execute(strm, wi_u, w_iter);
    bias = dnnl::memory(bias_md, eng);
    std::memcpy(bias.get_data_handle(), bl.data(), bl.size() * sizeof(float));
    src = dnnl::memory(src_md, eng);
    const dnnl::memory::desc src_user({T, N, I}, dt::f32, tag::tnc);
    dnnl::memory x_u(src_user, eng, const_cast<float*>(x.data()));
    if (int8) {  // u8 = round(x * scale + shift), as the primitive's data qparams say
      dnnl::primitive_attr xattr;
      xattr.set_output_scales(0, {kDataScale});
      xattr.set_zero_points(DNNL_ARG_DST, 0, {int(kDataShift)});
      dnnl::reorder(dnnl::reorder::primitive_desc(x_u, src, xattr)).execute(strm, x_u, src);
    } else {
      dnnl::reorder(x_u, src).execute(strm, x_u, src);
    }
    dst = dnnl::memory(dst_md, eng);
    dst_f32 = dnnl::memory(dnnl::memory::desc({T, N, H}, dt::f32, tag::tnc), eng);
    strm.wait();
  }
  void run(std::vector<float>* y = nullptr) {
    omp_set_num_threads(threads);
    prim.execute(strm, {{DNNL_ARG_SRC_LAYER, src},
                        {DNNL_ARG_WEIGHTS_LAYER, w_layer},
                        {DNNL_ARG_WEIGHTS_ITER, w_iter},
                        {DNNL_ARG_BIAS, bias},
                        {DNNL_ARG_DST_LAYER, dst}});
    strm.wait();
    if (y) {
      dnnl::reorder(dst, dst_f32).execute(strm, dst, dst_f32);
      strm.wait();
      const float* p = static_cast<const float*>(dst_f32.get_data_handle());
      y->assign(p, p + dst_f32.get_desc().get_size() / sizeof(float));
    }
  }
};

// One configuration: graphi, graphi with the WCS shuffle, oneDNN, on the same weights.
struct Row {
  Config c;
  GraphiRunner graphi, shuffled;
  DnnlRunner dnnl;
  std::vector<float> y_graphi;
  double diff_dnnl = 0, diff_shuffled = 0;  // max abs difference to graphi's Y
  std::vector<double> ms[3];                // graphi, shuffled, oneDNN; both rounds
  double round_ratio[2] = {0, 0};           // oneDNN / graphi median per round

  void init(const Config& cfg, const Weights& wt) {
    c = cfg;
    graphi.init(c, wt, false);
    shuffled.init(c, wt, true);
    dnnl.init(c, wt, wt.x);
    std::vector<float> ys, yd;
    graphi.run(&y_graphi);
    shuffled.run(&ys);
    dnnl.run(&yd);
    if (ys.size() != y_graphi.size() || yd.size() != y_graphi.size())
      fail(c.name() + ": output sizes differ (" + std::to_string(y_graphi.size()) + ", " +
           std::to_string(ys.size()) + ", " + std::to_string(yd.size()) + ")");
    for (size_t k = 0; k < y_graphi.size(); ++k) {
      diff_dnnl = std::max(diff_dnnl, double(std::abs(y_graphi[k] - yd[k])));
      diff_shuffled = std::max(diff_shuffled, double(std::abs(y_graphi[k] - ys[k])));
    }
  }
  void run(int which) {
    if (which == 0)
      graphi.run();
    else if (which == 1)
      shuffled.run();
    else
      dnnl.run();
  }
  // One warm-up each, then turns (order rotated every sample) until `budget_ms` has passed and
  // every implementation has at least `min_samples` (at most 2000). Returns this call's samples.
  std::array<std::vector<double>, 3> sample(double budget_ms, int min_samples) {
    for (int k = 0; k < 3; ++k) run(k);
    std::array<std::vector<double>, 3> out;
    const double start = now_ns();
    for (int i = 0; i < 2000; ++i) {
      if (i >= min_samples && (now_ns() - start) * 1e-6 >= budget_ms) break;
      for (int j = 0; j < 3; ++j) {
        const int k = (i + j) % 3;
        run(k);  // the turn's warm-up: its weights back in the caches
        const double t0 = now_ns();
        run(k);
        out[size_t(k)].push_back((now_ns() - t0) * 1e-6);
      }
    }
    return out;
  }
};

// --bf16: graphi with fp32, bf16 and int8 weights (SessionOptions::rnn_weights) against oneDNN's
// fp32, bf16 (bf16 src/weights/dst, f32 bias) and int8 (LSTM: u8 src, s8 weights, f32 bias and
// dst) primitives, interleaved like Row; the accuracy columns compare each reduced-precision Y
// with graphi's fp32 Y (max and mean |difference|). --dump DIR writes each row's W, R, B, X and
// graphi's fp32 and int8 Y as .npy (DIR/<cell>_h<H>_b<B>_s<T>/) for the ONNX Runtime
// DynamicQuantizeLSTM peer (benchmarks/rnn/peers/ort_lowp_lstm_time.py), so its error is
// measured on the same weights and inputs.
struct LowpRow {
  static constexpr int kN = 6;
  enum : int { kG32 = 0, kG16, kG8, kD32, kD16, kD8 };
  static constexpr const char* kNames[kN] = {"graphi fp32", "graphi bf16", "graphi int8",
                                             "oneDNN fp32", "oneDNN bf16", "oneDNN int8"};
  Config c;
  GraphiRunner g[3];
  DnnlRunner d[3];
  bool has[kN] = {true, true, true, true, true, true};
  double max_err[kN] = {}, mean_err[kN] = {};  // vs graphi fp32
  std::vector<double> ms[kN];

  void init(const Config& cfg, const Weights& wt, const std::string& dump_dir) {
    c = cfg;
    g[0].init(c, wt, false);
    g[1].init(c, wt, false, "bf16");
    g[2].init(c, wt, false, "int8");
    d[0].init(c, wt, wt.x, 0);
    d[1].init(c, wt, wt.x, 1);
    has[kD8] = c.lstm;  // oneDNN 2.6 has no int8 lbr GRU
    if (has[kD8]) d[2].init(c, wt, wt.x, 2);
    std::vector<float> y[kN];
    for (int k = 0; k < kN; ++k)
      if (has[k]) run(k, &y[k]);
    for (int k = 1; k < kN; ++k) {
      if (!has[k]) continue;
      if (y[k].size() != y[0].size()) fail(c.name() + ": output sizes differ");
      for (size_t i = 0; i < y[0].size(); ++i) {
        const double e = std::abs(double(y[k][i]) - y[0][i]);
        max_err[k] = std::max(max_err[k], e);
        mean_err[k] += e;
      }
      mean_err[k] /= double(y[0].size());
    }
    if (!dump_dir.empty()) {
      const int64_t G = c.gates(), H = c.hidden;
      const std::filesystem::path dir =
          std::filesystem::path(dump_dir) /
          ((c.lstm ? std::string("lstm") : std::string("gru")) + "_h" + std::to_string(H) + "_b" +
           std::to_string(c.batch) + "_s" + std::to_string(c.seq));
      std::filesystem::create_directories(dir);
      write_npy(dir / "W.npy", {1, G * H, H}, wt.w.data(), wt.w.size());
      write_npy(dir / "R.npy", {1, G * H, H}, wt.r.data(), wt.r.size());
      write_npy(dir / "B.npy", {1, 2 * G * H}, wt.b.data(), wt.b.size());
      write_npy(dir / "X.npy", {c.seq, c.batch, H}, wt.x.data(), wt.x.size());
      write_npy(dir / "Y_graphi_fp32.npy", {c.seq, 1, c.batch, H}, y[0].data(), y[0].size());
      write_npy(dir / "Y_graphi_int8.npy", {c.seq, 1, c.batch, H}, y[kG8].data(), y[kG8].size());
    }
  }
  void run(int k, std::vector<float>* y = nullptr) {
    if (k < 3)
      g[k].run(y);
    else
      d[k - 3].run(y);
  }
  void sample(double budget_ms, int min_samples) {
    for (int k = 0; k < kN; ++k)
      if (has[k]) run(k);
    const double start = now_ns();
    for (int i = 0; i < 2000; ++i) {
      if (i >= min_samples && (now_ns() - start) * 1e-6 >= budget_ms) break;
      for (int j = 0; j < kN; ++j) {
        const int k = (i + j) % kN;
        if (!has[k]) continue;
        run(k);  // the turn's warm-up, as in Row::sample
        const double t0 = now_ns();
        run(k);
        ms[k].push_back((now_ns() - t0) * 1e-6);
      }
    }
  }
};

int run_bf16(const std::vector<Config>& configs, double budget_ms, int rounds,
             const std::string& csv_path, const std::string& dump_dir) {
  std::printf("graphi_bench_rnn --bf16: %zu rows, oneDNN %d.%d.%d, load average %s\n",
              configs.size(), dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
              load_average().c_str());
  std::fflush(stdout);
  std::vector<std::unique_ptr<LowpRow>> rows;
  for (const Config& c : configs) {
    rows.push_back(std::make_unique<LowpRow>());
    rows.back()->init(c, make_weights(c), dump_dir);
  }
  for (int round = 0; round < rounds; ++round)
    for (auto& r : rows) r->sample(budget_ms, 5);
  if (std::filesystem::path(csv_path).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(csv_path).parent_path());
  Csv csv;
  if (!csv.open(csv_path, {"cell",
                           "hidden",
                           "batch",
                           "seq",
                           "threads",
                           "samples",
                           "graphi_fp32_ms",
                           "graphi_bf16_ms",
                           "onednn_fp32_ms",
                           "onednn_bf16_ms",
                           "onednn_bf16_over_graphi_bf16",
                           "onednn_fp32_over_graphi_bf16",
                           "graphi_bf16_max_abs_err",
                           "graphi_bf16_mean_abs_err",
                           "onednn_bf16_max_abs_err",
                           "onednn_bf16_mean_abs_err",
                           "graphi_int8_ms",
                           "onednn_int8_ms",
                           "graphi_int8_max_abs_err",
                           "graphi_int8_mean_abs_err",
                           "onednn_int8_max_abs_err",
                           "onednn_int8_mean_abs_err"}))
    fail("cannot write " + csv_path);
  Table t({"config", "graphi fp32", "graphi bf16", "graphi int8", "oneDNN fp32", "oneDNN bf16",
           "oneDNN int8", "oneDNN bf16/graphi bf16", "oneDNN int8/graphi int8",
           "|err| max/mean: graphi bf16", "oneDNN bf16", "graphi int8", "oneDNN int8"});
  auto e = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return std::string(b);
  };
  for (auto& rp : rows) {
    LowpRow& r = *rp;
    double m[LowpRow::kN];
    for (int k = 0; k < LowpRow::kN; ++k) m[k] = r.has[k] ? median(r.ms[k]) : NAN;
    auto err = [&](int k) {
      if (!r.has[k]) return std::string("-");
      char b[48];
      std::snprintf(b, sizeof b, "%.1e / %.1e", r.max_err[k], r.mean_err[k]);
      return std::string(b);
    };
    auto ms_or_dash = [&](int k) { return r.has[k] ? fmt(m[k], 3) : std::string("-"); };
    t.add({r.c.name(), fmt(m[0], 3), fmt(m[1], 3), fmt(m[2], 3), fmt(m[3], 3), fmt(m[4], 3),
           ms_or_dash(LowpRow::kD8), fmt(m[4] / m[1], 2) + "x",
           r.has[LowpRow::kD8] ? fmt(m[5] / m[2], 2) + "x" : std::string("-"), err(1), err(4),
           err(2), err(5)});
    csv.row({r.c.cell(),
             std::to_string(r.c.hidden),
             std::to_string(r.c.batch),
             std::to_string(r.c.seq),
             std::to_string(r.c.threads),
             std::to_string(r.ms[0].size()),
             fmt(m[0], 4),
             fmt(m[1], 4),
             fmt(m[3], 4),
             fmt(m[4], 4),
             fmt(m[4] / m[1], 3),
             fmt(m[3] / m[1], 3),
             e(r.max_err[1]),
             e(r.mean_err[1]),
             e(r.max_err[4]),
             e(r.mean_err[4]),
             fmt(m[2], 4),
             r.has[5] ? fmt(m[5], 4) : "nan",
             e(r.max_err[2]),
             e(r.mean_err[2]),
             r.has[5] ? e(r.max_err[5]) : "nan",
             r.has[5] ? e(r.mean_err[5]) : "nan"});
  }
  t.print();
  std::printf(
      "\nmedians (ms) over %d interleaved rounds (implementations take turns sample by sample);"
      " |err| = |Y - graphi fp32 Y|\nload average at the end: %s\nCSV: %s\n",
      rounds, load_average().c_str(), csv_path.c_str());
  return 0;
}

std::vector<int64_t> parse_list(const std::string& opt, const std::string& v) {
  std::vector<int64_t> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) {
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || n < 1) usage_error(opt + ": '" + s + "' is not a positive number");
    out.push_back(n);
  }
  return out;
}

std::string json_num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string json_list(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + json_num(v[i]);
  return s + "]";
}

std::string roofline_json(const Roofline& m) {
  return "{\"kind\":\"roofline\",\"threads\":" + std::to_string(m.threads) + ",\"isa\":\"" + m.isa +
         "\",\"fma_gflops\":" + json_num(m.fma_gflops) + ",\"l2_gbs\":" + json_num(m.l2_gbs) +
         ",\"l3_gbs\":" + json_num(m.l3_gbs) + ",\"dram_gbs\":" + json_num(m.dram_gbs) +
         ",\"xcore_ns\":" + json_num(m.xcore_ns) +
         ",\"l2_bytes_per_core\":" + std::to_string(m.l2_bytes_per_core) +
         ",\"l3_bytes\":" + std::to_string(m.l3_bytes) + "}";
}

// --serve: one process per thread count, driven by benchmarks/rnn/peers/run_all.py. Commands,
// one per line; each answer is one JSON line on stdout:
//   roofline                          -> measured peak and bandwidths for this thread count
//   prepare CELL H B S DIR            -> builds the row (once) and writes DIR/{W,R,B,X}.npy (ONNX
//                                        layout) and DIR/Y_graphi_t<T>.npy; answers the flops,
//                                        weight bytes, cache level and oneDNN's max abs diff
//   run CELL H B S BUDGET_MS MIN      -> interleaved samples (ms) of graphi, graphi with the WCS
//                                        shuffle and oneDNN
//   quit
// CELL is lstm or gru (linear-before-reset). Errors end the process with a message on stderr.
int serve(int threads) {
  std::map<std::tuple<bool, int64_t, int64_t, int64_t>, std::unique_ptr<Row>> rows;
  Roofline last = measure_roofline(threads);
  auto parse_config = [&](std::istringstream& in) {
    std::string cell;
    Config c;
    in >> cell >> c.hidden >> c.batch >> c.seq;
    if (!in || (cell != "lstm" && cell != "gru") || c.hidden < 1 || c.batch < 1 || c.seq < 1)
      fail("serve: expected CELL H B S with CELL lstm or gru");
    c.lstm = cell == "lstm";
    c.threads = threads;
    return c;
  };
  auto get_row = [&](const Config& c, const Weights* wt) -> Row& {
    auto& slot = rows[{c.lstm, c.hidden, c.batch, c.seq}];
    if (!slot) {
      slot = std::make_unique<Row>();
      if (wt)
        slot->init(c, *wt);
      else
        slot->init(c, make_weights(c));
    }
    return *slot;
  };
  std::printf("{\"kind\":\"ready\",\"threads\":%d,\"onednn\":\"%d.%d.%d\"}\n", threads,
              dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);
  std::fflush(stdout);
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream in(line);
    std::string cmd;
    if (!(in >> cmd)) continue;
    if (cmd == "quit") break;
    if (cmd == "roofline") {
      last = measure_roofline(threads);
      std::printf("%s\n", roofline_json(last).c_str());
    } else if (cmd == "prepare") {
      const Config c = parse_config(in);
      std::string dir;
      in >> dir;
      if (dir.empty()) fail("serve: prepare needs a directory");
      const Weights wt = make_weights(c);
      Row& r = get_row(c, &wt);
      const int64_t G = c.gates(), H = c.hidden, I = c.hidden;
      const std::filesystem::path d(dir);
      std::filesystem::create_directories(d);
      write_npy(d / "W.npy", {1, G * H, I}, wt.w.data(), wt.w.size());
      write_npy(d / "R.npy", {1, G * H, H}, wt.r.data(), wt.r.size());
      write_npy(d / "B.npy", {1, 2 * G * H}, wt.b.data(), wt.b.size());
      write_npy(d / "X.npy", {c.seq, c.batch, I}, wt.x.data(), wt.x.size());
      write_npy(d / ("Y_graphi_t" + std::to_string(threads) + ".npy"), {c.seq, c.batch, H},
                r.y_graphi.data(), r.y_graphi.size());
      std::printf(
          "{\"kind\":\"prepare\",\"flops\":%.17g,\"l2_read_bytes\":%.17g,\"l3_read_bytes\":%.17g,"
          "\"r_level\":\"%s\","
          "\"onednn_max_abs_diff\":%s,\"graphi_wcs_shuffle_max_abs_diff\":%s}\n",
          c.flops(), c.l2_read_bytes(last), c.l3_read_bytes(last), c.r_in_l2(last) ? "L2" : "L2+L3",
          json_num(r.diff_dnnl).c_str(), json_num(r.diff_shuffled).c_str());
    } else if (cmd == "run") {
      const Config c = parse_config(in);
      double budget = 0;
      int min_samples = 0;
      in >> budget >> min_samples;
      if (!in || budget < 0 || min_samples < 1) fail("serve: run needs BUDGET_MS MIN_SAMPLES");
      auto s = get_row(c, nullptr).sample(budget, min_samples);
      std::printf("{\"kind\":\"run\",\"graphi\":%s,\"graphi_wcs_shuffle\":%s,\"onednn\":%s}\n",
                  json_list(s[0]).c_str(), json_list(s[1]).c_str(), json_list(s[2]).c_str());
    } else {
      fail("serve: unknown command '" + cmd + "'");
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool full = false, do_lstm = true, do_gru = true, serve_mode = false, bf16 = false;
  int rounds = 2;
  std::vector<int64_t> threads{1, 2}, only_hidden, only_batch, only_seq;
  double budget_ms = 250;
  std::string csv_path = "build/bench/rnn.csv", dump_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--full")
      full = true;
    else if (a == "--serve")
      serve_mode = true;
    else if (a == "--bf16")
      bf16 = true;
    else if (a == "--rounds")
      rounds = int(parse_list(a, value())[0]);
    else if (a == "--threads")
      threads = parse_list(a, value());
    else if (a == "--hidden")
      only_hidden = parse_list(a, value());
    else if (a == "--batch")
      only_batch = parse_list(a, value());
    else if (a == "--seq")
      only_seq = parse_list(a, value());
    else if (a == "--budget-ms")
      budget_ms = double(parse_list(a, value())[0]);
    else if (a == "--csv")
      csv_path = value();
    else if (a == "--dump")
      dump_dir = value();
    else if (a == "--cells") {
      const std::string v = value();
      do_lstm = v.find("lstm") != std::string::npos;
      do_gru = v.find("gru") != std::string::npos;
      if (!do_lstm && !do_gru) usage_error("--cells: expected lstm, gru or lstm,gru");
    } else
      usage_error("unknown option '" + a + "'");
  }
  if (serve_mode) {
    if (threads.size() != 1) usage_error("--serve needs exactly one --threads value");
    return serve(int(threads[0]));
  }

  auto keep = [](const std::vector<int64_t>& only, int64_t v) {
    return only.empty() || std::find(only.begin(), only.end(), v) != only.end();
  };
  std::vector<Config> configs;
  auto add = [&](bool lstm, int64_t h, int64_t b, int64_t s) {
    if (!keep(only_hidden, h) || !keep(only_batch, b) || !keep(only_seq, s)) return;
    for (int64_t t : threads) configs.push_back(Config{lstm, h, b, s, int(t)});
  };
  for (bool lstm : {true, false}) {
    if ((lstm && !do_lstm) || (!lstm && !do_gru)) continue;
    for (int64_t h : {64, 256, 1024})
      for (int64_t b : {1, 10, 20})
        if (full || h < 1024 || b == 1) add(lstm, h, b, 100);
    add(lstm, 256, 1, 1);
    add(lstm, 256, 1, 10);
  }
  if (configs.empty()) usage_error("no configuration left after --hidden/--batch/--seq");
  if (bf16) return run_bf16(configs, budget_ms, rounds, csv_path, dump_dir);

  std::printf("graphi_bench_rnn: %zu rows, oneDNN %d.%d.%d, load average %s\n", configs.size(),
              dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
              load_average().c_str());
  std::map<int, Roofline> roof;
  for (int64_t t : threads) {
    roof[int(t)] = measure_roofline(int(t));
    const Roofline& m = roof[int(t)];
    std::printf(
        "roofline, %d thread(s), %s: FMA %.0f GFLOP/s, L2 read %.0f GB/s, L3 read %.0f GB/s, "
        "memory read %.0f GB/s (L2 %lld KiB per core); cross-core round trip %.0f ns\n",
        m.threads, m.isa.c_str(), m.fma_gflops, m.l2_gbs, m.l3_gbs, m.dram_gbs,
        (long long)(m.l2_bytes_per_core >> 10), m.xcore_ns);
  }
  std::fflush(stdout);
  std::vector<std::unique_ptr<Row>> rows;
  for (const Config& c : configs) {
    rows.push_back(std::make_unique<Row>());
    rows.back()->init(c, make_weights(c));
  }
  for (int round = 0; round < 2; ++round)
    for (auto& r : rows) {
      auto s = r->sample(budget_ms, 5);
      r->round_ratio[round] = median(s[2]) / median(s[0]);
      for (int k = 0; k < 3; ++k)
        r->ms[k].insert(r->ms[k].end(), s[size_t(k)].begin(), s[size_t(k)].end());
    }
  // Measured again at the end; the better of the two is the machine's (other load only lowers it).
  for (int64_t t : threads) {
    const Roofline again = measure_roofline(int(t));
    Roofline& m = roof[int(t)];
    m.fma_gflops = std::max(m.fma_gflops, again.fma_gflops);
    m.l2_gbs = std::max(m.l2_gbs, again.l2_gbs);
    m.l3_gbs = std::max(m.l3_gbs, again.l3_gbs);
    m.dram_gbs = std::max(m.dram_gbs, again.dram_gbs);
  }

  if (std::filesystem::path(csv_path).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(csv_path).parent_path());
  Csv csv;
  if (!csv.open(csv_path,
                {"cell", "hidden", "input", "batch", "seq", "threads", "samples", "graphi_ms",
                 "graphi_wcs_shuffle_ms", "onednn_ms", "ratio_onednn_over_graphi", "ratio_round1",
                 "ratio_round2", "graphi_gflops", "onednn_gflops", "bound_ms",
                 "graphi_pct_roofline", "max_abs_diff_onednn", "max_abs_diff_wcs_shuffle"}))
    fail("cannot write " + csv_path);
  Table t({"config", "graphi ms", "WCS-shuffled ms", "oneDNN ms", "oneDNN/graphi", "(round 1, 2)",
           "graphi GFLOP/s", "oneDNN GFLOP/s", "% roofline", "max |diff|"});
  for (auto& rp : rows) {
    Row& r = *rp;
    const double g = median(r.ms[0]), sh = median(r.ms[1]), d = median(r.ms[2]);
    const double bound = r.c.bound_ms(roof[r.c.threads]);
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.1e", std::max(r.diff_dnnl, r.diff_shuffled));
    t.add({r.c.name(), fmt(g, 3), fmt(sh, 3), fmt(d, 3), fmt(d / g, 2) + "x",
           fmt(r.round_ratio[0], 2) + ", " + fmt(r.round_ratio[1], 2),
           fmt(r.c.flops() / g * 1e-6, 1), fmt(r.c.flops() / d * 1e-6, 1),
           fmt(100 * bound / g, 0) + "%", diff});
    char dd[32], ds[32];
    std::snprintf(dd, sizeof dd, "%.3g", r.diff_dnnl);
    std::snprintf(ds, sizeof ds, "%.3g", r.diff_shuffled);
    csv.row({r.c.cell(), std::to_string(r.c.hidden), std::to_string(r.c.hidden),
             std::to_string(r.c.batch), std::to_string(r.c.seq), std::to_string(r.c.threads),
             std::to_string(r.ms[0].size()), fmt(g, 4), fmt(sh, 4), fmt(d, 4), fmt(d / g, 3),
             fmt(r.round_ratio[0], 3), fmt(r.round_ratio[1], 3), fmt(r.c.flops() / g * 1e-6, 2),
             fmt(r.c.flops() / d * 1e-6, 2), fmt(bound, 4), fmt(100 * bound / g, 1), dd, ds});
  }
  t.print();
  for (const auto& [t, m] : roof)
    std::printf(
        "\nroofline used, %d thread(s) (best of start and end): FMA %.0f GFLOP/s, L2 %.0f GB/s, "
        "L3 %.0f GB/s, memory %.0f GB/s",
        t, m.fma_gflops, m.l2_gbs, m.l3_gbs, m.dram_gbs);
  std::printf("\n");
  // float32 sums in a different order differ by ~1e-6; a wrong gate mapping differs by ~0.1.
  constexpr double kTolerance = 1e-4;
  int disagree = 0;
  for (const auto& r : rows)
    if (!(r->diff_dnnl <= kTolerance) || !(r->diff_shuffled <= kTolerance)) {
      std::fprintf(stderr,
                   "graphi_bench_rnn: %s: outputs disagree (max abs diff to graphi: oneDNN %.3g, "
                   "WCS-shuffled %.3g; tolerance %g)\n",
                   r->c.name().c_str(), r->diff_dnnl, r->diff_shuffled, kTolerance);
      ++disagree;
    }
  std::printf(
      "\nmedians over 2 interleaved rounds; GFLOP/s counts the GEMM flops 2*T*B*(I+H)*G*H; "
      "GRU = linear_before_reset (oneDNN lbr_gru)\n%% roofline = bound / graphi time, bound = "
      "max(flops / FMA peak, weight read time: R every step, W once, the share of R that fits the "
      "team's L2 from L2, the rest from L3)\n"
      "load average at the end: %s\nCSV: %s\n",
      load_average().c_str(), csv_path.c_str());
  return disagree ? 1 : 0;
}
