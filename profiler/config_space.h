// ConfigSpace: the symmetric executor x thread splits the profiler chooses from (seed 002
// section 4.2: "1 executor with 64 threads, or 2 executors with 32 threads each, ... up to 64
// executors with 1 thread each"). A pure function of a Topology, so it works on synthetic hwloc
// machines (a 68-core Xeon Phi) without running anything; every split is checked with
// engine::place_executors, which also decides which of them get a scheduler / bootstrap core.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "engine/placement.h"
#include "engine/topology.h"

namespace graphi::profiler {

struct Config {
  int executors = 1;
  int threads = 1;
  // "sequential" for one executor (the reference executor: nothing to schedule), "cpf" else.
  std::string scheduler = "sequential";
  // What the placement gives this split (place_executors' rule 5): a core of its own for the
  // scheduler role / the bootstrap executor, or none (the role runs inside the executors).
  bool scheduler_core = false;
  bool bootstrap_core = false;
  int cores() const { return executors * threads; }
  std::string name() const;  // "2x1 cpf"
};

// The scheduler a split runs with: cpf for n > 1, sequential for n = 1.
std::string default_scheduler(int executors);

struct ConfigSpace {
  std::vector<Config> configs;  // ascending by executors, then threads
  int usable_cores = 0;
  int tile_size = 1;     // cores per tile among the usable ones (team sizes are multiples of it)
  std::string topology;  // Topology::summary()
};

// The maximal symmetric splits of the usable cores: for each core budget B in {u, u-1, u-2}
// (all cores; one left for the scheduler; two for the scheduler and the bootstrap executor),
// every n x k with k a multiple of the tile size, n*k <= B, that is not dominated (neither
// (n+1) x k nor n x (k + tile) fits B). Tile size = the most common number of usable cores in a
// tile (1 without shared L2s); when fewer cores than one tile are usable, any k. Each split is
// placed with engine::place_executors; one that does not place, or that would make two
// executors share a tile, is left out. On a 2-core machine without shared L2s: 1x1, 1x2, 2x1.
ConfigSpace enumerate_configs(const engine::Topology& topology);

// The profiler's candidates when it also chooses the scheduling policy: every multi-executor
// config once per scheduler in `policies` (in that order, right after each other), a single
// executor once (sequential: nothing to schedule). Empty `policies`: the configs as given.
std::vector<Config> with_policies(std::span<const Config> configs,
                                  std::span<const std::string> policies);

}  // namespace graphi::profiler
