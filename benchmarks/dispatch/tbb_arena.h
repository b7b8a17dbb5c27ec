// The one oneTBB arena every oneTBB competitor runs in. oneTBB's market has a fixed pool of
// worker threads (hardware threads - 1 = one here) that it lends to arenas on demand; with one
// arena per competitor the worker could stay parked in the arena of the previous competitor
// and the next one ran on the calling thread alone (measured: the LSTM-shaped DAG at 1 us ran at
// 1024 ns/op in one run and 548 in another). One shared arena keeps the worker where the work is.
#pragma once

#include <oneapi/tbb/task_arena.h>

namespace graphi::bench {

// The arena of `threads` slots (the calling thread included), created on first use. All oneTBB
// competitors of a process must ask for the same count.
tbb::task_arena& tbb_arena(int threads);

}  // namespace graphi::bench
