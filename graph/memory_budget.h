// Memory limits for loading and running a model: a model whose weights or planned memory exceed
// the budget is refused before the allocation, with a message that names the file and both
// amounts, instead of ending in std::bad_alloc or the kernel's OOM killer. The budget is an
// explicit limit (`--max-memory`, SessionOptions::max_memory, ImportOptions::max_memory) or,
// without one, the memory the machine has available now. docs/FUZZING.md, "Bounded memory".
#pragma once

#include <cstdint>
#include <string>

#include "graph/base.h"

namespace graphi::graph {

// Bytes the machine can still give this process: MemAvailable of /proc/meminfo, lowered to the
// room left under a cgroup v2 memory.max when there is one. UINT64_MAX when unknown.
uint64_t available_memory_bytes();

// "512 B", "1.5 KiB", "2.0 GiB".
std::string human_bytes(uint64_t bytes);

// Parses a size for --max-memory and friends: "1073741824", "512M", "2G", "1.5GiB", "64k"
// (binary units; B/KiB/KB suffixes accepted). Errors name `what` and the text.
Result<uint64_t> parse_memory_size(const std::string& text, const std::string& what);

// OK when `bytes` (what is about to be allocated, plus what is already held when `max_memory` is
// explicit) fits: under `max_memory` when it is non-zero, else under available_memory_bytes().
// Otherwise kOutOfMemory: "<what> needs <bytes> (<human>), more than <the memory limit of X set
// by --max-memory | the Y this machine has available>". `what` names the file and the part, e.g.
// "model.onnx: the weights".
Status check_memory(uint64_t bytes, uint64_t max_memory, const std::string& what);

}  // namespace graphi::graph
