// Seed maker for the .graphi fuzz targets (scripts/fuzz.sh --seeds): imports each ONNX model
// given and writes it as a .graphi file (fuzz_graphi's seeds) and its JSON header alone
// (fuzz_compile's seeds), skipping models whose .graphi file exceeds --max-bytes. The repository's
// models thus seed the .graphi targets with every op the importer maps, not only RNNs.
//   graphi_fuzz_make_seeds GRAPHI_DIR COMPILE_DIR [--max-bytes N] MODEL.onnx|MODEL.graphi...
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "graph/format.h"
#include "graph/graph_file.h"
#include "ops/registry.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s GRAPHI_DIR COMPILE_DIR [--max-bytes N] MODEL...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path graphi_dir = argv[1], compile_dir = argv[2];
  std::filesystem::create_directories(graphi_dir);
  std::filesystem::create_directories(compile_dir);
  size_t max_bytes = 64 << 10;
  int written = 0;
  graphi::graph::ImportOptions options;
  options.default_dim = 2;  // every symbolic dim (batch, seq, ...)
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--max-bytes" && i + 1 < argc) {
      max_bytes = std::strtoull(argv[++i], nullptr, 10);
      continue;
    }
    auto g = graphi::graph::read_graph_file(a, graphi::ops::Registry::get(), options);
    if (!g.is_ok()) {  // models the tests expect to be refused
      std::fprintf(stderr, "skipped: %s\n", g.status().message().c_str());
      continue;
    }
    auto bytes = graphi::graph::write_graphi_bytes(*g);
    if (!bytes.is_ok() || bytes->size() > max_bytes) {
      std::fprintf(stderr, "skipped: %s (%s)\n", a.c_str(),
                   bytes.is_ok() ? "too large" : bytes.status().message().c_str());
      continue;
    }
    uint64_t h = 0;
    for (int k = 0; k < 8; ++k) h |= static_cast<uint64_t>((*bytes)[16 + k]) << (8 * k);
    // A name from the model's path, so two models with the same file name stay apart.
    std::string stem = std::filesystem::path(a).parent_path().filename().string() + "_" +
                       std::filesystem::path(a).stem().string();
    std::ofstream(graphi_dir / (stem + ".graphi"), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes->data()),
               static_cast<std::streamsize>(bytes->size()));
    std::ofstream(compile_dir / (stem + ".json"), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes->data()) + graphi::graph::kGraphiPreambleBytes,
               static_cast<std::streamsize>(h));
    ++written;
  }
  std::printf("wrote %d seeds\n", written);
  return 0;
}
