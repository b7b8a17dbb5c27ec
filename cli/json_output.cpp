#include "cli/json_output.h"

#include <cstdio>
#include <string>
#include <vector>

namespace graphi::cli {

std::string significant_text(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

namespace {
constexpr const char* kPlaceholderOpen = "\x01graphi-float-";
// How nlohmann::json::dump writes the placeholder's control character inside a string.
constexpr const char* kDumpedOpen = "\"\\u0001graphi-float-";
}  // namespace

std::string float_placeholder(size_t k) { return kPlaceholderOpen + std::to_string(k); }

std::string replace_float_placeholders(const std::string& dumped,
                                       const std::vector<std::string>& numbers) {
  const std::string open = kDumpedOpen;
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = dumped.find(open, pos)) != std::string::npos;) {
    size_t end = at + open.size();
    size_t k = 0;
    bool digits = false;
    while (end < dumped.size() && dumped[end] >= '0' && dumped[end] <= '9') {
      k = k * 10 + static_cast<size_t>(dumped[end++] - '0');
      digits = true;
    }
    out.append(dumped, pos, at - pos);
    if (digits && end < dumped.size() && dumped[end] == '"' && k < numbers.size()) {
      out += numbers[k];
      pos = end + 1;
    } else {
      out.append(dumped, at, end - at);  // not a placeholder of ours: kept as it was
      pos = end;
    }
  }
  out.append(dumped, pos, std::string::npos);
  return out;
}

}  // namespace graphi::cli
