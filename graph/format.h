// The native .graphi file format: reader and writer. The byte layout and the JSON schema are
// specified in graph/FORMAT.md; this file and that page must agree.
//
// Layout: a 32-byte preamble (magic, format version, header and weight-section lengths), a JSON
// header describing inputs, constants, nodes, outputs, declared value descs and metadata, then
// the little-endian weight section (each constant at a 64-byte aligned offset).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::graph {

// The format version this build writes, and the range it reads.
inline constexpr uint32_t kGraphiFormatVersion = 1;
inline constexpr uint32_t kGraphiMinReadVersion = 1;
inline constexpr uint32_t kGraphiMaxReadVersion = 1;
inline constexpr size_t kGraphiPreambleBytes = 32;
inline constexpr size_t kGraphiWeightAlignment = 64;
// The 8 magic bytes at offset 0: 0x89 "GRAPHI" '\n' (0x89 catches 7-bit transfers and \n
// catches line-ending conversion, as in PNG).
inline constexpr unsigned char kGraphiMagic[8] = {0x89, 'G', 'R', 'A', 'P', 'H', 'I', '\n'};

// Reads and validates a .graphi file. Every structural check of the file (magic, version,
// lengths, JSON field types, weight offsets and sizes) happens before any large allocation; then
// the graph is built with GraphBuilder (source = `path`) and finish(shapes), so graph-level
// errors (cycles, unknown ops, shapes) also name the file.
// Errors: kIoError (cannot open/read), kInvalidGraph (malformed file or graph), kUnsupported
// (unsupported format version, unknown op). Never throws, never aborts on bad input.
// `max_memory` bounds the weights' memory (graph/memory_budget.h; 0: the available memory): a
// file whose constants need more is refused before they are read.
Result<Graph> read_graphi(const std::string& path, const ShapeInferencer& shapes,
                          uint64_t max_memory = 0);

// The same from bytes in memory; `source` names them in errors. `bytes` is not kept.
Result<Graph> read_graphi_bytes(std::span<const std::byte> bytes, const std::string& source,
                                const ShapeInferencer& shapes);

// Serializes `g` (format version kGraphiFormatVersion). Errors: kInvalidArgument when a string
// in the graph (name, attribute, metadata) is not valid UTF-8, which JSON cannot carry.
Result<std::vector<std::byte>> write_graphi_bytes(const Graph& g);

// Writes `g` to `path` through a temporary file renamed into place, so a failed write never
// leaves a half-written model behind. Errors: kIoError, and those of write_graphi_bytes.
Status write_graphi(const Graph& g, const std::string& path);

// True when `bytes` start with the .graphi magic.
bool has_graphi_magic(std::span<const std::byte> bytes);

}  // namespace graphi::graph
