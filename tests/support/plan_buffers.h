// PlanBuffers: slot tables over one buffer per value of a Plan's graph (what a Session builds
// from its memory plan), for tests that drive a ParallelRuntime directly. Graph inputs all read
// the one tensor `x`.
#pragma once

#include <string>
#include <vector>

#include "engine/node_runner.h"
#include "engine/plan.h"
#include "graph/tensor.h"

namespace graphi::test {

struct PlanBuffers {
  std::vector<Tensor> values;
  std::vector<const void*> in;
  std::vector<void*> out;
  PlanBuffers(const engine::Plan& plan, const Tensor& x) {
    const graph::Graph& g = plan.graph();
    for (graph::ValueId v = 0; v < g.num_values(); ++v) values.emplace_back(g.value(v).desc);
    auto ptr = [&](graph::ValueId v) -> void* {
      const graph::Value& val = g.value(v);
      if (val.kind == graph::ValueKind::kInput) return const_cast<void*>(x.data());
      if (val.kind == graph::ValueKind::kConstant) return const_cast<void*>(val.data->data());
      return values[v].data();
    };
    in.assign(plan.in_offsets().back(), nullptr);
    out.assign(plan.out_offsets().back(), nullptr);
    for (engine::NodeId n = 0; n < plan.num_nodes(); ++n) {
      for (size_t k = 0; k < plan.inputs(n).size(); ++k)
        in[plan.in_offsets()[n] + k] = ptr(plan.inputs(n)[k]);
      for (size_t k = 0; k < plan.outputs(n).size(); ++k)
        out[plan.out_offsets()[n] + k] = ptr(plan.outputs(n)[k]);
    }
  }
  engine::SlotTables slots() { return engine::SlotTables{in.data(), out.data()}; }
  const Tensor& value(const graph::Graph& g, const std::string& name) {
    return values[*g.find_value(name)];
  }
};

}  // namespace graphi::test
