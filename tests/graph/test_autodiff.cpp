// Reverse-mode differentiation (graph/passes/autodiff.h, rules in ops/gradients.cpp) against
// central finite differences. graphi's kernels are float32 only, so the reference is float32
// forward runs differenced in double: L(x + h) - L(x - h) / 2h with h = 1e-2 on values of order
// 1 (truncation ~h^2 = 1e-4, rounding ~ 6e-8 * |L| / h), hence the tolerance 3e-3 * max(1, |fd|).
// The loss is L = sum(y * R) with a random R, so every output element is weighted differently.
// Inputs stay away from the kinks and poles (Relu at 0, Log and Div near 0, Sqrt near 0).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "graph/passes/autodiff.h"
#include "graph/passes/pass_util.h"
#include "ops/gradients.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace graphi {
namespace {

using engine::NamedTensors;
using graph::Attributes;
using graph::GraphBuilder;

// Values in [lo, hi) with random sign when `signed_` (so |x| >= lo: away from 0).
Tensor away_from_zero(const Shape& s, uint64_t seed, double lo, double hi, bool signed_) {
  Tensor t = test::random_tensor(TensorDesc{DType::kF32, s}, seed, lo, hi);
  if (signed_) {
    Tensor sign = test::random_tensor(TensorDesc{DType::kF32, s}, seed + 1000, -1.0, 1.0);
    for (int64_t i = 0; i < t.numel(); ++i)
      if (sign.data_as<float>()[i] < 0) t.data_as<float>()[i] = -t.data_as<float>()[i];
  }
  return t;
}

NamedTensors run(const graph::Graph& g, const NamedTensors& inputs) {
  auto s = value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(g)));
  return value_or_throw(s->run(inputs));
}

const Tensor& output(const NamedTensors& out, const std::string& name) {
  for (const auto& [n, t] : out)
    if (n == name) return t;
  FAIL("no output " << name);
  return out[0].second;
}

// `b` declares the inputs `inputs` (all differentiated) and produces value `y` (an output).
void check_gradients(GraphBuilder b, const std::string& y, const NamedTensors& inputs,
                     uint64_t seed = 7) {
  const auto& reg = ops::Registry::get();
  graph::Graph g0 = value_or_throw(b.finish(reg));
  const TensorDesc yd = g0.value(*g0.find_value(y)).desc;
  b.add_constant("R", test::random_tensor(yd, seed, -1.0, 1.0));
  b.add_node("Mul", "yR", {y, "R"}, {"yR"});
  Attributes k0;
  k0.set("keepdims", int64_t{0});
  b.add_node("ReduceSum", "L", {"yR"}, {"L"}, k0);
  b.add_output("L");
  graph::Graph g = value_or_throw(b.finish(reg));

  std::vector<std::string> wrt;
  for (const auto& [n, t] : inputs) wrt.push_back(n);
  graph::passes::AutodiffOptions opt;
  opt.grads_as_outputs = true;
  auto ad =
      value_or_throw(graph::passes::differentiate(g, "L", wrt, ops::gradient_rules(), reg, opt));
  CHECK(ad.gradient_nodes > 0);
  NamedTensors out = run(ad.graph, inputs);

  auto fwd = value_or_throw(engine::Session::create(std::make_shared<const graph::Graph>(g)));
  auto loss_at = [&](const NamedTensors& in) {
    NamedTensors o = value_or_throw(fwd->run(in));
    return static_cast<double>(*output(o, "L").data_as<float>());
  };
  const double h = 1e-2;
  for (size_t w = 0; w < inputs.size(); ++w) {
    const Tensor& grad = output(out, "grad/" + inputs[w].first);
    REQUIRE(grad.desc() == inputs[w].second.desc());
    for (int64_t i = 0; i < grad.numel(); ++i) {
      NamedTensors in = inputs;
      float* x = in[w].second.data_as<float>();
      const float x0 = x[i];
      x[i] = static_cast<float>(x0 + h);
      const double up = loss_at(in);
      x[i] = static_cast<float>(x0 - h);
      const double down = loss_at(in);
      const double fd = (up - down) / (2 * h);
      const double got = grad.data_as<float>()[i];
      INFO("d L / d " << inputs[w].first << "[" << i << "]: autodiff " << got
                      << ", finite differences " << fd);
      CHECK(std::abs(got - fd) <= 3e-3 * std::max(1.0, std::abs(fd)));
    }
  }
}

NamedTensors named(std::vector<std::pair<std::string, Tensor>> v) { return v; }

GraphBuilder binary(const char* op, const Shape& a, const Shape& b) {
  GraphBuilder g("binary");
  g.add_input("A", {DType::kF32, a});
  g.add_input("B", {DType::kF32, b});
  g.add_node(op, "op", {"A", "B"}, {"y"});
  g.add_output("y");
  return g;
}

