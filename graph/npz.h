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

// Writes `members` as np.savez does (a ZIP of NAME.npy members, stored, with CRC-32), so numpy's
// np.load and read_npz() both read it. Errors name the path.
Status write_npz(const std::string& path,
                 const std::vector<std::pair<std::string, Tensor>>& members);

}  // namespace graphi::graph
