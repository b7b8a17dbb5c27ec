// Helpers shared by the tests: seeded random tensors, closeness checks, scratch directories.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/tensor.h"

namespace graphi::test {

// Uniform values in [lo, hi) for f32; integers in [lo, hi) for i32/i64. Same seed, same tensor.
// A 1-D int64 tensor holding v (an op's constant axes, pads, shapes).
inline Tensor i64_tensor(const std::vector<int64_t>& v) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

Tensor random_tensor(const TensorDesc& desc, uint64_t seed, double lo = -1.0, double hi = 1.0);

// Largest |a - b| / max(1, |b|) over all elements (a mixed absolute/relative error); infinity when
// the descs differ or exactly one side is NaN.
double max_rel_error(const Tensor& a, const Tensor& b);

// A fresh, empty directory under the build tree (test_scratch/NAME), named after the test; emptied
// when the next run asks for it, left in place afterwards so failures can be inspected.
std::filesystem::path scratch_dir(const std::string& name);

// An environment variable set for one scope, then put back (or unset, if it was not set).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// The graphi executable (set by CMake through the GRAPHI_CLI environment variable).
std::string cli_path();

// `s` as one single-quoted shell word.
std::string shell_quoted(const std::string& s);

// Runs `graphi ARGS...` through the shell with stdout and stderr captured in files of `dir`;
// `env` (e.g. "env -u OMP_PROC_BIND") is put in front of the command.
struct CliRun {
  int rc = -1;  // the exit code; -1 when graphi did not exit normally
  std::string out, err;
};
CliRun run_graphi(const std::filesystem::path& dir, const std::vector<std::string>& args,
                  const std::string& env = "");

// The NAME<TAB>TEXT lines of a fixture list (the gaps/EXPECTED files the model generators write),
// in file order; other lines are skipped, a missing file gives none.
std::vector<std::pair<std::string, std::string>> read_name_tab_text(const std::string& path);

// One line of a model fixture MANIFEST (make_zoo.py, make_variants.py): the model's name and
// the --dim values it is loaded with ("NAME [dim=value ...]"; blank and '#' lines skipped).
struct ManifestEntry {
  std::string name;
  std::map<std::string, int64_t> dims;
};
std::vector<ManifestEntry> read_manifest(const std::string& path);

// Element k of an f32/i32/i64 tensor as a double.
double element_at(const Tensor& t, int64_t k);

// Empty when `got` matches the reference `want`, else what differs: float32 within
// 1e-5 + 1e-4 * max|finite want| (non-finite values must be equal, NaN matching NaN), integer
// dtypes exactly.
std::string compare_to_reference(const Tensor& got, const Tensor& want);

}  // namespace graphi::test
