// The public APIs' lifetime contract (include/graphi/graphi.h, graphi.hpp): freeing or
// destroying a session while other threads are inside run() cancels the run in progress and the
// calls queued behind it (each returns kInvalidArgument, "run cancelled"), run_into writes no
// buffer then, and the destructor returns only after every call has returned. The model is a
// chain of 300 MatMul + Tanh pairs (a run takes about 150 ms here), so the other callers are
// queued behind the first run when the session goes.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <thread>

#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graphi/graphi.h"
#include "graphi/graphi.hpp"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using Catch::Matchers::Contains;

namespace {

constexpr int64_t kRows = 128, kCols = 512;

// `tag` names the scratch directory: ctest runs the test cases of this file in parallel, and
// scratch_dir() empties its directory (a shared one failed the other case's open under load).
std::string slow_model(const std::string& tag) {
  using namespace graphi;
  graph::GraphBuilder b("slow_chain");
  b.add_input("x", TensorDesc{DType::kF32, {kRows, kCols}});
  b.add_constant("w", test::random_tensor(TensorDesc{DType::kF32, {kCols, kCols}}, 5, -0.08, 0.08));
  std::string prev = "x";
  for (int i = 0; i < 300; ++i) {
    const std::string m = "m" + std::to_string(i), t = "t" + std::to_string(i);
    b.add_node("MatMul", m, {prev, "w"}, {m});
    b.add_node("Tanh", t + "_op", {m}, {t});
    prev = t;
  }
  b.add_output(prev);
  graph::Graph g = value_or_throw(b.finish(ops::Registry::get()));
  const std::string path = (test::scratch_dir("api_lifetime_" + tag) / "slow.graphi").string();
  REQUIRE(graph::write_graphi(g, path).is_ok());
  return path;
}

// Waits until every caller is inside its call (running or queued), or has returned: `run_calls`
// counts the callers inside, `returned` those that came back. Counts read between two equal
// reads of `returned` that add up to n leave no caller between starting and entering its call
// (destroying the session then would be a use after free: the contract's own precondition).
// Returns how many had already returned. (It used to sleep 50 ms after the callers announced
// themselves: under load a caller preempted between the announcement and run() met a destroyed
// Session, and its "the Session was moved from" failed the test.)
template <typename RunCalls>
int wait_until_inside(RunCalls run_calls, const std::atomic<int>& returned, int n) {
  while (true) {
    const int r1 = returned.load();
    const int inside = run_calls();
    if (returned.load() == r1 && inside + r1 == n) return r1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

TEST_CASE("c api: graphi_session_free while runs are in flight or queued cancels them", "[api]") {
  const std::string path = slow_model("c_api");
  for (const char* scheduler : {"sequential", "cpf"}) {
    INFO(scheduler);
    graphi_options o;
    graphi_options_init(&o);
    o.scheduler = scheduler;
    o.executors = std::string(scheduler) == "cpf" ? 2 : 1;
    o.pin = 0;
    graphi_session* s = nullptr;
    REQUIRE(graphi_session_open(path.c_str(), &o, &s) == GRAPHI_OK);
    std::vector<float> x(kRows * kCols, 0.5f);
    int64_t shape[2] = {kRows, kCols};
    constexpr int kCallers = 4;
    std::atomic<int> returned{0};
    std::vector<graphi_status> status(kCallers, -1);
    std::vector<std::string> message(kCallers);
    std::vector<int> buffer_untouched(kCallers, 1);
    std::vector<std::thread> callers;
    for (int i = 0; i < kCallers; ++i)
      callers.emplace_back([&, i] {
        graphi_tensor in = {"x", GRAPHI_F32, 2, shape, x.data(), x.size() * sizeof(float)};
        if (i % 2 == 0) {
          graphi_outputs* out = nullptr;
          status[i] = graphi_session_run(s, &in, 1, &out);
          if (status[i] == GRAPHI_OK) graphi_outputs_free(out);
        } else {  // run_into: a cancelled call writes nothing
          std::vector<float> y(kRows * kCols, -7.0f);
          graphi_buffer buf = {y.data(), y.size() * sizeof(float), 12345};
          status[i] = graphi_session_run_into(s, &in, 1, &buf, 1);
          if (status[i] != GRAPHI_OK)
            buffer_untouched[i] = buf.bytes_written == 0 && y.front() == -7.0f && y.back() == -7.0f;
        }
        if (status[i] != GRAPHI_OK) message[i] = graphi_last_error();
        returned.fetch_add(1);
      });
    const int done_before =
        wait_until_inside([&] { return graphi_session_run_calls(s); }, returned, kCallers);
    graphi_session_free(s);  // blocks until every call above has returned
    for (std::thread& t : callers) t.join();
    int cancelled = 0;
    for (int i = 0; i < kCallers; ++i) {
      INFO("caller " << i << ": " << message[i]);
      if (status[i] == GRAPHI_OK) continue;  // finished before the free (a loaded machine)
      ++cancelled;
      CHECK(status[i] == GRAPHI_INVALID_ARGUMENT);
      CHECK_THAT(message[i], Contains("run cancelled: the Session is being destroyed"));
      CHECK(buffer_untouched[i]);
    }
    // Every caller still inside at the free is cancelled, except perhaps the running one
    // finishing first (each run takes ~150 ms: normally none had returned).
    CHECK(cancelled >= kCallers - done_before - 1);
  }
}

TEST_CASE("public api: destroying a Session while runs are in flight or queued cancels them",
          "[api]") {
  const std::string path = slow_model("cpp_api");
  graphi::SessionOptions o;
  o.executors = 2;
  o.scheduler = "cpf";
  o.pin = false;
  auto opened = graphi::Session::open(path, o);
  INFO(opened.error().message);
  REQUIRE(opened.ok());
  std::optional<graphi::Session> s(std::move(opened).value());
  graphi::Session* raw = &*s;
  std::vector<float> x(kRows * kCols, 0.5f);
  constexpr int kCallers = 3;
  std::atomic<int> returned{0};
  std::vector<graphi::ApiError> errors(kCallers);
  std::vector<int> ok(kCallers, 0);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i)
    callers.emplace_back([&, i] {
      auto out =
          raw->run({graphi::Array::view("x", graphi::DType::kF32, {kRows, kCols}, x.data())});
      ok[i] = out.ok();
      errors[i] = out.error();
      returned.fetch_add(1);
    });
  const int done_before = wait_until_inside([&] { return raw->run_calls(); }, returned, kCallers);
  s.reset();
  for (std::thread& t : callers) t.join();
  int cancelled = 0;
  for (int i = 0; i < kCallers; ++i) {
    if (ok[i]) continue;
    ++cancelled;
    CHECK(errors[i].code == graphi::StatusCode::kInvalidArgument);
    CHECK_THAT(errors[i].message, Contains("run cancelled"));
  }
  CHECK(cancelled >= kCallers - done_before - 1);
}
