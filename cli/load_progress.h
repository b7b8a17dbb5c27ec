// Shows a long model load on stderr (issue 16: a 168k-node model loaded in 4-5 s of silence).
// The loader reports its stages through graph::ImportOptions::progress (graph/ never prints);
// the subcommand adds its own ("passes", "compile"). Nothing is printed unless the load has
// taken more than 1 s (GRAPHI_PROGRESS_AFTER_MS overrides it, for tests) and stderr is a
// terminal (one line updated in place) or --progress was given (plain lines, at most one a
// second); then a one-line breakdown per stage closes it. Short loads and tests stay silent.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "graph/onnx/onnx_import.h"

namespace graphi::cli {

class LoadProgressPrinter {
 public:
  LoadProgressPrinter(std::string model, bool forced);
  // For graph::ImportOptions::progress; the printer must outlive the load.
  graph::LoadProgressFn callback();
  // A stage of the front end's own, started now ("passes", "compile").
  void stage(const char* name) { update(name, 0, 0); }
  // The load is complete: closes the last stage and prints the breakdown if anything was shown.
  void done();

 private:
  using Clock = std::chrono::steady_clock;
  void update(const char* stage, size_t done, size_t total);
  double elapsed(Clock::time_point now) const;

  std::string model_;
  bool tty_, forced_, shown_ = false;
  double after_s_ = 1.0;
  Clock::time_point start_, last_print_, stage_start_;
  std::string stage_;
  std::vector<std::pair<std::string, double>> stages_;  // finished stages, seconds each
};

}  // namespace graphi::cli
