#include "ops/rnn/team_exchange.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "ops/rnn/team_wait.h"

namespace graphi::ops::rnn_wcs {

namespace {

using Clock = std::chrono::steady_clock;

// Thread 0 sends i on `ping`, thread 1 answers i on `pong`, batches of kRounds; a member that
// does not see the other's word before the deadline gives up (a preempted or absent peer).
double measure() {
  if (omp_in_parallel() || omp_get_num_procs() < 2) return 0;
  constexpr int kBatches = 5, kRounds = 200;
  struct alignas(64) Line {
    std::atomic<int> v{0};
  };
  Line ping, pong;
  std::atomic<bool> failed{false};
  std::vector<double> batch_ns;
  const auto deadline = Clock::now() + std::chrono::milliseconds(5);
  // Spins until word == want; false (and `failed` set) past the deadline or after the peer
  // failed.
  auto await = [&](const std::atomic<int>& word, int want) {
    for (unsigned n = 1; word.load(std::memory_order_acquire) != want; ++n) {
      cpu_relax();
      if ((n & 1023) == 0 && (failed.load(std::memory_order_relaxed) || Clock::now() > deadline)) {
        failed.store(true, std::memory_order_relaxed);
        return false;
      }
    }
    return true;
  };
#pragma omp parallel num_threads(2)
  {
    if (omp_get_num_threads() != 2) {
      failed = true;
    } else if (omp_get_thread_num() == 0) {
      int i = 0;
      for (int b = 0; b < kBatches && !failed; ++b) {
        const auto t0 = Clock::now();
        for (int r = 0; r < kRounds; ++r) {
          ping.v.store(++i, std::memory_order_release);
          if (!await(pong.v, i)) break;
        }
        batch_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                           kRounds);
      }
    } else {
      for (int i = 1; i <= kBatches * kRounds; ++i) {
        if (!await(ping.v, i)) break;
        pong.v.store(i, std::memory_order_release);
      }
    }
  }
  if (failed || batch_ns.size() != kBatches) return 0;
  std::sort(batch_ns.begin(), batch_ns.end());
  return batch_ns[kBatches / 2];
}

}  // namespace

double team_round_trip_ns() {
  // Remembered once measured; a call that could not measure (say, inside a parallel region)
  // leaves the next one to try again.
  static std::atomic<double> ns{0};
  if (ns.load() > 0) return ns.load();
  const double m = measure();
  if (m > 0) ns.store(m);
  return m;
}

std::string exchange_class(double round_trip_ns) {
  if (round_trip_ns <= 0) return "";
  return round_trip_ns < 300 ? "near" : "far";
}

}  // namespace graphi::ops::rnn_wcs
