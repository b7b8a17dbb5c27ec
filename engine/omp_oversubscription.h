// OpenMP oversubscription: libgomp decides how long an idle team thread spins from the number of
// OpenMP threads alive in the whole process. Once they exceed the CPUs the process may use
// (gomp_managed_threads > gomp_available_cpus), it cuts the spin to its "throttled" count (~100
// iterations), so team threads fall asleep between ops and every op pays a futex wake-up (~40 us
// measured on this VM: the LSTM model at 1x2 ran 148 ms instead of 22). Several Sessions with
// teams in one process, or executors x threads above the allowed cores, get there. The wait
// policy cannot be changed from inside the process: libgomp reads OMP_WAIT_POLICY and
// GOMP_SPINCOUNT once, in its constructor, before any graphi code runs (setenv() afterwards has
// no effect), so graphi warns once and documents the environment settings instead.
#pragma once

#include <optional>
#include <string>

namespace graphi::engine {

// The GOMP_SPINCOUNT graphi's front ends give libgomp when the user set neither it nor
// OMP_WAIT_POLICY (the CLI re-executes itself with it, the Python package sets it while it loads
// the library; C/C++ embedders set it themselves, docs/ENGINE.md). libgomp's own default is
// 300,000 pause iterations: ~7.5 ms on the Zen 4 VM (25 ns per pause), during which a team thread
// that has finished its share, or has no op yet, keeps its core. On a machine with other load
// that core is the one its peer needs: MobileNetV2 b1 at 1x2 beside two CPU-bound processes ran
// 8.1 ms median but 17.8 ms mean with runs of 190-490 ms (every op ~8 ms: one spin), against
// 8.0 / 8.5 ms (max 13.7) with 10,000 (~0.25 ms); on an idle machine both 4.0 ms.
inline constexpr const char* kGompSpinCount = "10000";
// Set (to "1") next to GOMP_SPINCOUNT by the CLI's re-execution, so the new process knows it
// chose the value (and removes both again).
inline constexpr const char* kGompSpinCountMarker = "GRAPHI_SET_GOMP_SPINCOUNT";

// The CPUs this process may run on (sched_getaffinity), as libgomp counts them.
int allowed_cpu_count();

// libgomp's count of the OpenMP threads alive in the process: the initial thread plus k - 1
// for every other team of k threads (a team's master is an existing thread).
struct OmpThreadCount {
  int session_threads = 0;       // this Session: executors x threads (+1 for a spinning scheduler)
  int process_threads = 0;       // libgomp's managed threads with this Session's teams included
  int cpus = 0;                  // allowed CPUs
  bool wait_policy_set = false;  // OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment
};

// The warning to print for these numbers, or nullopt. Two cases: the Session's own threads
// oversubscribe the CPUs (they spin for work and take turns on cores), and libgomp's process-
// wide count exceeds the CPUs without an explicit wait policy (throttled spin). Pure, for tests.
std::optional<std::string> omp_oversubscription_warning(const OmpThreadCount& c);

// A Session's claim on OpenMP threads for its lifetime: adds `executors` teams of `threads`
// (team_masters_are_new: the masters are threads libgomp did not count before, i.e. executor
// threads) to the process-wide count; the destructor takes them back. The constructor prints
// the warning (stderr, "graphi: warning: ...") at most once per process and kind.
class OmpThreadClaim {
 public:
  OmpThreadClaim(int executors, int threads, bool spinning_scheduler);
  ~OmpThreadClaim();
  OmpThreadClaim(const OmpThreadClaim&) = delete;
  OmpThreadClaim& operator=(const OmpThreadClaim&) = delete;
  // The warning this claim's numbers call for (printed or not), for logs and tests.
  const std::optional<std::string>& warning() const { return warning_; }

 private:
  int extra_ = 0;  // threads added to the process-wide count
  std::optional<std::string> warning_;
};

// The process-wide count as graphi models it (1 + the extra threads of live claims).
int omp_process_threads();

// While one is alive, claims made on this thread count but do not print their warning: for a
// Session that lives beside another only while the two are measured against each other
// (profiler/batch_split_choice.h), one of which is then dropped.
class QuietOmpClaims {
 public:
  QuietOmpClaims();
  ~QuietOmpClaims();
  QuietOmpClaims(const QuietOmpClaims&) = delete;
  QuietOmpClaims& operator=(const QuietOmpClaims&) = delete;
};

}  // namespace graphi::engine
