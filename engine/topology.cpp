// Topology snapshots from hwloc (DEPENDENCIES.md 1.1 and 2). The hwloc topology lives only inside
// the loader; the snapshot is plain data, cheap to copy and safe to share between threads.
#include "engine/topology.h"

#include <hwloc.h>
#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>

namespace graphi::engine {

namespace {

struct HwlocTopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, HwlocTopologyDeleter>;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using BitmapPtr = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

BitmapPtr new_bitmap() { return BitmapPtr(hwloc_bitmap_alloc()); }

std::vector<int> bitmap_ids(hwloc_const_bitmap_t set) {
  std::vector<int> ids;
  if (hwloc_bitmap_weight(set) < 0) return ids;  // infinite set: never for cpusets we build
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) ids.push_back(i);
  return ids;
}

Result<TopologyPtr> init_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return Status::internal("hwloc_topology_init failed");
  TopologyPtr t(raw);
  // Placement needs cores and caches only: skip instruction caches and I/O (faster load).
  hwloc_topology_set_icache_types_filter(t.get(), HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_io_types_filter(t.get(), HWLOC_TYPE_FILTER_KEEP_NONE);
  return t;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

// Fills a Topology from a loaded hwloc topology. A friend of Topology.
struct TopologyLoader {
  static Result<Topology> build(hwloc_topology_t t, std::string source, bool this_system,
                                std::string_view allowed_override) {
    Topology topo;
    topo.source_ = std::move(source);
    topo.this_system_ = this_system;

    const int n_core_objs = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    // Some VMs and XML files have no Core objects: then every PU counts as a core.
    const hwloc_obj_type_t core_type = n_core_objs > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    const int n_cores = hwloc_get_nbobjs_by_type(t, core_type);
    if (n_cores <= 0)
      return Status::invalid_argument(topo.source_ + ": topology has no cores or PUs");

    std::vector<hwloc_obj_t> numa_objs;
    for (int i = 0, n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE); i < n; ++i)
      numa_objs.push_back(hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i)));

    std::map<unsigned, int> tile_of_l2, l3_of_obj, package_of_obj;  // hwloc logical idx -> id
    std::map<int, size_t> numa_slot;                                // NUMA OS id -> slot
    for (int c = 0; c < n_cores; ++c) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(t, core_type, static_cast<unsigned>(c));
      CoreInfo core;
      core.id = static_cast<int>(topo.cores_.size());
      core.pus = bitmap_ids(obj->cpuset);
      if (core.pus.empty()) continue;  // a core without PUs cannot run anything; skip it

