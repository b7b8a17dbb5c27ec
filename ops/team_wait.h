// How a member of a kernel's thread team waits for its peers within a run (the per-step
// exchange of a weight-centric RNN sequence kernel, SpinBarrier): spin for a bounded time, then
// yield a few times, then sleep on a futex until the peer publishes. Header-only; ops/ only
// (the engine's executors use engine/parker.h, the same idea for a different wake pattern).
//
// Why not spin only: on a loaded machine a peer can be preempted for a whole time slice
// (milliseconds). A spinning waiter then burns its own slice (and the CPU time a preempted peer
// or another process could use), and with unbound threads it keeps the scheduler from moving
// the preempted peer onto its core. Sleeping frees the core. The spin budget is longer than a
// futex wake-up (~30 us), so an unloaded team, whose waits are the imbalance of one step, never
// sleeps; the waker pays a plain store and one load of a line it owns per publish while nobody
// sleeps.
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

// How long a waiter polls before it yields and then sleeps.
inline constexpr std::chrono::microseconds kTeamSpinBudget{50};
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
// spin_budget 0: straight to the yield and sleep stages (tests use it to exercise them).
template <typename Ready>
inline void team_wait(TeamWord& w, Ready&& ready,
                      std::chrono::nanoseconds spin_budget = kTeamSpinBudget) noexcept {
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
  for (int i = 0; i < 4; ++i) {
    std::this_thread::yield();
    if (ready(w.value.load(std::memory_order_acquire))) return;
  }
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
