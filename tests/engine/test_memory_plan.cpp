// Memory plan properties on random DAGs of a synthetic op ("Blob": any inputs, outputs of the
// sizes given in its attribute), so these tests need no kernels. Every check is written from
// the definition: reachability by a plain DFS here, and a byte-tag simulation of runs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "engine/memory_plan.h"
#include "graph/graph_builder.h"

using namespace graphi;
using namespace graphi::engine;
using graph::kNoId;
using graph::NodeId;
using graph::ValueId;

namespace {

// "Blob": outputs float32[sizes[i]] for each entry of the `sizes` attribute.
class BlobShapes : public graph::ShapeInferencer {
 public:
  Result<std::vector<TensorDesc>> infer(const graph::InferContext& ctx) const override {
    // Reshape: the memory plan's alias op (its output takes its input's bytes); SGDUpdate: an
    // op that writes its input in place, which forbids aliasing for the values it reads.
    // Reshape: the memory plan's alias op; Relu / Add (of its first input's shape): element-wise
    // ops whose output may take a dying input's bytes.
    if (ctx.node.op == "Reshape" || ctx.node.op == "Relu" || ctx.node.op == "Add")
      return std::vector<TensorDesc>{*ctx.inputs[0]};
    if (ctx.node.op == "Concat") {  // of 1-D values, axis 0: the memory plan's in-place case
      int64_t n = 0;
      for (const TensorDesc* d : ctx.inputs) n += d->shape[0];
      return std::vector<TensorDesc>{TensorDesc{DType::kF32, {n}}};
    }
    if (ctx.node.op != "Blob" && ctx.node.op != "SGDUpdate")
      return Status::unsupported(ctx.where + ": unknown op");
    GRAPHI_ASSIGN_OR_RETURN(auto sizes, graph::attr_ints(ctx.node.attrs, ctx.where, "sizes"));
    std::vector<TensorDesc> out;
    for (int64_t s : sizes) out.push_back(TensorDesc{DType::kF32, {s}});
    return out;
  }
};

graph::Attributes sizes_attr(std::vector<int64_t> sizes) {
  graph::Attributes a;
  a.set("sizes", std::move(sizes));
  return a;
}

// With reshapes: some nodes are Reshapes of a recent value (an input, or an intermediate, the
// memory plan's alias case), sometimes of a Reshape (a chain), and some Blobs are SGDUpdates.
// With concats: some nodes are Concats (axis 0) of 2-3 distinct recent values, sometimes of a
// Concat (nested groups), and most Blob sizes are multiples of 16 floats (64-byte offsets).
// With elementwise: some nodes are Relu (of one value) or Add (of two) of recent values, whose
// outputs the plan may write over a dying input.
graph::Graph random_dag(uint64_t seed, int max_nodes, bool reshapes = false, bool concats = false,
                        bool elementwise = false) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  graph::GraphBuilder b("<random dag " + std::to_string(seed) + ">");
  std::vector<std::string> values, intermediates;
  for (int i = 0, n = uni(1, 3); i < n; ++i) {
    values.push_back("in" + std::to_string(i));
    b.add_input(values.back(), TensorDesc{DType::kF32, {uni(1, 100)}});
  }
  if (uni(0, 1)) {
    values.push_back("w");
    b.add_constant("w", Tensor(TensorDesc{DType::kF32, {16}}));
  }
  const int n_nodes = uni(1, max_nodes);
  for (int k = 0; k < n_nodes; ++k) {
    std::vector<std::string> ins;
    // Prefer recent values (long chains) but sometimes reach far back (long lifetimes).
    for (int i = 0, n = uni(1, 3); i < n; ++i) {
      int hi = static_cast<int>(values.size()) - 1;
      int idx = uni(0, 3) ? std::max(0, hi - uni(0, 4)) : uni(0, hi);
      ins.push_back(values[idx]);
    }
    std::vector<std::string> outs;
    std::vector<int64_t> sizes;
    if (reshapes && uni(0, 2) == 0) {
      outs.push_back("r" + std::to_string(k));
      b.add_node("Reshape", "n" + std::to_string(k), {ins[0]}, outs);
      for (auto& o : outs) values.push_back(o), intermediates.push_back(o);
      continue;
    }
    if (elementwise && uni(0, 2) == 0 && !intermediates.empty()) {
      const int hi = static_cast<int>(intermediates.size()) - 1;
      const std::string a = intermediates[std::max(0, hi - uni(0, 3))];
      outs.push_back("e" + std::to_string(k));
      if (uni(0, 1))
        b.add_node("Relu", "n" + std::to_string(k), {a}, outs);
      else
        b.add_node("Add", "n" + std::to_string(k), {a, ins[0]}, outs);
      values.push_back(outs[0]);
      intermediates.push_back(outs[0]);
      continue;
    }
    if (concats && uni(0, 2) == 0 && intermediates.size() >= 2) {
      std::vector<std::string> parts;
      for (int i = 0, n = uni(2, 3); i < n; ++i) {
        const int hi = static_cast<int>(intermediates.size()) - 1;
        const std::string& v = intermediates[std::max(0, hi - uni(0, 5))];
        if (std::find(parts.begin(), parts.end(), v) == parts.end()) parts.push_back(v);
      }
      if (parts.size() >= 2) {
        graph::Attributes axis;
        axis.set("axis", int64_t{0});
        outs.push_back("c" + std::to_string(k));
        b.add_node("Concat", "n" + std::to_string(k), parts, outs, axis);
        values.push_back(outs[0]);
        intermediates.push_back(outs[0]);
        continue;
      }
    }
    for (int i = 0, n = uni(1, 4) == 1 ? 2 : 1; i < n; ++i) {
      outs.push_back("v" + std::to_string(k) + "_" + std::to_string(i));
      sizes.push_back(concats && uni(0, 4) ? 16 * uni(1, 25) : uni(1, 400));
    }
    const char* op = reshapes && uni(0, 9) == 0 ? "SGDUpdate" : "Blob";
    b.add_node(op, "n" + std::to_string(k), ins, outs, sizes_attr(sizes));
    for (auto& o : outs) values.push_back(o), intermediates.push_back(o);
  }
  std::set<std::string> outs{intermediates.back()};
  for (const auto& v : intermediates)
    if (uni(0, 7) == 0) outs.insert(v);
  if (uni(0, 5) == 0) outs.insert("in0");
  for (const auto& o : outs) b.add_output(o);
  auto g = b.finish(BlobShapes());
  REQUIRE(g.is_ok());
  return std::move(g).value();
}

