// HwlocBinder, RecordingBinder and the OpenMP affinity environment check (thread_binder.h).
#include "engine/thread_binder.h"

#include <hwloc.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "engine/startup_env.h"
#include "engine/topology.h"

namespace graphi::engine {

namespace {

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

struct HwlocBinder::Impl {
  hwloc_topology_t topo = nullptr;
  ~Impl() {
    if (topo) hwloc_topology_destroy(topo);
  }
};

HwlocBinder::HwlocBinder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HwlocBinder::~HwlocBinder() = default;

Result<std::unique_ptr<HwlocBinder>> HwlocBinder::create() {
  auto impl = std::make_unique<Impl>();
  if (hwloc_topology_init(&impl->topo) != 0) return Status::internal("hwloc_topology_init failed");
  hwloc_topology_set_io_types_filter(impl->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(impl->topo) != 0) {
    return Status::internal(std::string("hwloc could not read this machine's topology: ") +
                            std::strerror(errno));
  }
  // On a fake topology hwloc_set_cpubind returns 0 and does nothing (DEPENDENCIES.md 2): refuse
  // instead of pretending to pin.
  if (!hwloc_topology_is_thissystem(impl->topo)) {
    return Status::unsupported(
        "thread binding: hwloc loaded a fake topology (HWLOC_XMLFILE or HWLOC_SYNTHETIC is set), "
        "so binding would silently do nothing; unset them or run without pinning");
  }
  const hwloc_topology_support* support = hwloc_topology_get_support(impl->topo);
  if (!support->cpubind->set_thisthread_cpubind) {
    return Status::unsupported("thread binding: this OS offers no way to bind a thread to a core");
  }
  return std::unique_ptr<HwlocBinder>(new HwlocBinder(std::move(impl)));
}

Status HwlocBinder::bind_current_thread(std::span<const int> pus) {
  if (pus.empty()) return Status::invalid_argument("thread binding: empty PU set");
  hwloc_const_cpuset_t machine = hwloc_topology_get_topology_cpuset(impl_->topo);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int pu : pus) {
    if (pu < 0 || !hwloc_bitmap_isset(machine, static_cast<unsigned>(pu))) {
      hwloc_bitmap_free(set);
      return Status::invalid_argument(
          "thread binding: PU " + std::to_string(pu) + " does not exist on this machine (PUs " +
          format_cpu_list(std::vector<int>(pus.begin(), pus.end())) + " requested)");
    }
    hwloc_bitmap_set(set, static_cast<unsigned>(pu));
  }
  // One PU, so the thread cannot even migrate between the hardware threads of its core.
  hwloc_bitmap_singlify(set);
  const int pu = hwloc_bitmap_first(set);
  // Reads the topology only: safe from all team members at once (hwloc thread-safety notes).
  const int rc = hwloc_set_cpubind(impl_->topo, set, HWLOC_CPUBIND_THREAD);
  const int err = errno;
  hwloc_bitmap_free(set);
  if (rc == 0) return Status::ok();
  std::string msg = "thread binding to PU " + std::to_string(pu) + " failed: " + std::strerror(err);
  if (err == ENOSYS || err == EXDEV) return Status::unsupported(msg);
  if (err == EINVAL || err == EPERM) {
    return Status::invalid_argument(msg + " (is PU " + std::to_string(pu) +
                                    " outside this process's cgroup cpuset?)");
  }
  return Status::internal(msg);
}

Result<std::vector<int>> HwlocBinder::current_thread_binding() const {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(impl_->topo, set, HWLOC_CPUBIND_THREAD) != 0) {
    hwloc_bitmap_free(set);
    return Status::internal(std::string("hwloc_get_cpubind failed: ") + std::strerror(errno));
  }
  std::vector<int> ids;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) ids.push_back(i);
  hwloc_bitmap_free(set);
  return ids;
}

Status RecordingBinder::bind_current_thread(std::span<const int> pus) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back(
      {std::this_thread::get_id(), current_tid(), std::vector<int>(pus.begin(), pus.end())});
  if (pus.empty()) return Status::invalid_argument("thread binding: empty PU set");
  return fail_;
}

std::vector<RecordingBinder::Call> RecordingBinder::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void RecordingBinder::fail_with(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_ = std::move(status);
}

std::optional<std::string> omp_affinity_env_warning(
    const std::function<const char*(const char*)>& getenv_fn) {
  auto get = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv_fn ? getenv_fn(name) : startup_getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
  std::vector<std::string> active;
  std::optional<std::string> proc_bind = get("OMP_PROC_BIND");
  // libgomp: OMP_PROC_BIND=false disables binding and makes OMP_PLACES / GOMP_CPU_AFFINITY inert.
  const bool bind_off = proc_bind && lower(*proc_bind) == "false";
  if (proc_bind && !bind_off) active.push_back("OMP_PROC_BIND=" + *proc_bind);
  if (!bind_off) {
    for (const char* name : {"OMP_PLACES", "GOMP_CPU_AFFINITY"})
      if (auto v = get(name)) active.push_back(std::string(name) + "=" + *v);
  }
  if (auto v = get("KMP_AFFINITY")) {
    // libomp: "none" (no binding) and "disabled" are harmless; any binding type is not.
    std::string s = lower(*v);
    bool binds = false;
    for (const char* type : {"compact", "scatter", "explicit", "balanced", "logical", "physical"})
      binds = binds || s.find(type) != std::string::npos;
    const bool harmless =
        s.find("disabled") != std::string::npos || (!binds && s.find("none") != std::string::npos);
    if (!harmless) active.push_back("KMP_AFFINITY=" + *v);
  }
  if (active.empty()) return std::nullopt;
  std::string list;
  for (const std::string& a : active) list += (list.empty() ? "" : ", ") + a;
  return "OpenMP affinity settings ignored (" + list +
         "): they make the OpenMP runtime bind executor threads to its own places, so executor "
         "teams would collide on the same cores; graphi pins each team member itself with hwloc. "
         "Unset them to silence this warning.";
}

}  // namespace graphi::engine
