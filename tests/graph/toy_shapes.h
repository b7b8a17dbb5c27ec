// A tiny ShapeInferencer for graph/ tests that must not depend on the real op rules in ops/:
// it lets the builder and format tests exercise every path of GraphBuilder::finish() with rules
// simple enough to check by eye.
//   Same     1+ inputs with equal descs -> `outputs` (int attribute, default 1) copies of input 0
//   Pick     any inputs (absent allowed) -> the first present input's desc
//   Scale    1 input, required int attribute "axis" (checked with attr_int) -> input desc
//   Rows     1 input, int attribute "rows" -> the input desc with dim 0 replaced by rows
//   Free     no inputs, attributes "dtype" (string) and "shape" (ints) -> that desc
//   anything else -> kUnsupported "unknown op type"
#pragma once

#include "graph/graph.h"

namespace graphi::test {

class ToyShapes final : public graph::ShapeInferencer {
 public:
  Result<std::vector<TensorDesc>> infer(const graph::InferContext& ctx) const override {
    const graph::Node& n = ctx.node;
    auto need_inputs = [&](size_t k) -> Status {
      if (ctx.inputs.size() != k || (k && !ctx.inputs[0]))
        return Status::invalid_graph(ctx.where + ": expects " + std::to_string(k) + " inputs");
      return Status::ok();
    };
    if (n.op == "Same") {
      if (ctx.inputs.empty() || !ctx.inputs[0])
        return Status::invalid_graph(ctx.where + ": needs an input");
      for (size_t i = 1; i < ctx.inputs.size(); ++i)
        if (!ctx.inputs[i] || !(*ctx.inputs[i] == *ctx.inputs[0]))
          return Status::invalid_graph(ctx.where + ": input " + std::to_string(i) + " is " +
                                       (ctx.inputs[i] ? ctx.inputs[i]->to_string() : "absent") +
                                       " but input 0 is " + ctx.inputs[0]->to_string());
      GRAPHI_ASSIGN_OR_RETURN(int64_t k, graph::attr_int(n.attrs, ctx.where, "outputs", 1));
      return std::vector<TensorDesc>(static_cast<size_t>(k), *ctx.inputs[0]);
    }
    if (n.op == "Pick") {
      for (const TensorDesc* d : ctx.inputs)
        if (d) return std::vector<TensorDesc>{*d};
      return Status::invalid_graph(ctx.where + ": no input present");
    }
    if (n.op == "Scale") {
      GRAPHI_RETURN_IF_ERROR(need_inputs(1));
      GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(n.attrs, ctx.where, "axis"));
      (void)axis;
      return std::vector<TensorDesc>{*ctx.inputs[0]};
    }
    if (n.op == "Rows") {
      GRAPHI_RETURN_IF_ERROR(need_inputs(1));
      GRAPHI_ASSIGN_OR_RETURN(int64_t rows, graph::attr_int(n.attrs, ctx.where, "rows"));
      TensorDesc d = *ctx.inputs[0];
      if (!d.shape.empty()) d.shape[0] = rows;
      return std::vector<TensorDesc>{d};
    }
    if (n.op == "Free") {
      GRAPHI_RETURN_IF_ERROR(need_inputs(0));
      GRAPHI_ASSIGN_OR_RETURN(std::string dt,
                              graph::attr_string(n.attrs, ctx.where, "dtype", "float32"));
      GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                              graph::attr_ints(n.attrs, ctx.where, "shape"));
      auto t = dtype_from_name(dt);
      if (!t) return Status::invalid_graph(ctx.where + ": bad dtype " + dt);
      return std::vector<TensorDesc>{TensorDesc{*t, shape}};
    }
    // No prefix on purpose: finish() must add "<source>: node '...' (Op)" itself.
    return Status::unsupported("unknown op type '" + n.op + "'");
  }
};

}  // namespace graphi::test
