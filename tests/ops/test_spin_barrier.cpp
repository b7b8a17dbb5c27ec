// SpinBarrier and team_wait (ops/rnn/team_wait.h): no member passes a phase early, writes before
// wait() / publish() are visible after it, and it works with more threads than cores and with a
// member that is delayed for milliseconds (the yield and futex-sleep paths).
#include <omp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "ops/rnn/spin_barrier.h"
#include "ops/rnn/team_wait.h"

using graphi::ops::SpinBarrier;
using graphi::ops::team_wait;
using graphi::ops::TeamWord;
using namespace std::chrono_literals;

namespace {

// Each phase: member t writes data[t] = phase (plain store), waits, checks every slot holds
// phase, waits again (so nobody overwrites a slot another member is still reading).
// delay_every > 0: in every delay_every-th phase, member phase % nthr sleeps 1 ms before it
// arrives (a preempted team member), so the others exhaust their spin budget and sleep.
int run_phases(SpinBarrier& barrier, int nthr, int phases, std::vector<long>& data, int t,
               int delay_every = 0) {
  int errors = 0;
  for (int phase = 1; phase <= phases; ++phase) {
    if (delay_every > 0 && phase % delay_every == 0 && phase % nthr == t)
      std::this_thread::sleep_for(1ms);
    data[t] = phase;
    barrier.wait();
    for (int u = 0; u < nthr; ++u)
      if (data[u] != phase) ++errors;
    barrier.wait();
  }
  return errors;
}

}  // namespace

TEST_CASE("spin barrier: phases stay in lock step on std::threads, up to 2x oversubscribed") {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int nthr : {1, 2, 3, 2 * cores}) {
    for (std::chrono::nanoseconds spin :
         {0ns, 2000ns, std::chrono::nanoseconds(graphi::ops::kTeamSpinBudget)}) {
      INFO("threads " << nthr << " spin budget " << spin.count() << " ns");
      SpinBarrier barrier(nthr, spin);
      REQUIRE(barrier.size() == nthr);
      std::vector<long> data(nthr, 0);
      std::atomic<int> errors{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < nthr; ++t)
        threads.emplace_back([&, t] { errors += run_phases(barrier, nthr, 300, data, t); });
      for (auto& th : threads) th.join();
      CHECK(errors.load() == 0);
    }
  }
}

TEST_CASE("spin barrier: works inside an OpenMP team and is reusable across regions") {
  for (int nthr : {2, 4}) {
    SpinBarrier barrier(nthr);
    std::vector<long> data(nthr, 0);
    std::atomic<int> errors{0};
    for (int region = 0; region < 3; ++region) {
#pragma omp parallel num_threads(nthr)
      {
        if (omp_get_num_threads() == nthr)
          errors += run_phases(barrier, nthr, 200, data, omp_get_thread_num());
      }
    }
    CHECK(errors.load() == 0);
  }
}

TEST_CASE("spin barrier: a member delayed by milliseconds holds everyone back, nothing is lost") {
  for (int nthr : {2, 3}) {
    for (std::chrono::nanoseconds spin :
         {0ns, 20000ns, std::chrono::nanoseconds(graphi::ops::kTeamSpinBudget)}) {
      INFO("threads " << nthr << " spin budget " << spin.count() << " ns");
      // Yield budget 100 us < the 1 ms delay: the waiters reach the futex sleep.
      SpinBarrier barrier(nthr, spin, 100us);
      std::vector<long> data(nthr, 0);
      std::atomic<int> errors{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < nthr; ++t)
        threads.emplace_back([&, t] { errors += run_phases(barrier, nthr, 60, data, t, 4); });
      for (auto& th : threads) th.join();
      CHECK(errors.load() == 0);
    }
  }
}

TEST_CASE("team wait: waiters sleep through a slow publisher and see what it wrote first") {
  // The publisher writes slot i, then publishes i; every other step it first sleeps 1 ms, longer
  // than the spin and yield budgets here, so the waiters reach the futex sleep. Two waiters share
  // the word (one wake must reach both).
  constexpr uint32_t kSteps = 30;
  for (std::chrono::nanoseconds spin :
       {0ns, 20000ns, std::chrono::nanoseconds(graphi::ops::kTeamSpinBudget)}) {
    INFO("spin budget " << spin.count() << " ns");
    TeamWord word;
    std::vector<long> slot(kSteps + 1, 0);
    std::atomic<int> errors{0};
    auto waiter = [&] {
      for (uint32_t i = 1; i <= kSteps; ++i) {
        team_wait(
            word, [i](uint32_t v) { return static_cast<int32_t>(v - i) >= 0; }, spin, 100us);
        if (slot[i] != 7 * long(i)) ++errors;
      }
    };
    std::thread w1(waiter), w2(waiter);
    for (uint32_t i = 1; i <= kSteps; ++i) {
      if (i % 2) std::this_thread::sleep_for(1ms);
      slot[i] = 7 * long(i);
      word.publish(i);
    }
    w1.join();
    w2.join();
    CHECK(errors.load() == 0);
    CHECK(word.sleepers.load() == 0);
  }
}

TEST_CASE("team wait: counters compare modulo 2^32 across the wrap") {
  TeamWord word;
  word.publish(0xFFFFFFFEu);
  const uint32_t want = 1;  // two steps later, past the wrap
  std::thread pub([&] {
    std::this_thread::sleep_for(1ms);
    word.publish(0xFFFFFFFFu);
    std::this_thread::sleep_for(1ms);
    word.publish(want);
  });
  team_wait(
      word, [want](uint32_t v) { return static_cast<int32_t>(v - want) >= 0; }, 0ns, 0ns);
  CHECK(word.value.load() == want);
  pub.join();
}
