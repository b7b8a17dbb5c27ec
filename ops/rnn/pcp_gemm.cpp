// PCP GEMM executor over LIBXSMM microkernels (through the ops/xsmm.h adapter).
#include "ops/rnn/pcp_gemm.h"

#include <climits>
#include <string>
#include <tuple>

namespace graphi::ops {

namespace {

constexpr int64_t kLine = 16;  // floats per 64-byte cache line

std::string dims_string(const PcpGemmDesc& d) {
  return "m=" + std::to_string(d.m) + " n=" + std::to_string(d.n) + " k=" + std::to_string(d.k) +
         " lda=" + std::to_string(d.lda) + " ldb=" + std::to_string(d.ldb) +
         " ldc=" + std::to_string(d.ldc);
}

}  // namespace

Result<PcpGemm> PcpGemm::create(const PcpGemmDesc& desc, const PcpPartition& part, int team_size) {
  if (desc.m < 1 || desc.n < 1 || desc.k < 1)
    return Status::invalid_argument("pcp gemm: dimensions must be >= 1 (" + dims_string(desc) +
                                    ")");
  if (desc.lda < desc.k || desc.ldb < desc.n || desc.ldc < desc.n)
    return Status::invalid_argument(
        "pcp gemm: row strides must satisfy lda >= k, ldb >= n, ldc >= n (" + dims_string(desc) +
        ")");
  // LIBXSMM 1.17 takes int sizes and strides.
  for (int64_t v : {desc.m, desc.n, desc.k, desc.lda, desc.ldb, desc.ldc})
    if (v > INT_MAX)
      return Status::unsupported("pcp gemm: dimension or stride beyond int range (" +
                                 dims_string(desc) + ")");
  if (part.xi < 1 || part.xj < 1 || part.xk < 1 || part.xi > desc.m || part.xj > desc.n ||
      part.xk > desc.k)
    return Status::invalid_argument("pcp gemm: partition " + std::to_string(part.xi) + "x" +
                                    std::to_string(part.xj) + "x" + std::to_string(part.xk) +
                                    " does not fit " + dims_string(desc));
  if (team_size < part.threads())
    return Status::invalid_argument("pcp gemm: partition needs " + std::to_string(part.threads()) +
                                    " threads, team has " + std::to_string(team_size));

  PcpGemm g;
  g.desc_ = desc;
  g.part_ = part;
  g.team_size_ = team_size;
  const GemmDims dims{desc.m, desc.n, desc.k};
  int64_t partial_floats = 0;
  g.plans_.resize(part.threads());
  for (int t = 0; t < part.threads(); ++t) {
    ThreadPlan& p = g.plans_[t];
    p.block = pcp_block(dims, part, t);
    const PcpBlock& blk = p.block;
    const int64_t ni = blk.i1 - blk.i0, nj = blk.j1 - blk.j0, nk = blk.k1 - blk.k0;
    GRAPHI_CHECK(ni > 0 && nj > 0 && nk > 0, "pcp_block gave an empty block");
    if (blk.bk > 0) {
      // Partial rows padded to whole cache lines, each buffer starting on one (no false sharing).
      p.partial_ld = (nj + kLine - 1) / kLine * kLine;
      p.partial_offset = partial_floats;
      partial_floats += ni * p.partial_ld;
    }
    // Row-major C = A B is column-major C^T = B^T A^T: LIBXSMM's (m, n, k) = (nj, ni, nk) with
    // its "A" = our B (ld = ldb) and its "B" = our A (ld = lda).
    xsmm::SmmShape s;
    s.m = static_cast<int>(nj);
    s.n = static_cast<int>(ni);
    s.k = static_cast<int>(nk);
    s.lda = static_cast<int>(desc.ldb);
    s.ldb = static_cast<int>(desc.lda);
    s.ldc = static_cast<int>(blk.bk == 0 ? desc.ldc : p.partial_ld);
    s.alpha = 1.0f;
    s.beta = (blk.bk == 0 && desc.accumulate) ? 1.0f : 0.0f;
    auto kernel = xsmm::dispatch_smm(s);
    if (!kernel.is_ok())
      return kernel.status().with_context("pcp gemm: block of thread " + std::to_string(t));
    p.kernel = *kernel;
    // This thread's share of the reduction of its C block: rows if there are enough, else
    // columns (in cache lines when possible).
    if (part.xk > 1) {
      if (ni >= part.xk) {
        std::tie(p.r0, p.r1) = pcp_split(ni, part.xk, blk.bk);
        p.c0 = 0;
        p.c1 = nj;
      } else {
        p.r0 = 0;
        p.r1 = ni;
        std::tie(p.c0, p.c1) = pcp_split(nj, part.xk, blk.bk, nj >= kLine * part.xk ? kLine : 1);
      }
    }
  }
  g.scratch_bytes_ = static_cast<size_t>(partial_floats) * sizeof(float);
  return g;
}

void PcpGemm::run(const TeamContext& team, SpinBarrier* barrier, const float* a, const float* b,
                  float* c) const noexcept {
  GRAPHI_CHECK(team.ithr >= 0 && team.ithr < team_size_, "pcp gemm: thread outside the team");
  GRAPHI_CHECK(!needs_barrier() || barrier != nullptr, "pcp gemm: K split needs a barrier");
  GRAPHI_CHECK(team.scratch_bytes >= scratch_bytes_ && (scratch_bytes_ == 0 || team.scratch),
               "pcp gemm: scratch smaller than scratch_bytes()");
  const int t = team.ithr;
  if (t >= part_.threads()) {  // no block: only keep the barrier count right
    if (needs_barrier()) barrier->wait();
    return;
  }
  const ThreadPlan& p = plans_[t];
  const PcpBlock& blk = p.block;
  float* scratch = static_cast<float*>(team.scratch);
  const float* a_blk = a + blk.i0 * desc_.lda + blk.k0;
  const float* b_blk = b + blk.k0 * desc_.ldb + blk.j0;
  float* c_blk = c + blk.i0 * desc_.ldc + blk.j0;
  float* out = blk.bk == 0 ? c_blk : scratch + p.partial_offset;
  p.kernel(b_blk, a_blk, out);  // column-major call, operands swapped (see create())
  if (!needs_barrier()) return;

  // Every partial of every C block is written once all members pass here.
  barrier->wait();
  const int first = t - blk.bk;  // thread of this C block with bk = 0
  for (int q = 1; q < part_.xk; ++q) {
    const ThreadPlan& src = plans_[first + q];
    for (int64_t r = p.r0; r < p.r1; ++r) {
      float* crow = c_blk + r * desc_.ldc;
      const float* prow = scratch + src.partial_offset + r * src.partial_ld;
      for (int64_t j = p.c0; j < p.c1; ++j) crow[j] += prow[j];
    }
  }
}

}  // namespace graphi::ops