TEST_CASE("autodiff: Add Sub Mul Div with broadcasting against finite differences", "[autodiff]") {
  struct S {
    Shape a, b;
  };
  for (const S& s : {S{{3, 4}, {3, 4}}, S{{3, 4}, {4}}, S{{2, 3, 4}, {3, 1}}, S{{1, 4}, {3, 1}},
                     S{{}, {2, 3}}}) {
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      INFO(op << " " << shape_to_string(s.a) << " x " << shape_to_string(s.b));
      // Div's denominator in [0.5, 1.5) with random sign.
      const bool div = std::string(op) == "Div";
      check_gradients(binary(op, s.a, s.b), "y",
                      named({{"A", away_from_zero(s.a, 1, -1, 1, false)},
                             {"B", div ? away_from_zero(s.b, 2, 0.5, 1.5, true)
                                       : away_from_zero(s.b, 2, -1, 1, false)}}));
    }
  }
}

TEST_CASE("autodiff: unary ops against finite differences", "[autodiff]") {
  struct U {
    const char* op;
    double lo, hi;
    bool signed_;
  };
  for (const U& u : {U{"Sigmoid", -2, 2, false}, U{"Tanh", -2, 2, false}, U{"Relu", 0.1, 1, true},
                     U{"Exp", -1, 1, false}, U{"Log", 0.5, 2, false}, U{"Neg", -1, 1, false},
                     U{"Sqrt", 0.5, 2, false}, U{"Identity", -1, 1, false}}) {
    INFO(u.op);
    GraphBuilder b("unary");
    b.add_input("X", {DType::kF32, {3, 5}});
    b.add_node(u.op, "op", {"X"}, {"y"});
    b.add_output("y");
    check_gradients(b, "y", named({{"X", away_from_zero({3, 5}, 3, u.lo, u.hi, u.signed_)}}));
  }
}

TEST_CASE("autodiff: MatMul plain, batched and broadcast against finite differences",
          "[autodiff]") {
  struct S {
    Shape a, b;
  };
  for (const S& s : {S{{3, 4}, {4, 5}}, S{{2, 3, 4}, {2, 4, 5}}, S{{2, 3, 4}, {4, 5}},
                     S{{1, 3, 4}, {2, 4, 5}}, S{{3, 4}, {2, 4, 2}}}) {
    INFO(shape_to_string(s.a) << " x " << shape_to_string(s.b));
    check_gradients(binary("MatMul", s.a, s.b), "y",
                    named({{"A", away_from_zero(s.a, 4, -1, 1, false)},
                           {"B", away_from_zero(s.b, 5, -1, 1, false)}}));
  }
}

TEST_CASE("autodiff: Gemm with every trans flag, alpha, beta and broadcast C", "[autodiff]") {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cs : {Shape{5}, Shape{3, 5}, Shape{3, 1}}) {
        INFO("transA " << ta << " transB " << tb << " C " << shape_to_string(cs));
        const Shape as = ta ? Shape{4, 3} : Shape{3, 4}, bs = tb ? Shape{5, 4} : Shape{4, 5};
        GraphBuilder b("gemm");
        b.add_input("A", {DType::kF32, as});
        b.add_input("B", {DType::kF32, bs});
        b.add_input("C", {DType::kF32, cs});
        Attributes a;
        a.set("transA", int64_t{ta});
        a.set("transB", int64_t{tb});
        a.set("alpha", 0.7);
        a.set("beta", 1.3);
        b.add_node("Gemm", "op", {"A", "B", "C"}, {"y"}, a);
        b.add_output("y");
        check_gradients(b, "y",
                        named({{"A", away_from_zero(as, 6, -1, 1, false)},
                               {"B", away_from_zero(bs, 7, -1, 1, false)},
                               {"C", away_from_zero(cs, 8, -1, 1, false)}}));
      }
}

TEST_CASE("autodiff: Softmax and LogSoftmax over each axis", "[autodiff]") {
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t axis : {0, 1, -1}) {
      INFO(op << " axis " << axis);
      GraphBuilder b("softmax");
      b.add_input("X", {DType::kF32, {3, 4}});
      Attributes a;
      a.set("axis", axis);
      b.add_node(op, "op", {"X"}, {"y"}, a);
      b.add_output("y");
      check_gradients(b, "y", named({{"X", away_from_zero({3, 4}, 9, -2, 2, false)}}));
    }
}

