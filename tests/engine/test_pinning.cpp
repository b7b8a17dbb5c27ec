// Pinning on the real machine: an executor-like std::thread leads an OpenMP team whose members
// bind themselves with hwloc on first entry (DEPENDENCIES.md 1.5); each member must then run on
// its core, and libgomp must reuse the same OS threads across 1,000 regions. Plus the recording
// binder and the OpenMP affinity environment check, which need no real binding.
#include <omp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include "engine/placement.h"
#include "engine/thread_binder.h"
#include "engine/topology.h"

using namespace graphi;
using namespace graphi::engine;

namespace {
pid_t gettid_now() { return static_cast<pid_t>(::syscall(SYS_gettid)); }
}  // namespace

TEST_CASE("team members pinned with hwloc run on their cores, same OS threads over 1,000 regions",
          "[pinning]") {
  if (auto warning = omp_affinity_env_warning()) {
    WARN("skipping: " << *warning);
    return;
  }
  Topology topo = value_or_throw(Topology::load_this_machine());
  if (!topo.is_this_system()) {
    WARN("skipping: hwloc loaded a fake topology (HWLOC_XMLFILE / HWLOC_SYNTHETIC)");
    return;
  }
  Result<std::unique_ptr<HwlocBinder>> binder_r = HwlocBinder::create();
  if (!binder_r.is_ok()) {
    WARN("skipping: " << binder_r.status().to_string());
    return;
  }
  HwlocBinder& binder = **binder_r;
  const int k = std::min(2, static_cast<int>(topo.usable_cores().size()));
  Placement placement = value_or_throw(place_executors(topo, {1, k, false, false}));
  const std::vector<int>& pus = placement.teams[0].pus;

  constexpr int kRegions = 1000;
  std::vector<std::vector<pid_t>> tids(kRegions, std::vector<pid_t>(static_cast<size_t>(k), 0));
  std::vector<std::vector<int>> cpus(kRegions, std::vector<int>(static_cast<size_t>(k), -1));
  std::vector<Status> bind_status(static_cast<size_t>(k));
  std::vector<std::vector<int>> bound_to(static_cast<size_t>(k));
  std::vector<int> team_sizes(kRegions, 0);
  pid_t executor_tid = 0;

  std::thread executor([&] {
    executor_tid = gettid_now();
    for (int region = 0; region < kRegions; ++region) {
      // Explicit num_threads(k): never rely on the inherited ICV (DEPENDENCIES.md 1.5).
#pragma omp parallel num_threads(k)
      {
        const size_t i = static_cast<size_t>(omp_get_thread_num());
        if (region == 0) {
          // Bind on first entry only: libgomp keeps these workers for this master, so the
          // binding persists into later regions (what the rest of the test checks).
          bind_status[i] = binder.bind_current_thread(std::span<const int>(&pus[i], 1));
          Result<std::vector<int>> now = binder.current_thread_binding();
          if (now.is_ok()) bound_to[i] = *now;
        }
        if (i == 0) team_sizes[static_cast<size_t>(region)] = omp_get_num_threads();
        tids[static_cast<size_t>(region)][i] = gettid_now();
        cpus[static_cast<size_t>(region)][i] = sched_getcpu();
      }
    }
  });
  executor.join();

  for (const Status& s : bind_status) {
    if (!s.is_ok()) {
      WARN("skipping: binding not permitted here: " << s.to_string());
      return;
    }
  }
  for (size_t i = 0; i < static_cast<size_t>(k); ++i)
    CHECK(bound_to[i] == std::vector<int>{pus[i]});
  CHECK(tids[0][0] == executor_tid);  // the executor thread is member 0 (the master)
  const std::set<pid_t> first(tids[0].begin(), tids[0].end());
  CHECK(first.size() == static_cast<size_t>(k));
  int wrong_cpu = 0, wrong_threads = 0, wrong_size = 0;
  for (int region = 0; region < kRegions; ++region) {
    const auto r = static_cast<size_t>(region);
    wrong_size += team_sizes[r] != k;
    wrong_threads += std::set<pid_t>(tids[r].begin(), tids[r].end()) != first || tids[r] != tids[0];
    for (size_t i = 0; i < static_cast<size_t>(k); ++i) wrong_cpu += cpus[r][i] != pus[i];
  }
  INFO("PUs " << format_cpu_list(pus));
  CHECK(wrong_size == 0);
  CHECK(wrong_threads == 0);  // libgomp reused the same OS threads in the same member order
  CHECK(wrong_cpu == 0);      // every member ran on the PU it was given, every time
}

