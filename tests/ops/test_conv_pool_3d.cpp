// Conv3D, ConvTranspose3D, MaxPool3D, AveragePool3D: every kernel of each op's list (oneDNN, ref)
// against naive loops written here from the ONNX definition, on seeded random shapes (strides,
// asymmetric pads, dilations, groups, bias), teams of 1 and 2, constant and run-time weights; a
// layer wide enough for oneDNN's blocked kernels; one test per error message.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_gemm_conv.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::check_every_kernel;

namespace {

using I3 = std::array<int64_t, 3>;

struct Window3d {
  I3 kernel{1, 1, 1}, strides{1, 1, 1}, dilations{1, 1, 1};
  std::array<int64_t, 6> pads{};  // front, top, left, back, bottom, right
};

Tensor rnd(Shape s, uint64_t seed) {
  return test::random_tensor(TensorDesc{DType::kF32, std::move(s)}, seed);
}

int64_t out_dim(int64_t in, int a, const Window3d& w) {
  return (in + w.pads[a] + w.pads[a + 3] - (w.kernel[a] - 1) * w.dilations[a] - 1) / w.strides[a] +
         1;
}

// Calls f(output index, list of input offsets inside the volume) for each output position of
// one input volume `in` [D, H, W]: taps in the padding are left out.
template <typename F>
void for_each_window(const I3& in, const Window3d& w, F f) {
  const I3 out{out_dim(in[0], 0, w), out_dim(in[1], 1, w), out_dim(in[2], 2, w)};
  std::vector<std::pair<int64_t, int64_t>> taps;  // (input offset, kernel offset)
  for (int64_t z = 0; z < out[0]; ++z)
    for (int64_t y = 0; y < out[1]; ++y)
      for (int64_t x = 0; x < out[2]; ++x) {
        taps.clear();
        for (int64_t a = 0; a < w.kernel[0]; ++a)
          for (int64_t b = 0; b < w.kernel[1]; ++b)
            for (int64_t c = 0; c < w.kernel[2]; ++c) {
              const int64_t iz = z * w.strides[0] - w.pads[0] + a * w.dilations[0];
              const int64_t iy = y * w.strides[1] - w.pads[1] + b * w.dilations[1];
              const int64_t ix = x * w.strides[2] - w.pads[2] + c * w.dilations[2];
              if (iz < 0 || iy < 0 || ix < 0 || iz >= in[0] || iy >= in[1] || ix >= in[2]) continue;
              taps.emplace_back((iz * in[1] + iy) * in[2] + ix,
                                (a * w.kernel[1] + b) * w.kernel[2] + c);
            }
        f((z * out[1] + y) * out[2] + x, taps);
      }
}

Tensor conv3d_naive(const Tensor& x, const Tensor& wt, const Tensor* b, Window3d win,
                    int64_t group) {
  const Shape& xs = x.desc().shape;
  const Shape& ws = wt.desc().shape;
  win.kernel = {ws[2], ws[3], ws[4]};
  const I3 in{xs[2], xs[3], xs[4]};
  const I3 out{out_dim(in[0], 0, win), out_dim(in[1], 1, win), out_dim(in[2], 2, win)};
  const int64_t n = xs[0], c = xs[1], m = ws[0], cpg = c / group, mpg = m / group;
  const int64_t vin = in[0] * in[1] * in[2], vout = out[0] * out[1] * out[2];
  const int64_t kvol = ws[2] * ws[3] * ws[4];
  Tensor y(TensorDesc{DType::kF32, {n, m, out[0], out[1], out[2]}});
  const float* xp = x.data_as<float>();
  const float* wp = wt.data_as<float>();
  float* yp = y.data_as<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < m; ++o) {
      const int64_t g = o / mpg;
      for_each_window(in, win, [&](int64_t pos, const auto& taps) {
        double acc = b ? b->data_as<float>()[o] : 0.0;
        for (int64_t ci = 0; ci < cpg; ++ci)
          for (const auto& [xo, ko] : taps)
            acc += static_cast<double>(xp[(i * c + g * cpg + ci) * vin + xo]) *
                   wp[(o * cpg + ci) * kvol + ko];
        yp[(i * m + o) * vout + pos] = static_cast<float>(acc);
      });
    }
  return y;
}

