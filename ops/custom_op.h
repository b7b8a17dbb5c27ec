// Custom ops: how an application that embeds graphi adds an op type of its own (shape rule,
// cost hint, small flag, kernels; see OpDef in ops/registry.h) to the process-wide registry, so
// GraphBuilder, .graphi files and Sessions accept it like a built-in op.
//
// Thread-safety: registrations are serialized among themselves, but the registry is read
// without a lock by shape inference, Plan compilation and kernel selection. Register every
// custom op at start-up, before any thread builds or loads a graph, compiles a Plan or creates
// a Session. An op type cannot be removed or replaced once registered.
#pragma once

#include "ops/registry.h"

namespace graphi::ops {

// Checks `def` and adds it. kInvalidArgument, naming the op type and the field, when the type
// is empty or contains whitespace or control characters, when infer or cost is missing, when
// the kernel list is empty or holds a null factory, or when the type already exists (built-in
// or custom).
Status register_custom_op(OpDef def);

// Kernels built from a plain function, for custom ops whose code may throw (application code,
// bindings). The function runs like Kernel::run on every team member; an exception it throws is
// caught in the member that threw and reported through TeamContext::fail, so the Session's run()
// returns an error naming the node instead of the process terminating (Kernel::run is
// noexcept). The run stops; the op's outputs are undefined. Use as a kernel factory:
//   OpDef{"MyOp", infer, cost, false, {ops::function_kernel<&my_op>}}
using CustomKernelFn = void (*)(const TeamContext&, const Buffers&);
std::unique_ptr<Kernel> make_function_kernel(CustomKernelFn fn);
template <CustomKernelFn Fn>
std::unique_ptr<Kernel> function_kernel() {
  return make_function_kernel(Fn);
}

}  // namespace graphi::ops
