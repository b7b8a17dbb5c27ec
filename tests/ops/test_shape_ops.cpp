// Concat, Split, Slice, Transpose, Reshape, Identity against the naive references in
// tests/support/reference_basic on f32/i32/i64 data and teams of 1, 2 and 3 threads, plus every
// shape-rule error. Data movement is exact, so outputs must equal the reference bit for bit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_basic.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

bool same(const Tensor& a, const Tensor& b) {
  return a.desc() == b.desc() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

Tensor ints(std::vector<int64_t> v, DType t = DType::kI64) {
  Tensor x(TensorDesc{t, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kI64)
      x.data_as<int64_t>()[i] = v[i];
    else
      x.data_as<int32_t>()[i] = static_cast<int32_t>(v[i]);
  }
  return x;
}

const DType kDtypes[] = {DType::kF32, DType::kI32, DType::kI64};

Tensor make_data(const Shape& s, DType t, uint64_t seed) {
  return test::random_tensor({t, s}, seed, -1000, 1000);
}

Shape random_shape(std::mt19937& rng, int min_rank, int max_rank, int max_dim = 5) {
  std::uniform_int_distribution<int> rank_d(min_rank, max_rank), dim_d(1, max_dim);
  Shape s(static_cast<size_t>(rank_d(rng)));
  for (int64_t& d : s) d = dim_d(rng);
  return s;
}

graph::Attributes attrs_of(
    std::initializer_list<std::pair<const std::string, graph::Attribute>> kv) {
  graph::Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

std::string where_of(const std::string& op) { return "node 'node' (" + op + ")"; }

// Runs op on 1, 2 and 3 threads and checks every output against `want`.
void check_all_teams(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<Tensor>& inputs, const std::vector<Tensor>& want,
                     const std::vector<bool>& constant = {}) {
  for (int threads : {1, 2, 3}) {
    INFO(op << " on " << threads << " threads");
    auto r = run_single_op(op, attrs, inputs, static_cast<int>(want.size()), threads, constant);
    if (!r.is_ok()) FAIL(r.status().message());
    REQUIRE(r->outputs.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("output " << i << ": got " << r->outputs[i].desc().to_string() << ", want "
                     << want[i].desc().to_string());
      CHECK(same(r->outputs[i], want[i]));
    }
  }
}

}  // namespace

TEST_CASE("Concat matches the reference on random shapes, axes and dtypes", "[ops][shape]") {
  std::mt19937 rng(11);
  uint64_t seed = 1;
  for (int trial = 0; trial < 40; ++trial) {
    Shape base = random_shape(rng, 1, 4);
    const int64_t rank = static_cast<int64_t>(base.size());
    const int64_t axis = std::uniform_int_distribution<int64_t>(-rank, rank - 1)(rng);
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    const DType t = kDtypes[trial % 3];
    std::vector<Tensor> xs;
    const int n = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int i = 0; i < n; ++i) {
      Shape s = base;
      s[ax] = std::uniform_int_distribution<int64_t>(1, 4)(rng);
      xs.push_back(make_data(s, t, seed++));
    }
    INFO("base " << shape_to_string(base) << " axis " << axis << " inputs " << n);
    check_all_teams("Concat", attrs_of({{"axis", axis}}), xs, {test::concat_ref(xs, axis)});
  }
  // The LSTM shape: [B, H] pieces along the last axis, large enough to split mid-row.
  std::vector<Tensor> xs = {make_data({3, 70}, DType::kF32, 90),
                            make_data({3, 35}, DType::kF32, 91),
                            make_data({3, 1}, DType::kF32, 92)};
  check_all_teams("Concat", attrs_of({{"axis", int64_t{-1}}}), xs, {test::concat_ref(xs, -1)});
}

