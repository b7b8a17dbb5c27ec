// The N-input broadcast plan and its walks (ops/broadcast.h, ops/broadcast_walk.h), and the ops
// built on them (comparisons, logic, Where, IntBinary/Mod, Expand, Tile), against a naive reference
// written from numpy's rules: align shapes right, pad with 1, each output dim is the non-1 size, an
// input of size 1 along a dim repeats its one element. Edge cases: size-1 dims on different inputs,
// scalars, rank differences, 0-d outputs, zero-size dims (plan level: graphs refuse empty tensors),
// arbitrary cut points within runs.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "ops/broadcast.h"
#include "ops/broadcast_walk.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::random_tensor;
using graphi::test::run_single_op;

namespace {

// numpy.broadcast_shapes, written from the rule.
Shape ref_shape(const std::vector<Shape>& in) {
  size_t rank = 0;
  for (const Shape& s : in) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : in)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  return out;
}

// The flat element of input `in` read by output element i of shape `out`.
int64_t ref_offset(int64_t i, const Shape& out, const Shape& in) {
  std::vector<int64_t> c(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    c[d] = i % out[d];
    i /= out[d];
  }
  int64_t off = 0;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) off = off * in[d] + (in[d] == 1 ? 0 : c[lead + d]);
  return off;
}

// A random set of `n` shapes that broadcast together: an output of rank 0..5 with dims from {1, 2,
// 3, 5, 7}; each input drops some leading dims and turns some dims into 1.
std::vector<Shape> random_shapes(std::mt19937& rng, int n) {
  const int64_t sizes[] = {1, 2, 3, 5, 7};
  const size_t rank = rng() % 6;
  Shape out(rank);
  for (int64_t& d : out) d = sizes[rng() % 5];
  std::vector<Shape> in;
  for (int k = 0; k < n; ++k) {
    const size_t drop = rng() % 4 == 0 ? rng() % (rank + 1) : 0;  // rank differences, scalars
    Shape s(out.begin() + static_cast<std::ptrdiff_t>(drop), out.end());
    for (int64_t& d : s)
      if (rng() % 3 == 0) d = 1;
    in.push_back(s);
  }
  return in;
}

Result<ops::BroadcastPlan> plan_of(const Shape& out, const std::vector<Shape>& in) {
  if (in.size() == 1) return ops::make_broadcast_plan("test", out, in[0]);
  if (in.size() == 2) return ops::make_broadcast_plan("test", out, in[0], in[1]);
  return ops::make_broadcast_plan("test", out, in[0], in[1], in[2]);
}

// Walks [0, numel) in three pieces with cut points anywhere and checks every position is visited
// once with the reference offsets.
template <int N>
void check_walk(const ops::BroadcastPlan& p, const Shape& out, const std::vector<Shape>& in,
                std::mt19937& rng) {
  const int64_t n = p.numel;
  REQUIRE(n == shape_numel(out));
  std::vector<int> seen(static_cast<size_t>(n), 0);
  std::vector<int64_t> offs(static_cast<size_t>(n) * N, -1);
  int64_t c1 = n ? static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1)) : 0;
  int64_t c2 = n ? static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1)) : 0;
  if (c1 > c2) std::swap(c1, c2);
  // Plain locals, not a structured binding: clang 14 (the TSan lane) cannot capture those.
  for (const auto& range : {std::pair{int64_t{0}, c1}, std::pair{c1, c2}, std::pair{c2, n}}) {
    const int64_t lo = range.first, hi = range.second;
    ops::for_each_broadcast_element<N>(p, lo, hi, [&](int64_t i, const int64_t* off) {
      REQUIRE(i >= lo);
      REQUIRE(i < hi);
      ++seen[static_cast<size_t>(i)];
      for (int k = 0; k < N; ++k) offs[static_cast<size_t>(i * N + k)] = off[k];
    });
  }
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE(seen[static_cast<size_t>(i)] == 1);
    for (int k = 0; k < N; ++k)
      REQUIRE(offs[static_cast<size_t>(i * N + k)] ==
              ref_offset(i, out, in[static_cast<size_t>(k)]));
  }
  // The runs: inner strides 0 or 1, lengths adding up to the range.
  for (int k = 0; k < N; ++k) REQUIRE((p.inner_stride(k) == 0 || p.inner_stride(k) == 1));
  int64_t total = 0;
  ops::for_each_broadcast_run(p, c1, n, [&](int64_t pos, const int64_t*, int64_t len) {
    REQUIRE(pos == c1 + total);
    REQUIRE(len >= 1);
    total += len;
  });
  REQUIRE(total == n - c1);
}

