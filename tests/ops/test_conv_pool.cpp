// Conv, MaxPool, AveragePool: every kernel of each op's list (oneDNN, ref) against the naive
// references on seeded random shapes (strides, asymmetric pads, dilations, groups incl.
// depthwise, bias), teams of 1 and 2, constant and non-constant weights; kernel selection; two
// threads sharing one kernel; one test per error message.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <set>

#include "ops/conv_algorithm.h"
#include "ops/onednn.h"
#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_gemm_conv.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::check_every_kernel;
using graphi::test::Window2d;

namespace {

Tensor rnd(Shape s, uint64_t seed) {
  return test::random_tensor(TensorDesc{DType::kF32, std::move(s)}, seed);
}

double tolerance(int64_t k) {
  return 4e-6 * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
}

graph::Attributes window_attrs(const Window2d& w, bool with_dilations) {
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

std::string selected(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<Tensor>& inputs, const std::vector<bool>& constant) {
  auto r = test::run_single_op(op, attrs, inputs, 1, 1, constant);
  REQUIRE(r.is_ok());
  return r->kernel;
}

}  // namespace

TEST_CASE("Conv matches the ONNX definition on random shapes", "[ops][conv]") {
  std::mt19937 rng(4321);
  std::set<std::string> used;
  for (int c = 0; c < 30; ++c) {
    // group: 1, 2, or depthwise (group = C = M).
    const int kind = c % 3;
    const int64_t n = 1 + rng() % 2;
    int64_t group = 1, ch = 1 + rng() % 5, m = 1 + rng() % 6;
    if (kind == 1) {
      group = 2;
      ch = 2 * (1 + rng() % 3);
      m = 2 * (1 + rng() % 3);
    }
    if (kind == 2) {
      ch = 2 + rng() % 6;
      group = ch;
      m = ch;
    }
    const int64_t kh = 1 + rng() % 3, kw = 1 + rng() % 3;
    Window2d win;
    win.strides = {static_cast<int64_t>(1 + rng() % 2), static_cast<int64_t>(1 + rng() % 2)};
    win.dilations = {static_cast<int64_t>(1 + rng() % 2), static_cast<int64_t>(1 + rng() % 2)};
    win.pads = {static_cast<int64_t>(rng() % 3), static_cast<int64_t>(rng() % 3),
                static_cast<int64_t>(rng() % 3), static_cast<int64_t>(rng() % 3)};
    const int64_t h = win.dilations[0] * (kh - 1) + 1 + rng() % 6;
    const int64_t w = win.dilations[1] * (kw - 1) + 1 + rng() % 6;
    Tensor x = rnd({n, ch, h, w}, 10 + c), wt = rnd({m, ch / group, kh, kw}, 20 + c),
           b = rnd({m}, 30 + c);
    const bool has_bias = rng() % 2, w_const = rng() % 2;
    graph::Attributes attrs = window_attrs(win, true);
    attrs.set("group", group);
    if (c % 4 == 0) attrs.set("kernel_shape", std::vector<int64_t>{kh, kw});
    std::vector<Tensor> in = {x, wt};
    if (has_bias) in.push_back(b);
    INFO("X " << x.desc().to_string() << " W " << wt.desc().to_string() << " group " << group
              << " strides " << win.strides[0] << "," << win.strides[1] << " dil "
              << win.dilations[0] << "," << win.dilations[1] << " pads " << win.pads[0] << ","
              << win.pads[1] << "," << win.pads[2] << "," << win.pads[3] << " bias " << has_bias
              << " const W " << w_const);
    for (const std::string& name :
         check_every_kernel("Conv", attrs, in, {false, w_const, w_const},
                            test::conv2d_ref(x, wt, has_bias ? &b : nullptr, win, group),
                            tolerance(ch / group * kh * kw)))
      used.insert(name);
  }
  CHECK(used == std::set<std::string>{"conv_onednn", "conv_ref"});
}

TEST_CASE("Conv: a larger layer, depthwise, and kernel selection", "[ops][conv]") {
  Window2d win;
  win.pads = {1, 1, 1, 1};
  Tensor x = rnd({1, 16, 14, 14}, 1), w = rnd({32, 16, 3, 3}, 2), b = rnd({32}, 3);
  const Tensor ref = test::conv2d_ref(x, w, &b, win, 1);
  for (bool w_const : {false, true}) {
    auto names = check_every_kernel("Conv", window_attrs(win, false), {x, w, b},
                                    {false, w_const, w_const}, ref, tolerance(16 * 9));
    CHECK(names == std::vector<std::string>{"conv_onednn", "conv_ref"});
  }
  CHECK(selected("Conv", window_attrs(win, false), {x, w, b}, {false, true, true}) ==
        "conv_onednn");
  graph::Attributes dw = window_attrs(win, false);
  dw.set("group", int64_t{16});
  Tensor wd = rnd({16, 1, 3, 3}, 4);
  check_every_kernel("Conv", dw, {x, wd}, {false, true}, test::conv2d_ref(x, wd, nullptr, win, 16),
                     tolerance(9));
}

// FusedConv (graph/passes/conv_fusion.h): every kernel against the naive Conv with the ReLU
// applied afterwards (oneDNN's eltwise post-op vs the ref kernel's max).
TEST_CASE("FusedConv with activation Relu matches Conv then Relu", "[ops][conv]") {
  std::mt19937 rng(99);
  for (int c = 0; c < 12; ++c) {
    const int64_t group = c % 3 == 1 ? 2 : 1;
    const int64_t ch = group * (1 + rng() % 4), m = group * (1 + rng() % 4);
    const int64_t k = 1 + 2 * (rng() % 2);
    Window2d win;
    win.pads = {k / 2, k / 2, k / 2, k / 2};
    win.strides = {static_cast<int64_t>(1 + c % 2), static_cast<int64_t>(1 + c % 2)};
    Tensor x = rnd({1 + c % 2 * 7, ch, 9, 7}, 40 + c), w = rnd({m, ch / group, k, k}, 50 + c),
           b = rnd({m}, 60 + c);
    Tensor ref = test::conv2d_ref(x, w, &b, win, group);
    float* r = ref.data_as<float>();
    int negatives = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      negatives += r[i] < 0;
      r[i] = std::max(r[i], 0.0f);
    }
    CHECK(negatives > 0);  // the ReLU has something to do
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("group", group);
    attrs.set("activation", std::string("Relu"));
    INFO("X " << x.desc().to_string() << " W " << w.desc().to_string());
    auto names = check_every_kernel("FusedConv", attrs, {x, w, b}, {false, true, true}, ref,
                                    tolerance(ch / group * k * k));
    CHECK(names == std::vector<std::string>{"conv_onednn", "conv_ref"});
  }
  graph::Attributes bad;
  bad.set("activation", std::string("Softplus"));
  CHECK_THAT(error_of("FusedConv", bad, {rnd({1, 2, 4, 4}, 1), rnd({2, 2, 3, 3}, 2)}),
             Catch::Matchers::Contains("attribute 'activation' = 'Softplus' is not supported"));
}

