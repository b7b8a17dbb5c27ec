#include <algorithm>
#include <cstring>
#include <string_view>

#include "graph/onnx_attr_names.h"

namespace graphi::graph::onnx {

Status check_attr_names(const Node& n, const std::string& where) {
  const OpAttrNames* end = kOnnxAttrNames + kOnnxAttrNamesCount;
  const OpAttrNames* it =
      std::lower_bound(kOnnxAttrNames, end, n.op, [](const OpAttrNames& e, const std::string& op) {
        return std::strcmp(e.op, op.c_str()) < 0;
      });
  if (it == end || n.op != it->op) return Status::ok();
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
      return Status::invalid_graph(where + ": attribute '" + a.name +
                                   "' is not an attribute of ONNX " + n.op + " (it has: " +
                                   (known.empty() ? std::string("none") : std::string(known)) +
                                   ")");
  }
  return Status::ok();
}

}  // namespace graphi::graph::onnx
