// JSON on stdout for the subcommands' --json / --json-indent: floats with 4 significant digits.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace graphi::cli {

// `x` (finite) as JSON number text with `digits` significant digits ("0.195", "0.0008854",
// "1.235e+04"), so JSON output holds what the measurement means, not the binary noise of a
// double.
std::string significant_text(double x, int digits = 4);

// The placeholder print_json puts where float number k goes (a JSON string of control
// characters no output of graphi contains), and the dumped text with each placeholder replaced
// by numbers[k].
std::string float_placeholder(size_t k);
std::string replace_float_placeholders(const std::string& dumped,
                                       const std::vector<std::string>& numbers);

// `j` as JSON text: one line, or indented by `indent` spaces (--json-indent N). Non-integer
// floats are written with 4 significant digits. (Rounding the double and letting nlohmann print
// it is not enough: its float output is not always the shortest, 0.0008854 came out as
// 0.0008854000000000001.)
template <class Json>
std::string json_text(Json j, long indent) {
  std::vector<std::string> numbers;
  auto mark_floats = [&numbers](auto& self, Json& v) -> void {
    if (v.is_number_float()) {
      const double d = v.template get<double>();
      if (std::isfinite(d) && d != std::trunc(d)) {
        v = float_placeholder(numbers.size());
        numbers.push_back(significant_text(d));
      }
    } else if (v.is_structured()) {
      for (auto& e : v) self(self, e);
    }
  };
  mark_floats(mark_floats, j);
  return replace_float_placeholders(j.dump(indent > 0 ? static_cast<int>(indent) : -1), numbers);
}

// Prints json_text(j, indent) and a newline on stdout.
template <class Json>
void print_json(Json j, long indent) {
  std::printf("%s\n", json_text(std::move(j), indent).c_str());
}

}  // namespace graphi::cli
