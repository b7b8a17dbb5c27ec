// Private-cache-aware partitioning (PCP, DeepCPU section 5.2.3): how P threads split one GEMM
// C[I,J] = A[I,K] B[K,J] into Xi x Xj x Xk blocks so that the data moved between the shared L3
// and the private L2s is minimal, and which block each thread owns. Pure functions; ops/ only.
//
// Within one GEMM (Theorem 5.2; assumes |A|+|B|+|C| fits L3 and each block's smallest operand
// fits L2), the L3<->L2 traffic of partition <Xi, Xj, Xk> is
//     Xj|A| + Xi|B| + 2 Xk|C|                                     (|.| = element counts)
// Across the T steps of a sequence (the "reuse across phases" extension of 5.2.3), B is the
// weight matrix, identical at every step; if each thread's block of it, |B| / (Xj Xk), fits the
// core's L2 and the thread-to-block mapping never changes (weight-centric streamlining, 5.2.4),
// B is read from L3 only at the first step:
//     T (Xj|A| + 2 Xk|C|) + Xi|B|          if |B| / (Xj Xk) <= |L2|
//     T (Xj|A| + Xi|B| + 2 Xk|C|)          otherwise
// PCP picks the partition minimizing the applicable cost.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/base.h"

namespace graphi::ops {

// C[i, j] = sum_k A[i, k] B[k, j]: i = rows of A and C (batch), j = columns of B and C (outputs),
// k = the reduction (inputs). B plays the role of the weights in the cross-step cost.
struct GemmDims {
  int64_t i = 0, j = 0, k = 0;
};

struct PcpOptions {
  int64_t seq_len = 1;   // T: consecutive GEMMs that reuse the same B; 1 = a single GEMM
  int64_t l2_bytes = 0;  // one core's private L2; 0 = never count B as resident (Theorem 5.2)
  int64_t elem_bytes = 4;
};

struct PcpPartition {
  int xi = 1, xj = 1, xk = 1;
  double cost = 0;             // L3<->L2 elements moved over all seq_len steps
  bool weights_in_l2 = false;  // the cross-step case applied: |B|/(Xj Xk) fits L2
  int threads() const { return xi * xj * xk; }
};

// The cost of <xi, xj, xk> under `opt` (piecewise form above; with seq_len = 1 or l2_bytes = 0
// it is Theorem 5.2's). Sets *weights_in_l2 if non-null.
double pcp_cost(const GemmDims& d, int xi, int xj, int xk, const PcpOptions& opt,
                bool* weights_in_l2 = nullptr);

// Every partition with xi*xj*xk == p exactly and xi <= I, xj <= J, xk <= K, best first. Ties
// (equal cost) prefer fewer K splits (a K split costs a reduction and a barrier), then more J
// splits (each thread's outputs and weight columns stay contiguous), then fewer I splits.
std::vector<PcpPartition> pcp_candidates(const GemmDims& d, int p, const PcpOptions& opt = {});

// The best partition for a team of `threads`. When no factorization of `threads` fits the
// dimensions (a GEMM smaller than the team), the best one for the largest p < threads that does;
// the members t >= partition.threads() then have no block. Errors: dims or threads < 1,
// seq_len < 1, negative l2_bytes, elem_bytes < 1 (invalid_argument).
Result<PcpPartition> pcp_choose(const GemmDims& d, int threads, const PcpOptions& opt = {});

// One thread's block: rows [i0, i1) of A and C, columns [j0, j1) of B and C, reduction slice
// [k0, k1). Thread t has block coordinates t = (bi * xj + bj) * xk + bk, so the xk threads that
// share one C block are consecutive. Ranges are near-equal splits; J is split in whole 16-float
// cache lines when each block gets at least 8 of them (no false sharing of C between threads).
struct PcpBlock {
  bool active = false;  // false for t >= partition.threads(): no work
  int bi = 0, bj = 0, bk = 0;
  int64_t i0 = 0, i1 = 0, j0 = 0, j1 = 0, k0 = 0, k1 = 0;
};
PcpBlock pcp_block(const GemmDims& d, const PcpPartition& part, int ithr);

// [begin, end) of part `index` of [0, n) split in `parts` near-equal pieces of whole `grain`s
// (the last piece may end in a partial grain).
std::pair<int64_t, int64_t> pcp_split(int64_t n, int parts, int index, int64_t grain = 1);

}  // namespace graphi::ops
