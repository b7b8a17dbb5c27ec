// engine/team_leader.h: with GRAPHI_SHARED_TEAMS=1, sequential Sessions with teams of k > 1
// share one process-wide leader per k (one OpenMP pool instead of one per calling thread), stay
// correct when called from several threads at once, and run each job on the caller's CPU mask;
// without it they keep their teams on the calling thread.
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
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

namespace {

// Thread ids of this process (/proc/self/task): libgomp starts a worker thread the first time a
// thread opens a team of 2, and keeps it until that thread exits.
std::set<std::string> process_threads() {
  std::set<std::string> tids;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    tids.insert(e.path().filename().string());
  return tids;
}

// y = a @ b, a [64, 128], b [128, 96]: above LIBXSMM's 64^3 limit, so oneDNN's matmul runs it.
std::shared_ptr<const graph::Graph> big_mm_graph() {
  graph::GraphBuilder b("<run width matmul test>");
  b.add_input("a", TensorDesc{DType::kF32, {64, 128}});
  b.add_input("b", TensorDesc{DType::kF32, {128, 96}});
  b.add_node("MatMul", "mm", {"a", "b"}, {"y"});
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

Tensor naive_mm(const Tensor& a, const Tensor& b) {
  Tensor y(TensorDesc{DType::kF32, {64, 96}});
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 96; ++j) {
      double acc = 0;
      for (int k = 0; k < 128; ++k)
        acc += double(a.data_as<float>()[i * 128 + k]) * b.data_as<float>()[k * 96 + j];
      y.data_as<float>()[i * 96 + j] = static_cast<float>(acc);
    }
  return y;
}

// y = relu(conv3x3(x, W) + bias), x [1, 4, 9, 9], W [8, 4, 3, 3] constant, pads 1.
std::shared_ptr<const graph::Graph> conv_graph(const Tensor& w, const Tensor& bias) {
  graph::GraphBuilder b("<run width conv test>");
  b.add_input("x", TensorDesc{DType::kF32, {1, 4, 9, 9}});
  b.add_constant("W", w);
  b.add_constant("B", bias);
  graph::Attributes conv;
  conv.set("kernel_shape", std::vector<int64_t>{3, 3});
  conv.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  b.add_node("Conv", "conv", {"x", "W", "B"}, {"c"}, conv);
  b.add_node("Relu", "relu", {"c"}, {"y"});
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

Tensor naive_conv_relu(const Tensor& x, const Tensor& w, const Tensor& bias) {
  Tensor y(TensorDesc{DType::kF32, {1, 8, 9, 9}});
  const float* xp = x.data_as<float>();
  const float* wp = w.data_as<float>();
  for (int o = 0; o < 8; ++o)
    for (int i = 0; i < 9; ++i)
      for (int j = 0; j < 9; ++j) {
        double acc = bias.data_as<float>()[o];
        for (int c = 0; c < 4; ++c)
          for (int di = 0; di < 3; ++di)
            for (int dj = 0; dj < 3; ++dj) {
              const int r = i + di - 1, q = j + dj - 1;
              if (r < 0 || r >= 9 || q < 0 || q >= 9) continue;
              acc += double(xp[(c * 9 + r) * 9 + q]) * wp[((o * 4 + c) * 3 + di) * 3 + dj];
            }
        y.data_as<float>()[(o * 9 + i) * 9 + j] = static_cast<float>(acc > 0 ? acc : 0);
      }
  return y;
}

// Runs `session` once on a fresh thread while another run of the process holds 2 threads (a
// RunWidth claim on this thread, as a second Session's run in flight would): the OS threads the
// run started (libgomp workers of the fresh thread's pool; threads that appeared, so a worker of
// an earlier test's thread exiting meanwhile does not count) and its output.
std::pair<int, Tensor> run_beside_another(Session& session, const NamedTensors& feed) {
  RunWidth other(2, 2, true);
  REQUIRE(other.threads() == 2);
  int started = -1;
  Tensor y;
  std::thread t([&] {
    const std::set<std::string> before = process_threads();
    auto out = session.run(feed);
    started = 0;
    for (const std::string& tid : process_threads()) started += before.count(tid) == 0;
    if (out.is_ok()) y = (*out)[0].second;
  });
  t.join();
  return {started, y};
}

}  // namespace

// The mechanism behind one tiny CNN Session losing against its own process (issue 14): a run
// narrowed to one thread still ran every oneDNN op (Conv, MatMul, pooling) with the team the
// primitive was made for, i.e. opened an OpenMP team of 2 beside the runs that hold the CPUs; in
// a process whose OpenMP threads exceed the CPUs each such op paid a futex wake-up of the
// sleeping worker. Now the narrowed run uses the primitive's 1-thread twin: no team, no worker
// thread. With GRAPHI_SHARED_TEAMS=0 (never narrowed) the same run still opens its team, which
// shows what the count detects.
TEST_CASE("run width: a narrowed run of oneDNN ops opens no OpenMP team (1-thread twins)",
          "[team_leader][run_width]") {
  REQUIRE(RunWidth::in_flight() == 0);
  unsetenv("GRAPHI_SHARED_TEAMS");
  SECTION("MatMul on oneDNN") {
    SessionOptions o;
    o.threads = 2;
    auto s = value_or_throw(Session::create(big_mm_graph(), o));
    Tensor a = test::random_tensor(TensorDesc{DType::kF32, {64, 128}}, 61);
    Tensor b = test::random_tensor(TensorDesc{DType::kF32, {128, 96}}, 62);
    auto [started, y] = run_beside_another(*s, {{"a", a}, {"b", b}});
    CHECK(started == 0);
    CHECK(test::max_rel_error(y, naive_mm(a, b)) < 1e-4);
  }
  SECTION("small MatMul (LIBXSMM), and a larger run never narrowed") {
    auto s = sequential(2, false);
    Tensor a = test::random_tensor(TensorDesc{DType::kF32, {8, 32}}, 71);
    Tensor b = test::random_tensor(TensorDesc{DType::kF32, {32, 16}}, 72);
    auto [started, y] = run_beside_another(*s, {{"a", a}, {"b", b}});
    CHECK(started == 0);
    CHECK(test::max_rel_error(y, naive_y(a, b)) < 1e-5);
    // The small MatMul runs on one thread anyway (Plan::narrow); one big enough for a team:
    setenv("GRAPHI_SHARED_TEAMS", "0", 1);
    SessionOptions o;
    o.threads = 2;
    auto own = value_or_throw(Session::create(big_mm_graph(), o));
    unsetenv("GRAPHI_SHARED_TEAMS");
    Tensor a2 = test::random_tensor(TensorDesc{DType::kF32, {64, 128}}, 73);
    Tensor b2 = test::random_tensor(TensorDesc{DType::kF32, {128, 96}}, 74);
    auto [own_started, own_y] = run_beside_another(*own, {{"a", a2}, {"b", b2}});
    CHECK(own_started >= 1);  // its team of 2: one libgomp worker
    CHECK(test::max_rel_error(own_y, naive_mm(a2, b2)) < 1e-4);
  }
  SECTION("Conv") {
    Tensor w = test::random_tensor(TensorDesc{DType::kF32, {8, 4, 3, 3}}, 81);
    Tensor bias = test::random_tensor(TensorDesc{DType::kF32, {8}}, 82);
    Tensor x = test::random_tensor(TensorDesc{DType::kF32, {1, 4, 9, 9}}, 83);
    SessionOptions o;
    o.threads = 2;
    auto s = value_or_throw(Session::create(conv_graph(w, bias), o));
    const Tensor want = naive_conv_relu(x, w, bias);
    for (int i = 0; i < 2; ++i) {  // the first narrowed run makes the twin, the second reuses it
      auto [started, y] = run_beside_another(*s, {{"x", x}});
      CHECK(started == 0);
      CHECK(test::max_rel_error(y, want) < 1e-4);
    }
    // Alone, the run keeps its team of 2 (and the team primitive): same numbers.
    auto alone = value_or_throw(s->run({{"x", x}}));
    CHECK(test::max_rel_error(alone[0].second, want) < 1e-4);
  }
  CHECK(RunWidth::in_flight() == 0);
}
