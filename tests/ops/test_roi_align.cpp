// RoiAlign (ops/roi_align.cpp) against a reference written here from ONNX's definition (in
// double, one output bin at a time: the bin's sample grid, bilinear weights of the four
// neighbours, avg of the interpolated values or max of the weighted corners), for both
// coordinate transformation modes, both modes, fixed and adaptive sampling, boxes partly or
// wholly outside the image, spatial_scale, int64 and int32 batch indices, teams of 1 and 3
// threads; a batch index out of range fails the run; its errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

struct Opts {
  bool half_pixel = true, max = false;
  int64_t oh = 2, ow = 3, sampling = 0;
  double scale = 1.0;
};

Tensor roi_align_ref(const Tensor& x, const Tensor& rois, const std::vector<int64_t>& idx,
                     const Opts& o) {
  const int64_t c_ = x.shape()[1], h = x.shape()[2], w = x.shape()[3], r_ = rois.shape()[0];
  Tensor y(TensorDesc{DType::kF32, {r_, c_, o.oh, o.ow}});
  for (int64_t r = 0; r < r_; ++r) {
    const float* b = rois.data_as<float>() + r * 4;
    const double off = o.half_pixel ? 0.5 : 0.0;
    const double x0 = b[0] * o.scale - off, y0 = b[1] * o.scale - off;
    double rw = b[2] * o.scale - off - x0, rh = b[3] * o.scale - off - y0;
    if (!o.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / double(o.oh), bw = rw / double(o.ow);
    const int64_t gh = o.sampling > 0 ? o.sampling : int64_t(std::ceil(bh));
    const int64_t gw = o.sampling > 0 ? o.sampling : int64_t(std::ceil(bw));
    for (int64_t c = 0; c < c_; ++c) {
      const float* img = x.data_as<float>() + (idx[size_t(r)] * c_ + c) * h * w;
      auto at = [&](int64_t yy, int64_t xx) { return double(img[yy * w + xx]); };
      for (int64_t ph = 0; ph < o.oh; ++ph)
        for (int64_t pw = 0; pw < o.ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double sy = y0 + ph * bh + (iy + 0.5) * bh / double(gh);
              double sx = x0 + pw * bw + (ix + 0.5) * bw / double(gw);
              double v = 0;
              if (sy >= -1 && sy <= h && sx >= -1 && sx <= w) {
                sy = std::max(sy, 0.0);
                sx = std::max(sx, 0.0);
                int64_t y1 = int64_t(sy), x1 = int64_t(sx), y2 = y1 + 1, x2 = x1 + 1;
                if (y1 >= h - 1) sy = double(y1 = y2 = h - 1);
                if (x1 >= w - 1) sx = double(x1 = x2 = w - 1);
                const double ly = sy - y1, lx = sx - x1;
                const double c1 = (1 - ly) * (1 - lx) * at(y1, x1), c2 = (1 - ly) * lx * at(y1, x2);
                const double c3 = ly * (1 - lx) * at(y2, x1), c4 = ly * lx * at(y2, x2);
                v = o.max ? std::max({c1, c2, c3, c4}) : c1 + c2 + c3 + c4;
              }
              acc = o.max ? (first ? v : std::max(acc, v)) : acc + v;
              first = false;
            }
          if (!o.max) acc /= double(std::max<int64_t>(gh * gw, 1));
          y.data_as<float>()[((r * c_ + c) * o.oh + ph) * o.ow + pw] = float(acc);
        }
    }
  }
  return y;
}

graph::Attributes attrs(const Opts& o) {
  graph::Attributes a;
  a.set("coordinate_transformation_mode",
        std::string(o.half_pixel ? "half_pixel" : "output_half_pixel"));
  a.set("mode", std::string(o.max ? "max" : "avg"));
  a.set("output_height", o.oh);
  a.set("output_width", o.ow);
  a.set("sampling_ratio", o.sampling);
  a.set("spatial_scale", o.scale);
  return a;
}

