// Batches in slices: graph/batch_split.h's check (a graph built for a batch against the same
// graph built for one sample: what passes, what refuses and naming what), engine/batch_slices.h
// (the slices' outputs against the whole batch's and against naive loops written here; input
// errors), Session::run_buffers, and the verdict cache of profiler/batch_split_choice.h.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/batch_slices.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "graph/batch_split.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "profiler/batch_split_choice.h"
#include "tests/support/test_util.h"

using namespace graphi;
using Catch::Matchers::Contains;

namespace {

Tensor ints(std::vector<int64_t> v) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) t.data_as<int64_t>()[i] = v[i];
  return t;
}

// x [n, 3, 5] -> Relu -> Mul by a per-channel constant -> Softmax (last axis) -> Reshape to
// [n, 15] (the shape constant carries n, as a traced x.view(n, -1) does) -> y; and
// z = ReduceMean(x, reduce_axes) (keepdims).
std::shared_ptr<const graph::Graph> model(int64_t n, std::vector<int64_t> reduce_axes = {2}) {
  graph::GraphBuilder b("<batch split test>");
  b.add_input("x", TensorDesc{DType::kF32, {n, 3, 5}});
  b.add_constant("scale", test::random_tensor(TensorDesc{DType::kF32, {3, 1}}, 7));
  b.add_constant("shape", ints({n, 15}));
  b.add_node("Relu", "relu", {"x"}, {"r"});
  b.add_node("Mul", "mul", {"r", "scale"}, {"m"});
  b.add_node("Softmax", "softmax", {"m"}, {"s"});
  b.add_node("Reshape", "flat", {"s", "shape"}, {"y"});
  graph::Attributes ra;
  if (!reduce_axes.empty()) ra.set("axes", reduce_axes);
  b.add_node("ReduceMean", "mean", {"x"}, {"z"}, ra);
  b.add_output("y");
  b.add_output("z");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

// x [n, 3, 5] -> one `op` with the int attribute(s) given -> y.
std::shared_ptr<const graph::Graph> one_op(int64_t n, const std::string& op, const char* attr,
                                           std::vector<int64_t> value) {
  graph::GraphBuilder b("<batch split test>");
  b.add_input("x", TensorDesc{DType::kF32, {n, 3, 5}});
  graph::Attributes a;
  if (value.size() == 1)
    a.set(attr, value[0]);
  else
    a.set(attr, value);
  b.add_node(op, "op", {"x"}, {"y"}, a);
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}
std::shared_ptr<const graph::Graph> softmax_model(int64_t n, int64_t axis) {
  return one_op(n, "Softmax", "axis", {axis});
}
std::shared_ptr<const graph::Graph> transpose_model(int64_t n, std::vector<int64_t> perm) {
  return one_op(n, "Transpose", "perm", std::move(perm));
}

}  // namespace

TEST_CASE("batch split: a per-sample graph passes the check", "[batch_split]") {
  CHECK(graph::check_batch_split(*model(4), *model(1), 4, 1).is_ok());
  CHECK(graph::check_batch_split(*model(4), *model(2), 4, 2).is_ok());
}

TEST_CASE("batch split: ops across the batch refuse, naming the node", "[batch_split]") {
  // Softmax over the batch axis: the shapes agree, the meaning does not.
  Status st = graph::check_batch_split(*softmax_model(4, 0), *softmax_model(1, 0), 4, 1);
  CHECK_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Contains("'op' (Softmax)") && Contains("batch axis"));
  CHECK(graph::check_batch_split(*softmax_model(4, 1), *softmax_model(1, 1), 4, 1).is_ok());
  // A reduction over the batch: its output keeps no batch on dim 0.
  st = graph::check_batch_split(*model(4, {0, 2}), *model(1, {0, 2}), 4, 1);
  CHECK_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Contains("'z'"));
  // A transpose that moves the batch.
  st = graph::check_batch_split(*transpose_model(4, {1, 0, 2}), *transpose_model(1, {1, 0, 2}), 4,
                                1);
  CHECK_FALSE(st.is_ok());
  CHECK(
      graph::check_batch_split(*transpose_model(4, {0, 2, 1}), *transpose_model(1, {0, 2, 1}), 4, 1)
          .is_ok());
  // Not a split at all; graphs of different structure.
  CHECK_FALSE(graph::check_batch_split(*model(4), *model(4), 4, 4).is_ok());
  CHECK_FALSE(graph::check_batch_split(*model(4), *model(1), 3, 1).is_ok());
  st = graph::check_batch_split(*model(4), *softmax_model(1, 1), 4, 1);
  CHECK_THAT(st.message(), Contains("other nodes"));
}

