// Two ways of running the same work, timed against each other on this machine: the measurement
// behind the choices graphi makes at load (whole batch or slices, profiler/batch_split_choice.h;
// the analytical split or its contender, profiler/split_check.h). The runs alternate, and which
// goes first alternates too, so a drift of the machine's speed (a VM's host moving its vCPUs,
// a turbo level) hits both alike; medians of blocks; and it says whether other processes held
// the CPUs meanwhile, since a verdict taken then would outlive the load in a cache.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "engine/session.h"
#include "graph/base.h"
#include "graph/graph.h"

namespace graphi::profiler {

struct InterleavedTimingOptions {
  int min_blocks = 3;         // per side
  int max_rounds = 15;        // a round times one block of each
  double min_total_ms = 200;  // of timed rounds (both sides), unless max_rounds ends them first
  // Runs per block: as many as fill block_ms by the fastest of up to three more runs of a (after
  // the warm-up), at least one, so that a measurement of runs of a few microseconds gets its
  // blocks over min_total_ms rather than ending at max_rounds. 0: one run per block.
  double block_ms = 0;
  double disturbed_share = 0.15;  // of all CPUs, used by other processes: "disturbed"
  bool a_warm = false;            // a ran already (its warm-up run is skipped)
  // Warm-up: one untimed run of each, or runs of both in turn for this long: a Session's first
  // runs of a few microseconds each pay for first touches and thread wake-ups for a while (the
  // PathNet layer at batch 1: 0.33 ms a run over its first 200, 0.085 after).
  double warmup_ms = 0;
};

struct InterleavedTiming {
  double a_ms = 0, b_ms = 0;  // medians over the blocks of the time per run
  double others_share = 0;    // of the CPUs other processes used during the timed rounds
  bool disturbed = false;     // others_share > options.disturbed_share
  double elapsed_s = 0;       // of the whole measurement, warm-ups included
  int runs_per_block = 1;
};

// The warm-up (a then b), then rounds of one block
// of each until both have min_blocks and min_total_ms have passed, or max_rounds; never less
// than 100 ms of rounds (what /proc/stat's ticks need to judge other processes' share). A run that
// fails ends the measurement with its error.
Result<InterleavedTiming> time_interleaved(const std::function<Status()>& run_a,
                                           const std::function<Status()>& run_b,
                                           const InterleavedTimingOptions& options = {});

// CPU time (s) that other processes (and the hypervisor: steal) used on all CPUs since boot:
// /proc/stat's busy ticks minus this process's CPU time; nullopt when unreadable. Tick
// resolution (10 ms per CPU), so only differences over 100 ms and more mean anything.
std::optional<double> others_cpu_s();

// Milliseconds on the steady clock.
double now_ms();

// What the choices measured at load run on: a zero tensor for every input of `g`, by name.
engine::NamedTensors zero_inputs(const graph::Graph& g);

// A measured value for their messages: three significant digits ("0.0406", "37.4").
std::string three_digits(double v);

}  // namespace graphi::profiler
