#include "tests/support/op_runner.h"

#include <omp.h>

#include <cstdlib>

#include "graph/graph_builder.h"
#include "ops/registry.h"

namespace graphi::test {

Result<OpRun> run_single_op(const std::string& op, const graph::Attributes& attrs,
                            const std::vector<Tensor>& inputs, int num_outputs, int threads,
                            const std::vector<bool>& constant) {
  graph::GraphBuilder b("<" + op + " test>");
  std::vector<std::string> in_names, out_names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].data()) {  // a default-constructed Tensor: an absent optional input
      in_names.emplace_back();
      continue;
    }
    in_names.push_back("in" + std::to_string(i));
    if (i < constant.size() && constant[i])
      b.add_constant(in_names.back(), inputs[i]);
    else
      b.add_input(in_names.back(), inputs[i].desc());
  }
  for (int i = 0; i < num_outputs; ++i) {
    out_names.push_back("out" + std::to_string(i));
    b.add_output(out_names.back());
  }
  b.add_node(op, "node", in_names, out_names, attrs);
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, b.finish(ops::Registry::get()));

  const graph::Node& node = g.node(0);
  ops::KernelContext ctx{node, {}, {}, {}, threads, g.source() + ": " + node.where()};
  std::vector<const void*> in_ptrs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == graph::kNoId) {
      ctx.inputs.push_back(nullptr);
      ctx.const_inputs.push_back(nullptr);
      in_ptrs.push_back(nullptr);
      continue;
    }
    const graph::Value& v = g.value(node.inputs[i]);
    ctx.inputs.push_back(&v.desc);
    ctx.const_inputs.push_back(v.kind == graph::ValueKind::kConstant ? v.data.get() : nullptr);
    in_ptrs.push_back(inputs[i].data());
  }
  OpRun result;
  std::vector<void*> out_ptrs;
  for (graph::ValueId v : node.outputs) {
    ctx.outputs.push_back(&g.value(v).desc);
    result.outputs.emplace_back(g.value(v).desc);
  }
  for (Tensor& t : result.outputs) out_ptrs.push_back(t.data());
  GRAPHI_ASSIGN_OR_RETURN(std::unique_ptr<ops::Kernel> kernel, ops::Registry::get().select(ctx));
  result.kernel = kernel->name();

  size_t scratch_bytes = kernel->scratch_bytes();
  void* scratch =
      scratch_bytes ? std::aligned_alloc(64, ((scratch_bytes + 63) / 64) * 64) : nullptr;
  ops::Buffers io{in_ptrs, out_ptrs};
  ops::KernelFailure failure;
  if (kernel->opens_own_region() || threads == 1) {
    omp_set_num_threads(threads);
    kernel->run(ops::TeamContext{0, threads, scratch, scratch_bytes, &failure}, io);
  } else {
#pragma omp parallel num_threads(threads)
    kernel->run(ops::TeamContext{omp_get_thread_num(), omp_get_num_threads(), scratch,
                                 scratch_bytes, &failure},
                io);
  }
  std::free(scratch);
  if (failure.failed()) result.failure = failure.message();
  return result;
}

}  // namespace graphi::test
