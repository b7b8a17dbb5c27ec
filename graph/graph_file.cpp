#include "graph/graph_file.h"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "graph/format.h"

namespace graphi::graph {

Result<Graph> read_graph_file(const std::string& path, const ShapeInferencer& shapes) {
  std::string ext;
  try {
    ext = std::filesystem::path(path).extension().string();
  } catch (const std::exception&) {
  }
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".graphi") return read_graphi(path, shapes);
  if (ext == ".onnx")
    return Status::unsupported(path + ": ONNX import is not available yet in this build of graphi; "
                               "convert the model to .graphi (see graph/FORMAT.md)");
  // Unknown extension: trust the content, so "model.bin" written by write_graphi still loads.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return read_graphi(path, shapes);  // precise open error
  std::ifstream f(path, std::ios::binary);
  char head[8] = {};
  f.read(head, sizeof head);
  if (f.gcount() == sizeof head &&
      has_graphi_magic(std::span<const std::byte>(reinterpret_cast<const std::byte*>(head), sizeof head)))
    return read_graphi(path, shapes);
  return Status::invalid_argument(
      path + ": unknown model file type (" + (ext.empty() ? std::string("no extension") : "extension '" + ext + "'") +
      ", and the content is not a .graphi file); graphi reads .graphi files, and .onnx once ONNX import exists");
}

}  // namespace graphi::graph