      hwloc_obj_t l2 = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L2CACHE, obj);
      if (l2 && tile_of_l2.count(l2->logical_index)) {
        core.tile = tile_of_l2[l2->logical_index];
      } else {
        core.tile = static_cast<int>(topo.tiles_.size());
        topo.tiles_.push_back({core.tile, {}, l2 ? l2->attr->cache.size : 0});
        if (l2) tile_of_l2[l2->logical_index] = core.tile;
      }
      if (hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L3CACHE, obj)) {
        auto [it, fresh] =
            l3_of_obj.try_emplace(l3->logical_index, static_cast<int>(l3_of_obj.size()));
        if (fresh) topo.l3_groups_.push_back({it->second, {}, l3->attr->cache.size});
        core.l3 = it->second;
      }
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, obj);
      unsigned pkg_key = pkg ? pkg->logical_index : 0;
      auto [pit, pfresh] =
          package_of_obj.try_emplace(pkg_key, static_cast<int>(package_of_obj.size()));
      if (pfresh) topo.packages_.push_back({pit->second, {}, 0});
      core.package = pit->second;
      for (hwloc_obj_t numa : numa_objs) {
        if (numa->cpuset && hwloc_bitmap_isincluded(obj->cpuset, numa->cpuset)) {
          core.numa = static_cast<int>(numa->os_index);
          if (!numa_slot.count(core.numa)) {
            numa_slot[core.numa] = topo.numa_nodes_.size();
            topo.numa_nodes_.push_back({core.numa, {}, numa->attr->numanode.local_memory});
          }
          break;
        }
      }
      topo.tiles_[static_cast<size_t>(core.tile)].cores.push_back(core.id);
      if (core.l3 >= 0) topo.l3_groups_[static_cast<size_t>(core.l3)].cores.push_back(core.id);
      if (core.numa >= 0) topo.numa_nodes_[numa_slot[core.numa]].cores.push_back(core.id);
      topo.packages_[static_cast<size_t>(core.package)].cores.push_back(core.id);
      topo.threads_per_core_ = std::max(topo.threads_per_core_, static_cast<int>(core.pus.size()));
      topo.num_pus_ += static_cast<int>(core.pus.size());
      topo.cores_.push_back(std::move(core));
    }
    if (topo.cores_.empty())
      return Status::invalid_argument(topo.source_ + ": topology has no PUs");

    // The PUs this process may use.
    BitmapPtr allowed = new_bitmap();
    hwloc_bitmap_copy(allowed.get(), hwloc_topology_get_topology_cpuset(t));
    std::vector<int> machine_pus = bitmap_ids(allowed.get());
    if (this_system) {
      // cgroup cpusets: hwloc removes disallowed PUs unless asked not to; intersect anyway.
      hwloc_bitmap_and(allowed.get(), allowed.get(), hwloc_topology_get_allowed_cpuset(t));
      BitmapPtr bound = new_bitmap();
      // PROCESS on Linux returns the union of all threads' masks: taskset / batch allocation.
      if (hwloc_get_cpubind(t, bound.get(), HWLOC_CPUBIND_PROCESS) != 0 &&
          hwloc_get_cpubind(t, bound.get(), HWLOC_CPUBIND_THREAD) != 0) {
        hwloc_bitmap_copy(bound.get(), allowed.get());
      }
      // With OMP_PROC_BIND / OMP_PLACES / GOMP_CPU_AFFINITY the OpenMP runtime binds the initial
      // thread to its first place when it loads (verified with libgomp 12: OMP_PLACES=cores left
      // the main thread on core 0 only), so the process mask no longer shows what we may use.
      // The places were computed from the original mask: add them back.
      if (omp_get_proc_bind() != omp_proc_bind_false) {
        for (int p = 0, np = omp_get_num_places(); p < np; ++p) {
          std::vector<int> ids(static_cast<size_t>(std::max(0, omp_get_place_num_procs(p))));
          if (!ids.empty()) omp_get_place_proc_ids(p, ids.data());
          for (int id : ids) hwloc_bitmap_set(bound.get(), static_cast<unsigned>(id));
        }
      }
      hwloc_bitmap_and(allowed.get(), allowed.get(), bound.get());
    }
    std::vector<int> allowed_ids = bitmap_ids(allowed.get());
    if (!allowed_override.empty()) {
      GRAPHI_ASSIGN_OR_RETURN(std::vector<int> wanted, parse_cpu_list(allowed_override));
      std::vector<int> missing, outside;
      for (int id : wanted) {
        if (!std::binary_search(machine_pus.begin(), machine_pus.end(), id))
          missing.push_back(id);
        else if (!std::binary_search(allowed_ids.begin(), allowed_ids.end(), id))
          outside.push_back(id);
      }
      if (!missing.empty()) {
        return Status::invalid_argument(
            "cpuset \"" + std::string(allowed_override) +
            "\": " + (missing.size() == 1 ? "PU " : "PUs ") + format_cpu_list(missing) +
            (missing.size() == 1 ? " does" : " do") + " not exist on " + topo.source_ + " (PUs " +
            format_cpu_list(machine_pus) + ")");
      }
      if (!outside.empty()) {
        return Status::invalid_argument(
            "cpuset \"" + std::string(allowed_override) +
            "\": " + (outside.size() == 1 ? "PU " : "PUs ") + format_cpu_list(outside) +
            (outside.size() == 1 ? " is" : " are") + " outside this process's allowed cpuset " +
            format_cpu_list(allowed_ids) + " (taskset / cgroup)");
      }
      allowed_ids = std::move(wanted);
    }
    topo.allowed_pus_ = allowed_ids;
    for (CoreInfo& core : topo.cores_) {
      for (int pu : core.pus)
        if (std::binary_search(allowed_ids.begin(), allowed_ids.end(), pu))
          core.allowed_pus.push_back(pu);
    }
    std::sort(topo.numa_nodes_.begin(), topo.numa_nodes_.end(),
              [](const CoreGroup& a, const CoreGroup& b) { return a.id < b.id; });
    return topo;
  }
};

Result<Topology> Topology::load_this_machine(std::string_view allowed_override) {
  GRAPHI_ASSIGN_OR_RETURN(TopologyPtr t, init_topology());
  if (hwloc_topology_load(t.get()) != 0) {
    return Status::internal(std::string("hwloc could not read this machine's topology: ") +
                            std::strerror(errno));
  }
  // HWLOC_XMLFILE / HWLOC_SYNTHETIC make hwloc load a fake machine; binding is then a no-op.
  const bool real = hwloc_topology_is_thissystem(t.get()) != 0;
  std::string source = "this machine";
  if (!real) source += " (replaced by HWLOC_XMLFILE / HWLOC_SYNTHETIC)";
  return TopologyLoader::build(t.get(), std::move(source), real, allowed_override);
}