TEST_CASE("Split matches the reference with sizes, equal parts and num_outputs", "[ops][shape]") {
  std::mt19937 rng(12);
  uint64_t seed = 100;
  for (int trial = 0; trial < 30; ++trial) {
    Shape s = random_shape(rng, 1, 4);
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t axis = std::uniform_int_distribution<int64_t>(-rank, rank - 1)(rng);
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    s[ax] = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    Tensor x = make_data(s, kDtypes[trial % 3], seed++);
    // Random sizes summing to the axis length.
    std::vector<int64_t> sizes;
    for (int64_t left = s[ax]; left > 0;) {
      sizes.push_back(std::uniform_int_distribution<int64_t>(1, left)(rng));
      left -= sizes.back();
    }
    INFO("shape " << shape_to_string(s) << " axis " << axis);
    std::vector<Tensor> want = test::split_ref(x, axis, sizes);
    check_all_teams("Split", attrs_of({{"axis", axis}, {"split", sizes}}), {x}, want);
    check_all_teams("Split", attrs_of({{"axis", axis}}), {x, ints(sizes)}, want, {false, true});
  }
  // Equal split over the declared outputs (the LSTM gate split: [B, 4H] -> 4 x [B, H]).
  Tensor g = make_data({2, 4 * 33}, DType::kF32, 7);
  check_all_teams("Split", attrs_of({{"axis", int64_t{1}}}), {g},
                  test::split_ref(g, 1, {33, 33, 33, 33}));
  // Default axis 0.
  Tensor h = make_data({6, 2}, DType::kI64, 8);
  check_all_teams("Split", {}, {h}, test::split_ref(h, 0, {2, 2, 2}));
  // ONNX 18 num_outputs with an uneven length: ceil-sized chunks, the last smaller.
  Tensor u = make_data({7, 3}, DType::kF32, 9);
  check_all_teams("Split", attrs_of({{"num_outputs", int64_t{3}}}), {u},
                  test::split_ref(u, 0, {3, 3, 1}));
}

