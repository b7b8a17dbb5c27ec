// GridSample (ops/grid_sample.cpp) against a naive reference written here from ONNX's definition
// (in double, one output value at a time, dims interpolated one after the other), for every mode
// x padding_mode x align_corners, on 1-, 2- and 3-D inputs, grids reaching past [-1, 1] (and far
// outside), exact ties for nearest's rounding, teams of 1 and 3 threads; and its errors. Cubic
// with border padding pads the taps only (PyTorch's and ONNX Runtime's rule, ops/grid_sample.cpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

struct Ref {
  std::string mode, padding;
  bool align;
  Shape xs;  // [N, C, D1..Dk]
  const float* x;

  int k() const { return static_cast<int>(xs.size()) - 2; }
  double lo() const { return align ? 0.0 : -0.5; }
  double hi(int64_t len) const { return align ? double(len - 1) : double(len) - 0.5; }

  // Mirrored at both borders: periodic with period 2 (hi - lo), a triangle wave (a length-1
  // dim with align_corners: 0).
  static double mirror(double v, double lo, double hi) {
    if (hi <= lo) return lo;
    if (v >= lo && v <= hi) return v;
    const double r = hi - lo;
    double t = std::fmod(v - lo, 2 * r);
    if (t < 0) t += 2 * r;
    return t <= r ? lo + t : lo + 2 * r - t;
  }

  // The value at integer position idx of plane (n, c), with the padding rule per index.
  double pixel(int64_t plane, const std::vector<int64_t>& idx) const {
    int64_t off = 0;
    for (int d = 0; d < k(); ++d) {
      const int64_t len = xs[static_cast<size_t>(2 + d)];
      int64_t i = idx[static_cast<size_t>(d)];
      if (i < 0 || i >= len) {
        if (padding == "zeros") return 0;
        if (padding == "border")
          i = i < 0 ? 0 : len - 1;
        else
          i = static_cast<int64_t>(mirror(double(i), lo(), hi(len)));
      }
      off = off * len + i;
    }
    int64_t plane_size = 1;
    for (int d = 0; d < k(); ++d) plane_size *= xs[static_cast<size_t>(2 + d)];
    return x[plane * plane_size + off];
  }

  static double cubic(double t) {  // Keys' kernel, A = -0.75
    const double a = -0.75;
    t = std::abs(t);
    if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0;
  }

  // Interpolates dims d.. at coordinates c, the indices of dims < d fixed in idx.
  double interp(int64_t plane, const std::vector<double>& c, std::vector<int64_t>& idx,
                int d) const {
    if (d == k()) return pixel(plane, idx);
    const double v = c[static_cast<size_t>(d)];
    double sum = 0;
    if (mode == "nearest") {
      idx[static_cast<size_t>(d)] = static_cast<int64_t>(v);
      return interp(plane, c, idx, d + 1);
    }
    const double f = std::floor(v);
    const int lo_tap = mode == "cubic" ? -1 : 0, hi_tap = mode == "cubic" ? 2 : 1;
    for (int j = lo_tap; j <= hi_tap; ++j) {
      const double dist = v - (f + j);
      const double w = mode == "cubic" ? cubic(dist) : 1 - std::abs(dist);
      idx[static_cast<size_t>(d)] = static_cast<int64_t>(f) + j;
      sum += w * interp(plane, c, idx, d + 1);
    }
    return sum;
  }

  // Output value at (n, c) for grid point g (x first).
  double at(int64_t n, int64_t ch, const float* g) const {
    std::vector<double> c(static_cast<size_t>(k()));
    for (int d = 0; d < k(); ++d) {
      const int64_t len = xs[static_cast<size_t>(2 + d)];
      const double gv = g[k() - 1 - d];
      if (!std::isfinite(gv)) return 0;
      double v = align ? (gv + 1) / 2 * double(len - 1) : ((gv + 1) * double(len) - 1) / 2;
      if (mode == "nearest") v = std::nearbyint(v);  // half to even
      if (v < lo() || v > hi(len)) {
        // Cubic with border pads the taps only (PyTorch's and ONNX Runtime's bicubic).
        if (padding == "border" && mode != "cubic") v = std::min(std::max(v, 0.0), double(len - 1));
        if (padding == "reflection") v = mirror(v, lo(), hi(len));
      }
      if (padding != "reflection") v = std::min(std::max(v, -10.0), double(len) + 10);
      c[static_cast<size_t>(d)] = v;
    }
    std::vector<int64_t> idx(static_cast<size_t>(k()));
    return interp(n * xs[1] + ch, c, idx, 0);
  }
};

