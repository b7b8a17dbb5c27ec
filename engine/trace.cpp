#include "engine/trace.h"

#include <chrono>

namespace graphi::engine {

uint64_t trace_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace graphi::engine
