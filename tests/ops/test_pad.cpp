// Pad (ops/pad.cpp) against a reference written from the definition (numpy.pad's constant, edge,
// reflect and wrap modes; negative pads crop), on random shapes and pads, teams of 1-3 threads;
// pads as attribute and as constant input, the fill value as attribute and as input, opset 18 axes.
#include <catch2/catch.hpp>
#include <random>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

// y[o] = x[map(o)] per dim, where map follows the mode; nullopt -> the fill value.
Tensor pad_ref(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
               float value) {
  const Shape& s = x.desc().shape;
  const size_t r = s.size();
  Shape out(r);
  for (size_t d = 0; d < r; ++d) out[d] = s[d] + pads[d] + pads[d + r];
  Tensor y(TensorDesc{DType::kF32, out});
  const int64_t n_out = y.desc().numel();
  for (int64_t o = 0; o < n_out; ++o) {
    int64_t rem = o, in_off = 0, stride = 1;
    bool fill = false;
    for (size_t d = r; d-- > 0;) {
      const int64_t od = rem % out[d];
      rem /= out[d];
      int64_t i = od - pads[d];
      const int64_t n = s[d];
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          fill = true;
        } else if (mode == "edge") {
          i = i < 0 ? 0 : n - 1;
        } else if (mode == "wrap") {  // numpy.pad 'wrap': the dim repeats periodically
          while (i < 0) i += n;
          while (i >= n) i -= n;
        } else {  // reflect
          if (n == 1)
            i = 0;
          else
            i = i < 0 ? -i : 2 * (n - 1) - i;
        }
      }
      in_off += i * stride;
      stride *= n;
    }
    y.data_as<float>()[o] = fill ? value : x.data_as<float>()[in_off];
  }
  return y;
}

constexpr auto ints = test::i64_tensor;

Tensor scalar(float v) {
  Tensor t(TensorDesc{DType::kF32, {}});
  t.data_as<float>()[0] = v;
  return t;
}

}  // namespace

TEST_CASE("Pad matches numpy.pad on random shapes, pads and modes", "[ops][pad]") {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> rank_d(1, 4), dim_d(1, 6), pad_d(-2, 3);
  uint64_t seed = 3;
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
    for (int trial = 0; trial < 15; ++trial) {
      Shape s(static_cast<size_t>(rank_d(rng)));
      for (int64_t& d : s) d = dim_d(rng);
      const size_t r = s.size();
      std::vector<int64_t> pads(2 * r);
      for (size_t d = 0; d < r; ++d) {
        // Keep every output dim >= 1, and reflect pads < the dim (numpy would reflect twice);
        // wrap pads may exceed the dim (up to 3 on dims of 1).
        const int64_t lim = mode == "reflect" ? std::max<int64_t>(s[d] - 1, 0) : 3;
        for (size_t side : {d, d + r}) {
          int64_t p = std::min<int64_t>(pad_d(rng), lim);
          if (mode != "constant" && p < 0) p = 0;  // crops are mode independent; test them once
          pads[side] = p;
        }
        while (s[d] + pads[d] + pads[d + r] < 1) ++pads[d];
      }
      Tensor x = test::random_tensor({DType::kF32, s}, seed++, -3, 3);
      Tensor want = pad_ref(x, pads, mode, 0.75f);
      for (int threads : {1, 2, 3}) {
        for (bool as_input : {false, true}) {
          INFO(mode << " " << shape_to_string(s) << " pads " << pads.size() << ", " << threads
                    << " threads, as input " << as_input);
          graph::Attributes a;
          a.set("mode", mode);
          std::vector<Tensor> in{x};
          if (as_input) {
            in.push_back(ints(pads));
            in.push_back(scalar(0.75f));
          } else {
            a.set("pads", pads);
            a.set("value", 0.75);
          }
          auto res = run_single_op("Pad", a, in, 1, threads, {false, true, false});
          REQUIRE(res.is_ok());
          CHECK(test::max_rel_error(res->outputs[0], want) == 0);
        }
      }
    }
  }
}

TEST_CASE("Pad with opset 18 axes", "[ops][pad]") {
  Tensor x = test::random_tensor({DType::kF32, {3, 4, 5}}, 8, -1, 1);
  // Pad only axes 0 and -1: begins [1, 2], ends [0, 1].
  for (int threads : {1, 2, 3}) {
    auto r = run_single_op("Pad", {}, {x, ints({1, 2, 0, 1}), scalar(-4), ints({0, -1})}, 1,
                           threads, {false, true, false, true});
    REQUIRE(r.is_ok());
    CHECK(test::max_rel_error(r->outputs[0], pad_ref(x, {1, 0, 2, 0, 0, 1}, "constant", -4)) == 0);
  }
}

TEST_CASE("Pad refuses bad nodes with the field in the error", "[ops][pad]") {
  Tensor x = test::random_tensor({DType::kF32, {2, 3}}, 1);
  graph::Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1});
  auto r = run_single_op("Pad", a, {x});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("pads") != std::string::npos);
  a.set("pads", std::vector<int64_t>{-2, 0, 0, 0});
  r = run_single_op("Pad", a, {x});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("empty") != std::string::npos);
  a.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  a.set("mode", std::string("circular"));  // not an ONNX mode
  r = run_single_op("Pad", a, {x});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("mode") != std::string::npos);
  graph::Attributes reflect;
  reflect.set("pads", std::vector<int64_t>{0, 3, 0, 0});
  reflect.set("mode", std::string("reflect"));
  REQUIRE_FALSE(run_single_op("Pad", reflect, {x}).is_ok());
}
