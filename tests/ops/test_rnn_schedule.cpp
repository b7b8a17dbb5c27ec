// The RNN schedule search (ops/rnn/rnn_schedule.h): phased-schedule enumeration and pruning against
// hand-enumerated cases, the calibration candidates of small layers, the cache file (round trip,
// other CPU, corrupt file, unwritable path), and every candidate schedule of several layers run
// through the registry (forced with the graphi_schedule attribute) against the naive reference.
//
// This binary runs with the search off unless GRAPHI_RNN_SCHEDULE_SEARCH is already set (the static
// initializer below), so the other op tests stay fast and deterministic; the tests here that
// exercise the search turn it on per node with the graphi_schedule_search attribute.
#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ops/rnn/rnn_schedule.h"
#include "ops/rnn/rnn_sequence.h"
#include "ops/rnn/team_exchange.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_rnn.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

const bool kSearchOffByDefault = [] {
  setenv("GRAPHI_RNN_SCHEDULE_SEARCH", "0", /*overwrite=*/0);
  return true;
}();

std::vector<std::string> names_of(const std::vector<ops::PhasedSchedule>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.to_string());
  return out;
}

ops::RnnLayerShape lstm_shape(int64_t T, int64_t B, int64_t H, int team) {
  ops::RnnLayerShape s;
  s.cell = "LSTM";
  s.seq_len = T;
  s.batch = B;
  s.input_size = H;
  s.hidden = H;
  s.gates = 4;
  s.team = team;
  s.l2_bytes = 2 << 20;
  return s;
}

// One layer: inputs (X, W, R, B), attributes and the reference's outputs.
struct Layer {
  std::string op;
  int64_t T, B, I, H;
  bool lbr = false;
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;  // Y, Y_h (, Y_c)
};

Layer make_layer(const std::string& op, int64_t T, int64_t B, int64_t I, int64_t H, bool lbr,
                 uint64_t seed) {
  Layer l{op, T, B, I, H, lbr, {}, {}};
  const int64_t G = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const double ws = 1.0 / std::sqrt(double(I + H));
  l.inputs.push_back(test::random_tensor({DType::kF32, {T, B, I}}, seed));
  l.inputs.push_back(test::random_tensor({DType::kF32, {1, G * H, I}}, seed + 1, -ws, ws));
  l.inputs.push_back(test::random_tensor({DType::kF32, {1, G * H, H}}, seed + 2, -ws, ws));
  l.inputs.push_back(test::random_tensor({DType::kF32, {1, 2 * G * H}}, seed + 3, -0.5, 0.5));
  test::RnnRefSpec spec;
  spec.op = op;
  spec.hidden = H;
  spec.linear_before_reset = lbr;
  test::RnnRefInputs in;
  in.x = &l.inputs[0];
  in.w = &l.inputs[1];
  in.r = &l.inputs[2];
  in.b = &l.inputs[3];
  l.expected = test::reference_rnn(spec, in);
  return l;
}

graph::Attributes attrs_of(const Layer& l) {
  graph::Attributes a;
  a.set("hidden_size", l.H);
  if (l.op == "GRU") a.set("linear_before_reset", int64_t{l.lbr ? 1 : 0});
  return a;
}

void check_outputs(const Layer& l, const test::OpRun& run, const std::string& what) {
  REQUIRE(run.outputs.size() == 2);
  for (int i = 0; i < 2; ++i) {
    INFO(what << " output " << i);
    CHECK(test::max_rel_error(run.outputs[i], l.expected[i]) < 1e-5);
  }
}

ops::RnnLayerShape shape_of(const Layer& l, int team) {
  ops::RnnLayerShape s;
  s.cell = l.op;
  s.seq_len = l.T;
  s.batch = l.B;
  s.input_size = l.I;
  s.hidden = l.H;
  s.canonical_gru = l.op == "GRU" && !l.lbr;
  s.gates = l.op == "LSTM" ? 4 : l.op == "GRU" ? (s.canonical_gru ? 2 : 3) : 1;
  s.team = team;
  s.l2_bytes = 2 << 20;
  return s;
}

