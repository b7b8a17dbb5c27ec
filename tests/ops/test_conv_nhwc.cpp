// Blocked convolutions computed in NHWC by oneDNN's brgemm kernels (ConvAlgorithm::kChannelsLast,
// ops/conv_algorithm.h): src and dst reordered through scratch, Z (a residual) added by a sum
// post-op on the staged dst, before or after the activation, also when dst and Z share a
// buffer; and the measured choice. Each output against conv2d_ref (the naive convolution) plus
// the residual and the ReLU computed here. On a CPU without AVX-512 (no brgemm kernel) the NHWC
// cases are skipped with a warning.
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "ops/conv_algorithm.h"
#include "ops/onednn.h"
#include "tests/support/reference_gemm_conv.h"
#include "tests/support/test_util.h"

using namespace graphi;
using ops::onednn::ConvAlgorithm;
using ops::onednn::ConvSpec;

namespace {

// [c][hw] (one image) <-> nChw16c [c/16][hw][16].
std::vector<float> to_blocked(const float* p, int64_t c, int64_t hw) {
  std::vector<float> q(static_cast<size_t>(c * hw));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t e = 0; e < hw; ++e) q[((ch / 16) * hw + e) * 16 + ch % 16] = p[ch * hw + e];
  return q;
}
std::vector<float> from_blocked(const std::vector<float>& q, int64_t c, int64_t hw) {
  std::vector<float> p(q.size());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t e = 0; e < hw; ++e) p[ch * hw + e] = q[((ch / 16) * hw + e) * 16 + ch % 16];
  return p;
}

struct Case {
  const char* name;
  int64_t c = 32, oc = 48, hw = 13, k = 3, stride = 2;
  bool relu = true;
  bool z = false, z_after_relu = false, in_place = false;
};

ConvSpec spec_of(const Case& k, const float* w) {
  ConvSpec s;
  s.n = 1;
  s.c = k.c;
  s.h = s.w = k.hw;
  s.oc = k.oc;
  s.kh = s.kw = k.k;
  s.stride_h = s.stride_w = k.stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = k.k / 2;
  s.oh = s.ow = (k.hw + 2 * (k.k / 2) - k.k) / k.stride + 1;
  s.has_bias = true;
  s.src_block = s.dst_block = 16;
  s.const_weights = w;
  if (k.relu) s.post.kind = ops::ConvActivation::kRelu;
  s.sum_input = k.z;
  s.sum_after_post = k.z_after_relu;
  return s;
}

// The primitive's output (plain [oc][oh][ow]) for x, w, b, z, run twice.
std::vector<float> run(const ops::onednn::Primitive& prim, const ConvSpec& s, const Tensor& x,
                       const Tensor& w, const Tensor& b, const Tensor& z, bool in_place) {
  const int64_t ohw = s.oh * s.ow;
  const std::vector<float> src = to_blocked(x.data_as<float>(), s.c, s.h * s.w);
  const std::vector<float> zb = to_blocked(z.data_as<float>(), s.oc, ohw);
  const size_t bytes = prim.scratch_bytes() + 64;
  Tensor scratch(TensorDesc{DType::kF32, {static_cast<int64_t>(bytes / 4)}});
  std::vector<float> dst(zb.size(), -7.0f);
  for (int rep = 0; rep < 2; ++rep) {
    if (in_place) dst = zb;  // dst is Z's buffer (an in-place residual)
    REQUIRE(prim.execute(src.data(), w.data_as<float>(), b.data_as<float>(), dst.data(),
                         scratch.data(), prim.team_size(), bytes,
                         s.sum_input ? (in_place ? dst.data() : zb.data()) : nullptr));
  }
  return from_blocked(dst, s.oc, ohw);
}

std::vector<float> reference(const Case& k, const ConvSpec& s, const Tensor& x, const Tensor& w,
                             const Tensor& b, const Tensor& z) {
  test::Window2d win;
  win.strides = {k.stride, k.stride};
  win.pads = {k.k / 2, k.k / 2, k.k / 2, k.k / 2};
  const Tensor y = test::conv2d_ref(x, w, &b, win, 1);
  REQUIRE(y.numel() == s.oc * s.oh * s.ow);
  std::vector<float> out(y.data_as<float>(), y.data_as<float>() + y.numel());
  for (size_t i = 0; i < out.size(); ++i) {
    const float zi = k.z ? z.data_as<float>()[i] : 0.0f;
    if (!k.z_after_relu) out[i] += zi;
    if (k.relu) out[i] = std::max(out[i], 0.0f);
    if (k.z_after_relu) out[i] += zi;
  }
  return out;
}

