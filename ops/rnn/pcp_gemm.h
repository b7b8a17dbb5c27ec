// PCP GEMM executor: one row-major single-precision GEMM C[m,n] (+)= A[m,k] B[k,n] run by a thread
// team on a given PCP partition (ops/rnn/pcp_partition.h). Thread t computes its (i, j, k) block
// with one single-threaded LIBXSMM microkernel dispatched at create() time. ops/ only.
//
// K splits (xk > 1) are reduced without atomics, in a fixed order (so results do not depend on
// timing): the bk = 0 thread of each C block writes (or accumulates into) C directly, the bk >= 1
// threads write partial blocks into the caller's scratch, all members meet at one barrier, then
// the xk threads of each C block each add the partials into their own slice of that block,
// C += P1 + P2 + ... in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/base.h"
#include "ops/kernel.h"
#include "ops/rnn/pcp_partition.h"
#include "ops/rnn/spin_barrier.h"
#include "ops/xsmm.h"

namespace graphi::ops {

struct PcpGemmDesc {
  int64_t m = 0, n = 0, k = 0;        // C[m,n] = A[m,k] B[k,n]; PCP's I = m, J = n, K = k
  int64_t lda = 0, ldb = 0, ldc = 0;  // row strides in floats: lda >= k, ldb >= n, ldc >= n
  bool accumulate = false;            // false: C = A B; true: C += A B
};

class PcpGemm {
 public:
  PcpGemm() = default;

  // Plans the blocks of `part` and dispatches their microkernels (at most 8 distinct shapes).
  // team_size is the number of threads that will call run() (>= part.threads(); members beyond
  // part.threads() only join the barrier). Errors: invalid_argument for bad dims, strides,
  // a partition that does not fit the dims or the team; unsupported when LIBXSMM cannot JIT a
  // block (the caller can fall back to another GEMM).
  static Result<PcpGemm> create(const PcpGemmDesc& desc, const PcpPartition& part, int team_size);

  // Bytes of TeamContext::scratch run() needs (K-split partial blocks; 0 when xk == 1).
  size_t scratch_bytes() const { return scratch_bytes_; }
  const PcpPartition& partition() const { return part_; }
  const PcpGemmDesc& desc() const { return desc_; }
  // True when run() waits on the barrier (xk > 1); otherwise barrier may be nullptr.
  bool needs_barrier() const { return part_.xk > 1; }

  // Called by every member of the team (team.ithr in [0, team_size), team.nthr == team_size),
  // with the same a, b, c and barrier (a barrier of team_size members). team.scratch must hold
  // scratch_bytes() bytes, shared by the team and 64-byte aligned. On return the caller's own
  // share is done; C is complete once every member has returned (put a team barrier before
  // reading it). No allocation, no errors: everything was checked in create().
  void run(const TeamContext& team, SpinBarrier* barrier, const float* a, const float* b,
           float* c) const noexcept;

 private:
  struct ThreadPlan {
    PcpBlock block;
    xsmm::SmmKernel kernel;       // the block's microkernel (beta 0, or 1 if accumulating)
    int64_t partial_offset = -1;  // floats into scratch; -1 = writes C directly (bk == 0)
    int64_t partial_ld = 0;
    // The slice of its C block this thread reduces after the barrier (xk > 1), relative to
    // the block: rows [r0, r1), columns [c0, c1).
    int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  };

  PcpGemmDesc desc_;
  PcpPartition part_;
  int team_size_ = 0;
  size_t scratch_bytes_ = 0;
  std::vector<ThreadPlan> plans_;  // one per thread t < part_.threads()
};

}  // namespace graphi::ops
