// Softmax over one axis.
#include "ops/registry.h"

namespace graphi::ops {
void register_softmax_op(Registry& r) {}
}  // namespace graphi::ops
