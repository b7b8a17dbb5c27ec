// How long the calling thread was kept from running: the time it spent runnable but waiting for
// a CPU because the scheduler gave its CPU to another thread (Linux's run delay,
// /proc/thread-self/schedstat). A timed run of a team whose members waited a few percent of the
// run measured the machine's other load, not the code; a count of involuntary context switches
// cannot tell that from a 5 us kworker wake-up, which on a 2-core machine lands in most runs
// longer than a millisecond (the RNN calibration had flagged 1 in 3 LSTM h1024 calibrations as
// disturbed on a quiet machine that way, and did not cache those verdicts).
#pragma once

#include <cstdint>

namespace graphi::ops {

// Nanoseconds the calling thread has waited for a CPU since it started; -1 where the kernel
// does not say (no schedstat file).
int64_t thread_cpu_wait_ns();

// The second field of a schedstat line ("<on cpu ns> <waiting ns> <slices>"); -1 if malformed.
int64_t parse_schedstat_wait_ns(const char* text);

// A thread's share of a timed run: what it had waited and switched when the run started.
struct CpuWaitMark {
  int64_t wait_ns = 0;
  long switches = 0;
  static CpuWaitMark now();
  // Whether, since this mark, the thread waited for a CPU more than `fraction` of `run_ms`
  // (where the wait is unknown: whether it was switched out at all).
  bool disturbed_since(double run_ms, double fraction = 0.02) const;
};

}  // namespace graphi::ops
