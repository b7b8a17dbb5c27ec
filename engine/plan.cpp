// compile(): Graph -> Plan (kernels, flat arrays, memory plan, levels).
#include "engine/plan.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <optional>

#include "ops/scoped_omp_threads.h"

namespace graphi::engine {

using graph::kNoId;

void Plan::set_levels(std::vector<double> levels) {
  GRAPHI_CHECK(levels.size() == num_nodes(), "set_levels: one level per node expected");
  levels_ = std::move(levels);
}

bool tiny_for_team(const ops::CostHint& c) {
  if (c.flops <= 0 && c.bytes <= 0) return false;
  return c.bytes < 64 * 1024 && c.flops < 200e3;
}

Result<Plan> compile(std::shared_ptr<const graph::Graph> graph, int team_size, ReuseMode reuse) {
  if (!graph) return Status::invalid_argument("compile: no graph");
  if (team_size < 1)
    return Status::invalid_argument("compile: team size must be at least 1, got " +
                                    std::to_string(team_size));
  const graph::Graph& g = *graph;
  const ops::Registry& registry = ops::Registry::get();
  const size_t n = g.num_nodes();

  Plan plan;
  plan.graph_ = graph;
  plan.team_size_ = team_size;
  plan.order_.resize(n);
  for (NodeId i = 0; i < n; ++i) plan.order_[i] = i;

  // Per node: value ids, cost hint, small flag, kernel.
  // Kernels that create oneDNN primitives read omp_get_max_threads() in init().
  ops::ScopedOmpThreads omp_threads(team_size);
  plan.in_offsets_.push_back(0);
  plan.out_offsets_.push_back(0);
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = g.node(id);
    std::string where = g.source() + ": " + node.where();
    const ops::OpDef* def = registry.find(node.op);
    if (!def) return Status::unsupported(where + ": unknown op type '" + node.op + "'");

    ops::KernelContext ctx{node, {}, {}, {}, team_size, where};
    for (ValueId v : node.inputs) {
      plan.in_ids_.push_back(v);
      const graph::Value* val = v == kNoId ? nullptr : &g.value(v);
      ctx.inputs.push_back(val ? &val->desc : nullptr);
      ctx.const_inputs.push_back(val && val->kind == graph::ValueKind::kConstant ? val->data.get()
                                                                                 : nullptr);
    }
    for (ValueId v : node.outputs) {
      plan.out_ids_.push_back(v);
      ctx.outputs.push_back(&g.value(v).desc);
    }
    plan.in_offsets_.push_back(static_cast<uint32_t>(plan.in_ids_.size()));
    plan.out_offsets_.push_back(static_cast<uint32_t>(plan.out_ids_.size()));

    plan.cost_.push_back(registry.cost(node, ctx.inputs, ctx.outputs));
    plan.small_.push_back(def->small ? 1 : 0);
    const bool narrow = !def->small && team_size > 1 && tiny_for_team(plan.cost_.back());
    plan.narrow_.push_back(narrow ? 1 : 0);
    if (def->small || narrow) ctx.team_size = 1;
    // oneDNN primitives read the thread count when they are made: one for a narrow op.
    std::optional<ops::ScopedOmpThreads> one_thread;
    if (narrow) one_thread.emplace(1);

    // Kernels report failures as Status; an exception escaping init() (a third-party library,
    // bad_alloc) is still turned into an error that names the node.
    Result<std::unique_ptr<ops::Kernel>> kernel =
        Status::internal(where + ": kernel selection did not run");
    try {
      kernel = registry.select(ctx);
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kOutOfMemory, where + ": out of memory while preparing the kernel");
    } catch (const std::exception& e) {
      return Status::internal(where + ": kernel init threw: " + e.what());
    }
    if (!kernel.is_ok()) return kernel.status();
    plan.scratch_bytes_ = std::max(plan.scratch_bytes_, (*kernel)->scratch_bytes());
    plan.kernels_.push_back(std::move(kernel).value());
  }
  plan.scratch_bytes_ =
      (plan.scratch_bytes_ + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;

  // Successors (distinct, ascending) and pending counts (distinct predecessors).
  std::vector<std::vector<NodeId>> succ(n);
  for (NodeId b = 0; b < n; ++b)
    for (ValueId v : g.node(b).inputs)
      if (v != kNoId && g.value(v).producer != kNoId) succ[g.value(v).producer].push_back(b);
  plan.succ_offsets_.push_back(0);
  plan.initial_pending_.assign(n, 0);
  for (NodeId a = 0; a < n; ++a) {
    std::sort(succ[a].begin(), succ[a].end());
    succ[a].erase(std::unique(succ[a].begin(), succ[a].end()), succ[a].end());
    for (NodeId b : succ[a]) {
      plan.succ_.push_back(b);
      ++plan.initial_pending_[b];
    }
    plan.succ_offsets_.push_back(static_cast<uint32_t>(plan.succ_.size()));
  }

  plan.memory_ = plan_memory(g, reuse);
  if (reuse == ReuseMode::kDependencySafe)
    plan.sequential_memory_ = plan_memory(g, ReuseMode::kSequential);
  // A Reshape / Identity whose output takes its input's bytes (a memory-plan alias), or a Concat
  // whose inputs were written in place, copies nothing at run time: its copy-cost hint would
  // lengthen levels and the cost model's paths.
  for (NodeId i = 0; i < n; ++i)
    if (copies_nothing(g, plan.memory_, i)) plan.cost_[i] = ops::CostHint{};
  plan.levels_ = compute_levels(plan, default_node_costs(plan));
  return plan;
}

std::vector<double> default_node_costs(const Plan& plan) {
  std::vector<double> c(plan.num_nodes());
  for (NodeId i = 0; i < c.size(); ++i) c[i] = plan.cost(i).flops + plan.cost(i).bytes;
  return c;
}

std::vector<double> compute_levels(const Plan& plan, std::span<const double> node_cost) {
  GRAPHI_CHECK(node_cost.size() == plan.num_nodes(), "compute_levels: one cost per node expected");
  std::vector<double> level(plan.num_nodes(), 0.0);
  std::span<const NodeId> order = plan.order();
  for (size_t i = order.size(); i-- > 0;) {  // reverse topological: successors first
    NodeId a = order[i];
    double best = 0;
    for (NodeId s : plan.successors(a)) best = std::max(best, level[s]);
    level[a] = node_cost[a] + best;
  }
  return level;
}

}  // namespace graphi::engine
