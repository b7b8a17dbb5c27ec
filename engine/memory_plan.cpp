// Arena planning by best fit over a map of "who last occupied each byte range".
//
// Why tracking only the LAST occupant of each range is enough: reuse compatibility is
// transitive. If w may overwrite u' (w's producer runs after every use of u') and u' was
// allowed to overwrite u (u''s producer runs after every use of u), then w runs after every
// use of u too. So older occupants under a range are dominated by the newest one and can be
// forgotten, which keeps the map small (about the number of recently placed values).
#include "engine/memory_plan.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <memory>

namespace graphi::engine {

using graph::kNoId;
using graph::NodeId;
using graph::ValueId;

const char* reuse_mode_name(ReuseMode m) {
  switch (m) {
    case ReuseMode::kNone:
      return "none";
    case ReuseMode::kSequential:
      return "sequential";
    case ReuseMode::kDependencySafe:
      return "dependency-safe";
  }
  return "?";
}

namespace {

size_t align_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// Ancestor sets for "does node p transitively depend on node c?" (dependency-safe mode).
// Built in node order (a topological order): anc(p) = union over predecessors q of
// anc(q) + {q}. A set is freed once every successor of its node has been entered, so only the
// frontier of the DAG is held. When the sets would exceed the budget, a node gets no set: its
// queries use direct edges only and its successors inherit just {q}; every set is then a
// subset of the true ancestors, so answers stay safe (no false "yes") and only reuse is lost.
class AncestorSets {
 public:
  AncestorSets(const graph::Graph& g, size_t budget_bytes) : budget_(budget_bytes) {
    const size_t n = g.num_nodes();
    preds_.resize(n);
    remaining_succ_.assign(n, 0);
    sets_.resize(n);
    for (NodeId b = 0; b < n; ++b) {
      for (ValueId v : g.node(b).inputs)
        if (v != kNoId && g.value(v).producer != kNoId) preds_[b].push_back(g.value(v).producer);
      std::sort(preds_[b].begin(), preds_[b].end());
      preds_[b].erase(std::unique(preds_[b].begin(), preds_[b].end()), preds_[b].end());
      for (NodeId a : preds_[b]) ++remaining_succ_[a];
    }
  }

  bool exact() const { return exact_; }

  // Builds anc(p). Every predecessor of p must have been entered.
  void enter(NodeId p) {
    const size_t words = p / 64 + 1;
    if (used_ + words * 8 > budget_) {
      exact_ = false;
      return;  // no set: reaches() uses direct edges for p
    }
    std::vector<uint64_t>& set = sets_[p];
    set.assign(words, 0);
    used_ += words * 8;
    for (NodeId q : preds_[p]) {
      set[q / 64] |= uint64_t{1} << (q % 64);
      for (size_t i = 0; i < sets_[q].size(); ++i) set[i] |= sets_[q][i];
    }
  }

  // Does p (entered, not yet left) depend on c? Never "yes" when the truth is "no".
  bool reaches(NodeId c, NodeId p) const {
    if (c >= p) return false;
    const std::vector<uint64_t>& set = sets_[p];
    if (set.empty()) return std::binary_search(preds_[p].begin(), preds_[p].end(), c);
    return (set[c / 64] >> (c % 64)) & 1;
  }

  // p is planned: release the sets nobody will read again.
  void leave(NodeId p) {
    for (NodeId q : preds_[p])
      if (--remaining_succ_[q] == 0) release(q);
    if (remaining_succ_[p] == 0) release(p);
  }

 private:
  void release(NodeId q) {
    used_ -= sets_[q].size() * 8;
    std::vector<uint64_t>().swap(sets_[q]);
  }