TEST_CASE("batch split: a constant that depends on the batch refuses", "[batch_split]") {
  // y = x * c with c [n, 1, 1]: a different factor per sample, baked in at export.
  auto build = [](int64_t n) {
    graph::GraphBuilder b("<batch split test>");
    b.add_input("x", TensorDesc{DType::kF32, {n, 3}});
    b.add_constant("c", test::random_tensor(TensorDesc{DType::kF32, {n, 1}}, 3));
    b.add_node("Mul", "mul", {"x", "c"}, {"y"});
    b.add_output("y");
    return value_or_throw(b.finish(ops::Registry::get()));
  };
  Status st = graph::check_batch_split(build(4), build(1), 4, 1);
  CHECK_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Contains("'c'"));
}

TEST_CASE("batch split: the slices' outputs equal the whole batch's and naive loops",
          "[batch_split]") {
  const int64_t n = 6;
  engine::SessionOptions o;
  o.threads = 2;
  auto whole = value_or_throw(engine::Session::create(model(n), o));
  auto slice_session = value_or_throw(engine::Session::create(model(1), o));
  auto slices =
      value_or_throw(engine::BatchSlices::create(whole->graph(), std::move(slice_session), n, 1));
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, {n, 3, 5}}, 11);
  const Tensor x_before = x;
  auto a = value_or_throw(whole->run({{"x", x}}));
  auto b = value_or_throw(slices->run({{"x", x}}));
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(b[0].first == "y");
  CHECK(b[1].first == "z");
  CHECK(b[0].second.shape() == Shape{n, 15});
  CHECK(b[1].second.shape() == Shape{n, 3, 1});
  CHECK(std::memcmp(x.data(), x_before.data(), x.bytes()) == 0);  // inputs only read
  // Naive: per sample and channel, softmax over 5 of relu(x) * scale[c]; the mean over axis 2.
  const auto g1 = model(1);
  const Tensor& scale = *g1->value(*g1->find_value("scale")).data;
  for (int64_t s = 0; s < n; ++s)
    for (int c = 0; c < 3; ++c) {
      const float* xs = x.data_as<float>() + (s * 3 + c) * 5;
      double mx = -1e30, sum = 0, mean = 0;
      std::vector<double> v(5);
      for (int k = 0; k < 5; ++k) {
        v[k] = std::max(0.0f, xs[k]) * double(scale.data_as<float>()[c]);
        mx = std::max(mx, v[k]);
        mean += xs[k] / 5.0;
      }
      for (int k = 0; k < 5; ++k) sum += std::exp(v[k] - mx);
      for (int k = 0; k < 5; ++k) {
        const double want = std::exp(v[k] - mx) / sum;
        CHECK(b[0].second.data_as<float>()[s * 15 + c * 5 + k] == Approx(want).margin(1e-6));
        CHECK(b[0].second.data_as<float>()[s * 15 + c * 5 + k] ==
              Approx(a[0].second.data_as<float>()[s * 15 + c * 5 + k]).margin(1e-6));
      }
      CHECK(b[1].second.data_as<float>()[s * 3 + c] == Approx(mean).margin(1e-6));
    }
}

TEST_CASE("batch split: the slices check their inputs as a Session does", "[batch_split]") {
  engine::SessionOptions o;
  auto whole = value_or_throw(engine::Session::create(model(4), o));
  auto slices = value_or_throw(engine::BatchSlices::create(
      whole->graph(), value_or_throw(engine::Session::create(model(1), o)), 4, 1));
  Tensor good(TensorDesc{DType::kF32, {4, 3, 5}});
  Tensor bad(TensorDesc{DType::kF32, {1, 3, 5}});
  // Worded as the whole batch's Session words them (a model runs in slices or not by
  // measurement: its errors must not change with that).
  const std::vector<engine::NamedTensors> wrong_inputs = {
      {{"x", bad}}, {}, {{"x", good}, {"w", good}}, {{"x", good}, {"x", good}}};
  for (const engine::NamedTensors& in : wrong_inputs) {
    const Status sliced = slices->run(in).status();
    REQUIRE_FALSE(sliced.is_ok());
    CHECK(sliced.message() == whole->run(in).status().message());
  }
  CHECK_THAT(slices->run({{"x", bad}}).status().message(),
             Contains("input 'x'") && Contains("[1, 3, 5]") && Contains("[4, 3, 5]"));
  CHECK_THAT(slices->run({}).status().message(), Contains("missing input(s): 'x'"));
  CHECK_THAT(slices->run({{"x", good}, {"w", good}}).status().message(),
             Contains("'w' is not an input"));
  CHECK_THAT(slices->run({{"x", good}, {"x", good}}).status().message(),
             Contains("given more than once"));
  // A slice Session that does not match the batch's graph is refused up front.
  auto wrong = engine::BatchSlices::create(
      whole->graph(), value_or_throw(engine::Session::create(model(2), o)), 4, 1);
  CHECK_FALSE(wrong.is_ok());
}