TEST_CASE("Slice matches the reference for attributes and constant inputs", "[ops][shape]") {
  std::mt19937 rng(13);
  uint64_t seed = 200;
  int checked = 0;
  for (int trial = 0; trial < 200 && checked < 60; ++trial) {
    Shape s = random_shape(rng, 1, 4, 7);
    const int64_t rank = static_cast<int64_t>(s.size());
    // A random subset of axes in random order, sometimes written as negative.
    std::vector<int64_t> order(s.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const size_t k = std::uniform_int_distribution<size_t>(1, s.size())(rng);
    std::vector<int64_t> starts, ends, axes, steps;
    for (size_t i = 0; i < k; ++i) {
      const int64_t d = s[static_cast<size_t>(order[i])];
      std::uniform_int_distribution<int64_t> idx(-d - 3, d + 3), step_d(-3, 3), coin(0, 5);
      int64_t step = 0;
      while (step == 0) step = step_d(rng);
      int64_t e = idx(rng);
      if (coin(rng) == 0) e = step > 0 ? kMax : kMin;  // the "to the end" idioms
      starts.push_back(idx(rng));
      ends.push_back(e);
      axes.push_back(coin(rng) < 2 ? order[i] - rank : order[i]);
      steps.push_back(step);
    }
    Tensor x = make_data(s, kDtypes[trial % 3], seed++);
    Tensor want = test::slice_ref(x, starts, ends, axes, steps);
    if (want.numel() == 0 || std::count(want.shape().begin(), want.shape().end(), 0))
      continue;  // empty: an error case
    ++checked;
    INFO("shape " << shape_to_string(s) << " starts " << shape_to_string(starts) << " ends "
                  << shape_to_string(ends) << " axes " << shape_to_string(axes) << " steps "
                  << shape_to_string(steps));
    check_all_teams(
        "Slice", attrs_of({{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}),
        {x}, {want});
    check_all_teams("Slice", {}, {x, ints(starts), ints(ends), ints(axes), ints(steps)}, {want},
                    {false, true, true, true, true});
  }
  CHECK(checked >= 40);

  // Defaults: no axes means 0..k-1, no steps means 1 (opset-13 inputs with 3 inputs, i32 indices).
  Tensor x = make_data({5, 6, 7}, DType::kF32, 300);
  check_all_teams("Slice", {}, {x, ints({1, -4}, DType::kI32), ints({4, 100}, DType::kI32)},
                  {test::slice_ref(x, {1, -4}, {4, 100}, {}, {})}, {false, true, true});
  check_all_teams(
      "Slice", attrs_of({{"starts", std::vector<int64_t>{2}}, {"ends", std::vector<int64_t>{-1}}}),
      {x}, {test::slice_ref(x, {2}, {-1}, {}, {})});
  // Reverse a whole axis: start -1, end INT64_MIN, step -1.
  check_all_teams("Slice", {}, {x, ints({-1}), ints({kMin}), ints({1}), ints({-1})},
                  {test::slice_ref(x, {-1}, {kMin}, {1}, {-1})}, {false, true, true, true, true});
  // The LSTM use: columns [H, 2H) of a [B, 4H] gate tensor.
  Tensor g = make_data({3, 4 * 37}, DType::kF32, 301);
  check_all_teams("Slice", {}, {g, ints({37}), ints({74}), ints({1})},
                  {test::slice_ref(g, {37}, {74}, {1}, {})}, {false, true, true, true});
}

TEST_CASE("Transpose matches the reference for random and default permutations", "[ops][shape]") {
  std::mt19937 rng(14);
  uint64_t seed = 400;
  for (int trial = 0; trial < 40; ++trial) {
    Shape s = random_shape(rng, 1, 5);
    std::vector<int64_t> perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Tensor x = make_data(s, kDtypes[trial % 3], seed++);
    INFO("shape " << shape_to_string(s) << " perm " << shape_to_string(perm));
    check_all_teams("Transpose", attrs_of({{"perm", perm}}), {x}, {test::transpose_ref(x, perm)});
    if (trial % 4 == 0) check_all_teams("Transpose", {}, {x}, {test::transpose_ref(x, {})});
  }
  Tensor m = make_data({37, 53}, DType::kF32, 450);
  check_all_teams("Transpose", {}, {m}, {test::transpose_ref(m, {1, 0})});
  // Batches of 2-D transposes (ops/transpose_tiles.h: 8x8 tiles, units of 64 x 256 split over
  // the team): NCHW -> NHWC and back with tails in both directions, an attention head's K^T,
  // several units per batch, 4-byte integers; 8-byte elements keep the gather. Fewer than 8
  // output columns (a 3-channel or 1-channel volume to channels-last, several units per batch):
  // the narrow loop.
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
    DType dtype;
  };
  const std::vector<Case> cases = {{{2, 48, 9, 13}, {0, 2, 3, 1}, DType::kF32},
                                   {{1, 7, 9, 50}, {0, 3, 1, 2}, DType::kF32},
                                   {{2, 17, 4, 24}, {0, 2, 3, 1}, DType::kF32},
                                   {{3, 70, 300}, {0, 2, 1}, DType::kF32},
                                   {{2, 300, 70}, {0, 2, 1}, DType::kI32},
                                   {{9, 8, 10}, {2, 1, 0}, DType::kF32},
                                   {{16, 24}, {1, 0}, DType::kI64},
                                   {{2, 3, 4, 30, 41}, {0, 2, 3, 4, 1}, DType::kF32},
                                   {{1, 1, 5, 9, 11}, {0, 2, 3, 4, 1}, DType::kF32},
                                   {{3, 7, 50}, {0, 2, 1}, DType::kI32}};
  for (const Case& c : cases) {
    INFO("shape " << shape_to_string(c.shape) << " perm " << shape_to_string(c.perm));
    Tensor x = make_data(c.shape, c.dtype, seed++);
    check_all_teams("Transpose", attrs_of({{"perm", c.perm}}), {x},
                    {test::transpose_ref(x, c.perm)});
  }
}

TEST_CASE("Reshape handles 0 and -1 from an attribute or a constant input", "[ops][shape]") {
  struct Case {
    Shape in;
    std::vector<int64_t> spec;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, {0, -1}}, {{2, 3, 4}, {-1}}, {{2, 3, 4}, {4, 0, 2}}, {{2, 3, 4}, {1, 24, 1}},
      {{24}, {2, -1, 3}},   {{5, 1}, {5}},     {{7}, {1, 7}},          {{}, {1, 1}},
      {{3, 4}, {0, 0}},     {{2, 6}, {-1, 0}}};
  uint64_t seed = 500;
  for (const Case& c : cases) {
    for (DType t : kDtypes) {
      Tensor x = make_data(c.in, t, seed++);
      Tensor want = test::reshape_ref(x, c.spec);
      INFO(shape_to_string(c.in) << " -> " << shape_to_string(c.spec));
      check_all_teams("Reshape", attrs_of({{"shape", c.spec}}), {x}, {want});
      check_all_teams("Reshape", {}, {x, ints(c.spec)}, {want}, {false, true});
      check_all_teams("Reshape", {}, {x, ints(c.spec, DType::kI32)}, {want}, {false, true});
    }
  }
}

