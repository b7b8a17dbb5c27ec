// Topology loading (synthetic, XML, this machine) and placement on machines we do not have:
// Xeon Phi 7250, a 2-socket Xeon with SMT, a 2x64-core EPYC, and this VM. Placements are checked
// against invariants computed here from the topology alone, plus exact expectations per case.
#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "engine/placement.h"
#include "engine/thread_binder.h"
#include "engine/topology.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;

namespace {

const char* kKnl = "package:1 l2:34 core:2 pu:4";  // Xeon Phi 7250: 34 tiles x 2 cores x 4 threads
const char* kKnlRealNumbering = "package:1 l2:34 core:2 pu:4(indexes=4*68:1*4)";
const char* kXeon2S = "package:2 numa:1 l3:1 core:12 pu:2";    // 2 x 12 cores, SMT 2
const char* kEpyc = "package:2 numa:4 l3:2 l2:8 core:1 pu:2";  // 2 x 64 cores, 8 per L3 (CCX)

Topology synthetic(const char* desc, std::string_view allowed = {}) {
  return value_or_throw(Topology::from_synthetic(desc, allowed));
}

std::vector<int> range(int lo, int hi) {  // [lo, hi)
  std::vector<int> v;
  for (int i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

// Invariants every placement must satisfy, derived from the topology alone.
void check_invariants(const Topology& topo, const PlacementRequest& req, const Placement& p) {
  INFO(topo.source() << " " << req.executors << "x" << req.threads << ": " << p.summary());
  REQUIRE(p.teams.size() == static_cast<size_t>(req.executors));
  std::set<int> allowed(topo.allowed_pus().begin(), topo.allowed_pus().end());
  std::set<int> used_cores, used_pus;
  std::map<int, std::set<int>> executors_of_tile;
  for (size_t e = 0; e < p.teams.size(); ++e) {
    const ExecutorPlacement& t = p.teams[e];
    REQUIRE(t.cores.size() == static_cast<size_t>(req.threads));
    REQUIRE(t.pus.size() == t.cores.size());
    std::set<int> tiles;
    for (size_t i = 0; i < t.cores.size(); ++i) {
      const CoreInfo& c = topo.core(t.cores[i]);
      CHECK(used_cores.insert(c.id).second);  // no core twice
      // One hardware thread per core: the PU belongs to this core and is allowed.
      CHECK(std::count(c.pus.begin(), c.pus.end(), t.pus[i]) == 1);
      CHECK(allowed.count(t.pus[i]) == 1);
      CHECK(used_pus.insert(t.pus[i]).second);
      tiles.insert(c.tile);
      executors_of_tile[c.tile].insert(static_cast<int>(e));
    }
    CHECK(std::vector<int>(tiles.begin(), tiles.end()) == t.tiles);
  }
  bool shared = false;
  for (const auto& [tile, owners] : executors_of_tile) shared = shared || owners.size() > 1;
  CHECK(p.tiles_shared == shared);

  // Reserved cores: present exactly when there is room, distinct from everything else.
  const int usable = static_cast<int>(topo.usable_cores().size());
  CHECK(p.usable_cores == usable);
  const int need = req.executors * req.threads;
  CHECK(p.scheduler.has_value() == (req.reserve_scheduler && need + 1 <= usable));
  CHECK(p.bootstrap.has_value() ==
        (req.reserve_bootstrap && need + (p.scheduler ? 1 : 0) + 1 <= usable));
  for (const auto& r : {p.scheduler, p.bootstrap}) {
    if (!r) continue;
    const CoreInfo& c = topo.core(r->core);
    CHECK(used_cores.insert(c.id).second);
    CHECK(allowed.count(r->pu) == 1);
    CHECK(std::count(c.pus.begin(), c.pus.end(), r->pu) == 1);
    CHECK(r->tile == c.tile);
  }
  if (!p.scheduler) {
    bool noted = false;
    for (const std::string& n : p.notes)
      noted = noted || n.find("scheduler role runs inside") != n.npos;
    CHECK(noted);
  }
}

// Tile size when all tiles have the same number of usable cores, else 0.
size_t uniform_tile_size(const Topology& topo) {
  std::set<size_t> sizes;
  for (const CoreGroup& g : topo.tiles()) {
    size_t n = 0;
    for (int c : g.cores) n += topo.core(c).usable() ? 1 : 0;
    if (n) sizes.insert(n);
  }
  return sizes.size() == 1 ? *sizes.begin() : 0;
}

// Every n x k that fits, with the invariants plus: exclusive (tile-aligned) tiles whenever the
// machine has enough tiles, and whole tiles when k is a multiple of the tile size.
void sweep(const Topology& topo) {
  const int usable = static_cast<int>(topo.usable_cores().size());
  const size_t s = uniform_tile_size(topo);
  REQUIRE(s > 0);
  const size_t n_tiles = topo.tiles().size();
  for (int k = 1; k <= usable; k = k < 4 ? k + 1 : k * 2) {
    for (int n = 1; n * k <= usable; n = n < 4 ? n + 1 : n * 2) {
      PlacementRequest req{n, k};
      Result<Placement> r = place_executors(topo, req);
      REQUIRE(r.is_ok());
      const Placement& p = *r;
      check_invariants(topo, req, p);
      const size_t tiles_each = (static_cast<size_t>(k) + s - 1) / s;
      INFO(n << "x" << k << ": " << p.summary());
      CHECK(p.tiles_shared == (n * tiles_each > n_tiles));
      if (!p.tiles_shared) {
        for (const ExecutorPlacement& t : p.teams) CHECK(t.tiles.size() == tiles_each);
        if (k % static_cast<int>(s) == 0) {
          for (const ExecutorPlacement& t : p.teams) {
            std::set<int> whole;
            for (int tile : t.tiles)
              for (int c : topo.tile(tile).cores) whole.insert(c);
            CHECK(std::set<int>(t.cores.begin(), t.cores.end()) == whole);
          }
        }
      }
    }
  }
}

std::string error_of(const Topology& topo, int n, int k) {
  Result<Placement> r = place_executors(topo, {n, k});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  return r.status().message();
}

}  // namespace

// ---------------------------------------------------------------- topology loading

TEST_CASE("cpu lists parse and format like taskset -c", "[topology]") {
  CHECK(value_or_throw(parse_cpu_list("0-3,8")) == std::vector<int>{0, 1, 2, 3, 8});
  CHECK(value_or_throw(parse_cpu_list(" 5 , 1-2,2")) == std::vector<int>{1, 2, 5});
  CHECK(value_or_throw(parse_cpu_list("7")) == std::vector<int>{7});
  CHECK(format_cpu_list({8, 0, 1, 2, 3}) == "0-3,8");
  CHECK(format_cpu_list({4, 6}) == "4,6");
  CHECK(format_cpu_list({}) == "none");
  for (const char* bad : {"", "x", "3-1", "1,,2", "1-", "-1", "0-99999999", "1;2"}) {
    Result<std::vector<int>> r = parse_cpu_list(bad);
    INFO(bad);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("cpu list") != std::string::npos);
  }
}

TEST_CASE("Xeon Phi 7250 synthetic topology: 34 tiles of 2 cores, 4 threads per core",
          "[topology]") {
  Topology t = synthetic(kKnl);
  CHECK(t.cores().size() == 68);
  CHECK(t.tiles().size() == 34);
  CHECK(t.threads_per_core() == 4);
  CHECK(t.num_pus() == 272);
  CHECK(t.l3_groups().empty());
  CHECK(t.packages().size() == 1);
  CHECK(t.allowed_pus() == range(0, 272));
  CHECK_FALSE(t.is_this_system());
  for (const CoreGroup& tile : t.tiles())
    CHECK(tile.cores == std::vector<int>{2 * tile.id, 2 * tile.id + 1});
  for (const CoreInfo& c : t.cores()) {
    CHECK(c.pus == range(4 * c.id, 4 * c.id + 4));  // sequential numbering without indexes=
    CHECK(c.tile == c.id / 2);
    CHECK(c.l3 == -1);
  }
  // Real KNL numbering: core c has PUs c, c+68, c+136, c+204.
  Topology real = synthetic(kKnlRealNumbering);
  for (const CoreInfo& c : real.cores())
    CHECK(c.pus == std::vector<int>{c.id, c.id + 68, c.id + 136, c.id + 204});
  CHECK(t.summary().find("34 tiles of 2 cores, 68 cores x 4 threads") != std::string::npos);
}

TEST_CASE("2-socket Xeon and 2x64-core EPYC synthetic topologies", "[topology]") {
  Topology x = synthetic(kXeon2S);
  CHECK(x.cores().size() == 24);
  CHECK(x.threads_per_core() == 2);
  CHECK(x.tiles().size() == 24);  // no L2 level: every core is a tile of 1
  REQUIRE(x.l3_groups().size() == 2);
  CHECK(x.l3_groups()[0].cores == range(0, 12));
  CHECK(x.l3_groups()[1].cores == range(12, 24));
  CHECK(x.numa_nodes().size() == 2);
  CHECK(x.packages().size() == 2);
  for (const CoreInfo& c : x.cores()) {
    CHECK(c.pus == std::vector<int>{2 * c.id, 2 * c.id + 1});
    CHECK(c.package == c.id / 12);
    CHECK(c.l3 == c.id / 12);
  }

  Topology e = synthetic(kEpyc);
  CHECK(e.cores().size() == 128);
  CHECK(e.tiles().size() == 128);
  CHECK(e.l3_groups().size() == 16);
  CHECK(e.numa_nodes().size() == 8);
  CHECK(e.packages().size() == 2);
  for (const CoreGroup& g : e.l3_groups()) CHECK(g.cores == range(8 * g.id, 8 * g.id + 8));
  for (const CoreGroup& g : e.numa_nodes()) CHECK(g.cores == range(16 * g.id, 16 * g.id + 16));
  for (const CoreInfo& c : e.cores()) {
    CHECK(c.numa == c.id / 16);
    CHECK(c.package == c.id / 64);
  }
}

TEST_CASE("allowed-cpuset override restricts the usable cores", "[topology]") {
  // KNL numbering 4 PUs per core: PUs 0-3 are core 0, PU 8 is core 2.
  Topology t = synthetic(kKnl, "0-3,8");
  CHECK(t.allowed_pus() == std::vector<int>{0, 1, 2, 3, 8});
  CHECK(t.usable_cores() == std::vector<int>{0, 2});
  CHECK(t.core(0).allowed_pus == std::vector<int>{0, 1, 2, 3});
  CHECK(t.core(2).allowed_pus == std::vector<int>{8});
  CHECK_FALSE(t.core(1).usable());

  Result<Topology> missing = Topology::from_synthetic(kKnl, "0-300");
  CHECK(missing.status().code() == StatusCode::kInvalidArgument);
  CHECK(missing.status().message().find("PUs 272-300 do not exist") != std::string::npos);
  CHECK(Topology::from_synthetic(kKnl, "a-b").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("bad synthetic descriptions and XML files are clear errors", "[topology]") {
  Result<Topology> bad = Topology::from_synthetic("garbage");
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("invalid hwloc synthetic topology \"garbage\"") !=
        std::string::npos);
  CHECK(Topology::from_synthetic("").status().code() == StatusCode::kInvalidArgument);
  CHECK(Topology::from_synthetic("package:2 core:0").status().code() ==
        StatusCode::kInvalidArgument);

  Result<Topology> absent = Topology::from_xml("/nonexistent/machine.xml");
  CHECK(absent.status().code() == StatusCode::kIoError);
  CHECK(absent.status().message().find("/nonexistent/machine.xml") != std::string::npos);

  auto dir = test::scratch_dir("topology_bad_xml");
  std::string not_xml = (dir / "not_a_topology.xml").string();
  std::ofstream(not_xml) << "this is not xml\n";
  Result<Topology> r = Topology::from_xml(not_xml);
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("not an hwloc topology XML") != std::string::npos);
}

TEST_CASE("XML topologies: a synthetic machine round-trips, and the VM fixture loads",
          "[topology]") {
  // Export the EPYC description with hwloc itself and load it back through from_xml.
  auto dir = test::scratch_dir("topology_xml");
  std::string path = (dir / "epyc.xml").string();
  hwloc_topology_t h;
  REQUIRE(hwloc_topology_init(&h) == 0);
  REQUIRE(hwloc_topology_set_synthetic(h, kEpyc) == 0);
  REQUIRE(hwloc_topology_load(h) == 0);
  REQUIRE(hwloc_topology_export_xml(h, path.c_str(), 0) == 0);
  hwloc_topology_destroy(h);
  Topology from_xml = value_or_throw(Topology::from_xml(path));
  Topology from_desc = synthetic(kEpyc);
  CHECK(from_xml.summary() == from_desc.summary());
  CHECK(from_xml.source() == "xml " + path);
  CHECK_FALSE(from_xml.is_this_system());

  // lstopo-no-graphics --no-io --of xml of this 2-core VM (each core its own L2, one L3).
  Topology vm = value_or_throw(Topology::from_xml(std::string(GRAPHI_SOURCE_DIR) +
                                                  "/tests/engine/data/vm_2core_private_l2.xml"));
  CHECK(vm.cores().size() == 2);
  CHECK(vm.tiles().size() == 2);
  CHECK(vm.l3_groups().size() == 1);
  CHECK(vm.allowed_pus() == std::vector<int>{0, 1});
  Topology vm1 = value_or_throw(Topology::from_xml(
      std::string(GRAPHI_SOURCE_DIR) + "/tests/engine/data/vm_2core_private_l2.xml", "1"));
  CHECK(vm1.usable_cores() == std::vector<int>{1});
}

TEST_CASE("this machine: cores, tiles and the allowed cpuset match /sys and sched_getaffinity",
          "[topology]") {
  Topology t = value_or_throw(Topology::load_this_machine());
  if (!t.is_this_system()) {
    WARN("HWLOC_XMLFILE or HWLOC_SYNTHETIC is set: skipping the real-machine checks");
    return;
  }
  // Independent reference 1: the calling thread's affinity (the test process is not pinned),
  // unless the OpenMP runtime already bound it to its first place.
  cpu_set_t mask;
  REQUIRE(sched_getaffinity(0, sizeof(mask), &mask) == 0);
  std::vector<int> affinity;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &mask)) affinity.push_back(i);
  if (omp_affinity_env_warning()) {
    WARN(
        "OpenMP affinity variables set: only checking that the allowed set covers the main "
        "thread's");
    CHECK(std::includes(t.allowed_pus().begin(), t.allowed_pus().end(), affinity.begin(),
                        affinity.end()));
  } else {
    CHECK(t.allowed_pus() == affinity);
  }

  // Independent reference 2: /sys cpu topology (cores = distinct (package, core_id); tiles =
  // distinct L2 shared_cpu_list).
  namespace fs = std::filesystem;
  std::set<std::pair<std::string, std::string>> cores;
  std::set<std::string> l2_groups;
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    std::string s;
    std::getline(in, s);
    return s;
  };
  int cpus = 0;
  for (int cpu = 0;; ++cpu) {
    fs::path base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
    if (!fs::exists(base)) break;
    if (!fs::exists(base / "topology/core_id")) continue;  // offline
    ++cpus;
    cores.insert({read(base / "topology/physical_package_id"), read(base / "topology/core_id")});
    for (int idx = 0; idx < 8; ++idx) {
      fs::path cache = base / ("cache/index" + std::to_string(idx));
      if (fs::exists(cache / "level") && read(cache / "level") == "2")
        l2_groups.insert(read(cache / "shared_cpu_list"));
    }
  }
  if (cpus == 0) {
    WARN("/sys/devices/system/cpu not readable: skipping the /sys comparison");
    return;
  }
  CHECK(t.num_pus() == cpus);
  CHECK(t.cores().size() == cores.size());
  if (!l2_groups.empty()) CHECK(t.tiles().size() == l2_groups.size());
  for (const CoreInfo& c : t.cores()) {
    std::vector<int> expected;
    for (int pu : c.pus)
      if (std::binary_search(t.allowed_pus().begin(), t.allowed_pus().end(), pu))
        expected.push_back(pu);
    CHECK(c.allowed_pus == expected);
  }
}

