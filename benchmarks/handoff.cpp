#include "benchmarks/handoff.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace graphi::bench {

namespace {
bool pin_to(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s) == 0;
}
}  // namespace

double measure_handoff_ns() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) return -1;

  constexpr int kRounds = 20000;
  alignas(64) std::atomic<int> ping{0};
  alignas(64) std::atomic<int> pong{0};
  std::atomic<bool> ok{true};
  std::vector<double> samples;
  std::thread partner([&] {
    if (!pin_to(cpus[1])) ok = false;
    for (int i = 1; i <= 5 * kRounds; ++i) {
      while (ping.load(std::memory_order_acquire) != i) {
      }
      pong.store(i, std::memory_order_release);
    }
  });
  cpu_set_t saved;
  pthread_getaffinity_np(pthread_self(), sizeof saved, &saved);
  if (!pin_to(cpus[0])) ok = false;
  int i = 0;
  for (int batch = 0; batch < 5; ++batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < kRounds; ++r) {
      ++i;
      ping.store(i, std::memory_order_release);
      while (pong.load(std::memory_order_acquire) != i) {
      }
    }
    samples.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
        kRounds);
  }
  partner.join();
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  if (!ok) return -1;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2] / 2;
}

}  // namespace graphi::bench
