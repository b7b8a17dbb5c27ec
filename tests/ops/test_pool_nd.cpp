// MaxPoolWithIndices, LpPool (ops/pool_nd.cpp) and MaxUnpool (ops/max_unpool.cpp) against naive
// references written here from ONNX's definitions (every kernel position of every output,
// coordinates turned into flat positions by hand), on seeded random shapes with 1 to 3 spatial
// dims, strides, asymmetric pads up to the dilated span, dilations, both storage orders, inputs
// with ties, teams of 1 to 3 threads; and every error message.
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

// A random pool window for X's spatial dims `in`.
struct Win {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: every begin, then every end
};

std::vector<int64_t> out_dims(const std::vector<int64_t>& in, const Win& w) {
  std::vector<int64_t> out;
  const size_t k = in.size();
  for (size_t a = 0; a < k; ++a)
    out.push_back((in[a] + w.pads[a] + w.pads[a + k] - (w.kernel[a] - 1) * w.dilations[a] - 1) /
                      w.strides[a] +
                  1);
  return out;
}

// Calls f(flat output position in the plane, taps) for every output position of one plane:
// taps are the coordinates of the kernel positions inside X, in row-major kernel order.
template <typename F>
void for_each_output(const std::vector<int64_t>& in, const Win& w, F f) {
  const size_t k = in.size();
  const std::vector<int64_t> out = out_dims(in, w);
  int64_t out_volume = 1, kernel_volume = 1;
  for (size_t a = 0; a < k; ++a) {
    out_volume *= out[a];
    kernel_volume *= w.kernel[a];
  }
  std::vector<std::vector<int64_t>> taps;
  for (int64_t o = 0; o < out_volume; ++o) {
    std::vector<int64_t> oc(k);  // output coordinates, row-major
    for (size_t a = k, r = static_cast<size_t>(o); a-- > 0;) {
      oc[a] = static_cast<int64_t>(r) % out[a];
      r /= static_cast<size_t>(out[a]);
    }
    taps.clear();
    for (int64_t t = 0; t < kernel_volume; ++t) {
      std::vector<int64_t> kc(k), ic(k);
      for (size_t a = k, r = static_cast<size_t>(t); a-- > 0;) {
        kc[a] = static_cast<int64_t>(r) % w.kernel[a];
        r /= static_cast<size_t>(w.kernel[a]);
      }
      bool inside = true;
      for (size_t a = 0; a < k; ++a) {
        ic[a] = oc[a] * w.strides[a] - w.pads[a] + kc[a] * w.dilations[a];
        inside = inside && ic[a] >= 0 && ic[a] < in[a];
      }
      if (inside) taps.push_back(ic);
    }
    f(o, taps);
  }
}

int64_t row_major(const std::vector<int64_t>& c, const std::vector<int64_t>& in) {
  int64_t off = 0;
  for (size_t a = 0; a < in.size(); ++a) off = off * in[a] + c[a];
  return off;
}

int64_t column_major(const std::vector<int64_t>& c, const std::vector<int64_t>& in) {
  int64_t off = 0, stride = 1;
  for (size_t a = 0; a < in.size(); ++a) {
    off += c[a] * stride;
    stride *= in[a];
  }
  return off;
}

struct MaxWithIndices {
  Tensor y, indices;
};

