// ops/cpu_wait.h: the run delay Linux reports, read for the calling thread, against threads made
// to share one CPU (and one that sleeps).
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "ops/cpu_wait.h"

using namespace graphi::ops;

TEST_CASE("cpu_wait: a schedstat line's second field is the wait", "[cpu_wait]") {
  CHECK(parse_schedstat_wait_ns("501643430 500253113 140\n") == 500253113);
  CHECK(parse_schedstat_wait_ns("0 2854506 1") == 2854506);
  CHECK(parse_schedstat_wait_ns("123") == -1);
  CHECK(parse_schedstat_wait_ns("") == -1);
  CHECK(parse_schedstat_wait_ns("x y z") == -1);
}

namespace {

// Spins for `ms` on the first CPU this process may use; returns the wait it accumulated and
// whether a mark taken at the start calls the spin disturbed.
struct Spin {
  int64_t waited_ns = -1;
  bool disturbed = false;
};
Spin spin_on_first_cpu(double ms, std::atomic<int>& ready) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof(allowed), &allowed);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &allowed)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  ready.fetch_add(1);
  while (ready.load() < 2) {
  }
  const CpuWaitMark mark = CpuWaitMark::now();
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
         ms) {
  }
  Spin s;
  s.waited_ns = thread_cpu_wait_ns() - mark.wait_ns;
  s.disturbed = mark.disturbed_since(ms);
  return s;
}

}  // namespace

TEST_CASE("cpu_wait: two threads spinning on one CPU each wait for it, a sleeping one does not",
          "[cpu_wait]") {
  if (thread_cpu_wait_ns() < 0) {
    WARN("no /proc/thread-self/schedstat on this kernel: nothing to check");
    return;
  }
  std::atomic<int> ready{0};
  Spin a, b;
  std::thread ta([&] { a = spin_on_first_cpu(200, ready); });
  std::thread tb([&] { b = spin_on_first_cpu(200, ready); });
  ta.join();
  tb.join();
  // Sharing one CPU, each spent a large part of its 200 ms (about 100 ms on a quiet machine)
  // waiting for it while the other ran.
  CHECK(a.waited_ns + b.waited_ns > 60'000'000);
  CHECK((a.disturbed || b.disturbed));

  // Sleeping is not waiting for a CPU: at most the wake-up's own wait.
  const CpuWaitMark mark = CpuWaitMark::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(thread_cpu_wait_ns() - mark.wait_ns < 50'000'000);
}
