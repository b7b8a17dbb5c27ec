// Arena planning by best fit over a map of "who last occupied each byte range".
//
// Why tracking only the LAST occupant of each range is enough: reuse compatibility is
// transitive. If w may overwrite u' (w's producer runs after every use of u') and u' was
// allowed to overwrite u (u''s producer runs after every use of u), then w runs after every
// use of u too. So older occupants under a range are dominated by the newest one and can be
// forgotten, which keeps the map small (about the number of recently placed values).
#include "engine/memory_plan.h"

#include <algorithm>
#include <limits>

namespace graphi::engine {

using graph::kNoId;
using graph::NodeId;
using graph::ValueId;

const char* reuse_mode_name(ReuseMode m) {
  switch (m) {
    case ReuseMode::kNone: return "none";
    case ReuseMode::kSequential: return "sequential";
    case ReuseMode::kDependencySafe: return "dependency-safe";
  }
  return "?";
}

namespace {

size_t align_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// "Does node b transitively depend on node a (a != b)?" for the dependency-safe mode.
class Reachability {
 public:
  explicit Reachability(const graph::Graph& g) : n_(g.num_nodes()) {
    succ_.resize(n_);
    preds_.resize(n_);
    for (NodeId b = 0; b < n_; ++b) {
      for (ValueId v : g.node(b).inputs) {
        if (v == kNoId) continue;
        NodeId a = g.value(v).producer;
        if (a == kNoId) continue;
        succ_[a].push_back(b);
        preds_[b].push_back(a);
      }
      std::sort(preds_[b].begin(), preds_[b].end());
      preds_[b].erase(std::unique(preds_[b].begin(), preds_[b].end()), preds_[b].end());
    }
    exact_ = n_ <= MemoryPlan::kExactReachabilityMaxNodes;
    if (!exact_) return;
    // desc_[a] = strict descendants of a. Node ids are a topological order, so walking them
    // backwards sees every successor's row complete before its predecessors need it.
    words_ = (n_ + 63) / 64;
    desc_.assign(n_ * words_, 0);
    for (NodeId a = static_cast<NodeId>(n_); a-- > 0;) {
      uint64_t* row = &desc_[a * words_];
      for (NodeId s : succ_[a]) {
        row[s / 64] |= uint64_t{1} << (s % 64);
        const uint64_t* srow = &desc_[s * words_];
        for (size_t i = s / 64; i < words_; ++i) row[i] |= srow[i];  // descendants of s are > s
      }
    }
  }

  bool exact() const { return exact_; }

  bool reaches(NodeId a, NodeId b) const {
    if (a >= b) return false;
    if (exact_) return (desc_[a * words_ + b / 64] >> (b % 64)) & 1;
    // Conservative fallback for very large graphs: only direct edges count.
    return std::binary_search(preds_[b].begin(), preds_[b].end(), a);
  }

 private:
  size_t n_, words_ = 0;
  bool exact_ = true;
  std::vector<std::vector<NodeId>> succ_, preds_;
  std::vector<uint64_t> desc_;
};

struct Segment {
  size_t begin, end;
  ValueId occupant;  // the value that last had these bytes
};

}  // namespace

MemoryPlan plan_memory(const graph::Graph& g, ReuseMode mode) {
  const size_t nv = g.num_values();
  MemoryPlan plan;
  plan.mode = mode;
  plan.storage.assign(nv, Storage::kArena);
  plan.offset.assign(nv, 0);
  plan.size.assign(nv, 0);
  for (ValueId v = 0; v < nv; ++v) {
    const graph::Value& val = g.value(v);
    if (val.kind == graph::ValueKind::kInput) plan.storage[v] = Storage::kCallerInput;
    if (val.kind == graph::ValueKind::kConstant) plan.storage[v] = Storage::kConstant;
  }

  // Uses of a value: the nodes that read it, or its producer alone when nobody reads it (the
  // producer's write is then its whole lifetime). last_use is the largest of them.
  auto uses = [&](ValueId u) -> std::span<const NodeId> {
    std::span<const NodeId> c = g.consumers(u);
    return c.empty() ? std::span<const NodeId>(&g.value(u).producer, 1) : c;
  };
  std::vector<NodeId> last_use(nv, 0);
  for (ValueId v = 0; v < nv; ++v)
    if (plan.storage[v] == Storage::kArena) {
      std::span<const NodeId> us = uses(v);
      last_use[v] = *std::max_element(us.begin(), us.end());
    }

  std::unique_ptr<Reachability> reach;
  if (mode == ReuseMode::kDependencySafe) {
    reach = std::make_unique<Reachability>(g);
    plan.exact_reachability = reach->exact();
  }

  // May a value produced by node p take the bytes last held by u? Memoized per producer (all
  // outputs of one node have the same answer).
  std::vector<NodeId> memo_node(nv, kNoId);
  std::vector<uint8_t> memo_ok(nv, 0);
  auto compatible = [&](ValueId u, NodeId p) -> bool {
    if (memo_node[u] == p) return memo_ok[u];
    bool ok = false;
    if (mode != ReuseMode::kNone && !g.value(u).is_output && last_use[u] < p) {
      ok = true;
      if (mode == ReuseMode::kDependencySafe)
        for (NodeId c : uses(u))
          if (!reach->reaches(c, p)) { ok = false; break; }
    }
    memo_node[u] = p;
    memo_ok[u] = ok;
    return ok;
  };

  std::vector<Segment> segs, next;  // sorted, contiguous, covering [0, arena_end)
  size_t arena_end = 0;
  for (NodeId p = 0; p < g.num_nodes(); ++p) {
    for (ValueId w : g.node(p).outputs) {
      const size_t size = std::max(align_up(g.value(w).desc.bytes()), kArenaAlignment);
      plan.size[w] = size;
      plan.total_bytes += size;

      // Best fit: the smallest run of reusable segments that holds `size`; otherwise the
      // trailing reusable run (if any) extended past the arena end; otherwise the arena end.
      size_t best_off = 0, best_waste = std::numeric_limits<size_t>::max();
      size_t run_begin = 0, run_end = 0;
      bool in_run = false;
      auto close_run = [&] {
        if (in_run && run_end - run_begin >= size && run_end - run_begin - size < best_waste) {
          best_waste = run_end - run_begin - size;
          best_off = run_begin;
        }
        in_run = false;
      };
      for (const Segment& s : segs) {
        if (compatible(s.occupant, p)) {
          if (!in_run) run_begin = s.begin;
          in_run = true;
          run_end = s.end;
        } else {
          close_run();
        }
      }
      const bool trailing = in_run;
      const size_t trailing_begin = run_begin;
      close_run();
      size_t off = best_waste != std::numeric_limits<size_t>::max() ? best_off
                   : trailing                                      ? trailing_begin
                                                                   : arena_end;
      plan.offset[w] = off;

      // Put w over [off, off + size): cut the segments it covers.
      const size_t end = off + size;
      next.clear();
      bool placed = false;
      for (const Segment& s : segs) {
        if (s.end <= off) { next.push_back(s); continue; }
        if (s.begin >= end) {
          if (!placed) next.push_back({off, end, w}), placed = true;
          next.push_back(s);
          continue;
        }
        if (s.begin < off) next.push_back({s.begin, off, s.occupant});
        if (!placed) next.push_back({off, end, w}), placed = true;
        if (s.end > end) next.push_back({end, s.end, s.occupant});
      }
      if (!placed) next.push_back({off, end, w});
      segs.swap(next);
      arena_end = std::max(arena_end, end);
    }
  }
  plan.peak_bytes = arena_end;
  return plan;
}

}  // namespace graphi::engine