// ConvTranspose from its definition: y[n, m, o] = B[m] + sum over the input channels c of m's
// group and the positions i, taps k with o = i * stride - pad_begin + k * dilation of
// x[n, c, i] * W[c, m % (M/group), k].
Tensor deconv3d_naive(const Tensor& x, const Tensor& wt, const Tensor* b, const Window3d& win,
                      const I3& out_pad, int64_t group) {
  const Shape& xs = x.desc().shape;
  const Shape& ws = wt.desc().shape;
  const int64_t n = xs[0], c = xs[1], mpg = ws[1], m = mpg * group, cpg = c / group;
  I3 out;
  for (int a = 0; a < 3; ++a)
    out[a] = win.strides[a] * (xs[a + 2] - 1) + out_pad[a] + (ws[a + 2] - 1) * win.dilations[a] +
             1 - win.pads[a] - win.pads[a + 3];
  std::vector<double> acc(static_cast<size_t>(n * m * out[0] * out[1] * out[2]), 0.0);
  const float* xp = x.data_as<float>();
  const float* wp = wt.data_as<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t mo = 0; mo < mpg; ++mo) {
        const int64_t mm = (ci / cpg) * mpg + mo;
        for (int64_t z = 0; z < xs[2]; ++z)
          for (int64_t y = 0; y < xs[3]; ++y)
            for (int64_t xx = 0; xx < xs[4]; ++xx)
              for (int64_t a = 0; a < ws[2]; ++a)
                for (int64_t bb = 0; bb < ws[3]; ++bb)
                  for (int64_t cc = 0; cc < ws[4]; ++cc) {
                    const int64_t oz = z * win.strides[0] - win.pads[0] + a * win.dilations[0];
                    const int64_t oy = y * win.strides[1] - win.pads[1] + bb * win.dilations[1];
                    const int64_t ox = xx * win.strides[2] - win.pads[2] + cc * win.dilations[2];
                    if (oz < 0 || oy < 0 || ox < 0 || oz >= out[0] || oy >= out[1] || ox >= out[2])
                      continue;
                    const double xv = xp[(((i * c + ci) * xs[2] + z) * xs[3] + y) * xs[4] + xx];
                    const double wv = wp[(((ci * mpg + mo) * ws[2] + a) * ws[3] + bb) * ws[4] + cc];
                    acc[static_cast<size_t>((((i * m + mm) * out[0] + oz) * out[1] + oy) * out[2] +
                                            ox)] += xv * wv;
                  }
      }
  Tensor yt(TensorDesc{DType::kF32, {n, m, out[0], out[1], out[2]}});
  float* yp = yt.data_as<float>();
  const int64_t vol = out[0] * out[1] * out[2];
  for (size_t k = 0; k < acc.size(); ++k)
    yp[k] = static_cast<float>(acc[k] + (b ? b->data_as<float>()[(k / vol) % m] : 0.0));
  return yt;
}

Tensor pool3d_naive(const Tensor& x, const Window3d& win, bool is_max, bool include_pad) {
  const Shape& xs = x.desc().shape;
  const I3 in{xs[2], xs[3], xs[4]};
  const I3 out{out_dim(in[0], 0, win), out_dim(in[1], 1, win), out_dim(in[2], 2, win)};
  const int64_t planes = xs[0] * xs[1], vin = in[0] * in[1] * in[2],
                vout = out[0] * out[1] * out[2];
  Tensor y(TensorDesc{DType::kF32, {xs[0], xs[1], out[0], out[1], out[2]}});
  const float* xp = x.data_as<float>();
  float* yp = y.data_as<float>();
  const double window = static_cast<double>(win.kernel[0] * win.kernel[1] * win.kernel[2]);
  for (int64_t p = 0; p < planes; ++p)
    for_each_window(in, win, [&](int64_t pos, const auto& taps) {
      double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (const auto& tap : taps) {
        const double v = xp[p * vin + tap.first];
        acc = is_max ? std::max(acc, v) : acc + v;
      }
      if (!is_max) acc /= include_pad ? window : static_cast<double>(taps.size());
      yp[p * vout + pos] = static_cast<float>(acc);
    });
  return y;
}

