// libFuzzer target: the .graphi reader (graph/format.h, read_graphi_bytes) on arbitrary bytes:
// preamble, JSON header, weight section, graph validation. A graph that reads must also write
// and read back (write_graphi_bytes then read_graphi_bytes) with the same nodes and values.
// Seeds: .graphi files converted from tests/data models and written by `graphi model`.
#include <cstdint>
#include <span>

#include "graph/format.h"
#include "ops/registry.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return graphi::fuzz::guarded("graphi", [&] {
    const std::string source = "fuzz.graphi";
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    const auto& shapes = graphi::ops::Registry::get();
    graphi::Result<graphi::graph::Graph> g =
        graphi::graph::read_graphi_bytes(bytes, source, shapes);
    graphi::fuzz::check_error(g.status(), source, "read_graphi_bytes");
    if (!g.is_ok()) return;
    auto written = graphi::graph::write_graphi_bytes(*g);
    if (!written.is_ok()) {
      // Only strings JSON cannot carry (invalid UTF-8) may stop the writer.
      if (written.status().message().find("UTF-8") == std::string::npos)
        graphi::fuzz::finding("write_graphi_bytes: " + written.status().message());
      return;
    }
    auto again = graphi::graph::read_graphi_bytes(*written, "roundtrip.graphi", shapes);
    if (!again.is_ok())
      graphi::fuzz::finding("re-reading write_graphi_bytes' output: " + again.status().message());
    if (again->num_nodes() != g->num_nodes() || again->num_values() != g->num_values())
      graphi::fuzz::finding(".graphi round trip changed the graph's size");
  });
}
