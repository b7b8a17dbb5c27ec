// Conv (2-D), MaxPool, AveragePool.
#include "ops/registry.h"

namespace graphi::ops {
void register_conv_pool_ops(Registry& r) {}
}  // namespace graphi::ops
