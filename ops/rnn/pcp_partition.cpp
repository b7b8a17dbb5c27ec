// PCP partition choice (DeepCPU 5.2.3, Theorem 5.2 and its cross-step extension) and the
// per-thread block ranges.
#include "ops/rnn/pcp_partition.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "ops/kernel.h"

namespace graphi::ops {

double pcp_cost(const GemmDims& d, int xi, int xj, int xk, const PcpOptions& opt,
                bool* weights_in_l2) {
  const double a = double(d.i) * double(d.k);  // |A|
  const double b = double(d.k) * double(d.j);  // |B|
  const double c = double(d.i) * double(d.j);  // |C|
  const double t = double(opt.seq_len);
  // Cross-step case of 5.2.3: thread blocks of B are |B| / (Xj Xk) elements (the paper's
  // expression, even when the split is uneven) and stay in L2 if they fit, so B is read once.
  const bool fits = opt.l2_bytes > 0 && opt.seq_len > 1 &&
                    b / (double(xj) * double(xk)) * double(opt.elem_bytes) <= double(opt.l2_bytes);
  if (weights_in_l2) *weights_in_l2 = fits;
  if (fits) return t * (xj * a + 2.0 * xk * c) + xi * b;
  // Theorem 5.2, once per step: Xj|A| + Xi|B| + 2 Xk|C|.
  return t * (xj * a + xi * b + 2.0 * xk * c);
}

std::vector<PcpPartition> pcp_candidates(const GemmDims& d, int p, const PcpOptions& opt) {
  std::vector<PcpPartition> out;
  if (p < 1) return out;
  for (int xi = 1; xi <= p; ++xi) {
    if (p % xi != 0 || xi > d.i) continue;
    for (int xj = 1; xj <= p / xi; ++xj) {
      if ((p / xi) % xj != 0 || xj > d.j) continue;
      const int xk = p / xi / xj;
      if (xk > d.k) continue;
      PcpPartition part;
      part.xi = xi;
      part.xj = xj;
      part.xk = xk;
      part.cost = pcp_cost(d, xi, xj, xk, opt, &part.weights_in_l2);
      out.push_back(part);
    }
  }
  std::sort(out.begin(), out.end(), [](const PcpPartition& x, const PcpPartition& y) {
    if (x.cost != y.cost) return x.cost < y.cost;
    if (x.xk != y.xk) return x.xk < y.xk;
    if (x.xj != y.xj) return x.xj > y.xj;
    return x.xi < y.xi;
  });
  return out;
}

Result<PcpPartition> pcp_choose(const GemmDims& d, int threads, const PcpOptions& opt) {
  if (d.i < 1 || d.j < 1 || d.k < 1)
    return Status::invalid_argument(
        "pcp: GEMM dimensions must be >= 1, got I=" + std::to_string(d.i) +
        " J=" + std::to_string(d.j) + " K=" + std::to_string(d.k));
  if (threads < 1)
    return Status::invalid_argument("pcp: thread count must be >= 1, got " +
                                    std::to_string(threads));
  if (opt.seq_len < 1 || opt.l2_bytes < 0 || opt.elem_bytes < 1)
    return Status::invalid_argument(
        "pcp: options need seq_len >= 1, l2_bytes >= 0, elem_bytes >= 1 (got seq_len=" +
        std::to_string(opt.seq_len) + " l2_bytes=" + std::to_string(opt.l2_bytes) +
        " elem_bytes=" + std::to_string(opt.elem_bytes) + ")");
  // p = 1 always fits, so this loop returns.
  for (int p = threads; p >= 1; --p) {
    std::vector<PcpPartition> c = pcp_candidates(d, p, opt);
    if (!c.empty()) return c.front();
  }
  return Status::internal("pcp: no partition found");
}

std::pair<int64_t, int64_t> pcp_split(int64_t n, int parts, int index, int64_t grain) {
  if (grain <= 1) return team_range(n, index, parts);
  auto [b, e] = team_range((n + grain - 1) / grain, index, parts);
  return {std::min(b * grain, n), std::min(e * grain, n)};
}

PcpBlock pcp_block(const GemmDims& d, const PcpPartition& part, int ithr) {
  PcpBlock blk;
  if (ithr < 0 || ithr >= part.threads()) return blk;
  blk.active = true;
  blk.bk = ithr % part.xk;
  blk.bj = (ithr / part.xk) % part.xj;
  blk.bi = ithr / (part.xk * part.xj);
  constexpr int64_t kLine = 16;
  const int64_t j_grain = d.j >= 8 * kLine * part.xj ? kLine : 1;
  std::tie(blk.i0, blk.i1) = pcp_split(d.i, part.xi, blk.bi);
  std::tie(blk.j0, blk.j1) = pcp_split(d.j, part.xj, blk.bj, j_grain);
  std::tie(blk.k0, blk.k1) = pcp_split(d.k, part.xk, blk.bk);
  return blk;
}

}  // namespace graphi::ops