Tensor grid_sample_ref(const Tensor& x, const Tensor& grid, const std::string& mode,
                       const std::string& padding, bool align) {
  const Shape& xs = x.desc().shape;
  const Shape& gs = grid.desc().shape;
  Ref r{mode, padding, align, xs, x.data_as<float>()};
  const int k = r.k();
  Shape out = {xs[0], xs[1]};
  int64_t points = 1;
  for (int d = 0; d < k; ++d) {
    out.push_back(gs[static_cast<size_t>(1 + d)]);
    points *= gs[static_cast<size_t>(1 + d)];
  }
  Tensor y(TensorDesc{DType::kF32, out});
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c)
      for (int64_t p = 0; p < points; ++p)
        y.data_as<float>()[(n * xs[1] + c) * points + p] =
            static_cast<float>(r.at(n, c, grid.data_as<float>() + (n * points + p) * k));
  return y;
}

// Random grid values in [-1.7, 1.7], with some exact special values (corners, centre, ties for
// nearest: g = 0 on an even length is a .5 coordinate) and some far outside.
Tensor make_grid(const Shape& s, uint64_t seed) {
  Tensor g = test::random_tensor({DType::kF32, s}, seed, -1.7f, 1.7f);
  const float special[] = {-1.0f, 1.0f, 0.0f, 0.5f, -0.5f, 3.7f, -4.2f, 1.25f, -1.25f, 9.5f};
  float* p = g.data_as<float>();
  for (int64_t i = 0; i < g.desc().numel(); i += 3)
    p[i] = special[static_cast<size_t>(i / 3) % std::size(special)];
  return g;
}

graph::Attributes attrs(const std::string& mode, const std::string& padding, bool align) {
  graph::Attributes a;
  a.set("mode", mode);
  a.set("padding_mode", padding);
  a.set("align_corners", int64_t{align ? 1 : 0});
  return a;
}

void check_all_modes(const Shape& xs, const Shape& gs, uint64_t seed) {
  const Tensor x = test::random_tensor({DType::kF32, xs}, seed, -2, 2);
  const Tensor grid = make_grid(gs, seed + 1);
  for (const std::string mode : {"linear", "nearest", "cubic"})
    for (const std::string padding : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        const Tensor want = grid_sample_ref(x, grid, mode, padding, align);
        for (int threads : {1, 3}) {
          INFO(mode << " " << padding << " align_corners " << align << ", X " << shape_to_string(xs)
                    << ", grid " << shape_to_string(gs) << ", " << threads << " threads");
          auto r = run_single_op("GridSample", attrs(mode, padding, align), {x, grid}, 1, threads);
          if (!r.is_ok()) FAIL(r.status().message());
          REQUIRE(r->outputs[0].desc() == want.desc());
          const float* got = r->outputs[0].data_as<float>();
          double worst = 0;
          for (int64_t i = 0; i < want.desc().numel(); ++i)
            worst = std::max(worst, double(std::abs(got[i] - want.data_as<float>()[i])));
          CHECK(worst < 2e-5);  // values up to ~4 (cubic overshoots): float vs double rounding
        }
      }
}

}  // namespace

TEST_CASE("GridSample 2-D matches the ONNX definition in every mode and padding mode",
          "[ops][grid_sample]") {
  check_all_modes({2, 3, 5, 4}, {2, 3, 6, 2}, 11);
  check_all_modes({1, 2, 4, 6}, {1, 5, 5, 2}, 21);
}

TEST_CASE("GridSample 3-D (volumetric) and 1-D match the ONNX definition", "[ops][grid_sample]") {
  check_all_modes({1, 2, 3, 4, 5}, {1, 2, 3, 4, 3}, 31);
  check_all_modes({2, 2, 5}, {2, 7, 1}, 41);
}

