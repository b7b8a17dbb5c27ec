// engine/team_leader.h: with GRAPHI_SHARED_TEAMS=1, sequential Sessions with teams of k > 1
// share one process-wide leader per k (one OpenMP pool instead of one per calling thread), stay
// correct when called from several threads at once, and run each job on the caller's CPU mask;
// without it they keep their teams on the calling thread.
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

#include "engine/omp_oversubscription.h"
#include "engine/run_width.h"
#include "engine/session.h"
#include "engine/team_leader.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;

namespace {

// y = sigmoid(a @ b) + a @ b, a [8, 32], b [32, 16].
std::shared_ptr<const graph::Graph> mm_graph() {
  graph::GraphBuilder b("<team leader test>");
  b.add_input("a", TensorDesc{DType::kF32, {8, 32}});
  b.add_input("b", TensorDesc{DType::kF32, {32, 16}});
  b.add_node("MatMul", "mm", {"a", "b"}, {"ab"});
  b.add_node("Sigmoid", "sig", {"ab"}, {"s"});
  b.add_node("Add", "add", {"s", "ab"}, {"y"});
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

Tensor naive_y(const Tensor& a, const Tensor& b) {
  Tensor y(TensorDesc{DType::kF32, {8, 16}});
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) {
      double acc = 0;
      for (int k = 0; k < 32; ++k)
        acc += double(a.data_as<float>()[i * 32 + k]) * b.data_as<float>()[k * 16 + j];
      y.data_as<float>()[i * 16 + j] = static_cast<float>(1.0 / (1.0 + std::exp(-acc)) + acc);
    }
  return y;
}

// A sequential Session; shared = true creates it with GRAPHI_SHARED_TEAMS=1 (the opt-in).
std::unique_ptr<Session> sequential(int threads, bool shared = true) {
  SessionOptions o;
  o.threads = threads;
  if (shared) setenv("GRAPHI_SHARED_TEAMS", "1", 1);
  auto s = value_or_throw(Session::create(mm_graph(), o));
  unsetenv("GRAPHI_SHARED_TEAMS");
  return s;
}

}  // namespace

TEST_CASE("team leader: sequential 1x2 Sessions share one leader and one OpenMP claim",
          "[team_leader]") {
  const int leaders_before = TeamLeader::live_leaders();
  const int omp_before = omp_process_threads();
  {
    auto s1 = sequential(2);
    auto s2 = sequential(2);
    CHECK(TeamLeader::live_leaders() == leaders_before + 1);
    // One team of 2 for both (was one per Session: omp_before + 2).
    CHECK(omp_process_threads() == omp_before + 1);
    auto s3 = sequential(1);  // teams of 1 run on the caller, no leader
    CHECK(TeamLeader::live_leaders() == leaders_before + 1);
  }
  CHECK(TeamLeader::live_leaders() == leaders_before);  // stopped with its last Session
  CHECK(omp_process_threads() == omp_before);
}

TEST_CASE("team leader: two Sessions called from two threads at once stay correct",
          "[team_leader]") {
  auto s1 = sequential(2);
  auto s2 = sequential(2);
  std::atomic<int> wrong{0}, failed{0};
  auto drive = [&](Session& s, uint64_t seed) {
    for (int i = 0; i < 40; ++i) {
      Tensor a = test::random_tensor(TensorDesc{DType::kF32, {8, 32}}, seed + i);
      Tensor b = test::random_tensor(TensorDesc{DType::kF32, {32, 16}}, seed + 1000 + i);
      auto out = s.run({{"a", a}, {"b", b}});
      if (!out.is_ok()) {
        ++failed;
        continue;
      }
      if (test::max_rel_error((*out)[0].second, naive_y(a, b)) > 1e-5) ++wrong;
    }
  };
  std::thread t1([&] { drive(*s1, 1); });
  std::thread t2([&] { drive(*s2, 5000); });
  drive(*s1, 9000);  // and the main thread on the first Session too
  t1.join();
  t2.join();
  CHECK(failed == 0);
  CHECK(wrong == 0);
}

TEST_CASE("team leader: jobs run on the leader thread with the caller's CPU mask",
          "[team_leader]") {
  auto leader = TeamLeader::acquire(2);
  std::thread::id ran_on;
  leader->run([&] { ran_on = std::this_thread::get_id(); });
  CHECK(ran_on != std::this_thread::get_id());
  cpu_set_t all, one, seen;
  REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  leader->run([&] { sched_getaffinity(0, sizeof seen, &seen); });
  CHECK(CPU_EQUAL(&seen, &one));
  REQUIRE(sched_setaffinity(0, sizeof all, &all) == 0);  // restore the test thread
  leader->run([&] { sched_getaffinity(0, sizeof seen, &seen); });
  CHECK(CPU_EQUAL(&seen, &all));
}

