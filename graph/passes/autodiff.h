// Reverse-mode differentiation as a graph pass: given a graph, a scalar loss value and the values
// to differentiate by (trainable weights: constants or inputs, by name), appends the gradient
// graph to the same Graph. Forward results are read, never recomputed; a value read by several
// nodes gets the sum of their gradients; gradients of broadcast operands are reduced back to the
// operand's shape (ReduceSum over the broadcast axes + Reshape).
//
// The gradient of one op type is a GradRule. The rules live beside the ops (ops/gradients.cpp
// implements GradientRules, as ops::Registry implements ShapeInferencer), so graph/ does not
// depend on ops/. A node on a path from a differentiated value to the loss whose op has no rule
// is an error naming the op type and the node, never a silent zero.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_builder.h"

namespace graphi::graph::passes {

// Emits gradient nodes into the graph under construction. Every name it makes is fresh
// (prefixed "grad/"), so rules never collide with the forward graph or each other.
class GradEmitter {
 public:
  GradEmitter(const Graph& g, GraphBuilder& b) : g_(g), b_(b) {}

  // A node with one output; returns the output's name. `hint` names it ("grad/<hint>_N").
  std::string op(const std::string& type, const std::vector<std::string>& inputs,
                 Attributes attrs = {}, const std::string& hint = "");
  // A node with `n` outputs; returns their names.
  std::vector<std::string> op_n(const std::string& type, const std::vector<std::string>& inputs,
                                size_t n, Attributes attrs = {}, const std::string& hint = "");
  std::string scalar(float x);                      // float32 [] constant
  std::string ints(const std::vector<int64_t>& v);  // int64 [n] constant
  std::string zeros(const TensorDesc& d);           // float32 zeros of d's shape
  // `v` (of shape `from`) summed over the axes numpy broadcasting added or stretched to reach
  // `from` from `to`, then reshaped to `to`. Returns `v` itself when the shapes are equal.
  std::string reduce_to(const std::string& v, const Shape& from, const Shape& to);
  // `v` reshaped to `to` (a scalar [] through ReduceSum, as a shape constant cannot be empty).
  std::string reshape(const std::string& v, const Shape& to);
  std::string fresh(const std::string& hint);

  const Graph& graph() const { return g_; }

 private:
  const Graph& g_;
  GraphBuilder& b_;
  int counter_ = 0;
};

// What a rule sees: the forward node and the gradients of its outputs ("" where no gradient
// flows into that output: treat it as zero). It fills `dx` (one entry per input, "" = none) for
// every input with need[i] set; it may leave the others empty.
struct GradContext {
  const Graph& g;
  const Node& node;
  std::vector<std::string> dy;  // per output
  std::vector<bool> need;       // per input
  GradEmitter& e;
  std::string where;  // node.where() with the graph's source

  const Value& in(size_t i) const { return g.value(node.inputs[i]); }
  const Value& out(size_t i) const { return g.value(node.outputs[i]); }
  const std::string& in_name(size_t i) const { return in(i).name; }
  const std::string& out_name(size_t i) const { return out(i).name; }
};

using GradRule = Status (*)(GradContext& ctx, std::vector<std::string>& dx);

// The form a forward node takes in a training graph when its gradient rule reads what the
// forward pass computed but does not output (a fused RNN's gate activations): its attributes and
// its number of outputs (the existing outputs first; the pass names the new ones).
struct TrainingForm {
  Attributes attrs;
  size_t num_outputs = 0;
};

// The table of rules by op type.
class GradientRules {
 public:
  virtual ~GradientRules() = default;
  virtual GradRule find(const std::string& op) const = 0;  // nullptr: no rule
  // The training form of a node between a differentiated value and the loss, or nullopt to
  // differentiate the node as it is (every op but those that save activations).
  virtual std::optional<TrainingForm> training_form(const Node& node) const {
    (void)node;
    return std::nullopt;
  }
};

// Values `target` depends on (itself included): the backward reach over g's nodes, by ValueId.
std::vector<bool> values_feeding(const Graph& g, ValueId target);

struct AutodiffOptions {
  bool grads_as_outputs = false;  // also make every gradient a graph output (tests, inspection)
};

struct AutodiffResult {
  Graph graph;
  // Differentiated value name -> its gradient's value name (same desc). A value the loss does
  // not depend on gets a zeros constant.
  std::map<std::string, std::string> grads;
  int forward_nodes = 0, gradient_nodes = 0;
};

// Nodes with a training form (GradientRules::training_form) are first rewritten into it, so the
// returned graph's forward part may differ from `g` in those nodes (same op type, attributes of
// the training form, extra outputs named "grad/saved_<node>_<k>").
// Errors: the loss is not a float32 value with one element, a `wrt` name is unknown or not
// float32, a node between them has no rule (op type and node named), or a rule's error.
Result<AutodiffResult> differentiate(const Graph& g, const std::string& loss,
                                     const std::vector<std::string>& wrt,
                                     const GradientRules& rules, const ShapeInferencer& shapes,
                                     const AutodiffOptions& options = {});

}  // namespace graphi::graph::passes
