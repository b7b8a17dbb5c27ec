// AdaptiveWidth: whether a sequential Session's run gets its full team or its caller alone,
// chosen by measuring both on the machine as it is now (other processes' load included).
//
// Why: a team of k waits at every op for its slowest thread (oneDNN and graphi's kernels split
// each op statically), so when other processes keep some cores busy the whole run goes at the
// pace of the descheduled thread. Measured (MobileNetV2 b1, 2-vCPU guest, `graphi run`,
// 200 runs): quiet, 1x2 3.9 ms and 1x1 6.7 ms; beside one or two `yes` processes, 1x2
// 13.8-17.9 ms median (p90 35 ms) and 1x1 7.0-7.3 ms, ONNX Runtime's 2 threads 8.3-15.8 ms.
//
// How: the run times of each width go into a window of the last 5 (the estimate: the mean of
// those younger than 2 s without the largest); a run takes the width with the lower estimate,
// and the other width gets one probe run once its newest sample is older than the probe
// interval (1 s); with fewer than two recent samples of the team the team runs (the first run
// after a pause is cold). So the choice follows
// sustained load within a few runs, a burst of load is forgotten 2 s after it ended, and a
// quiet machine pays one narrow run per second.
// Nothing changes in the first second of a Session or its first 20 runs (short-lived Sessions,
// the profiler's calibration runs and tests keep their team), unless three of the team's runs
// were starved: at least 1 ms long, and the process got under 35% of the CPU time its k threads
// would have used over the run (they waited, descheduled, for cores other processes held:
// tf2onnx's MobileNetV3-Small took 93-199 ms a run on 2 threads beside two busy processes, 2.1
// ms on one; a 20-run `graphi run` never left the warm-up). The narrow run uses each
// primitive's 1-thread twin (ops/onednn.h): its outputs may differ from the team's in the last
// bits (a different summation split), as with engine/run_width.h's narrowing.
//
// GRAPHI_ADAPTIVE_WIDTH=0 keeps the full team on every run.
#pragma once

#include <array>
#include <chrono>

namespace graphi::engine {

class AdaptiveWidth {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kWindow = 5;
  static constexpr int kWarmupRuns = 20;
  static constexpr std::chrono::milliseconds kWarmup{1000}, kProbeInterval{1000}, kMaxAge{2000};
  static constexpr int kStarvedRuns = 3;
  static constexpr double kStarvedShare = 0.35, kStarvedMinMs = 1.0;

  explicit AdaptiveWidth(int full) : full_(full) {}
  // Whether GRAPHI_ADAPTIVE_WIDTH allows it (read once).
  static bool enabled_by_env();

  // The team width of the next run (full or 1), at time `now`.
  int choose(Clock::time_point now);
  // A run of `width` threads took `ms`, ending at `now`; the process used `cpu_ms` of CPU time
  // meanwhile (< 0: not measured).
  void record(int width, double ms, Clock::time_point now, double cpu_ms = -1);

 private:
  struct Samples {
    std::array<double, kWindow> ms{};
    std::array<Clock::time_point, kWindow> at{};  // when each run ended
    int count = 0, next = 0;
    Clock::time_point newest{};
    double estimate(Clock::time_point now) const;
    int recent(Clock::time_point now) const;  // samples younger than kMaxAge
  };
  Samples& of(int width) { return width == 1 ? narrow_ : team_; }

  int full_;
  int runs_ = 0;
  int starved_ = 0;  // team runs that waited for descheduled threads (see the top)
  Clock::time_point first_{};
  Samples team_, narrow_;
};

}  // namespace graphi::engine
