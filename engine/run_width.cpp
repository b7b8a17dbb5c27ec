#include "engine/run_width.h"

#include <cstdlib>
#include <cstring>

namespace graphi::engine {

namespace {
std::atomic<int> g_in_flight{0};  // threads of the sequential runs in flight, process-wide
}  // namespace

TeamSharing team_sharing_from_env() {
  const char* v = std::getenv("GRAPHI_SHARED_TEAMS");
  if (v && std::strcmp(v, "1") == 0) return TeamSharing::kLeader;
  if (v && std::strcmp(v, "0") == 0) return TeamSharing::kOwn;
  return TeamSharing::kAuto;
}

RunWidth::RunWidth(int threads, int cpus, bool narrow) : threads_(threads) {
  const int before = g_in_flight.fetch_add(threads, std::memory_order_acq_rel);
  if (narrow && threads > 1 && before > 0 && before + threads > cpus) {
    g_in_flight.fetch_sub(threads - 1, std::memory_order_acq_rel);
    threads_ = 1;
  }
}

RunWidth::~RunWidth() { g_in_flight.fetch_sub(threads_, std::memory_order_acq_rel); }

int RunWidth::in_flight() { return g_in_flight.load(std::memory_order_acquire); }

}  // namespace graphi::engine
