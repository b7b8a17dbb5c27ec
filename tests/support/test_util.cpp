#include "tests/support/test_util.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

namespace graphi::test {
namespace {

// Test processes (and the graphi CLI they start, which inherits the environment) keep the RNN
// schedule search's cache in the build tree instead of the user's ~/.cache.
const bool kCacheDirSet = [] {
  setenv("GRAPHI_CACHE_DIR", (std::string(GRAPHI_BINARY_DIR) + "/test_cache").c_str(),
         /*overwrite=*/0);
  return true;
}();

}  // namespace

Tensor random_tensor(const TensorDesc& desc, uint64_t seed, double lo, double hi) {
  Tensor t(desc);
  std::mt19937_64 rng(seed);
  const int64_t n = t.numel();
  if (desc.dtype == DType::kF32) {
    std::uniform_real_distribution<float> u(static_cast<float>(lo), static_cast<float>(hi));
    float* p = t.data_as<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = u(rng);
  } else {
    std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(lo),
                                             static_cast<int64_t>(hi) - 1);
    for (int64_t i = 0; i < n; ++i) {
      if (desc.dtype == DType::kI32)
        t.data_as<int32_t>()[i] = static_cast<int32_t>(u(rng));
      else
        t.data_as<int64_t>()[i] = u(rng);
    }
  }
  return t;
}

static double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
      return t.data_as<float>()[i];
    case DType::kI32:
      return t.data_as<int32_t>()[i];
    case DType::kI64:
      return static_cast<double>(t.data_as<int64_t>()[i]);
  }
  return 0;
}

double max_rel_error(const Tensor& a, const Tensor& b) {
  if (!(a.desc() == b.desc())) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = element(a, i), y = element(b, i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isnan(x) != std::isnan(y)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
  }
  return worst;
}

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
  const char* old = std::getenv(name);
  had_ = old != nullptr;
  if (had_) old_ = old;
  setenv(name, value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    setenv(name_, old_.c_str(), 1);
  else
    unsetenv(name_);
}

std::filesystem::path scratch_dir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(GRAPHI_BINARY_DIR) / "test_scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string cli_path() {
  const char* p = std::getenv("GRAPHI_CLI");
  return p ? p : std::string(GRAPHI_BINARY_DIR) + "/graphi";
}

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

CliRun run_graphi(const std::filesystem::path& dir, const std::vector<std::string>& args,
                  const std::string& env) {
  std::string cmd = env + (env.empty() ? "" : " ") + shell_quoted(cli_path());
  for (const std::string& a : args) cmd += " " + shell_quoted(a);
  const std::filesystem::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  cmd += " >" + shell_quoted(out.string()) + " 2>" + shell_quoted(err.string());
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = file_text(out);
  r.err = file_text(err);
  return r;
}

std::vector<std::pair<std::string, std::string>> read_name_tab_text(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return out;
}

std::vector<ManifestEntry> read_manifest(const std::string& path) {
  std::vector<ManifestEntry> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    ManifestEntry m;
    if (!(ss >> m.name) || m.name[0] == '#') continue;
    std::string d;
    while (ss >> d) {
      const size_t eq = d.find('=');
      if (eq != std::string::npos) m.dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
    }
    out.push_back(std::move(m));
  }
  return out;
}

double element_at(const Tensor& t, int64_t k) {
  switch (t.dtype()) {
    case DType::kF32:
      return t.data_as<float>()[k];
    case DType::kI32:
      return t.data_as<int32_t>()[k];
    default:
      return static_cast<double>(t.data_as<int64_t>()[k]);
  }
}

std::string compare_to_reference(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape())
    return "shape " + shape_to_string(got.shape()) + " vs " + shape_to_string(want.shape());
  const int64_t n = want.numel();
  const bool exact = want.dtype() != DType::kF32;
  double scale = 0;
  for (int64_t k = 0; k < n; ++k)
    if (std::isfinite(element_at(want, k))) scale = std::max(scale, std::fabs(element_at(want, k)));
  const double tol = exact ? 0.0 : 1e-5 + 1e-4 * scale;
  for (int64_t k = 0; k < n; ++k) {
    const double g = element_at(got, k), w = element_at(want, k);
    const bool same =
        std::isfinite(w) ? std::fabs(g - w) <= tol : (g == w || (std::isnan(g) && std::isnan(w)));
    if (!same) {
      std::ostringstream m;
      m << "element " << k << ": " << g << " vs " << w << " (tolerance " << tol << ")";
      return m.str();
    }
  }
  return "";
}

}  // namespace graphi::test
