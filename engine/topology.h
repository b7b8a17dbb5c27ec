// Topology: a plain snapshot of the machine as placement sees it (packages, NUMA nodes, L3 groups,
// tiles = cores sharing an L2, cores, hardware threads) plus the PUs this process may use. Loaded
// with hwloc from the real machine, a synthetic description or an XML file, so placement can be
// tested for machines we do not have. Knows nothing of executors; placement.h consumes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/base.h"

namespace graphi::engine {

// Ids: cores, tiles, L3 groups and packages use dense logical ids 0..count-1 in hwloc's logical
// order (neighbours share caches). PUs (hardware threads) use the OS ids that taskset, cgroups,
// /proc and sched_getcpu() use. NUMA nodes use their OS ids.
struct CoreInfo {
  int id = 0;
  std::vector<int> pus;          // OS PU ids of this core, ascending (its hardware threads)
  std::vector<int> allowed_pus;  // the subset this process may run on; empty = core unusable
  int tile = 0;                  // the L2 group; a core with a private L2 (or none) is a tile of 1
  int l3 = -1;                   // the L3 group, -1 if the machine reports no L3 above this core
  int numa = -1;                 // OS id of the NUMA node holding the core, -1 if none reported
  int package = 0;
  bool usable() const { return !allowed_pus.empty(); }
};

// A group of cores: a tile (shares one L2), an L3 group, a NUMA node or a package.
struct CoreGroup {
  int id = 0;              // logical id; for NUMA nodes the OS id
  std::vector<int> cores;  // core ids, ascending
  uint64_t bytes = 0;      // cache size (tiles, L3 groups) or local memory (NUMA), 0 if unknown
};

class Topology {
 public:
  // The machine this process runs on. Allowed PUs = the process's binding
  // (hwloc_get_cpubind(PROCESS): taskset, a batch scheduler's allocation) intersected with what
  // hwloc reports as allowed (cgroup cpusets). `allowed_override` ("0-3,8", OS PU ids) narrows
  // that further; naming a PU outside it is an error. If HWLOC_XMLFILE or HWLOC_SYNTHETIC is set,
  // hwloc loads that instead and the result behaves like from_xml/from_synthetic.
  static Result<Topology> load_this_machine(std::string_view allowed_override = {});

  // A machine described by an hwloc synthetic string, e.g. "package:1 l2:34 core:2 pu:4" (Xeon
  // Phi 7250: 34 tiles of 2 cores, 4 threads per core). All PUs are allowed unless
  // `allowed_override` gives a subset. Errors: kInvalidArgument for a malformed description or
  // override.
  static Result<Topology> from_synthetic(std::string_view description,
                                         std::string_view allowed_override = {});

  // A machine exported by `lstopo-no-graphics --of xml` or hwloc_topology_export_xml. All PUs
  // are allowed unless overridden. Errors: kIoError if the file cannot be read, kInvalidArgument
  // if it is not an hwloc topology XML.
  static Result<Topology> from_xml(const std::string& path, std::string_view allowed_override = {});

  // "this machine", "synthetic \"...\"" or "xml FILE".
  const std::string& source() const { return source_; }
  // True only for load_this_machine() without an HWLOC_* override: binding threads means
  // something only then (hwloc's binding calls are silent no-ops on fake topologies).
  bool is_this_system() const { return this_system_; }

  const std::vector<CoreInfo>& cores() const { return cores_; }
  const std::vector<CoreGroup>& tiles() const { return tiles_; }
  const std::vector<CoreGroup>& l3_groups() const { return l3_groups_; }
  const std::vector<CoreGroup>& numa_nodes() const { return numa_nodes_; }
  const std::vector<CoreGroup>& packages() const { return packages_; }
  const CoreInfo& core(int id) const { return cores_.at(static_cast<size_t>(id)); }
  const CoreGroup& tile(int id) const { return tiles_.at(static_cast<size_t>(id)); }

  // Largest number of hardware threads on one core (1 without SMT; 4 on a Xeon Phi).
  int threads_per_core() const { return threads_per_core_; }
  int num_pus() const { return num_pus_; }
  // OS ids of the PUs this process may use, ascending.
  const std::vector<int>& allowed_pus() const { return allowed_pus_; }
  // Cores with at least one allowed PU, ascending: what placement may hand out.
  std::vector<int> usable_cores() const;

  // One line: "1 package, 1 NUMA node, 1 L3 group, 2 tiles x 1 core, 2 cores x 1 thread, allowed
  // 0-1". Also a stable signature of the machine for caches keyed by topology.
  std::string summary() const;

 private:
  std::string source_;
  bool this_system_ = false;
  std::vector<CoreInfo> cores_;
  std::vector<CoreGroup> tiles_, l3_groups_, numa_nodes_, packages_;
  int threads_per_core_ = 1;
  int num_pus_ = 0;
  std::vector<int> allowed_pus_;

  friend struct TopologyLoader;  // topology.cpp fills the snapshot from hwloc
};

// "0-3,8" <-> {0,1,2,3,8}: the list syntax of taskset -c, cgroup cpusets and /proc. Parsing
// accepts spaces around items and rejects anything else with a message naming the bad item.
Result<std::vector<int>> parse_cpu_list(std::string_view text);
std::string format_cpu_list(const std::vector<int>& ids);  // input need not be sorted

}  // namespace graphi::engine