Tensor ints(DType dt, const Shape& s, const std::vector<int64_t>& v) {
  Tensor t(TensorDesc{dt, s});
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::kI64)
      t.data_as<int64_t>()[i] = v[i];
    else
      t.data_as<int32_t>()[i] = static_cast<int32_t>(v[i]);
  }
  return t;
}

// Element i of t as a double, for any of the dtypes used here.
double at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kI64:
      return static_cast<double>(t.data_as<int64_t>()[i]);
    case DType::kI32:
      return static_cast<double>(t.data_as<int32_t>()[i]);
    default:
      return static_cast<double>(t.data_as<float>()[i]);
  }
}

void require_equal(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  REQUIRE(std::memcmp(got.data(), want.data(), want.bytes()) == 0);
}

// Small integers, so comparisons see ties.
Tensor coarse(DType dt, const Shape& s, uint64_t seed) {
  Tensor t = random_tensor(TensorDesc{DType::kI64, s}, seed, -3, 4);
  if (dt == DType::kI64) return t;
  Tensor r(TensorDesc{dt, s});
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DType::kI32)
      r.data_as<int32_t>()[i] = static_cast<int32_t>(t.data_as<int64_t>()[i]);
    else
      r.data_as<float>()[i] = static_cast<float>(t.data_as<int64_t>()[i]);
  }
  return r;
}

}  // namespace

TEST_CASE("broadcast plan walks 1, 2 and 3 inputs like numpy at any cut points",
          "[ops][broadcast]") {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + trial % 3;
    std::vector<Shape> in = random_shapes(rng, n);
    const Shape out = ref_shape(in);
    INFO("trial " << trial << " out " << shape_to_string(out));
    auto p = plan_of(out, in);
    REQUIRE(p.is_ok());
    REQUIRE(p->inputs == n);
    if (n == 1) check_walk<1>(*p, out, in, rng);
    if (n == 2) check_walk<2>(*p, out, in, rng);
    if (n == 3) check_walk<3>(*p, out, in, rng);
  }
}

TEST_CASE("broadcast plan merges dims: flat, row, scalar and 0-d cases", "[ops][broadcast]") {
  std::mt19937 rng(7);
  struct Case {
    std::vector<Shape> in;
    int rank;  // merged loop dims
  };
  const std::vector<Case> cases = {
      {{{4, 5, 6}, {4, 5, 6}, {4, 5, 6}}, 1},  // same shapes: one flat run
      {{{4, 5, 6}, {}, {1}}, 1},               // scalars and a [1]: still flat
      {{{}, {}, {}}, 1},                       // 0-d output: one element
      {{{1, 1}, {1}, {}}, 1},                  // all-ones output
      {{{8, 16}, {16}}, 2},                    // the bias add: rows
      {{{64, 128, 256}, {1, 128, 1}}, 3},      // a per-channel operand
      {{{2, 1, 4}, {3, 1}, {4}}, 3},           // Where's three-way case
      {{{6, 7}, {6, 1}, {1, 7}}, 2},           // size-1 dims on different inputs
      {{{3, 1, 5}}, 1},                        // Expand of [3, 1, 5] to itself
  };
  for (const Case& c : cases) {
    const Shape out = ref_shape(c.in);
    INFO("out " << shape_to_string(out));
    auto p = plan_of(out, c.in);
    REQUIRE(p.is_ok());
    CHECK(p->rank == c.rank);
    if (c.in.size() == 1) check_walk<1>(*p, out, c.in, rng);
    if (c.in.size() == 2) check_walk<2>(*p, out, c.in, rng);
    if (c.in.size() == 3) check_walk<3>(*p, out, c.in, rng);
  }
  // More than kMaxRank alternating broadcast patterns: a clear error naming the shapes.
  Shape a, b;
  for (int d = 0; d <= ops::BroadcastPlan::kMaxRank; ++d) {
    a.push_back(d % 2 ? 2 : 1);
    b.push_back(d % 2 ? 1 : 2);
  }
  auto bad = ops::make_broadcast_plan("test: node 'n' (Where)", ref_shape({a, b}), a, b, a);
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("node 'n'") &&
                                         Catch::Contains("32 loop dims") &&
                                         Catch::Contains(shape_to_string(a)));
}

