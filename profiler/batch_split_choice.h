// Whole batch or slices? For a model whose inputs carry a batch of N > 1 samples, the front
// ends (graphi run, the C/C++ API, graphi.Session) can run it as N slices of one sample
// (engine/batch_slices.h) when graph/batch_split.h says the samples stay apart. Which is faster
// depends on the model and the machine: measured on the 2-vCPU Zen 5 guest (graphi run, ms per
// batch of 8), U-Net-like 13.0 whole / 11.0 in slices, ShuffleNetV2-like 15.6 / 10.0,
// inception block 3.6 / 3.2, but GoogleNet 14.7 / 18.4 and ResNet-18 43.8 / 46.1. So it is
// measured once per model, split, machine and exchange class of the cores (near / far,
// ops/rnn/team_exchange.h: a VM's host moves its vCPUs), and remembered in batch_split.json of
// the cache directory (ops/choice_cache.h).
//
// GRAPHI_BATCH_SPLIT: "auto" (default: as above), "off" (never), "on" (slices wherever the
// check passes, no measurement).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/batch_slices.h"
#include "engine/session.h"
#include "graph/base.h"
#include "graph/onnx/onnx_import.h"
#include "profiler/plan_choice.h"

namespace graphi::profiler {

enum class BatchSplitPolicy { kAuto, kOff, kOn };

// `value` ("auto", "off", "on"; "" = GRAPHI_BATCH_SPLIT, else auto); an unknown value is an
// error naming it.
Result<BatchSplitPolicy> parse_batch_split(const std::string& value);

struct BatchSplitVerdict {
  bool slices = false;
  double batch_ms = 0, slices_ms = 0;  // measured (0 when cached or forced)
  std::string source;                  // "measured", "disturbed", "cached" or "forced"
  // "batch 8 in slices of 1: 11.0 ms against 13.0 as one batch (measured)", for the plan line.
  std::string message;
};

// The verdict cached for `key` (a graph content hash plus the split), if any.
std::optional<BatchSplitVerdict> cached_batch_split(const std::string& key);

// Times run_batch and run_slices (each runs the whole batch once) interleaved on the caller's
// data: one warm-up each, then rounds until each has 3 runs and 200 ms have passed (at most 15
// rounds), medians; slices win when >= 5% faster. Stores the verdict under `key`, unless other
// processes held more than 15% of the CPUs during the rounds (/proc/stat): then the batch stays
// whole and nothing is stored ("disturbed"). A batch whose first run takes over a second stays
// whole without measuring the slices (stored). A run that fails ends the measurement with its
// error.
Result<BatchSplitVerdict> measure_batch_split(const std::string& key, int64_t batch, int64_t slice,
                                              const std::function<Status()>& run_batch,
                                              const std::function<Status()>& run_slices);

// What the front ends call after compiling the whole batch's Session `whole` (options
// `session_options`, split from `plan`) for the .onnx model `path`, imported with `import` as
// `imported` (before the passes; `optimize`: whether the passes run). The slices get their own
// split from `plan` (one sample may prefer another; a quick choice checked by split_check.h as
// the whole batch's is), the rest of `session_options`. Returns the
// slices to run instead, or null to keep the whole batch: when the policy is off, the model is no
// .onnx file, its inputs do not all carry one batch N > 1 on dim 0, the cache says whole, the
// samples do not stay apart (graph/batch_split.h; remembered as whole), or the measurement (on zero
// inputs) says so. *message (if given) receives one line for stderr about a measured or forced
// choice ("" when nothing was decided here). Anything that fails on the way (the import for one
// sample, its passes, plan or compilation, a run on zero inputs) keeps the batch whole
// (remembered under auto, said under on): the load never fails because of the split.
Result<std::unique_ptr<engine::BatchSlices>> batch_in_slices(
    const std::string& path, graph::ImportOptions import, bool optimize, BatchSplitPolicy policy,
    const std::shared_ptr<const graph::Graph>& imported, const PlanRequest& plan,
    const engine::SessionOptions& session_options, engine::Session& whole, std::string* message);

}  // namespace graphi::profiler