TEST_CASE("autodiff: ReduceSum and ReduceMean, axes as attribute and input, keepdims",
          "[autodiff]") {
  for (const char* op : {"ReduceSum", "ReduceMean"})
    for (int keep = 0; keep < 2; ++keep)
      for (const std::vector<int64_t>& axes :
           {std::vector<int64_t>{1}, std::vector<int64_t>{0, 2}, std::vector<int64_t>{}}) {
        INFO(op << " keepdims " << keep << " axes " << axes.size());
        GraphBuilder b("reduce");
        b.add_input("X", {DType::kF32, {2, 3, 4}});
        Attributes a;
        a.set("keepdims", int64_t{keep});
        if (!axes.empty()) b.add_constant("axes", graph::passes::i64_tensor(axes));
        b.add_node(
            op, "op",
            axes.empty() ? std::vector<std::string>{"X"} : std::vector<std::string>{"X", "axes"},
            {"y"}, a);
        b.add_output("y");
        check_gradients(b, "y", named({{"X", away_from_zero({2, 3, 4}, 10, -1, 1, false)}}));
      }
}

TEST_CASE("autodiff: Reshape Transpose Concat Split Slice GatherElements", "[autodiff]") {
  {
    GraphBuilder b("reshape_transpose");
    b.add_input("X", {DType::kF32, {2, 3, 4}});
    b.add_constant("shape", graph::passes::i64_tensor({4, 6}));
    b.add_node("Reshape", "r", {"X", "shape"}, {"r"});
    Attributes p;
    p.set("perm", std::vector<int64_t>{1, 0});
    b.add_node("Transpose", "t", {"r"}, {"t"}, p);
    Attributes p3;
    p3.set("perm", std::vector<int64_t>{2, 0, 1});
    b.add_node("Transpose", "t3", {"X"}, {"t3"}, p3);
    b.add_node("Reshape", "t3r", {"t3", "shape"}, {"t3r"});
    Attributes pt;
    pt.set("perm", std::vector<int64_t>{1, 0});
    b.add_node("Transpose", "t3rt", {"t3r"}, {"t3rt"}, pt);
    b.add_node("Mul", "y", {"t", "t3rt"}, {"y"});
    b.add_output("y");
    check_gradients(b, "y", named({{"X", away_from_zero({2, 3, 4}, 11, -1, 1, false)}}));
  }
  {
    // Concat of three inputs (one used twice), then a Split whose middle piece is unused.
    GraphBuilder b("concat_split");
    b.add_input("A", {DType::kF32, {2, 3}});
    b.add_input("B", {DType::kF32, {2, 1}});
    Attributes ax;
    ax.set("axis", int64_t{1});
    b.add_node("Concat", "c", {"A", "B", "A"}, {"c"}, ax);
    b.add_constant("sizes", graph::passes::i64_tensor({2, 3, 2}));
    b.add_node("Split", "s", {"c", "sizes"}, {"s0", "s1", "s2"}, ax);
    b.add_node("Mul", "y", {"s0", "s2"}, {"y"});
    b.add_output("y");
    check_gradients(b, "y",
                    named({{"A", away_from_zero({2, 3}, 12, -1, 1, false)},
                           {"B", away_from_zero({2, 1}, 13, -1, 1, false)}}));
  }
  {
    GraphBuilder b("slice");
    b.add_input("X", {DType::kF32, {4, 5}});
    b.add_constant("starts", graph::passes::i64_tensor({1, -4}));
    b.add_constant("ends", graph::passes::i64_tensor({3, 4}));
    b.add_constant("axes", graph::passes::i64_tensor({0, 1}));
    b.add_node("Slice", "y", {"X", "starts", "ends", "axes"}, {"y"});
    b.add_output("y");
    check_gradients(b, "y", named({{"X", away_from_zero({4, 5}, 14, -1, 1, false)}}));
  }
  {
    GraphBuilder b("gather_elements");
    b.add_input("X", {DType::kF32, {3, 4}});
    Tensor idx(TensorDesc{DType::kI64, {3, 2}});
    const int64_t v[] = {0, 3, 2, 2, 1, 0};  // a repeated index: its gradients add up
    std::memcpy(idx.data(), v, sizeof v);
    b.add_constant("idx", std::move(idx));
    Attributes ax;
    ax.set("axis", int64_t{1});
    b.add_node("GatherElements", "y", {"X", "idx"}, {"y"}, ax);
    b.add_output("y");
    check_gradients(b, "y", named({{"X", away_from_zero({3, 4}, 15, -1, 1, false)}}));
  }
}

