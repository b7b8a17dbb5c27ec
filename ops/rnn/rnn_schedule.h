// Schedule search for the fused RNN sequence kernel (DeepCPU section 5.1, "MM-DAG scheduling",
// with the parallelism generator of 5.2.2 and PCP of 5.2.3): what can be chosen per layer, the
// phased schedules that survive the paper's three pruning rules, the candidates the kernel
// calibrates at init, and the on-disk cache of the winners. Pure functions plus file I/O; ops/
// only.
//
// Phased schedules. One time step of a cell is a small DAG of fused matrix multiplications
// (MM fusion, 5.2.1, has already merged the gate MMs that share an input):
//   LSTM, RNN, GRU with linear_before_reset = 1:
//     X = x_t W^T (time-independent), H = h_{t-1} R^T (time-dependent)
//   canonical GRU:
//     X = x_t W^T, Hzr = h_{t-1} R_zr^T, Hh = (r_t * h_{t-1}) R_h^T, where Hh needs X and Hzr
//     of the same step (through r_t).
// A phased schedule assigns every MM to an ordered phase. enumerate_phased_schedules() lists
// those that satisfy (i) the time-dependent phases of every step look the same (symmetry; an
// MM that does not read h may sit in a phase of its own step or of the step before), (ii) two
// consecutive phases of the same type depend on each other (else they would be one phase),
// (iii) time-independent phases come first (the hoisted input projection X of all steps is
// one phase, computed before the recurrence; no phase inside the recurrence may be
// time-independent).
//
// The kernel runs two of them: "per-step" (X_t in the same phase as the step's first
// recurrent MM: the hoist chunk is 1 step) and "hoisted" (X of all steps first; the kernel
// computes it in chunks of `chunk` steps so the gate pre-activations stay within a few MiB:
// chunk is a knob of the search). The kernel has no "pipelined" variant (X_{t+1} computed during
// step t): those schedules are listed, marked kernel_supported = false, and the search skips
// them. With X hoisted there is nothing left to pipeline, so they could only matter when the
// input sequence is not available ahead of the recurrence.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/base.h"

namespace graphi::ops {

// ---- the MM-DAG and its phased schedules ----------------------------------------------------

struct RnnMm {
  std::string name;             // "X", "H", "Hzr", "Hh"
  bool time_dependent = false;  // reads h_{t-1}
  std::vector<int> deps;        // MMs of the same step that must finish first (indices)
};

// The fused MMs of one step of the cell (see above). canonical_gru selects the 3-MM DAG.
std::vector<RnnMm> rnn_mm_dag(bool canonical_gru);

struct PhasedSchedule {
  std::vector<std::string> independent;            // hoisted MMs (all steps); empty = none
  std::vector<std::vector<std::string>> per_step;  // phases of step t; "X+1" = X of step t+1
  bool kernel_supported = false;
  std::string name;               // "hoisted", "per-step", "pipelined"
  std::string to_string() const;  // "[X*] {H}", "{X,Hzr} {Hh}": for logs and tests
};

// Every phased schedule of the DAG that satisfies rules (i)-(iii), without duplicates; the
// hoisted ones first.
std::vector<PhasedSchedule> enumerate_phased_schedules(const std::vector<RnnMm>& dag);

// ---- the kernel's knobs ------------------------------------------------------------------------

struct RnnSchedule {
  int threads = 1;              // parallelism degree p <= team size (members >= p idle)
  int xi = 1, xj = 1;           // PCP partition of the recurrent GEMM: batch rows x hidden units
  int64_t chunk = 1;            // steps per hoisted input-projection chunk (1 = per-step schedule)
  int rec_tile = 32;            // columns per packed weight panel / microkernel, recurrent GEMM
  bool zigzag = false;          // alternate the panel order every step (L2 keeps the last panels)
  bool searched = false;        // chosen by calibration (else the analytical default)
  double measured_ms = 0;       // its calibration time (one shortened run), 0 = not measured
  int candidates_measured = 0;  // by the calibration that chose it (0: not calibrated here)
  bool disturbed = false;       // calibrated while other threads took the team's CPUs

