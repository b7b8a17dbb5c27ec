// graphi: the Dag as a graph of BenchSpin ops (a custom op registered through
// ops/custom_op.h), compiled once per (shape, work) and run by Sessions of each policy.
#include <mutex>

#include "benchmarks/dispatch/competitor.h"
#include "engine/parallel_runtime.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/custom_op.h"

namespace graphi::bench {

namespace {

// BenchSpin: inputs f32[1] x 1..N, output f32[1] = 1 + max(inputs), after `ns` nanoseconds of
// calibrated busy work on the team's thread 0. Not small, so every op goes through dispatch.
Result<std::vector<TensorDesc>> infer_bench_spin(const graph::InferContext& ctx) {
  if (ctx.inputs.empty())
    return Status::invalid_graph(ctx.where + ": expects at least 1 input, got 0");
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorDesc* d = ctx.inputs[i];
    if (!d || d->dtype != DType::kF32 || d->numel() != 1)
      return Status::invalid_graph(ctx.where + ": input " + std::to_string(i) + " must be a 1-element float32, got " +
                                   (d ? d->to_string() : std::string("nothing")));
  }
  GRAPHI_ASSIGN_OR_RETURN(int64_t ns, graph::attr_int(ctx.node.attrs, ctx.where, "ns", 0));
  if (ns < 0) return Status::invalid_graph(ctx.where + ": attribute 'ns' must be >= 0, got " + std::to_string(ns));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {1}}};
}

// A nanosecond of busy work counts as one flop, so cpf levels weigh ops by their work.
ops::CostHint cost_bench_spin(const graph::Node& node, std::span<const TensorDesc* const> in,
                              std::span<const TensorDesc* const>) {
  const graph::Attribute* a = node.attrs.find("ns");
  const double ns = a && std::holds_alternative<int64_t>(*a) ? static_cast<double>(std::get<int64_t>(*a)) : 0.0;
  return {ns, 4.0 * static_cast<double>(in.size() + 1)};
}

class BenchSpinKernel final : public ops::Kernel {
 public:
  Status init(const ops::KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(int64_t ns, graph::attr_int(ctx.node.attrs, ctx.where, "ns", 0));
    iterations_ = spin_iterations_for(ns);
    return Status::ok();
  }
  void run(const ops::TeamContext& team, const ops::Buffers& io) const noexcept override {
    if (team.ithr != 0) return;
    spin_iterations(iterations_);
    float m = 0;
    for (const void* p : io.inputs) m = std::max(m, *static_cast<const float*>(p));
    *static_cast<float*>(io.outputs[0]) = m + 1;
  }
  const char* name() const override { return "bench_spin"; }

 private:
  uint64_t iterations_ = 0;
};

std::unique_ptr<ops::Kernel> make_bench_spin() { return std::make_unique<BenchSpinKernel>(); }

Status register_bench_spin() {
  static Status status = ops::register_custom_op({"BenchSpin", infer_bench_spin, cost_bench_spin, false, {make_bench_spin}});
  return status;
}

std::string value_name(uint32_t i) { return "v" + std::to_string(i); }

// One Plan per (Dag, work), shared by every graphi Session of that pair (teams of 1 thread;
// other team sizes compile their own).
Result<std::shared_ptr<const engine::Plan>> plan_for(const Dag& d, int64_t work_ns, int threads) {
  struct Cached {
    std::string shape;
    uint32_t n = 0;
    int64_t work = -1;
    int threads = 0;
    std::shared_ptr<const engine::Plan> plan;
  };
  static Cached cache;
  if (cache.shape == d.name && cache.n == d.n && cache.work == work_ns && cache.threads == threads) return cache.plan;
  GRAPHI_RETURN_IF_ERROR(register_bench_spin());
  graph::GraphBuilder b("bench/" + d.name);
  b.add_input("x", TensorDesc{DType::kF32, {1}});
  graph::Attributes attrs;
  attrs.set("ns", work_ns);
  for (uint32_t i = 0; i < d.n; ++i) {
    std::vector<std::string> ins;
    for (uint32_t k = 0; k < d.num_preds(i); ++k) ins.push_back(value_name(d.preds_of(i)[k]));
    if (ins.empty()) ins.push_back("x");
    b.add_node("BenchSpin", "n" + std::to_string(i), ins, {value_name(i)}, attrs);
  }
  for (uint32_t o : d.outputs) b.add_output(value_name(o));
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, b.finish(ops::Registry::get()));
  GRAPHI_ASSIGN_OR_RETURN(engine::Plan plan, engine::compile(std::make_shared<const graph::Graph>(std::move(g)), threads));
  cache = {d.name, d.n, work_ns, threads, std::make_shared<const engine::Plan>(std::move(plan))};
  return cache.plan;
}