// reach[a][b]: b transitively depends on a (a != b), by DFS over consumers.
std::vector<std::vector<bool>> reachability(const graph::Graph& g) {
  const size_t n = g.num_nodes();
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (NodeId a = 0; a < n; ++a) {
    std::vector<NodeId> stack{a};
    while (!stack.empty()) {
      NodeId x = stack.back();
      stack.pop_back();
      for (ValueId v : g.node(x).outputs)
        for (NodeId c : g.consumers(v))
          if (!reach[a][c]) reach[a][c] = true, stack.push_back(c);
    }
  }
  return reach;
}

std::vector<NodeId> uses_of(const graph::Graph& g, ValueId v) {
  auto c = g.consumers(v);
  if (c.empty()) return {g.value(v).producer};
  return {c.begin(), c.end()};
}

// The value whose bytes v has: alias_of[v], or v itself.
ValueId root_of(const MemoryPlan& m, ValueId v) {
  return m.alias_of.empty() || m.alias_of[v] == kNoId ? v : m.alias_of[v];
}

// Layout checks plus the pairwise overlap rule of `mode`, from the definition. An alias group
// (a value and those that alias it) counts as one value: the uses of all its members, a graph
// output when any member is.
void check_plan(const graph::Graph& g, const MemoryPlan& m, ReuseMode mode) {
  auto reach = reachability(g);
  size_t total = 0;
  std::vector<ValueId> arena;
  REQUIRE(m.alias_of.size() == g.num_values());
  std::vector<std::vector<NodeId>> group_uses(g.num_values());
  std::vector<bool> group_output(g.num_values(), false);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    ValueId r = root_of(m, v);
    for (NodeId c : uses_of(g, v)) group_uses[r].push_back(c);
    if (g.value(v).is_output) group_output[r] = true;
    if (r == v) continue;
    // An alias: a Reshape's output over its arena input's group, of the same size, with no
    // in-place writer reading any member, and never in the no-reuse mode.
    INFO("alias '" << g.value(v).name << "' of '" << g.value(r).name << "'");
    REQUIRE(mode != ReuseMode::kNone);
    REQUIRE(m.alias_of[r] == kNoId);
    REQUIRE(m.storage[r] == Storage::kArena);
    const graph::Node& p = g.node(g.value(v).producer);
    if (p.op == "Reshape" && root_of(m, p.inputs[0]) == r && m.alias_offset[v] == 0) {
      REQUIRE(m.offset[v] == m.offset[r]);
      REQUIRE(g.value(v).desc.bytes() == g.value(r).desc.bytes());
      continue;
    }
    // A Concat group's member: an input of a Concat whose output is r or in r's group, at its
    // offset in that output, inside r's bytes, 64-byte aligned.
    bool read_by_group_concat = false;
    for (NodeId c : g.consumers(v)) {
      const graph::Node& cn = g.node(c);
      if (cn.op != "Concat" || root_of(m, cn.outputs[0]) != r) continue;
      size_t at = 0;
      for (ValueId in : cn.inputs) {
        if (in == v && m.offset[v] == m.offset[cn.outputs[0]] + at) read_by_group_concat = true;
        at += g.value(in).desc.bytes();
      }
    }
    REQUIRE(read_by_group_concat);
    REQUIRE(m.offset[v] == m.offset[r] + m.alias_offset[v]);
    REQUIRE(m.alias_offset[v] % 64 == 0);
    REQUIRE(m.alias_offset[v] + g.value(v).desc.bytes() <= g.value(r).desc.bytes());
  }
  // No member of a group (its root and its aliases; every alias's input is a member, checked
  // above) is read by an op that writes in place.
  std::vector<bool> written_in_place(g.num_values(), false);
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (g.node(n).op == "SGDUpdate")
      for (ValueId v : g.node(n).inputs) written_in_place[v] = true;
  for (ValueId v = 0; v < g.num_values(); ++v)
    if (root_of(m, v) != v) REQUIRE((!written_in_place[v] && !written_in_place[root_of(m, v)]));
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const graph::Value& val = g.value(v);
    if (val.kind == graph::ValueKind::kInput) {
      REQUIRE(m.storage[v] == Storage::kCallerInput);
      continue;
    }
    if (val.kind == graph::ValueKind::kConstant) {
      REQUIRE(m.storage[v] == Storage::kConstant);
      continue;
    }
    REQUIRE(m.storage[v] == Storage::kArena);
    if (root_of(m, v) != v) continue;  // checked above
    REQUIRE(m.offset[v] % 64 == 0);
    REQUIRE(m.size[v] >= val.desc.bytes());
    REQUIRE(m.offset[v] + m.size[v] <= m.peak_bytes);
    total += m.size[v];
    arena.push_back(v);
  }
  REQUIRE(m.total_bytes == total);
  REQUIRE(m.peak_bytes <= m.total_bytes);
  if (mode == ReuseMode::kNone) REQUIRE(m.peak_bytes == m.total_bytes);

  for (size_t i = 0; i < arena.size(); ++i) {
    for (size_t j = i + 1; j < arena.size(); ++j) {
      ValueId u = arena[i], w = arena[j];
      if (g.value(u).producer > g.value(w).producer) std::swap(u, w);
      bool overlap = m.offset[u] < m.offset[w] + m.size[w] && m.offset[w] < m.offset[u] + m.size[u];
      if (!overlap) continue;
      INFO("values '" << g.value(u).name << "' and '" << g.value(w).name << "' overlap");
      REQUIRE(mode != ReuseMode::kNone);
      REQUIRE_FALSE(group_output[u]);
      NodeId p = g.value(w).producer;
      REQUIRE(g.value(u).producer < p);
      // In place: w's producer is an element-wise op reading u, w over u's bytes exactly, and
      // it is u's last use (the others before it, or all of them reaching it).
      const graph::Node& pn = g.node(p);
      const bool in_place = (pn.op == "Relu" || pn.op == "Add") &&
                            std::count(pn.inputs.begin(), pn.inputs.end(), u) > 0 &&
                            m.offset[u] == m.offset[w] &&
                            g.value(u).desc.bytes() == g.value(w).desc.bytes();
      for (NodeId c : group_uses[u]) {
        if (c == p && in_place) continue;
        if (mode == ReuseMode::kSequential)
          REQUIRE(c < p);
        else
          REQUIRE(reach[c][p]);
      }
    }
  }
}

