// Parker: how an idle thread waits for work without stealing a core. It spins for a bounded
// budget (longer than the ~30 us it costs to wake a sleeping thread on another core, issue 3),
// then yields a few times, then sleeps on a futex (std::atomic::wait) until wake().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace graphi::engine {

// The named spin budget: how long a waiter polls before it sleeps.
inline constexpr std::chrono::microseconds kDefaultSpinBudget{50};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

class Parker {
 public:
  // Returns once ready() is true. ready() must become true before the matching wake() call
  // (e.g. push to a ring, then wake()), so no wake-up is lost.
  template <typename Ready>
  void wait(Ready&& ready, std::chrono::microseconds spin_budget = kDefaultSpinBudget) {
    if (ready()) return;
    const auto deadline = std::chrono::steady_clock::now() + spin_budget;
    for (uint32_t i = 1;; ++i) {
      cpu_relax();
      if (ready()) return;
      if ((i & 63) == 0 && std::chrono::steady_clock::now() >= deadline) break;
    }
    for (int i = 0; i < 4; ++i) {
      std::this_thread::yield();
      if (ready()) return;
    }
    while (true) {
      // seq_cst on sleepers_ and seq_ (here and in wake) gives one total order: either wake()
      // sees sleepers_ > 0 and notifies, or our ready() below runs after its push and sees it.
      const uint32_t s = seq_.load(std::memory_order_seq_cst);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (ready()) {
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        return;
      }
      seq_.wait(s, std::memory_order_seq_cst);  // returns at once if seq_ moved past s
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      if (ready()) return;
    }
  }

  // Like wake(), but touches no line the waiter writes while it spins: for wakers that signal
  // often (executors publishing work). The condition must have been made true by a seq_cst
  // operation (e.g. a fetch_add) before this call: then either the load below sees the sleeper
  // or the sleeper's ready() check sees the condition.
  void wake_if_sleeping() {
    if (sleepers_.load(std::memory_order_seq_cst) != 0) {
      seq_.fetch_add(1, std::memory_order_seq_cst);
      seq_.notify_all();
    }
  }

  // Call after making the waiter's condition true. Costs one atomic add when nobody sleeps.
  void wake() {
    seq_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) seq_.notify_all();
  }

 private:
  alignas(64) std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> sleepers_{0};
};

}  // namespace graphi::engine