std::string forced(const ops::RnnSchedule& s) {
  return std::to_string(s.threads) + "," + std::to_string(s.xi) + "," + std::to_string(s.xj) + "," +
         std::to_string(s.chunk) + "," + std::to_string(s.rec_tile) + "," + (s.zigzag ? "1" : "0");
}

}  // namespace

TEST_CASE("rnn schedule: phased schedules of the LSTM DAG (hand-enumerated)", "[rnn_schedule]") {
  // X = x_t W^T (time-independent), H = h_{t-1} R^T. Hoisted X; X_t with H_t; X_{t+1} with H_t
  // (computed one step early). {X}{H} fails rule iii (a time-independent phase after dependent
  // ones) and rule ii (no dependency between X_t and H_t); {H}{X} likewise.
  auto s = ops::enumerate_phased_schedules(ops::rnn_mm_dag(false));
  CHECK(names_of(s) == std::vector<std::string>{"[X*] {H}", "{X,H}", "{X+1,H}"});
  REQUIRE(s.size() == 3);
  CHECK(s[0].kernel_supported);
  CHECK(s[0].name == "hoisted");
  CHECK(s[1].kernel_supported);
  CHECK(s[1].name == "per-step");
  CHECK_FALSE(s[2].kernel_supported);
  CHECK(s[2].name == "pipelined");
}

TEST_CASE("rnn schedule: phased schedules of the canonical GRU DAG (hand-enumerated)",
          "[rnn_schedule]") {
  // X, Hzr = h R_zr^T, Hh = (r * h) R_h^T after X and Hzr. Hzr and Hh never share a phase
  // (dependency), so every step has the phases {Hzr ...} {Hh ...}; X is hoisted, or joins Hzr of
  // its own step, or is computed a step early next to Hzr or Hh. X next to Hh of its own step is
  // out (Hh needs it).
  auto s = ops::enumerate_phased_schedules(ops::rnn_mm_dag(true));
  CHECK(names_of(s) == std::vector<std::string>{"[X*] {Hzr} {Hh}", "{X,Hzr} {Hh}", "{X+1,Hzr} {Hh}",
                                                "{Hzr} {X+1,Hh}"});
  int supported = 0;
  for (const auto& p : s) supported += p.kernel_supported;
  CHECK(supported == 2);
}

TEST_CASE("rnn schedule: pruning rules on small DAGs", "[rnn_schedule]") {
  // Two independent recurrent MMs: one phase only (rule ii forbids splitting them).
  std::vector<ops::RnnMm> two{{"A", true, {}}, {"B", true, {}}};
  CHECK(names_of(ops::enumerate_phased_schedules(two)) == std::vector<std::string>{"{A,B}"});
  // A chain A -> B: two phases, in dependency order.
  std::vector<ops::RnnMm> chain{{"A", true, {}}, {"B", true, {0}}};
  CHECK(names_of(ops::enumerate_phased_schedules(chain)) == std::vector<std::string>{"{A} {B}"});
  // Only time-independent MMs: nothing to run per step, no valid phased schedule with a recurrence
  // (rule iii: every per-step phase needs a time-dependent MM).
  std::vector<ops::RnnMm> none{{"X", false, {}}};
  auto s = ops::enumerate_phased_schedules(none);
  REQUIRE(s.size() == 0);
}