// A random conv window (kernels 1-3, strides and dilations 1-2, asymmetric pads) and an input
// volume it fits.
std::pair<Window3d, I3> random_conv_window(std::mt19937& rng) {
  Window3d win;
  for (int a = 0; a < 3; ++a) {
    win.kernel[a] = 1 + rng() % 3;
    win.strides[a] = 1 + rng() % 2;
    win.dilations[a] = 1 + rng() % 2;
    win.pads[a] = rng() % 2;
    win.pads[a + 3] = rng() % 3;
  }
  I3 in;
  for (int a = 0; a < 3; ++a) in[a] = win.dilations[a] * (win.kernel[a] - 1) + 1 + rng() % 4;
  return {win, in};
}

graph::Attributes window_attrs(const Window3d& w, bool with_dilations) {
  graph::Attributes a;
  a.set("strides", std::vector<int64_t>(w.strides.begin(), w.strides.end()));
  a.set("pads", std::vector<int64_t>(w.pads.begin(), w.pads.end()));
  if (with_dilations)
    a.set("dilations", std::vector<int64_t>(w.dilations.begin(), w.dilations.end()));
  return a;
}

std::string error_of(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<Tensor>& inputs, int num_outputs = 1) {
  auto r = test::run_single_op(op, attrs, inputs, num_outputs);
  REQUIRE_FALSE(r.is_ok());
  return r.status().message();
}

}  // namespace

TEST_CASE("Conv3D matches the ONNX definition on random shapes", "[ops][conv3d]") {
  std::mt19937 rng(5151);
  std::set<std::string> used;
  for (int c = 0; c < 24; ++c) {
    const int64_t group = c % 3 == 1 ? 2 : 1;
    const int64_t ch = group * (1 + rng() % 3), m = group * (1 + rng() % 3);
    const int64_t n = 1 + rng() % 2;
    const auto [win, in] = random_conv_window(rng);
    Tensor x = rnd({n, ch, in[0], in[1], in[2]}, 100 + c),
           wt = rnd({m, ch / group, win.kernel[0], win.kernel[1], win.kernel[2]}, 200 + c),
           b = rnd({m}, 300 + c);
    const bool has_bias = rng() % 2, w_const = rng() % 2;
    graph::Attributes attrs = window_attrs(win, true);
    attrs.set("group", group);
    if (c % 4 == 0)
      attrs.set("kernel_shape", std::vector<int64_t>(win.kernel.begin(), win.kernel.end()));
    std::vector<Tensor> inputs{x, wt};
    if (has_bias) inputs.push_back(b);
    INFO("X " << x.desc().to_string() << " W " << wt.desc().to_string() << " group " << group
              << " bias " << has_bias << " const W " << w_const);
    const int64_t k = ch / group * win.kernel[0] * win.kernel[1] * win.kernel[2];
    for (const std::string& name :
         check_every_kernel("Conv3D", attrs, inputs, {false, w_const, w_const},
                            conv3d_naive(x, wt, has_bias ? &b : nullptr, win, group),
                            4e-6 * std::sqrt(static_cast<double>(k))))
      used.insert(name);
  }
  CHECK(used == std::set<std::string>{"conv3d_onednn", "conv3d_ref"});
}

