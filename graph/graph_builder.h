// GraphBuilder: the only way to make a Graph. Collects values and nodes by name, then finish()
// validates everything (names, references, cycles, attributes and shapes through the op
// registry) and returns an immutable Graph, or an error naming the source, node and field.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::graph {

class GraphBuilder {
 public:
  // `source` prefixes every error (a file path, or a model name).
  explicit GraphBuilder(std::string source = "<builder>") : source_(std::move(source)) {}

  // A graph input fed at run time.
  void add_input(const std::string& name, TensorDesc desc);
  // A constant (weights). The tensor is shared, not copied.
  void add_constant(const std::string& name, std::shared_ptr<const Tensor> data);
  void add_constant(const std::string& name, Tensor data);
  // A node. Inputs and outputs are value names; "" is an absent optional input.
  void add_node(const std::string& op, const std::string& name,
                const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                Attributes attrs = {});
  // Marks a value as a graph output (in call order).
  void add_output(const std::string& name);
  // Declares the expected desc of an intermediate or output value (as a file may). finish()
  // checks it against the inferred one and reports both shapes when they differ.
  void declare(const std::string& name, TensorDesc desc);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // Validates and builds. Checks, in this order: empty or duplicate names (values and nodes),
  // values used but never produced, values produced twice, cycles (naming the nodes on one),
  // shape inference per node in topological order (unknown ops, attributes, dtypes, shapes),
  // declared descs, outputs that exist, at least one output.
  Result<Graph> finish(const ShapeInferencer& shapes) const;

  // Starts a builder holding everything of `g` (to rewrite it in a pass).
  static GraphBuilder from_graph(const Graph& g);

 private:
  struct PendingNode {
    std::string op, name;
    std::vector<std::string> inputs, outputs;
    Attributes attrs;
  };
  struct PendingValue {
    std::string name;
    TensorDesc desc;
    ValueKind kind;
    std::shared_ptr<const Tensor> data;
  };
  std::string source_;
  std::vector<PendingValue> values_;  // inputs and constants, in declaration order
  std::vector<PendingNode> nodes_;
  std::vector<std::string> outputs_;
  std::vector<std::pair<std::string, TensorDesc>> declared_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace graphi::graph