// The other activations (ops/conv_activation.h), on both kernels, against the formulas written
// out here.
TEST_CASE("FusedConv activations: Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Swish, HardSwish",
          "[ops][conv]") {
  struct Act {
    std::string name;
    std::vector<double> params;
    double (*f)(double);
  };
  const std::vector<Act> acts = {
      {"Clip", {0.0, 0.5}, [](double v) { return std::min(std::max(v, 0.0), 0.5); }},
      {"LeakyRelu", {0.2}, [](double v) { return v >= 0 ? v : 0.2 * v; }},
      {"Sigmoid", {}, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"Tanh", {}, [](double v) { return std::tanh(v); }},
      {"HardSigmoid",
       {0.3, 0.4},
       [](double v) { return std::min(1.0, std::max(0.0, 0.3 * v + 0.4)); }},
      {"Swish", {}, [](double v) { return v / (1 + std::exp(-v)); }},
      {"HardSwish", {}, [](double v) { return v * std::min(1.0, std::max(0.0, v / 6 + 0.5)); }},
  };
  Window2d win;
  win.pads = {1, 1, 1, 1};
  Tensor x = rnd({2, 3, 8, 6}, 71), w = rnd({5, 3, 3, 3}, 72), b = rnd({5}, 73);
  for (const Act& act : acts) {
    INFO(act.name);
    Tensor ref = test::conv2d_ref(x, w, &b, win, 1);
    for (int64_t i = 0; i < ref.numel(); ++i)
      ref.data_as<float>()[i] = static_cast<float>(act.f(ref.data_as<float>()[i]));
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("activation", act.name);
    if (!act.params.empty()) attrs.set("activation_params", act.params);
    auto names =
        check_every_kernel("FusedConv", attrs, {x, w, b}, {false, true, true}, ref, tolerance(27));
    CHECK(names == std::vector<std::string>{"conv_onednn", "conv_ref"});
  }
}

// A 4th input Z (a residual connection, graph/passes/conv_fusion.h fuse_conv_sums) is added
// before the activation: act(conv(X) + B + Z), against the reference with the sum written out.
TEST_CASE("FusedConv with input Z adds it before the activation on every kernel", "[ops][conv]") {
  struct Case {
    int64_t group, c, m, k, stride;
    std::string act;  // "" = no activation attribute
  };
  // Swish, Sigmoid and Tanh run after the primitive (graphi's vectorized pass, not oneDNN's
  // post-op): the sum must come first there too.
  const std::vector<Case> cases = {{1, 5, 7, 3, 1, ""},           {1, 16, 16, 1, 1, "Relu"},
                                   {1, 4, 6, 3, 2, "Clip"},       {8, 8, 8, 3, 1, "Relu"},
                                   {1, 3, 32, 3, 1, ""},          {1, 16, 32, 3, 1, "Swish"},
                                   {16, 16, 16, 3, 1, "Sigmoid"}, {1, 6, 5, 1, 1, "Tanh"}};
  int n = 0;
  for (const Case& c : cases) {
    Window2d win;
    win.pads = {c.k / 2, c.k / 2, c.k / 2, c.k / 2};
    win.strides = {c.stride, c.stride};
    Tensor x = rnd({2, c.c, 9, 8}, 80 + n), w = rnd({c.m, c.c / c.group, c.k, c.k}, 90 + n),
           b = rnd({c.m}, 100 + n);
    Tensor ref = test::conv2d_ref(x, w, &b, win, c.group);
    Tensor z = rnd(ref.desc().shape, 110 + n);
    ++n;
    int clipped = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      float& r = ref.data_as<float>()[i];
      r += z.data_as<float>()[i];
      if (c.act == "Relu" || c.act == "Clip") {
        const float lo = 0.0f, hi = c.act == "Clip" ? 0.5f : 1e30f;
        clipped += r < lo || r > hi;
        r = std::min(std::max(r, lo), hi);
      } else if (c.act == "Swish") {
        r = static_cast<float>(r / (1.0 + std::exp(-static_cast<double>(r))));
      } else if (c.act == "Sigmoid") {
        r = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(r))));
      } else if (c.act == "Tanh") {
        r = static_cast<float>(std::tanh(static_cast<double>(r)));
      }
    }
    CHECK(((c.act != "Relu" && c.act != "Clip") || clipped > 0));
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("group", c.group);
    if (!c.act.empty()) attrs.set("activation", c.act);
    if (c.act == "Clip") attrs.set("activation_params", std::vector<double>{0.0, 0.5});
    INFO("X " << x.desc().to_string() << " W " << w.desc().to_string() << " act " << c.act);
    auto names = check_every_kernel("FusedConv", attrs, {x, w, b, z}, {false, true, true, false},
                                    ref, tolerance(c.c / c.group * c.k * c.k));
    CHECK(names == std::vector<std::string>{"conv_onednn", "conv_ref"});
  }
  graph::Attributes relu;
  relu.set("activation", std::string("Relu"));
  CHECK_THAT(
      error_of("FusedConv", relu,
               {rnd({1, 2, 4, 4}, 1), rnd({3, 2, 3, 3}, 2), rnd({3}, 3), rnd({1, 3, 4, 4}, 4)}),
      Catch::Matchers::Contains("input Z float32[1, 3, 4, 4] must have the output's shape"));
  CHECK_THAT(
      error_of("Conv", {},
               {rnd({1, 2, 4, 4}, 1), rnd({3, 2, 3, 3}, 2), rnd({3}, 3), rnd({1, 3, 2, 2}, 4)}),
      Catch::Matchers::Contains("Conv takes inputs X, W and an optional B, got 4 inputs"));
}