TEST_CASE("Conv3D: a layer wide enough for oneDNN's blocked kernels", "[ops][conv3d]") {
  // 16 -> 32 channels, 3x3x3, pads 1: oneDNN computes it in its own blocked layout, staged
  // through scratch from and to the caller's ncdhw.
  Window3d win;
  win.pads = {1, 1, 1, 1, 1, 1};
  Tensor x = rnd({2, 16, 6, 7, 8}, 1), wt = rnd({32, 16, 3, 3, 3}, 2), b = rnd({32}, 3);
  graph::Attributes attrs = window_attrs(win, false);
  const Tensor want = conv3d_naive(x, wt, &b, win, 1);
  for (bool w_const : {true, false}) {
    INFO("const W " << w_const);
    check_every_kernel("Conv3D", attrs, {x, wt, b}, {false, w_const, w_const}, want,
                       4e-6 * std::sqrt(16.0 * 27));
    auto r = test::run_single_op("Conv3D", attrs, {x, wt, b}, 1, 2, {false, w_const, w_const});
    REQUIRE(r.is_ok());
    CHECK(r->kernel == "conv3d_onednn");
  }
}

TEST_CASE("Conv3D applies its activation attribute on every kernel", "[ops][conv3d]") {
  // graph/passes/conv_fusion.h gives a Conv3D the Relu / Clip after it.
  Window3d win;
  win.pads = {1, 0, 1, 0, 1, 1};
  Tensor x = rnd({1, 5, 4, 5, 6}, 9), wt = rnd({7, 5, 2, 3, 3}, 10), b = rnd({7}, 11);
  for (auto [act, lo, hi] : {std::tuple{"Relu", 0.0f, 1e30f}, std::tuple{"Clip", -0.25f, 0.5f}}) {
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("activation", std::string(act));
    if (std::string(act) == "Clip") attrs.set("activation_params", std::vector<double>{lo, hi});
    Tensor want = conv3d_naive(x, wt, &b, win, 1);
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data_as<float>()[i] = std::min(std::max(want.data_as<float>()[i], lo), hi);
    INFO(act);
    check_every_kernel("Conv3D", attrs, {x, wt, b}, {false, true, true}, want,
                       4e-6 * std::sqrt(5.0 * 18));
  }
}

TEST_CASE("ConvTranspose3D matches the ONNX definition on random shapes", "[ops][conv3d]") {
  std::mt19937 rng(7171);
  std::set<std::string> used;
  for (int c = 0; c < 24; ++c) {
    const int64_t group = c % 3 == 1 ? 2 : 1;
    const int64_t ch = group * (1 + rng() % 3), mpg = 1 + rng() % 3;
    Window3d win;
    I3 out_pad{};
    I3 k;
    for (int a = 0; a < 3; ++a) {
      k[a] = 1 + rng() % 3;
      win.strides[a] = 1 + rng() % 2;
      win.dilations[a] = 1 + rng() % 2;
      win.pads[a] = rng() % 2;
      win.pads[a + 3] = rng() % 2;
      out_pad[a] = win.strides[a] > 1 ? rng() % 2 : 0;  // ONNX: output_padding < stride
    }
    Tensor x = rnd({1 + static_cast<int64_t>(rng() % 2), ch, 2 + static_cast<int64_t>(rng() % 3),
                    2 + static_cast<int64_t>(rng() % 3), 2 + static_cast<int64_t>(rng() % 3)},
                   600 + c),
           wt = rnd({ch, mpg, k[0], k[1], k[2]}, 700 + c), b = rnd({mpg * group}, 800 + c);
    const bool has_bias = rng() % 2, w_const = rng() % 2;
    graph::Attributes attrs = window_attrs(win, true);
    attrs.set("group", group);
    attrs.set("output_padding", std::vector<int64_t>(out_pad.begin(), out_pad.end()));
    std::vector<Tensor> inputs{x, wt};
    if (has_bias) inputs.push_back(b);
    INFO("X " << x.desc().to_string() << " W " << wt.desc().to_string() << " group " << group
              << " out_pad " << out_pad[0] << out_pad[1] << out_pad[2] << " bias " << has_bias);
    const double tol = 4e-6 * std::sqrt(static_cast<double>(ch * k[0] * k[1] * k[2]));
    for (const std::string& name : check_every_kernel(
             "ConvTranspose3D", attrs, inputs, {false, w_const, w_const},
             deconv3d_naive(x, wt, has_bias ? &b : nullptr, win, out_pad, group), tol))
      used.insert(name);
  }
  CHECK(used == std::set<std::string>{"convtranspose3d_onednn", "convtranspose3d_ref"});
}