TEST_CASE("team leader: without GRAPHI_SHARED_TEAMS=1 the team stays on the calling thread",
          "[team_leader]") {
  const int leaders_before = TeamLeader::live_leaders();
  const int omp_before = omp_process_threads();
  setenv("GRAPHI_SHARED_TEAMS", "0", 1);
  auto s0 = sequential(2, false);
  unsetenv("GRAPHI_SHARED_TEAMS");
  auto s = sequential(2, false);  // unset: the default
  CHECK(TeamLeader::live_leaders() == leaders_before);
  CHECK(omp_process_threads() == omp_before + 2);  // one team claim per Session, as before
  Tensor a = test::random_tensor(TensorDesc{DType::kF32, {8, 32}}, 3);
  Tensor b = test::random_tensor(TensorDesc{DType::kF32, {32, 16}}, 4);
  auto out = value_or_throw(s->run({{"a", a}, {"b", b}}));
  CHECK(test::max_rel_error(out[0].second, naive_y(a, b)) < 1e-5);
}

// engine/run_width.h: the default (GRAPHI_SHARED_TEAMS unset) narrows a run to a team of 1 when
// other sequential runs hold threads and its team would take them above the CPUs.
TEST_CASE("run width: a run alone keeps its team, a run beside others above the CPUs gets 1",
          "[team_leader][run_width]") {
  const int base = RunWidth::in_flight();
  REQUIRE(base == 0);  // no Session runs in this test binary's other threads now
  {
    RunWidth first(2, 2, true);
    CHECK(first.threads() == 2);  // alone: the full team
    {
      RunWidth second(2, 2, true);
      CHECK(second.threads() == 1);  // 2 + 2 > 2 CPUs
      CHECK(RunWidth::in_flight() == 3);
      RunWidth third(2, 8, true);
      CHECK(third.threads() == 2);  // 3 + 2 <= 8 CPUs: no need to narrow
      RunWidth own(2, 2, false);
      CHECK(own.threads() == 2);  // GRAPHI_SHARED_TEAMS=0: never narrowed
    }
    CHECK(RunWidth::in_flight() == 2);
  }
  CHECK(RunWidth::in_flight() == 0);
  RunWidth single(1, 1, true);
  CHECK(single.threads() == 1);
}

TEST_CASE("run width: GRAPHI_SHARED_TEAMS selects auto (unset), own (0) and leader (1)",
          "[team_leader][run_width]") {
  unsetenv("GRAPHI_SHARED_TEAMS");
  CHECK(team_sharing_from_env() == TeamSharing::kAuto);
  setenv("GRAPHI_SHARED_TEAMS", "0", 1);
  CHECK(team_sharing_from_env() == TeamSharing::kOwn);
  setenv("GRAPHI_SHARED_TEAMS", "1", 1);
  CHECK(team_sharing_from_env() == TeamSharing::kLeader);
  CHECK(TeamLeader::enabled());
  unsetenv("GRAPHI_SHARED_TEAMS");
  CHECK_FALSE(TeamLeader::enabled());
}

TEST_CASE("run width: default Sessions called from three threads at once stay correct",
          "[team_leader][run_width]") {
  auto s1 = sequential(2, false);
  auto s2 = sequential(2, false);
  std::atomic<int> wrong{0}, failed{0};
  auto drive = [&](Session& s, uint64_t seed) {
    for (int i = 0; i < 40; ++i) {
      Tensor a = test::random_tensor(TensorDesc{DType::kF32, {8, 32}}, seed + i);
      Tensor b = test::random_tensor(TensorDesc{DType::kF32, {32, 16}}, seed + 1000 + i);
      auto out = s.run({{"a", a}, {"b", b}});
      if (!out.is_ok()) {
        ++failed;
        continue;
      }
      if (test::max_rel_error((*out)[0].second, naive_y(a, b)) > 1e-5) ++wrong;
    }
  };
  std::thread t1([&] { drive(*s1, 11); });
  std::thread t2([&] { drive(*s2, 5011); });
  drive(*s2, 9011);
  t1.join();
  t2.join();
  CHECK(failed == 0);
  CHECK(wrong == 0);
  CHECK(RunWidth::in_flight() == 0);
}
