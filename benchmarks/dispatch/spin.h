// Busy work for the benchmark ops: a fixed number of iterations of an empty loop, calibrated
// once against std::chrono::steady_clock. A fixed iteration count (not a clock deadline) keeps
// the work real: an op whose thread is preempted still has all of its work left afterwards.
#pragma once

#include <cstdint>

namespace graphi::bench {

// Out of line and opaque to the optimizer (noipa) on purpose: calibration and every op must run
// the same machine code; an inlined or constant-propagated copy compiles to another loop that
// runs at another speed (measured: 2x apart on this machine).
void spin_iterations(uint64_t n);

// Measures the loop's speed (fastest of several timed runs, so a preempted run does not count).
// Call once before spin_iterations_for().
void calibrate_spin();
// Iterations that take about `ns` nanoseconds on this machine (0 for ns = 0).
uint64_t spin_iterations_for(int64_t ns);
// The loop's measured nanoseconds per iteration.
double spin_ns_per_iteration();
// Median over several timed batches of the time one spin_iterations(spin_iterations_for(ns))
// call takes, in ns: the op's actual work for the "ideal" bounds.
double measure_spin_ns(int64_t ns);

}  // namespace graphi::bench
