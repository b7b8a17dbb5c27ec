// The default configuration of a Session (`--plan auto`): what `graphi run`, the C/C++ API
// and graphi.Session use when the caller does not give executors x threads.
//
//   auto      a cached plan of this graph on this machine (plan_cache.h) when one matches, else
//             a quick analytical choice from the graph and the topology (cost_model.h; a chain
//             gets one executor with all cores), which for a brief model the front ends then
//             time once against its contender (split_check.h: the remembered verdict is read
//             here);
//   none      today's behaviour before the profiler: 1x1 sequential (`--no-plan`);
//   FILE      a plan file saved by `graphi profile --plan-out` (its key must match this graph
//             and machine, else an error says which field differs);
// Explicit executors / threads override the plan's split (the other defaults to 1).
#pragma once

#include <optional>
#include <string>

#include "engine/session.h"
#include "graph/graph.h"
#include "profiler/config_space.h"

namespace graphi::profiler {

struct PlanRequest {
  std::string plan = "auto";              // "auto", "none" or a plan file
  std::optional<int> executors, threads;  // explicit split (overrides the plan)
  std::string scheduler;                  // explicit scheduler; "" = cpf for n > 1, else sequential
  std::string cpuset;                     // restricts the cores considered (SessionOptions::cpuset)
  bool pin = true;
};

struct PlanChoice {
  engine::SessionOptions options;  // executors, threads, scheduler, cpuset, pin, node_costs
  // "cache", "file", "analytical", "flags" or "none".
  std::string source;
  // One line for stderr, e.g. "graphi: plan from cache FILE: 2x1 cpf" or "graphi: plan auto:
  // 1x2 sequential (the graph is a chain (width 1): one executor with all 2 cores; no cached
  // plan: `graphi profile MODEL` measures)". Empty for "flags" and "none".
  std::string message;
  // Source "analytical": the config on the other side of the model's decision, which
  // check_split (split_check.h) may measure against the choice, the choice's predicted run (ms)
  // and the key the verdict is remembered under. No contender once a verdict is remembered.
  std::optional<Config> contender;
  double predicted_ms = 0;
  std::string check_key;
};

// Errors: an unreadable or mismatching plan FILE (naming it and the field), a graph with an
// unknown op type, a topology that cannot be loaded (with a cpuset).
Result<PlanChoice> choose_plan(const graph::Graph& g, const PlanRequest& request);

}  // namespace graphi::profiler