// ONNX MaxPool's Y and Indices: the first maximum in kernel order; positions over all of X.
MaxWithIndices maxpool_indices_ref(const Tensor& x, const Win& w, bool col_major) {
  const Shape& xs = x.desc().shape;
  const std::vector<int64_t> in(xs.begin() + 2, xs.end());
  Shape ys{xs[0], xs[1]};
  for (int64_t d : out_dims(in, w)) ys.push_back(d);
  MaxWithIndices r{Tensor(TensorDesc{DType::kF32, ys}), Tensor(TensorDesc{DType::kI64, ys})};
  int64_t in_volume = 1, out_volume = 1;
  for (size_t a = 2; a < xs.size(); ++a) {
    in_volume *= xs[a];
    out_volume *= ys[a];
  }
  for (int64_t plane = 0; plane < xs[0] * xs[1]; ++plane)
    for_each_output(in, w, [&](int64_t o, const std::vector<std::vector<int64_t>>& taps) {
      REQUIRE(!taps.empty());
      size_t best = 0;
      for (size_t t = 1; t < taps.size(); ++t)
        if (x.data_as<float>()[plane * in_volume + row_major(taps[t], in)] >
            x.data_as<float>()[plane * in_volume + row_major(taps[best], in)])
          best = t;
      r.y.data_as<float>()[plane * out_volume + o] =
          x.data_as<float>()[plane * in_volume + row_major(taps[best], in)];
      r.indices.data_as<int64_t>()[plane * out_volume + o] =
          plane * in_volume +
          (col_major ? column_major(taps[best], in) : row_major(taps[best], in));
    });
  return r;
}

// ONNX LpPool: (sum over the taps inside X of |x|^p)^(1/p), in double.
Tensor lppool_ref(const Tensor& x, const Win& w, int64_t p) {
  const Shape& xs = x.desc().shape;
  const std::vector<int64_t> in(xs.begin() + 2, xs.end());
  Shape ys{xs[0], xs[1]};
  for (int64_t d : out_dims(in, w)) ys.push_back(d);
  Tensor y(TensorDesc{DType::kF32, ys});
  int64_t in_volume = 1, out_volume = 1;
  for (size_t a = 2; a < xs.size(); ++a) {
    in_volume *= xs[a];
    out_volume *= ys[a];
  }
  for (int64_t plane = 0; plane < xs[0] * xs[1]; ++plane)
    for_each_output(in, w, [&](int64_t o, const std::vector<std::vector<int64_t>>& taps) {
      double sum = 0;
      for (const auto& t : taps)
        sum += std::pow(std::abs(double(x.data_as<float>()[plane * in_volume + row_major(t, in)])),
                        double(p));
      y.data_as<float>()[plane * out_volume + o] =
          static_cast<float>(std::pow(sum, 1.0 / double(p)));
    });
  return y;
}

// ONNX MaxUnpool: zeros of `shape`, then y.flat[I.flat[i]] = X.flat[i] in order.
Tensor maxunpool_ref(const Tensor& x, const Tensor& ind, const Shape& shape) {
  Tensor y(TensorDesc{DType::kF32, shape});
  std::fill(y.data_as<float>(), y.data_as<float>() + y.numel(), 0.0f);
  for (int64_t i = 0; i < static_cast<int64_t>(x.numel()); ++i)
    y.data_as<float>()[ind.data_as<int64_t>()[i]] = x.data_as<float>()[i];
  return y;
}

graph::Attributes window_attrs(const Win& w) {
  graph::Attributes a;
  a.set("kernel_shape", w.kernel);
  a.set("strides", w.strides);
  a.set("dilations", w.dilations);
  a.set("pads", w.pads);
  return a;
}

// A window for k spatial dims and the X spatial dims that fit it.
std::pair<Win, std::vector<int64_t>> random_window(std::mt19937& rng, size_t k) {
  Win w;
  std::vector<int64_t> in;
  for (size_t a = 0; a < k; ++a) {
    w.kernel.push_back(1 + rng() % 3);
    w.strides.push_back(1 + rng() % 3);
    w.dilations.push_back(1 + rng() % 2);
  }
  for (size_t e = 0; e < 2 * k; ++e) {
    const size_t a = e % k;
    const int64_t span = (w.kernel[a] - 1) * w.dilations[a] + 1;
    w.pads.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(span)));
  }
  for (size_t a = 0; a < k; ++a)
    in.push_back((w.kernel[a] - 1) * w.dilations[a] + 1 + static_cast<int64_t>(rng() % 5));
  return {w, in};
}

