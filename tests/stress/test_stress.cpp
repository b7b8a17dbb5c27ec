// The concurrency and lifetime stress (stress_harness.h) for a few seconds over every policy, and
// its long form for scripts/bench_stress.sh.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tests/stress/stress_harness.h"

using namespace graphi::test;

namespace {

void check_report(const StressReport& r) {
  INFO(r.summary());
  for (const std::string& f : r.failures) UNSCOPED_INFO(f);
  CHECK(r.wrong == 0);
  CHECK(r.errors == 0);
  CHECK(r.ok + r.cancelled == r.runs);
  CHECK(r.ok > 0);
  CHECK(r.created == r.destroyed);
  CHECK(r.created > static_cast<uint64_t>(4));  // the churn replaced Sessions while clients ran
}

}  // namespace

TEST_CASE("stress: many clients, every policy, Sessions replaced and destroyed mid-run",
          "[stress]") {
  StressOptions o;
  o.seconds = 3;
  o.watchdog_s = 120;  // sanitizer builds on a loaded machine are slow, never this slow
  const StressReport r = run_stress(o);
  std::fprintf(stderr, "stress: %s\n", r.summary().c_str());
  check_report(r);
}

// scripts/bench_stress.sh: GRAPHI_STRESS_SECONDS (60), GRAPHI_STRESS_POLICY (one policy, or all),
// GRAPHI_STRESS_CLIENTS (6). Prints the report; fails on a wrong output, an unexpected error or
// RSS growth beyond max(16 MB, 10%) between the first 10% of the time and the end.
TEST_CASE("stress: benchmark (scripts/bench_stress.sh)", "[.bench]") {
  StressOptions o;
  auto env = [](const char* name) -> const char* { return std::getenv(name); };
  o.seconds = env("GRAPHI_STRESS_SECONDS") ? std::atof(env("GRAPHI_STRESS_SECONDS")) : 60;
  if (env("GRAPHI_STRESS_CLIENTS")) o.clients = std::atoi(env("GRAPHI_STRESS_CLIENTS"));
  if (env("GRAPHI_STRESS_POLICY") && std::string(env("GRAPHI_STRESS_POLICY")) != "all")
    o.policies = {env("GRAPHI_STRESS_POLICY")};
  o.watchdog_s = 60;
  o.verbose = env("GRAPHI_STRESS_VERBOSE") != nullptr;
  const StressReport r = run_stress(o);
  std::string policies;
  for (const std::string& p : o.policies) policies += (policies.empty() ? "" : ",") + p;
  std::printf("stress %s: %s\n", policies.c_str(), r.summary().c_str());
  for (const std::string& f : r.failures) std::printf("  %s\n", f.c_str());
  std::fflush(stdout);
  check_report(r);
  const long growth = r.rss_end_kb - r.rss_start_kb;
  CHECK(growth <= std::max(16L * 1024, r.rss_start_kb / 10));
}
