// libFuzzer target: the ONNX reader on arbitrary bytes: protobuf decoding (graph/onnx/
// protobuf_reader, onnx_proto), the importer with its constant folding and validation
// (onnx_import), then the default pass pipeline and Plan compilation of what imported (nothing
// is run: running is fuzz_compile's job). Seeds: tests/data/**/*.onnx (scripts/fuzz.sh).
#include <cstdint>
#include <span>

#include "graph/onnx/onnx_import.h"
#include "ops/registry.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return graphi::fuzz::guarded("onnx", [&] {
    const std::string source = "fuzz.onnx";
    graphi::graph::ImportOptions options;
    options.default_dim = 2;  // every symbolic dim (batch, seq, ...) of the seed models
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    graphi::Result<graphi::graph::Graph> g =
        graphi::graph::import_onnx_bytes(bytes, source, graphi::ops::Registry::get(), options);
    graphi::fuzz::check_error(g.status(), source, "import_onnx_bytes");
    if (!g.is_ok()) return;
    graphi::fuzz::optimize_compile_run(std::make_shared<const graphi::graph::Graph>(std::move(*g)),
                                       source, /*run=*/false);
  });
}
