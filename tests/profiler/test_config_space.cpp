// enumerate_configs on synthetic machines: this VM's shape (2 cores, no shared L2), a Xeon Phi
// 7250 (34 tiles of 2 cores), and a restricted cpuset. Checked against the definition (every
// split fits, none dominates another, every split that fits is covered by one), not against an
// earlier output.
#include <catch2/catch.hpp>
#include <set>

#include "engine/topology.h"
#include "profiler/config_space.h"
#include "profiler/cost_model.h"

using namespace graphi;
using profiler::Config;

namespace {

engine::Topology synthetic(const std::string& desc, const std::string& allowed = "") {
  auto t = engine::Topology::from_synthetic(desc, allowed);
  REQUIRE(t.is_ok());
  return std::move(t).value();
}

std::set<std::pair<int, int>> splits(const profiler::ConfigSpace& s) {
  std::set<std::pair<int, int>> out;
  for (const Config& c : s.configs) out.insert({c.executors, c.threads});
  return out;
}

}  // namespace

TEST_CASE("config space of a 2-core machine is 1x1, 1x2 and 2x1", "[profiler]") {
  const engine::Topology topo = synthetic("package:1 core:2 pu:1");
  const profiler::ConfigSpace s = profiler::enumerate_configs(topo);
  CHECK(s.usable_cores == 2);
  CHECK(s.tile_size == 1);
  CHECK(splits(s) == std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}});
  for (const Config& c : s.configs) {
    CHECK(c.scheduler == (c.executors > 1 ? "cpf" : "sequential"));
    // Only 1x1 leaves a core free: the placement gives it to the scheduler (rule 5).
    CHECK(c.scheduler_core == (c.cores() == 1));
    CHECK_FALSE(c.bootstrap_core);
  }
}

TEST_CASE("config space of a Xeon Phi 7250: whole tiles, maximal splits, a third for --top-k 2",
          "[profiler]") {
  const engine::Topology topo = synthetic("package:1 l2:34 core:2 pu:4");
  const profiler::ConfigSpace s = profiler::enumerate_configs(topo);
  REQUIRE(s.usable_cores == 68);
  CHECK(s.tile_size == 2);
  const auto set = splits(s);
  CHECK(set.count({34, 2}) == 1);  // one executor per tile
  CHECK(set.count({1, 68}) == 1);  // one executor on the whole chip
  CHECK(set.count({1, 66}) == 1);  // ... leaving a tile for the scheduler and bootstrap
  CHECK(set.count({68, 1}) == 0);  // never half a tile: k is a multiple of 2
  for (const Config& c : s.configs) {
    INFO(c.name());
    CHECK(c.threads % 2 == 0);
    CHECK(c.cores() <= 68);
    // The placement reserves cores exactly when the split leaves some free.
    CHECK(c.scheduler_core == (c.cores() <= 67));
    CHECK(c.bootstrap_core == (c.cores() <= 66));
    auto p = engine::place_executors(topo, {c.executors, c.threads});
    REQUIRE(p.is_ok());
    CHECK_FALSE(p->tiles_shared);
  }
  // Coverage: every whole-tile split that fits in 66, 67 or 68 cores is dominated by (or equal
  // to) an enumerated one of the same budget class.
  for (int n = 1; n <= 68; ++n)
    for (int k = 2; n * k <= 68; k += 2) {
      bool covered = false;
      for (const Config& c : s.configs) covered = covered || (c.executors >= n && c.threads >= k);
      INFO(n << "x" << k);
      CHECK(covered);
    }
  // No enumerated split is dominated by another with the same core budget class.
  for (const Config& a : s.configs)
    for (const Config& b : s.configs) {
      if (&a == &b) continue;
      const bool dominated = b.executors >= a.executors && b.threads >= a.threads &&
                             (b.cores() <= 66) == (a.cores() <= 66) &&
                             (b.cores() <= 67) == (a.cores() <= 67);
      INFO(a.name() << " dominated by " << b.name());
      CHECK_FALSE(dominated);
    }
  // --top-k 2 calibrates 2 configs: at most a third of them (counted without running anything).
  CHECK(s.configs.size() >= 6);
  CHECK(2 * 3 <= static_cast<int>(s.configs.size()));
}

TEST_CASE("config space respects the allowed cpuset", "[profiler]") {
  // PUs 0-15 = 4 cores (4 hardware threads each) = 2 tiles of the Xeon Phi.
  const engine::Topology topo = synthetic("package:1 l2:34 core:2 pu:4", "0-15");
  const profiler::ConfigSpace s = profiler::enumerate_configs(topo);
  CHECK(s.usable_cores == 4);
  CHECK(splits(s) == std::set<std::pair<int, int>>{{1, 2}, {1, 4}, {2, 2}});
  // One core: only 1x1, whatever the tile size.
  const profiler::ConfigSpace one =
      profiler::enumerate_configs(synthetic("package:1 l2:34 core:2 pu:4", "0"));
  CHECK(splits(one) == std::set<std::pair<int, int>>{{1, 1}});
}
