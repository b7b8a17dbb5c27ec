// AdaptiveWidth (engine/adaptive_width.h) on a synthetic clock: the full team while a Session is
// young, one narrow probe a second on a quiet machine, the caller alone once the team's runs
// are slow (every run or every other one), back to the team when they are fast again.
#include <catch2/catch.hpp>

#include "engine/adaptive_width.h"

using graphi::engine::AdaptiveWidth;
using Clock = AdaptiveWidth::Clock;
using std::chrono::milliseconds;

namespace {

// Runs `n` runs through the controller, each taking team_ms(i) at full width and narrow_ms at
// width 1 (time advances by the run's length); returns how many ran narrow. `team_cpu` is the
// share of the team's CPU time (threads x wall) the process got in a team run (1: all of it).
template <typename TeamMs>
int simulate(AdaptiveWidth& w, Clock::time_point& now, int n, TeamMs team_ms, double narrow_ms,
             double team_cpu = 1.0, int threads = 2) {
  int narrow = 0;
  for (int i = 0; i < n; ++i) {
    const int width = w.choose(now);
    const double ms = width == 1 ? narrow_ms : team_ms(i);
    narrow += width == 1;
    now += std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
    w.record(width, ms, now, width == 1 ? ms : team_cpu * ms * threads);
  }
  return narrow;
}

}  // namespace

TEST_CASE("AdaptiveWidth follows the faster width, probing the other once a second",
          "[engine][width]") {
  AdaptiveWidth w(2);
  Clock::time_point now{};
  // Young: 20 runs and a second at the full team whatever they take.
  CHECK(simulate(
            w, now, 20, [](int) { return 4.0; }, 7.0) == 0);
  CHECK(simulate(
            w, now, 230, [](int) { return 4.0; }, 7.0) == 0);  // ~1 s in
  // Quiet: the team (4 ms) beats the caller alone (7 ms); one narrow probe per second of runs.
  const int quiet = simulate(
      w, now, 1000, [](int) { return 4.0; }, 7.0);  // ~4 s
  CHECK(quiet >= 3);
  CHECK(quiet <= 6);
  // Busy: the team takes 30 ms (its second core is taken): the caller alone within a few runs,
  // the team probed once a second.
  const int busy = simulate(
      w, now, 600, [](int) { return 30.0; }, 7.0);  // ~4.3 s
  CHECK(busy >= 590);
  // Half busy: the team fast every other run, 4 / 30 ms (mean 17 against 7): still narrow.
  CHECK(simulate(
            w, now, 300, [](int i) { return i % 2 ? 4.0 : 30.0; }, 7.0) >= 290);
  // Quiet again: back to the team after a few probes (one per second).
  const int back = simulate(
      w, now, 2000, [](int) { return 4.0; }, 7.0);
  CHECK(back < 2000 - 1000);
  CHECK(simulate(
            w, now, 500, [](int) { return 4.0; }, 7.0) <= 3);
}

TEST_CASE("AdaptiveWidth: one slow team run does not send a quiet Session narrow",
          "[engine][width]") {
  AdaptiveWidth w(4);
  Clock::time_point now{};
  simulate(
      w, now, 500, [](int) { return 4.0; }, 12.0);
  // A 200 ms hiccup among fast team runs.
  CHECK(simulate(
            w, now, 100, [](int i) { return i == 10 ? 200.0 : 4.0; }, 12.0) <= 1);
  // A team of 1 is never narrowed or probed.
  AdaptiveWidth one(1);
  Clock::time_point t{};
  CHECK(simulate(
            one, t, 2000, [](int) { return 5.0; }, 1.0) == 2000);  // every run is width 1
}

TEST_CASE("AdaptiveWidth: a cold first run after a pause does not send the Session narrow",
          "[engine][width]") {
  // A benchmark's pattern: bursts of runs with pauses of over 2 s between them; the first team
  // run of each burst is slow (0.3 ms, caches cold, threads asleep), the rest 0.048 ms, the
  // caller alone 0.083 ms. Each burst runs at the team but for one probe a second.
  AdaptiveWidth w(2);
  Clock::time_point now{};
  simulate(
      w, now, 40000, [](int) { return 0.048; }, 0.083);  // ~2 s: past the warm-up
  for (int burst = 0; burst < 5; ++burst) {
    INFO("burst " << burst);
    now += milliseconds(2500);
    const int narrow = simulate(
        w, now, 4000, [](int i) { return i == 0 ? 0.3 : 0.048; }, 0.083);  // ~0.2 s
    CHECK(narrow <= 2);
  }
}

TEST_CASE("AdaptiveWidth: starved team runs end the warm-up early", "[engine][width]") {
  // Beside busy processes a team of 2 waits at every op for a descheduled thread: 30 ms a run
  // with the process getting 20% of 2 threads' time, the caller alone 7 ms. After three such
  // runs the young Session measures the narrow width and keeps it.
  AdaptiveWidth w(2);
  Clock::time_point now{};
  CHECK(simulate(
            w, now, 20, [](int) { return 30.0; }, 7.0, 0.2) >= 15);
  // Slow team runs that got their CPU time (a big model) do not: the full team for the warm-up.
  AdaptiveWidth big(2);
  Clock::time_point t{};
  CHECK(simulate(
            big, t, 20, [](int) { return 30.0; }, 70.0, 0.9) == 0);
  // Nor do short runs, however starved (the CPU clock's resolution and the first touch).
  AdaptiveWidth tiny(2);
  Clock::time_point u{};
  CHECK(simulate(
            tiny, u, 20, [](int) { return 0.5; }, 0.2, 0.1) == 0);
}
