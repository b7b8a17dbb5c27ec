// Session: the engine's run API. Owns a compiled Plan (kernels, memory plan) and runs it.
// Front ends (CLI, C API, Python) and the profiler use this; it knows nothing of files.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace graphi::engine {

class Plan;

struct SessionOptions {
  int executors = 1;                     // n executors ...
  int threads = 1;                       // ... x k threads each
  std::string scheduler = "sequential";  // sequential (the reference executor); more in later work
  int ring_capacity = 1;
  bool pin = true;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Session {
 public:
  // Compiles `graph` (kernel selection, weight packing, memory plan). Errors name the node.
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const graph::Graph> graph,
                                                 const SessionOptions& options = {});
  // Runs an already compiled Plan (e.g. several Sessions serving in parallel share one Plan and
  // its packed weights without copying them). options.threads must equal plan->team_size().
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Plan> plan,
                                                 const SessionOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the graph once. `inputs` holds one tensor per graph input, by name, in any order; a
  // missing, unknown or duplicated name, or a wrong dtype or shape, is an error that names the
  // input and both shapes. The caller's tensors are only read. Returns the graph outputs in
  // the graph's output order. Thread-safe: concurrent calls are serialized.
  Result<NamedTensors> run(const NamedTensors& inputs);

  const graph::Graph& graph() const;
  const Plan& plan() const;
  std::shared_ptr<const Plan> shared_plan() const;
  const SessionOptions& options() const;

 private:
  Session();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphi::engine
