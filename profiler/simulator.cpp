// The makespan simulator: machine presets, op cost curves, the discrete-event simulation of the
// runtime's policies (see simulator.h; docs/SIMULATOR.md for the assumptions).
#include "profiler/simulator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>

#include "engine/placement.h"
#include "engine/ready_order.h"

namespace graphi::profiler {

using engine::Policy;

Result<MachineSpec> machine_preset(std::string_view name) {
  MachineSpec m;
  m.name = std::string(name);
  if (name == "knl7250") {
    // Xeon Phi 7250 (seed 002's machine): 68 cores at 1.4 GHz in 34 tiles of 2 sharing a 1 MB
    // L2, 4 hyper-threads per core, 16 GB MCDRAM (in cache mode: a memory-side cache) and DDR4.
    m.synthetic = "package:1 l2:34 core:2 pu:4";
    m.executor_cores = 64;
    m.core_speed = 0.4;
    m.peak_gflops_core = 89.6;  // 2 AVX-512 FMA units x 16 fp32 x 2 x 1.4 GHz
    m.l2_bytes = 1 << 20;
    m.l2_gbs = 90;  // 64 B/cycle read per tile at 1.4 GHz
    m.l3_bytes = 16.0 * (1ull << 30);
    m.l3_gbs = 450;   // MCDRAM, STREAM triad 450-490 GB/s (flat mode)
    m.dram_gbs = 90;  // 6 channels DDR4-2400 (115 GB/s peak), STREAM ~90
    m.sources =
        "Intel Xeon Phi 7250 product brief (cores, clock, L2, MCDRAM); Sodani et al., 'Knights "
        "Landing', IEEE "
        "Micro 2016 (L2 64 B/clk per tile); McCalpin's STREAM results for KNL (MCDRAM ~490, DDR "
        "~90 GB/s)";
  } else if (name == "xeon-2s-24c") {
    // DeepCPU's machine (seed 000): 2 x Xeon E5-2650 v4 (12 cores, 2.2 GHz, AVX2, 30 MB L3 each).
    m.synthetic = "package:2 l3:1 l2:12 core:1 pu:2";
    m.core_speed = 0.6;
    m.peak_gflops_core = 70.4;  // 2 AVX2 FMA x 8 fp32 x 2 x 2.2 GHz
    m.l2_bytes = 256 << 10;
    m.l2_gbs = 140;  // 64 B/cycle per core at 2.2 GHz
    m.l3_bytes = 2 * 30.0 * (1 << 20);
    m.l3_gbs = 2 * 200;   // ~200 GB/s aggregate L3 per socket
    m.dram_gbs = 2 * 60;  // 4 channels DDR4-2400 per socket (76.8 peak), STREAM ~60
    m.sources =
        "Intel ARK E5-2650 v4 (cores, clock, caches, memory channels); STREAM on Broadwell-EP ~60 "
        "GB/s per socket";
  } else if (name == "epyc-2x64") {
    // 2 x AMD EPYC 7742 (64 Zen 2 cores, 2.25 GHz, 16 CCX of 4 cores with 16 MB L3 each).
    m.synthetic = "package:2 l3:16 l2:4 core:1 pu:2";
    m.core_speed = 0.7;
    m.peak_gflops_core = 72;  // 2 AVX2 FMA x 8 fp32 x 2 x 2.25 GHz
    m.l2_bytes = 512 << 10;
    m.l2_gbs = 144;  // 64 B/cycle per core at 2.25 GHz
    m.l3_bytes = 2 * 256.0 * (1 << 20);
    m.l3_gbs = 2 * 16 * 100;  // ~100 GB/s per CCX slice
    m.dram_gbs = 2 * 150;     // 8 channels DDR4-3200 per socket (204.8 peak), STREAM ~150
    m.sources =
        "AMD EPYC 7742 product page (cores, clock, caches, 8 x DDR4-3200); STREAM on Rome ~150 "
        "GB/s per socket";
  } else {
    return Status::invalid_argument("unknown machine '" + std::string(name) + "' (use " +
                                    kMachinePresets + ")");
  }
  return m;
}

namespace {

// "a=1.5,b=2" -> pairs; errors name the field of `what`.
Status parse_pairs(std::string_view spec, const std::string& what,
                   const std::function<bool(std::string_view, double)>& set) {
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string_view::npos) end = spec.size();
    const std::string_view item = spec.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return Status::invalid_argument(what + ": '" + std::string(item) + "' is not NAME=VALUE");
    const std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
    double v = 0;
    auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), v);
    if (ec != std::errc() || p != val.data() + val.size() || !(v >= 0) || !std::isfinite(v))
      return Status::invalid_argument(what + ": " + std::string(key) + " = '" + std::string(val) +
                                      "' is not a non-negative number");
    if (!set(key, v))
      return Status::invalid_argument(what + ": unknown field '" + std::string(key) + "'");
    pos = end + 1;
  }
  return Status::ok();
}

}  // namespace

