// oneDNN's Winograd convolutions (ConvAlgorithm::kWinograd) and the measured choice between
// them and direct (ops/conv_algorithm.h): forward (staged plain NCHW, blocked nChw16c with packed
// constant weights), deconvolution (the Conv gradient's dX) and backward-weights (dW), each
// against the sums written out in double. On a CPU where oneDNN has no Winograd kernel (no
// AVX-512) the Winograd cases are skipped with a warning; the measured choice is checked anyway.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "ops/conv_algorithm.h"
#include "ops/onednn.h"
#include "tests/support/test_util.h"

using namespace graphi;
using ops::onednn::ConvAlgorithm;
using ops::onednn::ConvSpec;

namespace {

// A 3x3, stride-1, pad-1 convolution X [n, c, h, w] -> Y [n, oc, h, w].
ConvSpec spec3x3(int64_t n, int64_t c, int64_t hw, int64_t oc) {
  ConvSpec s;
  s.n = n;
  s.c = c;
  s.h = s.w = s.oh = s.ow = hw;
  s.oc = oc;
  s.kh = s.kw = 3;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  return s;
}

std::vector<float> random_values(int64_t count, uint64_t seed) {
  Tensor t = test::random_tensor(TensorDesc{DType::kF32, {count}}, seed);
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + count);
}

// X at (n, c, y, x) with zero padding.
double at(const std::vector<float>& x, const ConvSpec& s, int64_t n, int64_t c, int64_t y,
          int64_t xx) {
  if (y < 0 || y >= s.h || xx < 0 || xx >= s.w) return 0.0;
  return x[((n * s.c + c) * s.h + y) * s.w + xx];
}

std::vector<double> forward_ref(const ConvSpec& s, const std::vector<float>& x,
                                const std::vector<float>& w, const std::vector<float>& b) {
  std::vector<double> y(s.n * s.oc * s.oh * s.ow);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.oc; ++o)
      for (int64_t oy = 0; oy < s.oh; ++oy)
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          double acc = b.empty() ? 0.0 : b[o];
          for (int64_t c = 0; c < s.c; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx)
                acc +=
                    at(x, s, n, c, oy - 1 + ky, ox - 1 + kx) * w[((o * s.c + c) * 3 + ky) * 3 + kx];
          y[((n * s.oc + o) * s.oh + oy) * s.ow + ox] = acc;
        }
  return y;
}

// dX of the convolution s from dY [n, oc, oh, ow] and W [oc, c, 3, 3].
std::vector<double> data_grad_ref(const ConvSpec& s, const std::vector<float>& dy,
                                  const std::vector<float>& w) {
  std::vector<double> dx(s.n * s.c * s.h * s.w, 0.0);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.oc; ++o)
      for (int64_t oy = 0; oy < s.oh; ++oy)
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          const double g = dy[((n * s.oc + o) * s.oh + oy) * s.ow + ox];
          for (int64_t c = 0; c < s.c; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t y = oy - 1 + ky, x = ox - 1 + kx;
                if (y < 0 || y >= s.h || x < 0 || x >= s.w) continue;
                dx[((n * s.c + c) * s.h + y) * s.w + x] += g * w[((o * s.c + c) * 3 + ky) * 3 + kx];
              }
        }
  return dx;
}

// dW of the convolution s from X and dY.
std::vector<double> weight_grad_ref(const ConvSpec& s, const std::vector<float>& x,
                                    const std::vector<float>& dy) {
  std::vector<double> dw(s.oc * s.c * 9, 0.0);
  for (int64_t o = 0; o < s.oc; ++o)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t ky = 0; ky < 3; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx) {
          double acc = 0;
          for (int64_t n = 0; n < s.n; ++n)
            for (int64_t oy = 0; oy < s.oh; ++oy)
              for (int64_t ox = 0; ox < s.ow; ++ox)
                acc += at(x, s, n, c, oy - 1 + ky, ox - 1 + kx) *
                       dy[((n * s.oc + o) * s.oh + oy) * s.ow + ox];
          dw[((o * s.c + c) * 3 + ky) * 3 + kx] = acc;
        }
  return dw;
}

// max |got - want| / max |want|: Winograd's transforms round differently from a direct sum, by
// ~1e-6 of the output's scale.
double scaled_error(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / std::max(scale, 1e-30);
}

// [n][c][hw] -> nChw16c [n][c/16][hw][16] and back.
std::vector<float> to_blocked(const std::vector<float>& p, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> q(p.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t e = 0; e < hw; ++e)
        q[((i * (c / 16) + ch / 16) * hw + e) * 16 + ch % 16] = p[(i * c + ch) * hw + e];
  return q;
}
std::vector<float> from_blocked(const std::vector<float>& q, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> p(q.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t e = 0; e < hw; ++e)
        p[(i * c + ch) * hw + e] = q[((i * (c / 16) + ch / 16) * hw + e) * 16 + ch % 16];
  return p;
}

