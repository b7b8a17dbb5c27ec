// ONNX import: decodes an ONNX ModelProto (graph/onnx/protobuf_reader.h, no libprotobuf) into a
// graphi Graph. ONNX ops map one to one onto graphi ops of the same name; shape bookkeeping of
// PyTorch exports (Shape, Gather, Unsqueeze, Concat of shapes, ConstantOfShape, Cast, ...) is
// evaluated at import time when its inputs are constant, since graphi graphs are static.
// Supported ops, opsets, folding and limits: graph/onnx/ONNX.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::graph {

// Progress of a long load, for a front end to show (graph/ never prints). Stages, in order:
// "parse" (done/total in bytes: 0 at the start, total at the end), "import" (ONNX nodes
// translated so far, reported every 1024 nodes and at the end), "validate" (0/1 before the
// graph's shape and type check, 1/1 after it).
struct LoadProgress {
  const char* stage;
  size_t done = 0, total = 0;
};
using LoadProgressFn = std::function<void(const LoadProgress&)>;

// Graph metadata key: the comma-separated names of the graph inputs and outputs the file
// declares BOOL. graphi carries run-time bools as float32 0/1; front ends (Python) convert.
inline constexpr const char* kBoolValuesKey = "onnx_bool_values";
// Those names, read back from g's metadata (empty when there are none).
std::vector<std::string> bool_values(const Graph& g);
// The same for the graph inputs and outputs the file declares FLOAT16 and BFLOAT16: graphi holds
// and computes them as float32 (graph/onnx/ONNX.md, "Half-precision models"); front ends convert
// a caller's float16 data at the edge.
inline constexpr const char* kFloat16ValuesKey = "onnx_float16_values";
inline constexpr const char* kBfloat16ValuesKey = "onnx_bfloat16_values";
std::vector<std::string> float16_values(const Graph& g);
std::vector<std::string> bfloat16_values(const Graph& g);

struct ImportOptions {
  // Values of symbolic dims (dim_param, e.g. "batch" from torch.onnx.export's dynamic_axes);
  // the CLI fills it from --dim NAME=VALUE. A symbolic dim without an entry is an error.
  std::map<std::string, int64_t> dims;
  // Shapes of the graph inputs as the caller will feed them (the CLI's --input .npy files): a
  // symbolic dim that `dims` does not give takes its value from an input of the same rank here
  // (inputs that disagree on a dim are an error naming both).
  std::map<std::string, Shape> input_shapes;
  // The value of a symbolic dim that `dims` does not name (0: such a dim is an error). For tools
  // that load arbitrary models without knowing their dims (the fuzz targets, seed making).
  int64_t default_dim = 0;
  // When >= 1: the batch the graph is imported for, whatever its inputs declare: every graph
  // input's dim 0 (fixed or symbolic) takes this value and declared output shapes are not
  // checked. For running a batch in slices (graph/batch_split.h compares the result with the
  // graph imported as declared and refuses graphs whose samples do not stay apart).
  int64_t batch = 0;
  // Graph inputs bound to fixed values: they become constants, so shape computations that
  // depend on them fold away (e.g. a Reshape whose shape is a graph input). The tensor's dtype
  // must match the input's element type; its shape replaces the declared one.
  std::map<std::string, Tensor> constant_inputs;
  // Graph inputs that are also initializers (torch.onnx.export(keep_initializers_as_inputs=True),
  // IR < 4 files): ONNX lets the caller override them, the initializer being the default. By
  // default graphi imports them as constants (folded, weights prepacked: the caller cannot feed
  // them); the ones named here become run-time graph inputs of the initializer's dtype and
  // shape. Names of ordinary graph inputs are ignored (the CLI names every --input file); an
  // initializer that is not a graph input is an error (ONNX makes it a constant). A
  // constant_inputs entry for such an input replaces the initializer at import instead.
  std::set<std::string> override_initializers;
  // When set, receives the initializer of each input made by override_initializers: the value
  // a front end feeds when the caller gives none (graphi::Session::run does).
  std::map<std::string, Tensor>* initializer_defaults = nullptr;
  // Called as the load advances (may be empty); .graphi loads report "parse" and "validate".
  LoadProgressFn progress;
  // Memory budget of the load in bytes (graph/memory_budget.h): the model file, external data
  // and a .graphi file's weights above it are refused before they are read. 0: what the machine
  // has available.
  uint64_t max_memory = 0;
};

// Reads and imports an .onnx file, validating the result with `shapes` (usually
// ops::Registry::get()). Errors name the file and the node or protobuf field path.
Result<Graph> import_onnx_file(const std::string& path, const ShapeInferencer& shapes,
                               const ImportOptions& options = {});

// The same for bytes in memory; `source` names them in errors (usually the path).
Result<Graph> import_onnx_bytes(std::span<const std::byte> bytes, const std::string& source,
                                const ShapeInferencer& shapes, const ImportOptions& options = {});

// Reads a serialized TensorProto (the input_*.pb / output_*.pb files of ONNX's test data) as a
// graphi Tensor: FLOAT, FLOAT16 and BFLOAT16 -> float32, INT32 -> int32, INT64 -> int64, BOOL ->
// float32 0/1 (graphi's bool, as a BOOL graph input is fed), anything else an error.
// `name` (optional) receives the tensor's name.
Result<Tensor> read_onnx_tensor_file(const std::string& path, std::string* name = nullptr);

// A graph input or output as an .onnx file declares it, before any symbolic dim is bound.
struct DeclaredValue {
  std::string name;
  // A BOOL, FLOAT16 or BFLOAT16 value is float32 here (the flag says which), as graphi carries it.
  DType dtype = DType::kF32;
  bool is_bool = false;
  bool is_float16 = false;
  bool is_bfloat16 = false;
  bool has_shape = false;  // false: the file gives no shape (an output, usually)
  // -1 where the dim has no size: symbolic (dim_names[i] is its name) or unnamed (""). An
  // output's dim_names may be names the exporter invented ("Addoutput_dim_0").
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
};
struct DeclaredSignature {
  std::vector<DeclaredValue> inputs, outputs;
  // Some input dim has no size: the model must be compiled per input shape.
  bool dynamic() const;
};

// The inputs and outputs an .onnx file declares (an input that is also an initializer counts
// only when `override_initializers` names it, as the importer does); nodes and weights are not
// read. Errors name the file and the value: not a model, an input of an element type graphi
// does not run.
Result<DeclaredSignature> read_onnx_signature(
    const std::string& path, const std::set<std::string>& override_initializers = {});

// True if `head` (the first bytes of a file) plausibly starts an ONNX ModelProto: field 1
// (ir_version, varint) or another ModelProto field with the right wire type first.
bool looks_like_onnx_model(std::span<const std::byte> head);

}  // namespace graphi::graph