TEST_CASE("autodiff: Conv with strides, pads and dilations against finite differences",
          "[autodiff]") {
  struct S {
    std::vector<int64_t> strides, pads, dilations;
  };
  for (const S& s : {S{{1, 1}, {1, 1, 1, 1}, {1, 1}}, S{{2, 2}, {0, 0, 0, 0}, {1, 1}},
                     S{{1, 2}, {2, 0, 1, 1}, {2, 1}}}) {
    INFO("strides " << s.strides[0] << "," << s.strides[1] << " dilations " << s.dilations[0]);
    GraphBuilder b("conv");
    b.add_input("X", {DType::kF32, {2, 3, 6, 6}});
    b.add_input("W", {DType::kF32, {4, 3, 3, 3}});
    b.add_input("B", {DType::kF32, {4}});
    Attributes a;
    a.set("strides", s.strides);
    a.set("pads", s.pads);
    a.set("dilations", s.dilations);
    a.set("kernel_shape", std::vector<int64_t>{3, 3});
    b.add_node("Conv", "op", {"X", "W", "B"}, {"y"}, a);
    b.add_output("y");
    check_gradients(b, "y",
                    named({{"X", away_from_zero({2, 3, 6, 6}, 22, -1, 1, false)},
                           {"W", away_from_zero({4, 3, 3, 3}, 23, -0.5, 0.5, false)},
                           {"B", away_from_zero({4}, 24, -1, 1, false)}}));
  }
}

TEST_CASE("autodiff: MaxPool and AveragePool over tiling windows (and global average)",
          "[autodiff]") {
  for (const char* op : {"MaxPool", "AveragePool"})
    for (int64_t k : {2, 4}) {
      INFO(op << " kernel " << k);
      GraphBuilder b("pool");
      b.add_input("X", {DType::kF32, {2, 3, 4, 4}});
      Attributes a;
      a.set("kernel_shape", std::vector<int64_t>{k, k});
      a.set("strides", std::vector<int64_t>{k, k});
      b.add_node(op, "op", {"X"}, {"y"}, a);
      b.add_output("y");
      // Distinct values at least 0.05 apart, so a max never changes under the +-0.01 steps.
      Tensor x(TensorDesc{DType::kF32, {2, 3, 4, 4}});
      Tensor r = test::random_tensor(TensorDesc{DType::kF32, {96}}, 25, 0, 1);
      std::vector<std::pair<float, int>> order;
      for (int i = 0; i < 96; ++i) order.emplace_back(r.data_as<float>()[i], i);
      std::sort(order.begin(), order.end());
      for (int i = 0; i < 96; ++i) x.data_as<float>()[order[i].second] = -2.4f + 0.05f * i;
      check_gradients(b, "y", named({{"X", x}}));
    }
}

TEST_CASE("autodiff: fan-out sums gradients and a 2-layer MLP end to end", "[autodiff]") {
  {
    GraphBuilder b("fanout");
    b.add_input("X", {DType::kF32, {2, 3}});
    b.add_node("Mul", "xx", {"X", "X"}, {"xx"});
    b.add_node("Sigmoid", "s", {"X"}, {"s"});
    b.add_node("Add", "y", {"xx", "s"}, {"y"});
    b.add_output("y");
    check_gradients(b, "y", named({{"X", away_from_zero({2, 3}, 16, -1, 1, false)}}));
  }
  {
    GraphBuilder b("mlp");
    b.add_input("X", {DType::kF32, {4, 3}});
    b.add_input("W1", {DType::kF32, {3, 5}});
    b.add_input("b1", {DType::kF32, {5}});
    b.add_input("W2", {DType::kF32, {2, 5}});
    b.add_input("b2", {DType::kF32, {2}});
    b.add_node("MatMul", "mm", {"X", "W1"}, {"mm"});
    b.add_node("Add", "pre", {"mm", "b1"}, {"pre"});
    b.add_node("Tanh", "h", {"pre"}, {"h"});
    Attributes t;
    t.set("transB", int64_t{1});
    b.add_node("Gemm", "logits", {"h", "W2", "b2"}, {"logits"}, t);
    Attributes ax;
    ax.set("axis", int64_t{1});
    b.add_node("LogSoftmax", "y", {"logits"}, {"y"}, ax);
    b.add_output("y");
    check_gradients(b, "y",
                    named({{"X", away_from_zero({4, 3}, 17, -1, 1, false)},
                           {"W1", away_from_zero({3, 5}, 18, -1, 1, false)},
                           {"b1", away_from_zero({5}, 19, -1, 1, false)},
                           {"W2", away_from_zero({2, 5}, 20, -1, 1, false)},
                           {"b2", away_from_zero({2}, 21, -1, 1, false)}}));
  }
}

// ---- random shapes (seeded): every elementwise, softmax, reduction and layout rule ----

// A shape of rank 1..4 with dims 1..4.
Shape random_shape(std::mt19937_64& rng, int min_rank = 1) {
  std::uniform_int_distribution<int> rank(min_rank, 4), dim(1, 4);
  Shape s(static_cast<size_t>(rank(rng)));
  for (int64_t& d : s) d = dim(rng);
  return s;
}

// `s` with some dims set to 1 and some leading dims dropped: a numpy-broadcastable partner.
Shape broadcast_partner(std::mt19937_64& rng, const Shape& s) {
  std::uniform_int_distribution<int> coin(0, 2);
  Shape t;
  const size_t drop = std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
  for (size_t i = drop; i < s.size(); ++i) t.push_back(coin(rng) == 0 ? 1 : s[i]);
  return t;
}

