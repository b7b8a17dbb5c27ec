// Issue 18: which oneDNN 2.6 kernel runs the benchmark models' small convolutions fastest here?
// graphi keeps activations in nChw16c, where oneDNN's direct kernels are `jit_1x1` / `jit` (and
// Winograd, measured per shape by ops/conv_algorithm.h); oneDNN's brgemm kernels
// (`brgconv_1x1`, `brgconv`) take NHWC activations. Each row times one convolution (+ bias +
// ReLU) both ways, interleaved, on zero-free buffers, with the weights either hot (the second of
// two runs in a row, as a per-shape measurement sees them) or cold (right after reading a 64 MiB
// buffer, as a batch-1 network with more weights than the L3 runs them). Blocked channel counts
// are padded to whole blocks of 16 with zeros, as graphi pads them.
// 3x3 stride-1 rows add oneDNN's Winograd kernel on nChw16c (graphi's third candidate, picked per
// shape with hot weights by ops/conv_algorithm.h). Standalone: links oneDNN only.
// scripts/bench_cnn.sh does not run it; results in benchmarks/README.md.
//
//   graphi_bench_conv_impls                 # 2 threads, hot and cold, the built-in shapes
//   graphi_bench_conv_impls --threads 1 --runs 500
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct Shape {
  const char* where;
  int ic, oc, hw, k, stride;
};

// 1x1 and 3x3 convolutions of the benchmark's batch-1 rows below 1.3x (benchmarks/README.md):
// MobileNetV2 (its 24-channel layers pay 16-channel padding in nChw16c), GoogleNet's 8x8 and
// 4x4 layers, EfficientNet-like's squeeze-excitation (weights streamed from memory at batch 1).
const Shape kShapes[] = {
    {"mobilenet_v2 features.3 pw", 32, 32, 112, 1, 1},
    {"mobilenet_v2 features.4 pw", 16, 96, 112, 1, 1},
    {"mobilenet_v2 features.4 pl", 96, 24, 56, 1, 1},
    {"mobilenet_v2 features.5 pw", 24, 144, 56, 1, 1},
    {"mobilenet_v2 features.5 pl", 144, 24, 56, 1, 1},
    {"mobilenet_v2 features.8 pw", 32, 192, 28, 1, 1},
    {"mobilenet_v2 features.11 pw", 64, 384, 14, 1, 1},
    {"mobilenet_v2 features.11 pl", 384, 64, 14, 1, 1},
    {"mobilenet_v2 features.14 pl", 576, 96, 14, 1, 1},
    {"mobilenet_v2 features.19 pl", 960, 320, 7, 1, 1},
    {"mobilenet_v2 features.20", 320, 1280, 7, 1, 1},
    {"googlenet 4b b1", 512, 160, 8, 1, 1},
    {"googlenet 5b b1", 832, 384, 4, 1, 1},
    {"googlenet 4b b2b", 112, 224, 8, 3, 1},
    {"googlenet 5b b2b", 192, 384, 4, 3, 1},
    {"googlenet c1 (stem, NCHW input)", 3, 64, 128, 7, 2},
    // EfficientNet-like's squeeze-excitation 1x1s on pooled 1x1 features and its classifier as
    // a 1x1: matrix-vector products whose weights come from memory in the graph (session 37).
    {"efficientnet_like features.19 se.1", 960, 240, 1, 1, 1},
    {"efficientnet_like features.19 se.3", 240, 960, 1, 1, 1},
    {"efficientnet_like fc (as a 1x1)", 1280, 1000, 1, 1, 1},
};

struct Conv {
  dnnl::convolution_forward prim;
  std::unordered_map<int, memory> args;
  std::string impl;
};

