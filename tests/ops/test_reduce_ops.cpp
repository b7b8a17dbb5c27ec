// Pow and ReduceMean / ReduceSum / ReduceMax (ops/reduce_ops.cpp) against naive references
// written from the definitions, on random shapes, axes and keepdims, teams of 1-3 threads; axes
// as attribute and as constant input; errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

// Row-major index helpers.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// numpy broadcasting of pow, one output element at a time.
Tensor pow_ref(const Tensor& a, const Tensor& b, const Shape& out) {
  Tensor y(TensorDesc{DType::kF32, out});
  const Shape &sa = a.desc().shape, &sb = b.desc().shape;
  const auto sta = strides_of(sa), stb = strides_of(sb), sto = strides_of(out);
  const size_t r = out.size();
  for (int64_t o = 0; o < y.desc().numel(); ++o) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < r; ++d) {
      const int64_t i = (o / sto[d]) % out[d];
      const size_t da = d + sa.size() - r, db = d + sb.size() - r;
      if (d + sa.size() >= r && sa[da] != 1) ia += i * sta[da];
      if (d + sb.size() >= r && sb[db] != 1) ib += i * stb[db];
    }
    y.data_as<float>()[o] = static_cast<float>(
        std::pow(double{a.data_as<float>()[ia]}, double{b.data_as<float>()[ib]}));
  }
  return y;
}

enum class Kind { kMean, kSum, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Reduces x over `axes` (all when empty) straight from the definition.
Tensor reduce_ref(Kind kind, const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  const Shape& s = x.desc().shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<bool> red(s.size(), axes.empty());
  for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  Shape out, out_keep;
  for (size_t d = 0; d < s.size(); ++d) {
    out_keep.push_back(red[d] ? 1 : s[d]);
    if (!red[d] || keepdims) out.push_back(red[d] ? 1 : s[d]);
  }
  int64_t n_out = 1;
  for (int64_t d : out_keep) n_out *= d;
  // Each output's values, reduced after collection.
  std::vector<std::vector<double>> vals(static_cast<size_t>(n_out));
  const auto st = strides_of(s), sto = strides_of(out_keep);
  int64_t count = 1;
  for (size_t d = 0; d < s.size(); ++d)
    if (red[d]) count *= s[d];
  for (int64_t i = 0; i < x.desc().numel(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d)
      if (!red[d]) o += ((i / st[d]) % s[d]) * sto[d];
    vals[static_cast<size_t>(o)].push_back(x.data_as<float>()[i]);
  }
  Tensor y(TensorDesc{DType::kF32, out});
  for (int64_t o = 0; o < n_out; ++o) {
    const std::vector<double>& v = vals[static_cast<size_t>(o)];
    double r = 0;
    switch (kind) {
      case Kind::kMax:
        r = *std::max_element(v.begin(), v.end());
        break;
      case Kind::kMin:
        r = *std::min_element(v.begin(), v.end());
        break;
      case Kind::kProd:
        r = 1;
        for (double a : v) r *= a;
        break;
      case Kind::kL1:
        for (double a : v) r += std::fabs(a);
        break;
      case Kind::kL2:
        for (double a : v) r += a * a;
        r = std::sqrt(r);
        break;
      case Kind::kSumSquare:
        for (double a : v) r += a * a;
        break;
      case Kind::kLogSum:
        for (double a : v) r += a;
        r = std::log(r);
        break;
      case Kind::kLogSumExp:
        for (double a : v) r += std::exp(a);
        r = std::log(r);
        break;
      default:
        for (double a : v) r += a;
        if (kind == Kind::kMean) r /= count;
        break;
    }
    y.data_as<float>()[o] = static_cast<float>(r);
  }
  return y;
}

constexpr auto ints = test::i64_tensor;

}  // namespace