Tensor boxes(std::vector<float> v) {
  Tensor t(TensorDesc{DType::kF32, {static_cast<int64_t>(v.size() / 4), 4}});
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

template <typename T>
Tensor indices(const std::vector<int64_t>& v) {
  Tensor t(
      TensorDesc{sizeof(T) == 8 ? DType::kI64 : DType::kI32, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) t.data_as<T>()[i] = static_cast<T>(v[i]);
  return t;
}

}  // namespace

TEST_CASE("RoiAlign matches the ONNX definition in every mode", "[ops][roi_align]") {
  const Tensor x = test::random_tensor({DType::kF32, {2, 3, 9, 11}}, 17, -2, 2);
  // Inside, fractional, partly outside, wholly outside, degenerate (x2 < x1), a sliver.
  const Tensor rois =
      boxes({1.0f, 1.5f, 7.3f, 6.0f, 0.2f, 0.0f, 3.9f, 8.9f, -3.0f, 5.0f, 14.0f, 12.0f,
             20.f, 20.f, 25.f, 26.f, 5.0f, 5.0f, 4.0f, 3.0f, 2.0f,  3.0f, 2.2f,  7.0f});
  const std::vector<int64_t> idx = {0, 1, 1, 0, 1, 0};
  for (bool half : {true, false})
    for (bool max : {false, true})
      for (int64_t sampling : {0, 2})
        for (double scale : {1.0, 0.5}) {
          Opts o{half, max, 3, 2, sampling, scale};
          const Tensor want = roi_align_ref(x, rois, idx, o);
          for (int threads : {1, 3}) {
            INFO((half ? "half_pixel" : "output_half_pixel")
                 << (max ? " max" : " avg") << " sampling_ratio " << sampling << " scale " << scale
                 << ", " << threads << " threads");
            auto r =
                run_single_op("RoiAlign", attrs(o), {x, rois, indices<int64_t>(idx)}, 1, threads);
            if (!r.is_ok()) FAIL(r.status().message());
            REQUIRE(r->outputs[0].desc() == want.desc());
            const float* got = r->outputs[0].data_as<float>();
            double worst = 0;
            for (int64_t i = 0; i < want.numel(); ++i)
              worst = std::max(worst, double(std::abs(got[i] - want.data_as<float>()[i])));
            CHECK(worst < 1e-5);  // values up to ~2: float32 coordinates vs double
          }
        }
  // int32 batch indices, defaults (avg, half_pixel, 1x1 output, adaptive sampling).
  auto r = run_single_op("RoiAlign", {}, {x, rois, indices<int32_t>(idx)});
  if (!r.is_ok()) FAIL(r.status().message());
  CHECK(r->kernel == "roi_align_avg_f32");
  CHECK(test::max_rel_error(r->outputs[0], roi_align_ref(x, rois, idx, Opts{true, false, 1, 1})) <
        1e-5);
}

TEST_CASE("RoiAlign: a batch index out of range fails the run, bad nodes are refused",
          "[ops][roi_align]") {
  const Tensor x = test::random_tensor({DType::kF32, {2, 3, 6, 6}}, 1);
  const Tensor rois = boxes({0, 0, 3, 3, 1, 1, 4, 4});
  {
    // Through the engine, which reports a kernel's run-time failure as the node's error.
    graph::GraphBuilder b("roi.test");
    b.add_input("x", x.desc());
    b.add_input("rois", rois.desc());
    b.add_input("idx", TensorDesc{DType::kI64, {2}});
    b.add_node("RoiAlign", "roi", {"x", "rois", "idx"}, {"y"}, {});
    b.add_output("y");
    auto g = b.finish(ops::Registry::get());
    REQUIRE(g.is_ok());
    engine::SessionOptions o;
    o.pin = false;
    auto s = engine::Session::create(std::make_shared<const graph::Graph>(std::move(*g)), o);
    REQUIRE(s.is_ok());
    auto run = [&](int64_t second) {
      return (*s)->run({{"x", x}, {"rois", rois}, {"idx", indices<int64_t>({0, second})}});
    };
    CHECK(run(1).is_ok());
    auto bad = run(2);
    REQUIRE_FALSE(bad.is_ok());
    CHECK_THAT(bad.status().message(), Catch::Contains("node 'roi'") &&
                                           Catch::Contains("batch_indices[1] = 2 is out of range"));
  }
  auto err = [](const Result<test::OpRun>& r) {
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  graph::Attributes a;
  a.set("mode", std::string("sum"));
  CHECK_THAT(err(run_single_op("RoiAlign", a, {x, rois, indices<int64_t>({0, 1})})),
             Catch::Contains("attribute 'mode' = 'sum'"));
  graph::Attributes b;
  b.set("coordinate_transformation_mode", std::string("asymmetric"));
  CHECK_THAT(err(run_single_op("RoiAlign", b, {x, rois, indices<int64_t>({0, 1})})),
             Catch::Contains("coordinate_transformation_mode' = 'asymmetric'"));
  graph::Attributes c;
  c.set("output_height", int64_t{0});
  CHECK_THAT(err(run_single_op("RoiAlign", c, {x, rois, indices<int64_t>({0, 1})})),
             Catch::Contains("must be >= 1"));
  CHECK_THAT(err(run_single_op("RoiAlign", {}, {x, rois, indices<int64_t>({0})})),
             Catch::Contains("input 2 (batch_indices)"));
  CHECK_THAT(
      err(run_single_op("RoiAlign", {},
                        {x, Tensor(TensorDesc{DType::kF32, {2, 5}}), indices<int64_t>({0, 1})})),
      Catch::Contains("input 1 (rois)"));
  CHECK_THAT(err(run_single_op(
                 "RoiAlign", {},
                 {Tensor(TensorDesc{DType::kF32, {2, 3, 6}}), rois, indices<int64_t>({0, 1})})),
             Catch::Contains("input 0 (X)"));
}