TEST_CASE("autodiff: random shapes with broadcasting for the binary ops (seeded)", "[autodiff]") {
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 6; ++trial)
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      Shape a = random_shape(rng), b = broadcast_partner(rng, a);
      if (trial % 2) std::swap(a, b);  // the broadcast operand on either side
      INFO(op << " " << shape_to_string(a) << " x " << shape_to_string(b));
      const bool div = std::string(op) == "Div";
      check_gradients(binary(op, a, b), "y",
                      named({{"A", away_from_zero(a, 100 + trial, -1, 1, false)},
                             {"B", div ? away_from_zero(b, 200 + trial, 0.5, 1.5, true)
                                       : away_from_zero(b, 200 + trial, -1, 1, false)}}));
    }
}

TEST_CASE("autodiff: random shapes for unary, softmax, reduction and layout rules (seeded)",
          "[autodiff]") {
  std::mt19937_64 rng(77);
  for (int trial = 0; trial < 4; ++trial) {
    const Shape s = random_shape(rng, 2);
    const auto rank = static_cast<int64_t>(s.size());
    std::uniform_int_distribution<int64_t> axis_of(-rank, rank - 1);
    const int64_t axis = axis_of(rng);
    INFO("shape " << shape_to_string(s) << " axis " << axis);
    for (const char* op :
         {"Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Softmax", "LogSoftmax", "ReduceSum",
          "ReduceMean", "Transpose", "Slice", "Split", "Concat", "Pad"}) {
      INFO(op);
      GraphBuilder b("random");
      b.add_input("X", {DType::kF32, s});
      Attributes a;
      const std::string o(op);
      if (o == "Softmax" || o == "LogSoftmax") {
        a.set("axis", axis);
        b.add_node(op, "op", {"X"}, {"y"}, a);
      } else if (o == "ReduceSum" || o == "ReduceMean") {
        a.set("keepdims", int64_t{trial % 2});
        b.add_constant("axes", graph::passes::i64_tensor({axis, (axis + rank + 1) % rank}));
        if ((axis + rank) % rank == (axis + rank + 1) % rank)
          b.add_constant("axes", graph::passes::i64_tensor({axis}));
        b.add_node(op, "op", {"X", "axes"}, {"y"}, a);
      } else if (o == "Transpose") {
        std::vector<int64_t> perm(s.size());
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::shuffle(perm.begin(), perm.end(), rng);
        a.set("perm", perm);
        b.add_node(op, "op", {"X"}, {"y"}, a);
      } else if (o == "Slice") {
        // The last element(s) along `axis`, with a negative start.
        const int64_t d = s[static_cast<size_t>((axis + rank) % rank)];
        b.add_constant("starts", graph::passes::i64_tensor({-std::max<int64_t>(1, d / 2)}));
        b.add_constant("ends", graph::passes::i64_tensor({d + 5}));  // clamped
        b.add_constant("axes", graph::passes::i64_tensor({axis}));
        b.add_node(op, "op", {"X", "starts", "ends", "axes"}, {"y"});
      } else if (o == "Pad") {
        // Random begin/end pads 0..2 per dim, fill value 0.5.
        std::vector<int64_t> pads(2 * s.size());
        for (int64_t& p : pads) p = std::uniform_int_distribution<int64_t>(0, 2)(rng);
        b.add_constant("pads", graph::passes::i64_tensor(pads));
        Tensor fill(TensorDesc{DType::kF32, {}});
        *fill.data_as<float>() = 0.5f;
        b.add_constant("fill", std::move(fill));
        b.add_node(op, "op", {"X", "pads", "fill"}, {"y"});
      } else if (o == "Split" || o == "Concat") {
        // Split into [1, rest] along `axis` (when it has 2+ elements), or concat X with itself.
        a.set("axis", axis);
        const int64_t d = s[static_cast<size_t>((axis + rank) % rank)];
        if (o == "Split" && d >= 2) {
          b.add_constant("sizes", graph::passes::i64_tensor({1, d - 1}));
          b.add_node(op, "op", {"X", "sizes"}, {"y0", "y1"}, a);
          b.add_node("Mul", "y", {"y1", "y1"}, {"y"});
        } else {
          b.add_node("Concat", "op", {"X", "X"}, {"y"}, a);
        }
      } else {
        b.add_node(op, "op", {"X"}, {"y"});
      }
      b.add_output("y");
      const bool positive = o == "Log" || o == "Sqrt";
      check_gradients(b, "y",
                      named({{"X", away_from_zero(s, 300 + trial, positive ? 0.5 : -1.5,
                                                  positive ? 2.0 : 1.5, false)}}));
    }
  }
}