TEST_CASE("MaxPool and AveragePool match the ONNX definition on random shapes", "[ops][pool]") {
  std::mt19937 rng(777);
  std::set<std::string> used;
  for (int c = 0; c < 30; ++c) {
    Window2d win;
    win.kernel = {static_cast<int64_t>(1 + rng() % 3), static_cast<int64_t>(1 + rng() % 3)};
    win.strides = {static_cast<int64_t>(1 + rng() % 3), static_cast<int64_t>(1 + rng() % 2)};
    for (int i = 0; i < 4; ++i) win.pads[i] = static_cast<int64_t>(rng() % win.kernel[i % 2]);
    const int64_t h = win.kernel[0] + rng() % 6, w = win.kernel[1] + rng() % 6;
    Tensor x = rnd({1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 4), h, w},
                   50 + c);
    graph::Attributes attrs = window_attrs(win, false);
    attrs.set("kernel_shape", std::vector<int64_t>(win.kernel.begin(), win.kernel.end()));
    INFO("X " << x.desc().to_string() << " kernel " << win.kernel[0] << "x" << win.kernel[1]
              << " strides " << win.strides[0] << "," << win.strides[1] << " pads " << win.pads[0]
              << "," << win.pads[1] << "," << win.pads[2] << "," << win.pads[3]);
    for (const std::string& name :
         check_every_kernel("MaxPool", attrs, {x}, {}, test::maxpool2d_ref(x, win), 0.0))
      used.insert(name);
    for (int64_t cip : {0, 1}) {
      graph::Attributes avg = attrs;
      if (cip || c % 2) avg.set("count_include_pad", cip);  // also the default (0)
      INFO("count_include_pad " << cip);
      for (const std::string& name : check_every_kernel(
               "AveragePool", avg, {x}, {}, test::avgpool2d_ref(x, win, cip == 1), 1e-6))
        used.insert(name);
    }
  }
  CHECK(used ==
        std::set<std::string>{"maxpool_onednn", "maxpool_ref", "avgpool_onednn", "avgpool_ref"});
}

TEST_CASE("MaxPool and AveragePool with dilations match the definition on every kernel",
          "[ops][pool]") {
  std::mt19937 rng(778);
  std::set<std::string> used;
  for (int c = 0; c < 16; ++c) {
    Window2d win;
    win.kernel = {static_cast<int64_t>(2 + rng() % 2), static_cast<int64_t>(2 + rng() % 2)};
    win.strides = {static_cast<int64_t>(1 + rng() % 2), static_cast<int64_t>(1 + rng() % 2)};
    win.dilations = {static_cast<int64_t>(1 + rng() % 3), static_cast<int64_t>(2 + rng() % 2)};
    // Pads up to the dilated span - 1 (beyond the kernel itself).
    for (int i = 0; i < 4; ++i)
      win.pads[i] = static_cast<int64_t>(rng() % ((win.kernel[i % 2] - 1) * win.dilations[i % 2]));
    const int64_t h = (win.kernel[0] - 1) * win.dilations[0] + 1 + rng() % 6,
                  w = (win.kernel[1] - 1) * win.dilations[1] + 1 + rng() % 6;
    Tensor x = rnd({1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 4), h, w},
                   90 + c);
    graph::Attributes attrs = window_attrs(win, true);
    attrs.set("kernel_shape", std::vector<int64_t>(win.kernel.begin(), win.kernel.end()));
    INFO("X " << x.desc().to_string() << " kernel " << win.kernel[0] << "x" << win.kernel[1]
              << " dilations " << win.dilations[0] << "," << win.dilations[1] << " pads "
              << win.pads[0] << "," << win.pads[1] << "," << win.pads[2] << "," << win.pads[3]);
    // oneDNN serves some dilated windows with its reference code only, which the NCHW op then
    // declines for graphi's own loop: every kernel that takes the node must match.
    auto names = check_every_kernel("MaxPool", attrs, {x}, {}, test::maxpool2d_ref(x, win), 0.0);
    CHECK(names.back() == "maxpool_ref");
    for (int64_t cip : {0, 1}) {
      graph::Attributes avg = attrs;
      avg.set("count_include_pad", cip);
      INFO("count_include_pad " << cip);
      for (const std::string& name : check_every_kernel(
               "AveragePool", avg, {x}, {}, test::avgpool2d_ref(x, win, cip == 1), 1e-6))
        used.insert(name);
    }
  }
  CHECK(used.count("avgpool_ref"));
  // A layer wide enough for oneDNN's jit pooling (the next test): dilated, the average pool
  // still runs graphi's loop (oneDNN 2.6 has only its reference code for dilated windows).
  Window2d wide;
  wide.kernel = {3, 3};
  wide.dilations = {2, 2};
  wide.pads = {2, 2, 2, 2};
  Tensor x = rnd({2, 32, 28, 28}, 5);
  graph::Attributes attrs = window_attrs(wide, true);
  attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  for (int64_t cip : {0, 1}) {
    attrs.set("count_include_pad", cip);
    CHECK(check_every_kernel("AveragePool", attrs, {x}, {}, test::avgpool2d_ref(x, wide, cip == 1),
                             1e-6) == std::vector<std::string>{"avgpool_ref"});
  }
}

TEST_CASE("Pool kernel selection and a GoogleNet-like pool", "[ops][pool]") {
  Window2d win;
  win.kernel = {3, 3};
  win.strides = {2, 2};
  win.pads = {1, 1, 1, 1};
  Tensor x = rnd({2, 32, 28, 28}, 5);
  graph::Attributes attrs = window_attrs(win, false);
  attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  CHECK(check_every_kernel("MaxPool", attrs, {x}, {}, test::maxpool2d_ref(x, win), 0.0) ==
        std::vector<std::string>{"maxpool_onednn", "maxpool_ref"});
  CHECK(check_every_kernel("AveragePool", attrs, {x}, {}, test::avgpool2d_ref(x, win, false),
                           1e-6) == std::vector<std::string>{"avgpool_onednn", "avgpool_ref"});
  CHECK(selected("MaxPool", attrs, {x}, {}) == "maxpool_onednn");
}

