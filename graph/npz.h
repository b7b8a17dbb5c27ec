// NumPy .npz archives (np.savez: a ZIP of .npy files, stored uncompressed) -> named tensors, for
// `graphi train --batch-from`. Each member is read with parse_npy (graph/npy.h), so the dtypes
// and layouts .npy supports are the ones .npz supports. Compressed archives (np.savez_compressed)
// are refused with an error that says so.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/tensor.h"

namespace graphi::graph {

// Members in archive order, named without the ".npy" suffix. Errors name the path and member.
Result<std::vector<std::pair<std::string, Tensor>>> read_npz(const std::string& path);

}  // namespace graphi::graph