Status parse_bandwidths(std::string_view spec, MachineSpec& m) {
  return parse_pairs(spec, "--bandwidth", [&](std::string_view k, double v) {
    if (k == "l2")
      m.l2_gbs = v;
    else if (k == "l3")
      m.l3_gbs = v;
    else if (k == "dram")
      m.dram_gbs = v;
    else if (k == "l2_mb")
      m.l2_bytes = v * (1 << 20);
    else if (k == "l3_mb")
      m.l3_bytes = v * (1 << 20);
    else
      return false;
    return true;
  });
}

Status parse_dispatch_costs(std::string_view spec, DispatchCosts& d) {
  return parse_pairs(spec, "--dispatch", [&](std::string_view k, double v) {
    if (k == "seq")
      d.seq_op_us = v;
    else if (k == "local")
      d.local_op_us = v;
    else if (k == "handoff")
      d.handoff_us = v;
    else if (k == "step")
      d.step_us = v;
    else if (k == "sq")
      d.sq_op_us = v;
    else if (k == "sq_lock")
      d.sq_lock_us = v;
    else if (k == "start")
      d.run_start_us = v;
    else if (k == "sync")
      d.team_sync_us = v;
    else if (k == "client")
      d.client_wake_us = v;
    else if (k == "cross_package")
      d.cross_package = v;
    else
      return false;
    return true;
  });
}

DispatchCosts DispatchCosts::scaled(double speed) const {
  DispatchCosts d = *this;
  const double f = speed > 0 ? 1.0 / speed : 1.0;
  d.seq_op_us *= f;
  d.local_op_us *= f;
  d.handoff_us *= f;
  d.step_us *= f;
  d.sq_op_us *= f;
  d.sq_lock_us *= f;
  d.run_start_us *= f;
  d.team_sync_us *= f;
  d.client_wake_us *= f;
  return d;
}

// ---- op cost curves ----

namespace {

double amdahl(const OpClassParams& c, int k) {
  const int keff = std::max(1, std::min(k, c.saturation));
  return c.serial + (1.0 - c.serial) / keff;
}

}  // namespace

const OpClassParams& OpCostCurves::op_class(size_t i) const {
  const double intensity = g_->bytes[i] > 0 ? g_->flops[i] / g_->bytes[i] : 0.0;
  return intensity >= kComputeIntensity ? kComputeClass : kMemoryClass;
}

OpCostCurves OpCostCurves::from_hints(const ModelGraph& g, const MachineSpec& m,
                                      const DispatchCosts& here) {
  OpCostCurves c;
  c.g_ = &g;
  c.m_ = m;
  c.sync_us_ = here.team_sync_us;
  char src[96];
  std::snprintf(src, sizeof src, "cost hints on a %.1f GFLOPS core", m.peak_gflops_core);
  c.source_ = src;
  const double core_bw = m.l2_gbs > 0 ? m.l2_gbs : 100.0;
  c.t1_.resize(g.num_nodes());
  for (size_t i = 0; i < g.num_nodes(); ++i)
    c.t1_[i] = g.small[i] ? 0.05 / m.core_speed
                          : std::max(g.flops[i] / (m.peak_gflops_core * 1e3),
                                     g.bytes[i] / (core_bw * 1e3)) +
                                0.3 / m.core_speed;
  return c;
}

