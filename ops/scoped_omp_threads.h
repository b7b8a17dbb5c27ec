// Sets the calling thread's OpenMP thread-count ICV (what omp_get_max_threads() returns and the
// next parallel region's team size) for a scope and puts the caller's value back: oneDNN reads
// it when a primitive is created and when it runs, but the embedding framework's own setting
// (torch.get_num_threads() is this ICV) must survive a graphi call on its thread.
#pragma once

#include <omp.h>

namespace graphi::ops {

class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int n) : prev_(omp_get_max_threads()) {
    if (n != prev_) omp_set_num_threads(n);
  }
  ~ScopedOmpThreads() {
    if (omp_get_max_threads() != prev_) omp_set_num_threads(prev_);
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int prev_;
};

}  // namespace graphi::ops
