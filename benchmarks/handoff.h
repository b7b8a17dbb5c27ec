// The machine's core-to-core hand-off cost: two threads pinned to two cores bounce a counter
// through one cache line each way. Every cross-thread dispatch pays a few of these, so the
// dispatch numbers only make sense next to it (issue 3 quotes ~35 ns on the machine it was
// written on), and so does every batch-1 RNN step's exchange (graphi_bench_rnn prints it with
// its roofline; on a KVM guest it moves with where the host puts the vCPUs).
#pragma once

namespace graphi::bench {

// One-way hand-off latency in ns (half the median round trip), or a negative value when the
// process cannot run on two CPUs.
double measure_handoff_ns();

}  // namespace graphi::bench
