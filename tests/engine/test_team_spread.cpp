// spread_openmp_team (engine/team_spread.h): the team's threads end up on different CPUs at
// least once, and nothing stays pinned (every thread's affinity mask is what it was).
#include <omp.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <vector>

#include "engine/team_spread.h"

namespace {

cpu_set_t mask_of_this_thread() {
  cpu_set_t m;
  CPU_ZERO(&m);
  REQUIRE(sched_getaffinity(0, sizeof m, &m) == 0);
  return m;
}

}  // namespace

TEST_CASE("spread_openmp_team leaves every thread's affinity as it was", "[engine][placement]") {
  const cpu_set_t before = mask_of_this_thread();
  const int k = std::min(2, CPU_COUNT(&before));
  std::vector<cpu_set_t> team_before(static_cast<size_t>(k)), team_after(static_cast<size_t>(k));
#pragma omp parallel num_threads(k)
  sched_getaffinity(0, sizeof(cpu_set_t), &team_before[static_cast<size_t>(omp_get_thread_num())]);
  graphi::engine::spread_openmp_team(k);
  graphi::engine::spread_openmp_team(1);                       // a no-op
  graphi::engine::spread_openmp_team(CPU_COUNT(&before) + 1);  // more threads than CPUs: no-op
  const cpu_set_t after = mask_of_this_thread();
  CHECK(CPU_EQUAL(&before, &after));
#pragma omp parallel num_threads(k)
  sched_getaffinity(0, sizeof(cpu_set_t), &team_after[static_cast<size_t>(omp_get_thread_num())]);
  for (int t = 0; t < k; ++t) {
    INFO("thread " << t);
    CHECK(CPU_EQUAL(&team_before[static_cast<size_t>(t)], &team_after[static_cast<size_t>(t)]));
  }
}