// Runs `prim` twice (the second run reuses its staged copies and argument handles).
std::vector<float> run(const ops::onednn::Primitive& prim, const std::vector<float>& src,
                       const std::vector<float>& wei, const std::vector<float>& bias,
                       int64_t dst_count) {
  std::vector<float> dst(dst_count, -7.0f);
  // 64-byte aligned, as the engine's scratch is: oneDNN's Winograd kernels use aligned vector
  // moves on it.
  const size_t bytes = prim.scratch_bytes() + 64;
  Tensor scratch(TensorDesc{DType::kF32, {static_cast<int64_t>(bytes / 4)}});
  for (int rep = 0; rep < 2; ++rep)
    REQUIRE(prim.execute(src.data(), wei.data(), bias.empty() ? nullptr : bias.data(), dst.data(),
                         scratch.data(), prim.team_size(), bytes));
  return dst;
}

// GRAPHI_CACHE_DIR pointed at a fresh scratch directory (no verdict file, no verdicts in memory)
// for the scope, then put back.
class ScopedCacheDir {
 public:
  explicit ScopedCacheDir(const std::string& name)
      : dir_(test::scratch_dir(name)), env_("GRAPHI_CACHE_DIR", dir_.string()) {
    std::filesystem::remove(verdicts());
    ops::forget_conv_algorithm_verdicts();
  }
  std::string verdicts() const { return (dir_ / "conv_algorithms.json").string(); }
  // The verdict file's contents, and a replacement of them (then no verdict is in memory: the
  // next make_fastest_conv reads the file, as a later process would).
  nlohmann::json read() const {
    nlohmann::json j;
    std::ifstream in(verdicts());
    in >> j;
    return j;
  }
  void write(const std::string& text) const {
    {
      std::ofstream out(verdicts(), std::ios::trunc);
      out << text;
    }
    ops::forget_conv_algorithm_verdicts();
  }

 private:
  std::filesystem::path dir_;
  test::ScopedEnv env_;
};

bool is_winograd(const ops::onednn::Primitive& p) {
  return p.impl_name().find("wino") != std::string::npos;
}

}  // namespace

TEST_CASE("Winograd convolution forward matches the definition, staged and blocked",
          "[ops][conv][winograd]") {
  for (int team : {1, 2}) {
    for (const bool blocked : {false, true}) {
      ConvSpec s = spec3x3(2, 32, 13, 48);  // 13x13: partial Winograd tiles at the edges
      s.has_bias = true;
      s.algorithm = ConvAlgorithm::kWinograd;
      const std::vector<float> x = random_values(s.n * s.c * s.h * s.w, 11),
                               w = random_values(s.oc * s.c * 9, 12), b = random_values(s.oc, 13);
      if (blocked) {
        s.src_block = s.dst_block = 16;
        s.const_weights = w.data();
      } else {
        s.staged = true;
      }
      INFO("team " << team << (blocked ? " blocked, packed weights" : " staged"));
      auto prim = ops::onednn::make_conv(s, team);
      if (!prim.is_ok()) {
        WARN("skipped, no Winograd convolution here: " << prim.status().message());
        return;
      }
      CHECK(is_winograd(**prim));
      const std::vector<float> src = blocked ? to_blocked(x, s.n, s.c, s.h * s.w) : x;
      std::vector<float> y = run(**prim, src, w, b, s.n * s.oc * s.oh * s.ow);
      if (blocked) y = from_blocked(y, s.n, s.oc, s.oh * s.ow);
      CHECK(scaled_error(y, forward_ref(s, x, w, b)) <= 1e-5);
    }
  }
}

TEST_CASE("Winograd deconvolution (the convolution's dX) matches the definition",
          "[ops][conv][winograd]") {
  ConvSpec s = spec3x3(2, 32, 12, 16);
  // make_deconv is described by the convolution it reverses: src = dY, dst = dX.
  s.staged = true;
  s.algorithm = ConvAlgorithm::kWinograd;
  const std::vector<float> dy = random_values(s.n * s.oc * s.oh * s.ow, 21),
                           w = random_values(s.oc * s.c * 9, 22);
  auto prim = ops::onednn::make_deconv(s, 2);
  if (!prim.is_ok()) {
    WARN("skipped, no Winograd deconvolution here: " << prim.status().message());
    return;
  }
  CHECK(is_winograd(**prim));
  const std::vector<float> dx = run(**prim, dy, w, {}, s.n * s.c * s.h * s.w);
  CHECK(scaled_error(dx, data_grad_ref(s, dy, w)) <= 1e-5);
}

