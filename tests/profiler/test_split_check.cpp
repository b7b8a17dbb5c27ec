// The measured check of the analytical split (profiler/split_check.h) and the interleaved timing
// under it (profiler/interleaved_timing.h): the contender measured once, remembered, read back
// by choose_plan; the Session it leaves computes what a naive loop does; the switch off and bad.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/omp_oversubscription.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "profiler/interleaved_timing.h"
#include "profiler/plan_choice.h"
#include "profiler/split_check.h"
#include "tests/support/test_util.h"

using namespace graphi;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kN = 32;

// y = ((x W) W) W: a chain of three small MatMuls, ops of a few microseconds (where the split's
// overheads decide).
std::shared_ptr<const graph::Graph> chain_graph() {
  graph::GraphBuilder b("<split check chain>");
  b.add_input("x", TensorDesc{DType::kF32, {kN, kN}});
  auto w = std::make_shared<Tensor>(test::random_tensor(TensorDesc{DType::kF32, {kN, kN}}, 7));
  b.add_constant("w", w);
  b.add_node("MatMul", "m0", {"x", "w"}, {"a"});
  b.add_node("MatMul", "m1", {"a", "w"}, {"b"});
  b.add_node("MatMul", "m2", {"b", "w"}, {"y"});
  b.add_output("y");
  auto g = b.finish(ops::Registry::get());
  REQUIRE(g.is_ok());
  return std::make_shared<const graph::Graph>(std::move(g).value());
}

std::vector<float> naive_chain(const Tensor& x, const Tensor& w) {
  std::vector<float> cur(x.data_as<float>(), x.data_as<float>() + kN * kN), next(kN * kN);
  for (int step = 0; step < 3; ++step) {
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < kN; ++k)
          acc += static_cast<double>(cur[i * kN + k]) * w.data_as<float>()[k * kN + j];
        next[i * kN + j] = static_cast<float>(acc);
      }
    cur.swap(next);
  }
  return cur;
}

}  // namespace

TEST_CASE("split check: the analytical split is timed against its contender once", "[profiler]") {
  if (engine::allowed_cpu_count() < 2) {
    WARN("one CPU: no contender to measure");
    return;
  }
  test::ScopedEnv cache("GRAPHI_CACHE_DIR", test::scratch_dir("split_check").string());
  test::ScopedEnv on("GRAPHI_SPLIT_CHECK", "auto");
  const auto g = chain_graph();
  profiler::PlanRequest req;
  auto chosen = profiler::choose_plan(*g, req);
  REQUIRE(chosen.is_ok());
  REQUIRE(chosen->source == "analytical");
  // A chain: one executor, against one executor of the other team size (ops this small are
  // predicted too small for a team of two: 1x1 against 1x2).
  CHECK(chosen->options.executors == 1);
  REQUIRE(chosen->contender.has_value());
  CHECK(chosen->contender->executors == 1);
  CHECK(chosen->contender->threads != chosen->options.threads);
  const int chosen_threads = chosen->options.threads;
  const int contender_threads = chosen->contender->threads;
  CHECK(chosen->predicted_ms > 0);
  CHECK_FALSE(profiler::cached_split_check(chosen->check_key).has_value());

  engine::SessionOptions options = chosen->options;
  options.max_memory = uint64_t{1} << 32;  // the contender's share of it is its own
  auto created = engine::Session::create(g, options);
  REQUIRE(created.is_ok());
  std::unique_ptr<engine::Session> session = std::move(created).value();
  std::string message;
  profiler::check_split(g, *chosen, options, session, &message);
  CHECK_THAT(message, Contains("graphi: plan auto: "));
  CHECK_THAT(message, Contains("measured in"));
  CHECK_FALSE(chosen->contender.has_value());  // measured once
  // Whichever won, the Session is the winner's and the options say so.
  const bool switched = chosen->source == "measured";
  CHECK(session->options().threads == options.threads);
  CHECK(options.threads == (switched ? contender_threads : chosen_threads));
  CHECK(chosen->options.threads == options.threads);
  CHECK(options.max_memory == uint64_t{1} << 32);
  // Remembered, unless other processes disturbed the measurement.
  const bool disturbed = message.find("measured again next time") != std::string::npos;
  const std::optional<bool> remembered = profiler::cached_split_check(chosen->check_key);
  CHECK(remembered.has_value() == !disturbed);
  if (remembered) {
    CHECK(*remembered == switched);
    // choose_plan reads it back: no contender left to measure, the winner's split.
    auto again = profiler::choose_plan(*g, req);
    REQUIRE(again.is_ok());
    CHECK_FALSE(again->contender.has_value());
    CHECK(again->options.threads == options.threads);
    CHECK(again->source == (switched ? "measured" : "analytical"));
    CHECK_THAT(again->message, Contains("measured faster here than"));
  }
  // The Session left behind computes the chain.
  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {kN, kN}}, 3);
  auto out = session->run({{"x", x}});
  REQUIRE(out.is_ok());
  const std::vector<float> ref = naive_chain(x, *g->value(*g->find_value("w")).data);
  const Tensor& y = (*out)[0].second;
  for (int64_t i = 0; i < kN * kN; ++i)
    CHECK(y.data_as<float>()[i] == Approx(ref[i]).epsilon(1e-4).margin(1e-4));
}

