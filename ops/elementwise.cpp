// Elementwise ops: Add, Sub, Mul, Div (numpy broadcasting), Sigmoid, Tanh, Relu.
#include "ops/registry.h"

namespace graphi::ops {
void register_elementwise_ops(Registry& r) {}
}  // namespace graphi::ops
