#include "ops/custom_op.h"

namespace graphi::ops {

Status register_custom_op(OpDef def) {
  const std::string where = "register_custom_op: op type '" + def.type + "'";
  if (def.type.empty()) return Status::invalid_argument("register_custom_op: empty op type");
  for (unsigned char c : def.type)
    if (c <= ' ' || c == 0x7F)
      return Status::invalid_argument(where + ": the type must not contain whitespace or control characters");
  if (!def.infer) return Status::invalid_argument(where + ": no shape rule (OpDef::infer)");
  if (!def.cost) return Status::invalid_argument(where + ": no cost hint (OpDef::cost)");
  if (def.kernels.empty()) return Status::invalid_argument(where + ": no kernels (OpDef::kernels)");
  for (size_t i = 0; i < def.kernels.size(); ++i)
    if (!def.kernels[i])
      return Status::invalid_argument(where + ": kernel factory " + std::to_string(i) + " is null");
  Status s = Registry::add_to_process_table(std::move(def));
  if (!s.is_ok()) return Status::invalid_argument("register_custom_op: " + s.message() + " (built-in or custom)");
  return s;
}

}  // namespace graphi::ops