TEST_CASE("batch split: a traced run holds every slice's spans in order", "[batch_split]") {
  engine::SessionOptions o;
  auto whole = value_or_throw(engine::Session::create(model(4), o));
  auto slices = value_or_throw(engine::BatchSlices::create(
      whole->graph(), value_or_throw(engine::Session::create(model(1), o)), 4, 1));
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {4, 3, 5}}, 9);
  REQUIRE(slices->run({{"x", x}}).is_ok());
  CHECK(slices->last_trace().run_end_ns == 0);  // not traced
  slices->set_tracing(true);
  REQUIRE(slices->run({{"x", x}}).is_ok());
  const engine::RunTrace t = slices->last_trace();
  const size_t nodes = slices->session().plan().num_nodes();
  REQUIRE(nodes > 0);
  // Four slices: every node four times, each slice's spans after the previous slice's.
  REQUIRE(t.ops.size() == 4 * nodes);
  for (size_t p = 1; p < 4; ++p)
    CHECK(t.ops[p * nodes].start_ns >= t.ops[(p - 1) * nodes].start_ns);
  CHECK(t.run_start_ns <= t.ops.front().start_ns);
  CHECK(t.run_end_ns >= t.ops.back().end_ns);
  slices->set_tracing(false);
}

TEST_CASE("batch split: Session::run_buffers writes the caller's buffers", "[batch_split]") {
  auto s = value_or_throw(engine::Session::create(model(2), engine::SessionOptions{}));
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, {2, 3, 5}}, 5);
  auto ref = value_or_throw(s->run({{"x", x}}));
  std::vector<float> y(2 * 15, -1.0f), z(2 * 3, -1.0f);
  const void* in[] = {x.data()};
  void* out[] = {y.data(), z.data()};
  REQUIRE(s->run_buffers(in, out).is_ok());
  for (int i = 0; i < 30; ++i) CHECK(y[i] == ref[0].second.data_as<float>()[i]);
  for (int i = 0; i < 6; ++i) CHECK(z[i] == ref[1].second.data_as<float>()[i]);
  void* too_few[] = {y.data()};
  CHECK_FALSE(s->run_buffers(in, too_few).is_ok());
}

TEST_CASE("batch split: verdicts are cached per key", "[batch_split]") {
  const auto dir = test::scratch_dir("batch_split_cache");
  const test::ScopedEnv cache("GRAPHI_CACHE_DIR", dir.string());
  CHECK_FALSE(profiler::cached_batch_split("k|1x2|slice 1").has_value());
  int batch_runs = 0, slice_runs = 0;
  auto v = profiler::measure_batch_split(
      "k|1x2|slice 1", 8, 1,
      [&] {
        ++batch_runs;
        return Status::ok();
      },
      [&] {
        ++slice_runs;
        return Status::ok();
      });
  REQUIRE(v.is_ok());
  CHECK(batch_runs >= 4);  // a warm-up and at least 3 timed
  CHECK(slice_runs == batch_runs);
  CHECK_THAT(v->message, Contains("batch 8"));
  auto c = profiler::cached_batch_split("k|1x2|slice 1");
  REQUIRE(c.has_value());
  CHECK(c->slices == v->slices);
  CHECK(c->source == "cached");
  // A failing run ends the measurement with its error.
  auto f = profiler::measure_batch_split(
      "k2", 8, 1, [] { return Status::ok(); },
      [] { return Status::invalid_argument("slice failed"); });
  CHECK_THAT(f.status().message(), Contains("slice failed"));
  CHECK_FALSE(profiler::cached_batch_split("k2").has_value());
  // A batch slower than a second stays whole without a run of the slices (remembered).
  int slow_slices = 0;
  auto slow = profiler::measure_batch_split(
      "k3", 8, 1,
      [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        return Status::ok();
      },
      [&] {
        ++slow_slices;
        return Status::ok();
      });
  REQUIRE(slow.is_ok());
  CHECK_FALSE(slow->slices);
  CHECK(slow_slices == 0);
  CHECK_THAT(slow->message, Contains("too long"));
  REQUIRE(profiler::cached_batch_split("k3").has_value());
  CHECK_FALSE(profiler::cached_batch_split("k3")->slices);
  CHECK(profiler::parse_batch_split("on").value() == profiler::BatchSplitPolicy::kOn);
  CHECK_FALSE(profiler::parse_batch_split("sometimes").is_ok());
}
