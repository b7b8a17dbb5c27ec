#include "engine/adaptive_width.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace graphi::engine {

bool AdaptiveWidth::enabled_by_env() {
  static const bool on = [] {
    const char* v = std::getenv("GRAPHI_ADAPTIVE_WIDTH");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

int AdaptiveWidth::Samples::recent(Clock::time_point now) const {
  int n = 0;
  for (int i = 0; i < count; ++i) n += now - at[static_cast<size_t>(i)] <= kMaxAge;
  return n;
}

double AdaptiveWidth::Samples::estimate(Clock::time_point now) const {
  // The mean of the samples younger than kMaxAge without the largest: a width whose runs are
  // fast only now and then (a team whose second core is busy half the time) is judged by its
  // mean, one hiccup of a steady width does not flip the choice, and a burst of load is
  // forgotten kMaxAge after it ended. -1: no recent sample.
  std::array<double, kWindow> s{};
  int n = 0;
  for (int i = 0; i < count; ++i)
    if (now - at[static_cast<size_t>(i)] <= kMaxAge)
      s[static_cast<size_t>(n++)] = ms[static_cast<size_t>(i)];
  if (n == 0) return -1;
  std::sort(s.begin(), s.begin() + n);
  const int kept = n > 1 ? n - 1 : n;
  double sum = 0;
  for (int i = 0; i < kept; ++i) sum += s[static_cast<size_t>(i)];
  return sum / kept;
}

int AdaptiveWidth::choose(Clock::time_point now) {
  if (full_ <= 1) return full_;
  if (runs_ == 0) first_ = now;
  if ((runs_ < kWarmupRuns || now - first_ < kWarmup) && starved_ < kStarvedRuns) return full_;
  const double team = team_.estimate(now), narrow = narrow_.estimate(now);
  // Measure the team first, twice: the first run after an idle gap (caches cold, the team's
  // threads asleep) is slow, and alone it would send the Session narrow for a second (the
  // benchmark's GRU H64 B1 ran at the 1-thread schedule's 0.083 ms instead of 0.048 after each
  // pause). Of two samples the estimate drops the larger.
  if (team < 0 || team_.recent(now) < 2) return full_;
  const bool narrow_due = narrow_.count == 0 || now - narrow_.newest >= kProbeInterval;
  if (narrow < 0) return narrow_due ? 1 : full_;
  const int best = narrow < team ? 1 : full_;
  if (best == full_) return narrow_due ? 1 : full_;
  return now - team_.newest >= kProbeInterval ? full_ : 1;
}

void AdaptiveWidth::record(int width, double ms, Clock::time_point now, double cpu_ms) {
  ++runs_;
  if (full_ <= 1 || (width != 1 && width != full_)) return;  // narrowed for other reasons
  if (width == full_ && cpu_ms >= 0 && ms >= kStarvedMinMs && cpu_ms < kStarvedShare * ms * full_)
    ++starved_;
  Samples& s = of(width);
  s.ms[static_cast<size_t>(s.next)] = ms;
  s.at[static_cast<size_t>(s.next)] = now;
  s.next = (s.next + 1) % kWindow;
  s.count = std::min(s.count + 1, kWindow);
  s.newest = now;
}

}  // namespace graphi::engine
