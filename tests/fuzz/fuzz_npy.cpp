// libFuzzer target: the .npy reader (graph/npy.h, parse_npy) on arbitrary bytes. A parsed tensor
// must also survive a write/read round trip unchanged (serialize_npy, then parse_npy again).
#include <cstdint>
#include <cstring>
#include <string_view>

#include "graph/npy.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return graphi::fuzz::guarded("npy", [&] {
    const std::string source = "fuzz.npy";
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    graphi::Result<graphi::Tensor> t = graphi::graph::parse_npy(bytes, source);
    graphi::fuzz::check_error(t.status(), source, "parse_npy");
    if (!t.is_ok()) return;
    const std::string again = graphi::graph::serialize_npy(*t);
    graphi::Result<graphi::Tensor> u = graphi::graph::parse_npy(again, "roundtrip.npy");
    if (!u.is_ok())
      graphi::fuzz::finding("re-reading serialize_npy's output: " + u.status().message());
    if (u->desc() != t->desc() ||
        (t->bytes() > 0 && std::memcmp(u->data(), t->data(), t->bytes()) != 0))
      graphi::fuzz::finding("npy round trip changed the tensor");
  });
}