  size_t budget_, used_ = 0;
  bool exact_ = true;
  std::vector<std::vector<NodeId>> preds_;
  std::vector<uint32_t> remaining_succ_;
  std::vector<std::vector<uint64_t>> sets_;
};

// Ops whose output is a byte-for-byte copy of input 0 (ops/shape_ops.cpp's CopyKernel, which
// skips the copy when the two pointers are equal).
bool copies_input(const std::string& op) { return op == "Reshape" || op == "Identity"; }

// Ops that write an input in place (ops/optimizer_ops.cpp, ops/batch_norm_ops.cpp): a group they
// read must keep separate bytes per member, or a write through one name would change the other.
bool writes_input_in_place(const std::string& op) {
  return op == "SGDUpdate" || op == "AdamUpdate" || op == "BatchNormStatsUpdate";
}

// Element-wise ops whose kernels read element i of each input before writing element i of the
// output (ops/elementwise.cpp, ops/unary_ops.cpp: no staging through the output), so the output
// may take the bytes of a same-size input that dies at them.
bool writes_elementwise(const std::string& op) {
  static const char* const kOps[] = {
      "Relu",     "Sigmoid",     "Tanh",       "LeakyRelu",    "Elu", "Selu", "Clip",
      "Softplus", "Softsign",    "Exp",        "Log",          "Neg", "Abs",  "Sqrt",
      "Erf",      "Gelu",        "Floor",      "Ceil",         "Add", "Sub",  "Mul",
      "Div",      "HardSigmoid", "Reciprocal", "ChannelAffine"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

// alias_of for plan_memory (see the header): node order is a topological order, so a value's
// root is known when its consumer is reached.
std::vector<ValueId> find_aliases(const graph::Graph& g, const std::vector<Storage>& storage) {
  const size_t nv = g.num_values();
  std::vector<ValueId> root(nv, kNoId);
  auto root_of = [&](ValueId v) { return root[v] == kNoId ? v : root[v]; };
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const graph::Node& node = g.node(n);
    if (!copies_input(node.op) || node.inputs.empty() || node.outputs.size() != 1) continue;
    const ValueId u = node.inputs[0], w = node.outputs[0];
    if (u == kNoId || storage[u] != Storage::kArena || storage[w] != Storage::kArena) continue;
    if (g.value(u).desc.bytes() != g.value(w).desc.bytes()) continue;
    root[w] = root_of(u);
  }
  std::vector<uint8_t> in_place(nv, 0);  // roots of groups an in-place op reads
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (writes_input_in_place(g.node(n).op))
      for (ValueId v : g.node(n).inputs)
        if (v != kNoId) in_place[root_of(v)] = 1;
  for (ValueId v = 0; v < nv; ++v)
    if (root[v] != kNoId && in_place[root[v]]) root[v] = kNoId;
  return root;
}

// Concat groups (see the header): each input of a Concat along an axis whose outer dims are all 1
// is a contiguous byte range of the output, so the producers can write there and the Concat
// copies nothing. Members are plain arena values (no Reshape alias group, no in-place writer,
// each in one group), at offsets that keep the arena's alignment; a Concat input that is itself
// such a group's root brings its members along (DenseNet's concat of a concat).
void find_concat_groups(const graph::Graph& g, const std::vector<Storage>& storage,
                        std::vector<ValueId>& root, std::vector<size_t>& offset) {
  const size_t nv = g.num_values();
  std::vector<uint8_t> excluded(nv, 0);  // in a Reshape group, or read by an in-place writer
  for (ValueId v = 0; v < nv; ++v)
    if (root[v] != kNoId) excluded[v] = excluded[root[v]] = 1;
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (writes_input_in_place(g.node(n).op))
      for (ValueId v : g.node(n).inputs)
        if (v != kNoId) excluded[v] = 1;
  std::vector<std::vector<ValueId>> members(nv);  // concat roots -> their members
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const graph::Node& node = g.node(n);
    if (node.op != "Concat" || node.outputs.size() != 1 || node.inputs.size() < 2) continue;
    const ValueId y = node.outputs[0];
    if (storage[y] != Storage::kArena || root[y] != kNoId) continue;
    // A Reshape alias of y may share y's bytes (offset 0); an in-place writer may not.
    bool ok =
        !(excluded[y] && std::any_of(g.consumers(y).begin(), g.consumers(y).end(), [&](NodeId c) {
            return writes_input_in_place(g.node(c).op);
          }));
    const Shape& shape = g.value(y).desc.shape;
    auto axis = graph::attr_int(node.attrs, node.name, "axis", 0);
    const int64_t rank = static_cast<int64_t>(shape.size());
    int64_t a = axis.is_ok() ? *axis : rank;
    if (a < 0) a += rank;
    ok = ok && a >= 0 && a < rank;
    for (int64_t d = 0; ok && d < a; ++d) ok = shape[static_cast<size_t>(d)] == 1;
    std::vector<size_t> at;
    size_t off = 0;
    for (size_t i = 0; ok && i < node.inputs.size(); ++i) {
      const ValueId v = node.inputs[i];
      ok = v != kNoId && storage[v] == Storage::kArena && root[v] == kNoId && !excluded[v] &&
           off % kArenaAlignment == 0 && std::count(node.inputs.begin(), node.inputs.end(), v) == 1;
      at.push_back(off);
      if (ok) off += g.value(v).desc.bytes();
    }
    if (!ok || off != g.value(y).desc.bytes()) continue;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId v = node.inputs[i];
      for (ValueId m : members[v]) {
        root[m] = y;
        offset[m] += at[i];
        members[y].push_back(m);
      }
      members[v].clear();
      root[v] = y;
      offset[v] = at[i];
      members[y].push_back(v);
    }
  }
}

struct Segment {
  size_t begin, end;
  ValueId occupant;  // the value that last had these bytes
};

}  // namespace