// ---- training-mode batch norm and dropout ----

GraphBuilder batch_norm_training(const Shape& xs) {
  GraphBuilder b("bn");
  b.add_input("X", {DType::kF32, xs});
  b.add_input("scale", {DType::kF32, {xs[1]}});
  b.add_input("B", {DType::kF32, {xs[1]}});
  Attributes a;
  a.set("epsilon", 1e-5);
  b.add_node("BatchNormalizationTraining", "op", {"X", "scale", "B"},
             {"y", "mean", "invstd", "var"}, a);
  b.add_output("y");
  return b;
}

TEST_CASE("autodiff: BatchNormalizationTraining against finite differences, random shapes",
          "[autodiff]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 4; ++trial) {
    Shape xs = random_shape(rng, 2);
    xs[0] = std::max<int64_t>(xs[0], 2);  // at least 2 elements per channel
    INFO("X " << shape_to_string(xs));
    check_gradients(batch_norm_training(xs), "y",
                    named({{"X", away_from_zero(xs, 400 + trial, -1.5, 1.5, false)},
                           {"scale", away_from_zero({xs[1]}, 500 + trial, 0.5, 1.5, true)},
                           {"B", away_from_zero({xs[1]}, 600 + trial, -1, 1, false)}}));
  }
}

// Float64 reference: L = sum(BN(X) * R) in double from the definition (batch mean, biased
// variance per channel), differenced in double with h = 1e-6; graphi's gradient graph (float32)
// must match it to float32 accuracy.
TEST_CASE("autodiff: BatchNormalizationTraining gradients against float64 finite differences",
          "[autodiff]") {
  const Shape xs = {3, 2, 2, 3};
  const int64_t n = xs[0], c = xs[1], inner = xs[2] * xs[3], total = n * c * inner;
  const Tensor x = away_from_zero(xs, 41, -1.5, 1.5, false);
  const Tensor scale = away_from_zero({c}, 42, 0.5, 1.5, true);
  const Tensor bias = away_from_zero({c}, 43, -1, 1, false);
  const Tensor r = test::random_tensor(TensorDesc{DType::kF32, xs}, 44, -1.0, 1.0);
  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& sv,
                  const std::vector<double>& bv) {
    double l = 0;
    for (int64_t k = 0; k < c; ++k) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < inner; ++e)
          mean += xv[static_cast<size_t>((i * c + k) * inner + e)];
      mean /= static_cast<double>(n * inner);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < inner; ++e) {
          const double d = xv[static_cast<size_t>((i * c + k) * inner + e)] - mean;
          var += d * d;
        }
      var /= static_cast<double>(n * inner);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < inner; ++e) {
          const size_t at = static_cast<size_t>((i * c + k) * inner + e);
          const double y = (xv[at] - mean) / std::sqrt(var + 1e-5) * sv[static_cast<size_t>(k)] +
                           bv[static_cast<size_t>(k)];
          l += y * r.data_as<float>()[at];
        }
    }
    return l;
  };
  auto to_d = [](const Tensor& t) {
    return std::vector<double>(t.data_as<float>(), t.data_as<float>() + t.numel());
  };
  const auto& reg = ops::Registry::get();
  GraphBuilder b = batch_norm_training(xs);
  b.add_constant("R", r);
  b.add_node("Mul", "yR", {"y", "R"}, {"yR"});
  Attributes k0;
  k0.set("keepdims", int64_t{0});
  b.add_node("ReduceSum", "L", {"yR"}, {"L"}, k0);
  b.add_output("L");
  graph::Graph g = value_or_throw(b.finish(reg));
  graph::passes::AutodiffOptions opt;
  opt.grads_as_outputs = true;
  auto ad = value_or_throw(
      graph::passes::differentiate(g, "L", {"X", "scale", "B"}, ops::gradient_rules(), reg, opt));
  NamedTensors out = run(ad.graph, named({{"X", x}, {"scale", scale}, {"B", bias}}));
  std::vector<std::vector<double>> at = {to_d(x), to_d(scale), to_d(bias)};
  const char* names[] = {"X", "scale", "B"};
  const double h = 1e-6;
  for (size_t w = 0; w < 3; ++w) {
    const Tensor& grad = output(out, std::string("grad/") + names[w]);
    for (int64_t i = 0; i < grad.numel(); ++i) {
      auto up = at, down = at;
      up[w][static_cast<size_t>(i)] += h;
      down[w][static_cast<size_t>(i)] -= h;
      const double fd = (loss(up[0], up[1], up[2]) - loss(down[0], down[1], down[2])) / (2 * h);
      INFO("d L / d " << names[w] << "[" << i << "]: autodiff " << grad.data_as<float>()[i]
                      << ", float64 finite differences " << fd);
      CHECK(std::abs(grad.data_as<float>()[i] - fd) <= 2e-5 * std::max(1.0, std::abs(fd)));
    }
  }
  (void)total;
}

