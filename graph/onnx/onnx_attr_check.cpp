#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "graph/onnx/onnx_attr_names.h"

namespace graphi::graph::onnx {

Status check_attr_names(const Node& n, const std::string& where) {
  const OpAttrNames* end = kOnnxAttrNames + kOnnxAttrNamesCount;
  const OpAttrNames* it =
      std::lower_bound(kOnnxAttrNames, end, n.op, [](const OpAttrNames& e, const std::string& op) {
        return std::strcmp(e.op, op.c_str()) < 0;
      });
  if (it == end || n.op != it->op) return Status::ok();
  // Extra inputs or outputs would be ignored: refuse them, with the range over all opsets.
  auto range = [](int lo, int hi) {
    if (lo == hi) return std::to_string(lo);
    if (hi >= 2147483647) return std::to_string(lo) + " or more";
    return std::to_string(lo) + " to " + std::to_string(hi);
  };
  const auto n_in = static_cast<int64_t>(n.inputs.size()),
             n_out = static_cast<int64_t>(n.outputs.size());
  // The RNN importer names each RNN input/output in its own arity errors.
  const bool rnn = n.op == "LSTM" || n.op == "GRU" || n.op == "RNN";
  if (!rnn && (n_in < it->min_inputs || n_in > it->max_inputs))
    return Status::invalid_graph(where + ": has " + std::to_string(n_in) + " inputs; ONNX " + n.op +
                                 " takes " + range(it->min_inputs, it->max_inputs));
  if (!rnn && (n_out < it->min_outputs || n_out > it->max_outputs))
    return Status::invalid_graph(where + ": has " + std::to_string(n_out) + " outputs; ONNX " +
                                 n.op + " has " + range(it->min_outputs, it->max_outputs));
  const std::string_view known = it->attrs;
  for (const Attr& a : n.attrs) {
    bool found = false;
    for (size_t pos = 0; pos <= known.size() && !found;) {
      size_t next = known.find(' ', pos);
      if (next == std::string_view::npos) next = known.size();
      found = known.substr(pos, next - pos) == a.name;
      pos = next + 1;
    }
    if (!found)
      return Status::invalid_graph(
          where + ": attribute '" + a.name + "' is not an attribute of ONNX " + n.op +
          " (it has: " + (known.empty() ? std::string("none") : std::string(known)) + ")");
  }
  return Status::ok();
}

}  // namespace graphi::graph::onnx
