// Runs one op through the registry (shape inference, kernel selection, a team of threads)
// without the engine, so op tests check kernels against the naive references directly.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::test {

struct OpRun {
  std::vector<Tensor> outputs;
  std::string kernel;   // name of the kernel the registry selected
  std::string failure;  // what the kernel reported through TeamContext::fail (the engine's
                        // error for the run, e.g. an index out of range); empty if nothing
};

// Builds a one-node graph `op` with inputs in0..inN (those flagged in `constant` become
// constants, so kernels may pre-pack them; a default-constructed Tensor is an absent optional
// input), `num_outputs` outputs, runs it once on a team of
// `threads` OpenMP threads. Errors (shape inference, no kernel) come back as the Status.
Result<OpRun> run_single_op(const std::string& op, const graph::Attributes& attrs,
                            const std::vector<Tensor>& inputs, int num_outputs = 1, int threads = 1,
                            const std::vector<bool>& constant = {});

}  // namespace graphi::test