TEST_CASE("One Conv/Pool kernel runs on two threads at once", "[ops][conv][pool]") {
  Window2d win;
  win.pads = {1, 0, 1, 0};
  win.strides = {2, 1};
  Tensor x = rnd({1, 8, 12, 12}, 1), w = rnd({8, 8, 3, 3}, 2), b = rnd({8}, 3);
  const Tensor ref = test::conv2d_ref(x, w, &b, win, 1);
  for (int threads : {1, 2}) {
    auto r = test::run_concurrently("Conv", window_attrs(win, false), {x, w, b}, threads,
                                    {false, true, true}, 10);
    REQUIRE(r.is_ok());
    CHECK(r->kernel == "conv_onednn");
    CHECK(test::max_rel_error(r->first[0], ref) <= tolerance(72));
    CHECK(test::max_rel_error(r->second[0], ref) <= tolerance(72));
  }
  Window2d pw;
  pw.kernel = {2, 2};
  pw.strides = {2, 2};
  graph::Attributes pa = window_attrs(pw, false);
  pa.set("kernel_shape", std::vector<int64_t>{2, 2});
  auto r = test::run_concurrently("AveragePool", pa, {x}, 2, {}, 10);
  REQUIRE(r.is_ok());
  const Tensor pref = test::avgpool2d_ref(x, pw, false);
  CHECK(test::max_rel_error(r->first[0], pref) <= 1e-6);
  CHECK(test::max_rel_error(r->second[0], pref) <= 1e-6);
}

TEST_CASE("Conv errors", "[ops][conv][errors]") {
  Tensor x = rnd({1, 4, 5, 5}, 1);
  graph::Attributes g3;
  g3.set("group", int64_t{3});
  CHECK_THAT(error_of("Conv", g3, {x, rnd({6, 1, 3, 3}, 2)}),
             Catch::Contains("node 'node' (Conv): input channels C = 4 of X float32[1, 4, 5, 5] "
                             "are not divisible by group = 3"));
  graph::Attributes g2;
  g2.set("group", int64_t{2});
  CHECK_THAT(error_of("Conv", g2, {x, rnd({5, 2, 3, 3}, 2)}),
             Catch::Contains(
                 "output channels M = 5 of W float32[5, 2, 3, 3] are not divisible by group = 2"));
  CHECK_THAT(error_of("Conv", g2, {x, rnd({6, 4, 3, 3}, 2)}),
             Catch::Contains("W float32[6, 4, 3, 3] has 4 input channels per group, but X "
                             "float32[1, 4, 5, 5] with group = 2 has 2"));
  CHECK_THAT(error_of("Conv", {}, {x, rnd({2, 4, 7, 3}, 2)}),
             Catch::Contains(
                 "kernel [7, 3] is larger than the padded input [5, 5] (input [5, 5] plus pads)"));
  graph::Attributes dil;
  dil.set("dilations", std::vector<int64_t>{3, 1});
  CHECK_THAT(error_of("Conv", dil, {x, rnd({2, 4, 3, 3}, 2)}),
             Catch::Contains("kernel [7, 3] (dilated) is larger than the padded input [5, 5]"));
  graph::Attributes ks;
  ks.set("kernel_shape", std::vector<int64_t>{2, 2});
  CHECK_THAT(
      error_of("Conv", ks, {x, rnd({2, 4, 3, 3}, 2)}),
      Catch::Contains("attribute 'kernel_shape' [2, 2] does not match W float32[2, 4, 3, 3]"));
  graph::Attributes ap;
  ap.set("auto_pad", std::string("SAME_UPPER"));
  auto r = test::run_single_op("Conv", ap, {x, rnd({2, 4, 3, 3}, 2)});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(r.status().message(),
             Catch::Contains("attribute 'auto_pad' = 'SAME_UPPER' is not supported (only NOTSET); "
                             "give explicit 'pads'"));
  CHECK_THAT(
      error_of("Conv", {}, {rnd({1, 4, 5}, 1), rnd({2, 4, 3}, 2)}),
      Catch::Contains(
          "input X float32[1, 4, 5] is not supported: only the 2-D operation on a 4-D NCHW input"));
  CHECK_THAT(
      error_of("Conv", {}, {x, rnd({2, 4, 3, 3}, 2), rnd({3}, 3)}),
      Catch::Contains("input B must be float32[2] (one bias per output channel), got float32[3]"));
  graph::Attributes bad_pads;
  bad_pads.set("pads", std::vector<int64_t>{1, 1});
  CHECK_THAT(error_of("Conv", bad_pads, {x, rnd({2, 4, 3, 3}, 2)}),
             Catch::Contains(
                 "attribute 'pads' must be 4 ints >= 0 [top, left, bottom, right], got [1, 1]"));
  graph::Attributes bad_strides;
  bad_strides.set("strides", std::vector<int64_t>{0, 1});
  CHECK_THAT(error_of("Conv", bad_strides, {x, rnd({2, 4, 3, 3}, 2)}),
             Catch::Contains("attribute 'strides' must be 2 ints >= 1, got [0, 1]"));
  CHECK_THAT(error_of("Conv", {}, {x, rnd({2, 4, 3}, 2)}),
             Catch::Contains("input W must be 4-D [M, C/group, kH, kW], got float32[2, 4, 3]"));
}