// ---------------------------------------------------------------- placement

TEST_CASE("placement on a Xeon Phi 7250: whole tiles, reserved cores, sharing only when forced",
          "[placement]") {
  Topology t = synthetic(kKnl);
  sweep(t);

  // 16 x 4: two whole tiles each (tiles 0..31); the scheduler and bootstrap get untouched tile 33.
  Placement p = value_or_throw(place_executors(t, {16, 4}));
  for (int e = 0; e < 16; ++e) {
    CHECK(p.teams[e].cores == range(4 * e, 4 * e + 4));
    CHECK(p.teams[e].tiles == std::vector<int>{2 * e, 2 * e + 1});
    CHECK(p.teams[e].pus == std::vector<int>{16 * e, 16 * e + 4, 16 * e + 8, 16 * e + 12});
  }
  REQUIRE(p.scheduler);
  REQUIRE(p.bootstrap);
  CHECK(p.scheduler->core == 67);
  CHECK(p.bootstrap->core == 66);
  CHECK(p.scheduler->tile == 33);
  CHECK(p.scheduler->pu == 4 * 67);

  // 17 x 4 uses all 68 cores: no reserve, scheduler role inside the executors.
  p = value_or_throw(place_executors(t, {17, 4}));
  CHECK_FALSE(p.scheduler);
  CHECK_FALSE(p.bootstrap);

  // 17 x 3: ceil(3/2) = 2 tiles each, one core of every second tile stays idle; no sharing.
  p = value_or_throw(place_executors(t, {17, 3}));
  CHECK_FALSE(p.tiles_shared);
  for (const ExecutorPlacement& team : p.teams) CHECK(team.tiles.size() == 2);
  REQUIRE(p.scheduler);  // 51 + 2 <= 68: reserved on idle cores of executors' tiles
  CHECK(p.bootstrap);

  // 34 x 1: a tile each; 40 x 1: only 6 tiles must be shared.
  p = value_or_throw(place_executors(t, {34, 1}));
  CHECK_FALSE(p.tiles_shared);
  p = value_or_throw(place_executors(t, {40, 1}));
  CHECK(p.tiles_shared);
  std::map<int, int> per_tile;
  for (const ExecutorPlacement& team : p.teams) per_tile[team.tiles[0]]++;
  CHECK(per_tile.size() == 34);
  CHECK(std::count_if(per_tile.begin(), per_tile.end(), [](auto& kv) { return kv.second == 2; }) ==
        6);

  CHECK(error_of(t, 18, 4) ==
        "18 executors x 4 threads need 72 cores; this process may use 68 (cpuset 0-271); threads "
        "count cores, not hardware threads (4 per core here)");
  CHECK(error_of(t, 0, 4).find("at least 1 executor") != std::string::npos);
  CHECK(error_of(t, 2, -1).find("at least 1 executor") != std::string::npos);
}

