// models::build_phased_lstm (graphi model phased-lstm): the stacked graph through an engine
// Session against the naive reference (tests/support/reference_phased_lstm.h) applied layer by
// layer with the graph's own constants; spec errors.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "engine/session.h"
#include "models/phased_lstm.h"
#include "ops/registry.h"
#include "tests/support/reference_phased_lstm.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

const Tensor& constant(const graph::Graph& g, const std::string& name) {
  auto id = g.find_value(name);
  REQUIRE(id.has_value());
  REQUIRE(g.value(*id).data != nullptr);
  return *g.value(*id).data;
}

// Rows [l, l+1) of a [L, B, H] tensor as [1, B, H].
Tensor layer_slice(const Tensor& t, int64_t l) {
  const int64_t B = t.shape()[1], H = t.shape()[2];
  Tensor out(TensorDesc{DType::kF32, {1, B, H}});
  std::copy_n(t.data_as<float>() + l * B * H, B * H, out.data_as<float>());
  return out;
}

}  // namespace

TEST_CASE("phased lstm model: stacked graph vs reference layer by layer", "[phased_lstm_model]") {
  models::RnnSpec spec;
  spec.input = 5;
  spec.hidden = 20;
  spec.layers = 3;
  spec.batch = 3;
  spec.seq = 6;
  spec.seed = 4;
  auto g = models::build_phased_lstm(spec, ops::Registry::get());
  INFO((g.is_ok() ? std::string("ok") : g.status().message()));
  REQUIRE(g.is_ok());
  const int64_t T = spec.seq, B = spec.batch, H = spec.hidden, L = spec.layers;
  Tensor x = test::random_tensor({DType::kF32, {T, B, spec.input}}, 1);
  Tensor times(TensorDesc{DType::kF32, {T, B}});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      times.data_as<float>()[t * B + b] = 0.7f * static_cast<float>(t) + 0.3f * b;
  Tensor h0 = test::random_tensor({DType::kF32, {L, B, H}}, 2, -0.5, 0.5);
  Tensor c0 = test::random_tensor({DType::kF32, {L, B, H}}, 3, -0.5, 0.5);

  // Reference: layer l reads layer l-1's Y reshaped to [T, B, H].
  Tensor layer_in = x;
  std::vector<Tensor> yh, yc;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "l" + std::to_string(l);
    test::PhasedLstmRefSpec rs;
    rs.hidden = H;
    const Tensor h0l = layer_slice(h0, l), c0l = layer_slice(c0, l);
    test::PhasedLstmRefInputs in;
    in.x = &layer_in;
    in.w = &constant(*g, p + "/W");
    in.r = &constant(*g, p + "/R");
    in.b = &constant(*g, p + "/B");
    in.initial_h = &h0l;
    in.initial_c = &c0l;
    in.times = &times;
    in.tau = &constant(*g, p + "/tau");
    in.shift = &constant(*g, p + "/shift");
    in.r_on = &constant(*g, p + "/r_on");
    std::vector<Tensor> out = test::reference_phased_lstm(rs, in);
    Tensor next(TensorDesc{DType::kF32, {T, B, H}});
    std::copy_n(out[0].data_as<float>(), T * B * H, next.data_as<float>());
    layer_in = std::move(next);
    yh.push_back(std::move(out[1]));
    yc.push_back(std::move(out[2]));
  }
  Tensor want_h(TensorDesc{DType::kF32, {L, B, H}}), want_c(want_h.desc());
  for (int64_t l = 0; l < L; ++l) {
    std::copy_n(yh[l].data_as<float>(), B * H, want_h.data_as<float>() + l * B * H);
    std::copy_n(yc[l].data_as<float>(), B * H, want_c.data_as<float>() + l * B * H);
  }

  auto graph = std::make_shared<const graph::Graph>(std::move(*g));
  for (int threads : {1, 2}) {
    engine::SessionOptions so;
    so.threads = threads;
    so.pin = false;
    auto session = engine::Session::create(graph, so);
    REQUIRE(session.is_ok());
    auto out = (*session)->run({{"x", x}, {"times", times}, {"h0", h0}, {"c0", c0}});
    INFO("threads " << threads << " "
                    << (out.is_ok() ? std::string("ok") : out.status().message()));
    REQUIRE(out.is_ok());
    REQUIRE(out->size() == 3);
    CHECK((*out)[0].first == "y");
    CHECK(test::max_rel_error((*out)[0].second, layer_in) <= 1e-4);
    CHECK(test::max_rel_error((*out)[1].second, want_h) <= 1e-4);
    CHECK(test::max_rel_error((*out)[2].second, want_c) <= 1e-4);
  }
}

TEST_CASE("phased lstm model: parameter count and spec errors", "[phased_lstm_model]") {
  models::RnnSpec spec;
  spec.input = 5;
  spec.hidden = 20;
  spec.layers = 1;
  spec.seq = 2;
  auto g = models::build_phased_lstm(spec, ops::Registry::get());
  REQUIRE(g.is_ok());
  int64_t params = 0;
  for (const graph::Value& v : g->values())
    if (v.data && v.desc.dtype == DType::kF32) params += v.desc.numel();
  CHECK(params == models::phased_lstm_parameter_count(spec));
  spec.hidden = 0;
  auto bad = models::build_phased_lstm(spec, ops::Registry::get());
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("phased-lstm: hidden"));
}
