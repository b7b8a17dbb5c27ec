#include "ops/rnn/team_exchange.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

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
// The deadline starts once both members are pinned.
double measure() {
  if (omp_in_parallel() || omp_get_num_procs() < 2) return 0;
  constexpr int kBatches = 5, kRounds = 200;
  struct alignas(64) Line {
    std::atomic<int> v{0};
  };
  Line ping, pong;
  std::atomic<bool> failed{false};
  std::vector<double> batch_ns;
  Clock::time_point deadline;
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
  // Two distinct CPUs, the first two this process may use: unpinned, a new team thread starts
  // on its master's CPU and only runs once the scheduler moves it (milliseconds of the master
  // spinning alone). Each member's own mask is restored afterwards.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 0;
  int cpus[2] = {-1, -1};
  for (int c = 0, n = 0; c < CPU_SETSIZE && n < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[n++] = c;
  if (cpus[1] < 0) return 0;
#pragma omp parallel num_threads(2)
  {
    const int me = omp_get_thread_num();
    cpu_set_t saved, one;
    const bool pinned = pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
    CPU_ZERO(&one);
    CPU_SET(cpus[me % 2], &one);
    if (!pinned || pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) failed = true;
#pragma omp single
    deadline = Clock::now() + std::chrono::milliseconds(5);
    if (omp_get_num_threads() != 2 || failed) {
      failed = true;
    } else if (me == 0) {
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
    if (pinned) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  }
  if (failed || batch_ns.size() != kBatches) return 0;
  std::sort(batch_ns.begin(), batch_ns.end());
  return batch_ns[kBatches / 2];
}

}  // namespace

double team_round_trip_ns() {
  // Remembered for a second: a VM's host moves its vCPUs between placements within seconds, and
  // the choices keyed by the class (schedules, splits) are made when Sessions are created, which
  // a long-lived process keeps doing. A call that could not measure (say, inside a parallel
  // region) leaves the next one to try again.
  static std::atomic<double> ns{0};
  static std::atomic<int64_t> at_ns{0};
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  constexpr int64_t kMaxAgeNs = 1'000'000'000;
  if (ns.load() > 0 && now - at_ns.load() < kMaxAgeNs) return ns.load();
  const double m = measure();
  if (m > 0) {
    ns.store(m);
    at_ns.store(now);
  }
  return m > 0 ? m : ns.load();
}

std::string exchange_class(double round_trip_ns) {
  if (round_trip_ns <= 0) return "";
  return round_trip_ns < 300 ? "near" : "far";
}

}  // namespace graphi::ops::rnn_wcs
