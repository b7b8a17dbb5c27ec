// Can a batch run as slices? A graph imported for a batch of N samples (`full`) and the same
// model imported for a slice of M samples (`slice`, graph/onnx/onnx_import.h ImportOptions::batch)
// compute the same thing sample by sample when every value that depends on the inputs keeps the
// samples along dim 0, apart, and in order. Running the slice graph N / M times then gives the
// full graph's outputs, and a CNN whose batch of activations overflows the caches runs in them
// (graphi's U-Net-like b8: 13.0 ms as one batch, 11.0 ms as 8 slices of one image on a Zen 5).
//
// The check is conservative: any op it does not know to keep samples apart refuses the split.
//  - structure: the same nodes (name, op, attributes) and values by name in both graphs;
//  - shapes: values reachable from the inputs ("batched") have dim 0 = N in `full` and M in
//    `slice` and equal other dims; the others have equal descs; every input and output is
//    batched;
//  - constants: equal data (up to 64 KiB compared; larger ones are weights from the file), except
//    a Reshape's or Expand's shape operand, whose dim-0 entry may be N / M (x.view(x.size(0), -1)
//    folded at import);
//  - ops: element-wise, convolutions, pools, normalizations over channels or spatial dims, MatMul
//    / Gemm (shapes decide), and the axis ops (Softmax, Concat, Gather, Slice, Transpose,
//    reductions, ...) only off axis 0. Recurrent ops (dim 0 is time), dynamic quantization
//    (one scale per whole tensor), Einsum and anything unlisted refuse.
// The error names the node or value that refuses and why (for a log line; not a user error).
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace graphi::graph {

Status check_batch_split(const Graph& full, const Graph& slice, int64_t batch, int64_t slice_size);

}  // namespace graphi::graph