TEST_CASE("broadcast plan with a zero-size dim visits nothing and ops refuse empty tensors",
          "[ops][broadcast]") {
  const Shape out{2, 0, 3};
  auto p = ops::make_broadcast_plan("test", out, Shape{2, 0, 1}, Shape{3}, Shape{1, 0, 3});
  REQUIRE(p.is_ok());
  CHECK(p->numel == 0);
  int calls = 0;
  ops::for_each_broadcast_element<3>(*p, 0, p->numel, [&](int64_t, const int64_t*) { ++calls; });
  CHECK(calls == 0);
  // Through the registry the graph is refused with a message, never run.
  auto r = run_single_op(
      "Greater", {},
      {Tensor(TensorDesc{DType::kF32, {2, 0}}), Tensor(TensorDesc{DType::kF32, {2, 1}})});
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("at least 1"));
}

TEST_CASE("comparisons, logic, Where and integer ops on random N-input broadcasts",
          "[ops][broadcast][logic][int]") {
  std::mt19937 rng(11);
  uint64_t seed = 100;
  for (int trial = 0; trial < 40; ++trial) {
    const std::vector<Shape> s3 = random_shapes(rng, 3);
    const std::vector<Shape> s2 = {s3[0], s3[1]};
    const Shape out2 = ref_shape(s2), out3 = ref_shape(s3);
    const int threads = 1 + trial % 3;
    INFO("trial " << trial << ": " << shape_to_string(s3[0]) << " " << shape_to_string(s3[1]) << " "
                  << shape_to_string(s3[2]) << ", threads " << threads);
    for (DType dt : {DType::kF32, DType::kI32, DType::kI64}) {
      Tensor a = coarse(dt, s3[0], seed++), b = coarse(dt, s3[1], seed++);
      // Comparisons (every dtype) and the float-only logic ops.
      for (const char* op : {"Greater", "LessOrEqual", "Equal", "Xor", "Max"}) {
        const bool cmp = std::strcmp(op, "Xor") != 0 && std::strcmp(op, "Max") != 0;
        if (!cmp && dt != DType::kF32) continue;
        Tensor want(TensorDesc{DType::kF32, out2});
        for (int64_t i = 0; i < want.numel(); ++i) {
          const double x = at(a, ref_offset(i, out2, s2[0])), y = at(b, ref_offset(i, out2, s2[1]));
          double v = 0;
          if (!std::strcmp(op, "Greater")) v = x > y;
          if (!std::strcmp(op, "LessOrEqual")) v = x <= y;
          if (!std::strcmp(op, "Equal")) v = x == y;
          if (!std::strcmp(op, "Xor")) v = (x != 0) != (y != 0);
          if (!std::strcmp(op, "Max")) v = std::max(x, y);
          want.data_as<float>()[i] = static_cast<float>(v);
        }
        INFO(op << " " << dtype_name(dt));
        auto r = run_single_op(op, {}, {a, b}, 1, threads);
        REQUIRE(r.is_ok());
        require_equal(r->outputs[0], want);
      }
      // Where(condition, X, Y): X and Y of this dtype.
      Tensor c = coarse(DType::kF32, s3[2], seed++);
      Tensor want(TensorDesc{dt, out3});
      for (int64_t i = 0; i < want.numel(); ++i) {
        const bool t = at(c, ref_offset(i, out3, s3[2])) != 0;
        const double v = t ? at(a, ref_offset(i, out3, s3[0])) : at(b, ref_offset(i, out3, s3[1]));
        if (dt == DType::kF32) want.data_as<float>()[i] = static_cast<float>(v);
        if (dt == DType::kI32) want.data_as<int32_t>()[i] = static_cast<int32_t>(v);
        if (dt == DType::kI64) want.data_as<int64_t>()[i] = static_cast<int64_t>(v);
      }
      {
        INFO("Where " << dtype_name(dt));
        auto r = run_single_op("Where", {}, {c, a, b}, 1, threads);
        REQUIRE(r.is_ok());
        require_equal(r->outputs[0], want);
      }
      if (dt == DType::kF32) continue;
      // IntBinary Sub and Mod (Python's sign), divisor made non-zero.
      std::vector<int64_t> dv;
      for (int64_t i = 0; i < b.numel(); ++i)
        dv.push_back(at(b, i) == 0 ? 5 : static_cast<int64_t>(at(b, i)));
      const Tensor d = ints(dt, s3[1], dv);
      for (const char* op : {"Sub", "Mod"}) {
        Tensor w(TensorDesc{dt, out2});
        for (int64_t i = 0; i < w.numel(); ++i) {
          const auto x = static_cast<int64_t>(at(a, ref_offset(i, out2, s2[0])));
          const auto y = static_cast<int64_t>(at(d, ref_offset(i, out2, s2[1])));
          int64_t v = x - y;
          if (!std::strcmp(op, "Mod")) v = ((x % y) + y) % y;
          if (dt == DType::kI64) w.data_as<int64_t>()[i] = v;
          if (dt == DType::kI32) w.data_as<int32_t>()[i] = static_cast<int32_t>(v);
        }
        graph::Attributes at_;
        if (!std::strcmp(op, "Sub")) at_.set("op", std::string("Sub"));
        INFO(op << " " << dtype_name(dt));
        auto r =
            run_single_op(std::strcmp(op, "Sub") ? "Mod" : "IntBinary", at_, {a, d}, 1, threads);
        REQUIRE(r.is_ok());
        require_equal(r->outputs[0], w);
      }
    }
  }
}