TEST_CASE("rnn schedule: analytical default and candidates of small layers", "[rnn_schedule]") {
  SECTION("LSTM T=100 B=1 H=256 on 2 threads") {
    auto s = lstm_shape(100, 1, 256, 2);
    ops::RnnSchedule d = ops::default_rnn_schedule(s);
    CHECK(d.threads == 2);
    CHECK(d.xi == 1);
    CHECK(d.xj == 2);         // one batch row: split the units
    CHECK(d.chunk == 100);    // 4 MiB / (1 * 1024 floats * 4 B) = 1024 steps, capped at T
    CHECK(d.rec_tile == 64);  // one GEMV register block per panel: one contiguous stream
    CHECK_FALSE(d.zigzag);    // 512 KiB of R per thread, within half of 2 MiB
    auto c = ops::rnn_schedule_candidates(s);
    // tile {64, 256, 128, 4096 (the whole slab: R stays in L2)}, no zigzag, x p = 2 (1x2): chunk
    // {100, 8, 1}; p = 1 (1x1): chunk 100 only (its 2 MiB of W + R fill more than 3/4 of L2).
    CHECK(c.size() == 4 * 3 + 4);
    CHECK(c.front() == d);
    CHECK(std::count_if(c.begin(), c.end(), [](const auto& x) { return x.rec_tile == 4096; }) == 4);
    for (const auto& x : c)
      if (x.threads == 1) CHECK(x.chunk == 100);
    for (size_t i = 0; i < c.size(); ++i)
      for (size_t j = i + 1; j < c.size(); ++j) CHECK_FALSE(c[i] == c[j]);
  }
  SECTION("LSTM T=100 B=20 H=256 on 2 threads") {
    auto s = lstm_shape(100, 20, 256, 2);
    auto c = ops::rnn_schedule_candidates(s);
    // p = 2: 1x2 and 2x1; p = 1: 1x1. chunk: 4 MiB / (20 * 1024 * 4) = 51, 8, 1; tiles 32, 64.
    CHECK(c.size() == 3 * 3 * 2);
    bool has_rows = false, has_units = false;
    for (const auto& x : c) {
      has_rows = has_rows || (x.xi == 2 && x.xj == 1);
      has_units = has_units || (x.xi == 1 && x.xj == 2);
      CHECK(x.xi * x.xj == x.threads);
      CHECK_FALSE(x.zigzag);
    }
    CHECK(has_rows);
    CHECK(has_units);
  }
  SECTION("LSTM H=1024: weights overflow L2, every candidate walks them zigzag") {
    auto s = lstm_shape(100, 1, 1024, 2);
    ops::RnnSchedule d = ops::default_rnn_schedule(s);
    CHECK(d.zigzag);          // 8 MiB of R per thread
    CHECK(d.rec_tile == 64);  // streamed from L3: one GEMV register block per panel
    auto c = ops::rnn_schedule_candidates(s);
    // W (8 MiB per thread at 1x2, 16 MiB at 2x1) does not share the 2 MiB L2 with R: one hoist
    // of all 100 steps only (short chunks would re-read W from L3 per chunk). Tiles {64, 256,
    // 128} on the whole team (1x2) only, all zigzag: the calibration's shortened copy cannot see
    // what zigzag saves over a whole sequence, and fewer threads stream R from L3 no faster
    // (kernel version 14).
    CHECK(c.size() == 3);
    CHECK(c.front() == d);
    for (const auto& x : c) CHECK(x.chunk == 100);
    for (const auto& x : c) CHECK(x.zigzag);
    for (const auto& x : c) CHECK(x.threads == 2);
    for (const auto& x : c) CHECK(x.rec_tile != 4096);  // no whole-slab panel with zigzag
    CHECK(std::count_if(c.begin(), c.end(), [](const auto& x) { return x.rec_tile == 64; }) == 1);
    // The AVX2 GEMV's block is 16 columns: that width then.
    s.stream_tile = 16;
    CHECK(ops::default_rnn_schedule(s).rec_tile == 16);
    // A layer whose R stays in L2 too (kernel version 8), the wide panels among its candidates.
    auto small = lstm_shape(100, 1, 256, 2);
    small.stream_tile = 16;
    CHECK(ops::default_rnn_schedule(small).rec_tile == 16);
    auto cs = ops::rnn_schedule_candidates(small);
    CHECK(std::count_if(cs.begin(), cs.end(), [](const auto& x) { return x.rec_tile == 256; }) > 0);
  }
  SECTION("LSTM H=256 batch 1: W and R share the L2, short chunks stay candidates") {
    auto c = ops::rnn_schedule_candidates(lstm_shape(100, 1, 256, 2));
    bool has_short = false;
    for (const auto& x : c) has_short = has_short || x.chunk < 100;
    CHECK(has_short);
  }
}

