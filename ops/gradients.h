// The gradient rules of the ops (reverse-mode differentiation, graph/passes/autodiff.h): one
// rule per op type, each emitting ordinary registered ops. Kept beside the shape rules on the
// ops/ side, as ops::Registry implements graph::ShapeInferencer, so graph/ stays free of ops/.
#pragma once

#include <string>
#include <vector>

#include "graph/passes/autodiff.h"

namespace graphi::ops {

// The process-wide table of gradient rules.
const graph::passes::GradientRules& gradient_rules();

// Op types with a gradient rule, sorted (docs, `graphi train --help`, tests).
std::vector<std::string> differentiable_ops();

// Registered op types treated as piecewise constant (no gradient flows through them), sorted.
std::vector<std::string> piecewise_constant_ops();

}  // namespace graphi::ops
