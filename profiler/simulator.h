// Simulator: predicts graphi's makespan on machines we do not have (issue 11). A discrete-event
// simulation of the parallel runtime's policies (cpf, fifo, shared-queue) and of the sequential
// executor, on a virtual machine given as an hwloc topology plus a MachineSpec (per-core speed,
// cache and memory bandwidths), with op times from per-op cost curves over the team size.
//
// What is shared with the real runtime (engine/ready_order.h): the ready order (ReadyHeap with
// the policy's keys and cpf's tie-break), how much surplus a busy executor publishes and when it
// is worth a hand-off, and the share of the central heap an idle executor claims. What is
// modelled: time (op curves, dispatch overheads), and the runtime's mechanics at the level of
// decisions (local continuation, publication to the scheduler role, claims, the shared queue's
// lock). docs/SIMULATOR.md lists the assumptions and how far each was checked.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/policy.h"
#include "engine/topology.h"
#include "engine/trace.h"
#include "profiler/config_space.h"
#include "profiler/cost_model.h"

namespace graphi::profiler {

// The simulated machine beyond its topology. Bandwidths in GB/s, sizes in bytes.
struct MachineSpec {
  std::string name = "custom";
  std::string synthetic;    // a preset's hwloc description ("" for custom)
  int executor_cores = 0;   // a preset's cores for executors (0 = all)
  double core_speed = 1.0;  // per-core speed relative to the machine the costs were measured on
  double peak_gflops_core = 50;  // per core, for op times from cost hints
  double l2_bytes = 1 << 20;     // per tile (cores sharing an L2)
  double l2_gbs = 0;             // per tile; 0 = no bandwidth limit at this level
  double l3_bytes = 0;           // whole machine (all L3s or a memory-side cache); 0 = none
  double l3_gbs = 0;             // whole machine
  double dram_gbs = 0;           // whole machine; 0 = no limit
  std::string sources;           // where the figures come from
};
// "knl7250", "xeon-2s-24c", "epyc-2x64". Errors (kInvalidArgument) list the names.
Result<MachineSpec> machine_preset(std::string_view name);
inline constexpr const char* kMachinePresets = "knl7250, xeon-2s-24c, epyc-2x64";
// "l2=90,l3=450,dram=90" (GB/s; l2 per tile, l3 and dram for the machine). Errors name the field.
Status parse_bandwidths(std::string_view spec, MachineSpec& m);

// Dispatch overheads in microseconds as measured on the 2-core VM by scripts/bench_engine.sh
// (benchmarks/README.md, session 2), and the rule that scales them to another machine:
// everything / core_speed; a hand-off between executors on different packages x cross_package.
struct DispatchCosts {
  double seq_op_us = 0.006;  // sequential executor, per op (chain, empty ops: 4.7-13 ns/op)
  double local_op_us =
      0.025;  // parallel runtime, op kept by its executor (cpf 2x1 chain: 22.8 ns/op)
  double handoff_us = 0.40;    // an op made ready on one executor starting on another (2-4 one-way
                               // core-to-core trips of 138 ns plus the claim)
  double step_us = 0.10;       // one scheduling step (drain reports, pop, push to an inbox)
  double sq_op_us = 0.07;      // shared queue: pop (lock, FIFO) per op (chain 2x1: 67 ns/op)
  double sq_lock_us = 0.03;    // of which the lock is held (serialized between executors)
  double run_start_us = 1.0;   // bootstrap + waking the executors per run
  double team_sync_us = 0.5;   // fork/join of a team per doubling of k (k=2: 0.5, k=64: 3)
  double client_wake_us = 6.0;  // per run when the client sleeps through it (no core of its own,
                                // not playing executor 0: teams of k > 1, shared-queue): it wakes
                                // executor 0 and sleeps, executor 0 wakes it at the end and yields
                                // (1x2 cpf minus 1x2 sequential, 10-op CNN: 7.8 us - start 1 -
                                // step 0.1 - local ops)
  double cross_package = 2.5;  // hand-off factor between packages
  // Scaled copy for a machine with this per-core speed.
  DispatchCosts scaled(double core_speed) const;
};
// "handoff=0.4,local=0.025,..." overrides (microseconds). Errors name the field.
Status parse_dispatch_costs(std::string_view spec, DispatchCosts& d);

// Op time as a function of team size k, per node: Amdahl with a saturation point per op class,
//   t(k) = t1 * (s + (1 - s) / min(k, k_sat)) + team_sync_us * log2(k)       (k > 1)
// floored by the machine's bandwidth for the node's bytes (bandwidth_floor_us). Small ops run
// alone: t(k) = t1. Classes by arithmetic intensity (flops per byte of the cost hint).
struct OpClassParams {
  const char* name;
  double serial;   // s
  int saturation;  // k_sat: more threads than this do not help (seed 002 Fig. 2)
};
inline constexpr double kComputeIntensity = 4.0;  // flops/byte at or above: compute class
inline constexpr OpClassParams kComputeClass{"compute (GEMM, conv, fused RNN)", 0.02, 8};
inline constexpr OpClassParams kMemoryClass{"memory (element-wise, pooling, copies)", 0.05, 16};

class OpCostCurves {
 public:
  // t1 from the cost hints on the simulated machine's core: max(flops / peak, bytes / L2 bw of
  // one core) + 0.3 us per op (0.05 for small ops).
  static OpCostCurves from_hints(const ModelGraph& g, const MachineSpec& m,
                                 const DispatchCosts& here);
  // t1 from node times measured here with teams of k_measured (a plan's cost table): the curve
  // inverted at k_measured, divided by the machine's core_speed.
  static OpCostCurves from_measured(const ModelGraph& g, std::span<const double> node_us,
                                    int k_measured, const MachineSpec& m,
                                    const DispatchCosts& here);

