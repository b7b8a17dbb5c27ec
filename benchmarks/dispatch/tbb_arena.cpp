#include "benchmarks/dispatch/tbb_arena.h"

#include <memory>
#include <stdexcept>

namespace graphi::bench {

tbb::task_arena& tbb_arena(int threads) {
  static std::unique_ptr<tbb::task_arena> arena;
  static int size = 0;
  if (!arena) {
    arena = std::make_unique<tbb::task_arena>(threads);
    arena->initialize();
    size = threads;
  }
  if (size != threads)
    throw std::logic_error("tbb_arena: every oneTBB competitor must use the same thread count");
  return *arena;
}

}  // namespace graphi::bench
