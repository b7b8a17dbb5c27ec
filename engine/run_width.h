// RunWidth: how many threads a sequential Session's run gets while other sequential runs of the
// process are in flight (issue 14, "several models in one process").
//
// Why: N callers of N sequential 1xk Sessions in one process would each open a team of k; above
// the allowed CPUs the teams take turns on the cores (a spinning team waits for a partner that
// is descheduled) and libgomp throttles its spin for the whole process. Measured (shared 2-core
// machine, LSTM + GRU 4x256 T50): two 1x2 Sessions called at once did 0.55-0.75 of the runs/s of
// the same Sessions in two processes, with the process-wide team leader 0.62; the same two
// Sessions at 1x1 in one process 1.01-1.02 (benchmarks/README.md). So a run that starts while
// other runs hold threads, and whose team would push the threads in flight above the allowed
// CPUs, runs with a team of 1 on its caller: no OpenMP team, no hand-off, no throttling. A run
// alone keeps its full team on the caller thread (no cost for the single-Session case).
//
// Modes (GRAPHI_SHARED_TEAMS, read when each Session is created): unset or "auto" = this
// narrowing (the default), "0" = always the full team on the caller (the old default),
// "1" = the process-wide team leader (engine/team_leader.h).
#pragma once

#include <atomic>

namespace graphi::engine {

enum class TeamSharing { kAuto, kOwn, kLeader };

// The mode GRAPHI_SHARED_TEAMS asks for (kAuto when unset or unrecognised).
TeamSharing team_sharing_from_env();

class RunWidth {
 public:
  // Claims `threads` for a run, or 1 when other runs are in flight and the claim would take the
  // process's threads in flight above `cpus`. Narrowing only with `narrow` (kAuto).
  RunWidth(int threads, int cpus, bool narrow);
  ~RunWidth();
  RunWidth(const RunWidth&) = delete;
  RunWidth& operator=(const RunWidth&) = delete;
  int threads() const { return threads_; }
  // Threads of sequential runs in flight in the process (tests).
  static int in_flight();

 private:
  int threads_;
};

}  // namespace graphi::engine