TEST_CASE("rnn schedule: cache round trip, other CPU, corrupt and unwritable files",
          "[rnn_schedule]") {
  const auto dir = test::scratch_dir("rnn_schedule_cache");
  const std::string path = (dir / "sub" / "rnn_schedules.json").string();
  std::filesystem::remove_all(dir / "sub");
  ops::RnnSchedule s;
  s.threads = 2;
  s.xi = 2;
  s.xj = 1;
  s.chunk = 51;
  s.rec_tile = 64;
  s.zigzag = true;
  s.measured_ms = 1.5;
  CHECK_FALSE(ops::load_cached_schedule(path, "k1", "cpu").has_value());  // no file yet
  REQUIRE(ops::store_cached_schedule(path, "k1", "cpu", s).is_ok());
  ops::RnnSchedule t = s;
  t.xi = 1;
  t.xj = 2;
  REQUIRE(ops::store_cached_schedule(path, "k2", "cpu", t).is_ok());
  auto a = ops::load_cached_schedule(path, "k1", "cpu");
  REQUIRE(a.has_value());
  CHECK(*a == s);
  CHECK(a->searched);
  CHECK(a->measured_ms == 1.5);
  auto b = ops::load_cached_schedule(path, "k2", "cpu");
  REQUIRE(b.has_value());
  CHECK(*b == t);
  CHECK_FALSE(ops::load_cached_schedule(path, "k1", "other cpu").has_value());
  // A verdict calibrated while other threads took the team's CPUs is stored but not reused; a
  // later undisturbed one replaces it.
  ops::RnnSchedule d = s;
  d.disturbed = true;
  REQUIRE(ops::store_cached_schedule(path, "k3", "cpu", d).is_ok());
  CHECK_FALSE(ops::load_cached_schedule(path, "k3", "cpu").has_value());
  REQUIRE(ops::store_cached_schedule(path, "k3", "cpu", s).is_ok());
  auto e = ops::load_cached_schedule(path, "k3", "cpu");
  REQUIRE(e.has_value());
  CHECK(*e == s);

  // Corrupt: garbage, then valid JSON of the wrong shape, then a malformed entry.
  for (const char* text : {"{\"entries\": {\"k1|cpu\": {\"threads\": 2,", "[1, 2, 3]",
                           "{\"entries\": {\"k1|cpu\": {\"threads\": \"two\"}}}"}) {
    {
      std::ofstream out(path, std::ios::trunc);
      out << text;
    }
    CHECK_FALSE(ops::load_cached_schedule(path, "k1", "cpu").has_value());
    // Storing over a corrupt file replaces it with a valid one.
    REQUIRE(ops::store_cached_schedule(path, "k1", "cpu", s).is_ok());
    auto c = ops::load_cached_schedule(path, "k1", "cpu");
    REQUIRE(c.has_value());
    CHECK(*c == s);
  }
  // Unwritable: the parent "directory" is a regular file.
  const std::string blocked = (dir / "sub" / "rnn_schedules.json" / "x.json").string();
  Status st = ops::store_cached_schedule(blocked, "k1", "cpu", s);
  CHECK_FALSE(st.is_ok());
  CHECK_FALSE(ops::load_cached_schedule(blocked, "k1", "cpu").has_value());
}

TEST_CASE("rnn schedule: every candidate schedule matches the reference", "[rnn_schedule]") {
  struct L {
    const char* op;
    int64_t T, B, I, H;
    bool lbr;
  };
  // Sizes with several unit lines, partial panels and a T longer than the 8-step chunk.
  const L layers[] = {{"LSTM", 19, 3, 20, 40, false},
                      {"LSTM", 12, 1, 24, 72, false},
                      {"GRU", 17, 4, 18, 36, false},
                      {"GRU", 17, 2, 18, 50, true},
                      {"RNN", 11, 5, 9, 33, false},
                      // Batch 1, T > 16 (8-step chunks and the whole-slab panel are candidates).
                      {"LSTM", 19, 1, 20, 40, false},
                      {"RNN", 18, 1, 9, 33, false},
                      // Batch 1 GRU(lbr): own-units-first steps on R packed in k blocks.
                      {"GRU", 19, 1, 20, 40, true}};
  uint64_t seed = 100;
  for (const L& spec : layers) {
    Layer l = make_layer(spec.op, spec.T, spec.B, spec.I, spec.H, spec.lbr, seed += 10);
    for (int team : {1, 2}) {
      auto cands = ops::rnn_schedule_candidates(shape_of(l, team));
      REQUIRE(cands.size() >= 2);
      // Plus the zigzag variant of every candidate (the candidates only offer it for big layers).
      const size_t n = cands.size();
      for (size_t i = 0; i < n; ++i) {
        ops::RnnSchedule z = cands[i];
        z.zigzag = !z.zigzag;
        cands.push_back(z);
      }
      for (const ops::RnnSchedule& s : cands) {
        graph::Attributes a = attrs_of(l);
        a.set(ops::kScheduleAttr, forced(s));
        auto r = test::run_single_op(spec.op, a, l.inputs, 2, team, {false, true, true, true});
        REQUIRE(r.is_ok());
        check_outputs(l, *r,
                      std::string(spec.op) + " team " + std::to_string(team) + " " + s.to_string());
      }
    }
  }
}