TEST_CASE("Pow broadcasts like numpy and matches std::pow", "[ops][pow]") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> rank_d(0, 4), dim_d(1, 6), coin(0, 2);
  uint64_t seed = 1;
  for (int trial = 0; trial < 40; ++trial) {
    Shape out(static_cast<size_t>(rank_d(rng)));
    for (int64_t& d : out) d = dim_d(rng);
    // Each operand: a suffix of out with some dims set to 1.
    auto operand = [&]() {
      Shape s(out.begin() + std::uniform_int_distribution<size_t>(0, out.size())(rng), out.end());
      for (int64_t& d : s)
        if (coin(rng) == 0) d = 1;
      return s;
    };
    Shape sa = operand(), sb = operand();
    Shape full;  // the broadcast of sa and sb (may be smaller than out)
    const size_t r = std::max(sa.size(), sb.size());
    for (size_t d = 0; d < r; ++d) {
      const int64_t x = d + sa.size() >= r ? sa[d + sa.size() - r] : 1;
      const int64_t y = d + sb.size() >= r ? sb[d + sb.size() - r] : 1;
      full.push_back(std::max(x, y));
    }
    Tensor a = test::random_tensor({DType::kF32, sa}, seed++, 0.1, 3);
    Tensor b = test::random_tensor({DType::kF32, sb}, seed++, -2, 3);
    Tensor want = pow_ref(a, b, full);
    for (int threads : {1, 2, 3}) {
      INFO(shape_to_string(sa) << " ** " << shape_to_string(sb) << ", " << threads << " threads");
      auto res = run_single_op("Pow", {}, {a, b}, 1, threads);
      REQUIRE(res.is_ok());
      CHECK(test::max_rel_error(res->outputs[0], want) <= 1e-6);
    }
  }
  // x ** 2 with a scalar exponent (LayerNorm's variance), negative bases.
  Tensor x = test::random_tensor({DType::kF32, {5, 70}}, 44, -4, 4);
  Tensor two(TensorDesc{DType::kF32, {}});
  two.data_as<float>()[0] = 2.0f;
  auto sq = run_single_op("Pow", {}, {x, two}, 1, 3, {false, true});
  REQUIRE(sq.is_ok());
  CHECK(test::max_rel_error(sq->outputs[0], pow_ref(x, two, {5, 70})) == 0);
  // x ** 3 (the tanh GELU's cube) and x ** 0.5 (as sqrt) with a scalar exponent: within a few
  // ulps of std::pow (x * x * x rounds twice).
  for (float e : {3.0f, 0.5f}) {
    INFO("exponent " << e);
    Tensor ex(TensorDesc{DType::kF32, {}});
    ex.data_as<float>()[0] = e;
    Tensor base = e == 3.0f ? x : test::random_tensor({DType::kF32, {5, 70}}, 47, 0, 9);
    auto r = run_single_op("Pow", {}, {base, ex}, 1, 2, {false, true});
    REQUIRE(r.is_ok());
    CHECK(test::max_rel_error(r->outputs[0], pow_ref(base, ex, {5, 70})) < 1e-6);
  }
  // Integer exponents (ONNX allows int32/int64 Y with a float X), broadcast over rows.
  for (DType t : {DType::kI32, DType::kI64}) {
    Tensor e = test::random_tensor({t, {70}}, 45, -3, 5);
    Tensor ef(TensorDesc{DType::kF32, {70}});
    for (int64_t i = 0; i < 70; ++i)
      ef.data_as<float>()[i] = t == DType::kI32 ? static_cast<float>(e.data_as<int32_t>()[i])
                                                : static_cast<float>(e.data_as<int64_t>()[i]);
    Tensor base = test::random_tensor({DType::kF32, {5, 70}}, 46, 0.5, 2);
    for (int threads : {1, 3}) {
      auto r = run_single_op("Pow", {}, {base, e}, 1, threads);
      REQUIRE(r.is_ok());
      CHECK(test::max_rel_error(r->outputs[0], pow_ref(base, ef, {5, 70})) <= 1e-6);
    }
  }
}

