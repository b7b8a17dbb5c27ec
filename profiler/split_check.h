// Is the analytical split the faster one here? `--plan auto` without a cached plan chooses from
// the cost model (profiler/plan_choice.h), which predicts op costs and team speed-ups but not
// what a fork/join or a hand-off between cores costs on this machine right now: on the 2-vCPU
// Zen 5 guest the PathNet layer at batch 1 (a chain of ops of a few microseconds) ran 0.043 ms on
// a team of two and 0.063 on one core while the host kept the vCPUs near (~100 ns cache-line
// round trip), but 0.070 against 0.063 while it kept them far (~500 ns). So when a model runs
// briefly (its run is cheap to measure and per-op overheads weigh most), the front ends time the
// analytical choice against its contender (analytical_choice: the best config on the other side
// of its decision) once at load, interleaved on zero inputs, and keep the contender when it is
// >= 5% faster. The verdict is remembered per graph, machine, pair and exchange class of the
// cores (ops/rnn/team_exchange.h) in split_check.json of the cache directory (ops/choice_cache.h);
// choose_plan reads it back.
//
// GRAPHI_SPLIT_CHECK: "auto" (default: as above) or "off" (the analytical choice as it is).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/session.h"
#include "graph/graph.h"
#include "profiler/config_space.h"
#include "profiler/plan_choice.h"

namespace graphi::profiler {

// Whether the check runs (GRAPHI_SPLIT_CHECK); an unknown value is an error naming it.
Result<bool> split_check_enabled();

// The cache key of the pair for graph `graph_hash` on the machine `topology`
// (topology_signature), with the exchange class of this process's cores when the pair has a
// team or executors of two or more.
std::string split_check_key(const std::string& graph_hash, const std::string& topology,
                            const Config& chosen, const Config& contender);

// The remembered winner of the pair `key` names: true for the contender, false for the
// analytical choice, nullopt when not measured (or the entry is malformed: a warning).
std::optional<bool> cached_split_check(const std::string& key);

// What the front ends call after compiling `session` from `choice` with `options`: when `choice`
// is an analytical choice with a contender (and the check is on), measures the two and, if the
// contender wins, replaces `session` and the split in `options` (and `choice.options`) with the
// contender's. Skipped, with nothing remembered, for a model predicted or measured to run longer
// than 50 ms (the split's per-op overheads do not decide there, the cost model does). Under a
// memory budget (options.max_memory) the contender gets what the first Session's arena leaves.
// Anything
// failing on the way (the contender does not compile, a run on zero inputs fails) keeps the
// analytical choice (remembered): the load never fails because of the check. *message gets one
// line for stderr about a measurement ("" when none was made).
void check_split(const std::shared_ptr<const graph::Graph>& g, PlanChoice& choice,
                 engine::SessionOptions& options, std::unique_ptr<engine::Session>& session,
                 std::string* message);

}  // namespace graphi::profiler