TEST_CASE("rnn schedule: invalid forced schedules are clear errors", "[rnn_schedule]") {
  Layer l = make_layer("LSTM", 3, 2, 4, 20, false, 7);
  for (const char* bad : {"2,1,2,1,32", "3,1,3,1,32,0", "2,2,1,1,33,0", "2,1,2,0,32,0",
                          "1,1,1,1,32,2", "x,1,1,1,32,0", "1,3,1,1,32,0"}) {
    graph::Attributes a = attrs_of(l);
    a.set(ops::kScheduleAttr, std::string(bad));
    auto r = test::run_single_op("LSTM", a, l.inputs, 2, 2, {false, true, true, true});
    INFO(bad);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(),
               Catch::Contains("graphi_schedule") && Catch::Contains("node 'node' (LSTM)"));
  }
}

TEST_CASE(
    "rnn schedule: search on calibrates, writes the cache and reuses it, "
    "corrupt cache",
    "[rnn_schedule]") {
  const auto dir = test::scratch_dir("rnn_schedule_search");
  const std::string old_dir =
      std::getenv("GRAPHI_CACHE_DIR") ? std::getenv("GRAPHI_CACHE_DIR") : "";
  setenv("GRAPHI_CACHE_DIR", dir.string().c_str(), 1);
  // This case checks the cache, not the budget (tested below with an injected clock): on a
  // loaded machine the 200 ms default can expire in the probe, which is then rightly not cached.
  const std::string old_budget =
      std::getenv("GRAPHI_RNN_SEARCH_BUDGET_MS") ? std::getenv("GRAPHI_RNN_SEARCH_BUDGET_MS") : "";
  setenv("GRAPHI_RNN_SEARCH_BUDGET_MS", "60000", 1);
  const std::string path = (dir / "rnn_schedules.json").string();
  std::filesystem::remove(path);

  // A shape no other test uses (the kernel remembers choices per process by shape).
  Layer l = make_layer("LSTM", 9, 2, 13, 37, false, 321);
  graph::Attributes a = attrs_of(l);
  a.set(ops::kScheduleSearchAttr, int64_t{1});
  auto r = test::run_single_op("LSTM", a, l.inputs, 2, 2, {false, true, true, true});
  REQUIRE(r.is_ok());
  check_outputs(l, *r, "searched");
  REQUIRE(std::filesystem::exists(path));
  {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    // Teams of two key their verdicts by the members' exchange latency too (when measurable).
    CHECK_THAT(ss.str(), Catch::Contains("LSTM T9 B2 I13 H37 D1 team2"));
  }

  // A corrupt cache file: a warning, a fresh calibration, a valid file again, right numbers.
  {
    std::ofstream out(path, std::ios::trunc);
    out << "not json at all {";
  }
  Layer m = make_layer("GRU", 8, 3, 11, 29, true, 654);
  graph::Attributes b = attrs_of(m);
  b.set(ops::kScheduleSearchAttr, int64_t{1});
  auto r2 = test::run_single_op("GRU", b, m.inputs, 2, 2, {false, true, true, true});
  REQUIRE(r2.is_ok());
  check_outputs(m, *r2, "searched after corrupt cache");
  {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK_THAT(ss.str(), Catch::Contains("GRU-lbr T8 B3 I11 H29 D1 team2"));
  }
  if (old_dir.empty())
    unsetenv("GRAPHI_CACHE_DIR");
  else
    setenv("GRAPHI_CACHE_DIR", old_dir.c_str(), 1);
  if (old_budget.empty())
    unsetenv("GRAPHI_RNN_SEARCH_BUDGET_MS");
  else
    setenv("GRAPHI_RNN_SEARCH_BUDGET_MS", old_budget.c_str(), 1);
}

