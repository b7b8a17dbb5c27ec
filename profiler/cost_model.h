// CostModel: predicts the makespan of a graph under each executor x thread split, so that the
// profiler calibrates only the most promising ones (GRNN, seed 001 section 7: a model that
// ranks configurations, then light measurement of the top K) and `--plan auto` can choose a
// split without measuring anything.
//
// The model, in three parts (docs/PROFILER.md states its assumptions):
//  1. Per-op cost as a function of team size, Amdahl's law with a serial fraction per op
//     class (op type):   t_i(k) = t_i(1) * (s_c + (1 - s_c) / k)   (+ team_sync_us if k > 1)
//     s_c > 1 is allowed: ops that get slower on a team (too small to split). Small ops
//     (OpDef::small) and narrow ones (engine::tiny_for_team) always run alone: t_i(k) = t_i(1).
//     Analytical (no measurement): t_i(1) = max(flops / peak, bytes / bandwidth) + op_overhead
//     from the ops' cost hints (a roofline with cache-resident operands: the weights of a
//     served model stay in cache between runs), s_c = sequence_serial for the RNN sequence
//     ops, default_serial for the others, plus a fork/join cost per team op.
//     Fitted: t_i(1) measured under 1x1, s_c fitted per class from the class's total time at
//     k = 1 and at k = K (1xK, the largest team), team sync folded into s_c.
//  2. The graph: the makespan simulator's run of the critical-path-first scheduler on n
//     executors (profiler/simulator.h: the runtime's own ready order and sharing rules), so
//     the graph's width per level and its critical path both bound the prediction.
//     Fitted with the runs' makespans: the time outside the ops' spans per op, at k = 1 and
//     k = K (interpolated in k), is added to every op: on a loaded machine a team's wake-ups
//     can cost far more than its ops.
//  3. Overheads: a hand-off cost each time an op moves to another executor (higher when the
//     scheduler role has no core of its own), a per-op dispatch cost of the parallel runtime,
//     none for the sequential executor.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/plan.h"
#include "graph/graph.h"
#include "profiler/config_space.h"

namespace graphi::profiler {

// The DAG as the model sees it: node ids are the Graph's (= the Plan's) node ids.
struct ModelGraph {
  std::vector<std::string> op;  // op type per node
  std::vector<double> flops, bytes;
  std::vector<uint8_t> small;
  std::vector<uint8_t> narrow;  // run on one thread of any team (engine::tiny_for_team)
  // Small or narrow: t(k) = t(1). (`narrow` may be left empty by hand-made graphs.)
  bool runs_alone(size_t i) const { return small[i] || (i < narrow.size() && narrow[i]); }
  std::vector<uint32_t> succ_offsets;  // CSR, size n + 1
  std::vector<uint32_t> succ;
  size_t num_nodes() const { return op.size(); }
};

// From a Graph through the op registry's cost hints (no kernels compiled: cheap); errors
// (kUnsupported) name a node whose op type is unknown.
Result<ModelGraph> model_graph(const graph::Graph& g);
// From a compiled Plan (its cost hints, small flags and successor lists).
ModelGraph model_graph(const engine::Plan& plan);

// Width: the number of non-small ops per depth (depth = longest path in ops from a source).
struct GraphShape {
  std::vector<size_t> width_per_depth;
  size_t max_width = 0;  // largest entry: 1 means a chain (no inter-op parallelism)
};
GraphShape graph_shape(const ModelGraph& g);

struct MachineConstants {
  double peak_gflops = 50;      // per core, for t(1) from cost hints (analytical model only)
  double bandwidth_gbs = 100;   // per core from cache, likewise
  double op_overhead_us = 0.3;  // per non-small op at k = 1 (kernel entry, small-size losses)
  double small_op_us = 0.05;    // per small op
  // Serial fraction of an op on a team (analytical model). Sequence ops (LSTM, GRU, RNN,
  // PhasedLSTM and their gradients: a team barrier every time step) were fitted to the
  // quiet-machine validation of session 6 (benchmarks/README.md, sim-validation): 1x2
  // sequential against 1x1 on the fused LSTM (4 ops of ~116 us: s = 0.28) and GRU (~86 us:
  // s = 0.30), with the 2 us fork/join below (0.05 there predicted a team of 2 at 1.9x where
  // it measured 1.5x). Other ops have no barrier inside: whole CNNs at batch 8 measured
  // 1.99x (inception block), 1.81x (GoogleNet) and 1.68x (PathNet, small ops) on 1x2 against
  // 1x1 (session 9, AMD EPYC), s = 0.0-0.19, so 0.1 (0.3 there predicted 2x1 faster on
  // PathNet at batch 8, where 1x2 measured faster).
  double sequence_serial = 0.3;
  double default_serial = 0.1;
  double team_sync_us = 2.0;  // fork/join of a team of k > 1 per op (analytical model)
  // Engine overheads, from benchmarks/README.md's dispatch rows on this class of machine
  // (cpf 2x1 on the LSTM-shaped DAG: ~0.55 us/op against ~1.0 us/op 1x1, 140-160 ns one-way
  // core-to-core hand-off, plus the wake-up of a parked executor now and then).
  double dispatch_us = 0.1;         // per op in the parallel runtime (heap, rings), n > 1
  double handoff_us = 0.5;          // an op run by another executor than the one that readied it
  double handoff_no_core_us = 1.0;  // likewise when the scheduler role has no core of its own
};

// The analytical serial fraction of an op class: sequence_serial for the RNN sequence ops (and
// their gradients), default_serial for every other op.
double analytical_serial(const MachineConstants& m, const std::string& op);

class CostModel {
 public:
  // From cost hints only (`--plan auto` without a cached plan).
  static CostModel analytical(const ModelGraph& g, const MachineConstants& m = {});
  // From measured per-node times (us) at k = 1 and, when kmax > 1, at k = kmax (same nodes).
  // A class whose ops took no measurable time at k = 1 keeps the analytical serial fraction.
  // With the measured makespans of those runs (us, > 0), the time outside the ops' spans
  // (team wake-ups, barriers, dispatch) becomes a per-op overhead at k = 1 and k = kmax,
  // interpolated linearly in k: what a team costs beyond its ops on this machine.
  static CostModel fitted(const ModelGraph& g, std::span<const double> us_k1,
                          std::span<const double> us_kmax, int kmax, const MachineConstants& m = {},
                          double makespan_k1_us = 0, double makespan_kmax_us = 0);

