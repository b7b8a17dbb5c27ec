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

}  // namespace graphi::ops