class Graphi final : public Competitor {
 public:
  Graphi(const Dag& d, std::string policy, std::unique_ptr<engine::Session> s)
      : dag_(d), policy_(std::move(policy)), session_(std::move(s)) {
    Tensor x(TensorDesc{DType::kF32, {1}});
    x.data_as<float>()[0] = 0;
    inputs_.emplace_back("x", std::move(x));
  }
  std::string name() const override { return "graphi " + policy_; }
  std::string config() const override {
    const auto& o = session_->options();
    std::string c = std::to_string(o.executors) + "x" + std::to_string(o.threads);
    if (o.trace) c += " traced";
    if (policy_ == "sequential") return c + " caller";
    // sched-thread: the client thread schedules on a core of its own; sched-role: the executors
    // take the scheduler role in turns; solo: one executor, played by the client thread.
    if (session_->runtime()->dedicated_scheduler()) c += " pin sched-thread";
    else c += o.executors == 1 && policy_ != "shared-queue" ? " pin solo" : " pin sched-role";
    if (o.ring_capacity != 1 && policy_ != "shared-queue") c += " ring" + std::to_string(o.ring_capacity);
    return c;
  }
  Status run() override {
    GRAPHI_ASSIGN_OR_RETURN(outputs_, session_->run(inputs_));
    return Status::ok();
  }
  Status check() const override {
    if (outputs_.size() != dag_.outputs.size())
      return Status::internal(name() + ": " + std::to_string(outputs_.size()) + " outputs, expected " +
                              std::to_string(dag_.outputs.size()));
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const float got = outputs_[k].second.data_as<float>()[0];
      const uint32_t node = dag_.outputs[k];
      if (got != static_cast<float>(dag_.depth[node]))
        return Status::internal(name() + " " + config() + ": " + dag_.name + " node " + std::to_string(node) +
                                " has value " + std::to_string(got) + ", expected depth " +
                                std::to_string(dag_.depth[node]));
    }
    return Status::ok();
  }

 private:
  const Dag& dag_;
  std::string policy_;
  std::unique_ptr<engine::Session> session_;
  engine::NamedTensors inputs_, outputs_;
};

}  // namespace

Status check_values(const Dag& d, const std::vector<float>& values, const std::string& who) {
  for (uint32_t i = 0; i < d.n; ++i)
    if (values[i] != static_cast<float>(d.depth[i]))
      return Status::internal(who + ": " + d.name + " node " + std::to_string(i) + " has value " +
                              std::to_string(values[i]) + ", expected depth " + std::to_string(d.depth[i]));
  return Status::ok();
}

Result<std::unique_ptr<Competitor>> make_graphi(const Dag& d, int64_t work_ns, const std::string& policy,
                                                int executors, int threads, int ring_capacity, bool trace) {
  GRAPHI_ASSIGN_OR_RETURN(std::shared_ptr<const engine::Plan> plan, plan_for(d, work_ns, threads));
  engine::SessionOptions o;
  o.executors = executors;
  o.threads = threads;
  o.scheduler = policy;
  o.pin = true;
  o.ring_capacity = ring_capacity;
  o.trace = trace;
  GRAPHI_ASSIGN_OR_RETURN(std::unique_ptr<engine::Session> s, engine::Session::create(plan, o));
  return std::unique_ptr<Competitor>(new Graphi(d, policy, std::move(s)));
}

}  // namespace graphi::bench
