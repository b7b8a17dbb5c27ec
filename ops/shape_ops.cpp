// Data-movement ops: Concat, Split, Slice, Transpose, Reshape, Identity.
#include "ops/registry.h"

namespace graphi::ops {
void register_shape_ops(Registry& r) {}
}  // namespace graphi::ops
