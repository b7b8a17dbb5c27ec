#include "engine/policy.h"

namespace graphi::engine {

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kCriticalPath:
      return "cpf";
    case Policy::kFifo:
      return "fifo";
    case Policy::kSharedQueue:
      return "shared-queue";
    case Policy::kSequential:
      return "sequential";
  }
  return "?";
}

std::optional<Policy> parse_policy(std::string_view s) {
  if (s == "cpf" || s == "critical-path") return Policy::kCriticalPath;
  if (s == "fifo") return Policy::kFifo;
  if (s == "shared-queue") return Policy::kSharedQueue;
  if (s == "sequential") return Policy::kSequential;
  return std::nullopt;
}

}  // namespace graphi::engine
