// Runs a batch as slices: a Session compiled for M samples runs N / M times, each time on the
// next M samples of every input (dim 0), and the slices' outputs are stacked along dim 0. The
// graphs must pass graph/batch_split.h's check (the caller's job); then the outputs equal the
// whole batch's. Chosen by measurement where it is faster (profiler/batch_split_choice.h): a
// CNN whose batch of activations overflows the caches runs each slice in them.
//
// The slices read the caller's inputs in place and write straight into the batch's outputs
// (Session::run_buffers): no copies beyond the one every run makes of its outputs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/session.h"
#include "engine/trace.h"
#include "graph/graph.h"

namespace graphi::engine {

class BatchSlices {
 public:
  // `full`: the graph compiled for the whole batch (its inputs and outputs name the shapes
  // run() takes and returns; only their names and descs are kept, not its weights);
  // `slice_session` runs the graph imported for `slice` samples.
  static Result<std::unique_ptr<BatchSlices>> create(const graph::Graph& full,
                                                     std::unique_ptr<Session> slice_session,
                                                     int64_t batch, int64_t slice);

  // As Session::run on the whole batch: inputs by name (any order; a missing, unknown or
  // duplicated name, or a wrong dtype or shape, is an error naming the input and both shapes);
  // outputs in the full graph's order. Thread-safe as Session::run (slices of concurrent calls
  // may interleave; each call's outputs are its own).
  Result<NamedTensors> run(const NamedTensors& inputs);

  // Tracing of the slices' runs (Session::set_tracing), and the last run's trace: the spans of
  // all its slices, one after the other on the slice Session's executors (with concurrent
  // traced runs, the last to finish). Empty (run_end_ns 0) before a traced run.
  void set_tracing(bool on);
  RunTrace last_trace() const;

  Session& session() { return *session_; }
  const Session& session() const { return *session_; }
  int64_t batch() const { return batch_; }
  int64_t slice() const { return slice_; }

 private:
  BatchSlices() = default;
  // The whole batch's inputs and outputs, in the graph's order.
  std::vector<std::pair<std::string, TensorDesc>> inputs_, outputs_;
  std::string source_;  // the whole graph's file, the first word of input errors
  std::unique_ptr<Session> session_;
  int64_t batch_ = 0, slice_ = 0;
  std::atomic<bool> tracing_{false};
  mutable std::mutex trace_mutex_;
  RunTrace last_trace_;
};

}  // namespace graphi::engine