TEST_CASE("placement on a 2-socket 12-core Xeon: executors stay in one socket's L3",
          "[placement]") {
  Topology t = synthetic(kXeon2S);
  sweep(t);

  Placement p = value_or_throw(place_executors(t, {2, 12}));
  CHECK(p.teams[0].cores == range(0, 12));
  CHECK(p.teams[1].cores == range(12, 24));
  CHECK(p.teams[0].l3 == 0);
  CHECK(p.teams[1].l3 == 1);
  CHECK(p.teams[0].pus[3] == 6);  // first hardware thread of core 3
  CHECK_FALSE(p.scheduler);

  // 2 x 8: the second executor does not straddle the sockets; reserves are the last cores.
  p = value_or_throw(place_executors(t, {2, 8}));
  CHECK(p.teams[0].cores == range(0, 8));
  CHECK(p.teams[1].cores == range(12, 20));
  REQUIRE(p.scheduler);
  REQUIRE(p.bootstrap);
  CHECK(p.scheduler->core == 23);
  CHECK(p.bootstrap->core == 22);

  for (int k : {2, 3, 4, 6}) {  // k divides 12: every executor inside one L3 group
    p = value_or_throw(place_executors(t, {24 / k, k}));
    for (const ExecutorPlacement& team : p.teams) CHECK(team.l3 >= 0);
  }

  // 3 x 8: one executor must span both sockets, and the notes say so.
  p = value_or_throw(place_executors(t, {3, 8}));
  CHECK(p.teams[0].l3 == 0);
  CHECK(p.teams[1].l3 == 1);
  CHECK(p.teams[2].l3 == -1);
  CHECK(p.teams[2].cores == std::vector<int>{8, 9, 10, 11, 20, 21, 22, 23});
  bool noted = false;
  for (const std::string& n : p.notes)
    noted = noted || n.find("executor 2 spans L3 groups 0-1") != n.npos;
  CHECK(noted);

  // 23 x 1: one spare core, the scheduler's; bootstrap shares it.
  p = value_or_throw(place_executors(t, {23, 1}));
  CHECK(p.scheduler);
  CHECK_FALSE(p.bootstrap);

  // Reservation can be turned off.
  PlacementRequest no_reserve{2, 4, false, false};
  p = value_or_throw(place_executors(t, no_reserve));
  check_invariants(t, no_reserve, p);

  CHECK(error_of(t, 2, 13) ==
        "2 executors x 13 threads need 26 cores; this process may use 24 (cpuset 0-47); threads "
        "count cores, not hardware threads (2 per core here)");
  CHECK(error_of(t, 7, 7) ==
        "7 executors x 7 threads need 49 cores; this process may use 24 (cpuset 0-47)");
}

