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

double AdaptiveWidth::Samples::estimate() const {
  // The mean without the largest sample: a width whose runs are fast only now and then (a team
  // whose second core is busy half the time) is judged by its mean, and one hiccup of a
  // steady width does not flip the choice.
  std::array<double, kWindow> s = ms;
  std::sort(s.begin(), s.begin() + count);
  const int kept = count > 1 ? count - 1 : count;
  double sum = 0;
  for (int i = 0; i < kept; ++i) sum += s[static_cast<size_t>(i)];
  return sum / kept;
}

int AdaptiveWidth::choose(Clock::time_point now) {
  if (full_ <= 1) return full_;
  if (runs_ == 0) first_ = now;
  if (runs_ < kWarmupRuns || now - first_ < kWarmup || team_.count == 0) return full_;
  if (narrow_.count == 0) return 1;  // first probe of the narrow width
  const int best = narrow_.estimate() < team_.estimate() ? 1 : full_;
  const int other = best == 1 ? full_ : 1;
  return now - of(other).newest >= kProbeInterval ? other : best;
}

void AdaptiveWidth::record(int width, double ms, Clock::time_point now) {
  ++runs_;
  if (full_ <= 1 || (width != 1 && width != full_)) return;  // narrowed for other reasons
  Samples& s = of(width);
  s.ms[static_cast<size_t>(s.next)] = ms;
  s.next = (s.next + 1) % kWindow;
  s.count = std::min(s.count + 1, kWindow);
  s.newest = now;
}

}  // namespace graphi::engine