TEST_CASE("autodiff: DropoutTraining against finite differences (a fixed step's mask)",
          "[autodiff]") {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 3; ++trial) {
    const Shape s = random_shape(rng, 2);
    INFO("X " << shape_to_string(s));
    GraphBuilder b("dropout");
    b.add_input("X", {DType::kF32, s});
    Tensor step(TensorDesc{DType::kI64, {}});
    *step.data_as<int64_t>() = trial + 1;
    b.add_constant("step", std::move(step));
    Attributes a;
    a.set("ratio", 0.4);
    a.set("seed", int64_t{11});
    b.add_node("DropoutTraining", "op", {"X", "step"}, {"d", "mask"}, a);
    b.add_node("Tanh", "y", {"d"}, {"y"});  // a non-linear use, so the mask matters twice
    b.add_output("y");
    check_gradients(b, "y", named({{"X", away_from_zero(s, 700 + trial, -1, 1, false)}}));
  }
}

TEST_CASE("autodiff: an op without a gradient rule is an error naming the op and the node",
          "[autodiff]") {
  GraphBuilder b("norule");
  b.add_input("X", {DType::kF32, {3}});
  b.add_node("Sin", "the_sin", {"X"}, {"f"});
  Attributes k0;
  k0.set("keepdims", int64_t{0});
  b.add_node("ReduceSum", "L", {"f"}, {"L"}, k0);
  b.add_output("L");
  graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  auto r = graph::passes::differentiate(g, "L", {"X"}, ops::gradient_rules(), ops::Registry::get());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(r.status().message(), Catch::Contains("the_sin") && Catch::Contains("Sin") &&
                                       Catch::Contains("no gradient rule"));
  // A loss that is not a scalar, and an unknown trainable, are refused too.
  auto r2 =
      graph::passes::differentiate(g, "f", {"X"}, ops::gradient_rules(), ops::Registry::get());
  CHECK_FALSE(r2.is_ok());
  auto r3 =
      graph::passes::differentiate(g, "L", {"nope"}, ops::gradient_rules(), ops::Registry::get());
  CHECK_FALSE(r3.is_ok());
}

// Distinct values 0.05 apart in random order, so no max changes under the +-0.01 steps.
Tensor distinct_values(const Shape& s, uint64_t seed) {
  Tensor x(TensorDesc{DType::kF32, s});
  const int64_t n = x.numel();
  Tensor r = test::random_tensor(TensorDesc{DType::kF32, {n}}, seed, 0, 1);
  std::vector<std::pair<float, int64_t>> order;
  for (int64_t i = 0; i < n; ++i) order.emplace_back(r.data_as<float>()[i], i);
  std::sort(order.begin(), order.end());
  for (int64_t i = 0; i < n; ++i)
    x.data_as<float>()[order[static_cast<size_t>(i)].second] =
        -0.025f * static_cast<float>(n) + 0.05f * static_cast<float>(i);
  return x;
}

TEST_CASE("autodiff: MaxPool with overlapping, padded and tiling windows (MaxPoolGrad)",
          "[autodiff]") {
  struct P {
    int64_t k, s, pad, size;
  };
  // The last two tile the plane (MaxPoolGrad's tiling path: 2x2 and general).
  for (const P& p : {P{3, 1, 1, 5}, P{3, 2, 1, 6}, P{3, 2, 0, 7}, P{2, 1, 0, 4}, P{2, 2, 0, 4},
                     P{3, 3, 0, 6}}) {
    INFO("kernel " << p.k << " stride " << p.s << " pad " << p.pad << " on " << p.size);
    GraphBuilder b("pool");
    b.add_input("X", {DType::kF32, {2, 2, p.size, p.size}});
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{p.k, p.k});
    a.set("strides", std::vector<int64_t>{p.s, p.s});
    a.set("pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad});
    b.add_node("MaxPool", "op", {"X"}, {"y"}, a);
    b.add_output("y");
    check_gradients(b, "y", named({{"X", distinct_values({2, 2, p.size, p.size}, 31)}}));
  }
}

