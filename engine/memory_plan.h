// Memory planning: where every value of a Graph lives during a run. Intermediates share one
// arena (64-byte aligned offsets) and reuse each other's bytes once their lifetimes have ended;
// graph inputs are the caller's buffers (read-only, zero copy); constants are the graph's data.
// Knows the Graph only (no kernels), so it can be tested on synthetic DAGs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace graphi::engine {

inline constexpr size_t kArenaAlignment = 64;

// Which execution orders a plan must be correct for.
enum class ReuseMode : uint8_t {
  // No reuse: every intermediate has bytes of its own (peak == total). For debugging.
  kNone,
  // Reuse valid only when nodes run one at a time in the Graph's node order (0, 1, ..., n-1):
  // a buffer is reused once its last consumer in that order has run.
  kSequential,
  // Reuse valid for ANY execution order that respects dependencies, including parallel ones
  // (issue 3's executors): value w may take bytes of value u only if w's producer transitively
  // depends on every consumer of u (on u's producer when u has no consumer). Then in every valid
  // schedule all reads of u finish before w is written. Graph outputs are never reused.
  kDependencySafe,
};

const char* reuse_mode_name(ReuseMode m);  // "none", "sequential", "dependency-safe"

// Where a value lives.
enum class Storage : uint8_t {
  kCallerInput,  // a graph input: the caller's tensor, bound per run, never written
  kConstant,     // Value::data of the graph, never written
  kArena,        // arena + offset[v]
};

// The result of plan_memory(). Arrays are indexed by ValueId.
struct MemoryPlan {
  ReuseMode mode = ReuseMode::kDependencySafe;
  std::vector<Storage> storage;
  std::vector<size_t> offset;  // byte offset into the arena (kArena only; 0 otherwise)
  std::vector<size_t>
      size;  // bytes reserved in the arena: desc.bytes() rounded up to 64 (kArena only)
  size_t peak_bytes = 0;   // arena size with reuse
  size_t total_bytes = 0;  // arena size without reuse (sum of size[])
  // kDependencySafe only: true when every reuse decision used exact reachability; false when
  // the ancestor sets outgrew the budget and some decisions fell back to the conservative rule
  // "reuse only by a node that directly reads an output of every consumer of the old value"
  // (safe, but reuses less).
  bool exact_reachability = true;
  // Values that share the bytes of another arena value instead of bytes of their own: the output
  // of a Reshape or Identity (a byte-for-byte copy) of an arena value. alias_of[w] is the value
  // whose bytes w takes (offset[w] == offset[alias_of[w]]; not counted in total_bytes); kNoId for
  // every other value. Not in ReuseMode::kNone (every value then has bytes of its own).
  std::vector<graph::ValueId> alias_of;
  // Concat groups: the inputs of a Concat along an axis whose outer dims are all 1 live inside
  // its output (alias_of[input] = the output, or the output of the Concat that in turn reads that
  // one), at byte offset alias_offset[input] from it (0 for Reshape aliases); their producers
  // write there and the Concat's kernel copies nothing.
  std::vector<size_t> alias_offset;
  // Outputs of element-wise ops written over the bytes of an input that dies at them (see
  // plan_memory).
  size_t in_place_outputs = 0;
};

// Memory allowed for the ancestor bitsets of the dependency-safe mode. Sets are built in node
// order and freed once all successors of a node are planned, so only the "frontier" is held:
// a chain-like graph (an unrolled RNN) of 100k nodes needs a few MiB.
inline constexpr size_t kDefaultReachabilityBudgetBytes = size_t{64} << 20;

// Aliases: the output w of a Reshape or Identity whose input u is an arena value of the same
// size shares u's bytes (the copy kernel then has nothing to do), unless an op that writes its
// input in place (the optimizers, the batch-norm statistics update) reads a value of that group.
// The group (u and every value that aliases it, transitively) is planned as one value: its uses
// are the uses of all members and it is a graph output when any member is.
// Concat groups likewise (MemoryPlan::alias_offset; not for inputs in a Reshape group or read by
// an in-place writer, and only at offsets that are multiples of kArenaAlignment): the group is
// placed when its first member is produced, over reusable bytes in the sequential mode, over
// fresh ones in the dependency-safe mode (its members' producers may then run in any order).
//
// In place: the output of an element-wise op (Relu, Sigmoid, Clip, Add, Mul, ...; float32) takes
// the bytes of a same-size input whose last use it is (in node order; in the dependency-safe
// mode every other use of it precedes the op), never a caller's input, a graph output or a value
// in an alias group: the kernels read element i before writing it.
//
// copies_nothing(g, m, n): node n is a Reshape / Identity or a Concat whose output already holds
// its inputs' bytes under this plan, so its kernel skips the copy.
//
// Plans the arena for `g` in node order. Graph outputs stay live until the run ends, so they
// are intact when the run returns; an intermediate nobody consumes still gets bytes (its
// producer writes it) and is free right after its producer. Best fit over the free ranges.
// Deterministic; never fails for a validated Graph.
MemoryPlan plan_memory(const graph::Graph& g, ReuseMode mode = ReuseMode::kDependencySafe,
                       size_t reachability_budget_bytes = kDefaultReachabilityBudgetBytes);
bool copies_nothing(const graph::Graph& g, const MemoryPlan& m, graph::NodeId n);

}  // namespace graphi::engine
