#include "engine/startup_env.h"

#include <cstdlib>
#include <cstring>

namespace graphi::engine {
namespace {

constexpr const char* kNames[] = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY",
                                  "KMP_AFFINITY"};
constexpr int kCount = sizeof kNames / sizeof kNames[0];

// Plain zero-initialised storage (no dynamic initialisation that could run after the capture).
const char* g_values[kCount];
bool g_captured = false;

// Priority 101 (the first one not reserved): runs before the default-priority constructors of
// the same binary or library, LIBXSMM's among them.
__attribute__((constructor(101))) void capture_startup_env() {
  for (int i = 0; i < kCount; ++i) {
    const char* v = std::getenv(kNames[i]);
    g_values[i] = v ? strdup(v) : nullptr;
  }
  g_captured = true;
}

}  // namespace

const char* startup_getenv(const char* name) {
  for (int i = 0; i < kCount; ++i)
    if (g_captured && std::strcmp(name, kNames[i]) == 0) return g_values[i];
  return std::getenv(name);
}

}  // namespace graphi::engine