TEST_CASE("placement on a 2x64-core EPYC: one CCX (L3 group) per 8-thread executor",
          "[placement]") {
  Topology t = synthetic(kEpyc);
  sweep(t);

  Placement p = value_or_throw(place_executors(t, {16, 8}));
  for (int e = 0; e < 16; ++e) {
    CHECK(p.teams[e].cores == range(8 * e, 8 * e + 8));
    CHECK(p.teams[e].l3 == e);
    CHECK(p.teams[e].numa == e / 2);
  }
  CHECK_FALSE(p.scheduler);

  // 15 x 8: the last CCX is untouched; scheduler and bootstrap take its last cores.
  p = value_or_throw(place_executors(t, {15, 8}));
  REQUIRE(p.scheduler);
  REQUIRE(p.bootstrap);
  CHECK(p.scheduler->core == 127);
  CHECK(p.bootstrap->core == 126);
  CHECK(p.scheduler->pu == 254);

  // 8 x 16: one NUMA node (two CCXs) each; 32 x 4: two executors per CCX, never across.
  p = value_or_throw(place_executors(t, {8, 16}));
  for (int e = 0; e < 8; ++e) {
    CHECK(p.teams[e].numa == e);
    CHECK(p.teams[e].l3 == -1);
  }
  p = value_or_throw(place_executors(t, {32, 4}));
  for (const ExecutorPlacement& team : p.teams) CHECK(team.l3 >= 0);
  p = value_or_throw(place_executors(t, {2, 64}));
  CHECK(p.teams[0].package == 0);
  CHECK(p.teams[1].package == 1);

  // 3 x 12: no CCX holds 12 cores, so each executor stays inside one NUMA node.
  p = value_or_throw(place_executors(t, {3, 12}));
  for (const ExecutorPlacement& team : p.teams) CHECK(team.numa >= 0);
  CHECK(p.teams[0].numa != p.teams[1].numa);

  CHECK(error_of(t, 4, 33).find(
            "4 executors x 33 threads need 132 cores; this process may use 128") == 0);
}