TEST_CASE("Pool errors", "[ops][pool][errors]") {
  Tensor x = rnd({1, 2, 5, 5}, 1);
  graph::Attributes k3;
  k3.set("kernel_shape", std::vector<int64_t>{3, 3});
  CHECK_THAT(error_of("MaxPool", {}, {x}),
             Catch::Contains("node 'node' (MaxPool): missing required attribute 'kernel_shape'"));
  graph::Attributes big;
  big.set("kernel_shape", std::vector<int64_t>{6, 2});
  CHECK_THAT(error_of("AveragePool", big, {x}),
             Catch::Contains(
                 "kernel [6, 2] is larger than the padded input [5, 5] (input [5, 5] plus pads)"));
  graph::Attributes ceil = k3;
  ceil.set("ceil_mode", int64_t{1});
  CHECK_THAT(error_of("MaxPool", ceil, {x}),
             Catch::Contains("attribute 'ceil_mode' = 1 is not supported (only 0)"));
  graph::Attributes pads = k3;
  pads.set("pads", std::vector<int64_t>{3, 0, 0, 0});
  CHECK_THAT(error_of("MaxPool", pads, {x}),
             Catch::Contains("pads [3, 0, 0, 0] must each be smaller than the kernel [3, 3]"));
  graph::Attributes ap = k3;
  ap.set("auto_pad", std::string("VALID"));
  CHECK_THAT(error_of("AveragePool", ap, {x}),
             Catch::Contains("attribute 'auto_pad' = 'VALID' is not supported"));
  graph::Attributes cip = k3;
  cip.set("count_include_pad", int64_t{2});
  CHECK_THAT(error_of("AveragePool", cip, {x}),
             Catch::Contains("attribute 'count_include_pad' must be 0 or 1, got 2"));
  graph::Attributes dil = k3;
  dil.set("dilations", std::vector<int64_t>{2, 1});
  dil.set("pads", std::vector<int64_t>{0, 0, 5, 0});
  CHECK_THAT(error_of("AveragePool", dil, {x}),
             Catch::Contains("pads [0, 0, 5, 0] must each be smaller than the dilated kernel [5, "
                             "3] (a window would lie entirely in padding)"));
  CHECK_THAT(error_of("MaxPool", k3, {x}, 2),
             Catch::Contains("the Indices output is not supported (only Y), got 2 outputs"));
  CHECK_THAT(
      error_of("MaxPool", k3, {rnd({2, 5, 5}, 2)}),
      Catch::Contains(
          "input X float32[2, 5, 5] is not supported: only the 2-D operation on a 4-D NCHW input"));
  Tensor ints = test::random_tensor(TensorDesc{DType::kI64, {1, 2, 5, 5}}, 1, 0, 9);
  CHECK_THAT(error_of("MaxPool", k3, {ints}),
             Catch::Contains("input X must be float32, got int64[1, 2, 5, 5]"));
}

TEST_CASE("Conv and pool cost hints", "[ops][conv][pool]") {
  const ops::Registry& reg = ops::Registry::get();
  // Grouped conv: each output does C/group * kH * kW multiply-adds, plus one bias add.
  TensorDesc x{DType::kF32, {1, 4, 5, 5}}, w{DType::kF32, {6, 2, 3, 3}}, b{DType::kF32, {6}},
      y{DType::kF32, {1, 6, 3, 3}};
  graph::Node conv{"Conv", "c", {}, {}, {}};
  conv.attrs.set("group", int64_t{2});
  const TensorDesc* c_in[] = {&x, &w, &b};
  const TensorDesc* c_out[] = {&y};
  ops::CostHint c = reg.cost(conv, c_in, c_out);
  CHECK(c.flops == 54.0 * (2 * 2 * 9) + 54.0);
  CHECK(c.bytes == 4.0 * (100 + 108 + 6 + 54));
  graph::Node pool{"MaxPool", "p", {}, {}, {}};
  pool.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  const TensorDesc* p_in[] = {&x};
  TensorDesc py{DType::kF32, {1, 4, 3, 3}};
  const TensorDesc* p_out[] = {&py};
  c = reg.cost(pool, p_in, p_out);
  CHECK(c.flops == 36.0 * 9);
  CHECK(c.bytes == 4.0 * (100 + 36));
}

TEST_CASE("Conv and pools match ONNX's own backend node tests, unsupported variants are refused",
          "[ops][conv][pool][onnx]") {
  auto cases = test::load_onnx_node_cases(
      {"test_basic_conv_with_padding", "test_basic_conv_without_padding",
       "test_conv_with_strides_and_asymmetric_padding", "test_conv_with_strides_no_padding",
       "test_conv_with_strides_padding", "test_maxpool_2d_default", "test_maxpool_2d_pads",
       "test_maxpool_2d_precomputed_pads", "test_maxpool_2d_precomputed_strides",
       "test_maxpool_2d_strides", "test_averagepool_2d_default", "test_averagepool_2d_pads",
       "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_precomputed_pads",
       "test_averagepool_2d_precomputed_pads_count_include_pad",
       "test_averagepool_2d_precomputed_strides", "test_averagepool_2d_strides",
       "test_maxpool_2d_dilations"});
  if (!cases.is_ok()) {
    WARN("skipped: " << cases.status().message());
    return;
  }
  for (const test::OnnxNodeCase& c : *cases) {
    INFO(c.name);
    REQUIRE(c.outputs.size() == 1);
    for (bool weights_const : {false, true})
      check_every_kernel(c.op, c.attrs, c.inputs, {false, weights_const, weights_const},
                         c.outputs[0], 1e-5);
  }
  // auto_pad, ceil_mode, Indices, 1-D and 3-D: a clean kUnsupported error.
  auto refused = test::load_onnx_node_cases(
      {"test_conv_with_autopad_same", "test_maxpool_2d_same_upper",
       "test_averagepool_2d_same_lower", "test_maxpool_2d_precomputed_same_upper",
       "test_maxpool_2d_ceil", "test_averagepool_2d_ceil",
       "test_maxpool_with_argmax_2d_precomputed_pads", "test_maxpool_1d_default",
       "test_averagepool_3d_default"});
  REQUIRE(refused.is_ok());
  for (const test::OnnxNodeCase& c : *refused) {
    INFO(c.name);
    auto r = test::run_single_op(c.op, c.attrs, c.inputs, static_cast<int>(c.outputs.size()));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kUnsupported);
    CHECK_THAT(r.status().message(), Catch::Contains("not supported"));
  }
}