TEST_CASE("Expand and Tile on random shapes match numpy broadcast_to and tile",
          "[ops][broadcast][tile]") {
  std::mt19937 rng(5);
  uint64_t seed = 500;
  for (int trial = 0; trial < 40; ++trial) {
    const DType dt = trial % 2 ? DType::kF32 : DType::kI64;
    const int threads = 1 + trial % 3;
    // Expand: input and the shape operand are two broadcast-compatible shapes (the shape operand is
    // at least [1]: an empty shape tensor would be an empty tensor, which graphs refuse).
    std::vector<Shape> s = random_shapes(rng, 2);
    if (s[1].empty()) s[1] = {1};
    const Shape out = ref_shape(s);
    Tensor x = coarse(dt, s[0], seed++);
    Tensor want(TensorDesc{dt, out});
    for (int64_t i = 0; i < want.numel(); ++i) {
      const int64_t o = ref_offset(i, out, s[0]);
      if (dt == DType::kF32)
        want.data_as<float>()[i] = x.data_as<float>()[o];
      else
        want.data_as<int64_t>()[i] = x.data_as<int64_t>()[o];
    }
    INFO("trial " << trial << " Expand " << shape_to_string(s[0]) << " to "
                  << shape_to_string(s[1]));
    auto e = run_single_op("Expand", {},
                           {x, ints(DType::kI64, {static_cast<int64_t>(s[1].size())},
                                    std::vector<int64_t>(s[1].begin(), s[1].end()))},
                           1, threads, {false, true});
    if (!e.is_ok()) FAIL(e.status().message());
    require_equal(e->outputs[0], want);
    // Tile: random repeats 1..3 per dim; out[c] = x[c % shape].
    if (s[0].empty()) continue;
    std::vector<int64_t> reps;
    Shape tout;
    for (int64_t d : s[0]) {
      reps.push_back(1 + static_cast<int64_t>(rng() % 3));
      tout.push_back(d * reps.back());
    }
    Tensor tw(TensorDesc{dt, tout});
    for (int64_t i = 0; i < tw.numel(); ++i) {
      int64_t rem = i, off = 0, step = 1;
      for (size_t d = tout.size(); d-- > 0;) {
        off += (rem % tout[d]) % s[0][d] * step;
        step *= s[0][d];
        rem /= tout[d];
      }
      if (dt == DType::kF32)
        tw.data_as<float>()[i] = x.data_as<float>()[off];
      else
        tw.data_as<int64_t>()[i] = x.data_as<int64_t>()[off];
    }
    INFO("Tile by " << shape_to_string(reps));
    auto t =
        run_single_op("Tile", {}, {x, ints(DType::kI64, {static_cast<int64_t>(reps.size())}, reps)},
                      1, threads, {false, true});
    REQUIRE(t.is_ok());
    require_equal(t->outputs[0], tw);
  }
  // Tile of rank 9 with every dim repeated: 18 interleaved loop dims, none mergeable.
  const Shape s9(9, 2), t9(9, 4);
  Tensor x9 = coarse(DType::kI64, s9, 77);
  Tensor w9(TensorDesc{DType::kI64, t9});
  for (int64_t i = 0; i < w9.numel(); ++i) {
    int64_t rem = i, off = 0, step = 1;
    for (size_t d = 9; d-- > 0;) {
      off += (rem % 4) % 2 * step;
      step *= 2;
      rem /= 4;
    }
    w9.data_as<int64_t>()[i] = x9.data_as<int64_t>()[off];
  }
  auto t = run_single_op("Tile", {}, {x9, ints(DType::kI64, {9}, std::vector<int64_t>(9, 2))}, 1, 2,
                         {false, true});
  REQUIRE(t.is_ok());
  require_equal(t->outputs[0], w9);
}