// ---- the calibration budget (an injected clock: no wall-clock timing) ----

namespace {

// A fake clock that measure() advances by each candidate's cost.
struct FakeRun {
  double clock = 0;
  std::vector<double> cost;      // wall cost of measuring candidate i (set-up + runs)
  std::vector<double> result;    // its measured time
  std::vector<size_t> measured;  // the order candidates were measured in
  std::vector<double> deadlines;

  ops::CalibrationOutcome go(const ops::CalibrationLimits& lim) {
    return ops::run_calibration(
        cost.size(), clock, lim, [this] { return clock; },
        [this](size_t i, double deadline) -> std::optional<double> {
          measured.push_back(i);
          deadlines.push_back(deadline);
          clock += cost[i];
          return result[i];
        });
  }
};

}  // namespace

TEST_CASE("rnn schedule: calibration stops before a candidate that would overrun the budget",
          "[rnn_schedule]") {
  FakeRun f;
  f.clock = 1000;  // the start need not be 0
  f.cost.assign(18, 30.0);
  for (int i = 0; i < 18; ++i) f.result.push_back(10.0 - 0.5 * i);  // each one 5% faster
  ops::CalibrationLimits lim;
  lim.budget_ms = 200;
  lim.max_candidates = 100;
  const ops::CalibrationOutcome out = f.go(lim);
  // 30 ms each: the 7th would end at 210 ms > 200, so six are measured.
  CHECK(out.measured == 6);
  CHECK(out.stop == "budget");
  CHECK(f.clock - 1000 <= 200);
  CHECK(out.elapsed_ms == Approx(180));
  CHECK(out.best == 5);
  CHECK(out.best_ms == Approx(7.5));
  for (double d : f.deadlines) CHECK(d == Approx(1200));
}

TEST_CASE("rnn schedule: a challenger replaces the default only if it wins again",
          "[rnn_schedule]") {
  // measure() returns the i-th entry of each candidate's list of times, one per call.
  auto run = [](std::vector<std::vector<double>> times, double cost, double budget) {
    std::vector<size_t> calls(times.size(), 0);
    std::vector<size_t> order;
    double clock = 0;
    ops::CalibrationLimits lim;
    lim.budget_ms = budget;
    lim.max_candidates = 100;
    const ops::CalibrationOutcome out = ops::run_calibration(
        times.size(), 0, lim, [&] { return clock; },
        [&](size_t i, double) -> std::optional<double> {
          clock += cost;
          order.push_back(i);
          return times[i][std::min(calls[i]++, times[i].size() - 1)];
        });
    return std::make_pair(out, order);
  };
  SECTION("wins again: kept") {
    auto [out, order] = run({{10, 10}, {8, 8.5}, {9, 9}}, 1, 200);
    CHECK(out.best == 1);
    CHECK(out.best_ms == Approx(8));
    CHECK(out.confirmation == "confirmed");
    CHECK(order == std::vector<size_t>{0, 1, 2, 0, 1});
    CHECK(out.measured == 3);  // the confirmation's runs are not candidates
  }
  SECTION("a lucky first time: the default") {
    auto [out, order] = run({{10, 9.5}, {8, 9.6}, {9, 9}}, 1, 200);
    CHECK(out.best == 0);
    CHECK(out.best_ms == Approx(9.5));
    CHECK(out.confirmation == "default kept");
  }
  SECTION("no time left: the first verdict stands") {
    auto [out, order] = run({{10, 20}, {8, 20}, {9, 9}}, 60, 200);  // 3 x 60 = 180 ms spent
    CHECK(out.best == 1);
    CHECK(out.confirmation.empty());
    CHECK(order.size() == 3);
  }
  SECTION("the default won: nothing to confirm") {
    auto [out, order] = run({{5}, {8}, {9}}, 1, 200);
    CHECK(out.best == 0);
    CHECK(out.confirmation.empty());
    CHECK(order.size() == 3);
  }
}