TEST_CASE("placement stays inside an allowed-cpuset override", "[placement]") {
  // Xeon, PUs 0-7 and 16-23: cores 0-3 and 8-11 (both hardware threads of each).
  Topology t = synthetic(kXeon2S, "0-7,16-23");
  CHECK(t.usable_cores() == std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11});
  for (int n : {1, 2, 4, 8}) {
    for (int k : {1, 2, 4, 8}) {
      if (n * k > 8) continue;
      PlacementRequest req{n, k};
      Placement p = value_or_throw(place_executors(t, req));
      check_invariants(t, req, p);
      for (const ExecutorPlacement& team : p.teams)
        for (int c : team.cores) CHECK(((c >= 0 && c < 4) || (c >= 8 && c < 12)));
    }
  }
  CHECK(error_of(t, 2, 5) ==
        "2 executors x 5 threads need 10 cores; this process may use 8 (cpuset 0-7,16-23) of the "
        "machine's 24 cores; threads count cores, not hardware threads (2 per core here)");

  // Only the second hardware thread of core 0 allowed: that is the PU to bind.
  Placement one = value_or_throw(place_executors(synthetic(kXeon2S, "1"), {1, 1}));
  CHECK(one.teams[0].cores == std::vector<int>{0});
  CHECK(one.teams[0].pus == std::vector<int>{1});
  CHECK_FALSE(one.scheduler);

  // KNL with "0-3,8": cores 0 and 2, one in each of tiles 0 and 1.
  Topology knl = synthetic(kKnl, "0-3,8");
  Placement two = value_or_throw(place_executors(knl, {2, 1}));
  check_invariants(knl, {2, 1}, two);
  CHECK(two.teams[0].cores == std::vector<int>{0});
  CHECK(two.teams[1].cores == std::vector<int>{2});
  CHECK(two.teams[1].pus == std::vector<int>{8});
  CHECK_FALSE(two.tiles_shared);
  CHECK(
      error_of(knl, 1, 3) ==
      "1 executor x 3 threads need 3 cores; this process may use 2 (cpuset 0-3,8) of the machine's "
      "68 cores; threads count cores, not hardware threads (4 per core here)");
}

