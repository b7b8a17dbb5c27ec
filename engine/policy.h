// Scheduling policies a Session can use (issue 3).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace graphi::engine {

enum class Policy {
  kCriticalPath,  // "cpf": ready ops in a max-heap by level (longest cost-weighted path to a sink)
  kFifo,          // "fifo": same machinery, topological order
  kSharedQueue,   // "shared-queue": TensorFlow/MXNet baseline, executors pop one locked queue
  kSequential,    // "sequential": one executor, topological order (the reference executor)
};

const char* policy_name(Policy p);                       // "cpf", "fifo", ...
std::optional<Policy> parse_policy(std::string_view s);  // accepts the names above
inline constexpr const char* kPolicyNames = "cpf, fifo, shared-queue, sequential";

}  // namespace graphi::engine