// Runs the graph in `order` over a byte arena: each node checks that its arena inputs still
// hold their producers' tags, then writes its own tags. Returns false on the first clobber.
// A Reshape copies its input's tags (its root's, when the plan aliased it: then the bytes are
// the same and the copy changes nothing, as the copy kernel skips it).
bool simulate(const graph::Graph& g, const MemoryPlan& m, const std::vector<NodeId>& order) {
  std::vector<uint32_t> arena(m.peak_bytes / 4, 0xffffffffu);
  // The tag a value's bytes hold when intact: its group root's id (the root wrote them).
  auto tag = [&](ValueId v) { return static_cast<uint32_t>(root_of(m, v)); };
  auto intact = [&](ValueId v) {
    for (size_t i = 0; i < g.value(v).desc.bytes() / 4; ++i)
      if (arena[m.offset[v] / 4 + i] != tag(v)) return false;
    return true;
  };
  for (NodeId n : order) {
    for (ValueId v : g.node(n).inputs)
      if (v != kNoId && m.storage[v] == Storage::kArena && !intact(v)) return false;
    for (ValueId v : g.node(n).outputs)
      for (size_t i = 0; i < g.value(v).desc.bytes() / 4; ++i) arena[m.offset[v] / 4 + i] = tag(v);
  }
  for (ValueId v : g.outputs())
    if (m.storage[v] == Storage::kArena && !intact(v)) return false;
  return true;
}

