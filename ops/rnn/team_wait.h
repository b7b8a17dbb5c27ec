// How a member of a kernel's thread team waits for its peers within a run (the per-step
// exchange of a weight-centric RNN sequence kernel, SpinBarrier): spin for a short time, then
// yield for a bounded time, then sleep on a futex until the peer publishes. Header-only; ops/
// only (the engine's executors use engine/parker.h, the same idea for a different wake pattern).
//
// Why the stages: an unloaded team's waits are the imbalance of one step (microseconds), so
// the spin catches them. When the peer shares our core (more team threads than free cores, the
// scheduler put both on one core), yielding runs it at once. When the peer was preempted on
// another core by another process for longer than the yield budget (about one 4 ms scheduler
// tick), the waiter sleeps instead of burning its core. Measured (benchmarks: graphi run of
// LSTM b1 T100 on 2 threads with busy loops pinned to one core): shorter yield budgets (50 us
// spin + 4 yields, or 10 us + 500 us) made the one-busy-loop case slower (h256 ~12 ms instead
// of 0.7), sleeping too early lets the scheduler leave the team split across the loaded core.
// The waker pays a plain store and one load of a line nobody writes while nobody sleeps.
#pragma once

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace graphi::ops {

// How long a waiter polls (pause) before it starts yielding (~1000 pauses on this Xeon, as
// before the sleep stage existed), and how long it keeps yielding before it sleeps.
inline constexpr std::chrono::microseconds kTeamSpinBudget{10};
inline constexpr std::chrono::microseconds kTeamYieldBudget{4000};
// The longest single futex sleep: bounds the delay of a missed wake-up (see publish()).
inline constexpr std::chrono::microseconds kTeamSleepSlice{500};

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// A published 32-bit word (a step counter, a barrier generation) plus the number of threads
// sleeping on it, on two cache lines: the publisher's load of `sleepers` right after its store
// to `value` would otherwise wait for that store's ownership transfer (the waiters poll the
// line), ~6% of a step at hidden 64 batch 1. Waiters write `sleepers` only when they go to
// sleep, so the unloaded path shares nothing beyond the word itself.
struct TeamWord {
  alignas(64) std::atomic<uint32_t> value{0};
  alignas(64) std::atomic<uint32_t> sleepers{0};

  // Stores v (release) and wakes the sleepers, if any. No fence between the store and the
  // sleepers load (a locked instruction per step is measurable at batch 1): a waiter that
  // goes to sleep just as v is published can miss this wake-up, so sleeps are bounded by
  // kTeamSleepSlice (and the futex itself re-checks the word in the kernel, microseconds later).
  void publish(uint32_t v) noexcept {
    value.store(v, std::memory_order_release);
    if (sleepers.load(std::memory_order_relaxed) != 0) wake_all();
  }

  // Sleeps while value == expected, at most `slice`; may return spuriously.
  void sleep_while(uint32_t expected, std::chrono::nanoseconds slice) noexcept {
#if defined(__linux__)
    timespec ts{static_cast<time_t>(slice.count() / 1000000000),
                static_cast<long>(slice.count() % 1000000000)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&value), FUTEX_WAIT_PRIVATE, expected, &ts,
            nullptr, 0);
#else
    (void)expected;
    std::this_thread::sleep_for(slice);
#endif
  }

  void wake_all() noexcept {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&value), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
            nullptr, 0);
#endif
  }
};

// Returns once ready(w.value) is true; the value that made it true was loaded with acquire, so
// everything the publisher wrote before publish() is visible. ready must stay true once true
// (monotone counters, generations that cannot advance without this waiter).
// Budgets of 0 skip a stage (tests use them to reach the sleep quickly).
template <typename Ready>
inline void team_wait(TeamWord& w, Ready&& ready,
                      std::chrono::nanoseconds spin_budget = kTeamSpinBudget,
                      std::chrono::nanoseconds yield_budget = kTeamYieldBudget) noexcept {
  if (ready(w.value.load(std::memory_order_acquire))) return;
  if (spin_budget.count() > 0) {
    // The clock is read only once the wait outlasts the first 64 polls (most unloaded waits
    // end before that).
    std::chrono::steady_clock::time_point deadline{};
    for (uint32_t i = 1;; ++i) {
      cpu_relax();
      if (ready(w.value.load(std::memory_order_acquire))) return;
      if ((i & 63) == 0) {
        const auto now = std::chrono::steady_clock::now();
        if (i == 64) {
          deadline = now + spin_budget;
        } else if (now >= deadline) {
          break;
        }
      }
    }
  }
  const auto yield_end = std::chrono::steady_clock::now() + yield_budget;
  do {
    std::this_thread::yield();
    if (ready(w.value.load(std::memory_order_acquire))) return;
  } while (std::chrono::steady_clock::now() < yield_end);
  while (true) {
    w.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t v = w.value.load(std::memory_order_acquire);
    if (ready(v)) {
      w.sleepers.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    w.sleep_while(v, kTeamSleepSlice);  // returns at once if value moved past v
    w.sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (ready(w.value.load(std::memory_order_acquire))) return;
  }
}

}  // namespace graphi::ops