TEST_CASE("ConvTranspose3D errors", "[ops][conv3d][errors]") {
  Tensor x = rnd({1, 4, 3, 3, 3}, 1), w = rnd({4, 2, 2, 2, 2}, 2);
  graph::Attributes none;
  CHECK_THAT(error_of("ConvTranspose3D", none, {x, rnd({3, 2, 2, 2, 2}, 2)}),
             Catch::Contains("must have X's 4 input channels first"));
  CHECK_THAT(error_of("ConvTranspose3D", none, {x, w, rnd({4}, 3)}), Catch::Contains("input B"));
  graph::Attributes shape;
  shape.set("output_shape", std::vector<int64_t>{6, 6, 6});
  CHECK_THAT(error_of("ConvTranspose3D", shape, {x, w}),
             Catch::Contains("'output_shape' is not supported"));
  graph::Attributes pads;
  pads.set("pads", std::vector<int64_t>{2, 0, 0, 2, 0, 0});
  CHECK_THAT(error_of("ConvTranspose3D", pads, {x, w}), Catch::Contains("leave no output"));
  graph::Attributes huge;
  huge.set("strides", std::vector<int64_t>{int64_t{1} << 62, 1, 1});
  CHECK_THAT(error_of("ConvTranspose3D", huge, {x, w}), Catch::Contains("overflow"));
}

TEST_CASE("MaxPool3D and AveragePool3D match the ONNX definition on random shapes",
          "[ops][pool3d]") {
  std::mt19937 rng(6161);
  std::set<std::string> used, dilated_avg;
  for (int c = 0; c < 24; ++c) {
    Window3d win;
    for (int a = 0; a < 3; ++a) {
      win.kernel[a] = 1 + rng() % 3;
      win.strides[a] = 1 + rng() % 2;
      win.pads[a] = rng() % win.kernel[a];
      win.pads[a + 3] = rng() % win.kernel[a];
    }
    Tensor x = rnd({1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 3),
                    win.kernel[0] + static_cast<int64_t>(rng() % 4),
                    win.kernel[1] + static_cast<int64_t>(rng() % 4),
                    win.kernel[2] + static_cast<int64_t>(rng() % 4)},
                   400 + c);
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("kernel_shape", std::vector<int64_t>(win.kernel.begin(), win.kernel.end()));
    INFO("X " << x.desc().to_string() << " kernel " << win.kernel[0] << "x" << win.kernel[1] << "x"
              << win.kernel[2]);
    for (const std::string& name :
         check_every_kernel("MaxPool3D", attrs, {x}, {}, pool3d_naive(x, win, true, false), 0.0))
      used.insert(name);
    for (int64_t cip : {0, 1}) {
      graph::Attributes avg = attrs;
      avg.set("count_include_pad", cip);
      INFO("count_include_pad " << cip);
      for (const std::string& name : check_every_kernel(
               "AveragePool3D", avg, {x}, {}, pool3d_naive(x, win, false, cip == 1), 1e-6))
        used.insert(name);
    }
    // Dilated max and average pooling (AveragePool-19), pads up to the dilated span - 1.
    Window3d dil = win;
    dil.dilations = {2, 1, 2};
    for (int a : {0, 2}) {
      dil.pads[a] = rng() % (2 * win.kernel[a] - 1);
      dil.pads[a + 3] = rng() % (2 * win.kernel[a] - 1);
    }
    Tensor xd = rnd({1, 2, 2 * win.kernel[0] + 1, win.kernel[1] + 2, 2 * win.kernel[2]}, 500 + c);
    graph::Attributes dattrs = window_attrs(dil, true);
    dattrs.set("kernel_shape", std::vector<int64_t>(win.kernel.begin(), win.kernel.end()));
    check_every_kernel("MaxPool3D", dattrs, {xd}, {}, pool3d_naive(xd, dil, true, false), 0.0);
    for (int64_t cip : {0, 1}) {
      graph::Attributes avg = dattrs;
      avg.set("count_include_pad", cip);
      INFO("dilated, count_include_pad " << cip);
      for (const std::string& name : check_every_kernel(
               "AveragePool3D", avg, {xd}, {}, pool3d_naive(xd, dil, false, cip == 1), 1e-6))
        dilated_avg.insert(name);
    }
  }
  CHECK(used == std::set<std::string>{"maxpool3d_onednn", "maxpool3d_ref", "avgpool3d_onednn",
                                      "avgpool3d_ref"});
  CHECK(dilated_avg == std::set<std::string>{"avgpool3d_ref"});  // oneDNN's declines them
}