Result<Topology> Topology::from_synthetic(std::string_view description,
                                          std::string_view allowed_override) {
  std::string desc(description);
  std::string source = "synthetic \"" + desc + "\"";
  GRAPHI_ASSIGN_OR_RETURN(TopologyPtr t, init_topology());
  if (desc.find_first_not_of(" \t") == std::string::npos ||
      hwloc_topology_set_synthetic(t.get(), desc.c_str()) != 0) {
    return Status::invalid_argument(
        "invalid hwloc synthetic topology \"" + desc +
        "\": expected levels from the machine down to PUs, e.g. \"package:2 l3:1 core:12 pu:2\" "
        "(preview with lstopo-no-graphics -i \"DESC\")");
  }
  if (hwloc_topology_load(t.get()) != 0)
    return Status::invalid_argument(source + ": hwloc could not build this topology");
  return TopologyLoader::build(t.get(), std::move(source), false, allowed_override);
}

Result<Topology> Topology::from_xml(const std::string& path, std::string_view allowed_override) {
  {
    std::ifstream probe(path);
    if (!probe)
      return Status::io_error("cannot read topology XML '" + path + "': " + std::strerror(errno));
  }
  GRAPHI_ASSIGN_OR_RETURN(TopologyPtr t, init_topology());
  if (hwloc_topology_set_xml(t.get(), path.c_str()) != 0 || hwloc_topology_load(t.get()) != 0) {
    return Status::invalid_argument("'" + path +
                                    "' is not an hwloc topology XML (make one with "
                                    "lstopo-no-graphics --of xml > FILE)");
  }
  return TopologyLoader::build(t.get(), "xml " + path, false, allowed_override);
}

std::vector<int> Topology::usable_cores() const {
  std::vector<int> ids;
  for (const CoreInfo& c : cores_)
    if (c.usable()) ids.push_back(c.id);
  return ids;
}

std::string Topology::summary() const {
  size_t min_tile = SIZE_MAX, max_tile = 0;
  for (const CoreGroup& g : tiles_) {
    min_tile = std::min(min_tile, g.cores.size());
    max_tile = std::max(max_tile, g.cores.size());
  }
  std::string tile_size = min_tile == max_tile
                              ? std::to_string(max_tile)
                              : std::to_string(min_tile) + "-" + std::to_string(max_tile);
  return plural(packages_.size(), "package", "packages") + ", " +
         plural(numa_nodes_.size(), "NUMA node", "NUMA nodes") + ", " +
         plural(l3_groups_.size(), "L3 group", "L3 groups") + ", " +
         plural(tiles_.size(), "tile", "tiles") + " of " + tile_size +
         (max_tile == 1 ? " core" : " cores") + ", " + plural(cores_.size(), "core", "cores") +
         " x " + plural(static_cast<size_t>(threads_per_core_), "thread", "threads") +
         ", allowed PUs " + format_cpu_list(allowed_pus_);
}

Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  constexpr long kMaxId = 1 << 20;  // far above any machine; catches typos like 0-99999999
  auto bad = [&](std::string_view item, const char* why) {
    return Status::invalid_argument("cpu list \"" + std::string(text) + "\": " + why + " '" +
                                    std::string(item) + "' (expected N or N-M items, e.g. 0-3,8)");
  };
  auto trim = [](std::string_view s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string_view::npos ? std::string_view{} : s.substr(b, e - b + 1);
  };
  auto number = [](std::string_view s) -> long {
    if (s.empty() || s.size() > 8) return -1;
    long v = 0;
    for (char ch : s) {
      if (ch < '0' || ch > '9') return -1;
      v = v * 10 + (ch - '0');
    }
    return v;
  };
  if (trim(text).empty()) return Status::invalid_argument("empty cpu list (expected e.g. 0-3,8)");
  std::set<int> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        trim(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    if (item.empty()) return bad(item, "empty item");
    size_t dash = item.find('-');
    long lo = number(trim(item.substr(0, dash)));
    long hi = dash == std::string_view::npos ? lo : number(trim(item.substr(dash + 1)));
    if (lo < 0 || hi < 0) return bad(item, "bad item");
    if (lo > hi) return bad(item, "descending range");
    if (hi >= kMaxId) return bad(item, "id too large in");
    for (long i = lo; i <= hi; ++i) ids.insert(static_cast<int>(i));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return std::vector<int>(ids.begin(), ids.end());
}

std::string format_cpu_list(const std::vector<int>& ids_in) {
  std::vector<int> ids = ids_in;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace graphi::engine
