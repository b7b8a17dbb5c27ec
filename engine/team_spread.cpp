#include "engine/team_spread.h"

#include <omp.h>
#include <sched.h>

#include <vector>

namespace graphi::engine {

void spread_openmp_team(int k) {
  if (k < 2) return;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < k) return;
  // The caller's current CPU first, then the other allowed ones.
  std::vector<int> cpus;
  const int here = sched_getcpu();
  if (here >= 0 && CPU_ISSET(here, &allowed)) cpus.push_back(here);
  for (int c = 0; c < CPU_SETSIZE && static_cast<int>(cpus.size()) < k; ++c)
    if (CPU_ISSET(c, &allowed) && c != here) cpus.push_back(c);
  if (static_cast<int>(cpus.size()) < k) return;
#pragma omp parallel num_threads(k)
  {
    const int t = omp_get_thread_num();
    cpu_set_t mine, one;
    CPU_ZERO(&mine);
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<size_t>(t)], &one);
    if (sched_getaffinity(0, sizeof mine, &mine) == 0 &&
        sched_setaffinity(0, sizeof one, &one) == 0)
      sched_setaffinity(0, sizeof mine, &mine);
  }
}

}  // namespace graphi::engine
