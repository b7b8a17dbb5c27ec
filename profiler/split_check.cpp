#include "profiler/split_check.h"

#include <cstdio>
#include <cstdlib>

#include "engine/memory_plan.h"
#include "engine/omp_oversubscription.h"
#include "ops/choice_cache.h"
#include "ops/rnn/team_exchange.h"
#include "profiler/interleaved_timing.h"

namespace graphi::profiler {

namespace {

constexpr const char* kFile = "split_check.json";
constexpr const char* kWhat = "split check";
// Longer runs are not measured: the model's op costs decide there, and the measurement (>= 5
// runs of each) would lengthen the load by seconds.
constexpr double kMaxPredictedMs = 200;
constexpr double kMaxMeasuredMs = 50;

// The code that measured: a change of the measurement bumps it.
std::string signature() { return ops::machine_signature() + "|split check 1"; }

void remember(const std::string& key, bool contender_won, nlohmann::json entry) {
  const std::string path = ops::choice_cache_path(kFile);
  if (path.empty()) return;
  entry["contender"] = contender_won;
  Status st = ops::store_choice(path, key + "|" + signature(), std::move(entry));
  if (!st.is_ok())
    std::fprintf(stderr, "graphi: warning: cannot write the split check cache %s: %s\n",
                 path.c_str(), st.message().c_str());
}

}  // namespace

Result<bool> split_check_enabled() {
  const char* e = std::getenv("GRAPHI_SPLIT_CHECK");
  const std::string v = e && *e ? e : "auto";
  if (v == "auto") return true;
  if (v == "off") return false;
  return Status::invalid_argument("GRAPHI_SPLIT_CHECK '" + v + "': expected auto or off");
}

std::string split_check_key(const std::string& graph_hash, const std::string& topology,
                            const Config& chosen, const Config& contender) {
  std::string key = graph_hash + "|" + topology + "|" + chosen.name() + " vs " + contender.name();
  // A team's fork/join and the executors' hand-offs cost what the cores' exchange costs, which a
  // VM's host changes by moving its vCPUs.
  if (chosen.cores() >= 2 || contender.cores() >= 2) {
    const std::string cls = ops::rnn_wcs::exchange_class(ops::rnn_wcs::team_round_trip_ns());
    if (!cls.empty()) key += "|exchange " + cls;
  }
  return key;
}

std::optional<bool> cached_split_check(const std::string& key) {
  const std::string path = ops::choice_cache_path(kFile);
  std::optional<nlohmann::json> e = ops::load_choice(path, key + "|" + signature(), kWhat);
  if (!e) return std::nullopt;
  if (!e->is_object() || !e->contains("contender") || !(*e)["contender"].is_boolean()) {
    ops::warn_choice_cache(path, kWhat, "entry '" + key + "' is malformed");
    return std::nullopt;
  }
  return (*e)["contender"].get<bool>();
}

void check_split(const std::shared_ptr<const graph::Graph>& g, PlanChoice& choice,
                 engine::SessionOptions& options, std::unique_ptr<engine::Session>& session,
                 std::string* message) {
  if (message) message->clear();
  if (!choice.contender || !session || choice.predicted_ms > kMaxPredictedMs) return;
  const Config contender = *choice.contender;
  choice.contender.reset();
  const std::string chosen_name =
      Config{options.executors, options.threads, options.scheduler}.name();
  auto keep = [&](const std::string& why) { remember(choice.check_key, false, {{"why", why}}); };
  const engine::NamedTensors zeros = zero_inputs(*g);
  if (!session->run(zeros).is_ok()) return keep("a run on zero inputs failed");
  const double start = now_ms();  // the second run: the first pays for first touches
  if (!session->run(zeros).is_ok()) return keep("a run on zero inputs failed");
  const double warm_ms = now_ms() - start;
  if (warm_ms > kMaxMeasuredMs) return;  // not remembered: a later load may run it faster
  engine::SessionOptions so = options;
  so.executors = contender.executors;
  so.threads = contender.threads;
  so.scheduler = contender.scheduler;
  // A memory budget holds for the two Sessions together while both live: the contender gets
  // what the first one's arena leaves (the weights are shared).
  if (options.max_memory) {
    const uint64_t held = session->memory().peak_bytes;
    if (held >= options.max_memory) return keep("no memory budget left for " + contender.name());
    so.max_memory = options.max_memory - held;
  }
  Result<std::unique_ptr<engine::Session>> other = [&] {
    engine::QuietOmpClaims quiet;  // beside `session` only until one of the two is dropped
    return engine::Session::create(g, so);
  }();
  if (!other) return keep(contender.name() + " does not compile: " + other.status().message());
  InterleavedTimingOptions opt;
  opt.min_blocks = 5;
  opt.min_total_ms = 100;
  opt.max_rounds = 100;
  opt.block_ms = 2;
  opt.warmup_ms = 30;
  opt.a_warm = true;
  Result<InterleavedTiming> t =
      time_interleaved([&] { return session->run(zeros).status(); },
                       [&] { return (*other)->run(zeros).status(); }, opt);
  if (!t) return keep("a run on zero inputs failed: " + t.status().message());
  const bool won = !t->disturbed && t->b_ms <= 0.95 * t->a_ms;
  if (message)
    *message = "graphi: plan auto: " + (won ? contender.name() : chosen_name) + ", " +
               three_digits(won ? t->b_ms : t->a_ms) + " ms against " +
               three_digits(won ? t->a_ms : t->b_ms) + " for " +
               (won ? chosen_name + ", the cost model's choice" : contender.name()) +
               " (measured in " + three_digits(t->elapsed_s) + " s" +
               (t->disturbed ? "; other processes held " + three_digits(100 * t->others_share) +
                                   "% of the CPUs meanwhile: kept, measured again next time"
                             : ", once per model and machine") +
               ")";
  if (!t->disturbed)
    remember(choice.check_key, won, {{"chosen_ms", t->a_ms}, {"contender_ms", t->b_ms}});
  if (!won) return;
  session = std::move(other).value();
  options.executors = so.executors;  // the split only: the budget stays the caller's
  options.threads = so.threads;
  options.scheduler = so.scheduler;
  choice.options.executors = so.executors;
  choice.options.threads = so.threads;
  choice.options.scheduler = so.scheduler;
  choice.source = "measured";
}

}  // namespace graphi::profiler
