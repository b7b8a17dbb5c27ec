// How fast two members of the calling process's OpenMP team hand a cache line back and forth:
// the cost of the per-step exchange of a batch-1 RNN kernel, which decides whether splitting a
// small layer over the team pays at all.
//
// Why it is measured, not derived from the topology: on a VM the host places the vCPUs, and it
// moves them. On the 2-vCPU Zen 5 guest the same process measured a 106 ns round trip in one
// round of the RNN benchmark and 514 ns in the next (oneDNN's LSTM h64 b1 0.125 -> 0.30 ms);
// LSTM H64 B1 T100 then runs in 0.031 ms on 2 threads against 0.062 on 1 while near, and
// 0.065-0.075 against 0.063 while far. A schedule calibrated in one placement and cached for the
// other cost 2x, so the schedule cache keys its verdicts by the exchange class too.
#pragma once

#include <string>

namespace graphi::ops::rnn_wcs {

// The median round trip (ns) of a cache line between OpenMP threads 0 and 1 of a two-thread
// team pinned for the measurement to the first two CPUs the process may use (the team's own
// placement is not made yet when a kernel calibrates), measured again when the last measurement
// is a second old (1000 round trips, at most 5 ms when a member is not running; a host moves its
// vCPUs within seconds); the last good value (0 if none) when it cannot be measured (inside a
// parallel region, one CPU, or a member that never answered), and then the next call tries
// again.
double team_round_trip_ns();

// "near" (< 300 ns: cores of one die or L3 domain), "far" (anything slower: another die or
// socket, or a vCPU the host runs elsewhere) or "" (not measured); the suffix the schedule cache
// appends to the keys of teams of two or more.
std::string exchange_class(double round_trip_ns);

}  // namespace graphi::ops::rnn_wcs