// nhwc: the brgemm kernels' layout; winograd: oneDNN's Winograd kernel on nChw16c.
Conv make_conv(const dnnl::engine& eng, const Shape& s, bool nhwc, bool winograd = false) {
  const int pad = s.k / 2, oh = (s.hw + 2 * pad - s.k) / s.stride + 1;
  // nChw16c: channel counts padded to whole blocks with zeros, as graphi's blocked_layout pass
  // does (oneDNN has only its reference code for 24 channels in 16-channel blocks).
  auto blocks = [&](int c) { return nhwc || c < 16 ? c : (c + 15) / 16 * 16; };
  const int ic = blocks(s.ic), oc = blocks(s.oc);
  const memory::dims src{1, ic, s.hw, s.hw}, wei{oc, ic, s.k, s.k}, bias{oc}, dst{1, oc, oh, oh};
  // The stem reads the caller's NCHW image in graphi; the others are nChw16c chains.
  const tag src_tag = nhwc ? tag::nhwc : (ic % 16 ? tag::nchw : tag::nChw16c);
  const tag dst_tag = nhwc ? tag::nhwc : tag::nChw16c;
  const memory::desc sd(src, memory::data_type::f32, src_tag),
      wd(wei, memory::data_type::f32, tag::any), bd(bias, memory::data_type::f32, tag::x),
      dd(dst, memory::data_type::f32, dst_tag);
  const dnnl::convolution_forward::desc cd(
      dnnl::prop_kind::forward_inference,
      winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct, sd,
      wd, bd, dd, {s.stride, s.stride}, {pad, pad}, {pad, pad});
  dnnl::post_ops po;
  po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  const dnnl::convolution_forward::primitive_desc pd(cd, attr, eng);
  Conv c{dnnl::convolution_forward(pd), {}, pd.impl_info_str()};
  auto filled = [&](const memory::desc& d, float v) {
    memory m(d, eng);
    float* p = static_cast<float*>(m.get_data_handle());
    std::fill(p, p + d.get_size() / sizeof(float), v);
    return m;
  };
  c.args = {{DNNL_ARG_SRC, filled(pd.src_desc(), 0.5f)},
            {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), 0.01f)},
            {DNNL_ARG_BIAS, filled(pd.bias_desc(), 0.f)},
            {DNNL_ARG_DST, filled(pd.dst_desc(), 0.f)}};
  return c;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, runs = 300;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--threads" || a == "--runs") && i + 1 < argc) {
      (a == "--threads" ? threads : runs) = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: graphi_bench_conv_impls [--threads N] [--runs R]\n");
      return 2;
    }
  }
  omp_set_num_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  // Read between cold runs: larger than any L3 this has run on (32 MiB).
  std::vector<float> evict(size_t(64) << 18, 1.f);
  volatile float sink = 0;
  auto evict_caches = [&] {
    float acc = 0;
#pragma omp parallel for reduction(+ : acc)
    for (size_t i = 0; i < evict.size(); i += 16) acc += evict[i];
    sink = sink + acc;
  };
  std::printf("%d thread(s), medians of %d runs, us\n", threads, runs);
  std::printf("%-32s %4s %4s %4s %2s  %-42s %-30s %-30s\n", "layer", "ic", "oc", "hw", "k",
              "kernels: blocked / nhwc [/ winograd]", "hot: blocked nhwc [wino]",
              "cold: blocked nhwc [wino]");
  for (const Shape& s : kShapes) {
    std::vector<Conv> conv;
    conv.push_back(make_conv(eng, s, false));
    conv.push_back(make_conv(eng, s, true));
    if (s.k == 3 && s.stride == 1) conv.push_back(make_conv(eng, s, false, true));
    const size_t n = conv.size();
    std::vector<std::vector<double>> hot(n), cold(n);
    auto timed = [&](Conv& c) {
      const double t0 = now_us();
      c.prim.execute(strm, c.args);
      strm.wait();
      return now_us() - t0;
    };
    for (int r = 0; r < runs + 2; ++r) {
      for (size_t l = 0; l < n; ++l) {  // hot: the second of two runs in a row
        timed(conv[l]);
        const double us = timed(conv[l]);
        if (r >= 2) hot[l].push_back(us);
      }
      for (size_t l = 0; l < n; ++l) {  // cold: right after the eviction
        evict_caches();
        const double us = timed(conv[l]);
        if (r >= 2) cold[l].push_back(us);
      }
    }
    auto medians = [](std::vector<std::vector<double>>& v) {
      std::string out;
      for (auto& x : v) {
        std::sort(x.begin(), x.end());
        char buf[24];
        std::snprintf(buf, sizeof(buf), "%8.1f", x[x.size() / 2]);
        out += buf;
      }
      return out;
    };
    std::string impls = conv[0].impl + " / " + conv[1].impl;
    if (n > 2) impls += " / " + conv[2].impl;
    std::printf("%-32s %4d %4d %4d %2d  %-42s %-30s %-30s\n", s.where, s.ic, s.oc, s.hw, s.k,
                impls.c_str(), medians(hot).c_str(), medians(cold).c_str());
    std::fflush(stdout);
  }
  return 0;
}