TEST_CASE("Conv3D and 3-D pool errors", "[ops][conv3d][pool3d][errors]") {
  Tensor x = rnd({1, 4, 5, 5, 5}, 1), w = rnd({6, 4, 3, 3, 3}, 2);
  graph::Attributes none;
  CHECK_THAT(error_of("Conv3D", none, {rnd({1, 4, 5, 5}, 1), w}),
             Catch::Contains("5-D [N, C, D, H, W]"));
  CHECK_THAT(error_of("Conv3D", none, {x, rnd({6, 4, 3, 3}, 2)}),
             Catch::Contains("[M, C/group, kD, kH, kW]"));
  CHECK_THAT(error_of("Conv3D", none, {x, rnd({6, 3, 3, 3, 3}, 2)}),
             Catch::Contains("input channels per group"));
  graph::Attributes g3;
  g3.set("group", int64_t{3});
  CHECK_THAT(error_of("Conv3D", g3, {x, w}), Catch::Contains("'group' = 3"));
  CHECK_THAT(error_of("Conv3D", none, {x, w, rnd({5}, 3)}), Catch::Contains("input B"));
  graph::Attributes pads;
  pads.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  CHECK_THAT(error_of("Conv3D", pads, {x, w}),
             Catch::Contains("'pads' must be 6 ints >= 0 (front, top, left, back, bottom, right)"));
  graph::Attributes strides;
  strides.set("strides", std::vector<int64_t>{1, 0, 1});
  CHECK_THAT(error_of("Conv3D", strides, {x, w}), Catch::Contains("'strides' must be 3 ints"));
  graph::Attributes ks;
  ks.set("kernel_shape", std::vector<int64_t>{3, 3, 2});
  CHECK_THAT(error_of("Conv3D", ks, {x, w}), Catch::Contains("does not match W"));
  CHECK_THAT(error_of("Conv3D", none, {rnd({1, 4, 2, 5, 5}, 1), w}),
             Catch::Contains("larger than the padded input along dim 2"));
  graph::Attributes huge;
  huge.set("dilations", std::vector<int64_t>{int64_t{1} << 62, 1, 1});
  CHECK_THAT(error_of("Conv3D", huge, {x, w}), Catch::Contains("overflow int64"));

  graph::Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2, 2});
  CHECK_THAT(error_of("MaxPool3D", pool, {x}, 2), Catch::Contains("Indices output"));
  graph::Attributes bad_pad = pool;
  bad_pad.set("pads", std::vector<int64_t>{2, 0, 0, 0, 0, 0});
  CHECK_THAT(error_of("MaxPool3D", bad_pad, {x}), Catch::Contains("smaller than the kernel"));
  graph::Attributes avg_dil = pool;
  avg_dil.set("dilations", std::vector<int64_t>{2, 2, 2});
  avg_dil.set("pads", std::vector<int64_t>{0, 0, 0, 0, 3, 0});
  CHECK_THAT(error_of("AveragePool3D", avg_dil, {x}),
             Catch::Contains("smaller than the dilated kernel [3, 3, 3]"));
  graph::Attributes ceil = pool;
  ceil.set("ceil_mode", int64_t{1});
  CHECK_THAT(error_of("MaxPool3D", ceil, {x}), Catch::Contains("'ceil_mode' = 1"));
  graph::Attributes no_kernel;
  CHECK_THAT(error_of("AveragePool3D", no_kernel, {x}), Catch::Contains("kernel_shape"));
}

