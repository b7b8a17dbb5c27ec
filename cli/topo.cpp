// graphi topo: prints the machine as the engine sees it (packages, NUMA nodes, L3 groups, tiles
// with their cores, hardware threads, the allowed cpuset) and, given --executors/--threads, the
// placement: each executor's cores, PUs and tiles, and the scheduler / bootstrap cores.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "cli/json_output.h"
#include "cli/omp_spin_default.h"
#include "engine/placement.h"
#include "engine/thread_binder.h"
#include "engine/topology.h"

namespace graphi::cli {

namespace {

using engine::CoreGroup;
using engine::CoreInfo;
using engine::format_cpu_list;
using engine::Placement;
using engine::Topology;

// PUs in member order: a compact list when ascending, else each id (member i -> i-th id).
std::string pu_list(const std::vector<int>& pus) {
  bool ascending = true;
  for (size_t i = 1; i < pus.size(); ++i) ascending = ascending && pus[i] > pus[i - 1];
  if (ascending) return format_cpu_list(pus);
  std::string s;
  for (int pu : pus) s += (s.empty() ? "" : ",") + std::to_string(pu);
  return s;
}

std::string with_bytes(const std::string& label, uint64_t bytes) {
  return bytes ? label + " (" + human_bytes(static_cast<double>(bytes)) + ")" : label;
}

void print_machine(const Topology& t) {
  std::printf("machine: %s\n", t.source().c_str());
  std::printf("  %s\n", t.summary().c_str());
  std::printf("  allowed cpuset: %s (%zu of %zu cores usable)\n",
              format_cpu_list(t.allowed_pus()).c_str(), t.usable_cores().size(), t.cores().size());
  std::printf(
      "  hardware threads per core: %d (executor threads count cores; one thread per core)\n",
      t.threads_per_core());
  std::printf("  packages:\n");
  for (const CoreGroup& g : t.packages())
    std::printf("    package %d: cores %s\n", g.id, format_cpu_list(g.cores).c_str());
  std::printf("  NUMA nodes:%s\n", t.numa_nodes().empty() ? " none reported" : "");
  for (const CoreGroup& g : t.numa_nodes()) {
    std::printf("    %s: cores %s\n", with_bytes("node " + std::to_string(g.id), g.bytes).c_str(),
                format_cpu_list(g.cores).c_str());
  }
  std::printf("  L3 groups:%s\n", t.l3_groups().empty() ? " none reported" : "");
  for (const CoreGroup& g : t.l3_groups()) {
    std::printf("    %s: cores %s\n", with_bytes("L3 " + std::to_string(g.id), g.bytes).c_str(),
                format_cpu_list(g.cores).c_str());
  }
  std::printf("  tiles (cores sharing an L2; a private L2 makes a tile of 1):\n");
  for (const CoreGroup& g : t.tiles()) {
    std::string cores;
    for (int c : g.cores) {
      const CoreInfo& core = t.core(c);
      cores += (cores.empty() ? "" : ", ") + std::string("core ") + std::to_string(c) + " (PU" +
               (core.pus.size() > 1 ? "s " : " ") + pu_list(core.pus) +
               (core.usable() ? "" : ", not allowed") + ")";
    }
    std::string label = "tile " + std::to_string(g.id);
    if (g.bytes) label += " (L2 " + human_bytes(static_cast<double>(g.bytes)) + ")";
    std::printf("    %s: %s\n", label.c_str(), cores.c_str());
  }
}

void print_placement(const Placement& p) {
  std::printf("placement: %d executor%s x %d thread%s\n", p.executors, p.executors == 1 ? "" : "s",
              p.threads, p.threads == 1 ? "" : "s");
  for (size_t e = 0; e < p.teams.size(); ++e) {
    const engine::ExecutorPlacement& t = p.teams[e];
    std::string where;
    if (t.l3 >= 0) where += "  L3 " + std::to_string(t.l3);
    if (t.numa >= 0) where += "  NUMA " + std::to_string(t.numa);
    if (t.package >= 0) where += "  package " + std::to_string(t.package);
    std::printf("  executor %zu: cores %s  PUs %s  tiles %s%s\n", e,
                format_cpu_list(t.cores).c_str(), pu_list(t.pus).c_str(),
                format_cpu_list(t.tiles).c_str(), where.c_str());
  }
  auto reserved = [](const char* role, const std::optional<engine::ReservedCore>& r,
                     const char* otherwise) {
    if (r)
      std::printf("  %s: core %d (PU %d, tile %d)\n", role, r->core, r->pu, r->tile);
    else
      std::printf("  %s: %s\n", role, otherwise);
  };
  reserved("scheduler", p.scheduler,
           "no core of its own; the scheduler role runs inside the executors");
  reserved("bootstrap", p.bootstrap,
           p.scheduler ? "no core of its own; shares the scheduler's core"
                       : "no core of its own; runs inside the executors");
  for (const std::string& n : p.notes) std::printf("  note: %s\n", n.c_str());
}

}  // namespace

int topo_command(int argc, char** argv) {
  Args args(
      "graphi topo [--synthetic \"DESC\" | --xml FILE] [--cpuset LIST] [--executors N --threads K] "
      "[--json [--json-indent N]]",
      "Prints the machine as graphi sees it: packages, NUMA nodes, L3 groups, tiles (cores\n"
      "sharing an L2) with their cores and hardware threads, and the cpuset this process may\n"
      "use. With --executors and --threads, also the placement: each executor's cores, the PUs\n"
      "its team binds to, its tiles, and the scheduler and bootstrap cores. --synthetic and\n"
      "--xml describe machines we do not have (hwloc synthetic strings / lstopo XML).\n"
      "Exit codes: 0 ok, 1 runtime error (unreadable XML, a split that does not fit), 2 usage.\n"
      "Examples:\n"
      "  graphi topo --executors 2 --threads 1\n"
      "  graphi topo --synthetic \"package:1 l2:34 core:2 pu:4\" --executors 16 --threads 4\n"
      "  graphi topo --synthetic \"package:2 numa:4 l3:2 l2:8 core:1 pu:2\" --cpuset 0-63 --json");
  args.option("--synthetic", "DESC",
              "an hwloc synthetic machine, e.g. \"package:2 l3:1 core:12 pu:2\"");
  args.option("--xml", "FILE", "an hwloc XML machine (lstopo-no-graphics --of xml > FILE)");
  args.option("--cpuset", "LIST", "only use these PUs (OS ids, taskset syntax, e.g. 0-3,8)");
  args.option("--executors", "N", "number of executors to place, 1..4096 (needs --threads)");
  args.option("--threads", "K", "cores per executor, 1..4096 (needs --executors)");
  args.flag("--no-reserve",
            "do not reserve scheduler and bootstrap cores even when cores are spare");
  args.flag("--json", "print one JSON object on stdout instead of text");
  args.option("--json-indent", "N", "indent --json output by N spaces (default: one line)");
  if (auto code = args.parse(argc, argv)) return *code;
  if (args.has("--synthetic") && args.has("--xml"))
    return args.usage_error("--synthetic and --xml are alternatives; give one");
  if (args.has("--executors") != args.has("--threads"))
    return args.usage_error(
        "--executors and --threads go together (e.g. --executors 2 --threads 4)");
  if (args.has("--no-reserve") && !args.has("--executors"))
    return args.usage_error("--no-reserve only applies with --executors and --threads");
  auto executors = args.get_int("--executors", 1, 1, 4096);
  auto threads = args.get_int("--threads", 1, 1, 4096);
  auto json_indent = args.get_int("--json-indent", 0, 0, 16);
  if (!executors || !threads || !json_indent) return kExitUsage;
  const std::string cpuset = args.get("--cpuset");
  if (args.has("--cpuset")) {
    Result<std::vector<int>> parsed = engine::parse_cpu_list(cpuset);
    if (!parsed.is_ok()) return args.usage_error("--cpuset: " + parsed.status().message());
  }
  const bool json = args.has("--json");

  Result<Topology> topo = Status::internal("unset");
  if (args.has("--synthetic")) {
    topo = Topology::from_synthetic(args.get("--synthetic"), cpuset);
    // A bad description is a bad argument value: usage error, not a runtime failure.
    if (!topo.is_ok() && topo.status().message().find("invalid hwloc synthetic") == 0)
      return args.usage_error("--synthetic: " + topo.status().message());
  } else if (args.has("--xml")) {
    topo = Topology::from_xml(args.get("--xml"), cpuset);
  } else {
    topo = Topology::load_this_machine(cpuset);
  }
  if (!topo.is_ok()) return runtime_error(topo.status());

  std::vector<std::string> warnings;
  if (topo->is_this_system()) {
    if (auto w = engine::omp_affinity_env_warning()) warnings.push_back(*w);
  }

  std::optional<Placement> placement;
  if (args.has("--executors")) {
    engine::PlacementRequest req{static_cast<int>(*executors), static_cast<int>(*threads)};
    req.reserve_scheduler = req.reserve_bootstrap = !args.has("--no-reserve");
    Result<Placement> p = engine::place_executors(*topo, req);
    if (!p.is_ok()) {
      if (!json) print_machine(*topo);
      return runtime_error(p.status());
    }
    placement = std::move(*p);
  }

  if (json) {
    nlohmann::ordered_json j;
    j["machine"] = engine::topology_to_json(*topo);
    j["placement"] =
        placement ? engine::placement_to_json(*placement) : nlohmann::ordered_json(nullptr);
    if (topo->is_this_system()) j["omp_spin"] = omp_spin_setting();
    j["warnings"] = warnings;
    print_json(j, *json_indent);
  } else {
    for (const std::string& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    print_machine(*topo);
    if (topo->is_this_system()) std::printf("  OpenMP spin-wait: %s\n", omp_spin_setting().c_str());
    if (placement) print_placement(*placement);
  }
  return kExitOk;
}

}  // namespace graphi::cli