TEST_CASE("Identity copies every dtype", "[ops][shape]") {
  uint64_t seed = 600;
  for (DType t : kDtypes)
    for (Shape s : {Shape{}, Shape{1}, Shape{3, 5, 7}, Shape{1000}}) {
      Tensor x = make_data(s, t, seed++);
      check_all_teams("Identity", {}, {x}, {x});
    }
}

TEST_CASE("Reshape and Identity are small ops, the others are not", "[ops][shape]") {
  const ops::Registry& r = ops::Registry::get();
  for (const char* op : {"Reshape", "Identity"}) {
    REQUIRE(r.find(op) != nullptr);
    CHECK(r.find(op)->small);
  }
  for (const char* op : {"Concat", "Split", "Slice", "Transpose"}) {
    REQUIRE(r.find(op) != nullptr);
    CHECK_FALSE(r.find(op)->small);
  }
  graph::Node node{"Transpose", "n", {}, {}, {}};
  TensorDesc a{DType::kF32, {4, 8}}, y{DType::kF32, {8, 4}};
  const TensorDesc* in[] = {&a};
  const TensorDesc* out[] = {&y};
  CHECK(r.cost(node, in, out).bytes == 2 * 32 * 4);
}

// ---- errors ----

namespace {
std::string error_of(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<Tensor>& inputs, int num_outputs = 1,
                     const std::vector<bool>& constant = {}) {
  auto r = run_single_op(op, attrs, inputs, num_outputs, 1, constant);
  if (r.is_ok()) return "<no error>";
  CHECK_THAT(r.status().message(), Catch::Contains(where_of(op)));
  return r.status().message();
}
const Tensor kX23 = test::random_tensor({DType::kF32, {2, 3}}, 1);
}  // namespace

TEST_CASE("Concat errors name the attribute, the axis and both shapes", "[ops][shape][errors]") {
  CHECK_THAT(error_of("Concat", {}, {kX23, kX23}),
             Catch::Contains("missing required attribute 'axis'"));
  CHECK_THAT(error_of("Concat", attrs_of({{"axis", int64_t{2}}}), {kX23, kX23}),
             Catch::Contains("attribute 'axis' = 2 is out of range for input of shape [2, 3]"));
  CHECK_THAT(error_of("Concat", attrs_of({{"axis", int64_t{-3}}}), {kX23}),
             Catch::Contains("'axis' = -3"));
  CHECK_THAT(error_of("Concat", attrs_of({{"axis", std::string("1")}}), {kX23}),
             Catch::Contains("attribute 'axis' must be an int, got string"));
  Tensor y = test::random_tensor({DType::kF32, {3, 3}}, 2);
  CHECK_THAT(error_of("Concat", attrs_of({{"axis", int64_t{1}}}), {kX23, y}),
             Catch::Contains("input 1 has shape [3, 3] but input 0 has shape [2, 3]"));
  Tensor r3 = test::random_tensor({DType::kF32, {2, 3, 1}}, 3);
  CHECK_THAT(error_of("Concat", attrs_of({{"axis", int64_t{0}}}), {kX23, r3}),
             Catch::Contains("[2, 3, 1]"));
  Tensor i = test::random_tensor({DType::kI64, {2, 3}}, 4, 0, 5);
  CHECK_THAT(error_of("Concat", attrs_of({{"axis", int64_t{0}}}), {kX23, i}),
             Catch::Contains("input 1 is int64[2, 3] but input 0 is float32[2, 3]"));
  CHECK_THAT(error_of("Concat", attrs_of({{"axis", int64_t{0}}}), {}),
             Catch::Contains("expects at least 1 input"));
}