TEST_CASE("rnn schedule: a slow measurement raises the prediction for the next ones",
          "[rnn_schedule]") {
  FakeRun f;
  f.cost = {20, 20, 120, 20, 20, 20};
  f.result = {10, 9, 8, 7, 6, 5};
  ops::CalibrationLimits lim;
  lim.budget_ms = 200;
  const ops::CalibrationOutcome out = f.go(lim);
  // After 160 ms the longest measurement so far is 120 ms: the 4th is not started.
  CHECK(out.measured == 3);
  CHECK(f.clock <= 200);
  CHECK(out.best == 2);
}

TEST_CASE("rnn schedule: the first candidate is measured even past the budget", "[rnn_schedule]") {
  FakeRun f;
  f.cost = {500, 1, 1};
  f.result = {3, 2, 1};
  ops::CalibrationLimits lim;
  lim.budget_ms = 200;
  const ops::CalibrationOutcome out = f.go(lim);
  CHECK(out.measured == 1);
  CHECK(out.best == 0);
  CHECK(out.stop == "budget");
}

TEST_CASE("rnn schedule: at most max_candidates, and early stop without a gain", "[rnn_schedule]") {
  SECTION("max candidates") {
    FakeRun f;
    f.cost.assign(18, 1.0);
    for (int i = 0; i < 18; ++i) f.result.push_back(100.0 - i * 5);
    ops::CalibrationLimits lim;
    lim.max_candidates = 8;
    const ops::CalibrationOutcome out = f.go(lim);
    CHECK(out.measured == 8);
    CHECK(out.stop == "max candidates");
    CHECK(out.best == 7);
  }
  SECTION("patience") {
    FakeRun f;
    f.cost.assign(18, 1.0);
    f.result = {10, 9, 9.95, 9.0, 8.95, 8.99, 20, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    ops::CalibrationLimits lim;
    lim.patience = 4;
    lim.max_candidates = 100;
    const ops::CalibrationOutcome out = f.go(lim);
    // 9 is a real gain over 10; then 9.95, 9.0, 8.95 (within 2%: kept, no gain), 8.99: four
    // without a 2% gain.
    CHECK(out.measured == 6);
    CHECK(out.stop == "no gain");
    CHECK(out.best == 4);  // the fastest measured, even inside the noise band
    CHECK(out.best_ms == Approx(8.95));
  }
  SECTION("a candidate that cannot run is skipped") {
    ops::CalibrationLimits lim;
    double clock = 0;
    const ops::CalibrationOutcome out = ops::run_calibration(
        3, 0, lim, [&] { return clock; },
        [&](size_t i, double) -> std::optional<double> {
          clock += 1;
          if (i == 1) return std::nullopt;
          return 5.0 - double(i);
        });
    CHECK(out.measured == 3);
    CHECK(out.best == 2);
  }
}

TEST_CASE("rnn schedule: the cost model ranks candidates, the default stays first",
          "[rnn_schedule]") {
  auto s = lstm_shape(100, 1, 256, 2);
  const auto cands = ops::rnn_schedule_candidates(s);
  const auto ranked = ops::rank_rnn_candidates(s, cands);
  REQUIRE(ranked.size() == cands.size());
  CHECK(ranked.front() == cands.front());
  for (const auto& c : cands) CHECK(std::find(ranked.begin(), ranked.end(), c) != ranked.end());
  for (size_t i = 2; i < ranked.size(); ++i)
    CHECK(ops::rnn_schedule_model_us(s, ranked[i - 1]) <= ops::rnn_schedule_model_us(s, ranked[i]));
  // At batch 1 splitting the units over both threads halves the streamed weights: every 2-thread
  // candidate ranks before every 1-thread one; per-step input projections (chunk 1) re-read W.
  size_t last_p2 = 0, first_p1 = ranked.size();
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i].threads == 2 && ranked[i].chunk > 1) last_p2 = i;
    if (ranked[i].threads == 1) first_p1 = std::min(first_p1, i);
  }
  CHECK(last_p2 < first_p1);
  ops::RnnSchedule per_step = cands.front(), hoisted = cands.front();
  per_step.chunk = 1;
  CHECK(ops::rnn_schedule_model_us(s, per_step) > ops::rnn_schedule_model_us(s, hoisted));
  // bf16 weights stream half the bytes.
  auto s16 = s;
  s16.weight_bytes = 2;
  auto big = lstm_shape(100, 1, 1024, 2), big16 = big;
  big16.weight_bytes = 2;
  CHECK(ops::rnn_schedule_model_us(big16, ops::default_rnn_schedule(big16)) <
        ops::rnn_schedule_model_us(big, ops::default_rnn_schedule(big)));
}