TEST_CASE("HwlocBinder rejects empty and nonexistent PU sets", "[pinning]") {
  Result<std::unique_ptr<HwlocBinder>> binder = HwlocBinder::create();
  if (!binder.is_ok()) {
    WARN("skipping: " << binder.status().to_string());
    return;
  }
  CHECK((*binder)->bind_current_thread({}).code() == StatusCode::kInvalidArgument);
  const int missing[] = {1 << 16};
  Status s = (*binder)->bind_current_thread(missing);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("PU 65536 does not exist") != std::string::npos);
}

TEST_CASE("recording binder: a placement on a synthetic Xeon Phi applied by an OpenMP team",
          "[pinning]") {
  Topology knl = value_or_throw(Topology::from_synthetic("package:1 l2:34 core:2 pu:4"));
  Placement p = value_or_throw(place_executors(knl, {8, 4}));
  RecordingBinder recorder;
  // Apply executor 3's placement the way an executor does: each member binds itself once.
  const std::vector<int>& pus = p.teams[3].pus;
  std::vector<int> team_size(1, 0);
  std::vector<Status> status(4);  // Catch2 assertions are not thread-safe: check after the region
#pragma omp parallel num_threads(4)
  {
    const size_t i = static_cast<size_t>(omp_get_thread_num());
    if (i == 0) team_size[0] = omp_get_num_threads();
    status[i] = recorder.bind_current_thread(std::span<const int>(&pus[i], 1));
  }
  REQUIRE(team_size[0] == 4);
  for (const Status& s : status) CHECK(s.is_ok());
  std::vector<RecordingBinder::Call> calls = recorder.calls();
  REQUIRE(calls.size() == 4);
  std::set<int> bound;
  std::set<pid_t> threads;
  for (const RecordingBinder::Call& c : calls) {
    REQUIRE(c.pus.size() == 1);
    bound.insert(c.pus[0]);
    threads.insert(c.tid);
  }
  CHECK(bound == std::set<int>{48, 52, 56, 60});  // cores 12-15 = tiles 6-7, first thread each
  CHECK(threads.size() == 4);

  recorder.fail_with(Status::unsupported("no binding here"));
  const int pu[] = {0};
  CHECK(recorder.bind_current_thread(pu).code() == StatusCode::kUnsupported);
  CHECK(recorder.calls().size() == 5);
}

TEST_CASE("OpenMP affinity environment: binding settings warn, neutral ones do not", "[pinning]") {
  auto with = [](std::map<std::string, std::string> env) {
    return omp_affinity_env_warning([env](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  CHECK_FALSE(with({}));
  CHECK_FALSE(with({{"OMP_PROC_BIND", "false"}}));
  CHECK_FALSE(with({{"OMP_PROC_BIND", "FALSE"}, {"OMP_PLACES", "cores"}}));  // places inert
  CHECK_FALSE(with({{"KMP_AFFINITY", "disabled"}}));
  CHECK_FALSE(with({{"KMP_AFFINITY", "verbose,none"}}));
  CHECK_FALSE(with({{"OMP_NUM_THREADS", "4"}}));

  auto w = with({{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}});
  REQUIRE(w);
  CHECK(w->find("OMP_PROC_BIND=close, OMP_PLACES=cores") != std::string::npos);
  CHECK(w->find("collide") != std::string::npos);
  CHECK(with({{"OMP_PLACES", "threads"}}));  // implies OMP_PROC_BIND=true in libgomp
  CHECK(with({{"GOMP_CPU_AFFINITY", "0-3"}}));
  CHECK(with({{"OMP_PROC_BIND", "spread,close"}}));
  auto kmp = with({{"KMP_AFFINITY", "granularity=fine,compact"}});
  REQUIRE(kmp);
  CHECK(kmp->find("KMP_AFFINITY=granularity=fine,compact") != std::string::npos);
}
