#include "cli/omp_spin_default.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "engine/omp_oversubscription.h"

namespace graphi::cli {

namespace {

std::string& setting() {
  static std::string s = "not checked";
  return s;
}

// With OMP_PROC_BIND / OMP_PLACES / GOMP_CPU_AFFINITY, libgomp bound this thread to its first
// place when it loaded; exec keeps that mask, so the new process would see one place's CPUs
// only. The places were computed from the original mask: give the thread their union back.
void unbind_initial_thread() {
  if (omp_get_proc_bind() == omp_proc_bind_false) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  for (int p = 0, np = omp_get_num_places(); p < np; ++p) {
    const int n = omp_get_place_num_procs(p);
    if (n <= 0) continue;
    int ids[CPU_SETSIZE];
    if (n > CPU_SETSIZE) continue;
    omp_get_place_proc_ids(p, ids);
    for (int i = 0; i < n; ++i)
      if (ids[i] >= 0 && ids[i] < CPU_SETSIZE) CPU_SET(ids[i], &set);
  }
  sched_setaffinity(0, sizeof set, &set);
}

}  // namespace

void apply_omp_spin_default(char** argv) {
  using engine::kGompSpinCount;
  using engine::kGompSpinCountMarker;
  if (std::getenv(kGompSpinCountMarker) != nullptr) {
    // The re-executed process: libgomp has its setting; give the children the user's environment.
    setting() = std::string("GOMP_SPINCOUNT=") + kGompSpinCount +
                " (graphi's default: team threads stop spinning after ~10^4 pauses instead of "
                "libgomp's 3*10^5; OMP_WAIT_POLICY, GOMP_SPINCOUNT or GRAPHI_OMP_SPIN=libgomp "
                "choose otherwise)";
    unsetenv("GOMP_SPINCOUNT");
    unsetenv(kGompSpinCountMarker);
    return;
  }
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* opt_out = std::getenv("GRAPHI_OMP_SPIN");
  if (policy != nullptr || spin != nullptr) {
    setting() = "from the environment:";
    if (policy) setting() += std::string(" OMP_WAIT_POLICY=") + policy;
    if (spin) setting() += std::string(" GOMP_SPINCOUNT=") + spin;
    return;
  }
  if (opt_out != nullptr && std::strcmp(opt_out, "libgomp") == 0) {
    setting() = "libgomp's default (GRAPHI_OMP_SPIN=libgomp)";
    return;
  }
  setting() = "libgomp's default (graphi could not re-execute itself with GOMP_SPINCOUNT=" +
              std::string(kGompSpinCount) + ")";
  if (setenv("GOMP_SPINCOUNT", kGompSpinCount, 1) != 0 || setenv(kGompSpinCountMarker, "1", 1) != 0)
    return;
  unbind_initial_thread();
  execv("/proc/self/exe", argv);
  // exec failed (no /proc): go on with libgomp's default, environment as it was.
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kGompSpinCountMarker);
}

const std::string& omp_spin_setting() { return setting(); }

}  // namespace graphi::cli