MemoryPlan plan_memory(const graph::Graph& g, ReuseMode mode, size_t reachability_budget_bytes) {
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

  plan.alias_of =
      mode == ReuseMode::kNone ? std::vector<ValueId>(nv, kNoId) : find_aliases(g, plan.storage);
  plan.alias_offset.assign(nv, 0);
  if (mode != ReuseMode::kNone)
    find_concat_groups(g, plan.storage, plan.alias_of, plan.alias_offset);

  // Uses of a value: the nodes that read it, or its producer alone when nobody reads it (the
  // producer's write is then its whole lifetime). last_use is the largest of them. A group of
  // aliases is planned as its root: the uses of all its members.
  auto own_uses = [&](ValueId u) -> std::span<const NodeId> {
    std::span<const NodeId> c = g.consumers(u);
    return c.empty() ? std::span<const NodeId>(&g.value(u).producer, 1) : c;
  };
  std::vector<std::vector<NodeId>> group_uses(nv);  // roots with aliases only
  for (ValueId v = 0; v < nv; ++v)
    if (ValueId r = plan.alias_of[v]; r != kNoId) {
      if (group_uses[r].empty()) {
        std::span<const NodeId> ru = own_uses(r);
        group_uses[r].assign(ru.begin(), ru.end());
      }
      std::span<const NodeId> wu = own_uses(v);
      group_uses[r].insert(group_uses[r].end(), wu.begin(), wu.end());
    }
  auto uses = [&](ValueId u) -> std::span<const NodeId> {
    return group_uses[u].empty() ? own_uses(u) : std::span<const NodeId>(group_uses[u]);
  };
  std::vector<uint8_t> is_output(nv, 0);  // compact copies: compatible() runs per segment
  for (ValueId v : g.outputs()) is_output[plan.alias_of[v] == kNoId ? v : plan.alias_of[v]] = 1;
  std::vector<NodeId> last_use(nv, 0);
  for (ValueId v = 0; v < nv; ++v)
    if (plan.storage[v] == Storage::kArena) {
      std::span<const NodeId> us = uses(v);
      last_use[v] = *std::max_element(us.begin(), us.end());
    }

  std::unique_ptr<AncestorSets> reach;
  if (mode == ReuseMode::kDependencySafe)
    reach = std::make_unique<AncestorSets>(g, reachability_budget_bytes);

  // May a value produced by node p take the bytes last held by u? Memoized per producer (all
  // outputs of one node have the same answer).
  std::vector<NodeId> memo_node(nv, kNoId);
  std::vector<uint8_t> memo_ok(nv, 0);
  auto compatible = [&](ValueId u, NodeId p) -> bool {
    if (memo_node[u] == p) return memo_ok[u];
    bool ok = false;
    if (mode != ReuseMode::kNone && last_use[u] < p && !is_output[u]) {
      ok = true;
      if (mode == ReuseMode::kDependencySafe)
        for (NodeId c : uses(u))
          if (!reach->reaches(c, p)) {
            ok = false;
            break;
          }
    }
    memo_node[u] = p;
    memo_ok[u] = ok;
    return ok;
  };

  // In place: node p (an element-wise op, one float32 output w) may write w over an input u of
  // the same size that dies at p (no other use after it: in node order, or for the
  // dependency-safe mode every other use reaches p), so its stores hit the lines its loads just
  // brought in. Not a value in an alias group or read by an in-place writer (an optimizer's
  // state), a graph output or a caller's input.
  std::vector<uint8_t> grouped(nv, 0);  // in an alias group, or written by an in-place op
  for (ValueId v = 0; v < nv; ++v)
    if (plan.alias_of[v] != kNoId) grouped[v] = grouped[plan.alias_of[v]] = 1;
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (writes_input_in_place(g.node(n).op))
      for (ValueId v : g.node(n).inputs)
        if (v != kNoId) grouped[v] = 1;
  auto in_place_input = [&](NodeId p, ValueId w) -> ValueId {
    const graph::Node& node = g.node(p);
    if (mode == ReuseMode::kNone || node.outputs.size() != 1 || !writes_elementwise(node.op) ||
        grouped[w] || g.value(w).desc.dtype != DType::kF32)
      return kNoId;
    for (ValueId u : node.inputs) {
      if (u == kNoId || plan.storage[u] != Storage::kArena || grouped[u] || is_output[u] ||
          g.value(u).desc.dtype != DType::kF32 ||
          g.value(u).desc.bytes() != g.value(w).desc.bytes())
        continue;
      bool dies = true;
      for (NodeId c : uses(u))
        dies = dies && (c == p || (mode == ReuseMode::kSequential ? c < p : reach->reaches(c, p)));
      if (dies) return u;
    }
    return kNoId;
  };

  std::vector<Segment> segs;  // sorted, contiguous, covering [0, arena_end)
  size_t arena_end = 0;
  // Best fit for `size` bytes written by node p: the smallest run of reusable segments that
  // holds them; otherwise the trailing reusable run (if any) extended past the arena end;
  // otherwise the arena end. `fresh`: no reuse at all.
  auto best_fit = [&](NodeId p, size_t size, bool fresh) -> size_t {
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
      if (!fresh && compatible(s.occupant, p)) {
        if (!in_run) run_begin = s.begin;
        in_run = true;
        run_end = s.end;
      } else {
        close_run();
        if (best_waste == 0) break;  // an exact fit: no later run can beat it (ties keep the first)
      }
    }
    const bool trailing = in_run;
    const size_t trailing_begin = run_begin;
    close_run();
    return best_waste != std::numeric_limits<size_t>::max() ? best_off
           : trailing                                       ? trailing_begin
                                                            : arena_end;
  };

  // A group's root gets its bytes when the first of its members is produced: a Reshape's root
  // is produced before its aliases, a Concat's output after its inputs (the members).
  std::vector<uint8_t> placed(nv, 0);
  for (NodeId p = 0; p < g.num_nodes(); ++p) {
    if (reach) reach->enter(p);
    for (ValueId out : g.node(p).outputs) {
      const ValueId r = plan.alias_of[out];
      const ValueId w = r == kNoId ? out : r;  // the value whose bytes are planned
      if (placed[w]) {
        plan.offset[out] = plan.offset[w] + plan.alias_offset[out];
        const bool same = g.value(out).desc.bytes() == g.value(w).desc.bytes();
        plan.size[out] = same ? plan.size[w] : align_up(g.value(out).desc.bytes());
        continue;
      }
      placed[w] = 1;
      const size_t size = std::max(align_up(g.value(w).desc.bytes()), kArenaAlignment);
      plan.size[w] = size;
      plan.total_bytes += size;
      // A Concat group placed before its other members' producers ran: in the dependency-safe
      // mode those may run in any order after their own inputs, which the ancestor sets of this
      // node cannot vouch for, so the group takes fresh bytes (the node-order plan reuses).
      const bool fresh = r != kNoId && mode == ReuseMode::kDependencySafe;
      const ValueId over = r == kNoId ? in_place_input(p, w) : kNoId;

      size_t off;
      if (over != kNoId) {  // u's bytes are still its own: nothing took them while it lived
        off = plan.offset[over];
        ++plan.in_place_outputs;
      } else {
        off = best_fit(p, size, fresh);
      }
      plan.offset[w] = off;

      // Put w over [off, off + size): replace the segments it covers, in place (only the
      // covered range and the tail move).
      const size_t end = off + size;
      auto first = std::partition_point(segs.begin(), segs.end(),
                                        [&](const Segment& s) { return s.end <= off; });
      auto last =
          std::partition_point(first, segs.end(), [&](const Segment& s) { return s.begin < end; });
      Segment repl[3];
      int n_repl = 0;
      if (first != last && first->begin < off)
        repl[n_repl++] = {first->begin, off, first->occupant};
      repl[n_repl++] = {off, end, w};
      if (first != last && std::prev(last)->end > end)
        repl[n_repl++] = {end, std::prev(last)->end, std::prev(last)->occupant};
      const ptrdiff_t at = first - segs.begin(), covered = last - first;
      if (covered < n_repl)
        segs.insert(segs.begin() + at, static_cast<size_t>(n_repl - covered), Segment{});
      else
        segs.erase(segs.begin() + at, segs.begin() + at + (covered - n_repl));
      for (int k = 0; k < n_repl; ++k) segs[static_cast<size_t>(at + k)] = repl[k];
      arena_end = std::max(arena_end, end);
      if (w != out) {
        plan.offset[out] = off + plan.alias_offset[out];
        plan.size[out] = align_up(g.value(out).desc.bytes());
      }
    }
    if (reach) reach->leave(p);
  }
  plan.peak_bytes = arena_end;
  if (reach) plan.exact_reachability = reach->exact();
  return plan;
}

bool copies_nothing(const graph::Graph& g, const MemoryPlan& m, NodeId n) {
  const graph::Node& node = g.node(n);
  if (m.alias_of.empty() || node.outputs.size() != 1) return false;
  const ValueId y = node.outputs[0];
  if (copies_input(node.op))
    return !node.inputs.empty() && node.inputs[0] != kNoId && m.alias_of[y] != kNoId;
  if (node.op != "Concat") return false;
  const ValueId ry = m.alias_of[y] == kNoId ? y : m.alias_of[y];
  return std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId v) {
    return v != kNoId && m.alias_of[v] == ry && m.offset[v] >= m.offset[y] &&
           m.offset[v] - m.offset[y] == m.alias_offset[v] - (ry == y ? 0 : m.alias_offset[y]);
  });
}

}  // namespace graphi::engine