OpCostCurves OpCostCurves::from_measured(const ModelGraph& g, std::span<const double> node_us,
                                         int k_measured, const MachineSpec& m,
                                         const DispatchCosts& here) {
  OpCostCurves c;
  c.g_ = &g;
  c.m_ = m;
  c.sync_us_ = here.team_sync_us;
  c.source_ = "measured here with teams of " + std::to_string(k_measured);
  c.t1_.resize(g.num_nodes());
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    double t = i < node_us.size() ? node_us[i] : 0.0;
    if (!g.runs_alone(i) && k_measured > 1)
      t = std::max(0.0, t - here.team_sync_us * std::log2(k_measured)) /
          amdahl(c.op_class(i), k_measured);
    c.t1_[i] = t / m.core_speed;
  }
  return c;
}

double OpCostCurves::bandwidth_floor_us(size_t i, int k, int executors) const {
  const double bytes = g_->bytes[i];
  if (bytes <= 0) return 0;
  const int tiles = (k + tile_size - 1) / std::max(1, tile_size);
  const double l2_cap = m_.l2_gbs > 0 ? m_.l2_gbs * tiles : std::numeric_limits<double>::infinity();
  double bw;
  if (bytes <= m_.l2_bytes * tiles)
    bw = l2_cap;
  else if (m_.l3_bytes > 0 && bytes <= m_.l3_bytes && m_.l3_gbs > 0)
    bw = std::min(l2_cap, m_.l3_gbs / std::max(1, executors));
  else if (m_.dram_gbs > 0)
    bw = std::min(l2_cap, m_.dram_gbs / std::max(1, executors));
  else
    bw = l2_cap;
  return std::isfinite(bw) && bw > 0 ? bytes / (bw * 1e3) : 0.0;
}

void OpCostCurves::add_measured(int k, std::span<const double> node_us) {
  std::vector<double>& v = measured_[k];
  v.assign(node_us.begin(), node_us.end());
  v.resize(g_ ? g_->num_nodes() : v.size(), 0.0);
  for (double& t : v) t /= m_.core_speed;
  source_ += " and " + std::to_string(k);
}

double OpCostCurves::node_us(size_t i, int k, int executors) const {
  if (g_->runs_alone(i)) return t1_[i];
  if (auto m = measured_.find(k); m != measured_.end()) return m->second[i];
  double t = t1_[i];
  if (k > 1) t = t * amdahl(op_class(i), k) + sync_us_ / m_.core_speed * std::log2(k);
  return std::max(t, bandwidth_floor_us(i, k, executors));
}

// ---- levels ----

std::vector<double> levels_from_costs(const ModelGraph& g, std::span<const double> cost) {
  // Node ids are a topological order (graph.h), so one backward pass.
  std::vector<double> level(g.num_nodes(), 0.0);
  for (size_t i = g.num_nodes(); i-- > 0;) {
    double best = 0;
    for (uint32_t j = g.succ_offsets[i]; j < g.succ_offsets[i + 1]; ++j)
      best = std::max(best, level[g.succ[j]]);
    level[i] = cost[i] + best;
  }
  return level;
}

std::vector<double> default_levels(const ModelGraph& g) {
  std::vector<double> c(g.num_nodes());
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = g.flops[i] + g.bytes[i];  // engine::default_node_costs
  return levels_from_costs(g, c);
}

// ---- the simulation ----

namespace {

constexpr double kEps = 1e-9;

struct SimExec {
  engine::ReadyHeap heap;
  double free_at = 0;  // end of the current op (and the small ops it ran inline)
  bool busy = false;
  bool idle = true;
  double op_ns = 0;  // running mean time per op, as the runtime keeps it across runs
};

class Simulation {
 public:
  Simulation(const ModelGraph& g, std::span<const double> t, std::span<const double> levels,
             const SimConfig& c, const DispatchCosts& d)
      : g_(g), t_(t), c_(c), d_(d) {
    const size_t n = g.num_nodes();
    pending_.assign(n, 0);
    for (uint32_t s : g.succ) ++pending_[s];
    initial_ = pending_;
    maker_.assign(n, -1);
    const engine::DagView dag{g.succ_offsets, g.succ, initial_};
    order_ = engine::ready_order(c.policy, dag, levels);
    engine::reset_ready_heap(central_, order_);
    execs_.resize(static_cast<size_t>(std::max(1, c.executors)));
    double mean = 0;
    size_t big = 0;
    for (size_t i = 0; i < n; ++i)
      if (!g.small[i]) mean += t[i], ++big;
    mean = big ? mean / static_cast<double>(big) : 0;
    for (auto& e : execs_) {
      e.heap.reset_like(central_);
      e.op_ns = (mean + d.local_op_us) * 1e3;
    }
    r_.trace.executors = c.executors;
    r_.trace.threads = c.threads;
    r_.trace.scheduler = engine::policy_name(c.policy);
  }

