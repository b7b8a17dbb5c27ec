#include "profiler/batch_split_choice.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "engine/model_loader.h"
#include "engine/omp_oversubscription.h"
#include "graph/batch_split.h"
#include "ops/choice_cache.h"
#include "ops/rnn/team_exchange.h"
#include "profiler/interleaved_timing.h"
#include "profiler/plan_cache.h"
#include "profiler/split_check.h"

namespace graphi::profiler {

namespace {

constexpr const char* kFile = "batch_split.json";
constexpr const char* kWhat = "batch split";
constexpr double kMaxMeasuredBatchMs = 1000;

// The code that measured: a change of the measurement or the slicing bumps it.
std::string signature() { return ops::machine_signature() + "|batch split 1"; }

// Stores the verdict for `key` (this machine's signature appended); an error when there is no
// cache directory or it cannot be written.
Status store_verdict(const std::string& key, nlohmann::json entry) {
  const std::string path = ops::choice_cache_path(kFile);
  if (path.empty()) return Status::invalid_argument("no cache directory");
  Status st = ops::store_choice(path, key + "|" + signature(), std::move(entry));
  return st.is_ok() ? st : st.with_context(path);
}

}  // namespace

Result<BatchSplitPolicy> parse_batch_split(const std::string& value) {
  std::string v = value;
  if (v.empty()) {
    const char* e = std::getenv("GRAPHI_BATCH_SPLIT");
    v = e && *e ? e : "auto";
  }
  if (v == "auto") return BatchSplitPolicy::kAuto;
  if (v == "off") return BatchSplitPolicy::kOff;
  if (v == "on") return BatchSplitPolicy::kOn;
  return Status::invalid_argument("batch split '" + v + "': expected auto, off or on" +
                                  (value.empty() ? " (GRAPHI_BATCH_SPLIT)" : ""));
}

std::optional<BatchSplitVerdict> cached_batch_split(const std::string& key) {
  const std::string path = ops::choice_cache_path(kFile);
  std::optional<nlohmann::json> e = ops::load_choice(path, key + "|" + signature(), kWhat);
  if (!e) return std::nullopt;
  if (!e->is_object() || !e->contains("slices") || !(*e)["slices"].is_boolean()) {
    ops::warn_choice_cache(path, kWhat, "entry '" + key + "' is malformed");
    return std::nullopt;
  }
  BatchSplitVerdict v;
  v.slices = (*e)["slices"].get<bool>();
  v.source = "cached";
  if (e->contains("batch_ms") && (*e)["batch_ms"].is_number())
    v.batch_ms = (*e)["batch_ms"].get<double>();
  if (e->contains("slices_ms") && (*e)["slices_ms"].is_number())
    v.slices_ms = (*e)["slices_ms"].get<double>();
  return v;
}

Result<BatchSplitVerdict> measure_batch_split(const std::string& key, int64_t batch, int64_t slice,
                                              const std::function<Status()>& run_batch,
                                              const std::function<Status()>& run_slices) {
  const double start = now_ms();
  GRAPHI_RETURN_IF_ERROR(run_batch());
  // A batch that takes more than a second would make the measurement (>= 4 runs of each) a
  // load of many seconds: whole, remembered, not measured. Slices pay through the caches,
  // which a batch that long has long overflowed either way.
  const double first_ms = now_ms() - start;
  if (first_ms > kMaxMeasuredBatchMs) {
    BatchSplitVerdict v;
    v.batch_ms = first_ms;
    v.source = "measured";
    v.message = "batch " + std::to_string(batch) + " whole: one batch takes " +
                three_digits(first_ms / 1e3) + " s, too long to measure slices of " +
                std::to_string(slice);
    (void)store_verdict(key, {{"slices", false}, {"batch_ms", first_ms}, {"why", v.message}});
    return v;
  }
  // A long measurement ahead (>= 3 rounds of both): said first, as a long load should be.
  if (first_ms > 250)
    std::fprintf(stderr,
                 "graphi: measuring batch %lld whole against slices of %lld (%.1f s per batch; "
                 "once per model and machine)...\n",
                 static_cast<long long>(batch), static_cast<long long>(slice),
                 (now_ms() - start) / 1e3);
  // Other processes on the CPUs during the timed rounds: the slices (eight times the ops and
  // their team barriers) suffer more than the batch (DenseNet-like b8 beside one busy loop:
  // 229 against 113 ms, quiet 38 against 48), so a verdict taken then (`disturbed`) would
  // outlive the load in the cache.
  InterleavedTimingOptions opt;
  opt.a_warm = true;
  GRAPHI_ASSIGN_OR_RETURN(InterleavedTiming t, time_interleaved(run_batch, run_slices, opt));
  const bool disturbed = t.disturbed;
  const double others_share = t.others_share;
  BatchSplitVerdict v;
  v.batch_ms = t.a_ms;
  v.slices_ms = t.b_ms;
  v.slices = !disturbed && v.slices_ms <= 0.95 * v.batch_ms;
  v.source = disturbed ? "disturbed" : "measured";
  v.message = "batch " + std::to_string(batch) +
              (v.slices ? " in slices of " : " whole, not in slices of ") + std::to_string(slice) +
              ": " + three_digits(v.slices ? v.slices_ms : v.batch_ms) + " ms against " +
              three_digits(v.slices ? v.batch_ms : v.slices_ms) + " (measured in " +
              three_digits((now_ms() - start) / 1e3) + " s" +
              (disturbed ? "; other processes held " + three_digits(100 * others_share) +
                               "% of the CPUs meanwhile: whole, measured again next time"
                         : "") +
              ")";
  if (!disturbed && !ops::choice_cache_path(kFile).empty()) {
    Status st = store_verdict(
        key, {{"slices", v.slices}, {"batch_ms", v.batch_ms}, {"slices_ms", v.slices_ms}});
    if (!st.is_ok())
      std::fprintf(stderr, "graphi: warning: cannot write the batch split cache: %s\n",
                   st.message().c_str());
  }
  return v;
}

Result<std::unique_ptr<engine::BatchSlices>> batch_in_slices(
    const std::string& path, graph::ImportOptions import, bool optimize, BatchSplitPolicy policy,
    const std::shared_ptr<const graph::Graph>& imported, const PlanRequest& plan,
    const engine::SessionOptions& session_options, engine::Session& whole, std::string* message) {
  using Slices = std::unique_ptr<engine::BatchSlices>;
  if (message) message->clear();
  if (policy == BatchSplitPolicy::kOff || !imported) return Slices();
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".graphi") return Slices();  // static shapes: no import for another batch
  // Every input carries the same batch N > 1 on dim 0.
  int64_t batch = 0;
  for (graph::ValueId id : imported->inputs()) {
    const Shape& s = imported->value(id).desc.shape;
    if (s.empty() || s[0] < 2 || (batch != 0 && s[0] != batch)) return Slices();
    batch = s[0];
  }
  if (batch < 2) return Slices();
  constexpr int64_t kSlice = 1;
  std::string key = graph_content_hash(*imported) + "|" +
                    std::to_string(session_options.executors) + "x" +
                    std::to_string(session_options.threads) + "|slice " + std::to_string(kSlice);
  // The verdict holds for the cores' exchange latency it was measured at, as the RNN schedules'
  // (ops/rnn/team_exchange.h): the slices run eight times the team barriers, and on the Zen 5
  // guest DenseNet-like b8 in slices measured 37-39 against 47-52 ms whole with the vCPUs near
  // (~100 ns round trip), 46-47 against 47-48 with them far (~500 ns).
  if (session_options.executors * session_options.threads >= 2) {
    const std::string cls = ops::rnn_wcs::exchange_class(ops::rnn_wcs::team_round_trip_ns());
    if (!cls.empty()) key += "|exchange " + cls;
  }
  std::optional<BatchSplitVerdict> cached;
  if (policy == BatchSplitPolicy::kAuto) {
    cached = cached_batch_split(key);
    if (cached && !cached->slices) return Slices();
  }
  // The batch stays whole: a property of the model (not separable, not compilable or not
  // runnable for a slice), remembered under auto so later loads do not import it twice; said on
  // stderr under on. Never an error of the load: the whole batch runs as it would without this.
  auto keep_whole = [&](const std::string& why) {
    if (policy == BatchSplitPolicy::kAuto) {
      (void)store_verdict(key, {{"slices", false}, {"why", why}});
    } else if (message) {
      *message = "graphi: batch " + std::to_string(batch) + " runs whole: " + why;
    }
    return Slices();
  };
  import.batch = kSlice;
  import.progress = nullptr;
  Result<std::shared_ptr<const graph::Graph>> sliced = engine::load_model(path, import);
  if (!sliced)
    return keep_whole("the graph does not import for one sample: " + sliced.status().message());
  if (Status st = graph::check_batch_split(*imported, **sliced, batch, kSlice); !st.is_ok())
    return keep_whole(st.message());
  std::shared_ptr<const graph::Graph> g = *sliced;
  if (optimize) {
    Result<engine::OptimizedGraph> o = engine::optimize_graph(g);
    if (!o) return keep_whole("the passes fail for one sample: " + o.status().message());
    g = o->graph;
  }
  Result<PlanChoice> chosen = choose_plan(*g, plan);
  if (!chosen) return keep_whole("no plan for one sample: " + chosen.status().message());
  engine::SessionOptions so = chosen->options;
  so.ring_capacity = session_options.ring_capacity;
  so.rnn_weights = session_options.rnn_weights;
  so.max_memory = session_options.max_memory;
  Result<std::unique_ptr<engine::Session>> s = [&] {
    // Beside `whole` only until one of the two is dropped below or by the caller.
    engine::QuietOmpClaims quiet;
    return engine::Session::create(g, so);
  }();
  if (!s) return keep_whole("one sample does not compile: " + s.status().message());
  // One sample's ops are smaller: its quick choice checked as the whole batch's is.
  check_split(g, *chosen, so, *s, nullptr);
  // The slices take the whole graph's inputs and outputs: the graph the caller's Session runs.
  Result<Slices> made = engine::BatchSlices::create(whole.graph(), std::move(*s), batch, kSlice);
  if (!made) return keep_whole(made.status().message());
  Slices slices = std::move(made).value();
  if (policy == BatchSplitPolicy::kOn || cached) {
    if (message && policy == BatchSplitPolicy::kOn)
      *message = "graphi: batch " + std::to_string(batch) + " in slices of " +
                 std::to_string(kSlice) + " (batch split on)";
    return slices;
  }
  const engine::NamedTensors zeros = zero_inputs(whole.graph());
  Result<BatchSplitVerdict> v = measure_batch_split(
      key, batch, kSlice, [&] { return whole.run(zeros).status(); },
      [&] { return slices->run(zeros).status(); });
  if (!v) return keep_whole("a run on zero inputs failed: " + v.status().message());
  if (message) *message = "graphi: " + v->message;
  if (!v->slices) return Slices();
  return slices;
}

}  // namespace graphi::profiler
