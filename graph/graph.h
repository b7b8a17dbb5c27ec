// The IR: values (graph inputs, constants, intermediates), nodes with typed attributes, and the
// immutable, validated Graph that GraphBuilder::finish() produces. Ids are dense uint32 indices.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/attributes.h"
#include "graph/tensor.h"

namespace graphi::graph {

using ValueId = uint32_t;
using NodeId = uint32_t;
inline constexpr uint32_t kNoId = UINT32_MAX;  // an absent optional input, or "no producer"

enum class ValueKind : uint8_t {
  kInput,         // fed by the caller at run time
  kConstant,      // weights: data lives in the Graph, read-only
  kIntermediate,  // produced by a node
};

struct Value {
  std::string name;
  TensorDesc desc;
  ValueKind kind = ValueKind::kIntermediate;
  NodeId producer = kNoId;             // kNoId for inputs and constants
  bool is_output = false;              // a graph output (may also be consumed inside)
  std::shared_ptr<const Tensor> data;  // constants only; shared so passes do not copy weights
};

struct Node {
  std::string op;    // op type, e.g. "MatMul" (ONNX spelling where ONNX has the op)
  std::string name;  // unique; used in every error and trace
  Attributes attrs;
  std::vector<ValueId> inputs;  // kNoId marks an absent optional input
  std::vector<ValueId> outputs;

  // "node 'name' (Op)": the prefix of every error about this node.
  std::string where() const { return "node '" + name + "' (" + op + ")"; }
};

// Immutable once built. Nodes are stored in a topological order (NodeId = position), so every
// consumer has a larger id than the producers of its inputs.
class Graph {
 public:
  std::span<const Node> nodes() const { return nodes_; }
  std::span<const Value> values() const { return values_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  const Value& value(ValueId id) const { return values_[id]; }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_values() const { return values_.size(); }

  std::span<const ValueId> inputs() const { return inputs_; }    // in declaration order
  std::span<const ValueId> outputs() const { return outputs_; }  // in declaration order
  std::span<const NodeId> consumers(ValueId v) const { return consumers_[v]; }
  std::optional<ValueId> find_value(const std::string& name) const;

  // Where the graph came from (a file path, or "<builder>"): prefixes load/validation errors.
  const std::string& source() const { return source_; }
  // Free-form model metadata (producer, description) kept through a file round trip.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  friend class GraphBuilder;
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<ValueId> inputs_, outputs_;
  std::vector<std::vector<NodeId>> consumers_;
  std::unordered_map<std::string, ValueId> value_index_;
  std::string source_;
  std::map<std::string, std::string> metadata_;
};

// What shape inference needs to know of one node; the rules themselves live in ops/ (the op
// registry implements ShapeInferencer), so graph/ does not depend on ops/.
struct InferContext {
  const Node& node;
  std::vector<const TensorDesc*> inputs;    // nullptr for an absent optional input
  std::vector<const Tensor*> const_inputs;  // data of constant inputs (e.g. Reshape's shape)
  std::string where;                        // node.where(), prefixed with the source
  size_t num_outputs = 0;                   // outputs the node declares (Split divides by it)
};

class ShapeInferencer {
 public:
  virtual ~ShapeInferencer() = default;
  // Output descs of ctx.node, or an error naming the node and field. Unknown op types give
  // StatusCode::kUnsupported.
  virtual Result<std::vector<TensorDesc>> infer(const InferContext& ctx) const = 0;
};

}  // namespace graphi::graph
