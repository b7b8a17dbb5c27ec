// oneTBB task_group: the hand-written dataflow a TBB user would write. Each op has an atomic
// count of unfinished predecessors; the task that finishes an op spawns the successors it made
// ready and keeps the last of them for itself (no spawn for a chain).
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>

#include "benchmarks/dispatch/competitor.h"
#include "benchmarks/dispatch/tbb_arena.h"

namespace graphi::bench {

namespace {

class TbbTaskGroup final : public Competitor {
 public:
  TbbTaskGroup(const Dag& d, int64_t work_ns, int threads)
      : dag_(d),
        spin_(spin_iterations_for(work_ns)),
        threads_(threads),
        arena_(tbb_arena(threads)),
        pending_(new std::atomic<uint32_t>[d.n]),
        values_(d.n, 0.0f) {}

  std::string name() const override { return "tbb task_group"; }
  std::string config() const override { return std::to_string(threads_) + " threads"; }
  Status run() override {
    for (uint32_t i = 0; i < dag_.n; ++i)
      pending_[i].store(dag_.num_preds(i), std::memory_order_relaxed);
    arena_.execute([&] {
      tbb::task_group group;  // made inside the arena so its tasks run there
      group_ = &group;
      for (uint32_t s : dag_.sources) group.run([this, s] { execute(s); });
      group.wait();
    });
    return Status::ok();
  }
  Status check() const override { return check_values(dag_, values_, name()); }

 private:
  void execute(uint32_t i) {
    while (true) {
      run_op(dag_, values_.data(), i, spin_);
      int64_t next = -1;
      for (const uint32_t* s = dag_.succs_begin(i); s != dag_.succs_end(i); ++s) {
        if (pending_[*s].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
        if (next >= 0) {
          const auto ready = static_cast<uint32_t>(next);
          group_->run([this, ready] { execute(ready); });
        }
        next = *s;
      }
      if (next < 0) return;
      i = static_cast<uint32_t>(next);
    }
  }

  const Dag& dag_;
  uint64_t spin_;
  int threads_;
  tbb::task_arena& arena_;            // shared by every oneTBB competitor (tbb_arena.h)
  tbb::task_group* group_ = nullptr;  // the group of the run in progress
  std::unique_ptr<std::atomic<uint32_t>[]> pending_;
  std::vector<float> values_;
};

}  // namespace

std::unique_ptr<Competitor> make_tbb_task_group(const Dag& d, int64_t work_ns, int threads) {
  return std::make_unique<TbbTaskGroup>(d, work_ns, threads);
}

}  // namespace graphi::bench
