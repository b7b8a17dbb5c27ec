// Helpers shared by the graph passes: looking through constant plumbing (Identity / Transpose of
// a constant), comparing constants, reading a Slice's range, and Rewrite, which rebuilds a graph
// minus some nodes plus new ones and drops what the removal left dead.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_builder.h"

namespace graphi::graph::passes {

// A constant reached through Identity / 2-D Transpose nodes (as PyTorch exports weights):
// `value` is the constant, `transposed` whether the path transposes it an odd number of times.
struct ConstRef {
  ValueId value = kNoId;
  bool transposed = false;
};
std::optional<ConstRef> resolve_const(const Graph& g, ValueId v);

// Same constant: one value, one shared tensor, or equal dtype, shape and bytes.
bool same_const(const Graph& g, ValueId a, ValueId b);

// Every element of constant `v` equals `x` (e.g. the 1 of `1 - z`).
bool const_all_equal(const Graph& g, ValueId v, float x);

// The elements of an i64 / i32 constant of rank 0 or 1 (through Identity / Transpose plumbing);
// nullopt for anything else.
std::optional<std::vector<int64_t>> const_ints(const Graph& g, ValueId v);

// [start, end) of a Slice along `axis` (normalized, clamped, step 1) with constant starts/ends
// (attributes or inputs); nullopt when the Slice cuts another axis or has another step.
std::optional<std::pair<int64_t, int64_t>> slice_range(const Graph& g, const Node& n, int axis);

// The bounds [lo, hi] of a Clip node when they are constants: inputs 1 and 2 (opset >= 11; an
// absent one is -inf / +inf) or attributes min / max (before); nullopt when a bound is computed at
// run time, is not a float scalar, or lo > hi.
std::optional<std::pair<double, double>> clip_bounds(const Graph& g, const Node& n);

// The value of a float32 constant of one element (rank 0 or 1), else nullopt.
std::optional<double> float_scalar(const Graph& g, ValueId v);

// The one node reading v when v is read by exactly one node and is not a graph output (a value
// a fusion may make internal), else kNoId.
NodeId sole_reader(const Graph& g, ValueId v);

// A float constant holding one value per channel of a tensor of shape x: [1, C, 1, 1] or
// [C, 1, 1] (an imported inference BatchNormalization's scale and shift) for an NCHW x, and
// [1, C/L, 1, 1, L] for a channel-blocked one (graph/passes/blocked_layout.h).
bool per_channel_constant(const Value& v, const Shape& x);

// For a binary node n of type `op` (one output) with one operand `known`: the other operand, or
// kNoId.
ValueId other_operand(const Node& n, const std::string& op, ValueId known);

// A node's attribute `axis` normalized for an input of rank `rank` (nullopt if out of range).
std::optional<int> node_axis(const Node& n, int rank, int64_t fallback = 0);

// A 2-D value that is rows [off, off + rows) of `src` viewed as a [R, K] matrix (K = src's last
// dim): a piece of a Split or a Slice along axis 0, possibly through a Reshape / Squeeze, or a
// Gather of one constant index along axis 0 (x[t] of a [T, B, K] tensor, however imported).
struct RowBlock {
  ValueId src = kNoId;
  int64_t off = 0, rows = 0;
};
std::optional<RowBlock> row_block(const Graph& g, ValueId v);

// A reduction's axes as written: its `axes` attribute (opset < 18) or constant input 1 (opset 18;
// an absent one: the attribute's default, empty). nullopt when input 1 is computed at run time.
std::optional<std::vector<int64_t>> reduction_axes(const Graph& g, const Node& n);

// A Pad's begin / end per dim of its input of `rank`, when everything that decides them is a
// constant: `pads` from input 1 (opset >= 11) or the attribute, opset 18's `axes` input 3.
struct PadAmounts {
  std::vector<int64_t> begin, end;
};
std::optional<PadAmounts> pad_amounts(const Graph& g, const Node& pad, int rank);

// Element-wise ops whose value at each element depends only on that element (and on scalar
// operands, Clip's bounds): they commute with any layout change and any split of their input.
bool elementwise_unary_op(const std::string& op);

// An i64 vector constant.
Tensor i64_tensor(const std::vector<int64_t>& v);

// True when no value of `frontier` depends on a node of `members` (a rewrite that puts the
// members after `frontier` would otherwise make a cycle).
bool inputs_independent(const Graph& g, std::vector<ValueId> frontier,
                        const std::unordered_set<NodeId>& members);

// Rebuilds `g` without the removed nodes, with the added constants and nodes. Nodes and
// constants whose values nothing reads any more (weights only the removed nodes used, the
// Identity / Transpose feeding them) are dropped; nodes that were already dead are kept.
// Graph inputs, outputs and metadata are unchanged.
class Rewrite {
 public:
  explicit Rewrite(const Graph& g);
  void remove(NodeId n) { removed_[n] = true; }
  bool removed(NodeId n) const { return removed_[n]; }
  // A name not used in the graph or by this rewrite: `want`, else want_1, want_2, ...
  std::string fresh(const std::string& want);
  void add_constant(const std::string& name, std::shared_ptr<const Tensor> t);
  void add_constant(const std::string& name, Tensor t);
  void add_node(const std::string& op, const std::string& name,
                const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                Attributes attrs = {});
  // A Split of `input` along `axis` into `outputs` of `sizes`, named `base` + "/split" (the
  // tail of the passes that merge nodes into one wide op).
  void add_split(const std::string& base, const std::string& input,
                 const std::vector<std::string>& outputs, int64_t axis,
                 const std::vector<int64_t>& sizes);
  // Every node (kept or added) that reads `v` reads the value named `by` instead (`v` must not
  // be a graph output).
  void replace_uses(ValueId v, const std::string& by) { subst_[g_.value(v).name] = by; }
  size_t added_nodes() const { return nodes_.size(); }
  Result<Graph> finish(const ShapeInferencer& shapes) const;
  // finish() when the pass made `changes` > 0 rewrites, else a copy of the input graph.
  Result<Graph> finish_or_copy(int changes, const ShapeInferencer& shapes) const {
    if (changes > 0) return finish(shapes);
    return g_;
  }

 private:
  struct NewNode {
    std::string op, name;
    std::vector<std::string> inputs, outputs;
    Attributes attrs;
  };
  const Graph& g_;
  std::vector<bool> removed_;
  std::unordered_set<std::string> names_;
  std::vector<std::pair<std::string, std::shared_ptr<const Tensor>>> constants_;
  std::vector<NewNode> nodes_;
  std::unordered_map<std::string, std::string> subst_;
};

}  // namespace graphi::graph::passes
