// A fast barrier for the members of one thread team (e.g. the once-per-step barrier of a
// weight-centric RNN sequence kernel, or PCP's K-split reduction). Header-only; ops/ only.
//
// Centralized and sense-reversing: the sense is a generation counter, so no per-thread state is
// needed and the barrier can be reused back to back. Waiters spin on the generation (pause) for a
// bounded number of rounds, then yield the core on every further round: on a small machine a
// peer may be runnable on the very core we spin on (more team threads than cores, or another
// executor), and pure spinning would then stall both.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace graphi::ops {

class SpinBarrier {
 public:
  // Roughly 10-50 us of pause-spinning before yielding, depending on the CPU's pause latency.
  static constexpr int kDefaultSpinRounds = 1024;

  // A barrier for `nthr` >= 1 members. Not copyable or movable (members hold its address).
  explicit SpinBarrier(int nthr, int spin_rounds = kDefaultSpinRounds)
      : remaining_(nthr), nthr_(nthr), spin_rounds_(spin_rounds) {}
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
    const uint32_t gen = generation_.load(std::memory_order_acquire);
    // acq_rel: release publishes our writes along the RMW chain on remaining_; the last
    // arriver's acquire thereby sees every member's writes.
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Last to arrive: re-arm for the next phase before releasing anyone (relaxed is enough:
      // nobody touches remaining_ again until they have acquired the new generation).
      remaining_.store(nthr_, std::memory_order_relaxed);
      // Release pairs with the waiters' acquire loads below.
      generation_.store(gen + 1, std::memory_order_release);
      return;
    }
    for (int round = 0; generation_.load(std::memory_order_acquire) == gen; ++round) {
      if (round < spin_rounds_) {
        pause();
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  // Arrivals hammer remaining_ while waiters poll generation_: separate cache lines.
  alignas(64) std::atomic<int> remaining_;
  alignas(64) std::atomic<uint32_t> generation_{0};
  const int nthr_;
  const int spin_rounds_;
};

}  // namespace graphi::ops