  // t_i(k), microseconds.
  double node_us(size_t node, int k) const;
  // Serial fraction of an op class ("MatMul"); the analytical one (sequence_serial or
  // default_serial) for a class without a fit.
  double serial_fraction(const std::string& op) const;
  const std::vector<std::pair<std::string, double>>& serial_fractions() const { return serial_; }
  const std::string& source() const { return source_; }  // "cost hints" / "measured ..."
  const MachineConstants& machine() const { return m_; }
  const ModelGraph& graph() const { return g_; }

  struct Prediction {
    double makespan_us = 0;
    double critical_path_us = 0;  // longest path at this team size (a lower bound)
    double work_us = 0;           // sum of op times at this team size
    int handoffs = 0;             // ops the simulation moved between executors
  };
  Prediction predict(const Config& c) const;

 private:
  ModelGraph g_;
  MachineConstants m_;
  std::vector<double> t1_;                              // per node, us at k = 1
  std::vector<std::pair<std::string, double>> serial_;  // per op class
  std::vector<double> node_serial_;                     // per node (its class's)
  bool analytical_sync_ = true;                         // add team_sync_us for k > 1
  double overhead_k1_ = 0, overhead_kmax_ = 0;          // fitted per-op overhead (us)
  int kmax_ = 1;
  std::string source_;
};

struct RankedConfig {
  Config config;
  CostModel::Prediction predicted;
};
// Every config with its prediction, best (smallest predicted makespan) first; ties keep the
// input order.
std::vector<RankedConfig> rank_configs(const CostModel& model, std::span<const Config> configs);

// `--plan auto` without measurements: the best ranked config, but a split with n > 1 only when
// the graph has inter-op parallelism (max width > 1) and the model predicts it at least `margin`
// faster than the best single executor (a misprediction must not make the default slower than
// one executor, and the prediction for several executors is the one that misses the cost of
// concurrent ops sharing caches and memory). A chain (width 1) gets one executor, the team size the
// model predicts fastest (all cores unless its ops are too small to gain from a team: a 2-thread
// team costs more than it saves on ops of a few microseconds). `why` gets one sentence.
// `contender` (if given) gets the best ranked config on the other side of that decision, which a
// measurement may prefer (profiler/split_check.h): for a chain, the best single executor of
// another team size; else the best single executor when the choice has several, the best split
// into several when it has one; nullopt when there is none. `predicted_us` (if given) gets the
// chosen config's predicted makespan (unchanged when nothing fits the machine).
Config analytical_choice(const CostModel& model, std::span<const Config> configs, std::string* why,
                         double margin = 0.10, std::optional<Config>* contender = nullptr,
                         double* predicted_us = nullptr);

}  // namespace graphi::profiler
