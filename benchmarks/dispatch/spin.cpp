#include "benchmarks/dispatch/spin.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace graphi::bench {

namespace {
double g_ns_per_iteration = 0;

double elapsed_ns(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

__attribute__((noipa)) void spin_iterations(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) __asm__ __volatile__("" ::: "memory");
}

void calibrate_spin() {
  constexpr uint64_t kIterations = uint64_t{1} << 22;  // a few ms
  double best = 1e300;
  for (int trial = 0; trial < 9; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    spin_iterations(kIterations);
    best = std::min(best, elapsed_ns(t0));
  }
  g_ns_per_iteration = best / static_cast<double>(kIterations);
}

double spin_ns_per_iteration() { return g_ns_per_iteration; }

uint64_t spin_iterations_for(int64_t ns) {
  if (ns <= 0 || g_ns_per_iteration <= 0) return 0;
  return static_cast<uint64_t>(std::llround(static_cast<double>(ns) / g_ns_per_iteration));
}

double measure_spin_ns(int64_t ns) {
  const uint64_t it = spin_iterations_for(ns);
  if (it == 0) return 0;
  const int per_batch =
      static_cast<int>(std::max<int64_t>(1, 2'000'000 / std::max<int64_t>(ns, 1)));
  std::vector<double> samples;
  for (int b = 0; b < 9; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per_batch; ++i) spin_iterations(it);
    samples.push_back(elapsed_ns(t0) / per_batch);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace graphi::bench