TEST_CASE(
    "A blocked convolution with weights given every run uses a jit kernel and matches the "
    "definition",
    "[ops][conv][layout]") {
  // A training step's forward conv: nChw16c activations, plain oihw weights that change every
  // run. oneDNN 2.6 has only its reference kernel (~100x slower) for blocked activations beside
  // plain weights, so the weights must be staged (reordered into oneDNN's layout per run):
  // make_conv without allow_ref refuses a reference kernel.
  const int64_t n = 2, c = 16, h = 9, w = 7, oc = 32, k = 3;
  ops::onednn::ConvSpec s;
  s.n = n;
  s.c = c;
  s.h = h;
  s.w = w;
  s.oc = oc;
  s.oh = h;
  s.ow = w;
  s.kh = s.kw = k;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  s.has_bias = true;
  s.src_block = s.dst_block = 16;
  s.staged = true;
  auto prim = ops::onednn::make_conv(s, 1, /*allow_ref=*/false);
  REQUIRE(prim.is_ok());
  CHECK((*prim)->impl_name().rfind("ref", 0) != 0);
  const Tensor x = rnd({n, c, h, w}, 301), wt = rnd({oc, c, k, k}, 302), b = rnd({oc}, 303);
  // nChw16c of X by hand: [n][c/16][h][w][16].
  auto block = [](const float* p, int64_t nn, int64_t cc, int64_t hw, float* q) {
    for (int64_t i = 0; i < nn; ++i)
      for (int64_t ch = 0; ch < cc; ++ch)
        for (int64_t e = 0; e < hw; ++e)
          q[((i * (cc / 16) + ch / 16) * hw + e) * 16 + ch % 16] = p[(i * cc + ch) * hw + e];
  };
  std::vector<float> xb(x.numel()), yb(n * oc * h * w, -7.0f);
  block(x.data_as<float>(), n, c, h * w, xb.data());
  std::vector<char> scratch((*prim)->scratch_bytes() + 1);
  for (int rep = 0; rep < 2; ++rep) {  // the second run re-stages the same weights
    REQUIRE((*prim)->execute(xb.data(), wt.data_as<float>(), b.data_as<float>(), yb.data(),
                             scratch.data(), 1, scratch.size()));
  }
  Window2d win;
  win.pads = {1, 1, 1, 1};
  const Tensor want = test::conv2d_ref(x, wt, &b, win, 1);
  Tensor want_b(TensorDesc{DType::kF32, {static_cast<int64_t>(yb.size())}});
  block(want.data_as<float>(), n, oc, h * w, want_b.data_as<float>());
  double worst = 0;
  for (size_t i = 0; i < yb.size(); ++i)
    worst = std::max(worst, std::fabs(double(yb[i]) - want_b.data_as<float>()[i]));
  CHECK(worst <= 1e-4);
}

TEST_CASE(
    "A plain-layout convolution with constant weights computed in oneDNN's layouts (staged) "
    "matches the definition, and so does the primitive make_fastest_plain_conv chooses",
    "[ops][conv][layout]") {
  // Shapes the blocked_layout pass leaves plain (channel counts that are no multiple of 8):
  // ShuffleNet's 3 -> 116 stride-2 stem, a 58-channel depthwise conv and a 58 -> 58 1x1.
  struct Shape2 {
    int64_t c, h, oc, k, stride, group;
  };
  for (const Shape2 sh :
       {Shape2{3, 20, 116, 3, 2, 1}, Shape2{58, 12, 58, 3, 1, 58}, Shape2{58, 12, 58, 1, 1, 1}}) {
    INFO("c " << sh.c << " oc " << sh.oc << " k " << sh.k << " group " << sh.group);
    ops::onednn::ConvSpec s;
    s.n = 2;
    s.c = sh.c;
    s.h = s.w = sh.h;
    s.oc = sh.oc;
    s.kh = s.kw = sh.k;
    s.stride_h = s.stride_w = sh.stride;
    s.group = sh.group;
    const int64_t pad = sh.k / 2;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
    s.oh = s.ow = (sh.h + 2 * pad - sh.k) / sh.stride + 1;
    s.has_bias = true;
    s.post.kind = ops::ConvActivation::kClip;
    s.post.alpha = 0.0f;
    s.post.beta = 0.5f;
    const Tensor x = rnd({s.n, s.c, s.h, s.w}, 401),
                 wt = rnd({s.oc, s.c / s.group, s.kh, s.kw}, 402), b = rnd({s.oc}, 403);
    s.const_weights = wt.data_as<float>();
    Window2d win;
    win.pads = {pad, pad, pad, pad};
    win.strides = {sh.stride, sh.stride};
    Tensor want = test::conv2d_ref(x, wt, &b, win, sh.group);
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data_as<float>()[i] = std::min(std::max(want.data_as<float>()[i], 0.0f), 0.5f);
    auto check = [&](const ops::onednn::Primitive& prim) {
      Tensor y(want.desc());
      std::vector<char> scratch(prim.scratch_bytes() + 1);
      for (int rep = 0; rep < 2; ++rep)
        REQUIRE(prim.execute(x.data_as<float>(), wt.data_as<float>(), b.data_as<float>(),
                             y.data_as<float>(), scratch.data(), 1, scratch.size()));
      CHECK(test::max_rel_error(y, want) <= 1e-5);
    };
    ops::onednn::ConvSpec staged = s;
    staged.staged = true;
    auto prim = ops::onednn::make_conv(staged, 1, /*allow_ref=*/false);
    REQUIRE(prim.is_ok());
    INFO((*prim)->impl_name());
    check(**prim);
    auto chosen = ops::make_fastest_plain_conv(s, 1, true);
    REQUIRE(chosen.is_ok());
    check(**chosen);
  }
}

