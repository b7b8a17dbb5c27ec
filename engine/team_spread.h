// spread_openmp_team: puts the k threads of the calling thread's OpenMP team on k different
// allowed CPUs once, without pinning them. A sequential Session's team floats (its placement is
// the caller's), and libgomp starts its worker threads on the caller's CPU: until the
// scheduler's load balancing separated them, every exchange of a kernel that syncs its threads
// (an RNN step) went through a yield. A 50-step GRU of 0.045 ms took 1.2-1.5 ms a run in 2-12 of
// 30 short `graphi run` processes (2-vCPU guest, benchmarks/README.md session 29). Each thread
// sets its affinity to one CPU (the caller keeps the CPU it is on), which moves it there, and
// then restores its own mask, so nothing stays pinned.
#pragma once

namespace graphi::engine {

// No-op when k < 2 or fewer than k CPUs are allowed.
void spread_openmp_team(int k);

}  // namespace graphi::engine