namespace {

// [N, C, D, H, W] -> channels-last [N, D, H, W, C].
Tensor to_ndhwc(const Tensor& x) {
  const Shape& s = x.desc().shape;
  Tensor y(TensorDesc{DType::kF32, {s[0], s[2], s[3], s[4], s[1]}});
  const int64_t vol = s[2] * s[3] * s[4];
  const float* xp = x.data_as<float>();
  float* yp = y.data_as<float>();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t i = 0; i < vol; ++i) yp[(n * vol + i) * s[1] + c] = xp[(n * s[1] + c) * vol + i];
  return y;
}

}  // namespace

TEST_CASE("The channels-last 3-D ops match the ONNX definition on random shapes",
          "[ops][conv3d][pool3d]") {
  // Conv3DNdhwc, ConvTranspose3DNdhwc, MaxPool3DNdhwc and AveragePool3DNdhwc
  // (graph/passes/blocked_layout.h): the NCDHW op's result, channels-last in and out.
  std::mt19937 rng(8181);
  for (int c = 0; c < 12; ++c) {
    const int64_t n = 1 + rng() % 2, ch = 1 + rng() % 20, m = 1 + rng() % 20;
    Window3d win;
    for (int a = 0; a < 3; ++a) {
      win.kernel[a] = 1 + rng() % 3;
      win.strides[a] = 1 + rng() % 2;
      win.pads[a] = rng() % win.kernel[a];
      win.pads[a + 3] = rng() % win.kernel[a];
    }
    I3 in;
    for (int a = 0; a < 3; ++a) in[a] = win.kernel[a] + rng() % 4;
    Tensor x = rnd({n, ch, in[0], in[1], in[2]}, 600 + c), b = rnd({m}, 700 + c);
    Tensor wt = rnd({m, ch, win.kernel[0], win.kernel[1], win.kernel[2]}, 800 + c);
    INFO("X " << x.desc().to_string() << " W " << wt.desc().to_string());
    const graph::Attributes attrs = window_attrs(win, false);
    const double k = static_cast<double>(ch * win.kernel[0] * win.kernel[1] * win.kernel[2]);
    check_every_kernel("Conv3DNdhwc", attrs, {to_ndhwc(x), wt, b}, {false, true, true},
                       to_ndhwc(conv3d_naive(x, wt, &b, win, 1)), 4e-6 * std::sqrt(k));
    // ConvTranspose's W is [C, M, ...]; output_padding within the end pads.
    Tensor wd = rnd({ch, m, win.kernel[0], win.kernel[1], win.kernel[2]}, 900 + c);
    I3 out_pad{};
    graph::Attributes dattrs = attrs;
    for (int a = 0; a < 3; ++a)
      out_pad[a] = win.strides[a] > 1 ? std::min<int64_t>(win.pads[a + 3], 1) : 0;
    dattrs.set("output_padding", std::vector<int64_t>(out_pad.begin(), out_pad.end()));
    check_every_kernel("ConvTranspose3DNdhwc", dattrs, {to_ndhwc(x), wd, b}, {false, true, true},
                       to_ndhwc(deconv3d_naive(x, wd, &b, win, out_pad, 1)),
                       4e-6 * std::sqrt(static_cast<double>(m) * 27));
    graph::Attributes pool = attrs;
    pool.set("kernel_shape", std::vector<int64_t>(win.kernel.begin(), win.kernel.end()));
    check_every_kernel("MaxPool3DNdhwc", pool, {to_ndhwc(x)}, {},
                       to_ndhwc(pool3d_naive(x, win, true, false)), 0.0);
    pool.set("count_include_pad", static_cast<int64_t>(c % 2));
    check_every_kernel("AveragePool3DNdhwc", pool, {to_ndhwc(x)}, {},
                       to_ndhwc(pool3d_naive(x, win, false, c % 2 == 1)), 1e-6);
  }
}

