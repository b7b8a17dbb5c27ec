/* The few enums shared by the public API and the internals. Plain C so that graphi.h (the C API)
 * and the C++ code agree on the numeric values. */
#ifndef GRAPHI_TYPES_H
#define GRAPHI_TYPES_H

#ifdef __cplusplus
#include <cstdint>
namespace graphi {

/* Element types. f32 is the compute type; i32 and i64 carry indices and shapes. */
enum class DType : int32_t { kF32 = 1, kI32 = 2, kI64 = 3 };

/* Why an operation failed. Exit codes and the C API map from these. */
enum class StatusCode : int32_t {
  kOk = 0,
  kInvalidArgument = 1, /* caller passed something wrong: shape, dtype, option */
  kInvalidGraph = 2,    /* the graph or file is malformed: cycle, missing value, bad attribute */
  kUnsupported = 3,     /* well formed but not supported: unknown op, unsupported attribute */
  kIoError = 4,         /* a file could not be read or written */
  kOutOfMemory = 5,
  kInternal = 6, /* a bug in graphi */
};

}  // namespace graphi
#endif

#endif /* GRAPHI_TYPES_H */
