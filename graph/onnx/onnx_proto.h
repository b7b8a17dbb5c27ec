// ONNX messages decoded from the protobuf wire format (graph/onnx/protobuf_reader.h) into plain
// structs: ModelProto, GraphProto, NodeProto, AttributeProto, ValueInfoProto, TensorProto.
// Only what graphi's importer needs is kept; unknown fields are skipped, as protobuf requires.
// Field numbers follow onnx/onnx.proto (IR version 3..9).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/base.h"
#include "graph/tensor.h"

namespace graphi::graph::onnx {

// TensorProto.DataType.
enum DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
};
std::string data_type_name(int32_t t);  // "FLOAT", "INT64", ... or "type 42"
bool is_float_type(int32_t t);          // FLOAT, DOUBLE, FLOAT16, BFLOAT16

// A tensor whose values are known at import time (initializer, Constant, or folded). Floating
// types keep their values in `f` (FLOAT values rounded to float32), all others (integers, BOOL)
// in `i`; exactly one of them has numel() entries.
struct HostTensor {
  int32_t type = kFloat;
  Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool is_float() const { return is_float_type(type); }
  size_t numel() const { return is_float() ? f.size() : i.size(); }
  double get_f(size_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
  int64_t get_i(size_t k) const { return is_float() ? static_cast<int64_t>(f[k]) : i[k]; }
  void set(size_t k, int64_t v) {  // a small integer (0, 1) in either storage
    if (is_float())
      f[k] = static_cast<double>(v);
    else
      i[k] = v;
  }
  std::string desc() const;                           // "INT64[2, 3]"
  static HostTensor make(int32_t type, Shape shape);  // zero-filled
};

enum AttrType : int32_t {
  kAttrUndefined = 0,
  kAttrFloat = 1,
  kAttrInt = 2,
  kAttrString = 3,
  kAttrTensor = 4,
  kAttrGraph = 5,
  kAttrFloats = 6,
  kAttrInts = 7,
  kAttrStrings = 8,
  kAttrTensors = 9,
  kAttrGraphs = 10,
  kAttrSparseTensor = 11,
  kAttrSparseTensors = 12,
  kAttrTypeProto = 13,
  kAttrTypeProtos = 14,
};
std::string attr_type_name(int32_t t);  // "INT", "TENSOR", ...

struct GraphProto;

struct Attr {
  std::string name;
  int32_t type = kAttrUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<HostTensor> t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const GraphProto> g;  // a GRAPH attribute (If's branches)
};

struct Node {
  size_t index = 0;  // position in graph.node
  std::string name, op, domain;
  std::vector<std::string> inputs, outputs;  // "" = absent optional
  std::vector<Attr> attrs;
  const Attr* attr(const std::string& n) const;
};

struct Dim {
  bool has_value = false;
  int64_t value = 0;
  std::string param;  // symbolic name, if any
};

struct ValueInfo {
  std::string name;
  bool is_tensor = false;  // TypeProto.tensor_type present
  int32_t elem_type = kUndefined;
  bool has_shape = false;
  std::vector<Dim> dims;
};

struct GraphProto {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs, outputs, value_info;
  std::vector<std::pair<std::string, std::shared_ptr<HostTensor>>> initializers;
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  std::string producer_name, producer_version, domain, doc;
  int64_t model_version = 0;
  std::map<std::string, std::string> metadata;
  bool has_graph = false;
  GraphProto graph;
};

class ExternalDataReader;  // graph/onnx/onnx_external_data.h

struct DecodeOptions {
  // Reads tensors stored in side files (data_location = EXTERNAL). nullptr: such tensors are an
  // error (bytes without a directory to look in).
  ExternalDataReader* external = nullptr;
  int depth = 0;  // subgraphs (GRAPH attributes) being read: at most kMaxGraphDepth
  // The graph's inputs, outputs and initializer names only (nodes and tensor bytes skipped):
  // what a front end needs to show a model's signature without loading its weights.
  bool signature_only = false;
};
inline constexpr int kMaxGraphDepth = 16;

// Decodes a ModelProto. Errors name the field path ("graph.node[12].attribute[0]: ...") and
// are not prefixed with a file name (the caller adds it).
Result<Model> decode_model(std::span<const std::byte> bytes, const DecodeOptions& options = {});

// Decodes a TensorProto on its own (the input_*.pb / output_*.pb files of ONNX test cases).
// `name` receives the tensor's name.
Result<HostTensor> decode_tensor(std::span<const std::byte> bytes, std::string* name);

}  // namespace graphi::graph::onnx