TEST_CASE("autodiff: Relu feeding only a MaxPool: the pool's gradient applies the Relu's mask",
          "[autodiff]") {
  struct P {
    int64_t k, s, pad, size;
  };
  const auto& reg = ops::Registry::get();
  for (const P& p : {P{2, 2, 0, 4}, P{3, 1, 1, 5}, P{3, 2, 0, 7}}) {
    INFO("kernel " << p.k << " stride " << p.s << " pad " << p.pad << " on " << p.size);
    auto build = [&](bool extra_use) {
      GraphBuilder b("relu_pool");
      b.add_input("X", {DType::kF32, {2, 2, p.size, p.size}});
      b.add_node("Relu", "relu", {"X"}, {"r"});
      Attributes a;
      a.set("kernel_shape", std::vector<int64_t>{p.k, p.k});
      a.set("strides", std::vector<int64_t>{p.s, p.s});
      a.set("pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad});
      b.add_node("MaxPool", "pool", {"r"}, {"pooled"}, a);
      if (extra_use) {  // the Relu's output read elsewhere too: ReluGrad stays
        b.add_node("Add", "twice", {"pooled", "pooled"}, {"p2"});
        b.add_node("ReduceMean", "rm", {"r"}, {"m"});
        b.add_node("Add", "y", {"p2", "m"}, {"y"});
      } else {
        b.add_node("Identity", "y", {"pooled"}, {"y"});
      }
      b.add_output("y");
      return b;
    };
    // Distinct values 0.05 apart, none within 0.025 of the Relu's kink (the finite differences'
    // step is 0.01), and one window of plane 0 wholly negative (its maximum after the Relu is 0:
    // the mask must pass nothing there).
    Tensor x = distinct_values({2, 2, p.size, p.size}, 53);
    for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] += 0.025f;
    for (int64_t i = 0; i < p.k; ++i)
      for (int64_t j = 0; j < p.k; ++j)
        x.data_as<float>()[i * p.size + j] = -10.0f - 0.05f * static_cast<float>(i * p.k + j);
    for (bool extra : {false, true}) {
      INFO("the Relu's output also read elsewhere: " << extra);
      check_gradients(build(extra), "y", named({{"X", x}}));
      GraphBuilder b = build(extra);
      b.add_node("ReduceSum", "L", {"y"}, {"L"});
      b.add_output("L");
      graph::Graph g = value_or_throw(b.finish(reg));
      auto ad = value_or_throw(
          graph::passes::differentiate(g, "L", {"X"}, ops::gradient_rules(), reg, {}));
      int relu_grads = 0, masked_pools = 0;
      for (const graph::Node& n : ad.graph.nodes()) {
        relu_grads += n.op == "ReluGrad";
        if (n.op == "MaxPoolGrad")
          masked_pools += value_or_throw(graph::attr_int(n.attrs, "", "relu_input", 0)) == 1;
      }
      CHECK(relu_grads == (extra ? 1 : 0));
      CHECK(masked_pools == (extra ? 0 : 1));
    }
  }
}

TEST_CASE("autodiff: Floor's zero subgradient and Where routed by a comparison", "[autodiff]") {
  // phi = u - floor(u) (the PhasedLSTM phase): d phi / du = 1 away from the integers.
  {
    GraphBuilder b("frac");
    b.add_input("U", {DType::kF32, {3, 4}});
    b.add_node("Floor", "fl", {"U"}, {"f"});
    b.add_node("Sub", "phi", {"U", "f"}, {"y"});
    b.add_output("y");
    Tensor u = test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 41, 0.2, 0.8);
    Tensor whole = test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 42, -3, 3);
    for (int64_t i = 0; i < 12; ++i)
      u.data_as<float>()[i] += std::floor(whole.data_as<float>()[i]);
    check_gradients(b, "y", named({{"U", u}}));
  }
  // y = where(A < B, A * A, 3 B) with a broadcast B: the comparison's boolean carries no
  // gradient (autodiff never asks Less for one), A and B get theirs where they were chosen.
  {
    GraphBuilder b("where");
    b.add_input("A", {DType::kF32, {3, 4}});
    b.add_input("B", {DType::kF32, {4}});
    b.add_constant("three", [] {
      Tensor t(TensorDesc{DType::kF32, {}});
      *t.data_as<float>() = 3.0f;
      return t;
    }());
    b.add_node("Less", "lt", {"A", "B"}, {"c"});
    b.add_node("Mul", "aa", {"A", "A"}, {"a2"});
    b.add_node("Mul", "b3", {"B", "three"}, {"b3"});
    b.add_node("Where", "w", {"c", "a2", "b3"}, {"y"});
    b.add_output("y");
    Tensor a = distinct_values({3, 4}, 43);  // in [-0.3, 0.3), 0.05 apart
    Tensor bb(TensorDesc{DType::kF32, {4}});
    for (int i = 0; i < 4; ++i) bb.data_as<float>()[i] = -0.1375f + 0.1f * static_cast<float>(i);
    check_gradients(b, "y", named({{"A", a}, {"B", bb}}));
  }
}

TEST_CASE("autodiff: every gradient rule is for a registered op", "[autodiff]") {
  CHECK(ops::piecewise_constant_ops().size() == 9);  // every name of the set is a registered op
  for (const std::string& op : ops::differentiable_ops()) {
    INFO(op);
    CHECK(ops::Registry::get().find(op) != nullptr);
  }
}

}  // namespace
}  // namespace graphi
