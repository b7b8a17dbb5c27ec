// Placement: which cores each executor's team runs on, and which cores the scheduler and the
// bootstrap executor get. A pure function of a Topology snapshot, so it is tested on synthetic
// machines; applying it (thread binding) is thread_binder.h's job.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/topology.h"
#include "graph/base.h"

namespace graphi::engine {

struct PlacementRequest {
  int executors = 1;  // n symmetric executors ...
  int threads = 1;    // ... of k team threads each; k counts cores (one hardware thread per core)
  // Give the scheduler / the bootstrap executor a core of their own when the machine has one to
  // spare (see place_executors); false = never reserve (the role runs inside the executors).
  bool reserve_scheduler = true;
  bool reserve_bootstrap = true;
};

struct ExecutorPlacement {
  std::vector<int> cores;  // core ids; team member i (omp_get_thread_num() == i) runs on cores[i]
  std::vector<int>
      pus;  // OS PU id member i binds to: the first allowed hardware thread of cores[i]
  std::vector<int> tiles;  // tiles it occupies, ascending
  int l3 = -1;       // the L3 group holding all its cores; -1 if it spans several or none exists
  int numa = -1;     // the NUMA node (OS id) holding all its cores; -1 likewise
  int package = -1;  // the package holding all its cores; -1 if it spans packages
};

struct ReservedCore {
  int core = -1;
  int pu = -1;  // the OS PU to bind to
  int tile = -1;
};

struct Placement {
  int executors = 0, threads = 0;
  std::vector<ExecutorPlacement> teams;  // one per executor
  // nullopt: no spare core, the scheduler role runs inside the executors (issue 3, small machines).
  std::optional<ReservedCore> scheduler;
  // nullopt: the bootstrap executor shares the scheduler's core if it has one, else its ops run
  // inside the executors.
  std::optional<ReservedCore> bootstrap;
  bool tiles_shared = false;       // some tile (L2) holds cores of two executors; see the rules
  int usable_cores = 0;            // cores with at least one allowed PU
  std::vector<std::string> notes;  // why something was not ideal: shared tiles, spans, no reserve

  // One line for logs: "2x1 on cores {0} {1}; scheduler inside the executors".
  std::string summary() const;
};

// Splits the machine into request.executors teams of request.threads cores.
//
// Rules, in order of strength:
//  1. Only cores with an allowed PU are used (Topology::allowed_pus: taskset, cgroups, batch
//     allocations), one hardware thread per core, and no core is given twice. If n*k exceeds the
//     usable cores the result is ONE error: "4 executors x 8 threads need 32 cores; this process
//     may use 2 (cpuset 0-1)".
//  2. Exclusive tiles: each executor takes ceil(k / tile size) tiles of its own, whole tiles first
//     (so k a multiple of the tile size means exactly whole tiles) and, for a remainder, the
//     smallest free tile that covers it; the unused cores of that tile stay idle (or host the
//     scheduler / bootstrap core), so no two executors share an L2.
//  3. Locality: an executor is placed in the smallest domain that can hold it with free tiles:
//     one L3 group within one NUMA node, else one NUMA node, else one package, else the whole
//     machine; among domains that fit, the one with the fewest free cores (best fit), then the
//     lowest id. A span is reported in notes.
//  4. Not enough tiles for rule 2 (e.g. 40 x 1 on 34 two-core tiles): the executors that found no
//     free tiles take free cores from untouched tiles first, then idle cores of other executors'
//     tiles; `tiles_shared` is set and a note says so. Never an error while rule 1 holds.
//  5. Reserved cores: with n*k + 1 <= usable cores the scheduler gets one core, with n*k + 2 also
//     the bootstrap executor: free cores in tiles no executor uses first, highest core id first
//     (the last usable cores), else idle cores of executors' tiles.
// Errors: kInvalidArgument for n < 1, k < 1 or a split that does not fit.
Result<Placement> place_executors(const Topology& topology, const PlacementRequest& request);

// JSON for `graphi topo --json` and the "config actually used" of `graphi run --json`: every id
// list in full (core, PU, tile ids as defined in topology.h) plus "cpuset"-style strings.
nlohmann::ordered_json topology_to_json(const Topology& topology);
nlohmann::ordered_json placement_to_json(const Placement& placement);

}  // namespace graphi::engine
