// The checks of a run's named inputs against the inputs a model declares, worded once for
// Session::run and BatchSlices::run: a model that runs in slices (profiler/batch_split_choice.h,
// chosen by measurement) must refuse a bad input with the words it refuses it with whole.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graph/base.h"
#include "graph/tensor.h"

namespace graphi::engine {

// Binds `inputs` (by name, any order) to the `count` declared inputs: bound[i] = the tensor for
// declared input i. `name(i)` and `desc(i)` describe declared input i, `find(name)` gives its
// position or count when there is none. Errors start with `source` and name the input: an
// unknown name (listing the declared inputs), a name given twice, a dtype or shape other than
// declared (both shown), a tensor without data, declared inputs not given (all of them, with
// their descs). Allocates only on an error.
template <typename Name, typename Desc, typename Find>
Status bind_named_inputs(const std::string& source, size_t count, Name name, Desc desc, Find find,
                         const std::vector<std::pair<std::string, Tensor>>& inputs,
                         std::vector<const Tensor*>& bound) {
  // The file's name only on an error: a run that binds fine allocates nothing here.
  auto error = [&](const std::string& what) {
    return Status::invalid_argument(source + ": " + what);
  };
  bound.assign(count, nullptr);
  for (const auto& [given, tensor] : inputs) {
    const size_t i = find(given);
    if (i >= count) {
      std::string list;
      for (size_t k = 0; k < count; ++k)
        list += (list.empty() ? "" : ", ") + std::string(name(k)) + " " + desc(k).to_string();
      return error("'" + given + "' is not an input of the graph (inputs: " +
                   (list.empty() ? "none" : list) + ")");
    }
    if (bound[i]) return error("input '" + given + "' is given more than once");
    const TensorDesc& want = desc(i);
    if (!(tensor.desc() == want))
      return error("input '" + given + "': expected " + want.to_string() + ", got " +
                   tensor.desc().to_string());
    if (tensor.data() == nullptr) return error("input '" + given + "' has no data");
    bound[i] = &tensor;
  }
  std::string missing;
  for (size_t i = 0; i < count; ++i)
    if (!bound[i])
      missing +=
          (missing.empty() ? "" : ", ") + ("'" + std::string(name(i)) + "' " + desc(i).to_string());
  if (!missing.empty()) return error("missing input(s): " + missing);
  return Status::ok();
}

}  // namespace graphi::engine
