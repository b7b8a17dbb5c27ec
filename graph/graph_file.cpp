#include "graph/graph_file.h"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "graph/format.h"

namespace graphi::graph {

namespace {

// A .graphi file: one "parse" stage (reading and checking the file, the weights included) and
// one "validate" stage are all there is to report.
Result<Graph> read_graphi_reporting(const std::string& path, const ShapeInferencer& shapes,
                                    const LoadProgressFn& progress, uint64_t max_memory) {
  if (progress) progress(LoadProgress{"parse", 0, 1});
  Result<Graph> g = read_graphi(path, shapes, max_memory);
  if (progress) progress(LoadProgress{"parse", 1, 1});
  return g;
}

}  // namespace

Result<Graph> read_graph_file(const std::string& path, const ShapeInferencer& shapes,
                              const ImportOptions& onnx) {
  std::string ext;
  try {
    ext = std::filesystem::path(path).extension().string();
  } catch (const std::exception&) {
  }
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".graphi") return read_graphi_reporting(path, shapes, onnx.progress, onnx.max_memory);
  if (ext == ".onnx") return import_onnx_file(path, shapes, onnx);
  // Unknown extension: trust the content, so "model.bin" written by write_graphi still loads.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return read_graphi(path, shapes, onnx.max_memory);  // precise open error
  std::ifstream f(path, std::ios::binary);
  char head[8] = {};
  f.read(head, sizeof head);
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(head),
                                         static_cast<size_t>(f.gcount()));
  if (bytes.size() == sizeof head && has_graphi_magic(bytes))
    return read_graphi_reporting(path, shapes, onnx.progress, onnx.max_memory);
  if (looks_like_onnx_model(bytes)) return import_onnx_file(path, shapes, onnx);
  return Status::invalid_argument(
      path + ": unknown model file type (" +
      (ext.empty() ? std::string("no extension") : "extension '" + ext + "'") +
      ", and the content is neither a .graphi file nor an ONNX model); graphi reads .graphi and "
      ".onnx files");
}

}  // namespace graphi::graph