std::vector<NodeId> random_topological_order(const graph::Graph& g, std::mt19937_64& rng) {
  std::vector<uint32_t> pending(g.num_nodes(), 0);
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    for (ValueId v : g.node(n).inputs)
      if (v != kNoId && g.value(v).producer != kNoId) ++pending[n];
  std::vector<NodeId> ready, order;
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (!pending[n]) ready.push_back(n);
  while (!ready.empty()) {
    size_t k = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    NodeId n = ready[k];
    ready.erase(ready.begin() + static_cast<long>(k));
    order.push_back(n);
    for (ValueId v : g.node(n).outputs)
      for (NodeId c : g.consumers(v))
        for (ValueId in : g.node(c).inputs)
          if (in == v && --pending[c] == 0) ready.push_back(c);
  }
  return order;
}

std::vector<NodeId> node_order(const graph::Graph& g) {
  std::vector<NodeId> o(g.num_nodes());
  for (NodeId i = 0; i < o.size(); ++i) o[i] = i;
  return o;
}

// check_plan, then simulated runs: in node order, and for a dependency-safe plan in 10 random
// topological orders.
void check_plan_and_runs(const graph::Graph& g, const MemoryPlan& m, ReuseMode mode,
                         std::mt19937_64& rng) {
  check_plan(g, m, mode);
  REQUIRE(simulate(g, m, node_order(g)));
  if (mode != ReuseMode::kDependencySafe) return;
  for (int trial = 0; trial < 10; ++trial) {
    INFO("trial " << trial);
    REQUIRE(simulate(g, m, random_topological_order(g, rng)));
  }
}

}  // namespace