// Random values from {0, .., 3}: many ties inside each window.
Tensor with_ties(const Shape& s, uint64_t seed) {
  Tensor t = test::random_tensor(TensorDesc{DType::kF32, s}, seed, 0.0, 4.0);
  for (int64_t i = 0; i < static_cast<int64_t>(t.numel()); ++i)
    t.data_as<float>()[i] = std::floor(t.data_as<float>()[i]);
  return t;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.desc() == b.desc() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

std::string error_of(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<Tensor>& inputs, int num_outputs = 1,
                     const std::vector<bool>& constant = {}) {
  auto r = run_single_op(op, attrs, inputs, num_outputs, 1, constant);
  REQUIRE_FALSE(r.is_ok());
  return r.status().message();
}

Tensor i64(const Shape& s, std::vector<int64_t> v) {
  Tensor t(TensorDesc{DType::kI64, s});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

}  // namespace

TEST_CASE("MaxPoolWithIndices matches ONNX's MaxPool and Indices on random 1-D to 3-D windows",
          "[ops][pool]") {
  std::mt19937 rng(4242);
  for (int c = 0; c < 60; ++c) {
    const size_t k = 1 + c % 3;
    auto [w, in] = random_window(rng, k);
    Shape xs{1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 3)};
    xs.insert(xs.end(), in.begin(), in.end());
    const Tensor x =
        c % 2 ? with_ties(xs, 100 + c) : test::random_tensor(TensorDesc{DType::kF32, xs}, 100 + c);
    const int64_t order = (c / 3) % 2;
    graph::Attributes attrs = window_attrs(w);
    if (order || c % 4 == 0) attrs.set("storage_order", order);
    const MaxWithIndices want = maxpool_indices_ref(x, w, order == 1);
    INFO("X " << x.desc().to_string() << " kernel " << shape_to_string(w.kernel) << " strides "
              << shape_to_string(w.strides) << " dilations " << shape_to_string(w.dilations)
              << " pads " << shape_to_string(w.pads) << " storage_order " << order);
    for (int threads : {1, 3}) {
      auto r = run_single_op("MaxPoolWithIndices", attrs, {x}, 2, threads);
      REQUIRE(r.is_ok());
      CHECK(r->kernel == "maxpool_indices_loop");
      CHECK(same(r->outputs[0], want.y));
      CHECK(same(r->outputs[1], want.indices));
    }
  }
}

TEST_CASE("MaxPoolWithIndices: a NaN tap wins its window, as in PyTorch", "[ops][pool]") {
  Tensor x(TensorDesc{DType::kF32, {1, 1, 4}});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float v[] = {1.0f, nan, 3.0f, 2.0f};
  std::copy(v, v + 4, x.data_as<float>());
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2});
  auto r = run_single_op("MaxPoolWithIndices", a, {x}, 2);
  REQUIRE(r.is_ok());
  const float* y = r->outputs[0].data_as<float>();
  CHECK(std::isnan(y[0]));
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == 3.0f);
  CHECK(std::vector<int64_t>(r->outputs[1].data_as<int64_t>(),
                             r->outputs[1].data_as<int64_t>() + 3) ==
        std::vector<int64_t>{1, 1, 2});
}

TEST_CASE("LpPool matches ONNX's definition for p = 1 to 4 on random 1-D to 3-D windows",
          "[ops][pool]") {
  std::mt19937 rng(4343);
  for (int c = 0; c < 48; ++c) {
    const size_t k = 1 + c % 3;
    auto [w, in] = random_window(rng, k);
    Shape xs{1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 3)};
    xs.insert(xs.end(), in.begin(), in.end());
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, xs}, 200 + c, -2.0, 2.0);
    const int64_t p = 1 + (c / 3) % 4;
    graph::Attributes attrs = window_attrs(w);
    if (p != 2 || c % 2) attrs.set("p", p);  // also the default (2)
    INFO("X " << x.desc().to_string() << " kernel " << shape_to_string(w.kernel) << " dilations "
              << shape_to_string(w.dilations) << " pads " << shape_to_string(w.pads) << " p " << p);
    for (int threads : {1, 2}) {
      auto r = run_single_op("LpPool", attrs, {x}, 1, threads);
      REQUIRE(r.is_ok());
      CHECK(r->kernel == "lppool_loop");
      CHECK(test::max_rel_error(r->outputs[0], lppool_ref(x, w, p)) < 1e-5);
    }
  }
}

