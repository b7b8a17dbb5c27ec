// libFuzzer target: graph validation, the pass pipeline, Plan compilation and (for tiny plans)
// a run on the sequential reference executor. The input is the JSON header of a .graphi file as
// text (graph/FORMAT.md section 2): mutating JSON text reaches op types, attributes, shapes and
// wiring far more often than mutating a whole binary file, whose preamble and weight layout the
// mutator would mostly break. The target wraps the text into a valid container: the preamble,
// and a weight section as long as the constants' largest offset + byte_length (at most 1 MiB),
// filled with deterministic small values. Seeds: the headers of the fuzz_graphi seeds; the
// dictionary tests/fuzz/compile.dict holds op names and schema keys.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "graph/format.h"
#include "ops/registry.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_pipeline.h"

namespace {

constexpr uint64_t kMaxWeightBytes = uint64_t{1} << 20;

void put_u64(std::vector<std::byte>& b, size_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) b[at + k] = static_cast<std::byte>((v >> (8 * k)) & 0xff);
}

// The weight section the header's constants describe, or 0 bytes when they describe none (or
// something unreadable: the reader then reports the mismatch itself).
uint64_t weight_bytes(const nlohmann::json& header) {
  if (!header.is_object() || !header.contains("constants") || !header["constants"].is_array())
    return 0;
  uint64_t end = 0;
  for (const auto& c : header["constants"]) {
    if (!c.is_object() || !c.contains("offset") || !c.contains("byte_length")) continue;
    const auto& o = c["offset"];
    const auto& n = c["byte_length"];
    if (!o.is_number_unsigned() || !n.is_number_unsigned()) continue;
    const uint64_t a = o.get<uint64_t>(), l = n.get<uint64_t>();
    if (a > kMaxWeightBytes || l > kMaxWeightBytes) continue;
    end = std::max(end, a + l);
  }
  return end <= kMaxWeightBytes ? end : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return graphi::fuzz::guarded("compile", [&] {
    const std::string source = "fuzz.graphi";
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    const uint64_t weights = header.is_discarded() ? 0 : weight_bytes(header);
    const size_t w = (graphi::graph::kGraphiPreambleBytes + size + 63) / 64 * 64;
    std::vector<std::byte> file(w + weights, std::byte{0});
    std::memcpy(file.data(), graphi::graph::kGraphiMagic, 8);
    file[8] = std::byte{1};  // format version 1, flags 0
    put_u64(file, 16, size);
    put_u64(file, 24, weights);
    if (size > 0) std::memcpy(file.data() + graphi::graph::kGraphiPreambleBytes, data, size);
    // Small floats where a 4-byte word is read as float32; 0..2 where it is read as an integer
    // (0x3e800000 = 0.25f would be a huge int, so integer-looking words stay small).
    for (uint64_t k = 0; k + 4 <= weights; k += 4) {
      const uint32_t v = (k / 4) % 5 == 4 ? 0x3e800000u : static_cast<uint32_t>((k / 4) % 3);
      for (int b = 0; b < 4; ++b) file[w + k + b] = static_cast<std::byte>((v >> (8 * b)) & 0xff);
    }
    graphi::Result<graphi::graph::Graph> g =
        graphi::graph::read_graphi_bytes(file, source, graphi::ops::Registry::get());
    graphi::fuzz::check_error(g.status(), source, "read_graphi_bytes");
    if (!g.is_ok()) return;
    graphi::fuzz::optimize_compile_run(std::make_shared<const graphi::graph::Graph>(std::move(*g)),
                                       source, /*run=*/true);
  });
}
