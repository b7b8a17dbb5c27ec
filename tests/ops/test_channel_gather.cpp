// ChannelGather (ops/channel_gather.cpp): output channel c = channel[c] of input source[c],
// against a naive per-element loop, in NCHW and channel-blocked (B 16 and 8, padded channel
// counts whose input padding lanes hold NaN and must not be read, output padding lanes zero),
// 1 and 2 threads; and its refusals. ctest runs this file again with GRAPHI_SIMD=scalar and
// =avx2 (tests/CMakeLists.txt), so every kernel path is checked on an AVX-512 machine.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

struct Map {
  std::vector<int64_t> source, channel;
};

Tensor naive_gather(const std::vector<Tensor>& xs, const Map& m) {
  const Shape& s0 = xs[0].desc().shape;
  const int64_t n = s0[0], hw = s0[2] * s0[3], out_c = static_cast<int64_t>(m.source.size());
  Tensor y(TensorDesc{DType::kF32, {n, out_c, s0[2], s0[3]}});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < out_c; ++c) {
      const Tensor& x = xs[static_cast<size_t>(m.source[static_cast<size_t>(c)])];
      const int64_t cin = x.desc().shape[1], ch = m.channel[static_cast<size_t>(c)];
      for (int64_t p = 0; p < hw; ++p)
        y.data_as<float>()[(b * out_c + c) * hw + p] = x.data_as<float>()[(b * cin + ch) * hw + p];
    }
  return y;
}

// NCHW -> [N, ceil(C/B), H, W, B], padding lanes set to `pad`.
Tensor blocked(const Tensor& x, int64_t bl, float pad) {
  const Shape& s = x.desc().shape;
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3], cb = (c + bl - 1) / bl;
  Tensor y(TensorDesc{DType::kF32, {n, cb, s[2], s[3], bl}});
  float* out = y.data_as<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < cb * bl; ++k)
      for (int64_t p = 0; p < hw; ++p)
        out[((b * cb + k / bl) * hw + p) * bl + k % bl] =
            k < c ? x.data_as<float>()[(b * c + k) * hw + p] : pad;
  return y;
}

graph::Attributes attrs_of(const Map& m, int64_t block) {
  graph::Attributes a;
  a.set("source", m.source);
  a.set("channel", m.channel);
  if (block) a.set("block", block);
  return a;
}

}  // namespace

TEST_CASE("ChannelGather equals the naive gather, plain and blocked", "[ops][channel_gather]") {
  std::mt19937 gen(11);
  // Three inputs of 5, 16 and 21 channels; 3x7 and 5x9 images (tails of the 32-pixel tiles).
  for (const auto& [n, h, w] : {std::tuple<int64_t, int64_t, int64_t>{1, 3, 7}, {2, 5, 9}}) {
    std::vector<Tensor> xs;
    for (int64_t c : {5, 16, 21})
      xs.push_back(test::random_tensor(TensorDesc{DType::kF32, {n, c, h, w}}, 30 + c));
    // A random map of 37 channels, ShuffleNet's shuffle of a concat (21 + 21), a plain slice.
    std::vector<Map> maps(3);
    for (int i = 0; i < 37; ++i) {
      const int64_t s = std::uniform_int_distribution<int64_t>(0, 2)(gen);
      maps[0].source.push_back(s);
      maps[0].channel.push_back(
          std::uniform_int_distribution<int64_t>(0, xs[s].desc().shape[1] - 1)(gen));
    }
    for (int64_t i = 0; i < 21; ++i)
      for (int64_t g = 0; g < 2; ++g) {
        maps[1].source.push_back(g == 0 ? 2 : 1);
        maps[1].channel.push_back(g == 0 ? i : i % 16);
      }
    for (int64_t c = 3; c < 19; ++c) {
      maps[2].source.push_back(2);
      maps[2].channel.push_back(c);
    }
    for (size_t mi = 0; mi < maps.size(); ++mi) {
      const Tensor want = naive_gather(xs, maps[mi]);
      for (int threads : {1, 2}) {
        INFO("n " << n << " map " << mi << " threads " << threads);
        auto plain = test::run_single_op("ChannelGather", attrs_of(maps[mi], 0), xs, 1, threads);
        REQUIRE(plain.is_ok());
        CHECK(plain->outputs[0].desc().shape == want.desc().shape);
        CHECK(test::max_rel_error(plain->outputs[0], want) == 0.0);
        for (int64_t bl : {16, 8}) {
          INFO("block " << bl);
          std::vector<Tensor> bx;
          for (const Tensor& x : xs) bx.push_back(blocked(x, bl, std::nanf("")));
          auto r = test::run_single_op("ChannelGather", attrs_of(maps[mi], bl), bx, 1, threads);
          REQUIRE(r.is_ok());
          CHECK(r->kernel == "channel_gather_blocked");
          const Tensor bwant = blocked(want, bl, 0.0f);  // padding lanes zero, exactly
          REQUIRE(r->outputs[0].desc().shape == bwant.desc().shape);
          const float* got = r->outputs[0].data_as<float>();
          int64_t bad = 0;
          for (int64_t i = 0; i < bwant.numel(); ++i) bad += got[i] != bwant.data_as<float>()[i];
          CHECK(bad == 0);
        }
      }
    }
  }
}

TEST_CASE("ChannelGather refuses bad maps and mismatched inputs", "[ops][channel_gather]") {
  const Tensor a = test::random_tensor(TensorDesc{DType::kF32, {1, 4, 3, 3}}, 1);
  const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {1, 6, 3, 3}}, 2);
  const Tensor wide = test::random_tensor(TensorDesc{DType::kF32, {1, 4, 3, 5}}, 3);
  struct Case {
    Map map;
    std::vector<Tensor> in;
    int64_t block;
    const char* error;
  };
  const std::vector<Case> cases = {
      {{{0, 2}, {0, 1}}, {a, b}, 0, "'source'[1] = 2 names no input"},
      {{{1, 0}, {6, 0}}, {a, b}, 0, "'channel'[0] = 6 is out of range for input 1"},
      {{{0, 0}, {0}}, {a}, 0, "one entry per output channel"},
      {{{}, {}}, {a}, 0, "one entry per output channel"},
      {{{0, 1}, {0, 0}}, {a, wide}, 0, "differs from input 0"},
      {{{0}, {0}}, {a}, 16, "must be float32 [N, C/16, H, W, 16]"},
      {{{0}, {0}}, {blocked(a, 8, 0.0f)}, 4, "block"},
      {{{0}, {8}}, {blocked(a, 8, 0.0f)}, 8, "'channel'[0] = 8 is out of range"},
  };
  for (const Case& c : cases) {
    INFO(c.error);
    auto r = test::run_single_op("ChannelGather", attrs_of(c.map, c.block), c.in);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains(c.error));
  }
}
