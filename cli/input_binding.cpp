#include "cli/input_binding.h"

#include <algorithm>
#include <cstdio>
#include <new>
#include <utility>

#include "cli/cli_util.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_import.h"
#include "models/weights.h"

namespace graphi::cli {

Result<std::vector<InputFile>> parse_input_flags(const std::vector<std::string>& specs) {
  std::vector<InputFile> files;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return Status::invalid_argument("--input expects NAME=FILE.npy, got '" + spec + "'");
    InputFile f{spec.substr(0, eq), spec.substr(eq + 1), std::nullopt};
    for (const InputFile& other : files)
      if (other.name == f.name)
        return Status::invalid_argument("input '" + f.name + "' is given more than once");
    files.push_back(std::move(f));
  }
  return files;
}

namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string declared_desc(const graph::Graph& g, graph::ValueId v) {
  const graph::Value& val = g.value(v);
  if (listed(graph::bool_values(g), val.name)) return "bool" + shape_to_string(val.desc.shape);
  if (listed(graph::float16_values(g), val.name))
    return "float16" + shape_to_string(val.desc.shape);
  if (listed(graph::bfloat16_values(g), val.name))
    return "bfloat16" + shape_to_string(val.desc.shape);
  return val.desc.to_string();
}

void read_input_files(std::vector<InputFile>& files) {
  for (InputFile& f : files) {
    if (f.data) continue;
    auto t = graph::read_npy(f.path, /*bool_as_f32=*/true, &f.was_bool, &f.was_half);
    if (t.is_ok()) f.data = std::move(*t);
  }
}

std::map<std::string, Shape> input_shapes(const std::vector<InputFile>& files) {
  std::map<std::string, Shape> shapes;
  for (const InputFile& f : files)
    if (f.data) shapes[f.name] = f.data->shape();
  return shapes;
}

std::optional<std::string> unknown_input(const graph::Graph& g, const std::string& model_path,
                                         const std::vector<InputFile>& files) {
  for (const InputFile& f : files) {
    auto v = g.find_value(f.name);
    if (v && g.value(*v).kind == graph::ValueKind::kInput) continue;
    std::string names;
    for (graph::ValueId in : g.inputs())
      names += (names.empty() ? "" : ", ") + g.value(in).name + " " + declared_desc(g, in);
    return "'" + f.name + "' is not an input of " + model_path +
           "; its inputs are: " + (names.empty() ? "(the model has no inputs)" : names);
  }
  return std::nullopt;
}

Result<BoundInputs> bind_inputs(const graph::Graph& g, std::vector<InputFile>& files,
                                uint64_t seed) {
  BoundInputs out;
  models::WeightRng rng(seed);
  const std::vector<std::string> bools = graph::bool_values(g);
  const std::vector<std::string> halves = graph::float16_values(g);
  for (graph::ValueId vid : g.inputs()) {
    const graph::Value& v = g.value(vid);
    auto file = std::find_if(files.begin(), files.end(),
                             [&](const InputFile& f) { return f.name == v.name; });
    if (file != files.end()) {
      // A BOOL input takes numpy bools (or float32 0/1), a FLOAT16 one numpy float16 (or
      // float32); any other input refuses them.
      const bool takes_bool = listed(bools, v.name), takes_half = listed(halves, v.name);
      Result<Tensor> t = file->data ? Result<Tensor>(*std::exchange(file->data, std::nullopt))
                                    : graph::read_npy(file->path, /*bool_as_f32=*/true,
                                                      &file->was_bool, &file->was_half);
      if (!t.is_ok()) return t.status().with_context("input '" + v.name + "'");
      const std::string held = file->was_bool   ? "bool" + shape_to_string(t->shape())
                               : file->was_half ? "float16" + shape_to_string(t->shape())
                                                : t->desc().to_string();
      if (!(t->desc() == v.desc) || (file->was_bool && !takes_bool) ||
          (file->was_half && !takes_half))
        return Status::invalid_argument("input '" + v.name + "': " + file->path + " holds " + held +
                                        ", the model expects " + declared_desc(g, vid));
      out.source[v.name] = file->path;
      out.tensors.emplace_back(v.name, std::move(*t));
      continue;
    }
    // A declared shape can be far larger than memory (e.g. a --dim typo): say so, by name.
    try {
      out.tensors.emplace_back(v.name, models::random_tensor(v.desc, rng));
      if (listed(bools, v.name)) {
        Tensor& t = out.tensors.back().second;  // a BOOL input: float32 0/1
        for (int64_t k = 0; k < t.numel(); ++k)
          t.data_as<float>()[k] = t.data_as<float>()[k] > 0.0f ? 1.0f : 0.0f;
      }
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kOutOfMemory, "input '" + v.name + "' " + v.desc.to_string() +
                                                  " needs " +
                                                  human_bytes(static_cast<double>(v.desc.bytes())) +
                                                  ": cannot allocate it to generate random values");
    }
    out.generated.push_back(v.name);
    std::fprintf(stderr, "graphi: input '%s' not given: using seeded random %s (seed %llu)\n",
                 v.name.c_str(), declared_desc(g, vid).c_str(),
                 static_cast<unsigned long long>(seed));
  }
  return out;
}

Status with_input_hint(const Status& failure, const BoundInputs& inputs) {
  if (failure.is_ok() || inputs.generated.empty()) return failure;
  std::string names;
  for (const std::string& n : inputs.generated) names += (names.empty() ? "'" : ", '") + n + "'";
  return Status(failure.code(), failure.message() + " (input" +
                                    (inputs.generated.size() > 1 ? "s " : " ") + names +
                                    " held seeded random values; give real ones with --input "
                                    "NAME=FILE.npy)");
}

}  // namespace graphi::cli
