// Concurrency and lifetime stress (issue 15): several Sessions (different models, policies,
// splits, shared or own Plans) driven from many client threads at once, while a churn thread
// creates Sessions and destroys others under their callers' feet (in-flight runs cancelled by the
// destructor, or by cancel() first). Every output is compared with the sequential reference
// executor's; every error must be "run cancelled" on a Session being destroyed. A watchdog turns a
// hang into a failure: it prints what every client and slot was doing and every thread's stack,
// then aborts.
//
// The ctest (test_stress.cpp) runs it for a few seconds over every policy; scripts/bench_stress.sh
// runs the hidden "[.bench]" case for 60 s per policy (GRAPHI_STRESS_* environment variables).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graphi::test {

struct StressOptions {
  double seconds = 3;  // how long clients keep running
  // Policies the Sessions use (each with its splits: sequential 1x1 and 1x2; the others 1x1,
  // 1x2 and 2x1, scheduler role and pinning chosen at random).
  std::vector<std::string> policies = {"cpf", "fifo", "shared-queue", "sequential"};
  int clients = 6;         // client threads calling run()
  int slots = 4;           // Sessions alive at a time
  double churn_ms = 15;    // one Session replaced every churn_ms
  double watchdog_s = 60;  // no run and no churn for this long: dump state, abort
  uint64_t seed = 1;
  bool verbose = false;  // a line per second (runs, RSS)
};

struct StressReport {
  uint64_t runs = 0;       // run() calls
  uint64_t ok = 0;         // ... that returned outputs matching the reference
  uint64_t wrong = 0;      // ... that returned outputs differing from it
  uint64_t cancelled = 0;  // ... that returned "run cancelled" from a Session being destroyed
  uint64_t errors = 0;     // ... any other error
  uint64_t created = 0, destroyed = 0;
  uint64_t destroyed_in_flight = 0;  // destructor called with run() calls inside the Session
  uint64_t cancel_first = 0;         // destroyed after cancel() while callers were inside
  double seconds = 0;
  long rss_start_kb = 0, rss_end_kb = 0, rss_max_kb = 0;  // start: after the first 10%
  uint64_t runs_at_rss_start = 0;
  std::vector<std::string> failures;  // the first few wrong outputs / unexpected errors
  std::string summary() const;        // one line, for logs
};

StressReport run_stress(const StressOptions& options);

// Resident set size of this process (kB, /proc/self/statm).
long current_rss_kb();

}  // namespace graphi::test
