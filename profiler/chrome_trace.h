// Chrome Trace Event Format export of a RunTrace (opens in Perfetto and chrome://tracing).
#pragma once

#include <string>

#include "engine/plan.h"
#include "engine/trace.h"

namespace graphi::profiler {

// One "X" event per op on pid 1: one tid per executor plus "scheduler" and "bootstrap" tracks,
// thread_name metadata per track; args carry op type, node name, kernel, input/output shapes
// and bytes, level and successor node ids (for the critical path). Times in us since the
// run's start.
std::string chrome_trace_json(const engine::Plan& plan, const engine::RunTrace& trace);

// Writes chrome_trace_json() to `path`; an error names the file.
Status write_chrome_trace(const std::string& path, const engine::Plan& plan,
                          const engine::RunTrace& trace);

}  // namespace graphi::profiler