TEST_CASE("Winograd convolution backward-weights matches the definition", "[ops][conv][winograd]") {
  for (int team : {1, 2}) {
    INFO("team " << team);
    ConvSpec s = spec3x3(2, 16, 12, 32);
    s.staged = true;
    s.algorithm = ConvAlgorithm::kWinograd;
    const std::vector<float> x = random_values(s.n * s.c * s.h * s.w, 31),
                             dy = random_values(s.n * s.oc * s.oh * s.ow, 32);
    auto prim = ops::onednn::make_conv_bwd_weights(s, team);
    if (!prim.is_ok()) {
      WARN("skipped, no Winograd backward-weights here: " << prim.status().message());
      return;
    }
    CHECK(is_winograd(**prim));
    // Roles: src = X, "weights" = dY, dst = dW.
    const std::vector<float> dw = run(**prim, x, dy, {}, s.oc * s.c * 9);
    CHECK(scaled_error(dw, weight_grad_ref(s, x, dy)) <= 1e-5);
  }
}

TEST_CASE("The measured convolution algorithm is correct and remembered per shape",
          "[ops][conv][winograd]") {
  // Whatever the measurement picks (direct or Winograd), the output is the convolution, and a
  // second primitive of the same shape gets the same implementation without measuring again.
  ConvSpec s = spec3x3(1, 32, 14, 32);
  s.staged = true;
  const std::vector<float> x = random_values(s.n * s.c * s.h * s.w, 41),
                           w = random_values(s.oc * s.c * 9, 42);
  auto first = ops::make_fastest_conv(s, 2, false, ops::onednn::make_conv, "test conv");
  REQUIRE(first.is_ok());
  auto second = ops::make_fastest_conv(s, 2, false, ops::onednn::make_conv, "test conv");
  REQUIRE(second.is_ok());
  CHECK((*first)->impl_name() == (*second)->impl_name());
  for (auto* p : {&first, &second}) {
    const std::vector<float> y = run(***p, x, w, {}, s.n * s.oc * s.oh * s.ow);
    CHECK(scaled_error(y, forward_ref(s, x, w, {})) <= 1e-5);
  }
  // A shape without a Winograd kernel (stride 2) is direct without measuring.
  ConvSpec strided = s;
  strided.stride_h = strided.stride_w = 2;
  strided.oh = strided.ow = 7;
  auto direct = ops::make_fastest_conv(strided, 2, false, ops::onednn::make_conv, "test conv");
  REQUIRE(direct.is_ok());
  CHECK_FALSE(is_winograd(**direct));
}

TEST_CASE("Convolution algorithm verdicts are kept on disk and reused by a later process",
          "[ops][conv][winograd]") {
  const ScopedCacheDir cache("conv_algorithm_cache");
  const std::string path = cache.verdicts();

  ConvSpec s = spec3x3(1, 16, 12, 16);
  s.staged = true;
  const std::vector<float> x = random_values(s.n * s.c * s.h * s.w, 43),
                           w = random_values(s.oc * s.c * 9, 44);
  auto measured = ops::make_fastest_conv(s, 1, false, ops::onednn::make_conv, "disk test conv");
  REQUIRE(measured.is_ok());
  const bool winograd_here = ops::onednn::make_conv(
                                 [&] {
                                   ConvSpec t = s;
                                   t.algorithm = ConvAlgorithm::kWinograd;
                                   return t;
                                 }(),
                                 1, false)
                                 .is_ok();
  if (!winograd_here) {
    WARN("no Winograd kernel on this CPU: nothing measured, nothing cached");
  } else {
    // The verdict is in the file, under the shape, the team size and this machine.
    REQUIRE(std::filesystem::exists(path));
    nlohmann::json j = cache.read();
    REQUIRE(j["entries"].size() == 1);
    const std::string key = j["entries"].begin().key();
    CHECK_THAT(key, Catch::StartsWith("disk test conv n1 c16 12x12 oc16 12x12 k3x3") &&
                        Catch::Contains(" t1|"));
    const std::string verdict = j["entries"].begin().value()["algorithm"];
    CHECK((verdict == "winograd") == is_winograd(**measured));

    // A later process (here: this one with its memory of verdicts dropped) takes the file's
    // verdict without measuring: the opposite one, written by hand, is what it gets.
    const std::string flipped = verdict == "winograd" ? "direct" : "winograd";
    j["entries"][key]["algorithm"] = flipped;
    j["entries"][key]["steady"] = true;  // (a loaded CI host may have measured it unsteady)
    cache.write(j.dump());
    auto cached = ops::make_fastest_conv(s, 1, false, ops::onednn::make_conv, "disk test conv");
    REQUIRE(cached.is_ok());
    CHECK(is_winograd(**cached) == (flipped == "winograd"));
    const std::vector<float> y = run(**cached, x, w, {}, s.n * s.oc * s.oh * s.ow);
    CHECK(scaled_error(y, forward_ref(s, x, w, {})) <= 1e-5);

    // An entry measured unsteady is not trusted: measured again, and the entry rewritten (the
    // bogus times below would otherwise stay).
    j["entries"][key]["steady"] = false;
    j["entries"][key]["direct_ms"] = -1.0;
    cache.write(j.dump());
    auto remeasured = ops::make_fastest_conv(s, 1, false, ops::onednn::make_conv, "disk test conv");
    REQUIRE(remeasured.is_ok());
    CHECK(cache.read()["entries"][key]["direct_ms"].get<double>() > 0.0);

    // A malformed entry or a corrupt file: ignored (a warning), measured again, file rewritten.
    cache.write("{ not json");
    auto again = ops::make_fastest_conv(s, 1, false, ops::onednn::make_conv, "disk test conv");
    REQUIRE(again.is_ok());
    CHECK(cache.read()["entries"].contains(key));
  }
}