  bool operator==(const RnnSchedule& o) const {
    return threads == o.threads && xi == o.xi && xj == o.xj && chunk == o.chunk &&
           rec_tile == o.rec_tile && zigzag == o.zigzag;
  }
  // "p2 1x2 hoisted chunk 100 tile 256 zigzag (calibrated)": for `graphi info` and logs.
  std::string to_string() const;
};

// What the search needs to know about a layer.
struct RnnLayerShape {
  std::string cell;  // "LSTM", "GRU", "GRU-lbr", "RNN" (+ " layout1")
  int64_t seq_len = 1, batch = 1, input_size = 1, hidden = 1;
  int directions = 1;
  int gates = 4;  // in the first recurrent GEMM group (canonical GRU: 2)
  bool canonical_gru = false;
  int team = 1;
  int64_t l2_bytes = 1 << 20;                     // one core's private L2
  int64_t hoist_budget_bytes = int64_t{4} << 20;  // gate pre-activations per hoisted chunk
  int weight_bytes = 4;                           // per stored weight (bf16: 2)
  // Recurrent panel width (a multiple of 16) whose panels the one-row GEMV reads as one
  // contiguous stream each: the width of its register block (fp32 AVX-512, bf16, int8: 64).
  int stream_tile = 64;
  std::string key() const;  // cache key (without the CPU signature)
};

// The analytical default: PCP's cross-step cost picks (xi, xj) for the full team (more unit
// splits on ties), the largest chunk within hoist_budget_bytes, stream_tile-wide panels for
// GEMV-like steps (<= 2 rows), zigzag when a thread's recurrent weights exceed half its L2.
RnnSchedule default_rnn_schedule(const RnnLayerShape& s);

// The calibration candidates: every kernel-supported phased schedule (per-step: chunk 1;
// hoisted: the default chunk, and 8 when that is > 16) x every parallelism degree p in
// [1, team] x the best two PCP partitions of p (rows x units, no K split) x two recurrent
// panel widths (GEMV-like steps: stream_tile first, then 256, 128 and the slab when R stays in L2)
// x zigzag (only where a thread's weights overflow half its L2). The default comes first; no
// duplicates.
std::vector<RnnSchedule> rnn_schedule_candidates(const RnnLayerShape& s);

// ---- calibration budget ------------------------------------------------------------------------

// A per-step cost model of a candidate (microseconds, for ranking only; not a prediction of the
// measured time): the thread's recurrent weights streamed from L2 (the share that fits half of
// it) and L3 (the rest; zigzag keeps another half L2 warm), the per-step input weights when the
// chunk is 1, the thread's GEMM flops at a nominal FMA rate, the step's exchange when the units
// are split, and a per-thread fork cost.
double rnn_schedule_model_us(const RnnLayerShape& s, const RnnSchedule& c);

// The candidates ordered by that model, cheapest first; the first one (the analytical default)
// stays first, ties keep their order.
std::vector<RnnSchedule> rank_rnn_candidates(const RnnLayerShape& s,
                                             std::vector<RnnSchedule> cands);

// How calibration spends its budget (a hard wall-clock bound on a loaded machine too).
struct CalibrationLimits {
  double budget_ms = 200;  // from the calibration's start, the probe included
  int max_candidates = 8;  // measured at most (the model ranked them)
  int patience = 4;        // stop after this many measured in a row without a 2% gain
  double min_gain = 0.02;
  // A candidate that beat the default is timed again right after the default, where the budget
  // allows, and replaces it only if it wins by min_gain again.
  bool confirm = true;
};
struct CalibrationOutcome {
  int best = -1;  // index into the candidates, -1 when none could be measured
  double best_ms = 0;
  int measured = 0;       // candidates measured (started)
  double elapsed_ms = 0;  // from start to the end of the last measurement
  std::string stop;       // "all", "budget", "max candidates", "no gain"
  // "" (no challenger, or no time left), "confirmed", "default kept" (the challenger did not
  // win again).
  std::string confirmation;
};
// Measures candidates 0, 1, ... in order with measure(i, deadline_ms), which returns the
// candidate's time (ms) or nullopt when it cannot run, and may cut its repetitions at the
// deadline (absolute, on now()'s clock). Candidate 0 is always measured. Before each later one
// the deadline is checked against the longest measurement so far (set-up included): a candidate
// that would end past it is not started. So the calibration ends within the budget unless one
// measurement runs longer than every earlier one did (a preempted run), and then by at most
// that measurement. `now` returns milliseconds (an injected clock in tests). With
// limits.confirm, a best other than candidate 0 is confirmed when two more of the longest
// measurement still fit the budget: candidate 0 and the best are measured again (in that order)
// and the best stays only if it is faster by min_gain again, else candidate 0 is chosen (on a
// KVM guest the host's speed and vCPU placement can change within one search: the Zen 5 guest
// once cached 128-column panels for LSTM h256 b1: 0.51-0.63 ms per run against 0.36-0.47 for
// the default, 3 interleaved runs).
CalibrationOutcome run_calibration(
    size_t num_candidates, double start_ms, const CalibrationLimits& limits,
    const std::function<double()>& now,
    const std::function<std::optional<double>(size_t, double)>& measure);

// ---- cache -------------------------------------------------------------------------------------

// Bumped when the sequence kernel (or its calibration) changes in a way that can reorder the
// candidates (a cached choice calibrated on an older kernel is then recalibrated, not reused). 2:
// one-row GEMV (ops/rnn/gemv_rows.h) and the own-units-first exchange at batch 1. 3: no short hoist
// chunks when the input weights do not share the L2 with the recurrent ones. 4: a whole-slab panel
// width among the candidates of GEMV-like steps whose weights stay in L2. 5: short hoist chunks for
// GEMV-like steps only while the thread's W and R fill at most 3/4 of its L2. 6: GEMV-like steps
// streaming R from L3 default to stream_tile-wide panels. 7: the calibration times runs of 2 ms
// and more best of 2 and plans its steps for the runs it makes (session 21's best of 4 for all
// had left long layers with few candidates measured: LSTM H256 B20 cached a 12.2 ms schedule).
// 8: GEMV-like steps default to stream_tile-wide panels with R in L2 too (AMD Zen 5). 9: R packed
// in k blocks at each thread's own units when steps run own-units-first (TiledGemm k_splits).
// 10: bf16 R in those k blocks too, int8 R block by block at the direction's unit blocks.
// 11: a challenger must beat the default twice (CalibrationLimits::confirm).
// 12: zigzag walks the bf16 / int8 k blocks of R last to first too (before, the first block was
// the oldest in L2 at every step and zigzag gained nothing there: int8 LSTM h1024 b1 recurrence
// 2.08 -> 1.75 ms on a Zen 5), so earlier verdicts against zigzag are stale.
// 13: verdicts taken while other processes took the team's CPUs are not reused, and teams of
// two or more key theirs by the exchange latency (a Zen 5 guest's cache held 1 thread, chunk 8
// for LSTM H64 B1 T100 on 2: 0.061 ms per run against 0.031 for the two-thread default).
// 14: the hoisted projection on register tiles (TiledGemm's register_tiles: C over the whole
// k), which changes what hoisting costs against the step's other work; layers whose R overflows
// half the L2 calibrate zigzag walks only, on the whole team.
inline constexpr int kRnnKernelVersion = 14;

// "Intel(R) Xeon(R) Processor|fam 6 model 167|2 cpus|L2 2097152|libxsmm 1.17 (target cpx)|
// kernel 3" (the last field: kRnnKernelVersion).
std::string cpu_signature();

// $GRAPHI_CACHE_DIR/rnn_schedules.json, else $XDG_CACHE_HOME/graphi/rnn_schedules.json, else
// $HOME/.cache/graphi/rnn_schedules.json; "" if none of them is set.
std::string rnn_schedule_cache_path();

// The entry for key + signature. A missing file or entry is nullopt; a corrupt file or entry is
// nullopt plus a warning on stderr (once per path). Never throws.
std::optional<RnnSchedule> load_cached_schedule(const std::string& path, const std::string& key,
                                                const std::string& signature);
// Adds or replaces the entry (read-modify-write, written to a temporary file and renamed, so
// readers never see a half-written file). A corrupt existing file is replaced. Errors (an
// unwritable directory) come back as Status; callers warn and go on.
Status store_cached_schedule(const std::string& path, const std::string& key,
                             const std::string& signature, const RnnSchedule& s);

// GRAPHI_RNN_SCHEDULE_SEARCH=0 (or off, false, no) turns the search off; default on. The node
// attribute graphi_schedule_search (0 | 1) overrides the environment.
bool rnn_schedule_search_enabled_by_env();

// Calibration time budget per distinct layer shape: GRAPHI_RNN_SEARCH_BUDGET_MS, default 200.
double rnn_schedule_search_budget_ms();

}  // namespace graphi::ops
