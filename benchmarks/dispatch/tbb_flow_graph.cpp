// oneTBB flow_graph: the dependency graph as continue_nodes (a node fires when every
// predecessor has signalled), built once, re-run by putting a message into every source.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include "benchmarks/dispatch/competitor.h"
#include "benchmarks/dispatch/tbb_arena.h"

namespace graphi::bench {

namespace {

// Node: a continue_node type (default or lightweight policy).
template <typename Node>
class TbbFlowGraph final : public Competitor {
 public:
  TbbFlowGraph(const Dag& d, int64_t work_ns, int threads, const char* name)
      : dag_(d),
        spin_(spin_iterations_for(work_ns)),
        threads_(threads),
        name_(name),
        arena_(tbb_arena(threads)),
        values_(d.n, 0.0f) {
    // The graph attaches to the arena it is constructed in.
    arena_.execute([&] {
      graph_ = std::make_unique<tbb::flow::graph>();
      nodes_.reserve(d.n);
      for (uint32_t i = 0; i < d.n; ++i)
        nodes_.push_back(std::make_unique<Node>(*graph_, [this, i](const tbb::flow::continue_msg&) {
          run_op(dag_, values_.data(), i, spin_);
          return tbb::flow::continue_msg();
        }));
      for (uint32_t i = 0; i < d.n; ++i)
        for (const uint32_t* s = d.succs_begin(i); s != d.succs_end(i); ++s)
          tbb::flow::make_edge(*nodes_[i], *nodes_[*s]);
    });
  }
  ~TbbFlowGraph() override {
    arena_.execute([&] {
      graph_->wait_for_all();
      nodes_.clear();
      graph_.reset();
    });
  }

  std::string name() const override { return name_; }
  std::string config() const override { return std::to_string(threads_) + " threads"; }
  Status run() override {
    arena_.execute([&] {
      for (uint32_t s : dag_.sources) nodes_[s]->try_put(tbb::flow::continue_msg());
      graph_->wait_for_all();
    });
    return Status::ok();
  }
  Status check() const override { return check_values(dag_, values_, name_); }

 private:
  const Dag& dag_;
  uint64_t spin_;
  int threads_;
  std::string name_;
  tbb::task_arena& arena_;  // shared by every oneTBB competitor (tbb_arena.h)
  std::vector<float> values_;
  std::unique_ptr<tbb::flow::graph> graph_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace

std::unique_ptr<Competitor> make_tbb_flow_graph(const Dag& d, int64_t work_ns, int threads,
                                                bool lightweight) {
  using tbb::flow::continue_msg;
  if (lightweight)
    return std::make_unique<
        TbbFlowGraph<tbb::flow::continue_node<continue_msg, tbb::flow::lightweight>>>(
        d, work_ns, threads, "tbb flow_graph lightweight");
  return std::make_unique<TbbFlowGraph<tbb::flow::continue_node<continue_msg>>>(d, work_ns, threads,
                                                                                "tbb flow_graph");
}

}  // namespace graphi::bench