TEST_CASE(
    "Convs of 1x1 images (squeeze-excitation) run as GEMVs, plain and blocked, padded lanes 0",
    "[ops][conv]") {
  // conv_1x1_pixel: Y[n] = act(W X[n] + B + Z[n]) through gemv_rows, 64-channel panels (M = 70:
  // a full and a partial panel), batches over the 4-row calls (N = 6), against the definition.
  const int64_t c = 37, m = 70;
  for (int64_t n : {1, 6}) {
    for (const std::string act : {"Relu", "Swish", "Sigmoid"}) {
      INFO("N " << n << " act " << act);
      Tensor x = rnd({n, c, 1, 1}, 200 + n), w = rnd({m, c, 1, 1}, 210), b = rnd({m}, 211);
      Tensor ref = test::conv2d_ref(x, w, &b, Window2d{}, 1);
      Tensor z = rnd(ref.desc().shape, 212);
      for (int64_t i = 0; i < ref.numel(); ++i) {
        double r = double{ref.data_as<float>()[i]} + z.data_as<float>()[i];
        r = act == "Relu"    ? std::max(r, 0.0)
            : act == "Swish" ? r / (1 + std::exp(-r))
                             : 1 / (1 + std::exp(-r));
        ref.data_as<float>()[i] = static_cast<float>(r);
      }
      graph::Attributes attrs;
      attrs.set("activation", act);
      auto names = check_every_kernel("FusedConv", attrs, {x, w, b, z}, {false, true, true, false},
                                      ref, tolerance(c));
      CHECK(names == std::vector<std::string>{"conv_1x1_pixel", "conv_onednn", "conv_ref"});

      // Blocked (nChw16c, 3 and 5 blocks): the same numbers, padding lanes written as zeros
      // (a Sigmoid would make them 0.5), the input's padding lanes not read (set to NaN here).
      auto blocked = [&](const Tensor& t, int64_t ch, float pad) {
        const int64_t cb = (ch + 15) / 16;
        Tensor o(TensorDesc{DType::kF32, {n, cb, 1, 1, 16}});
        for (int64_t i = 0; i < n; ++i)
          for (int64_t k = 0; k < cb * 16; ++k)
            o.data_as<float>()[i * cb * 16 + k] = k < ch ? t.data_as<float>()[i * ch + k] : pad;
        return o;
      };
      graph::Attributes battrs = attrs;
      battrs.set("block", int64_t{16});
      const float nan = std::numeric_limits<float>::quiet_NaN();
      auto runs = test::run_every_kernel("BlockedConv", battrs,
                                         {blocked(x, c, nan), w, b, blocked(z, m, 0.0f)}, 2,
                                         {false, true, true, false});
      REQUIRE(runs.is_ok());
      REQUIRE(runs->front().accepted);
      CHECK(runs->front().kernel == "conv_1x1_pixel");
      CHECK(test::max_rel_error(runs->front().outputs[0], blocked(ref, m, 0.0f)) <= tolerance(c));
    }
  }
}

// BlockedConvDw (graph/passes/conv_fusion.h fuse_conv_depthwise): a 1x1 conv + ReLU6 and a 3x3
// depthwise conv + Relu in one oneDNN primitive, against the naive convolutions; malformed
// nodes are errors that name the field; weights given at run time are refused.
TEST_CASE("BlockedConvDw: 1x1 + depthwise conv as one primitive, checked inputs", "[ops][conv]") {
  const int64_t n = 2, c = 16, m = 48, hw = 10;
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {n, c, hw, hw}}, 81);
  const Tensor w = test::random_tensor(TensorDesc{DType::kF32, {m, c, 1, 1}}, 82, -0.5, 0.5);
  const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {m}}, 83);
  const Tensor wd = test::random_tensor(TensorDesc{DType::kF32, {m, 1, 3, 3}}, 84, -0.5, 0.5);
  const Tensor bd = test::random_tensor(TensorDesc{DType::kF32, {m}}, 85);
  // nChw16c views of plain tensors (C a multiple of 16 here) and back.
  auto to_blocked = [](const Tensor& t) {
    const Shape& s = t.desc().shape;
    Tensor o(TensorDesc{DType::kF32, {s[0], s[1] / 16, s[2], s[3], 16}});
    const int64_t plane = s[2] * s[3];
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t img = i / (s[1] * plane), ch = i / plane % s[1], p = i % plane;
      o.data_as<float>()[((img * (s[1] / 16) + ch / 16) * plane + p) * 16 + ch % 16] =
          t.data_as<float>()[i];
    }
    return o;
  };
  for (int64_t stride : {1, 2}) {
    INFO("depthwise stride " << stride);
    graph::Attributes a;
    a.set("block", int64_t{16});
    a.set("activation", std::string("Clip"));
    a.set("activation_params", std::vector<double>{0.0, 6.0});
    a.set("dw_strides", std::vector<int64_t>{stride, stride});
    a.set("dw_activation", std::string("Relu"));
    Window2d pw, dw;
    dw.strides = {stride, stride};
    dw.pads = {1, 1, 1, 1};
    Tensor e = test::conv2d_ref(x, w, &b, pw, 1);
    for (int64_t i = 0; i < e.numel(); ++i)
      e.data_as<float>()[i] = std::min(std::max(e.data_as<float>()[i], 0.0f), 6.0f);
    Tensor ref = test::conv2d_ref(e, wd, &bd, dw, m);
    for (int64_t i = 0; i < ref.numel(); ++i)
      ref.data_as<float>()[i] = std::max(ref.data_as<float>()[i], 0.0f);
    for (int threads : {1, 2}) {
      auto r = test::run_single_op("BlockedConvDw", a, {to_blocked(x), w, b, wd, bd}, 1, threads,
                                   {false, true, true, true, true});
      REQUIRE(r.is_ok());
      CHECK(r->kernel == "conv_onednn");
      CHECK(test::max_rel_error(r->outputs[0], to_blocked(ref)) < 1e-5);
    }
    // The same weights as run-time inputs: refused by the only kernel.
    auto runtime = test::run_single_op("BlockedConvDw", a, {to_blocked(x), w, b, wd, bd}, 1, 1,
                                       {false, true, true, false, false});
    REQUIRE_FALSE(runtime.is_ok());
    CHECK_THAT(runtime.status().message(), Catch::Contains("given at run time"));
  }
  graph::Attributes a;
  a.set("block", int64_t{16});
  const Tensor xb = to_blocked(x);
  const Tensor wd5 = test::random_tensor(TensorDesc{DType::kF32, {m, 1, 5, 5}}, 86);
  CHECK_THAT(error_of("BlockedConvDw", a, {xb, w, b, wd5, bd}),
             Catch::Contains("input Wdw must be float32[48, 1, 3, 3]"));
  CHECK_THAT(error_of("BlockedConvDw", a, {xb, w, b, wd}),
             Catch::Contains("takes inputs X, W, B, Wdw, Bdw"));
  graph::Attributes bad = a;
  bad.set("dw_strides", std::vector<int64_t>{3, 3});
  CHECK_THAT(error_of("BlockedConvDw", bad, {xb, w, b, wd, bd}),
             Catch::Contains("attribute 'dw_strides' must be [1, 1] or [2, 2]"));
  bad = a;
  bad.set("dw_activation", std::string("Softplus"));
  CHECK_THAT(error_of("BlockedConvDw", bad, {xb, w, b, wd, bd}),
             Catch::Contains("attribute 'dw_activation' = 'Softplus' is not supported"));
  const Tensor w3 = test::random_tensor(TensorDesc{DType::kF32, {m, c, 3, 3}}, 87);
  CHECK_THAT(error_of("BlockedConvDw", a, {xb, w3, b, wd, bd}),
             Catch::Contains("fuses a 1x1 convolution"));
}

