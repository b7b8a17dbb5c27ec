// Phased-schedule enumeration, the kernel's calibration candidates and the schedule cache (see
// ops/rnn/rnn_schedule.h).
#include "ops/rnn/rnn_schedule.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ops/choice_cache.h"
#include "ops/rnn/pcp_partition.h"
#include "ops/xsmm.h"

namespace graphi::ops {

// ---- MM-DAG -------------------------------------------------------------------------------------

std::vector<RnnMm> rnn_mm_dag(bool canonical_gru) {
  if (!canonical_gru) return {{"X", false, {}}, {"H", true, {}}};
  // Hh = (r * h_prev) R_h^T: r needs the step's X (its r block) and Hzr.
  return {{"X", false, {}}, {"Hzr", true, {}}, {"Hh", true, {0, 1}}};
}

std::string PhasedSchedule::to_string() const {
  std::string out;
  if (!independent.empty()) {
    out += "[";
    for (size_t i = 0; i < independent.size(); ++i) out += (i ? "," : "") + independent[i] + "*";
    out += "]";
  }
  for (const auto& phase : per_step) {
    out += out.empty() ? "{" : " {";
    for (size_t i = 0; i < phase.size(); ++i) out += (i ? "," : "") + phase[i];
    out += "}";
  }
  return out;
}

// Brute force over placements: each MM is hoisted (time-independent phase), or sits in per-step
// phase k (0..P-1) of its own step (shift 0) or, if it does not read h, of the previous step (shift
// 1: computed one step early). Small DAGs only (a cell has at most 3 fused MMs).
std::vector<PhasedSchedule> enumerate_phased_schedules(const std::vector<RnnMm>& dag) {
  const int n = static_cast<int>(dag.size());
  std::vector<PhasedSchedule> out;
  std::set<std::string> seen;
  // Placement codes: -1 hoisted; else phase * 2 + shift.
  for (int phases = 1; phases <= n; ++phases) {
    const int codes = 1 + 2 * phases;
    int combos = 1;
    for (int i = 0; i < n; ++i) combos *= codes;
    for (int c = 0; c < combos; ++c) {
      std::vector<int> hoisted(n), phase(n), shift(n);
      int v = c;
      for (int i = 0; i < n; ++i) {
        const int code = v % codes - 1;
        v /= codes;
        hoisted[i] = code < 0;
        phase[i] = code < 0 ? -1 : code / 2;
        shift[i] = code < 0 ? 0 : code % 2;
      }
      bool ok = true;
      // Only MMs that do not read h_{t-1} may be hoisted or computed a step early; an MM is hoisted
      // only with everything it depends on.
      for (int i = 0; i < n && ok; ++i) {
        if (dag[i].time_dependent && (hoisted[i] || shift[i])) ok = false;
        if (hoisted[i])
          for (int d : dag[i].deps) ok = ok && hoisted[d];
      }
      if (!ok) continue;
      // Every phase non-empty and (rule iii: no time-independent phase after a dependent one)
      // holding at least one time-dependent MM.
      std::vector<std::vector<int>> members(phases);
      for (int i = 0; i < n; ++i)
        if (!hoisted[i]) members[phase[i]].push_back(i);
      for (int k = 0; k < phases && ok; ++k) {
        bool dep = false;
        for (int i : members[k]) dep = dep || dag[i].time_dependent;
        ok = dep;
      }
      if (!ok) continue;
      // Dependencies within a step: position = phase - shift * phases (a step-early MM runs in the
      // previous step's frame); hoisted MMs come before everything.
      auto pos = [&](int i) { return hoisted[i] ? -1000 : phase[i] - shift[i] * phases; };
      for (int i = 0; i < n && ok; ++i)
        for (int d : dag[i].deps) ok = ok && pos(d) < pos(i);
      if (!ok) continue;
      // Rule ii between consecutive per-step phases (all are time-dependent by now), including the
      // wrap from the last phase of step t to the first of step t+1: the later one must depend on
      // the earlier one. Across steps, a time-dependent MM of step t+1 depends on every MM instance
      // of step t (through h_t); within a step, on its listed deps.
      auto depends = [&](int later_phase, int earlier_phase, bool wrap) {
        for (int a : members[later_phase])
          for (int b : members[earlier_phase]) {
            // Instances: a of step (wrap ? t+1 : t) + shift[a], b of step t + shift[b].
            const int step_a = (wrap ? 1 : 0) + shift[a], step_b = shift[b];
            if (step_a == step_b + 1 && dag[a].time_dependent) return true;
            if (step_a == step_b &&
                std::find(dag[a].deps.begin(), dag[a].deps.end(), b) != dag[a].deps.end())
              return true;
          }
        return false;
      };
      for (int k = 0; k + 1 < phases && ok; ++k) ok = depends(k + 1, k, false);
      if (ok) ok = depends(0, phases - 1, true);
      if (!ok) continue;

      PhasedSchedule s;
      for (int i = 0; i < n; ++i)
        if (hoisted[i]) s.independent.push_back(dag[i].name);
      for (int k = 0; k < phases; ++k) {
        std::vector<std::string> names;
        for (int i : members[k]) names.push_back(dag[i].name + (shift[i] ? "+1" : ""));
        s.per_step.push_back(names);
      }
      bool any_shift = false;
      for (int i = 0; i < n; ++i) any_shift = any_shift || (!hoisted[i] && shift[i]);
      // The kernel runs X hoisted, or X_t in the first phase of step t.
      const bool x_first = !hoisted[0] && !shift[0] && phase[0] == 0;
      s.name = !s.independent.empty() ? "hoisted" : any_shift ? "pipelined" : "per-step";
      s.kernel_supported = !any_shift && (hoisted[0] || x_first);
      if (seen.insert(s.to_string()).second) out.push_back(std::move(s));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const PhasedSchedule& a, const PhasedSchedule& b) {
    return !a.independent.empty() && b.independent.empty();
  });
  return out;
}

// ---- knobs --------------------------------------------------------------------------------------

std::string RnnSchedule::to_string() const {
  std::string s =
      "p" + std::to_string(threads) + " " + std::to_string(xi) + "x" + std::to_string(xj) +
      (chunk > 1 ? " hoisted chunk " + std::to_string(chunk) : std::string(" per-step")) +
      " tile " + std::to_string(rec_tile);
  if (zigzag) s += " zigzag";
  s += searched ? " (calibrated)" : " (default)";
  return s;
}

std::string RnnLayerShape::key() const {
  return cell + " T" + std::to_string(seq_len) + " B" + std::to_string(batch) + " I" +
         std::to_string(input_size) + " H" + std::to_string(hidden) + " D" +
         std::to_string(directions) + " team" + std::to_string(team);
}

namespace {

constexpr int64_t kLine = 16;

int64_t lines_of(const RnnLayerShape& s) { return (s.hidden + kLine - 1) / kLine; }

// PCP over the recurrent GEMM C[B, D*G*H] = h R^T for p threads: the best (xi, xj) pairs that fit
// (rows x units, no K split; the units are cut in whole cache lines), best first.
std::vector<std::pair<int, int>> partitions_for(const RnnLayerShape& s, int p) {
  const GemmDims dims{s.batch, s.directions * s.gates * s.hidden, s.hidden};
  PcpOptions opt;
  opt.seq_len = s.seq_len;
  opt.l2_bytes = s.l2_bytes;
  const int64_t units = s.directions * lines_of(s);
  std::vector<std::pair<double, std::pair<int, int>>> scored;
  for (int xj = p; xj >= 1; --xj) {  // more unit splits first on ties (weights stay apart)
    if (p % xj) continue;
    const int xi = p / xj;
    if (xj > units || xi > s.batch) continue;
    scored.push_back({pcp_cost(dims, xi, xj, 1, opt), {xi, xj}});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<int, int>> out;
  for (const auto& e : scored) out.push_back(e.second);
  return out;
}

int64_t default_chunk(const RnnLayerShape& s) {
  const int64_t per_step =
      s.batch * s.directions * ((s.gates == 2 ? 3 : s.gates) * s.hidden) * int64_t{sizeof(float)};
  return std::clamp<int64_t>(s.hoist_budget_bytes / std::max<int64_t>(per_step, 1), 1, s.seq_len);
}

int default_tile(int64_t rows) { return rows <= 2 ? 256 : 32; }
int alt_tile(int64_t rows) { return rows <= 2 ? 128 : 64; }
// GEMV-like steps whose recurrent weights stream from L3 (zigzag): panels one GEMV register
// block wide, so each block reads one contiguous stream that the hardware prefetcher follows
// from the L3; a wider panel makes each block a strided walk over its rows. Measured on the
// 2-vCPU AMD EPYC Zen 4 VM (hidden 1024 batch 1, 2 threads, forced schedules, chunk 100,
// zigzag): LSTM 15.0-15.1 ms at tile 64 against 20.2-29 at 256 and 22.6 at 128; GRU(lbr) 12.2
// against 16.4 / 16.3. (1 thread: 41.4 against 42.3.) graphi_l3_probe (64-column panels) ran
// the same recurrence ~25% faster than the kernel on the Xeon too.
// The same holds with R in L2 on AMD Zen 5 (2-vCPU EPYC KVM guest, session 27): the one-row
// GEMV over 512 KiB of L2-resident R took 2.46 us in 64-column panels against 5.11 in 256-column
// ones and 5.68 in one slab (a 256 B block per 1 KiB row is half the L2 rate there), so every
// GEMV-like step defaults to stream_tile panels and the wider ones stay candidates.
int streamed_tile(const RnnLayerShape& s, int64_t rows) {
  return rows <= 2 ? std::clamp(s.stream_tile, 16, 4096) / 16 * 16 : default_tile(rows);
}
// GEMV-like steps whose recurrent weights stay in L2 (no zigzag): one panel of up to 4096
// columns (the thread's whole slab, row-major). LSTM h256 b1, 2 threads, boosted, 8 interleaved
// runs: 0.655 ms against 0.666 (tile 128) and 0.665 (256); GRU(lbr) 0.502 against 0.518 / 0.515.
constexpr int kSlabTile = 4096;

// Bytes of recurrent weights one thread of partition xj streams per step.
int64_t rec_bytes_per_thread(const RnnLayerShape& s, int xj) {
  const int64_t cols = s.directions * (s.gates + (s.canonical_gru ? 1 : 0)) * s.hidden;
  return cols / std::max(1, xj) * s.hidden * int64_t{s.weight_bytes};
}

// Bytes of input weights one thread of partition xj reads per hoisted chunk.
int64_t input_bytes_per_thread(const RnnLayerShape& s, int xj) {
  const int64_t cols = s.directions * (s.gates + (s.canonical_gru ? 1 : 0)) * s.hidden;
  return cols / std::max(1, xj) * s.input_size * int64_t{s.weight_bytes};
}

}  // namespace

RnnSchedule default_rnn_schedule(const RnnLayerShape& s) {
  RnnSchedule r;
  for (int p = std::max(1, s.team); p >= 1; --p) {
    auto parts = partitions_for(s, p);
    if (parts.empty()) continue;
    r.threads = p;
    r.xi = parts[0].first;
    r.xj = parts[0].second;
    break;
  }
  r.chunk = default_chunk(s);
  const int64_t rows = (s.batch + r.xi - 1) / r.xi;
  r.zigzag = s.seq_len > 1 && rec_bytes_per_thread(s, r.xj) > s.l2_bytes / 2;
  r.rec_tile = streamed_tile(s, rows);
  return r;
}

std::vector<RnnSchedule> rnn_schedule_candidates(const RnnLayerShape& s) {
  std::vector<RnnSchedule> out;
  auto add = [&](const RnnSchedule& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  const RnnSchedule d = default_rnn_schedule(s);
  add(d);
  // R streamed from L3 at every step on the whole team (each thread's share overflows half its
  // L2): fewer threads stream fewer bytes per step at once, never faster, and the calibration's
  // shortened copy on a busy team can time them faster anyway (LSTM h1024 b1 T100 on the Zen 5
  // guest: one fresh cache in three chose 1 thread, 18.9 ms against 8.6-8.9 on two).
  const int min_threads = d.zigzag && d.threads == s.team ? s.team : 1;
  std::vector<int64_t> chunks;
  for (const PhasedSchedule& ph : enumerate_phased_schedules(rnn_mm_dag(s.canonical_gru))) {
    if (!ph.kernel_supported) continue;
    if (ph.independent.empty()) {
      chunks.push_back(1);
    } else {
      const int64_t c = default_chunk(s);
      if (c > 1) chunks.push_back(c);
      if (c > 16) chunks.push_back(8);
    }
  }
  for (int p = std::max(1, s.team); p >= min_threads; --p) {
    auto parts = partitions_for(s, p);
    if (parts.size() > 2) parts.resize(2);
    for (auto [xi, xj] : parts) {
      const int64_t rows = (s.batch + xi - 1) / xi;
      const bool big = s.seq_len > 1 && rec_bytes_per_thread(s, xj) > s.l2_bytes / 2;
      // Short chunks re-read the thread's input weights once per chunk: cheap while they share
      // the L2 with its recurrent weights, an extra pass from L3 each time when they do not
      // (GRU hidden 1024 batch 1, 2 threads: 6 MiB of W per thread, chunk 8 read it 13 times,
      // 24.2 ms against 21.4 with one hoist). A calibration on a shortened copy of the layer
      // cannot see that cost (it runs 1-2 chunks), so such chunks are not candidates.
      // For GEMV-like steps (bandwidth-bound) "share" leaves a quarter of the L2 to the rest of
      // a step (x, the projections, h, Y): LSTM h256 b1 on 1 thread has W + R = 2 MiB = its L2,
      // and chunk 8 took 1.41 ms against 1.32 for one hoist (GRU: 0.97 vs 0.95), while its
      // calibration timed them equal.
      const int64_t share_bytes = rows <= 2 ? s.l2_bytes / 4 * 3 : s.l2_bytes;
      const bool w_shares_l2 =
          input_bytes_per_thread(s, xj) + rec_bytes_per_thread(s, xj) <= share_bytes;
      for (int64_t chunk : chunks) {
        if (chunk < default_chunk(s) && !w_shares_l2) continue;
        std::vector<int> tiles = {default_tile(rows), alt_tile(rows)};
        if (rows <= 2 && !big) tiles.push_back(kSlabTile);
        if (rows <= 2) tiles.insert(tiles.begin(), streamed_tile(s, rows));
        // Zigzag exactly when the thread's R overflows half its L2: the same work, each step
        // starting on the weights the previous one left in L2, so never slower there, and its
        // gain only shows over a whole sequence, which the calibration's shortened copy does
        // not run (LSTM h1024 b1 T100 on the Zen 5 guest: 8.6-8.9 ms zigzag, 9.4-10.5 for the
        // plain walk that calibrations picked in two of three fresh caches).
        for (int tile : tiles) {
          RnnSchedule c;
          c.threads = p;
          c.xi = xi;
          c.xj = xj;
          c.chunk = chunk;
          c.rec_tile = tile;
          c.zigzag = big;
          add(c);
        }
      }
    }
  }
  return out;
}

// ---- calibration budget -------------------------------------------------------------------------

double rnn_schedule_model_us(const RnnLayerShape& s, const RnnSchedule& c) {
  // Nominal rates of one core (ranking only): L2 100 GB/s, L3 25 GB/s, 100 GFLOP/s; 1 us per
  // exchange, 2 us per thread forked for the sequence.
  constexpr double kL2 = 100e3, kL3 = 25e3, kFlops = 100e3;  // per microsecond
  const int64_t rows = (s.batch + c.xi - 1) / c.xi;
  const double rec = double(rec_bytes_per_thread(s, c.xj));
  const double warm = double(s.l2_bytes) / 2 * (c.zigzag ? 2.0 : 1.0);
  const double l2_part = std::min(rec, warm), l3_part = std::max(0.0, rec - warm);
  double bytes_us = l2_part / kL2 + l3_part / kL3;
  if (c.chunk <= 1) bytes_us += double(input_bytes_per_thread(s, c.xj)) / kL3;
  const double cols = double(s.directions * (s.gates + (s.canonical_gru ? 1 : 0)) * s.hidden) /
                      double(std::max(1, c.xj));
  const double flops_us = 2.0 * double(rows) * cols * double(s.hidden + s.input_size) / kFlops;
  return std::max(bytes_us, flops_us) + (c.xj > 1 ? 1.0 : 0.0) +
         2.0 * c.threads / double(s.seq_len);
}

std::vector<RnnSchedule> rank_rnn_candidates(const RnnLayerShape& s,
                                             std::vector<RnnSchedule> cands) {
  if (cands.size() <= 2) return cands;
  std::stable_sort(cands.begin() + 1, cands.end(), [&](const RnnSchedule& a, const RnnSchedule& b) {
    return rnn_schedule_model_us(s, a) < rnn_schedule_model_us(s, b);
  });
  return cands;
}

CalibrationOutcome run_calibration(
    size_t num_candidates, double start_ms, const CalibrationLimits& limits,
    const std::function<double()>& now,
    const std::function<std::optional<double>(size_t, double)>& measure) {
  CalibrationOutcome out;
  out.stop = "all";
  const double deadline = start_ms + limits.budget_ms;
  double longest = 0;
  int since_gain = 0;
  for (size_t i = 0; i < num_candidates; ++i) {
    if (out.measured >= std::max(1, limits.max_candidates)) {
      out.stop = "max candidates";
      break;
    }
    const double t0 = now();
    if (i > 0 && t0 + longest > deadline) {
      out.stop = "budget";
      break;
    }
    const std::optional<double> ms = measure(i, deadline);
    const double t1 = now();
    longest = std::max(longest, t1 - t0);
    out.elapsed_ms = t1 - start_ms;
    ++out.measured;
    if (!ms) continue;
    if (out.best < 0 || *ms < out.best_ms * (1.0 - limits.min_gain)) {
      // A real gain: the new best, and the patience starts again.
      out.best = static_cast<int>(i);
      out.best_ms = *ms;
      since_gain = 0;
    } else {
      if (*ms < out.best_ms) {  // faster, within the noise: keep it but keep counting
        out.best = static_cast<int>(i);
        out.best_ms = *ms;
      }
      if (++since_gain >= limits.patience && limits.patience > 0) {
        out.stop = "no gain";
        break;
      }
    }
  }
  if (limits.confirm && out.best > 0 && now() + 2 * longest <= deadline) {
    const std::optional<double> d = measure(0, deadline);
    const std::optional<double> w = measure(static_cast<size_t>(out.best), deadline);
    out.elapsed_ms = now() - start_ms;
    if (d && w) {
      if (*w < *d * (1.0 - limits.min_gain)) {
        out.confirmation = "confirmed";
        out.best_ms = std::min(out.best_ms, *w);
      } else {
        out.confirmation = "default kept";
        out.best = 0;
        out.best_ms = *d;
      }
    }
  }
  return out;
}

// ---- cache --------------------------------------------------------------------------------------

std::string cpu_signature() {
  static const std::string sig = machine_signature() + "|" + xsmm::version_string() + "|kernel " +
                                 std::to_string(kRnnKernelVersion);
  return sig;
}

std::string rnn_schedule_cache_path() { return choice_cache_path("rnn_schedules.json"); }

std::optional<RnnSchedule> load_cached_schedule(const std::string& path, const std::string& key,
                                                const std::string& signature) {
  const std::string full = key + "|" + signature;
  const std::optional<nlohmann::json> entry = load_choice(path, full, "RNN schedule");
  if (!entry) return std::nullopt;
  const nlohmann::json& e = *entry;
  // Calibrated while other threads took the team's CPUs: the next process measures again (and
  // its verdict replaces this one).
  if (e.is_object() && e.contains("disturbed") && e["disturbed"].is_boolean() &&
      e["disturbed"].get<bool>())
    return std::nullopt;
  auto int_field = [&](const char* name, int64_t lo, int64_t hi, int64_t* out) {
    if (!e.is_object() || !e.contains(name) || !e[name].is_number_integer()) return false;
    const int64_t v = e[name].get<int64_t>();
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
  };
  int64_t threads, xi, xj, chunk, tile, zigzag;
  if (!int_field("threads", 1, 4096, &threads) || !int_field("xi", 1, 4096, &xi) ||
      !int_field("xj", 1, 4096, &xj) || !int_field("chunk", 1, int64_t{1} << 40, &chunk) ||
      !int_field("rec_tile", 16, 4096, &tile) || !int_field("zigzag", 0, 1, &zigzag) ||
      xi * xj != threads || tile % 16 != 0) {
    warn_choice_cache(path, "RNN schedule", "entry '" + full + "' is malformed");
    return std::nullopt;
  }
  RnnSchedule s;
  s.threads = static_cast<int>(threads);
  s.xi = static_cast<int>(xi);
  s.xj = static_cast<int>(xj);
  s.chunk = chunk;
  s.rec_tile = static_cast<int>(tile);
  s.zigzag = zigzag == 1;
  s.searched = true;
  if (e.contains("ms") && e["ms"].is_number()) s.measured_ms = e["ms"].get<double>();
  return s;
}

Status store_cached_schedule(const std::string& path, const std::string& key,
                             const std::string& signature, const RnnSchedule& s) {
  return store_choice(path, key + "|" + signature,
                      {{"threads", s.threads},
                       {"xi", s.xi},
                       {"xj", s.xj},
                       {"chunk", s.chunk},
                       {"rec_tile", s.rec_tile},
                       {"zigzag", s.zigzag ? 1 : 0},
                       {"ms", s.measured_ms},
                       {"disturbed", s.disturbed}});
}

bool rnn_schedule_search_enabled_by_env() {
  const char* v = std::getenv("GRAPHI_RNN_SCHEDULE_SEARCH");
  if (!v) return true;
  const std::string s(v);
  return !(s == "0" || s == "off" || s == "false" || s == "no");
}

double rnn_schedule_search_budget_ms() {
  const char* v = std::getenv("GRAPHI_RNN_SEARCH_BUDGET_MS");
  if (!v || !*v) return 200.0;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  return (end && *end == 0 && d >= 0 && d < 1e7) ? d : 200.0;
}

}  // namespace graphi::ops
