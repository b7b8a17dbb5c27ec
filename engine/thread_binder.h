// ThreadBinder: the "apply a placement" step behind an interface. HwlocBinder binds the calling
// thread for real; RecordingBinder records the calls so tests on synthetic topologies (where
// hwloc binding is a silent no-op, DEPENDENCIES.md 2) can check what would have been bound.
// Also: detection of the OpenMP affinity settings the engine warns about and ignores.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "graph/base.h"

namespace graphi::engine {

class ThreadBinder {
 public:
  virtual ~ThreadBinder() = default;
  // Binds the calling thread to one PU of `pus` (OS PU ids; the first one). Called by each team
  // member in its executor's first parallel region (DEPENDENCIES.md 1.5). Thread-safe: all team
  // members call it at once. Errors: kInvalidArgument for an empty set or a PU the machine or
  // this process does not have, kUnsupported if the OS cannot bind threads, kInternal otherwise.
  virtual Status bind_current_thread(std::span<const int> pus) = 0;
};

// Binds with hwloc_set_cpubind(HWLOC_CPUBIND_THREAD) on this machine's topology, loaded once at
// create(). Binding outlives the binder (it is the thread's OS affinity).
class HwlocBinder final : public ThreadBinder {
 public:
  // Errors: kInternal if hwloc cannot load this machine; kUnsupported if the topology is not this
  // system (HWLOC_XMLFILE / HWLOC_SYNTHETIC set) or the OS offers no thread binding.
  static Result<std::unique_ptr<HwlocBinder>> create();
  ~HwlocBinder() override;
  HwlocBinder(const HwlocBinder&) = delete;
  HwlocBinder& operator=(const HwlocBinder&) = delete;

  Status bind_current_thread(std::span<const int> pus) override;
  // The calling thread's current OS binding (OS PU ids, ascending), for diagnostics and tests.
  Result<std::vector<int>> current_thread_binding() const;

 private:
  struct Impl;
  explicit HwlocBinder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Records every call instead of binding. Thread-safe. fail_with() makes later calls fail with
// that Status (to test error paths).
class RecordingBinder final : public ThreadBinder {
 public:
  struct Call {
    std::thread::id thread;
    pid_t tid = 0;         // gettid() of the caller
    std::vector<int> pus;  // what it asked for
  };
  Status bind_current_thread(std::span<const int> pus) override;
  std::vector<Call> calls() const;
  void fail_with(Status status);

 private:
  mutable std::mutex mu_;
  std::vector<Call> calls_;
  Status fail_;
};

// The OpenMP affinity settings that fight graphi's own pinning, or nullopt when none is active:
// OMP_PROC_BIND (unless "false"), OMP_PLACES and GOMP_CPU_AFFINITY (unless OMP_PROC_BIND=false),
// KMP_AFFINITY (unless "none"/"disabled"). Why the engine warns and ignores them
// (DEPENDENCIES.md 1.5): with them set, libgomp binds the initial thread to the first place when
// it loads (so every thread it starts inherits one core), and at region entry it rebinds each
// executor's master to the places it computes for that team; all executors' teams are laid out
// on the same first places, so the teams collide on the same cores. libomp behaves alike.
// graphi's team members bind themselves with hwloc inside their first region, which overrides
// the runtime's choice and persists (verified with libgomp 12 under OMP_PROC_BIND=close
// OMP_PLACES=cores), so the settings are ignored, not obeyed. The variables are read as they were
// at process start (engine/startup_env.h: LIBXSMM sets OMP_PROC_BIND=TRUE when it initialises,
// which is not the user's setting). `getenv` is injectable for tests.
std::optional<std::string> omp_affinity_env_warning(
    const std::function<const char*(const char*)>& getenv = nullptr);

}  // namespace graphi::engine