double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  return err / std::max(scale, 1e-30);
}

}  // namespace

TEST_CASE("NHWC convolutions of blocked activations match the definition", "[ops][conv][nhwc]") {
  std::vector<Case> cases;
  cases.push_back({"3x3 stride 2, ReLU"});
  cases.push_back({"3x3 stride 1, no activation"});
  cases.back().stride = 1;
  cases.back().relu = false;
  cases.push_back({"Z before the ReLU"});
  cases.back().z = true;
  cases.push_back({"Z after the ReLU"});
  cases.back().z = cases.back().z_after_relu = true;
  cases.push_back({"Z before the ReLU, dst is Z's buffer"});
  cases.back().z = cases.back().in_place = true;
  cases.push_back({"Z after the ReLU, dst is Z's buffer, 5x5"});
  cases.back().z = cases.back().z_after_relu = cases.back().in_place = true;
  cases.back().k = 5;
  uint64_t seed = 70;
  for (const Case& k : cases) {
    for (int team : {1, 2}) {
      INFO(k.name << ", team " << team);
      const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, k.c, k.hw, k.hw}}, ++seed);
      const Tensor w =
          test::random_tensor(TensorDesc{DType::kF32, {k.oc, k.c, k.k, k.k}}, ++seed, -0.3, 0.3);
      const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {k.oc}}, ++seed);
      ConvSpec s = spec_of(k, w.data_as<float>());
      const Tensor z = test::random_tensor(TensorDesc{DType::kF32, {1, k.oc, s.oh, s.ow}}, ++seed);
      s.algorithm = ConvAlgorithm::kChannelsLast;
      auto prim = ops::onednn::make_conv(s, team, false);
      if (!prim.is_ok()) {
        WARN("skipped, no NHWC brgemm convolution here: " << prim.status().message());
        return;
      }
      CHECK((*prim)->impl_name().find("brg") != std::string::npos);
      CHECK((*prim)->sums_input() == k.z);
      CHECK(rel_error(run(**prim, s, x, w, b, z, k.in_place), reference(k, s, x, w, b, z)) <= 1e-5);
    }
  }
}

TEST_CASE("NHWC is refused where it does not apply", "[ops][conv][nhwc]") {
  const Tensor w = test::random_tensor(TensorDesc{DType::kF32, {16, 16, 3, 3}}, 1);
  ConvSpec s = spec_of(Case{"plain"}, w.data_as<float>());
  s.c = s.oc = 16;
  s.algorithm = ConvAlgorithm::kChannelsLast;
  ConvSpec plain = s;
  plain.src_block = plain.dst_block = 0;  // plain NCHW caller
  CHECK_FALSE(ops::onednn::make_conv(plain, 1, false).is_ok());
  ConvSpec runtime_w = s;
  runtime_w.const_weights = nullptr;  // weights given every run
  CHECK_FALSE(ops::onednn::make_conv(runtime_w, 1, false).is_ok());
  ConvSpec grouped = s;
  grouped.group = 2;
  CHECK_FALSE(ops::onednn::make_conv(grouped, 1, false).is_ok());
}

TEST_CASE("The measured choice with NHWC among the candidates is correct, with Z too",
          "[ops][conv][nhwc]") {
  // Big enough to be measured (>= 2^26 FLOPs): 64 -> 128 channels, 3x3 stride 2 from 56x56
  // (58M multiply-adds); whatever wins, the output is the convolution.
  for (const bool z : {false, true}) {
    Case k{"measured"};
    k.c = 64;
    k.oc = 128;
    k.hw = 56;
    k.z = z;
    INFO("Z " << z);
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, k.c, k.hw, k.hw}}, 5);
    const Tensor w =
        test::random_tensor(TensorDesc{DType::kF32, {k.oc, k.c, k.k, k.k}}, 6, -0.1, 0.1);
    const Tensor b = test::random_tensor(TensorDesc{DType::kF32, {k.oc}}, 7);
    const ConvSpec s = spec_of(k, w.data_as<float>());
    const Tensor z_t = test::random_tensor(TensorDesc{DType::kF32, {1, k.oc, s.oh, s.ow}}, 8);
    auto prim = ops::make_fastest_conv(s, 2, false, ops::onednn::make_conv, "nhwc test conv");
    REQUIRE(prim.is_ok());
    CHECK((*prim)->sums_input() == z);
    CHECK(rel_error(run(**prim, s, x, w, b, z_t, false), reference(k, s, x, w, b, z_t)) <= 1e-5);
  }
}
