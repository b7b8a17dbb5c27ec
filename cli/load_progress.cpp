#include "cli/load_progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/cli_util.h"

namespace graphi::cli {

LoadProgressPrinter::LoadProgressPrinter(std::string model, bool forced)
    : model_(std::move(model)), tty_(isatty(2) != 0), forced_(forced), start_(Clock::now()) {
  if (const char* env = std::getenv("GRAPHI_PROGRESS_AFTER_MS"); env && *env)
    after_s_ = std::atof(env) / 1000.0;
  last_print_ = stage_start_ = start_;
}

double LoadProgressPrinter::elapsed(Clock::time_point now) const {
  return std::chrono::duration<double>(now - start_).count();
}

graph::LoadProgressFn LoadProgressPrinter::callback() {
  return [this](const graph::LoadProgress& p) { update(p.stage, p.done, p.total); };
}

void LoadProgressPrinter::update(const char* stage, size_t done, size_t total) {
  const Clock::time_point now = Clock::now();
  const bool new_stage = stage_ != stage;
  if (new_stage) {
    if (!stage_.empty())
      stages_.emplace_back(stage_, std::chrono::duration<double>(now - stage_start_).count());
    stage_ = stage;
    stage_start_ = now;
  }
  if (!(tty_ || forced_) || elapsed(now) < after_s_) return;
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  if (shown_ && !new_stage && since_print < (tty_ ? 0.2 : 1.0)) return;
  last_print_ = now;
  shown_ = true;
  std::string what = stage_;
  if (stage_ == "parse" && total > 1)
    what += " " + human_bytes(static_cast<double>(total));
  else if (stage_ == "import" && total > 0)
    what += " " + std::to_string(done) + "/" + std::to_string(total) + " nodes";
  std::fprintf(stderr, "%sgraphi: loading %s: %s (%.1f s)%s", tty_ ? "\r\033[K" : "",
               model_.c_str(), what.c_str(), elapsed(now), tty_ ? "" : "\n");
  std::fflush(stderr);
}

void LoadProgressPrinter::done() {
  const Clock::time_point now = Clock::now();
  if (!stage_.empty())
    stages_.emplace_back(stage_, std::chrono::duration<double>(now - stage_start_).count());
  stage_.clear();
  if (!shown_) return;
  std::string parts;
  for (const auto& [name, s] : stages_) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.2f s", parts.empty() ? "" : ", ", name.c_str(), s);
    parts += buf;
  }
  std::fprintf(stderr, "%sgraphi: loaded %s in %.1f s (%s)\n", tty_ ? "\r\033[K" : "",
               model_.c_str(), elapsed(now), parts.c_str());
  shown_ = false;
}

}  // namespace graphi::cli
