// The sequence kernel's schedule: forced by attribute, remembered, cached, calibrated or the
// analytical default (ops/rnn/rnn_schedule.h), and the partition of hidden units and batch rows
// over the team that it implies.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "ops/cpu_wait.h"
#include "ops/rnn/gemm_bf16.h"
#include "ops/rnn/gemm_int8.h"
#include "ops/rnn/pcp_partition.h"
#include "ops/rnn/rnn_sequence_kernel.h"
#include "ops/rnn/team_exchange.h"

namespace graphi::ops::rnn_wcs {

namespace {

// Schedules already chosen in this process, by cache key (layers of one shape search once even
// when the cache file is unusable).
std::mutex& memo_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, RnnSchedule>& memo() {
  static std::map<std::string, RnnSchedule> m;
  return m;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<RnnSchedule> RnnSequenceKernel::choose_schedule(const std::string& where) {
  const int64_t B = s_.batch, lines = (s_.hidden + kLine - 1) / kLine;
  if (!s_.forced_schedule.empty()) {
    // "threads,xi,xj,chunk,tile,zigzag" (tests and experiments).
    std::vector<int64_t> v;
    for (const std::string& part : split_names(s_.forced_schedule)) {
      char* end = nullptr;
      const long long x = std::strtoll(part.c_str(), &end, 10);
      if (part.empty() || !end || *end) {
        v.clear();
        break;
      }
      v.push_back(x);
    }
    RnnSchedule r;
    if (v.size() == 6) {
      r.threads = static_cast<int>(v[0]);
      r.xi = static_cast<int>(v[1]);
      r.xj = static_cast<int>(v[2]);
      r.chunk = v[3];
      r.rec_tile = static_cast<int>(v[4]);
      r.zigzag = v[5] == 1;
    }
    if (v.size() != 6 || r.threads < 1 || r.threads > team_ || r.xi < 1 || r.xj < 1 ||
        int64_t{r.xi} * r.xj != r.threads || r.xi > B || r.xj > s_.num_directions * lines ||
        r.chunk < 1 || r.rec_tile < 16 || r.rec_tile > 4096 || r.rec_tile % 16 != 0 ||
        (v[5] != 0 && v[5] != 1))
      return Status::invalid_graph(
          where + ": attribute '" + std::string(kScheduleAttr) + "' = '" + s_.forced_schedule +
          "' is not a valid schedule for this layer (threads,xi,xj,chunk,tile,zigzag with " +
          "1 <= threads = xi*xj <= team " + std::to_string(team_) + ", xi <= batch " +
          std::to_string(B) + ", xj <= " + std::to_string(s_.num_directions * lines) +
          " unit lines, chunk >= 1, tile a multiple of 16 in [16, 4096], zigzag 0|1)");
    return r;
  }
  const RnnSchedule fallback = default_rnn_schedule(shape_);
  const bool search =
      s_.schedule_search >= 0 ? s_.schedule_search == 1 : rnn_schedule_search_enabled_by_env();
  if (!search || s_.wcs_shuffle) return fallback;
  // Left to the environment, tiny layers (< 1 MFLOP of GEMMs, a few microseconds) keep the
  // default: calibrating them would cost more than it could ever save.
  const double flops = 2.0 * double(s_.seq_len) * double(s_.batch) * double(s_.num_directions) *
                       double(s_.input_size + s_.hidden) * double(s_.gates * s_.hidden);
  if (s_.schedule_search < 0 && flops < 1e6) return fallback;
  // Teams of two or more: the verdict holds for the exchange latency it was measured at
  // (ops/rnn/team_exchange.h), so a VM's far placement keeps its own entries.
  std::string key = shape_.key();
  if (team_ >= 2) {
    const std::string cls = exchange_class(team_round_trip_ns());
    if (!cls.empty()) key += " exchange " + cls;
  }
  const std::string sig = cpu_signature();
  {
    std::lock_guard<std::mutex> lock(memo_mutex());
    auto it = memo().find(key);
    if (it != memo().end()) return it->second;
  }
  // Ranked by the cost model, so a budget that runs out first drops the least promising ones.
  const std::vector<RnnSchedule> cands =
      rank_rnn_candidates(shape_, rnn_schedule_candidates(shape_));
  const std::string path = rnn_schedule_cache_path();
  std::optional<RnnSchedule> chosen = load_cached_schedule(path, key, sig);
  // A cached entry must still be one of this layer's candidates (else: recompute).
  if (chosen && std::find(cands.begin(), cands.end(), *chosen) == cands.end()) chosen.reset();
  if (!chosen) {
    chosen = calibrate(cands, rnn_schedule_search_budget_ms());
    if (!chosen) return fallback;  // cannot calibrate here; do not cache
    if (!path.empty()) {
      Status st = store_cached_schedule(path, key, sig, *chosen);
      if (!st.is_ok())
        std::fprintf(stderr, "graphi: warning: cannot write RNN schedule cache %s: %s\n",
                     path.c_str(), st.message().c_str());
    }
  }
  std::lock_guard<std::mutex> lock(memo_mutex());
  memo()[key] = *chosen;
  return *chosen;
}

std::optional<RnnSchedule> RnnSequenceKernel::calibrate(const std::vector<RnnSchedule>& cands,
                                                        double budget_ms) const {
  if (cands.empty() || omp_in_parallel() || team_ > omp_get_num_procs()) return std::nullopt;
  if (cands.size() == 1) {
    RnnSchedule r = cands[0];
    r.searched = true;
    return r;
  }
  // A shortened copy of the layer: every step costs the same (rule i), so a part of the sequence
  // ranks the schedules: 16 steps to estimate the per-step cost, then as many steps (up to T)
  // as the budget allows for a warm-up and the timed runs of every candidate (the best of two,
  // or of four when a run is under 2 ms: short runs of small layers are mostly timer and
  // wake-up noise). No lengths, no initial
  // states, Y only, zero weights and inputs.
  const double start = now_ms();
  std::atomic<bool> ok{true};
  auto shortened = [&](int64_t steps) {
    auto k = std::make_unique<RnnSequenceKernel>(kind_);
    k->s_ = s_;
    k->s_.seq_len = std::min<int64_t>(s_.seq_len, steps);
    k->s_.has_seq_lens = k->s_.has_initial_h = k->s_.has_initial_c = false;
    k->s_.num_outputs = 1;
    k->s_.wcs_shuffle = false;
    k->const_weights_ = true;
    if (!k->prepare(team_).is_ok()) k.reset();
    return k;
  };
  // Best of `reps` timed runs (after one warm-up) of schedule `c` on kernel k; inf on failure.
  // Stops repeating once `deadline` (now_ms clock) has passed and one timed run exists.
  // *disturbed (when given) is set when in every timed run a member waited for its CPU more
  // than 2% of the run (ops/cpu_wait.h: other threads had it).
  auto time_schedule = [&](RnnSequenceKernel& k, const RnnSchedule& c, int reps, double deadline,
                           bool* disturbed = nullptr) {
    const int64_t T = k.s_.seq_len, B = s_.batch, D = s_.num_directions, H = s_.hidden;
    Tensor x(TensorDesc{DType::kF32, {T * B * s_.input_size}});
    Tensor y(TensorDesc{DType::kF32, {T * D * B * H}});
    std::memset(x.data(), 0, x.desc().bytes());
    const void* ins[8] = {x.data(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
    void* outs[1] = {y.data()};
    const Buffers io{std::span<const void* const>(ins, 8), std::span<void* const>(outs, 1)};
    k.schedule_ = c;
    k.configure();
    k.packed_ = Tensor(TensorDesc{DType::kF32, {k.packed_floats_}});
    std::memset(k.packed_.data(), 0, k.packed_.desc().bytes());
    Tensor scratch(TensorDesc{DType::kF32, {std::max<int64_t>(k.scratch_floats_, 16)}});
    // The best undisturbed run; the best of all when every run was disturbed (*disturbed set).
    double best_ms = std::numeric_limits<double>::infinity(), best_any_ms = best_ms;
    // A run still going at the deadline stops at its next step (see calib_deadline_ms_); its
    // time is not a measurement.
    k.calib_deadline_ms_ = deadline;
    for (int rep = 0; rep <= reps && ok; ++rep) {
      double t0 = 0, t1 = 0;
      std::atomic<int> preempted{0};
      k.calib_aborted_.store(false);
#pragma omp parallel num_threads(team_)
      {
        if (omp_get_num_threads() != team_) ok = false;
        // Read outside the timed part (a few microseconds each).
        const CpuWaitMark mark = CpuWaitMark::now();
#pragma omp barrier
        if (ok) {
          if (omp_get_thread_num() == 0) t0 = now_ms();
          k.run(TeamContext{omp_get_thread_num(), team_, scratch.data(),
                            static_cast<size_t>(k.scratch_floats_) * sizeof(float)},
                io);
#pragma omp barrier
          if (omp_get_thread_num() == 0) t1 = now_ms();
        }
#pragma omp barrier
        preempted += mark.disturbed_since(t1 - t0);
      }
      if (k.calib_aborted_.load()) break;
      // Past the deadline: the warm-up's time stands in when no timed run happened yet.
      const bool late = ok && now_ms() > deadline;
      if (ok && (rep > 0 || late)) {
        best_any_ms = std::min(best_any_ms, t1 - t0);
        if (preempted.load() == 0) best_ms = std::min(best_ms, t1 - t0);
      }
      if (late) break;
    }
    if (!std::isfinite(best_ms)) {
      if (disturbed) *disturbed = std::isfinite(best_any_ms);
      return best_any_ms;
    }
    return best_ms;
  };
  auto k = shortened(16);
  if (!k) return std::nullopt;
  // The probe: the default on 16 steps (one warm-up, one timed run) gives the per-step cost.
  bool probe_disturbed = false;
  const double probe_ms = time_schedule(*k, cands[0], 1, start + budget_ms, &probe_disturbed);
  // Not even the probe fit (a loaded machine): the analytical default, not cached (the next
  // process tries again).
  if (!ok || !std::isfinite(probe_ms)) {
    if (std::getenv("GRAPHI_RNN_SEARCH_LOG") && ok)
      std::fprintf(stderr,
                   "graphi: %s: the probe did not fit the %.0f ms budget (stopped after %.0f ms):"
                   " analytical default, not cached\n",
                   shape_.key().c_str(), budget_ms, now_ms() - start);
    return std::nullopt;
  }
  CalibrationLimits limits;
  limits.budget_ms = budget_ms;
  const double per_step = probe_ms / double(k->s_.seq_len);
  // Steps per shortened run: the warm-up and the timed runs of every candidate that may be
  // measured fit what is left of the budget (at least the probe's 16, at most T). Best of 2
  // for runs of 2 ms and more, of 4 below. (Best of 4 everywhere had left LSTM H256 B20 on 2
  // threads with 4 of its 14 candidates measured in the 200 ms: 12.5 ms per run against 11.0
  // for the schedule a full search picks.)
  const double left_ms = std::max(0.0, budget_ms - (now_ms() - start));
  const double planned = double(std::min<size_t>(cands.size(), size_t(limits.max_candidates)));
  auto steps_for = [&](int reps) {
    return std::clamp<int64_t>(
        static_cast<int64_t>(left_ms / ((1.0 + reps) * planned * std::max(per_step, 1e-6))), 16,
        s_.seq_len);
  };
  int reps = 2;
  int64_t steps = steps_for(reps);
  if (double(steps) * per_step < 2.0) {
    reps = 4;
    steps = steps_for(reps);
  }
  // With the probe's length the probe was candidate 0's measurement already.
  const bool reuse_probe = steps <= k->s_.seq_len;
  if (!reuse_probe) {
    k = shortened(steps);
    if (!k) return std::nullopt;
  }
  bool announced = false, probe_used = false;
  int disturbed_candidates = 0;
  const CalibrationOutcome out = run_calibration(
      cands.size(), start, limits, now_ms,
      [&](size_t ci, double deadline) -> std::optional<double> {
        if (!announced && now_ms() - start > 500) {
          std::fprintf(stderr, "graphi: calibrating %s schedules (%zu candidates, %lld steps)...\n",
                       shape_.key().c_str(), cands.size(), static_cast<long long>(k->s_.seq_len));
          announced = true;
        }
        // The probe was one timed run, the process's first team region: for a short layer
        // (a probe under 2 ms) a hiccup there ranked the default below a 1-thread schedule in
        // 3 of 5 fresh processes (LSTM H64 B1 T100 on 2 threads: 0.107 ms chosen, 0.059 ms
        // default), so it is measured again like the others (budget-bound).
        if (ci == 0 && reuse_probe && probe_ms >= 2.0 && !probe_used) {
          probe_used = true;  // a second call is the confirmation's: timed afresh
          disturbed_candidates += probe_disturbed;
          return probe_ms;
        }
        bool disturbed = false;
        const double ms = time_schedule(*k, cands[ci], reps, deadline, &disturbed);
        if (!ok || !std::isfinite(ms)) return std::nullopt;
        disturbed_candidates += disturbed;
        return ms;
      });
  if (!ok || out.best < 0) return std::nullopt;
  RnnSchedule best = cands[size_t(out.best)];
  best.measured_ms = out.best_ms;
  best.searched = true;
  best.candidates_measured = out.measured;
  // Every timed run of some candidate had a team member preempted: other processes shared the
  // machine, and a verdict taken then (one thread against two, say) would outlive them in the
  // cache. This process keeps it; cached as disturbed, the next one calibrates again.
  best.disturbed = disturbed_candidates > 0;
  // GRAPHI_RNN_SEARCH_LOG=1: the outcome of every calibration, not only the long ones.
  static const bool log = [] {
    const char* v = std::getenv("GRAPHI_RNN_SEARCH_LOG");
    return v && *v && std::string(v) != "0";
  }();
  if (announced || log)
    std::fprintf(stderr,
                 "graphi: %s (exchange round trip %.0f ns) -> %s after %.0f ms (%d of %zu "
                 "candidates, stop: %s%s%s)%s\n",
                 shape_.key().c_str(), team_ >= 2 ? team_round_trip_ns() : 0.0,
                 best.to_string().c_str(), now_ms() - start, out.measured, cands.size(),
                 out.stop.c_str(), out.confirmation.empty() ? "" : ", ", out.confirmation.c_str(),
                 best.disturbed ? "; other threads took the team's CPUs during "
                                  "every run of some candidate: the next process measures again"
                                : "");
  return best;
}

// Cut the (direction, 16-unit line) space into the schedule's xj ranges and the batch into its
// xi row ranges; threads >= xi * xj idle. (The analytical default comes from PCP's cross-step
// cost, ops/rnn/rnn_schedule.cpp. Measured on 2 cores, LSTM H = 256, T = 100: it picks the unit
// split at batch 10 (4.2 ms vs 4.8 ms for the row split) and the row split at batch 20 (7.9 vs
// 8.4 ms) and 64 (25.7 vs 26.8 ms), the faster one each time.)
void RnnSequenceKernel::plan_partition() {
  const int64_t D = s_.num_directions, G = s_.gates, H = s_.hidden, B = s_.batch;
  const int64_t lines = (H + kLine - 1) / kLine;
  const int64_t total = D * lines;
  const int best_xi = schedule_.xi, best_xj = schedule_.xj;
  auto segments_of = [&](int64_t l0, int64_t l1) {
    std::vector<Segment> segs;
    for (int d = 0; d < D; ++d) {
      const int64_t a = std::max(l0, d * lines) - d * lines,
                    b = std::min(l1, (d + 1) * lines) - d * lines;
      if (a >= b) continue;
      Segment seg;
      seg.d = d;
      seg.j0 = a * kLine;
      seg.j1 = std::min(H, b * kLine);
      segs.push_back(std::move(seg));
    }
    return segs;
  };
  plans_.assign(team_, ThreadPlan{});
  for (int t = 0; t < best_xi * best_xj; ++t) {
    const int q = t % best_xj, r = t / best_xj;
    auto [l0, l1] = team_range(total, q, best_xj);
    auto [r0, r1] = team_range(B, r, best_xi);
    plans_[t].r0 = r0;
    plans_[t].r1 = r1;
    plans_[t].segs = segments_of(l0, l1);
  }
  // The solo plan walks the same blocks (the packed layout depends on them) with all rows.
  solo_.r0 = 0;
  solo_.r1 = B;
  solo_.segs.clear();
  for (int q = 0; q < best_xj; ++q) {
    auto [l0, l1] = team_range(total, q, best_xj);
    for (Segment& seg : segments_of(l0, l1)) solo_.segs.push_back(std::move(seg));
  }
  std::stable_sort(solo_.segs.begin(), solo_.segs.end(),
                   [](const Segment& a, const Segment& b) { return a.d < b.d; });
  // One slab per block, each starting on a cache line.
  slabs_floats_ = 0;
  // Panel widths: the schedule's for the recurrent GEMM; for the hoisted one, wide panels only
  // when its calls are GEMV-like (per-step schedule at batch 1).
  // Rows per hoisted call (see hoist()): a chunk of one batch entry (layout 1), all rows of a
  // chunk (layout 0, whole batch), or one step's share of the rows (layout 0, row split).
  const int64_t hoist_rows = s_.layout == 1 ? chunk_
                             : best_xi == 1 ? chunk_ * B
                                            : (B + best_xi - 1) / best_xi;
  for (Segment& seg : solo_.segs) {
    const int64_t w = seg.j1 - seg.j0;
    auto panel = [&](int64_t cols, int64_t want) {
      return std::min(round_up(cols, kLine), round_up(std::max<int64_t>(want, kLine), kLine));
    };
    // bf16 (ops/rnn/gemm_bf16.h): 64-column W panels for multi-row hoists (its 6 x 4-vector
    // register block), sizes in 32-bit words (pairs of k); each slab starts on a cache line.
    seg.pw_w = panel(G * w, hoist_rows <= 2 ? 256 : lowp_ ? 64 : 32);
    seg.pw_r0 = panel(g0_ * w, schedule_.rec_tile);
    seg.pw_r1 = panel(w, schedule_.rec_tile);
    auto slab = [&](int64_t m, int64_t k, int64_t pw) {
      return bf16_   ? round_up(bf16_packed_words(m, k, pw), kLine)
             : int8_ ? round_up(int8_packed_words(m, k, pw), kLine)
                     : TiledGemm::packed_floats(m, k, pw);
    };
    seg.wp_off = slabs_floats_;
    slabs_floats_ += slab(G * w, s_.input_size, seg.pw_w);
    seg.rp0_off = slabs_floats_;
    if (bf16_) {
      // R in k blocks (bf16_kblocks: each rounds its k up to whole pairs; a block is a multiple
      // of 16 words, so each starts on a cache line).
      slabs_floats_ += round_up(bf16_kblocks(seg.j0, seg.j1, g0_ * w, seg.pw_r0).words, kLine);
    } else {
      slabs_floats_ += slab(g0_ * w, H, seg.pw_r0);
    }
    seg.rp1_off = slabs_floats_;
    slabs_floats_ += canonical_gru_ ? slab(w, H, seg.pw_r1) : 0;
  }
  for (ThreadPlan& p : plans_)
    for (Segment& seg : p.segs)
      for (const Segment& b : solo_.segs)
        if (b.d == seg.d && b.j0 == seg.j0) {
          seg.wp_off = b.wp_off;
          seg.pw_w = b.pw_w;
          seg.rp0_off = b.rp0_off;
          seg.pw_r0 = b.pw_r0;
          seg.rp1_off = b.rp1_off;
          seg.pw_r1 = b.pw_r1;
        }
}

}  // namespace graphi::ops::rnn_wcs
