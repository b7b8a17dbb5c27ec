// place_executors: the rules are stated in placement.h; this file only implements them.
#include "engine/placement.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace graphi::engine {

namespace {

constexpr int kFree = -1;

// Domain keys of one tile, from the finest (L3 group within a NUMA node) to the whole machine.
using DomainKey = std::tuple<int, int, int>;  // (package, numa, l3); -2 = "any"
constexpr int kLevels = 4;

DomainKey domain_of(const CoreInfo& c, int level) {
  switch (level) {
    case 0:
      return {c.package, c.numa, c.l3};
    case 1:
      return {c.package, c.numa, -2};
    case 2:
      return {c.package, -2, -2};
    default:
      return {-2, -2, -2};
  }
}

struct State {
  const Topology& topo;
  std::vector<int> owner;  // per core: executor index, kFree, or unusable (-2)
  std::vector<std::vector<int>> free_cores_of_tile;  // usable free cores per tile
  std::vector<bool> tile_touched;  // an executor uses at least one core of the tile

  explicit State(const Topology& t)
      : topo(t),
        owner(t.cores().size(), -2),
        free_cores_of_tile(t.tiles().size()),
        tile_touched(t.tiles().size(), false) {
    for (const CoreInfo& c : t.cores()) {
      if (!c.usable()) continue;
      owner[static_cast<size_t>(c.id)] = kFree;
      free_cores_of_tile[static_cast<size_t>(c.tile)].push_back(c.id);
    }
  }
  bool tile_free(int tile) const {
    return !tile_touched[static_cast<size_t>(tile)] &&
           !free_cores_of_tile[static_cast<size_t>(tile)].empty();
  }
  void take(int core, int executor) {
    owner[static_cast<size_t>(core)] = executor;
    int tile = topo.core(core).tile;
    tile_touched[static_cast<size_t>(tile)] = true;
    auto& v = free_cores_of_tile[static_cast<size_t>(tile)];
    v.erase(std::find(v.begin(), v.end(), core));
  }
};

// Rule 2 + 3: k cores from whole free tiles of one domain, or nullopt.
std::optional<std::vector<int>> exclusive_tiles(const State& st, int k) {
  const Topology& topo = st.topo;
  for (int level = 0; level < kLevels; ++level) {
    std::map<DomainKey, std::vector<int>> free_tiles;  // tiles ascending within a domain
    for (const CoreGroup& tile : topo.tiles()) {
      if (!st.tile_free(tile.id)) continue;
      free_tiles[domain_of(topo.core(tile.cores.front()), level)].push_back(tile.id);
    }
    const std::vector<int>* best = nullptr;
    size_t best_capacity = SIZE_MAX;
    for (const auto& [key, tiles] : free_tiles) {
      size_t capacity = 0;
      for (int t : tiles) capacity += st.free_cores_of_tile[static_cast<size_t>(t)].size();
      if (capacity >= static_cast<size_t>(k) && capacity < best_capacity) {
        best = &tiles;
        best_capacity = capacity;
      }
    }
    if (!best) continue;
    std::vector<int> avail = *best, cores;
    size_t need = static_cast<size_t>(k);
    while (need > 0) {
      auto size_of = [&](int t) { return st.free_cores_of_tile[static_cast<size_t>(t)].size(); };
      // Whole tiles first, in id order; for the remainder the smallest tile that covers it.
      auto it = std::find_if(avail.begin(), avail.end(), [&](int t) { return size_of(t) <= need; });
      if (it == avail.end()) {
        it = std::min_element(avail.begin(), avail.end(),
                              [&](int a, int b) { return size_of(a) < size_of(b); });
      }
      const auto& tile_cores = st.free_cores_of_tile[static_cast<size_t>(*it)];
      for (size_t i = 0; i < tile_cores.size() && need > 0; ++i, --need)
        cores.push_back(tile_cores[i]);
      avail.erase(it);
    }
    return cores;
  }
  return std::nullopt;
}

// Rule 4: k free cores, untouched tiles first, then idle cores in other executors' tiles.
std::vector<int> shared_cores(const State& st, int k) {
  std::vector<int> free;
  for (const CoreInfo& c : st.topo.cores())
    if (st.owner[static_cast<size_t>(c.id)] == kFree) free.push_back(c.id);
  std::stable_sort(free.begin(), free.end(), [&](int a, int b) {
    return !st.tile_touched[static_cast<size_t>(st.topo.core(a).tile)] &&
           st.tile_touched[static_cast<size_t>(st.topo.core(b).tile)];
  });
  free.resize(static_cast<size_t>(k));
  std::sort(free.begin(), free.end());
  return free;
}

std::string group_text(const std::vector<int>& ids) { return "{" + format_cpu_list(ids) + "}"; }

}  // namespace

