// Small helpers shared by the benchmark binaries: sample statistics, a text table, CSV output,
// a monotonic stopwatch.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace graphi::bench {

inline double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Quantile q in [0, 1] of the samples (linear interpolation between order statistics).
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
inline double median(const std::vector<double>& v) { return quantile(v, 0.5); }

// A text table: rows of cells, columns padded to their widest cell (first column left-aligned,
// the others right-aligned).
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::FILE* f = stdout) const {
    std::vector<size_t> w;
    for (const auto& r : rows_)
      for (size_t c = 0; c < r.size(); ++c) {
        if (w.size() <= c) w.push_back(0);
        w[c] = std::max(w[c], r[c].size());
      }
    for (size_t i = 0; i < rows_.size(); ++i) {
      const auto& r = rows_[i];
      std::string line;
      for (size_t c = 0; c < r.size(); ++c) {
        const std::string pad(w[c] - r[c].size(), ' ');
        line += c == 0 ? r[c] + pad : "  " + pad + r[c];
      }
      std::fprintf(f, "%s\n", line.c_str());
      if (i == 0) {
        size_t total = 0;
        for (size_t c = 0; c < w.size(); ++c) total += w[c] + (c ? 2 : 0);
        std::fprintf(f, "%s\n", std::string(total, '-').c_str());
      }
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

// "1.52 1.30 0.90" from /proc/loadavg: other load on the machine distorts every benchmark.
inline std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return f ? a + " " + b + " " + c : "unknown";
}

inline std::string fmt(double v, int decimals = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// CSV with a fixed header; cells are written as given (no commas in our values).
class Csv {
 public:
  bool open(const std::string& path, const std::vector<std::string>& header) {
    out_.open(path);
    if (!out_) return false;
    row(header);
    return true;
  }
  void row(const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out_ << (i ? "," : "") << cells[i];
    out_ << '\n';
    out_.flush();
  }

 private:
  std::ofstream out_;
};

}  // namespace graphi::bench