TEST_CASE("MaxUnpool matches ONNX's definition: default shape, output_shape, duplicates",
          "[ops][pool]") {
  std::mt19937 rng(4444);
  for (int c = 0; c < 30; ++c) {
    const size_t k = 1 + c % 3;
    // Indices as a MaxPool makes them (kernel = strides, no pads: SegNet's 2x2 pools), then
    // unpooled into the pool's input shape; odd sizes need output_shape.
    Win w;
    std::vector<int64_t> in;
    for (size_t a = 0; a < k; ++a) {
      w.kernel.push_back(1 + rng() % 3);
      w.strides.push_back(w.kernel.back());
      w.dilations.push_back(1);
      in.push_back(w.kernel.back() * (1 + rng() % 3) + (c % 2 ? rng() % 2 : 0));
    }
    w.pads.assign(2 * k, 0);
    Shape xs{1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 3)};
    xs.insert(xs.end(), in.begin(), in.end());
    const Tensor x = test::random_tensor(TensorDesc{DType::kF32, xs}, 300 + c);
    const MaxWithIndices pooled = maxpool_indices_ref(x, w, false);
    graph::Attributes attrs;
    attrs.set("kernel_shape", w.kernel);
    attrs.set("strides", w.strides);
    Shape default_shape = pooled.y.desc().shape;
    for (size_t a = 0; a < k; ++a)
      default_shape[2 + a] = (default_shape[2 + a] - 1) * w.strides[a] + w.kernel[a];
    INFO("X " << x.desc().to_string() << " kernel " << shape_to_string(w.kernel));
    for (int threads : {1, 2, 3}) {
      const std::vector<int64_t> full(xs.begin(), xs.end());
      auto r = run_single_op("MaxUnpool", attrs,
                             {pooled.y, pooled.indices, i64({int64_t(xs.size())}, full)}, 1,
                             threads, {false, false, true});
      REQUIRE(r.is_ok());
      CHECK(r->kernel == "maxunpool_loop");
      CHECK(r->failure.empty());
      CHECK(same(r->outputs[0], maxunpool_ref(pooled.y, pooled.indices, xs)));
      if (default_shape == xs) {  // no output_shape needed
        auto d = run_single_op("MaxUnpool", attrs, {pooled.y, pooled.indices}, 1, threads);
        REQUIRE(d.is_ok());
        CHECK(same(d->outputs[0], r->outputs[0]));
      }
    }
  }
  // Pads shrink the default shape; two elements to one position: the later one stays, whatever
  // the team size.
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 2, 2, 2}}, 9);
  Tensor ind = i64({1, 2, 2, 2}, {0, 3, 3, 8, 9, 9, 17, 10});
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("pads", std::vector<int64_t>{1, 0, 0, 0});
  for (int threads : {1, 2, 3}) {
    auto r = run_single_op("MaxUnpool", a, {x, ind}, 1, threads);
    REQUIRE(r.is_ok());
    CHECK(r->outputs[0].desc().shape == Shape{1, 2, 4, 5});
    CHECK(same(r->outputs[0], maxunpool_ref(x, ind, {1, 2, 4, 5})));
  }
}

TEST_CASE("MaxUnpool undoes MaxPoolWithIndices: the maxima in place, zeros elsewhere",
          "[ops][pool]") {
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 3, 6, 8}}, 17);
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("strides", std::vector<int64_t>{2, 2});
  auto p = run_single_op("MaxPoolWithIndices", a, {x}, 2, 2);
  REQUIRE(p.is_ok());
  auto u = run_single_op("MaxUnpool", a, {p->outputs[0], p->outputs[1]}, 1, 2);
  REQUIRE(u.is_ok());
  REQUIRE(u->outputs[0].desc() == x.desc());
  const float* xp = x.data_as<float>();
  const float* up = u->outputs[0].data_as<float>();
  for (int64_t plane = 0; plane < 6; ++plane)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t dy = 0; dy < 2; ++dy)
          for (int64_t dx = 0; dx < 2; ++dx)
            best = std::max(best, xp[plane * 48 + (2 * i + dy) * 8 + 2 * j + dx]);
        int kept = 0;
        for (int64_t dy = 0; dy < 2; ++dy)
          for (int64_t dx = 0; dx < 2; ++dx) {
            const int64_t at = plane * 48 + (2 * i + dy) * 8 + 2 * j + dx;
            if (up[at] != 0.0f) {
              CHECK(up[at] == xp[at]);
              CHECK(xp[at] == best);
              ++kept;
            }
          }
        CHECK(kept == 1);
      }
}

