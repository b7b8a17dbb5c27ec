#include "graph/memory_budget.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

namespace graphi::graph {

namespace {

// The first number of a file ("max" or a missing file: nullopt).
std::optional<uint64_t> read_number(const char* path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])))
    return std::nullopt;
  return std::strtoull(s.c_str(), nullptr, 10);
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t avail = std::numeric_limits<uint64_t>::max();
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib) {
    std::getline(f, unit);
    if (key == "MemAvailable:") {
      avail = kib * 1024;
      break;
    }
  }
  // cgroup v2 (containers): the limit of this process's group, when set, may be far lower.
  const auto max = read_number("/sys/fs/cgroup/memory.max");
  const auto cur = read_number("/sys/fs/cgroup/memory.current");
  if (max && cur) avail = std::min(avail, *max > *cur ? *max - *cur : 0);
  return avail;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double b = static_cast<double>(bytes);
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

Result<uint64_t> parse_memory_size(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return Status::invalid_argument(what + ": '" + text +
                                    "' is not a memory size (examples: 512M, 2G, 1.5GiB, "
                                    "1073741824; units are powers of 1024)");
  };
  size_t k = 0;
  while (k < text.size() && (std::isdigit(static_cast<unsigned char>(text[k])) || text[k] == '.'))
    ++k;
  if (k == 0) return bad();
  char* end = nullptr;
  const std::string num = text.substr(0, k);
  const double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(v) || v < 0) return bad();
  std::string unit;
  for (char c : text.substr(k))
    unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return bad();
  const double bytes = std::floor(v * scale);
  if (bytes < 1 || bytes >= 1.8e19)
    return Status::invalid_argument(what + ": '" + text +
                                    "' must be at least 1 byte and below 16 EiB");
  return static_cast<uint64_t>(bytes);
}

Status check_memory(uint64_t bytes, uint64_t max_memory, const std::string& what) {
  const uint64_t limit = max_memory ? max_memory : available_memory_bytes();
  if (bytes <= limit) return Status::ok();
  const std::string against =
      max_memory ? "the memory limit of " + human_bytes(limit) + " (--max-memory / max_memory)"
                 : "the " + human_bytes(limit) +
                       " this machine has available (MemAvailable; set a limit with --max-memory)";
  return Status(StatusCode::kOutOfMemory, what + " needs " + std::to_string(bytes) + " bytes (" +
                                              human_bytes(bytes) + "), more than " + against);
}

}  // namespace graphi::graph