  SimResult run() {
    compute_bounds();
    if (c_.policy == Policy::kSequential)
      sequential();
    else if (c_.policy == Policy::kSharedQueue)
      shared_queue();
    else
      local_continuation();
    // The sleeping client's hand-over: waking executor 0 and being woken by it at the end.
    if (c_.client_sleeps && c_.policy != Policy::kSequential) r_.makespan_us += d_.client_wake_us;
    r_.trace.run_start_ns = 0;
    r_.trace.run_end_ns = ns(r_.makespan_us);
    return std::move(r_);
  }

 private:
  static uint64_t ns(double us) { return static_cast<uint64_t>(std::llround(us * 1e3)); }

  void compute_bounds() {
    std::vector<double> lv = levels_from_costs(g_, t_);
    for (size_t i = 0; i < lv.size(); ++i) {
      r_.critical_path_us = std::max(r_.critical_path_us, lv[i]);
      r_.work_us += t_[i];
    }
  }

  void span(uint32_t node, int executor, double start, double end) {
    r_.start_order.push_back(node);
    r_.trace.ops.push_back(
        {node, executor, g_.small[node] ? 1 : (executor < 0 ? 1 : c_.threads), ns(start), ns(end)});
    r_.makespan_us = std::max(r_.makespan_us, end);
  }
  void sched(engine::SchedulerSpan::Kind kind, int executor, double start, double end) {
    r_.trace.scheduler_spans.push_back({kind, executor, ns(start), ns(end)});
  }

  // Node `done` finished on `who` (-2: the bootstrap) at `t`: successors' pending counts; small
  // ones run inline right away on `who` (a stack, as run_one does); the others go to `sink`
  // (-1: the central heap, else who's heap; shared-queue collects them per executor too).
  // Returns when the inline ops end.
  double complete(uint32_t done, int who, double t, engine::ReadyHeap& sink) {
    std::vector<uint32_t> stack{done};
    bool first = true;
    while (!stack.empty()) {
      const uint32_t m = stack.back();
      stack.pop_back();
      if (!first) {
        const double start = t;
        t += t_[m] + (c_.policy == Policy::kSequential ? d_.seq_op_us : 0.0);
        span(m, who, start, t);
      }
      first = false;
      for (uint32_t j = g_.succ_offsets[m]; j < g_.succ_offsets[m + 1]; ++j) {
        const uint32_t s = g_.succ[j];
        if (--pending_[s] != 0) continue;
        maker_[s] = who;
        if (g_.small[s])
          stack.push_back(s);
        else
          sink.push(s);
      }
    }
    return t;
  }

  // Bootstrap: small start ops on the client thread (executor -2) from time 0; the non-small
  // start ops and what the small ones make ready go to the central heap.
  double bootstrap() {
    double t = 0;
    for (uint32_t i = 0; i < g_.num_nodes(); ++i) {
      if (initial_[i] != 0) continue;
      if (g_.small[i]) {
        const double start = t;
        t += t_[i];
        span(i, engine::kBootstrapExecutor, start, t);
        t = complete(i, engine::kBootstrapExecutor, t, central_);
      } else {
        central_.push(i);
      }
    }
    return t;
  }

  double handoff_cost(uint32_t node, int to) const {
    const int from = maker_[node];
    if (from < 0 || from == to) return 0;
    double h = d_.handoff_us;
    const auto& pk = c_.executor_package;
    if (!pk.empty() && pk[static_cast<size_t>(from)] != pk[static_cast<size_t>(to)])
      h *= d_.cross_package;
    return h;
  }

  void sequential() {
    double t = 0;
    for (uint32_t i = 0; i < g_.num_nodes(); ++i) {
      const double start = t;
      t += t_[i] + d_.seq_op_us;
      span(i, 0, start, t);
    }
  }

  size_t idle_count() const {
    size_t k = 0;
    for (const auto& e : execs_) k += e.idle ? 1 : 0;
    return k;
  }

