// The kernel contract: what an op implementation may know. A kernel knows its node's descs at
// init time and a thread team at run time; it knows nothing of executors, rings or schedulers.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace graphi::ops {

// Everything init() may look at. Built once per node when a Plan is compiled.
struct KernelContext {
  const graph::Node& node;
  std::vector<const TensorDesc*> inputs;    // nullptr for an absent optional input
  std::vector<const Tensor*> const_inputs;  // data of constant inputs (weights), else nullptr
  std::vector<const TensorDesc*> outputs;
  int team_size = 1;  // threads of the team that will run this kernel
  std::string where;  // "<source>: node 'x' (Op)" for errors
  // The data of input i when it is a constant (weights), else nullptr.
  const Tensor* constant(size_t i) const {
    return i < const_inputs.size() ? const_inputs[i] : nullptr;
  }
};

// Where a kernel that can fail at run time (an index out of range in the run's data, a custom op
// wrapping user code that may throw, see ops/custom_op.h function_kernel) reports it: the engine
// gives each executor one, checks it after every op, stops the run and returns the message as
// that node's error, an invalid_argument (the caller's data), or an internal error when
// `internal` (graphi's own fault: a oneDNN execution that failed). Any team member may call
// set(); the first message wins.
class KernelFailure {
 public:
  void set(std::string_view message, bool internal = false) noexcept {
    if (failed_.exchange(true, std::memory_order_acq_rel)) return;
    internal_ = internal;
    try {
      message_.assign(message);
    } catch (...) {
    }
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  // After failed(): the message and its kind (not concurrently with set() of the same failure).
  const std::string& message() const noexcept { return message_; }
  bool internal() const noexcept { return internal_; }
  void clear() noexcept {
    message_.clear();
    internal_ = false;
    failed_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> failed_{false};
  bool internal_ = false;
  std::string message_;
};

// Everything run() may know: its place in the team (ggml's ith/nth) and the executor's scratch.
struct TeamContext {
  int ithr = 0;
  int nthr = 1;
  void* scratch = nullptr;  // at least Kernel::scratch_bytes(), 64-byte aligned, per executor
  size_t scratch_bytes = 0;
  KernelFailure* failure = nullptr;  // set by the engine; nullptr when run outside an engine
  // Reports a run-time failure of this op (see KernelFailure): bad data in the run's inputs, or
  // with `internal` graphi's own fault.
  void fail(std::string_view message, bool internal = false) const noexcept {
    if (failure) failure->set(message, internal);
  }
};

// Raw buffers of one execution, in the node's input/output order. Absent optional inputs are
// nullptr. Inputs are read-only; a kernel writes only its outputs.
struct Buffers {
  std::span<const void* const> inputs;
  std::span<void* const> outputs;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Accept the node (pack weights, create primitives, size scratch) or decline with
  // Status::unsupported("why"); the registry then tries the next kernel in the op's list.
  virtual Status init(const KernelContext& ctx) = 0;
  // Called by every member of the team (ithr = 0..nthr-1) inside one parallel region, unless
  // opens_own_region() is true; then only once, outside any region, with ithr = 0 and nthr =
  // team size, and the kernel (e.g. a oneDNN primitive) parallelizes itself over nthr threads.
  // Never throws, never allocates: whatever could fail was checked in init().
  virtual void run(const TeamContext& team, const Buffers& io) const noexcept = 0;
  virtual const char* name() const = 0;  // "matmul_onednn", shows in traces and `graphi info`
  virtual bool opens_own_region() const { return false; }
  virtual size_t scratch_bytes() const { return 0; }
};

// Splits [0, n) into nthr near-equal chunks; returns thread ithr's [begin, end) (oneDNN's
// balance211).
inline std::pair<int64_t, int64_t> team_range(int64_t n, int ithr, int nthr) {
  int64_t chunk = n / nthr, rem = n % nthr;
  int64_t begin = ithr * chunk + std::min<int64_t>(ithr, rem);
  int64_t end = begin + chunk + (ithr < rem ? 1 : 0);
  return {begin, end};
}

}  // namespace graphi::ops
