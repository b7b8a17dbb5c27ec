#include "engine/omp_oversubscription.h"

#include <sched.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace graphi::engine {

namespace {

std::atomic<int> g_extra_threads{0};  // sum over live claims of their teams' k - 1
std::once_flag g_warned_session, g_warned_process;

// The user's choice only: the front ends remove the GOMP_SPINCOUNT they set once libgomp has read
// it (cli/omp_spin_default.h, python/graphi/__init__.py), so what is left here is the user's.
bool wait_policy_in_environment() {
  return std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr;
}

}  // namespace

int allowed_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

int omp_process_threads() { return 1 + g_extra_threads.load(std::memory_order_relaxed); }

std::optional<std::string> omp_oversubscription_warning(const OmpThreadCount& c) {
  if (c.session_threads > c.cpus)
    return "this Session runs " + std::to_string(c.session_threads) + " threads on " +
           std::to_string(c.cpus) +
           " allowed CPUs: idle executors spin for work and the threads take turns on the cores, "
           "so runs are "
           "slow and jittery (use executors x threads <= " +
           std::to_string(c.cpus) + ", or pin = true for a clear error)";
  if (c.process_threads > c.cpus && !c.wait_policy_set)
    return "the Sessions of this process hold " + std::to_string(c.process_threads) +
           " OpenMP threads on " + std::to_string(c.cpus) +
           " allowed CPUs: libgomp then cuts its spin-wait to its throttled count, team threads "
           "sleep between "
           "ops and every op pays a futex wake-up (~40 us); set OMP_WAIT_POLICY=active (or "
           "GOMP_SPINCOUNT, e.g. "
           "300000) in the environment before the process starts, or run fewer teams";
  return std::nullopt;
}

namespace {
thread_local int t_quiet = 0;  // live QuietOmpClaims on this thread
}  // namespace

QuietOmpClaims::QuietOmpClaims() { ++t_quiet; }
QuietOmpClaims::~QuietOmpClaims() { --t_quiet; }

OmpThreadClaim::OmpThreadClaim(int executors, int threads, bool spinning_scheduler) {
  extra_ = executors * (threads - 1);
  const int process = 1 + g_extra_threads.fetch_add(extra_, std::memory_order_relaxed) + extra_;
  OmpThreadCount c;
  c.session_threads = executors * threads + (spinning_scheduler ? 1 : 0);
  c.process_threads = process;
  c.cpus = allowed_cpu_count();
  c.wait_policy_set = wait_policy_in_environment();
  warning_ = omp_oversubscription_warning(c);
  if (!warning_ || t_quiet > 0) return;
  std::once_flag& once = c.session_threads > c.cpus ? g_warned_session : g_warned_process;
  std::call_once(once, [&] { std::fprintf(stderr, "graphi: warning: %s\n", warning_->c_str()); });
}

OmpThreadClaim::~OmpThreadClaim() { g_extra_threads.fetch_sub(extra_, std::memory_order_relaxed); }

}  // namespace graphi::engine