TEST_CASE("MaxPoolWithIndices, LpPool and MaxUnpool errors", "[ops][pool][errors]") {
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 2, 5, 5}}, 1);
  graph::Attributes k3;
  k3.set("kernel_shape", std::vector<int64_t>{3, 3});
  CHECK_THAT(error_of("MaxPoolWithIndices", k3, {x}, 1),
             Catch::Contains("(MaxPoolWithIndices): MaxPoolWithIndices has 2 outputs, Y and "
                             "Indices, got 1"));
  CHECK_THAT(error_of("LpPool", k3, {x}, 2), Catch::Contains("LpPool has 1 output Y, got 2"));
  CHECK_THAT(error_of("LpPool", {}, {x}), Catch::Contains("attribute 'kernel_shape' is missing"));
  graph::Attributes so = k3;
  so.set("storage_order", int64_t{2});
  CHECK_THAT(error_of("MaxPoolWithIndices", so, {x}, 2),
             Catch::Contains("attribute 'storage_order' must be 0 (row major) or 1 (column "
                             "major), got 2"));
  graph::Attributes p0 = k3;
  p0.set("p", int64_t{0});
  CHECK_THAT(error_of("LpPool", p0, {x}),
             Catch::Contains("attribute 'p' must be >= 1 (the norm's order), got 0"));
  graph::Attributes k1 = k3;
  k1.set("kernel_shape", std::vector<int64_t>{3});
  CHECK_THAT(error_of("LpPool", k1, {x}),
             Catch::Contains("attribute 'kernel_shape' must be 2 ints >= 1 (one per spatial dim "
                             "of X), got [3]"));
  graph::Attributes pads = k3;
  pads.set("pads", std::vector<int64_t>{0, 1, 0});
  CHECK_THAT(error_of("MaxPoolWithIndices", pads, {x}, 2),
             Catch::Contains("attribute 'pads' must be 4 ints >= 0 (every begin, then every "
                             "end), got [0, 1, 0]"));
  graph::Attributes deep = k3;
  deep.set("dilations", std::vector<int64_t>{2, 1});
  deep.set("pads", std::vector<int64_t>{5, 0, 0, 0});
  CHECK_THAT(error_of("MaxPoolWithIndices", deep, {x}, 2),
             Catch::Contains("pads [5, 0, 0, 0] must each be smaller than the dilated kernel (5 "
                             "along dim 2): a window would lie entirely in padding"));
  graph::Attributes big;
  big.set("kernel_shape", std::vector<int64_t>{2, 3});
  big.set("dilations", std::vector<int64_t>{1, 3});
  CHECK_THAT(error_of("LpPool", big, {x}),
             Catch::Contains("the dilated kernel (7 along dim 3) is larger than the padded "
                             "input: 5 plus pads 0 and 0 of X float32[1, 2, 5, 5]"));
  graph::Attributes huge = k3;
  huge.set("dilations", std::vector<int64_t>{int64_t{1} << 62, 1});
  CHECK_THAT(error_of("LpPool", huge, {x}), Catch::Contains("overflow int64"));
  graph::Attributes ceil = k3;
  ceil.set("ceil_mode", int64_t{1});
  CHECK_THAT(error_of("LpPool", ceil, {x}),
             Catch::Contains("attribute 'ceil_mode' = 1 is not supported"));
  graph::Attributes same = k3;
  same.set("auto_pad", std::string("SAME_UPPER"));
  CHECK_THAT(error_of("MaxPoolWithIndices", same, {x}, 2),
             Catch::Contains("attribute 'auto_pad' = 'SAME_UPPER' is not supported"));
  CHECK_THAT(error_of("LpPool", k3, {test::random_tensor(TensorDesc{DType::kF32, {2, 5}}, 1)}),
             Catch::Contains("must be [N, C, D1..Dk] with 1 to 3 spatial dims (rank 3 to 5)"));
  CHECK_THAT(error_of("MaxPoolWithIndices", k3,
                      {test::random_tensor(TensorDesc{DType::kI64, {1, 2, 5, 5}}, 1, 0, 9)}, 2),
             Catch::Contains("input X must be float32, got int64[1, 2, 5, 5]"));

  // MaxUnpool.
  Tensor y = test::random_tensor(TensorDesc{DType::kF32, {1, 2, 2, 2}}, 2);
  Tensor ind = i64({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  graph::Attributes k2;
  k2.set("kernel_shape", std::vector<int64_t>{2, 2});
  k2.set("strides", std::vector<int64_t>{2, 2});
  CHECK_THAT(error_of("MaxUnpool", {}, {y, ind}),
             Catch::Contains("attribute 'kernel_shape' is missing"));
  CHECK_THAT(error_of("MaxUnpool", k2, {y, i64({1, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})}),
             Catch::Contains("input 1 (I) int64[1, 2, 4] must have the shape of X float32[1, 2, "
                             "2, 2]"));
  Tensor i32(TensorDesc{DType::kI32, {1, 2, 2, 2}});
  CHECK_THAT(error_of("MaxUnpool", k2, {y, i32}),
             Catch::Contains("input 1 (I) must be int64, got int32[1, 2, 2, 2]"));
  CHECK_THAT(error_of("MaxUnpool", k2, {y, ind, i64({3}, {1, 2, 4})}, 1, {false, false, true}),
             Catch::Contains("input 2 (output_shape) [1, 2, 4] must be a shape of X's rank with "
                             "X's N and C"));
  CHECK_THAT(error_of("MaxUnpool", k2, {y, ind, i64({4}, {1, 3, 4, 4})}, 1, {false, false, true}),
             Catch::Contains("with X's N and C"));
  CHECK_THAT(error_of("MaxUnpool", k2, {y, ind, i64({4}, {1, 2, 4, 4})}),
             Catch::Contains("input 2 (output_shape) must be a constant (static shapes only)"));
  graph::Attributes shrink = k2;
  shrink.set("pads", std::vector<int64_t>{2, 0, 2, 0});
  CHECK_THAT(error_of("MaxUnpool", shrink, {y, ind}),
             Catch::Contains("pads [2, 0, 2, 0] leave no output along dim 2"));
  // Positions outside Y fail the run (the engine's error for it), on any team.
  for (int threads : {1, 2}) {
    for (int64_t bad : {int64_t{32}, int64_t{-1}}) {
      auto r = run_single_op("MaxUnpool", k2, {y, i64({1, 2, 2, 2}, {0, 1, 2, bad, 4, 5, 6, 7})}, 1,
                             threads);
      REQUIRE(r.is_ok());
      CHECK_THAT(r->failure, Catch::Contains("(MaxUnpool): input 1 (I) holds a position outside "
                                             "the output's 32 elements"));
    }
  }
}

TEST_CASE("Pool-family cost hints count the window", "[ops][pool]") {
  const ops::Registry& reg = ops::Registry::get();
  TensorDesc x{DType::kF32, {1, 4, 5, 5}}, y{DType::kF32, {1, 4, 3, 3}},
      i{DType::kI64, {1, 4, 3, 3}};
  graph::Node pool{"MaxPoolWithIndices", "p", {}, {}, {}};
  pool.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  const TensorDesc* in[] = {&x};
  const TensorDesc* out[] = {&y, &i};
  ops::CostHint c = reg.cost(pool, in, out);
  CHECK(c.flops == 36.0 * 9);
  CHECK(c.bytes == 4.0 * (100 + 36) + 8.0 * 36);
}
