// A fast barrier for the members of one thread team (e.g. the once-per-step barrier of a
// weight-centric RNN sequence kernel, or PCP's K-split reduction). Header-only; ops/ only.
//
// Centralized and sense-reversing: the sense is a generation counter, so no per-thread state is
// needed and the barrier can be reused back to back. Waiters wait on the generation with
// team_wait (ops/rnn/team_wait.h): spin briefly, then yield for a bounded time, then sleep on a
// futex, so a preempted member (loaded machine, more team threads than cores) does not make the
// others burn their time slices.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "ops/rnn/team_wait.h"

namespace graphi::ops {

class SpinBarrier {
 public:
  // A barrier for `nthr` >= 1 members. Not copyable or movable (members hold its address).
  // The budgets are team_wait's (tests shorten them to reach the sleep stage).
  explicit SpinBarrier(int nthr, std::chrono::nanoseconds spin_budget = kTeamSpinBudget,
                       std::chrono::nanoseconds yield_budget = kTeamYieldBudget)
      : remaining_(nthr), nthr_(nthr), spin_budget_(spin_budget), yield_budget_(yield_budget) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  int size() const { return nthr_; }

  // Returns once all nthr members have called wait() for the current phase. Everything a member
  // wrote before its wait() is visible to every member after its wait() returns. Exactly nthr
  // distinct threads must call it per phase; calling it from more is undefined.
  void wait() noexcept {
    if (nthr_ <= 1) return;
    // Read the generation before arriving: it cannot advance until we have arrived (our
    // fetch_sub below is a release, so this load cannot move after it).
    const uint32_t gen = generation_.value.load(std::memory_order_acquire);
    // acq_rel: release publishes our writes along the RMW chain on remaining_; the last
    // arriver's acquire thereby sees every member's writes.
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Last to arrive: re-arm for the next phase before releasing anyone (relaxed is enough:
      // nobody touches remaining_ again until they have acquired the new generation).
      remaining_.store(nthr_, std::memory_order_relaxed);
      // Release (seq_cst) pairs with the waiters' acquire loads; wakes sleeping waiters.
      generation_.publish(gen + 1);
      return;
    }
    team_wait(
        generation_, [gen](uint32_t g) { return g != gen; }, spin_budget_, yield_budget_);
  }

 private:
  // Arrivals hammer remaining_ while waiters poll the generation: separate cache lines.
  alignas(64) std::atomic<int> remaining_;
  alignas(64) TeamWord generation_;
  const int nthr_;
  const std::chrono::nanoseconds spin_budget_, yield_budget_;
};

}  // namespace graphi::ops