  // Starts e's best op at t (publishing surplus first when someone else is idle).
  void start_next(int x, double t) {
    SimExec& e = execs_[static_cast<size_t>(x)];
    const uint32_t node = e.heap.pop();
    e.idle = false;
    if (execs_.size() > 1 && !e.heap.empty() && idle_count() > 0) {
      const size_t give = engine::surplus_to_publish(e.heap.size(), c_.report_capacity);
      if (engine::worth_publishing(give, e.op_ns)) {
        for (size_t i = 0; i < give && !e.heap.empty(); ++i) central_.push(e.heap.pop());
        offer_central(t, /*published=*/true);
      }
    }
    const double start = t + d_.local_op_us;
    const double end = start + t_[node];
    span(node, x, start, end);
    e.busy = true;
    e.free_at = end;
    current_[static_cast<size_t>(x)] = node;
    e.op_ns = 0.75 * e.op_ns + 0.25 * (end - t) * 1e3;
  }

  // Idle executor x takes `count` ops of the central heap (best first) at t and starts.
  void take(int x, size_t count, double t) {
    SimExec& e = execs_[static_cast<size_t>(x)];
    double h = 0;
    for (size_t i = 0; i < count && !central_.empty(); ++i) {
      const uint32_t node = central_.pop();
      const double c = handoff_cost(node, x);
      if (c > 0) ++r_.handoffs;
      h = std::max(h, c);
      e.heap.push(node);
    }
    e.idle = false;
    const double t1 = t + d_.step_us + h;
    sched(engine::SchedulerSpan::kHandOff, x, t, t1);
    start_next(x, t1);
  }

  // The central heap's ops go to idle executors: after a publication with a dedicated
  // scheduler one op each (the scheduler's step); otherwise each idle executor steps itself and
  // claims its share.
  void offer_central(double t, bool published) {
    for (size_t x = 0; x < execs_.size() && !central_.empty(); ++x) {
      if (!execs_[x].idle) continue;
      const size_t share =
          published && c_.scheduler_core ? 1 : engine::central_share(central_.size(), idle_count());
      take(static_cast<int>(x), share, t);
    }
  }

  void local_continuation() {
    current_.assign(execs_.size(), 0);
    double t = bootstrap() + d_.run_start_us;
    sched(engine::SchedulerSpan::kStep, -1, 0, t);
    // The first step (step(nullptr)): one op to each idle executor's inbox, best first.
    for (size_t x = 0; x < execs_.size() && !central_.empty(); ++x) {
      t += d_.step_us;
      take(static_cast<int>(x), 1, t - d_.step_us);
    }
    while (true) {
      double now = std::numeric_limits<double>::infinity();
      for (const auto& e : execs_)
        if (e.busy) now = std::min(now, e.free_at);
      if (!std::isfinite(now)) break;
      std::vector<int> freed;
      for (size_t x = 0; x < execs_.size(); ++x) {
        SimExec& e = execs_[x];
        if (!e.busy || e.free_at > now + kEps) continue;
        const double end = current_[x] == kInlineDone
                               ? now
                               : complete(current_[x], static_cast<int>(x), now, e.heap);
        if (end > now + kEps) {  // small ops ran inline: busy until they end
          e.free_at = end;
          current_[x] = kInlineDone;
          continue;
        }
        e.busy = false;
        freed.push_back(static_cast<int>(x));
      }
      for (int x : freed)
        if (execs_[static_cast<size_t>(x)].heap.empty()) execs_[static_cast<size_t>(x)].idle = true;
      for (int x : freed)
        if (!execs_[static_cast<size_t>(x)].heap.empty() && !execs_[static_cast<size_t>(x)].busy)
          start_next(x, now);
      offer_central(now, false);
    }
    if (!central_.empty())
      r_.makespan_us = std::numeric_limits<double>::infinity();  // unreachable ops
  }

