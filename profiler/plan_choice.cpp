// choose_plan (see plan_choice.h).
#include "profiler/plan_choice.h"

#include "profiler/cost_model.h"
#include "profiler/plan_cache.h"
#include "profiler/split_check.h"

namespace graphi::profiler {

namespace {

void apply(engine::SessionOptions& o, const Config& c) {
  o.executors = c.executors;
  o.threads = c.threads;
  o.scheduler = c.scheduler;
}

}  // namespace

Result<PlanChoice> choose_plan(const graph::Graph& g, const PlanRequest& req) {
  PlanChoice out;
  engine::SessionOptions& o = out.options;
  o.cpuset = req.cpuset;
  o.pin = req.pin;
  auto finish = [&](PlanChoice& c) -> Result<PlanChoice> {
    if (!req.scheduler.empty()) c.options.scheduler = req.scheduler;
    return c;
  };
  if (req.executors || req.threads) {
    o.executors = req.executors.value_or(1);
    o.threads = req.threads.value_or(1);
    o.scheduler = default_scheduler(o.executors);
    out.source = "flags";
    return finish(out);
  }
  if (req.plan == "none") {
    out.source = "none";
    return finish(out);
  }

  GRAPHI_ASSIGN_OR_RETURN(engine::Topology topo, engine::Topology::load_this_machine(req.cpuset));
  const std::string hash = graph_content_hash(g);
  const std::string sig = topology_signature(topo);
  if (req.plan != "auto") {
    GRAPHI_ASSIGN_OR_RETURN(SavedPlan p, read_plan_file(req.plan));
    auto mismatch = [&](const std::string& field, const std::string& file_value,
                        const std::string& here) {
      return Status::invalid_argument(req.plan + ": the plan's " + field + " is '" + file_value +
                                      "', here '" + here +
                                      "' (profile again: graphi profile MODEL --plan-out FILE)");
    };
    if (p.graph_hash != hash) return mismatch("graph hash", p.graph_hash, hash);
    if (p.topology != sig) return mismatch("topology", p.topology, sig);
    if (p.version != graphi_version())
      return mismatch("graphi version", p.version, graphi_version());
    if (p.node_us.size() != g.num_nodes())
      return mismatch("cost table length", std::to_string(p.node_us.size()),
                      std::to_string(g.num_nodes()));
    apply(o, p.config);
    o.node_costs = p.node_us;
    out.source = "file";
    out.message = "graphi: plan from " + req.plan + ": " + p.config.name();
    return finish(out);
  }

  std::string file;
  if (std::optional<SavedPlan> p = load_cached_plan(hash, sig, g.num_nodes(), &file)) {
    apply(o, p->config);
    o.node_costs = p->node_us;
    out.source = "cache";
    out.message = "graphi: plan from cache " + file + ": " + p->config.name();
    return finish(out);
  }
  GRAPHI_ASSIGN_OR_RETURN(ModelGraph mg, model_graph(g));
  const ConfigSpace space = enumerate_configs(topo);
  const CostModel model = CostModel::analytical(mg);
  std::string why;
  std::optional<Config> contender;
  double predicted_us = 0;
  const Config c = analytical_choice(model, space.configs, &why, 0.10, &contender, &predicted_us);
  apply(o, c);
  out.source = "analytical";
  auto say = [&](const std::string& measured) {
    out.message = "graphi: plan auto: " + c.name() + " (" + why + measured +
                  "; no cached plan: `graphi profile` measures; --no-plan for 1x1)";
  };
  say("");
  GRAPHI_ASSIGN_OR_RETURN(bool check, split_check_enabled());
  // An explicit scheduler names what the caller wants run: no contender then.
  if (!contender || !check || !req.scheduler.empty()) return finish(out);
  out.predicted_ms = predicted_us / 1e3;
  out.check_key = split_check_key(hash, sig, c, *contender);
  if (std::optional<bool> won = cached_split_check(out.check_key)) {
    if (*won) {
      apply(o, *contender);
      out.source = "measured";
      out.message = "graphi: plan auto: " + contender->name() + " (measured faster here than " +
                    c.name() + ", the cost model's choice; remembered in split_check.json)";
    } else {
      say("; measured faster here than " + contender->name());
    }
    return finish(out);
  }
  out.contender = contender;
  return finish(out);
}

}  // namespace graphi::profiler
