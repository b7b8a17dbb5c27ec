// The stages after a successful load, shared by the fuzz targets: the default pass pipeline
// (engine::optimize_graph, what `graphi run` applies), Plan compilation, and for tiny plans a run
// on the sequential reference executor with deterministic inputs. A graph that validated must
// get through the passes (a pass that breaks a valid graph refuses a valid model: a finding);
// compile and run may refuse it (kernel limits), but only with an error that names the source.
#pragma once

#include <memory>
#include <string>

#include "engine/model_loader.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "tests/fuzz/fuzz_check.h"

namespace graphi::fuzz {

// Limits that keep one execution fast (libFuzzer wants thousands per second) and small: plans
// above them are compiled but not run.
inline constexpr size_t kMaxRunBytes = size_t{4} << 20;  // arena + inputs + scratch
inline constexpr size_t kMaxRunNodes = 64;
inline constexpr int64_t kMaxRunWork = int64_t{1} << 24;  // summed output elements

// Deterministic, small, non-trivial values: floats in [-1, 1], integers in {0, 1, 2} (integer
// inputs are often indices or shapes).
inline void fill_pattern(Tensor& t, uint32_t seed) {
  const size_t n = static_cast<size_t>(t.numel());
  for (size_t k = 0; k < n; ++k) {
    const uint32_t h = (static_cast<uint32_t>(k) + seed) * 2654435761u;
    switch (t.dtype()) {
      case DType::kF32:
        t.data_as<float>()[k] = static_cast<float>(h % 2001) / 1000.0f - 1.0f;
        break;
      case DType::kI32:
        t.data_as<int32_t>()[k] = static_cast<int32_t>(h % 3);
        break;
      default:
        t.data_as<int64_t>()[k] = static_cast<int64_t>(h % 3);
        break;
    }
  }
}

inline void optimize_compile_run(const std::shared_ptr<const graph::Graph>& g,
                                 const std::string& source, bool run) {
  Result<engine::OptimizedGraph> opt = engine::optimize_graph(g);
  if (!opt.is_ok()) finding("the pass pipeline failed on a valid graph: " + opt.status().message());
  Result<engine::Plan> plan = engine::compile(opt->graph, 1);
  check_error(plan.status(), source, "compile");
  if (!plan.is_ok() || !run) return;
  const graph::Graph& og = *opt->graph;
  size_t bytes = plan->memory().peak_bytes + plan->scratch_bytes();
  int64_t work = 0;
  for (graph::ValueId v : og.inputs()) bytes += og.value(v).desc.bytes();
  for (const graph::Value& v : og.values()) work += v.desc.numel();
  if (bytes > kMaxRunBytes || plan->num_nodes() > kMaxRunNodes || work > kMaxRunWork) return;
  engine::SessionOptions so;
  so.scheduler = "sequential";
  so.pin = false;
  auto shared = std::make_shared<const engine::Plan>(std::move(*plan));
  Result<std::unique_ptr<engine::Session>> s = engine::Session::create(shared, so);
  check_error(s.status(), source, "session");
  if (!s.is_ok()) return;
  engine::NamedTensors inputs;
  uint32_t seed = 1;
  for (graph::ValueId v : og.inputs()) {
    Tensor t(og.value(v).desc);
    fill_pattern(t, seed++);
    inputs.emplace_back(og.value(v).name, std::move(t));
  }
  Result<engine::NamedTensors> out = (*s)->run(inputs);
  check_error(out.status(), source, "run");
}

}  // namespace graphi::fuzz