TEST_CASE("With an added tensor Z, Winograd comes without the sum post-op, direct with it",
          "[ops][conv][winograd]") {
  // oneDNN 2.6's Winograd kernels take no binary post-op: make_fastest_conv measures the bare
  // convolution and, when Winograd wins, returns it without the sum and the activation (the
  // kernel then adds Z and applies the ReLU itself); otherwise direct with both post-ops. Both
  // branches (the measured verdict, then the opposite one from the cache file) give
  // ReLU(conv + b + Z).
  const ScopedCacheDir cache("conv_sum_algorithm_cache");
  const std::string path = cache.verdicts();

  ConvSpec s = spec3x3(1, 16, 12, 32);
  s.has_bias = true;
  s.src_block = s.dst_block = 16;
  const std::vector<float> x = random_values(s.n * s.c * s.h * s.w, 51),
                           w = random_values(s.oc * s.c * 9, 52), b = random_values(s.oc, 53),
                           z = random_values(s.n * s.oc * s.oh * s.ow, 54);
  s.const_weights = w.data();
  s.sum_input = true;
  s.post.kind = ops::ConvActivation::kRelu;
  std::vector<double> want = forward_ref(s, x, w, b);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(want[i] + z[i], 0.0);
  const int64_t hw = s.oh * s.ow, count = s.n * s.oc * hw;
  const std::vector<float> xb = to_blocked(x, s.n, s.c, s.h * s.w),
                           zb = to_blocked(z, s.n, s.oc, hw);
  std::set<bool> branches;
  for (int round = 0; round < 2; ++round) {
    auto p = ops::make_fastest_conv(s, 1, false, ops::onednn::make_conv, "sum test conv");
    REQUIRE(p.is_ok());
    const bool wino = is_winograd(**p);
    INFO((wino ? "winograd" : "direct") << " " << (*p)->impl_name());
    branches.insert(wino);
    CHECK((*p)->sums_input() == !wino);
    std::vector<float> y(count, -7.0f);
    Tensor scratch(TensorDesc{DType::kF32, {static_cast<int64_t>((*p)->scratch_bytes() / 4 + 16)}});
    REQUIRE((*p)->execute(xb.data(), nullptr, b.data(), y.data(), scratch.data(), 1,
                          (*p)->scratch_bytes() + 64, (*p)->sums_input() ? zb.data() : nullptr));
    if (!(*p)->sums_input())
      for (int64_t i = 0; i < count; ++i) y[i] = std::max(y[i] + zb[i], 0.0f);  // the epilogue
    CHECK(scaled_error(from_blocked(y, s.n, s.oc, hw), want) <= 1e-5);
    if (!std::filesystem::exists(path)) break;  // no Winograd kernel here: nothing measured
    // The bare convolution's verdict, flipped in the file, for a process that has not measured.
    nlohmann::json j = cache.read();
    REQUIRE(j["entries"].size() == 1);
    auto& entry = j["entries"].begin().value();
    CHECK_THAT(j["entries"].begin().key(), Catch::Contains(" z0 "));  // the bare spec's key
    entry["algorithm"] = entry["algorithm"] == "winograd" ? "direct" : "winograd";
    entry["steady"] = true;
    cache.write(j.dump());
  }
  if (std::filesystem::exists(path))
    CHECK(branches.size() == 2);
  else
    WARN("no Winograd kernel on this CPU: only the direct branch was checked");
}