TEST_CASE("Split errors name the sizes, the axis and the shape", "[ops][shape][errors]") {
  CHECK_THAT(
      error_of("Split", attrs_of({{"axis", int64_t{1}}, {"split", std::vector<int64_t>{1, 1}}}),
               {kX23}, 2),
      Catch::Contains("'split' = [1, 1] sums to 2 but axis 1 of input [2, 3] has size 3"));
  CHECK_THAT(
      error_of("Split", attrs_of({{"axis", int64_t{1}}, {"split", std::vector<int64_t>{1, 2}}}),
               {kX23}, 3),
      Catch::Contains("has 2 entries but the node has 3 outputs"));
  CHECK_THAT(error_of("Split", attrs_of({{"axis", int64_t{1}}}), {kX23}, 2),
             Catch::Contains("does not divide into 2 equal outputs"));
  CHECK_THAT(error_of("Split", attrs_of({{"axis", int64_t{5}}}), {kX23}, 2),
             Catch::Contains("'axis' = 5"));
  CHECK_THAT(error_of("Split", attrs_of({{"num_outputs", int64_t{3}}}), {kX23}, 2),
             Catch::Contains("'num_outputs' = 3 but the node has 2 outputs"));
  CHECK_THAT(error_of("Split", attrs_of({{"split", std::vector<int64_t>{2, 0}}}), {kX23}, 2),
             Catch::Contains("size below 1"));
}

TEST_CASE("Slice errors name the field", "[ops][shape][errors]") {
  using V = std::vector<int64_t>;
  CHECK_THAT(error_of("Slice", attrs_of({{"starts", V{0}}}), {kX23}),
             Catch::Contains("missing required attribute 'ends'"));
  CHECK_THAT(
      error_of("Slice", attrs_of({{"starts", V{0}}, {"ends", V{2}}, {"steps", V{0}}}), {kX23}),
      Catch::Contains("steps [0] contain 0"));
  CHECK_THAT(error_of("Slice", attrs_of({{"starts", V{0, 0}}, {"ends", V{2}}}), {kX23}),
             Catch::Contains("must have the same length"));
  CHECK_THAT(
      error_of("Slice", attrs_of({{"starts", V{0, 0}}, {"ends", V{2, 2}}, {"axes", V{1, -1}}}),
               {kX23}),
      Catch::Contains("repeat axis 1"));
  CHECK_THAT(
      error_of("Slice", attrs_of({{"starts", V{0}}, {"ends", V{2}}, {"axes", V{2}}}), {kX23}),
      Catch::Contains("attribute 'axes' = 2 is out of range for input of shape [2, 3]"));
  CHECK_THAT(
      error_of("Slice", attrs_of({{"starts", V{2}}, {"ends", V{1}}, {"axes", V{1}}}), {kX23}),
      Catch::Contains("is empty"));
  // Indices computed at run time cannot give a static shape.
  CHECK_THAT(error_of("Slice", {}, {kX23, ints({0}), ints({1})}, 1, {false, false, true}),
             Catch::Contains("input 1 (starts) must be a constant"));
  CHECK_THAT(error_of("Slice", {}, {kX23, kX23, ints({1})}, 1, {false, true, true}),
             Catch::Contains("input 1 (starts) must be int64 or int32, got float32[2, 3]"));
  CHECK_THAT(error_of("Slice", attrs_of({{"starts", V{0}}}), {kX23, ints({0}), ints({1})}, 1,
                      {false, true, true}),
             Catch::Contains("attribute 'starts' given together with inputs"));
}