TEST_CASE("split check: off, a bad switch, an explicit scheduler, a long model", "[profiler]") {
  test::ScopedEnv cache("GRAPHI_CACHE_DIR", test::scratch_dir("split_check_off").string());
  const auto g = chain_graph();
  profiler::PlanRequest req;
  {
    test::ScopedEnv off("GRAPHI_SPLIT_CHECK", "off");
    auto c = profiler::choose_plan(*g, req);
    REQUIRE(c.is_ok());
    CHECK_FALSE(c->contender.has_value());
  }
  {
    test::ScopedEnv bad("GRAPHI_SPLIT_CHECK", "sometimes");
    auto c = profiler::choose_plan(*g, req);
    REQUIRE_FALSE(c.is_ok());
    CHECK_THAT(c.status().message(), Contains("GRAPHI_SPLIT_CHECK 'sometimes'"));
  }
  test::ScopedEnv on("GRAPHI_SPLIT_CHECK", "auto");
  profiler::PlanRequest fifo = req;
  fifo.scheduler = "fifo";
  auto f = profiler::choose_plan(*g, fifo);
  REQUIRE(f.is_ok());
  CHECK_FALSE(f->contender.has_value());
  if (engine::allowed_cpu_count() < 2) return;
  // A model predicted to run long is not measured, and nothing is remembered.
  auto c = profiler::choose_plan(*g, req);
  REQUIRE(c.is_ok());
  REQUIRE(c->contender.has_value());
  c->predicted_ms = 1000;
  engine::SessionOptions options = c->options;
  auto s = engine::Session::create(g, options);
  REQUIRE(s.is_ok());
  std::unique_ptr<engine::Session> session = std::move(s).value();
  engine::Session* before = session.get();
  std::string message = "stale";
  profiler::check_split(g, *c, options, session, &message);
  CHECK(message.empty());
  CHECK(session.get() == before);
  CHECK(c->source == "analytical");
  CHECK_FALSE(profiler::cached_split_check(c->check_key).has_value());
  // A memory budget the first Session's arena already fills leaves the contender nothing: the
  // choice is kept and remembered, the Session untouched.
  auto b = profiler::choose_plan(*g, req);
  REQUIRE(b.is_ok());
  REQUIRE(b->contender.has_value());
  options = b->options;
  options.max_memory = 1;
  profiler::check_split(g, *b, options, session, &message);
  CHECK(message.empty());
  CHECK(session.get() == before);
  CHECK(b->source == "analytical");
  REQUIRE(profiler::cached_split_check(b->check_key).has_value());
  CHECK_FALSE(*profiler::cached_split_check(b->check_key));
}

TEST_CASE("interleaved timing: blocks, order and errors", "[profiler]") {
  int a_runs = 0, b_runs = 0;
  profiler::InterleavedTimingOptions opt;
  opt.min_blocks = 3;
  opt.min_total_ms = 0;
  opt.block_ms = 4;
  auto t = profiler::time_interleaved(
      [&] {
        ++a_runs;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return Status::ok();
      },
      [&] {
        ++b_runs;
        return Status::ok();
      },
      opt);
  REQUIRE(t.is_ok());
  // A run sleeping 1 ms fills a 4 ms block in at most 4 runs.
  CHECK(t->runs_per_block >= 1);
  CHECK(t->runs_per_block <= 4);
  CHECK(t->a_ms >= 1.0);
  CHECK(t->b_ms < t->a_ms);
  // Warm-ups (a once, b once), up to three runs of a to size the blocks, then as many blocks of
  // each (at least 3; rounds of at least 100 ms, what /proc/stat's ticks need).
  REQUIRE((b_runs - 1) % t->runs_per_block == 0);
  const int blocks = (b_runs - 1) / t->runs_per_block;
  CHECK(blocks >= 3);
  CHECK(a_runs - 1 - blocks * t->runs_per_block >= 1);
  CHECK(a_runs - 1 - blocks * t->runs_per_block <= 3);
  CHECK(t->elapsed_s >= 0.1);
  auto f = profiler::time_interleaved([] { return Status::ok(); },
                                      [] { return Status::invalid_argument("b failed"); });
  REQUIRE_FALSE(f.is_ok());
  CHECK_THAT(f.status().message(), Contains("b failed"));
}
