// enumerate_configs: see config_space.h for the rules.
#include "profiler/config_space.h"

#include <algorithm>
#include <map>
#include <set>

namespace graphi::profiler {

std::string default_scheduler(int executors) { return executors > 1 ? "cpf" : "sequential"; }

std::string Config::name() const {
  return std::to_string(executors) + "x" + std::to_string(threads) + " " + scheduler;
}

namespace {

// The most common number of usable cores per tile (ties: the larger).
int usable_tile_size(const engine::Topology& topo) {
  std::map<int, int> per_tile;  // tile -> usable cores
  for (int c : topo.usable_cores()) ++per_tile[topo.core(c).tile];
  std::map<int, int> histogram;  // size -> tiles
  for (const auto& [tile, n] : per_tile) ++histogram[n];
  int best = 1, best_count = 0;
  for (const auto& [size, count] : histogram)
    if (count >= best_count) best = size, best_count = count;
  return best;
}

}  // namespace

ConfigSpace enumerate_configs(const engine::Topology& topo) {
  ConfigSpace space;
  space.usable_cores = static_cast<int>(topo.usable_cores().size());
  space.topology = topo.summary();
  const int u = space.usable_cores;
  int tile = usable_tile_size(topo);
  if (tile > u) tile = 1;  // fewer cores than a tile: any team size
  space.tile_size = tile;

  std::set<std::pair<int, int>> splits;
  for (int budget = u; budget >= std::max(1, u - 2); --budget) {
    for (int k = tile; k <= budget; k += tile) {
      const int n = budget / k;
      if (n < 1) continue;
      // Dominated: a larger team fits beside the same number of executors.
      if (n * (k + tile) <= budget) continue;
      splits.insert({n, k});
    }
  }
  for (const auto& [n, k] : splits) {
    engine::PlacementRequest req;
    req.executors = n;
    req.threads = k;
    Result<engine::Placement> p = engine::place_executors(topo, req);
    if (!p.is_ok() || p->tiles_shared) continue;
    Config c;
    c.executors = n;
    c.threads = k;
    c.scheduler = default_scheduler(n);
    c.scheduler_core = p->scheduler.has_value();
    c.bootstrap_core = p->bootstrap.has_value();
    space.configs.push_back(c);
  }
  return space;
}

std::vector<Config> with_policies(std::span<const Config> configs,
                                  std::span<const std::string> policies) {
  std::vector<Config> out;
  for (const Config& c : configs) {
    if (c.executors <= 1 || policies.empty()) {
      out.push_back(c);
      continue;
    }
    for (const std::string& p : policies) {
      Config v = c;
      v.scheduler = p;
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace graphi::profiler