Result<Placement> place_executors(const Topology& topo, const PlacementRequest& req) {
  if (req.executors < 1 || req.threads < 1) {
    return Status::invalid_argument("placement needs at least 1 executor x 1 thread, got " +
                                    std::to_string(req.executors) + " x " +
                                    std::to_string(req.threads));
  }
  const std::vector<int> usable = topo.usable_cores();
  const int64_t n = req.executors, k = req.threads, need = n * k;
  const int64_t u = static_cast<int64_t>(usable.size());
  if (need > u) {
    std::string msg = std::to_string(n) + (n == 1 ? " executor x " : " executors x ") +
                      std::to_string(k) + (k == 1 ? " thread need " : " threads need ") +
                      std::to_string(need) + " cores; this process may use " + std::to_string(u) +
                      " (cpuset " + format_cpu_list(topo.allowed_pus()) + ")";
    if (u < static_cast<int64_t>(topo.cores().size()))
      msg += " of the machine's " + std::to_string(topo.cores().size()) + " cores";
    if (topo.threads_per_core() > 1 && need <= static_cast<int64_t>(topo.allowed_pus().size()))
      msg += "; threads count cores, not hardware threads (" +
             std::to_string(topo.threads_per_core()) + " per core here)";
    return Status::invalid_argument(msg);
  }

  State st(topo);
  Placement p;
  p.executors = req.executors;
  p.threads = req.threads;
  p.usable_cores = static_cast<int>(u);
  p.teams.resize(static_cast<size_t>(n));
  std::vector<int> without_tiles;  // executors placed by rule 4
  for (int e = 0; e < n; ++e) {
    std::optional<std::vector<int>> cores = exclusive_tiles(st, req.threads);
    if (!cores) continue;
    for (int c : *cores) st.take(c, e);
    p.teams[static_cast<size_t>(e)].cores = std::move(*cores);
  }
  for (int e = 0; e < n; ++e) {
    ExecutorPlacement& team = p.teams[static_cast<size_t>(e)];
    if (!team.cores.empty()) continue;
    without_tiles.push_back(e);
    team.cores = shared_cores(st, req.threads);
    for (int c : team.cores) st.take(c, e);
  }

  // Describe each team and check which tiles are shared.
  std::map<int, std::set<int>> executors_of_tile;
  for (int e = 0; e < n; ++e) {
    ExecutorPlacement& team = p.teams[static_cast<size_t>(e)];
    std::set<int> tiles, l3s, numas, packages;
    for (int c : team.cores) {
      const CoreInfo& core = topo.core(c);
      team.pus.push_back(core.allowed_pus.front());
      tiles.insert(core.tile);
      l3s.insert(core.l3);
      numas.insert(core.numa);
      packages.insert(core.package);
      executors_of_tile[core.tile].insert(e);
    }
    team.tiles.assign(tiles.begin(), tiles.end());
    team.l3 = l3s.size() == 1 ? *l3s.begin() : -1;
    team.numa = numas.size() == 1 ? *numas.begin() : -1;
    team.package = packages.size() == 1 ? *packages.begin() : -1;
    if (l3s.size() > 1 && !topo.l3_groups().empty()) {
      p.notes.push_back("executor " + std::to_string(e) + " spans L3 groups " +
                        format_cpu_list(std::vector<int>(l3s.begin(), l3s.end())) +
                        " (no single L3 group had " + std::to_string(k) + " free cores)");
    } else if (numas.size() > 1) {
      p.notes.push_back("executor " + std::to_string(e) + " spans NUMA nodes " +
                        format_cpu_list(std::vector<int>(numas.begin(), numas.end())));
    }
  }
  std::vector<int> shared;
  for (const auto& [tile, owners] : executors_of_tile)
    if (owners.size() > 1) shared.push_back(tile);
  if (!shared.empty()) {
    p.tiles_shared = true;
    p.notes.push_back("not enough free tiles for exclusive L2s (" +
                      std::to_string(topo.tiles().size()) + " tiles): executors " +
                      format_cpu_list(without_tiles) + " share tiles " + format_cpu_list(shared) +
                      " with other executors");
  }

  // Rule 5: reserved cores, untouched tiles first, last usable cores first.
  std::vector<int> spare;
  for (auto it = usable.rbegin(); it != usable.rend(); ++it)
    if (st.owner[static_cast<size_t>(*it)] == kFree) spare.push_back(*it);
  std::stable_sort(spare.begin(), spare.end(), [&](int a, int b) {
    return !st.tile_touched[static_cast<size_t>(topo.core(a).tile)] &&
           st.tile_touched[static_cast<size_t>(topo.core(b).tile)];
  });
  size_t next_spare = 0;
  auto reserve = [&]() {
    const CoreInfo& c = topo.core(spare[next_spare++]);
    return ReservedCore{c.id, c.allowed_pus.front(), c.tile};
  };
  const std::string split = std::to_string(n) + "x" + std::to_string(k);
  if (!req.reserve_scheduler) {
    p.notes.push_back("no scheduler core requested: the scheduler role runs inside the executors");
  } else if (need + 1 <= u) {
    p.scheduler = reserve();
  } else {
    p.notes.push_back("no spare core (" + split + " uses all " + std::to_string(u) +
                      " usable cores): the scheduler role runs inside the executors");
  }
  if (req.reserve_bootstrap && need + (p.scheduler ? 1 : 0) + 1 <= u) {
    p.bootstrap = reserve();
  } else {
    std::string why = req.reserve_bootstrap ? "no spare core for the bootstrap executor"
                                            : "no bootstrap core requested";
    p.notes.push_back(why + (p.scheduler ? ": it shares the scheduler's core"
                                         : ": bootstrap ops run inside the executors"));
  }
  return p;
}

