#include "ops/cpu_wait.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>

namespace graphi::ops {

namespace {

// The calling thread's involuntary context switches so far: what marks a run where the kernel
// does not report the wait.
long involuntary_switches() {
  rusage u{};
  return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : 0;
}

}  // namespace

int64_t parse_schedstat_wait_ns(const char* text) {
  char* end = nullptr;
  std::strtoull(text, &end, 10);  // time on a CPU
  if (end == text) return -1;
  const char* second = end;
  const unsigned long long wait = std::strtoull(second, &end, 10);
  if (end == second) return -1;
  return static_cast<int64_t>(wait);
}

int64_t thread_cpu_wait_ns() {
  FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return -1;
  char buf[128] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  return parse_schedstat_wait_ns(buf);
}

CpuWaitMark CpuWaitMark::now() { return CpuWaitMark{thread_cpu_wait_ns(), involuntary_switches()}; }

bool CpuWaitMark::disturbed_since(double run_ms, double fraction) const {
  const int64_t w = thread_cpu_wait_ns();
  if (wait_ns >= 0 && w >= 0) return double(w - wait_ns) > fraction * run_ms * 1e6;
  return involuntary_switches() > switches;
}

}  // namespace graphi::ops