TEST_CASE("GridSample: opset 16's mode names, dims of 1, non-finite and huge grid values",
          "[ops][grid_sample]") {
  const Tensor x = test::random_tensor({DType::kF32, {1, 2, 1, 4}}, 5, -2, 2);
  Tensor grid = make_grid({1, 3, 4, 2}, 6);
  float* g = grid.data_as<float>();
  g[0] = std::numeric_limits<float>::quiet_NaN();
  g[3] = std::numeric_limits<float>::infinity();
  g[4] = 1e30f;
  g[7] = -1e30f;
  for (const std::string padding : {"zeros", "border", "reflection"})
    for (bool align : {false, true})
      for (const auto& [onnx16, mode] :
           {std::pair{"bilinear", "linear"}, {"bicubic", "cubic"}, {"nearest", "nearest"}}) {
        INFO(onnx16 << " " << padding << " align_corners " << align);
        auto r = run_single_op("GridSample", attrs(onnx16, padding, align), {x, grid}, 1, 2);
        if (!r.is_ok()) FAIL(r.status().message());
        const Tensor want = grid_sample_ref(x, grid, mode, padding, align);
        // Y [1, 2, 3, 4]: points 0 and 1 (NaN, inf) sample zeros; points 2 and 3 (+-1e30) any
        // finite value with reflection (the fold of so far a point is rounding), else the
        // edge (border) or zeros.
        const float* got = r->outputs[0].data_as<float>();
        for (int64_t i = 0; i < want.desc().numel(); ++i) {
          const int64_t pt = i % 12;
          INFO("output " << i);
          CHECK(std::isfinite(got[i]));
          if (pt < 2) CHECK(got[i] == 0.0f);
          if (pt >= 4 || padding != "reflection")
            CHECK(std::abs(got[i] - want.data_as<float>()[i]) < 2e-5);
        }
      }
}

TEST_CASE("GridSample refuses bad nodes naming the field", "[ops][grid_sample]") {
  const Tensor x = test::random_tensor({DType::kF32, {1, 2, 4, 4}}, 1);
  const Tensor grid = test::random_tensor({DType::kF32, {1, 3, 3, 2}}, 2);
  auto err = [](const Result<test::OpRun>& r) {
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  CHECK_THAT(err(run_single_op("GridSample", attrs("area", "zeros", false), {x, grid})),
             Catch::Contains("attribute 'mode' = 'area'"));
  CHECK_THAT(err(run_single_op("GridSample", attrs("linear", "wrap", false), {x, grid})),
             Catch::Contains("attribute 'padding_mode' = 'wrap'"));
  graph::Attributes ac = attrs("linear", "zeros", false);
  ac.set("align_corners", int64_t{2});
  CHECK_THAT(err(run_single_op("GridSample", ac, {x, grid})),
             Catch::Contains("'align_corners' must be 0 or 1"));
  const Tensor g3 = test::random_tensor({DType::kF32, {1, 3, 3, 3}}, 3);
  CHECK_THAT(err(run_single_op("GridSample", {}, {x, g3})),
             Catch::Contains("input 1 (grid)") && Catch::Contains("must have last dim 2"));
  const Tensor g5 = test::random_tensor({DType::kF32, {1, 3, 3, 3, 2}}, 3);
  CHECK_THAT(err(run_single_op("GridSample", {}, {x, g5})),
             Catch::Contains("input 1 (grid)") && Catch::Contains("must have rank 4"));
  const Tensor g_batch = test::random_tensor({DType::kF32, {2, 3, 3, 2}}, 3);
  CHECK_THAT(err(run_single_op("GridSample", {}, {x, g_batch})), Catch::Contains("batch"));
  Tensor xi(TensorDesc{DType::kI64, {1, 2, 4, 4}});
  CHECK_THAT(err(run_single_op("GridSample", {}, {xi, grid})),
             Catch::Contains("input 0 (X) must be float32"));
  const Tensor x2 = test::random_tensor({DType::kF32, {2, 4}}, 1);
  CHECK_THAT(err(run_single_op("GridSample", {}, {x2, grid})), Catch::Contains("input 0 (X)"));
  CHECK_THAT(err(run_single_op("GridSample", {}, {x})), Catch::Contains("expects 2 inputs"));
}
