// A main() for the fuzz targets outside libFuzzer: feeds every file named on the command line
// (directories: every regular file inside, sorted) to LLVMFuzzerTestOneInput once. The normal
// (gcc) build links each target with this driver, so the committed corpus and every past finding
// (tests/fuzz/corpus/<target>, tests/fuzz/regressions/<target>) run as a ctest everywhere; a
// crash, a failed check (abort) or a huge allocation fails it. Huge allocations: the address
// space is capped at what the process has mapped at start plus --max-alloc-mb (default 2048), so
// an allocation libFuzzer's -malloc_limit_mb would flag fails here too (as std::bad_alloc, which
// the targets turn into a finding).
//   graphi_fuzz_onnx_replay [--max-alloc-mb N] FILE_OR_DIR...
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Bytes of address space mapped now (VmSize), or 0 when /proc is unavailable.
size_t mapped_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  size_t max_alloc_mb = 2048;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--max-alloc-mb" && i + 1 < argc) {
      max_alloc_mb = std::strtoull(argv[++i], nullptr, 10);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      std::vector<std::filesystem::path> in;
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) in.push_back(e.path());
      std::sort(in.begin(), in.end());
      files.insert(files.end(), in.begin(), in.end());
    } else if (std::filesystem::is_regular_file(a, ec)) {
      files.emplace_back(a);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", a.c_str());
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [--max-alloc-mb N] FILE_OR_DIR...\n(no input files)\n",
                 argv[0]);
    return 2;
  }
  // Threads (OpenMP, oneDNN) map their stacks lazily: leave them room beyond the allocation cap.
  if (const size_t now = mapped_bytes(); now > 0 && max_alloc_mb > 0) {
    const rlim_t cap = now + (max_alloc_mb << 20) + (size_t{256} << 20);
    rlimit r{cap, cap};
    setrlimit(RLIMIT_AS, &r);
  }
  for (const auto& p : files) {
    std::ifstream f(p, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                  std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay %s (%zu bytes)\n", p.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs without a finding\n", files.size());
  return 0;
}
