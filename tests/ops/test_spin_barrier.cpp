// SpinBarrier: no member passes a phase early, writes before wait() are visible after it, and it
// works with more threads than cores (the yield path).
#include <omp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "ops/spin_barrier.h"

using graphi::ops::SpinBarrier;

namespace {

// Each phase: member t writes data[t] = phase (plain store), waits, checks every slot holds
// phase, waits again (so nobody overwrites a slot another member is still reading).
int run_phases(SpinBarrier& barrier, int nthr, int phases, std::vector<long>& data, int t) {
  int errors = 0;
  for (int phase = 1; phase <= phases; ++phase) {
    data[t] = phase;
    barrier.wait();
    for (int u = 0; u < nthr; ++u)
      if (data[u] != phase) ++errors;
    barrier.wait();
  }
  return errors;
}

}  // namespace

TEST_CASE("spin barrier: phases stay in lock step on std::threads, up to 2x oversubscribed") {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int nthr : {1, 2, 3, 2 * cores}) {
    for (int spin : {0, 64, SpinBarrier::kDefaultSpinRounds}) {
      INFO("threads " << nthr << " spin rounds " << spin);
      SpinBarrier barrier(nthr, spin);
      REQUIRE(barrier.size() == nthr);
      std::vector<long> data(nthr, 0);
      std::atomic<int> errors{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < nthr; ++t)
        threads.emplace_back([&, t] { errors += run_phases(barrier, nthr, 300, data, t); });
      for (auto& th : threads) th.join();
      CHECK(errors.load() == 0);
    }
  }
}

TEST_CASE("spin barrier: works inside an OpenMP team and is reusable across regions") {
  for (int nthr : {2, 4}) {
    SpinBarrier barrier(nthr);
    std::vector<long> data(nthr, 0);
    std::atomic<int> errors{0};
    for (int region = 0; region < 3; ++region) {
#pragma omp parallel num_threads(nthr)
      {
        if (omp_get_num_threads() == nthr)
          errors += run_phases(barrier, nthr, 200, data, omp_get_thread_num());
      }
    }
    CHECK(errors.load() == 0);
  }
}