TEST_CASE("ReduceMean/Sum/Max match the reference on random shapes and axes", "[ops][reduce]") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> rank_d(1, 4), dim_d(1, 7), coin(0, 1);
  uint64_t seed = 7;
  const std::pair<const char*, Kind> ops[] = {
      {"ReduceMean", Kind::kMean},     {"ReduceSum", Kind::kSum},
      {"ReduceMax", Kind::kMax},       {"ReduceMin", Kind::kMin},
      {"ReduceProd", Kind::kProd},     {"ReduceL1", Kind::kL1},
      {"ReduceL2", Kind::kL2},         {"ReduceSumSquare", Kind::kSumSquare},
      {"ReduceLogSum", Kind::kLogSum}, {"ReduceLogSumExp", Kind::kLogSumExp}};
  for (int trial = 0; trial < 30; ++trial) {
    Shape s(static_cast<size_t>(rank_d(rng)));
    for (int64_t& d : s) d = dim_d(rng);
    const int64_t rank = static_cast<int64_t>(s.size());
    std::vector<int64_t> axes;  // empty: every axis
    for (int64_t d = 0; d < rank; ++d)
      if (coin(rng)) axes.push_back(coin(rng) ? d : d - rank);
    const bool keepdims = coin(rng);
    Tensor x_any = test::random_tensor({DType::kF32, s}, seed++, -3, 3);
    Tensor x_pos = test::random_tensor({DType::kF32, s}, seed++, 0.1, 2);  // LogSum's domain
    for (const auto& [op, kind] : ops) {
      const Tensor& x = kind == Kind::kLogSum ? x_pos : x_any;
      Tensor want = reduce_ref(kind, x, axes, keepdims);
      for (int threads : {1, 2, 3}) {
        for (bool as_input : {false, true}) {
          INFO(op << " " << shape_to_string(s) << " axes " << axes.size() << " keepdims "
                  << keepdims << ", " << threads << " threads, axes as input " << as_input);
          graph::Attributes a;
          a.set("keepdims", int64_t{keepdims});
          std::vector<Tensor> in{x};
          if (as_input && !axes.empty())
            in.push_back(ints(axes));
          else if (!axes.empty())
            a.set("axes", axes);
          auto r = run_single_op(op, a, in, 1, threads, {false, true});
          REQUIRE(r.is_ok());
          CHECK(r->outputs[0].desc() == want.desc());
          CHECK(test::max_rel_error(r->outputs[0], want) <= 1e-5);
        }
      }
    }
  }
}

TEST_CASE("Reductions over long contiguous runs and with a long kept inner dim", "[ops][reduce]") {
  // The fast paths: contiguous runs of >= 16 reduced (a norm over H and W of NCHW) and the
  // innermost dim kept (ConvNeXt-V2's GRN: a norm over H and W of NHWC), for every kind.
  const std::pair<const char*, Kind> ops[] = {{"ReduceMean", Kind::kMean},
                                              {"ReduceSum", Kind::kSum},
                                              {"ReduceL1", Kind::kL1},
                                              {"ReduceL2", Kind::kL2},
                                              {"ReduceSumSquare", Kind::kSumSquare}};
  const Tensor x = test::random_tensor({DType::kF32, {3, 20, 9, 33}}, 70, -3, 3);
  for (const std::vector<int64_t>& axes :
       {std::vector<int64_t>{2, 3}, std::vector<int64_t>{1, 2}}) {
    for (const auto& [op, kind] : ops) {
      Tensor want = reduce_ref(kind, x, axes, true);
      for (int threads : {1, 2}) {
        INFO(op << " axes " << axes[0] << ", " << axes[1] << ", " << threads << " threads");
        graph::Attributes a;
        a.set("axes", axes);
        auto r = run_single_op(op, a, {x}, 1, threads);
        REQUIRE(r.is_ok());
        CHECK(test::max_rel_error(r->outputs[0], want) <= 1e-5);
      }
    }
  }
}

TEST_CASE("ReduceMean over the last axis of long rows (LayerNorm) and noop_with_empty_axes",
          "[ops][reduce]") {
  Tensor x = test::random_tensor({DType::kF32, {6, 1000}}, 5, -2, 2);
  graph::Attributes a;
  a.set("axes", std::vector<int64_t>{-1});
  for (int threads : {1, 2, 3}) {
    auto r = run_single_op("ReduceMean", a, {x}, 1, threads);
    REQUIRE(r.is_ok());
    CHECK(r->outputs[0].desc().shape == Shape{6, 1});
    CHECK(test::max_rel_error(r->outputs[0], reduce_ref(Kind::kMean, x, {-1}, true)) <= 1e-6);
  }
  graph::Attributes noop;
  noop.set("noop_with_empty_axes", int64_t{1});
  auto r = run_single_op("ReduceSum", noop, {x}, 1, 2);
  REQUIRE(r.is_ok());
  CHECK(test::max_rel_error(r->outputs[0], x) == 0);
}