  // Node times measured here with teams of k (a trace of a 1xk run): used as they are for
  // teams of k instead of the curve (on this machine: --this-machine).
  void add_measured(int k, std::span<const double> node_us);
  bool measured_at(int k) const { return measured_.count(k) != 0; }

  double t1(size_t node) const { return t1_[node]; }
  const OpClassParams& op_class(size_t node) const;
  // Time of `node` on a team of k while `executors` executors share the machine's L3/DRAM.
  double node_us(size_t node, int k, int executors) const;
  double bandwidth_floor_us(size_t node, int k, int executors) const;
  const std::string& source() const { return source_; }
  int tile_size = 1;  // cores per L2 (from the topology)
  int machine_cores = 1;

 private:
  const ModelGraph* g_ = nullptr;
  MachineSpec m_;
  double sync_us_ = 0.5;
  std::vector<double> t1_;
  std::map<int, std::vector<double>> measured_;  // team size -> node times (add_measured)
  std::string source_;
};

struct SimConfig {
  int executors = 1, threads = 1;
  engine::Policy policy = engine::Policy::kCriticalPath;
  bool scheduler_core = false;        // the scheduler role has a core of its own
  bool client_sleeps = false;         // the client sleeps through the run (client_wake_us; see
                                      // engine::ParallelRuntime::client_sleeps)
  std::vector<int> executor_package;  // per executor, for cross-package hand-offs (empty: one)
  size_t report_capacity = 4096;      // the executors' report rings (publication cap)
};

struct SimResult {
  double makespan_us = 0;
  double critical_path_us = 0;  // longest path of node times (a lower bound)
  double work_us = 0;           // sum of node times
  int handoffs = 0;             // ops run by another executor than the one that made them ready
  std::vector<uint32_t> start_order;  // nodes in the order they started (ties: lower executor)
  engine::RunTrace trace;             // the simulated timeline (RunTrace format, ns from 0)
};

// Simulates one run: node_us[i] is node i's time in this config, levels are cpf's keys (the
// runtime's levels: Plan::levels() or a plan's measured ones).
SimResult simulate_schedule(const ModelGraph& g, std::span<const double> node_us,
                            std::span<const double> levels, const SimConfig& c,
                            const DispatchCosts& d);

struct SimPrediction {
  Config config;
  engine::Policy policy = engine::Policy::kCriticalPath;
  SimResult result;
};
// Every config x policy (sequential only for one executor). Configs come from
// enumerate_configs(topo) (placed with place_executors for the packages).
Result<std::vector<SimPrediction>> simulate_configs(const ModelGraph& g, const OpCostCurves& costs,
                                                    std::span<const double> levels,
                                                    const engine::Topology& topo,
                                                    std::span<const Config> configs,
                                                    std::span<const engine::Policy> policies,
                                                    const DispatchCosts& d);

// The levels the runtime computes by default (engine::compute_levels over flops + bytes of the
// cost hints), on the model graph.
std::vector<double> default_levels(const ModelGraph& g);
std::vector<double> levels_from_costs(const ModelGraph& g, std::span<const double> node_cost);

}  // namespace graphi::profiler
