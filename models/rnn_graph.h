// Internal to models/: the pieces the unrolled LSTM and GRU graphs share (splitting x and the
// initial states into per-step / per-layer [B, H] values, assembling y and the final states,
// naming). Emits only plain ops: Reshape, Split, Concat.
#pragma once

#include <string>
#include <vector>

#include "graph/graph_builder.h"
#include "models/rnn_spec.h"
#include "models/weights.h"

namespace graphi::models::detail {

class RnnGraph {
 public:
  RnnGraph(graph::GraphBuilder& b, const RnnSpec& spec) : b_(b), spec_(spec), rng_(spec.seed) {}

  graph::GraphBuilder& builder() { return b_; }

  // "l{layer}/t{step}/{what}": node and value names inside the recurrence.
  static std::string step_name(int64_t layer, int64_t step, const std::string& what);

  // A constant int64 shape tensor for Reshape, added once per distinct shape; returns its name.
  std::string shape_constant(const Shape& shape);
  // Reshape `input` to `shape`; node and output value are both called `name`.
  std::string reshape(const std::string& name, const std::string& input, const Shape& shape);
  // Split `input` along `axis` into pieces of `sizes`; node `name`, outputs `outputs`.
  void split(const std::string& name, const std::string& input, int64_t axis,
             const std::vector<int64_t>& sizes, const std::vector<std::string>& outputs);
  // A node with one output called like the node; returns the name.
  std::string op(const std::string& type, const std::string& name,
                 const std::vector<std::string>& inputs);

  // Declares graph input `name` f32[count, B, feat]. Declare every input before anything else,
  // so inputs get the lowest value ids (as the .graphi reader assigns them).
  void input(const std::string& name, int64_t count, int64_t feat);
  // Splits declared input `name` into `count` values of [B, feat] named
  // "{name}/{prefix}{i}". Returns their names.
  std::vector<std::string> split_input(const std::string& name, int64_t count, int64_t feat,
                                       const std::string& prefix);
  // Concatenates `parts` (each [B, H]) into graph output `name` of [parts.size(), B, H].
  void concat_output(const std::string& name, const std::vector<std::string>& parts);

  // Adds a float32 constant of `shape` uniform in [-1/sqrt(H), 1/sqrt(H)).
  void weight(const std::string& name, const Shape& shape);

 private:
  graph::GraphBuilder& b_;
  const RnnSpec& spec_;
  std::vector<std::string> shape_consts_;
  std::vector<Shape> shapes_;
  WeightRng rng_;  // weights are drawn in the order weight() is called
};

// Sets the builder's metadata common to both cells.
void set_rnn_metadata(graph::GraphBuilder& b, const RnnSpec& spec, const std::string& cell,
                      const std::string& gate_order);

}  // namespace graphi::models::detail