std::string Placement::summary() const {
  std::string s = std::to_string(executors) + "x" + std::to_string(threads) + " on cores";
  for (const ExecutorPlacement& t : teams) s += " " + group_text(t.cores);
  s += scheduler ? "; scheduler core " + std::to_string(scheduler->core)
                 : std::string("; scheduler inside the executors");
  if (bootstrap) s += "; bootstrap core " + std::to_string(bootstrap->core);
  if (tiles_shared) s += "; tiles shared";
  return s;
}

nlohmann::ordered_json topology_to_json(const Topology& t) {
  using J = nlohmann::ordered_json;
  auto groups = [](const std::vector<CoreGroup>& gs, const char* bytes_key) {
    J out = J::array();
    for (const CoreGroup& g : gs) {
      J one{{"id", g.id}};
      if (bytes_key) one[bytes_key] = g.bytes;  // 0 = not reported
      one["cores"] = g.cores;
      out.push_back(std::move(one));
    }
    return out;
  };
  J cores = J::array();
  for (const CoreInfo& c : t.cores()) {
    cores.push_back({{"id", c.id},
                     {"pus", c.pus},
                     {"allowed_pus", c.allowed_pus},
                     {"tile", c.tile},
                     {"l3", c.l3},
                     {"numa", c.numa},
                     {"package", c.package}});
  }
  return J{{"source", t.source()},
           {"this_system", t.is_this_system()},
           {"summary", t.summary()},
           {"threads_per_core", t.threads_per_core()},
           {"num_pus", t.num_pus()},
           {"allowed_cpuset", format_cpu_list(t.allowed_pus())},
           {"usable_cores", t.usable_cores()},
           {"packages", groups(t.packages(), nullptr)},
           {"numa_nodes", groups(t.numa_nodes(), "memory_bytes")},
           {"l3_groups", groups(t.l3_groups(), "l3_bytes")},
           {"tiles", groups(t.tiles(), "l2_bytes")},
           {"cores", cores}};
}

nlohmann::ordered_json placement_to_json(const Placement& p) {
  using J = nlohmann::ordered_json;
  auto reserved = [](const std::optional<ReservedCore>& r) -> J {
    if (!r) return nullptr;
    return J{{"core", r->core}, {"pu", r->pu}, {"tile", r->tile}};
  };
  J teams = J::array();
  for (size_t e = 0; e < p.teams.size(); ++e) {
    const ExecutorPlacement& t = p.teams[e];
    teams.push_back({{"executor", e},
                     {"cores", t.cores},
                     {"pus", t.pus},
                     {"cpuset", format_cpu_list(t.pus)},
                     {"tiles", t.tiles},
                     {"l3", t.l3},
                     {"numa", t.numa},
                     {"package", t.package}});
  }
  return J{{"executors", p.executors},
           {"threads", p.threads},
           {"usable_cores", p.usable_cores},
           {"teams", teams},
           {"scheduler", reserved(p.scheduler)},
           {"scheduler_role", p.scheduler ? "dedicated core" : "inside the executors"},
           {"bootstrap", reserved(p.bootstrap)},
           {"bootstrap_role", p.bootstrap   ? "dedicated core"
                              : p.scheduler ? "shares the scheduler's core"
                                            : "inside the executors"},
           {"tiles_shared", p.tiles_shared},
           {"notes", p.notes}};
}

}  // namespace graphi::engine