TEST_CASE("Reduce ops and Pow refuse bad nodes with the field in the error", "[ops][reduce]") {
  Tensor x = test::random_tensor({DType::kF32, {2, 3}}, 1);
  graph::Attributes bad;
  bad.set("axes", std::vector<int64_t>{2});
  auto r = run_single_op("ReduceMean", bad, {x});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("axes") != std::string::npos);
  graph::Attributes twice;
  twice.set("axes", std::vector<int64_t>{1, -1});
  REQUIRE_FALSE(run_single_op("ReduceSum", twice, {x}).is_ok());
  // Axes as a run-time (non-constant) input: shapes would depend on data.
  auto rt = run_single_op("ReduceSum", {}, {x, ints({0})}, 1, 1, {false, false});
  REQUIRE_FALSE(rt.is_ok());
  CHECK(rt.status().message().find("constant") != std::string::npos);
  auto p = run_single_op("Pow", {}, {x, test::random_tensor({DType::kF32, {4}}, 2)});
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().message().find("broadcast") != std::string::npos);
}

// Integer data: ReduceMax / Min / Sum / Prod against a naive loop over [3, 4, 5] int32 and int64
// values (negative ones included), axes 1 and {0, 2}; a float-only reduction refuses them.
TEST_CASE("ReduceMax/Min/Sum/Prod of int32 and int64 data", "[ops][reduce]") {
  const int64_t d0 = 3, d1 = 4, d2 = 5;
  for (DType dt : {DType::kI32, DType::kI64}) {
    Tensor x(TensorDesc{dt, {d0, d1, d2}});
    std::vector<int64_t> v(static_cast<size_t>(d0 * d1 * d2));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 37) % 23) - 11;
    for (size_t i = 0; i < v.size(); ++i) {
      if (dt == DType::kI32)
        x.data_as<int32_t>()[i] = static_cast<int32_t>(v[i]);
      else
        x.data_as<int64_t>()[i] = v[i];
    }
    for (const std::string op : {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd"}) {
      for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, {0, 2}}) {
        INFO(op << " axes " << axes.size() << " dtype " << static_cast<int>(dt));
        graph::Attributes a;
        a.set("axes", axes);
        a.set("keepdims", int64_t{0});
        auto r = run_single_op(op, a, {x}, 1, 2);
        REQUIRE(r.is_ok());
        const Tensor& y = r->outputs[0];
        REQUIRE(y.desc().dtype == dt);
        const bool ax1 = axes.size() == 1;
        const int64_t outer = ax1 ? d0 : d1, inner = ax1 ? d2 : 1;
        REQUIRE(y.numel() == outer * inner);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = 0; k < inner; ++k) {
            int64_t want = op == "ReduceMax"    ? INT64_MIN
                           : op == "ReduceMin"  ? INT64_MAX
                           : op == "ReduceProd" ? 1
                                                : 0;
            auto fold = [&](int64_t e) {
              if (op == "ReduceMax")
                want = std::max(want, e);
              else if (op == "ReduceMin")
                want = std::min(want, e);
              else if (op == "ReduceProd")
                want *= e;
              else
                want += e;
            };
            if (ax1)
              for (int64_t j = 0; j < d1; ++j) fold(v[static_cast<size_t>((o * d1 + j) * d2 + k)]);
            else
              for (int64_t i = 0; i < d0; ++i)
                for (int64_t j = 0; j < d2; ++j)
                  fold(v[static_cast<size_t>((i * d1 + o) * d2 + j)]);
            const int64_t got = dt == DType::kI32 ? y.data_as<int32_t>()[o * inner + k]
                                                  : y.data_as<int64_t>()[o * inner + k];
            if (dt == DType::kI32) want = static_cast<int32_t>(want);
            CHECK(got == want);
          }
      }
    }
    auto mean = run_single_op("ReduceMean", {}, {x});
    REQUIRE_FALSE(mean.is_ok());
    CHECK_THAT(mean.status().message(), Catch::Contains("must be float32"));
  }
}
