// ONNX external data: tensors whose bytes live in side files next to the model
// (TensorProto.data_location = EXTERNAL, external_data = {location, offset, length}), as
// onnx.save_model(..., save_as_external_data=True) and torch.onnx.export of models over 2 GB
// write them. Side files are untrusted input like the model: every location must stay inside
// the model's directory (a relative path without "..", no absolute path, no symlink that leads
// out), offset and length must lie inside the file and match the tensor's size, and the total
// read is bounded by the memory budget (graph/memory_budget.h). graph/onnx/ONNX.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/base.h"

namespace graphi::graph::onnx {

// TensorProto.external_data as written in the file (offset and length are decimal strings).
struct ExternalDataRef {
  std::string location;
  std::string offset, length;  // "" = absent (offset 0; length = the rest of the file)
  bool has_offset = false, has_length = false;
};

// Reads the external data of one model. Errors name the tensor (`what`, e.g.
// "graph.initializer[2] 'W'"), the field (location, offset, length) and the side file; the
// importer prefixes the model's path.
class ExternalDataReader {
 public:
  // `model_dir`: the directory of the model file ("" = the current directory). `max_memory`:
  // bytes all external tensors of the model may take together (0: the available memory).
  ExternalDataReader(const std::string& model_dir, uint64_t max_memory);

  // The `expected` bytes of tensor `what` (its dims times its element size).
  Result<std::vector<std::byte>> read(const ExternalDataRef& ref, const std::string& what,
                                      uint64_t expected);

  uint64_t bytes_read() const { return total_; }

 private:
  Result<std::filesystem::path> resolve(const ExternalDataRef& ref, const std::string& what) const;
  std::filesystem::path dir_;  // canonical, or empty when the model's directory cannot be found
  std::string dir_error_;
  uint64_t max_memory_ = 0;
  uint64_t total_ = 0;
};

}  // namespace graphi::graph::onnx
