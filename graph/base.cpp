#include "graph/base.h"

#include <cstdio>
#include <cstdlib>

namespace graphi {

namespace {
const char* code_name(StatusCode c) {
  switch (c) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kInvalidGraph:
      return "invalid graph";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kIoError:
      return "I/O error";
    case StatusCode::kOutOfMemory:
      return "out of memory";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown error";
}
}  // namespace

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(code_name(code())) + ": " + message();
}

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "graphi: internal check failed at %s:%d: %s (%s)\n", file, line, cond,
               msg.c_str());
  std::abort();
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "float32";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
  }
  return "unknown";
}

std::optional<DType> dtype_from_name(std::string_view n) {
  if (n == "float32" || n == "f32") return DType::kF32;
  if (n == "int32" || n == "i32") return DType::kI32;
  if (n == "int64" || n == "i64") return DType::kI64;
  return std::nullopt;
}

}  // namespace graphi