TEST_CASE("memory plan: random DAGs satisfy the overlap rules of every reuse mode",
          "[memory_plan]") {
  size_t peak_seq = 0, peak_safe = 0, total = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    graph::Graph g = random_dag(seed, 60);
    INFO("seed " << seed << ", " << g.num_nodes() << " nodes");
    for (ReuseMode mode : {ReuseMode::kNone, ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
      INFO("mode " << reuse_mode_name(mode));
      MemoryPlan m = plan_memory(g, mode);
      REQUIRE(m.mode == mode);
      check_plan(g, m, mode);
      REQUIRE(simulate(g, m, node_order(g)));
      if (mode == ReuseMode::kSequential) peak_seq += m.peak_bytes;
      if (mode == ReuseMode::kDependencySafe) peak_safe += m.peak_bytes, total += m.total_bytes;
    }
  }
  // Reuse must be real. These DAGs have much inter-op parallelism, which limits what a plan
  // valid for every order can share, so the dependency-safe peak sits well above the
  // sequential one.
  INFO("sequential " << peak_seq << ", dependency-safe " << peak_safe << ", no reuse " << total);
  CHECK(peak_seq <= peak_safe);
  CHECK(peak_seq < total / 2);
  CHECK(peak_safe < total * 4 / 5);
}

TEST_CASE("memory plan: dependency-safe plans survive every random execution order",
          "[memory_plan]") {
  std::mt19937_64 rng(7);
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    graph::Graph g = random_dag(seed, 40);
    MemoryPlan m = plan_memory(g, ReuseMode::kDependencySafe);
    REQUIRE(m.exact_reachability);
    for (int trial = 0; trial < 20; ++trial) {
      INFO("seed " << seed << " trial " << trial);
      REQUIRE(simulate(g, m, random_topological_order(g, rng)));
    }
  }
}

TEST_CASE("memory plan: Reshapes share their input's bytes on random DAGs, in every order",
          "[memory_plan]") {
  std::mt19937_64 rng(11);
  size_t aliases = 0, refused_in_place = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    graph::Graph g = random_dag(seed, 50, /*reshapes=*/true);
    INFO("seed " << seed << ", " << g.num_nodes() << " nodes");
    for (ReuseMode mode : {ReuseMode::kNone, ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
      INFO("mode " << reuse_mode_name(mode));
      MemoryPlan m = plan_memory(g, mode);
      check_plan_and_runs(g, m, mode, rng);
      if (mode == ReuseMode::kNone) {
        for (ValueId v = 0; v < g.num_values(); ++v) REQUIRE(m.alias_of[v] == kNoId);
        continue;
      }
      // Every Reshape of an arena value is an alias unless an in-place op reads its group.
      for (NodeId n = 0; n < g.num_nodes(); ++n) {
        const graph::Node& node = g.node(n);
        if (node.op != "Reshape" || m.storage[node.inputs[0]] != Storage::kArena) continue;
        if (m.alias_of[node.outputs[0]] != kNoId)
          ++aliases;
        else
          ++refused_in_place;
      }
    }
  }
  INFO(aliases << " aliases, " << refused_in_place << " refused for an in-place reader");
  CHECK(aliases > 100);
  CHECK(refused_in_place > 0);
}

