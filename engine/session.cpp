// Sequential reference executor and Session (see session.h). Nodes run one at a time in the
// Plan's topological order on the calling thread's OpenMP team; this is the correctness oracle
// for every parallel executor.
//
// Concurrency: one Session owns one set of per-run buffers (arena, scratch, pointer tables), so
// run() holds a mutex for the whole run; concurrent callers wait their turn. For parallel
// serving create several Sessions.
#include "engine/session.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "engine/plan.h"

namespace graphi::engine {

using graph::kNoId;

namespace {

struct FreeAligned {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<void, FreeAligned>;

// 64-byte aligned, uninitialized; nullptr for 0 bytes.
Result<AlignedBytes> alloc_aligned(size_t bytes, const std::string& what) {
  if (bytes == 0) return AlignedBytes();
  size_t rounded = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  void* p = std::aligned_alloc(kArenaAlignment, rounded);
  if (!p)
    return Status(StatusCode::kOutOfMemory, "cannot allocate " + std::to_string(rounded) + " bytes for the " + what);
  return AlignedBytes(p);
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  std::shared_ptr<const Plan> plan_ptr;  // read-only; may be shared with other Sessions
  const Plan& plan() const { return *plan_ptr; }

  std::mutex run_mutex;  // serializes run(): the buffers below belong to the run in progress
  AlignedBytes arena;
  AlignedBytes scratch;
  // Buffers of every node slot, laid out like plan().in_offsets()/out_offsets(). Arena and
  // constant pointers are fixed at create(); graph-input slots are patched on every run.
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  struct InputSlot {
    uint32_t slot;         // index into in_ptrs
    uint32_t input_index;  // position in graph().inputs()
  };
  std::vector<InputSlot> input_slots;
  std::unordered_map<std::string, uint32_t> input_index;  // graph input name -> position

  const void* value_ptr(ValueId v) const {
    const MemoryPlan& m = plan().memory();
    switch (m.storage[v]) {
      case Storage::kArena: return static_cast<const char*>(arena.get()) + m.offset[v];
      case Storage::kConstant: return plan().graph().value(v).data->data();
      case Storage::kCallerInput: return nullptr;
    }
    return nullptr;
  }

  std::string input_list() const;
  Status bind_inputs(const NamedTensors& inputs, std::vector<const Tensor*>& bound) const;
  void execute(int threads);
};

Session::Session() : impl_(std::make_unique<Impl>()) {}
Session::~Session() = default;

const graph::Graph& Session::graph() const { return impl_->plan().graph(); }
const Plan& Session::plan() const { return impl_->plan(); }
std::shared_ptr<const Plan> Session::shared_plan() const { return impl_->plan_ptr; }
const SessionOptions& Session::options() const { return impl_->options; }

static Status check_options(const SessionOptions& o) {
  if (o.threads < 1)
    return Status::invalid_argument("session options: threads must be at least 1, got " + std::to_string(o.threads));
  if (o.executors != 1)
    return Status::invalid_argument("session options: executors = " + std::to_string(o.executors) +
                                    ", but the sequential reference executor runs exactly 1 executor "
                                    "(parallel executors are not available yet)");
  if (o.scheduler != "sequential")
    return Status::invalid_argument("session options: unknown scheduler '" + o.scheduler +
                                    "' (available: sequential)");
  if (o.ring_capacity < 1)
    return Status::invalid_argument("session options: ring_capacity must be at least 1, got " +
                                    std::to_string(o.ring_capacity));
  // `pin` is accepted and has no effect: the sequential executor runs on the caller's thread
  // and leaves its placement to the caller.
  return Status::ok();
}

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const graph::Graph> graph,
                                                 const SessionOptions& options) {
  if (!graph) return Status::invalid_argument("Session::create: no graph");
  GRAPHI_RETURN_IF_ERROR(check_options(options));
  GRAPHI_ASSIGN_OR_RETURN(Plan plan, compile(std::move(graph), options.threads));
  return create(std::make_shared<const Plan>(std::move(plan)), options);
}

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Plan> plan_ptr,
                                                 const SessionOptions& options) {
  if (!plan_ptr) return Status::invalid_argument("Session::create: no plan");
  GRAPHI_RETURN_IF_ERROR(check_options(options));
  if (plan_ptr->team_size() != options.threads)
    return Status::invalid_argument("session options: threads = " + std::to_string(options.threads) +
                                    ", but the plan's kernels were compiled for teams of " +
                                    std::to_string(plan_ptr->team_size()));
  std::unique_ptr<Session> s(new Session());
  Impl& im = *s->impl_;
  im.options = options;
  im.plan_ptr = std::move(plan_ptr);
  const Plan& plan = im.plan();
  const graph::Graph& g = plan.graph();

  GRAPHI_ASSIGN_OR_RETURN(im.arena, alloc_aligned(plan.memory().peak_bytes, "arena of " + g.source()));
  GRAPHI_ASSIGN_OR_RETURN(im.scratch, alloc_aligned(plan.scratch_bytes(), "kernel scratch of " + g.source()));

  std::vector<uint32_t> input_pos(g.num_values(), UINT32_MAX);
  for (uint32_t i = 0; i < g.inputs().size(); ++i) {
    input_pos[g.inputs()[i]] = i;
    im.input_index.emplace(g.value(g.inputs()[i]).name, i);
  }
  im.in_ptrs.assign(plan.in_offsets().back(), nullptr);
  im.out_ptrs.assign(plan.out_offsets().back(), nullptr);
  for (NodeId n = 0; n < plan.num_nodes(); ++n) {
    std::span<const ValueId> ins = plan.inputs(n), outs = plan.outputs(n);
    for (size_t k = 0; k < ins.size(); ++k) {
      uint32_t slot = plan.in_offsets()[n] + static_cast<uint32_t>(k);
      if (ins[k] == kNoId) continue;
      if (plan.memory().storage[ins[k]] == Storage::kCallerInput)
        im.input_slots.push_back({slot, input_pos[ins[k]]});
      else
        im.in_ptrs[slot] = im.value_ptr(ins[k]);
    }
    for (size_t k = 0; k < outs.size(); ++k)
      im.out_ptrs[plan.out_offsets()[n] + k] = const_cast<void*>(im.value_ptr(outs[k]));
  }
  return s;
}

std::string Session::Impl::input_list() const {
  const graph::Graph& g = plan().graph();
  std::string s;
  for (ValueId v : g.inputs()) s += (s.empty() ? "" : ", ") + g.value(v).name + " " + g.value(v).desc.to_string();
  return s.empty() ? "none" : s;
}

Status Session::Impl::bind_inputs(const NamedTensors& inputs, std::vector<const Tensor*>& bound) const {
  const graph::Graph& g = plan().graph();
  const std::string prefix = g.source() + ": ";
  bound.assign(g.inputs().size(), nullptr);
  for (const auto& [name, tensor] : inputs) {
    auto it = input_index.find(name);
    if (it == input_index.end())
      return Status::invalid_argument(prefix + "'" + name + "' is not an input of the graph (inputs: " +
                                      input_list() + ")");
    if (bound[it->second])
      return Status::invalid_argument(prefix + "input '" + name + "' is given more than once");
    const TensorDesc& want = g.value(g.inputs()[it->second]).desc;
    if (!(tensor.desc() == want))
      return Status::invalid_argument(prefix + "input '" + name + "': expected " + want.to_string() +
                                      ", got " + tensor.desc().to_string());
    if (tensor.data() == nullptr)
      return Status::invalid_argument(prefix + "input '" + name + "' has no data");
    bound[it->second] = &tensor;
  }
  std::string missing;
  for (size_t i = 0; i < bound.size(); ++i)
    if (!bound[i]) {
      const graph::Value& v = g.value(g.inputs()[i]);
      missing += (missing.empty() ? "" : ", ") + ("'" + v.name + "' " + v.desc.to_string());
    }
  if (!missing.empty()) return Status::invalid_argument(prefix + "missing input(s): " + missing);
  return Status::ok();
}

void Session::Impl::execute(int threads) {
  void* scr = scratch.get();
  const size_t scr_bytes = plan().scratch_bytes();
  // The calling thread's OpenMP ICV may be anything (an embedding framework may have changed
  // it); kernels that open their own region (oneDNN) size their team from it.
  omp_set_num_threads(threads);
  for (NodeId n : plan().order()) {
    const ops::Kernel& k = plan().kernel(n);
    const uint32_t i0 = plan().in_offsets()[n], i1 = plan().in_offsets()[n + 1];
    const uint32_t o0 = plan().out_offsets()[n], o1 = plan().out_offsets()[n + 1];
    ops::Buffers io{std::span<const void* const>(in_ptrs.data() + i0, i1 - i0),
                    std::span<void* const>(out_ptrs.data() + o0, o1 - o0)};
    if (plan().small(n)) {
      k.run(ops::TeamContext{0, 1, scr, scr_bytes}, io);
    } else if (k.opens_own_region() || threads == 1) {
      k.run(ops::TeamContext{0, threads, scr, scr_bytes}, io);
    } else {
      // One region per op on the same team: libgomp reuses the calling thread's pool, so the
      // same OS threads run every op. The runtime may give fewer threads than asked (e.g.
      // when run() is itself called inside a parallel region): nthr is what we actually got.
#pragma omp parallel num_threads(threads)
      k.run(ops::TeamContext{omp_get_thread_num(), omp_get_num_threads(), scr, scr_bytes}, io);
    }
  }
}

Result<NamedTensors> Session::run(const NamedTensors& inputs) {
  Impl& im = *impl_;
  const graph::Graph& g = im.plan().graph();
  std::lock_guard<std::mutex> lock(im.run_mutex);

  std::vector<const Tensor*> bound;
  GRAPHI_RETURN_IF_ERROR(im.bind_inputs(inputs, bound));
  for (const Impl::InputSlot& s : im.input_slots) im.in_ptrs[s.slot] = bound[s.input_index]->data();

  im.execute(im.options.threads);

  NamedTensors out;
  try {
    out.reserve(g.outputs().size());
    for (ValueId v : g.outputs()) {
      const graph::Value& val = g.value(v);
      const void* src = im.plan().memory().storage[v] == Storage::kCallerInput
                            ? bound[im.input_index.at(val.name)]->data()
                            : im.value_ptr(v);
      Tensor t(val.desc);
      std::memcpy(t.data(), src, val.desc.bytes());
      out.emplace_back(val.name, std::move(t));
    }
  } catch (const std::bad_alloc&) {
    out.clear();
  }
  // Caller tensors must not be referenced after run() returns.
  for (const Impl::InputSlot& s : im.input_slots) im.in_ptrs[s.slot] = nullptr;
  if (out.size() != g.outputs().size())
    return Status(StatusCode::kOutOfMemory, g.source() + ": cannot allocate the output tensors");
  return out;
}

}  // namespace graphi::engine