TEST_CASE("rnn schedule: a budget already spent stops the probe run at its first step",
          "[rnn_schedule]") {
  // Budget 0: the probe's run sees the deadline at step 0 and stops (batch 1 on 2 threads: the
  // step-counter exchange, the stopping thread releases its peer; batch 2: row split, no
  // exchange). Nothing was measured, so nothing is cached, and the layer runs the analytical
  // default with correct results.
  const auto dir = test::scratch_dir("rnn_schedule_budget0");
  const std::string old_dir =
      std::getenv("GRAPHI_CACHE_DIR") ? std::getenv("GRAPHI_CACHE_DIR") : "";
  const std::string old_budget =
      std::getenv("GRAPHI_RNN_SEARCH_BUDGET_MS") ? std::getenv("GRAPHI_RNN_SEARCH_BUDGET_MS") : "";
  setenv("GRAPHI_CACHE_DIR", dir.string().c_str(), 1);
  setenv("GRAPHI_RNN_SEARCH_BUDGET_MS", "0", 1);
  const std::string path = (dir / "rnn_schedules.json").string();
  int seed = 900;
  for (int64_t batch : {1, 2}) {
    Layer l = make_layer("LSTM", 30, batch, 19, 41, false, seed++);
    graph::Attributes a = attrs_of(l);
    a.set(ops::kScheduleSearchAttr, int64_t{1});
    auto r = test::run_single_op("LSTM", a, l.inputs, 2, 2, {false, true, true, true});
    REQUIRE(r.is_ok());
    check_outputs(l, *r, "budget 0");
    CHECK_FALSE(std::filesystem::exists(path));
  }
  if (old_dir.empty())
    unsetenv("GRAPHI_CACHE_DIR");
  else
    setenv("GRAPHI_CACHE_DIR", old_dir.c_str(), 1);
  if (old_budget.empty())
    unsetenv("GRAPHI_RNN_SEARCH_BUDGET_MS");
  else
    setenv("GRAPHI_RNN_SEARCH_BUDGET_MS", old_budget.c_str(), 1);
}

TEST_CASE("rnn schedule: the team's exchange latency and its class", "[rnn_schedule]") {
  CHECK(ops::rnn_wcs::exchange_class(0) == "");
  CHECK(ops::rnn_wcs::exchange_class(95) == "near");
  CHECK(ops::rnn_wcs::exchange_class(299) == "near");
  CHECK(ops::rnn_wcs::exchange_class(514) == "far");
  // A positive round trip where two CPUs exist (0 when a member was preempted for the whole
  // 5 ms, which a loaded test machine can do; that is not kept and the next call measures).
  const double ns = ops::rnn_wcs::team_round_trip_ns();
  CHECK(ns >= 0);
  if (omp_get_num_procs() < 2) CHECK(ns == 0);
  if (ns > 0) CHECK(ops::rnn_wcs::team_round_trip_ns() == ns);  // remembered for a second
  // Inside a parallel region nothing is measured: the value kept, or 0.
  double inside = -1;
#pragma omp parallel num_threads(2)
  {
#pragma omp master
    inside = ops::rnn_wcs::team_round_trip_ns();
  }
  CHECK(inside == ns);
}