TEST_CASE("Conv3DNdhwc adds its input Z before the activation", "[ops][conv3d]") {
  // graph/passes/conv_fusion.h fuse_conv_sums: a 3-D ResNet block's conv + shortcut + Relu.
  Window3d win;
  win.pads = {1, 1, 1, 1, 1, 1};
  for (int64_t ch : {5, 32}) {
    Tensor x = rnd({2, ch, 4, 6, 5}, 21), wt = rnd({24, ch, 3, 3, 3}, 22), b = rnd({24}, 23);
    Tensor want = conv3d_naive(x, wt, &b, win, 1);
    Tensor z = rnd(want.desc().shape, 24);
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data_as<float>()[i] = std::max(want.data_as<float>()[i] + z.data_as<float>()[i], 0.0f);
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("activation", std::string("Relu"));
    INFO("channels " << ch);
    check_every_kernel("Conv3DNdhwc", attrs, {to_ndhwc(x), wt, b, to_ndhwc(z)},
                       {false, true, true, false}, to_ndhwc(want), 4e-6 * std::sqrt(27.0 * ch));
  }
}

TEST_CASE("A depthwise Conv3DNdhwc matches the ONNX definition", "[ops][conv3d]") {
  // X3D-style 3x3x3 depthwise convs (ops/conv_pool_3d.cpp's channels-last kernel, and oneDNN's
  // after it): channel counts around the 16-lane vector, strides, dilations, asymmetric pads,
  // bias, a residual Z and a Relu.
  std::mt19937 rng(9191);
  std::set<std::string> used;
  for (int c = 0; c < 10; ++c) {
    const int64_t ch = std::vector<int64_t>{1, 7, 16, 17, 40}[c % 5], n = 1 + c % 2;
    const auto [win, in] = random_conv_window(rng);
    Tensor x = rnd({n, ch, in[0], in[1], in[2]}, 1000 + c), b = rnd({ch}, 1100 + c);
    Tensor wt = rnd({ch, 1, win.kernel[0], win.kernel[1], win.kernel[2]}, 1200 + c);
    graph::Attributes attrs = window_attrs(win, true);
    attrs.set("group", ch);
    Tensor want = conv3d_naive(x, wt, &b, win, ch);
    std::vector<Tensor> inputs{to_ndhwc(x), wt, b};
    std::vector<bool> constant{false, true, true};
    if (c % 2 == 1) {  // + Z, then Relu
      Tensor z = rnd(want.desc().shape, 1300 + c);
      for (int64_t i = 0; i < want.numel(); ++i)
        want.data_as<float>()[i] = std::max(want.data_as<float>()[i] + z.data_as<float>()[i], 0.0f);
      inputs.push_back(to_ndhwc(z));
      constant.push_back(false);
      attrs.set("activation", std::string("Relu"));
    }
    INFO("X " << x.desc().to_string() << " kernel " << win.kernel[0] << "x" << win.kernel[1] << "x"
              << win.kernel[2]);
    for (const std::string& name : check_every_kernel("Conv3DNdhwc", attrs, inputs, constant,
                                                      to_ndhwc(want), 4e-6 * std::sqrt(27.0)))
      used.insert(name);
  }
  CHECK(used.count("dwconv3d_ndhwc") == 1);
  // A row wide enough for 4 pixels at a time inside it, strided and not, with borders.
  for (int64_t stride : {1, 2}) {
    Window3d win;
    win.kernel = {3, 3, 3};
    win.strides = {1, stride, stride};
    win.pads = {1, 1, 1, 1, 1, 1};
    Tensor x = rnd({1, 40, 3, 5, 23}, 1400 + stride), b = rnd({40}, 1410 + stride);
    Tensor wt = rnd({40, 1, 3, 3, 3}, 1420 + stride);
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("group", int64_t{40});
    INFO("stride " << stride);
    check_every_kernel("Conv3DNdhwc", attrs, {to_ndhwc(x), wt, b}, {false, true, true},
                       to_ndhwc(conv3d_naive(x, wt, &b, win, 40)), 4e-6 * std::sqrt(27.0));
  }
}