  void shared_queue() {
    current_.assign(execs_.size(), 0);
    std::deque<uint32_t> q;
    double lock_free = 0;
    double t = bootstrap() + d_.run_start_us;
    while (!central_.empty()) q.push_back(central_.pop());  // fifo keys: id order
    auto pop = [&](int x, double at) {
      SimExec& e = execs_[static_cast<size_t>(x)];
      const uint32_t node = q.front();
      q.pop_front();
      const double acq = std::max(at, lock_free);
      lock_free = acq + d_.sq_lock_us;
      const double h = handoff_cost(node, x);
      if (h > 0) ++r_.handoffs;
      const double start = acq + d_.sq_op_us + h;
      const double end = start + t_[node];
      span(node, x, start, end);
      e.busy = true;
      e.idle = false;
      e.free_at = end;
      current_[static_cast<size_t>(x)] = node;
    };
    for (size_t x = 0; x < execs_.size() && !q.empty(); ++x) pop(static_cast<int>(x), t);
    while (true) {
      double now = std::numeric_limits<double>::infinity();
      for (const auto& e : execs_)
        if (e.busy) now = std::min(now, e.free_at);
      if (!std::isfinite(now)) break;
      std::vector<int> freed;
      for (size_t x = 0; x < execs_.size(); ++x) {
        SimExec& e = execs_[x];
        if (!e.busy || e.free_at > now + kEps) continue;
        double end = now;
        if (current_[x] != kInlineDone)
          end = complete(current_[x], static_cast<int>(x), now, e.heap);
        if (end > now + kEps) {
          e.free_at = end;
          current_[x] = kInlineDone;
          continue;
        }
        if (!e.heap.empty()) {  // sq_push: the ready ops in heap order, under the lock
          const double acq = std::max(now, lock_free);
          lock_free = acq + d_.sq_lock_us;
          while (!e.heap.empty()) q.push_back(e.heap.pop());
        }
        e.busy = false;
        e.idle = true;
        freed.push_back(static_cast<int>(x));
      }
      for (int x : freed)
        if (!q.empty()) pop(x, now);
      for (size_t x = 0; x < execs_.size() && !q.empty(); ++x)
        if (execs_[x].idle) pop(static_cast<int>(x), now);
    }
  }

  static constexpr uint32_t kInlineDone = std::numeric_limits<uint32_t>::max();

  const ModelGraph& g_;
  std::span<const double> t_;
  SimConfig c_;
  DispatchCosts d_;
  std::vector<uint32_t> pending_, initial_;
  std::vector<int> maker_;
  engine::ReadyOrder order_;
  engine::ReadyHeap central_;
  std::vector<SimExec> execs_;
  std::vector<uint32_t> current_;
  SimResult r_;
};

}  // namespace

SimResult simulate_schedule(const ModelGraph& g, std::span<const double> node_us,
                            std::span<const double> levels, const SimConfig& c,
                            const DispatchCosts& d) {
  return Simulation(g, node_us, levels, c, d).run();
}

Result<std::vector<SimPrediction>> simulate_configs(const ModelGraph& g, const OpCostCurves& costs,
                                                    std::span<const double> levels,
                                                    const engine::Topology& topo,
                                                    std::span<const Config> configs,
                                                    std::span<const engine::Policy> policies,
                                                    const DispatchCosts& d) {
  std::vector<SimPrediction> out;
  for (const Config& cfg : configs) {
    engine::PlacementRequest req;
    req.executors = cfg.executors;
    req.threads = cfg.threads;
    auto placed = engine::place_executors(topo, req);
    if (!placed.is_ok()) return placed.status().with_context(cfg.name());
    SimConfig sc;
    sc.executors = cfg.executors;
    sc.threads = cfg.threads;
    sc.scheduler_core = placed->scheduler.has_value();
    for (const auto& team : placed->teams)
      sc.executor_package.push_back(team.package >= 0 ? team.package
                                                      : topo.core(team.cores.front()).package);
    std::vector<double> t(g.num_nodes());
    for (size_t i = 0; i < t.size(); ++i) t[i] = costs.node_us(i, cfg.threads, cfg.executors);
    for (Policy p : policies) {
      if (p == Policy::kSequential && cfg.executors != 1) continue;
      sc.policy = p;
      sc.client_sleeps =
          engine::client_role(cfg.executors, cfg.threads, p, sc.scheduler_core).sleeps;
      SimPrediction pr;
      pr.config = cfg;
      pr.config.scheduler = engine::policy_name(p);
      pr.policy = p;
      pr.result = simulate_schedule(g, t, levels, sc, d);
      out.push_back(std::move(pr));
    }
  }
  return out;
}

}  // namespace graphi::profiler