// BlockedConvScaled (graph/passes/conv_fusion.h fuse_conv_input_scale): a 1x1 conv of X whose
// input channels a run-time S scales per image (W * S from the packed weights each run, one
// primitive call per image), with bias, a residual Z and Relu, 40 input and 24 output channels
// (padded blocks on both sides of the weights), batch 1 and 2, strides 1 and 2, S blocked or
// plain; against the naive conv of the scaled X. Malformed nodes name the field; weights given
// at run time are refused.
TEST_CASE("BlockedConvScaled: a 1x1 conv of channel-scaled X, checked inputs", "[ops][conv]") {
  const int64_t c = 40, m = 24, hw = 9;
  // nChw16c with the padding lanes of a partial block set to `pad`.
  auto to_blocked = [](const Tensor& t, float pad) {
    const Shape& d = t.desc().shape;
    const int64_t cb = (d[1] + 15) / 16, plane = d[2] * d[3];
    Tensor o(TensorDesc{DType::kF32, {d[0], cb, d[2], d[3], 16}});
    for (int64_t img = 0; img < d[0]; ++img)
      for (int64_t ch = 0; ch < cb * 16; ++ch)
        for (int64_t p = 0; p < plane; ++p)
          o.data_as<float>()[((img * cb + ch / 16) * plane + p) * 16 + ch % 16] =
              ch < d[1] ? t.data_as<float>()[(img * d[1] + ch) * plane + p] : pad;
    return o;
  };
  const Tensor w = test::random_tensor(TensorDesc{DType::kF32, {m, c, 1, 1}}, 92, -0.5, 0.5);
  const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {m}}, 93);
  for (int64_t n : {1, 2}) {
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {n, c, hw, hw}}, 91 + n);
    const Tensor s = test::random_tensor(TensorDesc{DType::kF32, {n, c, 1, 1}}, 94 + n, 0.0, 1.0);
    Tensor xs = x;
    for (int64_t i = 0; i < xs.numel(); ++i)
      xs.data_as<float>()[i] = x.data_as<float>()[i] * s.data_as<float>()[i / (hw * hw)];
    const Tensor sb = to_blocked(s, std::numeric_limits<float>::quiet_NaN());
    for (int64_t stride : {1, 2}) {
      Window2d win;
      win.strides = {stride, stride};
      Tensor ref = test::conv2d_ref(xs, w, &b, win, 1);
      const Tensor z = test::random_tensor(ref.desc(), 95);
      for (int64_t i = 0; i < ref.numel(); ++i)
        ref.data_as<float>()[i] = std::max(ref.data_as<float>()[i] + z.data_as<float>()[i], 0.0f);
      graph::Attributes a;
      a.set("block", int64_t{16});
      a.set("activation", std::string("Relu"));
      a.set("strides", std::vector<int64_t>{stride, stride});
      for (bool blocked_s : {true, false})
        for (int threads : {1, 2}) {
          INFO("batch " << n << ", stride " << stride << ", S " << (blocked_s ? "blocked" : "plain")
                        << ", threads " << threads);
          auto r = test::run_single_op(
              "BlockedConvScaled", a,
              {to_blocked(x, 0.0f), w, b, to_blocked(z, 0.0f), blocked_s ? sb : s}, 1, threads,
              {false, true, true, false, false});
          REQUIRE(r.is_ok());
          CHECK(r->kernel == "conv_onednn");
          CHECK(test::max_rel_error(r->outputs[0], to_blocked(ref, 0.0f)) < 1e-5);
        }
      auto runtime = test::run_single_op("BlockedConvScaled", a,
                                         {to_blocked(x, 0.0f), w, b, to_blocked(z, 0.0f), sb}, 1, 1,
                                         {false, false, true, false, false});
      REQUIRE_FALSE(runtime.is_ok());
      CHECK_THAT(runtime.status().message(), Catch::Contains("given at run time"));
    }
  }
  graph::Attributes a;
  a.set("block", int64_t{16});
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, c, hw, hw}}, 97);
  const Tensor xb = to_blocked(x, 0.0f);
  const Tensor zb = to_blocked(test::random_tensor(TensorDesc{DType::kF32, {1, m, hw, hw}}, 98), 0);
  const Tensor sb = to_blocked(test::random_tensor(TensorDesc{DType::kF32, {1, c, 1, 1}}, 99), 0);
  CHECK_THAT(
      error_of("BlockedConvScaled", a, {xb, w, b}),
      Catch::Contains("takes inputs X, W and an optional B, Z and the input-channel scale S"));
  const Tensor s39 = test::random_tensor(TensorDesc{DType::kF32, {1, 39, 1, 1}}, 96);
  CHECK_THAT(error_of("BlockedConvScaled", a, {xb, w, b, zb, s39}),
             Catch::Contains("input S must be float32[1, 40, 1, 1]"));
  const Tensor w3 = test::random_tensor(TensorDesc{DType::kF32, {m, c, 3, 3}}, 100);
  graph::Attributes pad1 = a;
  pad1.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  CHECK_THAT(
      error_of("BlockedConvScaled", pad1, {xb, w3, b, zb, sb}),
      Catch::Contains("scales the weights of a 1x1 convolution (group 1), got kernel [3, 3]"));
}