TEST_CASE("placement on this machine", "[placement]") {
  Topology t = value_or_throw(Topology::load_this_machine());
  const int usable = static_cast<int>(t.usable_cores().size());
  REQUIRE(usable >= 1);
  for (int n = 1; n <= usable; ++n) {
    for (int k = 1; n * k <= usable; ++k) {
      PlacementRequest req{n, k};
      Placement p = value_or_throw(place_executors(t, req));
      check_invariants(t, req, p);
    }
  }
  // The error names this process's cpuset, e.g. "... may use 2 (cpuset 0-1)".
  const int n = usable + 2;
  std::string expected = std::to_string(n) + " executors x 8 threads need " +
                         std::to_string(8 * n) + " cores; this process may use " +
                         std::to_string(usable) + " (cpuset " + format_cpu_list(t.allowed_pus()) +
                         ")";
  CHECK(error_of(t, n, 8).find(expected) == 0);
}

TEST_CASE("placement on the VM fixture: 1x1 reserves a scheduler core, 2x1 runs it inside",
          "[placement]") {
  Topology t = value_or_throw(Topology::from_xml(std::string(GRAPHI_SOURCE_DIR) +
                                                 "/tests/engine/data/vm_2core_private_l2.xml"));
  Placement p = value_or_throw(place_executors(t, {1, 1}));
  CHECK(p.teams[0].cores == std::vector<int>{0});
  REQUIRE(p.scheduler);
  CHECK(p.scheduler->core == 1);
  CHECK_FALSE(p.bootstrap);  // shares the scheduler's core
  p = value_or_throw(place_executors(t, {2, 1}));
  CHECK_FALSE(p.scheduler);
  CHECK_FALSE(p.tiles_shared);
  p = value_or_throw(place_executors(t, {1, 2}));
  CHECK(p.teams[0].tiles == std::vector<int>{0, 1});
  CHECK(error_of(t, 4, 8) ==
        "4 executors x 8 threads need 32 cores; this process may use 2 (cpuset 0-1)");
}
