#include "profiler/chrome_trace.h"

namespace graphi::profiler {

std::string chrome_trace_json(const engine::Plan& plan, const engine::RunTrace& trace) {
  return "{\"traceEvents\":[]}";
}

Status write_chrome_trace(const std::string& path, const engine::Plan& plan, const engine::RunTrace& trace) {
  return Status::invalid_argument(path + ": Chrome trace export is not implemented yet");
}

}  // namespace graphi::profiler