TEST_CASE("Transpose rejects a perm that is not a permutation", "[ops][shape][errors]") {
  using V = std::vector<int64_t>;
  CHECK_THAT(
      error_of("Transpose", attrs_of({{"perm", V{0, 0}}}), {kX23}),
      Catch::Contains(
          "attribute 'perm' = [0, 0] is not a permutation of 0..1 for input of shape [2, 3]"));
  CHECK_THAT(error_of("Transpose", attrs_of({{"perm", V{1, 0, 2}}}), {kX23}),
             Catch::Contains("[1, 0, 2]"));
  CHECK_THAT(error_of("Transpose", attrs_of({{"perm", V{-1, 0}}}), {kX23}),
             Catch::Contains("not a permutation"));
  CHECK_THAT(error_of("Transpose", {}, {kX23, kX23}), Catch::Contains("expects 1 input, got 2"));
}

TEST_CASE("Reshape errors name both shapes", "[ops][shape][errors]") {
  using V = std::vector<int64_t>;
  CHECK_THAT(error_of("Reshape", attrs_of({{"shape", V{4, 2}}}), {kX23}),
             Catch::Contains("cannot reshape input [2, 3] (6 elements) to [4, 2] (8 elements)"));
  CHECK_THAT(error_of("Reshape", attrs_of({{"shape", V{4, -1}}}), {kX23}),
             Catch::Contains("cannot reshape input [2, 3] (6 elements) to [4, -1]"));
  CHECK_THAT(error_of("Reshape", attrs_of({{"shape", V{-1, -1}}}), {kX23}),
             Catch::Contains("more than one -1"));
  CHECK_THAT(error_of("Reshape", attrs_of({{"shape", V{6, -2}}}), {kX23}),
             Catch::Contains("invalid dim -2"));
  CHECK_THAT(error_of("Reshape", attrs_of({{"shape", V{1, 6, 0}}}), {kX23}),
             Catch::Contains("0 (copy) at index 2 but the input [2, 3] has rank 2"));
  CHECK_THAT(error_of("Reshape", {}, {kX23}), Catch::Contains("missing the target shape"));
  CHECK_THAT(error_of("Reshape", {}, {kX23, kX23}, 1, {false, true}),
             Catch::Contains("input 1 (shape) must be int64 or int32, got float32[2, 3]"));
  CHECK_THAT(error_of("Reshape", {}, {kX23, ints({6})}, 1, {false, false}),
             Catch::Contains("must be a constant"));
  CHECK_THAT(error_of("Reshape", attrs_of({{"shape", V{6}}}), {kX23, ints({6})}, 1, {false, true}),
             Catch::Contains("not both"));
}

TEST_CASE("Slice with an absent optional axes input and present steps runs through a Session",
          "[ops][shape]") {
  // ONNX importers pass "" for a skipped optional input; axes then default to 0..k-1.
  Tensor x = make_data({6, 5}, DType::kF32, 700);
  graph::GraphBuilder b("<slice test>");
  b.add_input("x", x.desc());
  b.add_constant("starts", ints({-1, 1}));
  b.add_constant("ends", ints({kMin, 5}));
  b.add_constant("steps", ints({-2, 2}));
  b.add_output("y");
  b.add_node("Slice", "node", {"x", "starts", "ends", "", "steps"}, {"y"}, {});
  auto g = b.finish(ops::Registry::get());
  REQUIRE(g.is_ok());
  auto session = engine::Session::create(std::make_shared<const graph::Graph>(std::move(*g)));
  REQUIRE(session.is_ok());
  auto out = (*session)->run({{"x", x}});
  REQUIRE(out.is_ok());
  CHECK(same(out->at(0).second, test::slice_ref(x, {-1, 1}, {kMin, 5}, {}, {-2, 2})));
}