TEST_CASE("memory plan: element-wise outputs take a dying input's bytes on random DAGs",
          "[memory_plan]") {
  // Relu and Add nodes: the output over an input whose last use it is (the byte-tag simulation
  // reads a node's inputs before writing its outputs, as the kernels do element by element), in
  // node order and, dependency-safe, in random orders; with Reshape and Concat groups around.
  std::mt19937_64 rng(17);
  size_t in_place = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    graph::Graph g = random_dag(seed, 50, /*reshapes=*/seed % 2 == 0, /*concats=*/seed % 3 == 0,
                                /*elementwise=*/true);
    INFO("seed " << seed << ", " << g.num_nodes() << " nodes");
    for (ReuseMode mode : {ReuseMode::kNone, ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
      INFO("mode " << reuse_mode_name(mode));
      MemoryPlan m = plan_memory(g, mode);
      check_plan_and_runs(g, m, mode, rng);
      if (mode == ReuseMode::kNone) REQUIRE(m.in_place_outputs == 0);
      in_place += m.in_place_outputs;
    }
  }
  INFO(in_place << " outputs in place");
  CHECK(in_place > 200);
}

TEST_CASE("memory plan: Concat inputs live in the Concat's output on random DAGs, in every order",
          "[memory_plan]") {
  // The members' producers write in place and the Concat copies nothing (its bytes already hold
  // its inputs): the byte-tag simulation checks that no member is clobbered before its last
  // reader in node order (sequential) and in random orders (dependency-safe), nested groups too.
  std::mt19937_64 rng(13);
  size_t members = 0, nested = 0, concats = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    graph::Graph g = random_dag(seed, 50, /*reshapes=*/seed % 3 == 0, /*concats=*/true);
    INFO("seed " << seed << ", " << g.num_nodes() << " nodes");
    for (ReuseMode mode : {ReuseMode::kNone, ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
      INFO("mode " << reuse_mode_name(mode));
      MemoryPlan m = plan_memory(g, mode);
      check_plan_and_runs(g, m, mode, rng);
      if (mode != ReuseMode::kSequential) continue;
      for (NodeId n = 0; n < g.num_nodes(); ++n) {
        const graph::Node& node = g.node(n);
        if (node.op != "Concat") continue;
        ++concats;
        if (!copies_nothing(g, m, n)) continue;
        for (ValueId v : node.inputs) {
          ++members;
          if (g.node(g.value(v).producer).op == "Concat") ++nested;
        }
      }
    }
  }
  INFO(concats << " concats, " << members << " inputs in place, " << nested << " nested");
  CHECK(members > 100);
  CHECK(nested > 10);
  CHECK(members < 3 * concats);  // some refused (unaligned sizes, Reshape groups, outputs)
}

