// The inputs of a run from --input NAME=FILE.npy flags: `graphi run` and `graphi profile` (a
// model whose integer inputs are indices, e.g. GatherElements', needs real values: random ones
// fall out of range). Files first, each checked against the model's desc; seeded random values
// for the rest, each reported on stderr.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/session.h"
#include "graph/graph.h"

namespace graphi::cli {

struct InputFile {
  std::string name, path;
  std::optional<Tensor> data;  // once read_input_files has read it (each file is read once:
                               // a shell's <(...) pipe cannot be read twice)
  bool was_bool = false;       // ... from numpy bools (float32 0/1 now; only a BOOL input takes it)
  bool was_half = false;       // ... from numpy float16 (float32 now; only a FLOAT16 input takes it)
};

// A graph input's desc as the model file declares it: "bool[2, 6]" for an ONNX BOOL input
// (float32 0/1 inside graphi), "float16[1, 3]" / "bfloat16[...]" for a FLOAT16 / BFLOAT16 one
// (float32 inside graphi), else TensorDesc::to_string().
std::string declared_desc(const graph::Graph& g, graph::ValueId v);

// The flags' form, checked before the model loads (a typo is a usage error even for a large
// model): kInvalidArgument for "NAME=FILE.npy" missing a part or a name given twice.
Result<std::vector<InputFile>> parse_input_flags(const std::vector<std::string>& specs);

// Reads every file before the model loads, so that their shapes can give an .onnx model's
// symbolic dims (ImportOptions::input_shapes). A file that cannot be read is left unread here:
// bind_inputs reports it, after a name the model does not have was reported as a usage error.
void read_input_files(std::vector<InputFile>& files);
std::map<std::string, Shape> input_shapes(const std::vector<InputFile>& files);

// A usage message when a file names no input of the model ("'y' is not an input of M; its
// inputs are: x float32[2, 3]"), else nullopt.
std::optional<std::string> unknown_input(const graph::Graph& g, const std::string& model_path,
                                         const std::vector<InputFile>& files);

struct BoundInputs {
  engine::NamedTensors tensors;               // in the graph's input order
  std::vector<std::string> generated;         // inputs given random values
  std::map<std::string, std::string> source;  // input name -> file it was read from
};

// Reads the files (a wrong dtype or shape names the input, the file and both descs; data that
// read_input_files read is moved out, not copied) and fills the other inputs with seeded random
// values (kOutOfMemory naming an input too large to make).
Result<BoundInputs> bind_inputs(const graph::Graph& g, std::vector<InputFile>& files,
                                uint64_t seed);

// A run's failure, with a hint when some inputs held random values (an index out of range is
// then the generator's, not the model's): "... (inputs 'idx' held seeded random values; give
// real ones with --input NAME=FILE.npy)".
Status with_input_hint(const Status& failure, const BoundInputs& inputs);

}  // namespace graphi::cli
