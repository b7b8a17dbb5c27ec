// NumPy .npy files (format versions 1.0, 2.0 and 3.0) <-> Tensor, for the CLI's inputs and
// outputs and for tests that exchange data with numpy. graph/ only: no ops/ or engine/.
//
// Supported: little-endian float32 ('<f4'), int32 ('<i4') and int64 ('<i8') in C order, any
// rank including 0 (a scalar); bool ('|b1') and float16 ('<f2') where the caller asks for them
// (ONNX BOOL and FLOAT16 inputs), as float32. Everything else is refused with an error that names
// the file and what was found: Fortran order, big-endian data, other dtypes (float64, uint8,
// ...), object arrays, a malformed header, a file shorter or longer than its header says.
// Spec: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <string>
#include <string_view>

#include "graph/tensor.h"

namespace graphi::graph {

// Reads `path`. Errors (StatusCode::kIoError for an unreadable file, kInvalidArgument for
// content graphi cannot use) start with the path, e.g.
//   "x.npy: dtype float64 ('<f8') is not supported; graphi reads float32, int32 and int64 (in
//    numpy: a.astype(np.float32))".
// Never crashes on malformed input; never allocates more than the file's size plus the header's
// claimed tensor when that claim matches the file.
// `bool_as_f32`: also read numpy bool ('|b1') as float32 0/1, graphi's form of an ONNX BOOL
// value (graph/onnx/ONNX.md, Booleans); `was_bool`, when given, says whether the file held bools.
// `was_half`, when given: also read numpy float16 ('<f2') as float32 (an ONNX FLOAT16 value,
// "Half-precision models"), and say whether the file held float16.
Result<Tensor> read_npy(const std::string& path, bool bool_as_f32 = false, bool* was_bool = nullptr,
                        bool* was_half = nullptr);

// Parses the bytes of a whole .npy file; `source` names it in errors.
Result<Tensor> parse_npy(std::string_view bytes, const std::string& source,
                         bool bool_as_f32 = false, bool* was_bool = nullptr,
                         bool* was_half = nullptr);

// Writes `t` as a version 1.0 file (2.0 if the header would not fit in 64 KiB), C order,
// little-endian, header padded to a multiple of 64 bytes as numpy does; with `as_bool`, a
// float32 0/1 tensor as numpy bool (non-zero -> True); with `as_half`, a float32 tensor as numpy
// float16 (rounded to nearest even: an ONNX FLOAT16 output). Errors name the path.
Status write_npy(const std::string& path, const Tensor& t, bool as_bool = false,
                 bool as_half = false);

// The bytes write_npy() writes.
std::string serialize_npy(const Tensor& t, bool as_bool = false, bool as_half = false);

}  // namespace graphi::graph