TEST_CASE("memory plan: a Reshape chain to a graph output is one buffer, never reused",
          "[memory_plan]") {
  // a: x -> u;  r1: u -> v (Reshape);  r2: v -> y (Reshape, output);  b: u -> z;  c: z -> out.
  graph::GraphBuilder b("<reshape chain>");
  b.add_input("x", TensorDesc{DType::kF32, {64}});
  b.add_node("Blob", "a", {"x"}, {"u"}, sizes_attr({64}));
  b.add_node("Reshape", "r1", {"u"}, {"v"});
  b.add_node("Reshape", "r2", {"v"}, {"y"});
  b.add_node("Blob", "b", {"u"}, {"z"}, sizes_attr({64}));
  b.add_node("Blob", "c", {"z"}, {"out"}, sizes_attr({64}));
  b.add_node("Reshape", "rx", {"x"}, {"xr"});  // of a caller input: a copy of its own
  b.add_node("Blob", "d", {"xr"}, {"out2"}, sizes_attr({64}));
  b.add_output("y");
  b.add_output("out");
  b.add_output("out2");
  graph::Graph g = value_or_throw(b.finish(BlobShapes()));
  for (ReuseMode mode : {ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
    MemoryPlan m = plan_memory(g, mode);
    check_plan(g, m, mode);
    ValueId u = *g.find_value("u"), v = *g.find_value("v"), y = *g.find_value("y");
    CHECK(m.alias_of[v] == u);
    CHECK(m.alias_of[y] == u);
    CHECK(m.alias_of[*g.find_value("xr")] == kNoId);
    // u is (through y) a graph output: z, out, xr and out2 never take its bytes.
    for (const char* name : {"z", "out", "xr", "out2"})
      CHECK(m.offset[*g.find_value(name)] != m.offset[u]);
    CHECK(m.total_bytes == 5 * 256);  // u, z, out, xr, out2: the aliases take no bytes
  }
}

TEST_CASE("memory plan: reuse actually reduces the peak", "[memory_plan]") {
  // A chain of 10 nodes of 1 KiB each: at any time only a node's input and output are live.
  graph::GraphBuilder b("<chain>");
  b.add_input("x", TensorDesc{DType::kF32, {256}});
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    std::string out = "v" + std::to_string(i);
    b.add_node("Blob", "n" + std::to_string(i), {prev}, {out}, sizes_attr({256}));
    prev = out;
  }
  b.add_output(prev);
  graph::Graph g = value_or_throw(b.finish(BlobShapes()));
  for (ReuseMode mode : {ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
    MemoryPlan m = plan_memory(g, mode);
    CHECK(m.total_bytes == 10 * 1024);
    CHECK(m.peak_bytes == 2 * 1024);
    check_plan(g, m, mode);
  }
  MemoryPlan none = plan_memory(g, ReuseMode::kNone);
  CHECK(none.peak_bytes == 10 * 1024);
}

TEST_CASE("memory plan: sizes are rounded up to 64 bytes", "[memory_plan]") {
  graph::GraphBuilder b("<round>");
  b.add_input("x", TensorDesc{DType::kF32, {3}});
  b.add_node("Blob", "a", {"x"}, {"y"}, sizes_attr({3}));   // 12 bytes -> 64
  b.add_node("Blob", "b", {"y"}, {"z"}, sizes_attr({17}));  // 68 bytes -> 128
  b.add_output("z");
  graph::Graph g = value_or_throw(b.finish(BlobShapes()));
  MemoryPlan m = plan_memory(g, ReuseMode::kDependencySafe);
  ValueId y = *g.find_value("y"), z = *g.find_value("z");
  CHECK(m.size[y] == 64);
  CHECK(m.size[z] == 128);
  CHECK(m.total_bytes == 192);
  CHECK(m.peak_bytes == 192);  // z is written while y is read: no overlap
}

TEST_CASE(
    "memory plan: sequential reuse that a parallel order would break is refused by the "
    "dependency-safe mode",
    "[memory_plan]") {
  // a: x -> u;  c: u -> v;  b: x -> w (independent of c);  d: v, w -> out.
  // In node order a, c, b, d the sequential plan may put w over u (c has already read u), but
  // b and c may run at the same time in a parallel executor.
  graph::GraphBuilder bld("<diamond>");
  bld.add_input("x", TensorDesc{DType::kF32, {64}});
  bld.add_node("Blob", "a", {"x"}, {"u"}, sizes_attr({64}));
  bld.add_node("Blob", "c", {"u"}, {"v"}, sizes_attr({64}));
  bld.add_node("Blob", "b", {"x"}, {"w"}, sizes_attr({64}));
  bld.add_node("Blob", "d", {"v", "w"}, {"out"}, sizes_attr({64}));
  bld.add_output("out");
  graph::Graph g = value_or_throw(bld.finish(BlobShapes()));
  REQUIRE(g.node(1).name == "c");
  ValueId u = *g.find_value("u"), w = *g.find_value("w");

  MemoryPlan seq = plan_memory(g, ReuseMode::kSequential);
  CHECK(seq.offset[w] == seq.offset[u]);
  MemoryPlan safe = plan_memory(g, ReuseMode::kDependencySafe);
  CHECK(safe.offset[w] != safe.offset[u]);
  // The sequential plan really is wrong for the order a, b, c, d (b clobbers u before c reads
  // it); the dependency-safe plan is right for it.
  CHECK_FALSE(simulate(g, seq, {0, 2, 1, 3}));
  CHECK(simulate(g, safe, {0, 2, 1, 3}));
  check_plan(g, seq, ReuseMode::kSequential);
  check_plan(g, safe, ReuseMode::kDependencySafe);
  // d depends on both a's consumer c and on b, so `out` may take u's bytes in both modes.
  CHECK(safe.peak_bytes == 3 * 256);
}

TEST_CASE("memory plan: graph outputs and unconsumed values", "[memory_plan]") {
  // `mid` is a graph output that is also consumed; `dead` is produced and never read.
  graph::GraphBuilder b("<outputs>");
  b.add_input("x", TensorDesc{DType::kF32, {64}});
  b.add_node("Blob", "a", {"x"}, {"mid", "dead"}, sizes_attr({64, 64}));
  b.add_node("Blob", "b", {"mid"}, {"y"}, sizes_attr({64}));
  b.add_node("Blob", "c", {"y"}, {"z"}, sizes_attr({64}));
  b.add_node("Blob", "d", {"z"}, {"out"}, sizes_attr({64}));
  b.add_output("mid");
  b.add_output("out");
  graph::Graph g = value_or_throw(b.finish(BlobShapes()));
  for (ReuseMode mode : {ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
    MemoryPlan m = plan_memory(g, mode);
    check_plan(g, m, mode);
    ValueId mid = *g.find_value("mid"), dead = *g.find_value("dead"), z = *g.find_value("z");
    ValueId y = *g.find_value("y"), out = *g.find_value("out");
    // Nothing ever takes the output's bytes; the dead value's bytes are free after node a.
    for (ValueId v : {dead, y, z, out}) CHECK(m.offset[v] != m.offset[mid]);
    CHECK((m.offset[y] == m.offset[dead] || m.offset[z] == m.offset[dead] ||
           m.offset[out] == m.offset[dead]));
    CHECK(m.peak_bytes == 3 * 256);
  }
}

TEST_CASE("memory plan: a 20000-node chain with skip edges is planned exactly in little memory",
          "[memory_plan]") {
  // Ancestor sets are freed along the way, so the default budget holds a long unrolled graph.
  const int n = 20000;
  graph::GraphBuilder b("<long chain>");
  b.add_input("x", TensorDesc{DType::kF32, {16}});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string out = "v" + std::to_string(i);
    std::vector<std::string> ins{prev};
    if (i >= 3 && i % 7 == 0) ins.push_back("v" + std::to_string(i - 3));
    b.add_node("Blob", "n" + std::to_string(i), ins, {out}, sizes_attr({16}));
    prev = out;
  }
  b.add_output(prev);
  graph::Graph g = value_or_throw(b.finish(BlobShapes()));
  MemoryPlan m = plan_memory(g, ReuseMode::kDependencySafe);
  CHECK(m.exact_reachability);
  CHECK(m.peak_bytes <= 5 * 64);
  CHECK(m.total_bytes == static_cast<size_t>(n) * 64);
  CHECK(simulate(g, m, node_order(g)));
}

TEST_CASE("memory plan: over the reachability budget the plan stays dependency-safe",
          "[memory_plan]") {
  std::mt19937_64 rng(11);
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    graph::Graph g = random_dag(seed, 60);
    INFO("seed " << seed);
    for (size_t budget : {size_t{0}, size_t{64}}) {
      MemoryPlan m = plan_memory(g, ReuseMode::kDependencySafe, budget);
      if (budget == 0) CHECK_FALSE(m.exact_reachability);
      check_plan(g, m, ReuseMode::kDependencySafe);
      for (int trial = 0; trial < 5; ++trial)
        REQUIRE(simulate(g, m, random_topological_order(g, rng)));
    }
  }
}
