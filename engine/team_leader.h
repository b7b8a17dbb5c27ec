// TeamLeader: one process-wide thread per team size k that runs the sequential Sessions' runs
// with teams of k > 1 (issue 14, "several models in one process").
//
// Why: a sequential Session opens its OpenMP team on the calling thread, and libgomp gives
// every thread that opens a region a worker pool of its own. N callers of N sequential 1xk
// Sessions therefore hold 1 + N (k - 1) OpenMP threads; above the allowed CPUs libgomp cuts
// its spin-wait to the throttled count and every op pays a futex wake-up (two 1x2 Sessions on
// 2 cores: one process 20% slower than two processes). Routed through one leader per k, the
// process holds 1 + (k - 1) whatever the number of Sessions, as N processes on the same cores
// would each hold k: runs of different Sessions take turns on the leader, as those processes
// take turns on the cores. ONNX Runtime's global thread pools serve the same purpose.
//
// Cost: a hand-off per run (not per op): the leader spins kDefaultSpinBudget for the next run,
// then sleeps; the caller sleeps at once (a spinning caller would take a core from the team),
// so every run pays the caller's wake-up. Hence opt-in (enabled() below).
// The leader runs each job on the submitting caller's CPU mask, so "the sequential executor
// leaves its placement to the caller" still holds.
#pragma once

#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/omp_oversubscription.h"
#include "engine/parker.h"

namespace graphi::engine {

class TeamLeader {
 public:
  // The leader for teams of `threads` (>= 2), shared by every holder; started on first use and
  // stopped (joined) when the last holder lets go. Holds the process's OpenMP claim for one
  // team of `threads`.
  static std::shared_ptr<TeamLeader> acquire(int threads);
  // Leaders alive in the process (tests).
  static int live_leaders();
  // True when the environment has GRAPHI_SHARED_TEAMS=1 (read at each Session's creation).
  // Opt-in: the hand-off costs a sleeping caller's wake-up per run (~0.06-0.09 ms on the
  // shared 2-core machine; LSTM h256 b1 s1 at 2 threads: 0.09-0.12 ms instead of 0.010), which
  // only pays off with several Sessions called at once (benchmarks/README.md).
  static bool enabled();

  // Runs `job` on the leader thread with the caller's CPU mask and returns when it is done.
  // Callers from several threads take turns in arrival order (a ticket queue: std::mutex alone
  // let one caller starve the others for seconds). Must not be called from the leader thread.
  void run(const std::function<void()>& job);

  int threads() const { return threads_; }
  ~TeamLeader();
  TeamLeader(const TeamLeader&) = delete;
  TeamLeader& operator=(const TeamLeader&) = delete;

 private:
  explicit TeamLeader(int threads);
  void loop();

  const int threads_;
  OmpThreadClaim claim_;
  std::mutex submit_;      // one job at a time
  std::mutex turn_mutex_;  // the ticket queue in front of submit_
  std::condition_variable turn_cv_;
  uint64_t next_ticket_ = 0, serving_ = 0;
  std::atomic<const std::function<void()>*> job_{nullptr};
  std::atomic<bool> done_{false};
  std::atomic<bool> stop_{false};
  cpu_set_t job_mask_;  // the submitting caller's mask (under submit_)
  Parker job_parker_, done_parker_;
  std::thread thread_;
};

}  // namespace graphi::engine
