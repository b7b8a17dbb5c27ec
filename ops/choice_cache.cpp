#include "ops/choice_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace graphi::ops {
namespace {

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

// The file's JSON, or nullopt if missing; a corrupt file sets *corrupt.
std::optional<nlohmann::json> read_cache(const std::string& path, std::string* corrupt) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *corrupt = "cannot open";
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("entries") || !j["entries"].is_object()) {
    *corrupt = "not a graphi cache (bad JSON or no \"entries\" object)";
    return std::nullopt;
  }
  return j;
}

}  // namespace

std::string machine_signature() {
  static const std::string sig = [] {
    std::string model = "unknown cpu", family, modelno;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      auto value = [&] {
        const size_t c = line.find(':');
        std::string v = c == std::string::npos ? "" : line.substr(c + 1);
        const size_t b = v.find_first_not_of(" \t");
        return b == std::string::npos ? std::string() : v.substr(b);
      };
      if (line.rfind("model name", 0) == 0 && model == "unknown cpu") model = value();
      if (line.rfind("cpu family", 0) == 0 && family.empty()) family = value();
      if (line.rfind("model\t", 0) == 0 && modelno.empty()) modelno = value();
    }
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return model + "|fam " + family + " model " + modelno + "|" +
           std::to_string(std::thread::hardware_concurrency()) + " cpus|L2 " + std::to_string(l2);
  }();
  return sig;
}

std::string choice_cache_path(const std::string& file_name) {
  namespace fs = std::filesystem;
  if (const char* d = std::getenv("GRAPHI_CACHE_DIR"); d && *d)
    return (fs::path(d) / file_name).string();
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (fs::path(d) / "graphi" / file_name).string();
  if (const char* d = std::getenv("HOME"); d && *d)
    return (fs::path(d) / ".cache" / "graphi" / file_name).string();
  return "";
}

void warn_choice_cache(const std::string& path, const char* what, const std::string& msg) {
  static std::mutex m;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(m);
  if (!warned.insert(path).second) return;
  std::fprintf(stderr, "graphi: warning: %s cache %s: %s (ignored; recomputing)\n", what,
               path.c_str(), msg.c_str());
}

std::optional<nlohmann::json> load_choice(const std::string& path, const std::string& key,
                                          const char* what) {
  if (path.empty()) return std::nullopt;
  std::lock_guard<std::mutex> lock(cache_mutex());
  std::string corrupt;
  auto j = read_cache(path, &corrupt);
  if (!corrupt.empty()) warn_choice_cache(path, what, corrupt);
  if (!j) return std::nullopt;
  const auto& entries = (*j)["entries"];
  auto it = entries.find(key);
  if (it == entries.end()) return std::nullopt;
  return *it;
}

Status store_choice(const std::string& path, const std::string& key, nlohmann::json entry) {
  if (path.empty()) return Status::invalid_argument("no cache path");
  std::lock_guard<std::mutex> lock(cache_mutex());
  std::string corrupt;
  nlohmann::json j = read_cache(path, &corrupt).value_or(nlohmann::json());
  if (!j.is_object()) j = nlohmann::json::object();
  j["version"] = 1;
  if (!j.contains("entries") || !j["entries"].is_object()) j["entries"] = nlohmann::json::object();
  j["entries"][key] = std::move(entry);
  return write_json_file(path, j, 2);
}

Status write_json_file(const std::string& path, const nlohmann::json& j, int indent) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec)
    return Status::io_error("cannot create " + p.parent_path().string() + ": " + ec.message());
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::io_error("cannot write " + tmp);
    out << j.dump(indent) << "\n";
    if (!out.good()) {
      out.close();
      fs::remove(tmp, ec);
      return Status::io_error("write failed: " + tmp);
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::io_error("cannot rename " + tmp + " to " + path);
  }
  return Status::ok();
}

}  // namespace graphi::ops
