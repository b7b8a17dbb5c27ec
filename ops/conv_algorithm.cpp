#include "ops/conv_algorithm.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "ops/choice_cache.h"
#include "ops/registry.h"  // verbose_dispatch

namespace graphi::ops {

namespace {

using onednn::ConvAlgorithm;
using onednn::ConvSpec;

// Verdicts of this process, by shape key.
std::mutex& memo_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, ConvAlgorithm>& memo() {
  static std::map<std::string, ConvAlgorithm> m;
  return m;
}

std::string shape_key(const ConvSpec& s, int team_size, const char* what) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s n%lld c%lld %lldx%lld oc%lld %lldx%lld k%lldx%lld s%lldx%lld d%lldx%lld "
                "p%lld,%lld,%lld,%lld g%lld b%d a%s z%d blk%d,%d cw%d st%d t%d",
                what, (long long)s.n, (long long)s.c, (long long)s.h, (long long)s.w,
                (long long)s.oc, (long long)s.oh, (long long)s.ow, (long long)s.kh, (long long)s.kw,
                (long long)s.stride_h, (long long)s.stride_w, (long long)s.dilation_h,
                (long long)s.dilation_w, (long long)s.pad_top, (long long)s.pad_left,
                (long long)s.pad_bottom, (long long)s.pad_right, (long long)s.group,
                int(s.has_bias), s.post.to_string().c_str(), int(s.sum_input), s.src_block,
                s.dst_block, int(s.const_weights != nullptr), int(s.staged), team_size);
  return buf;
}

// The shapes oneDNN 2.6 has Winograd kernels for (it may still decline, e.g. for the channel
// counts or the ISA: then its descriptor creation fails and direct stays).
bool winograd_shape(const ConvSpec& s) {
  return s.kh == 3 && s.kw == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dilation_h == 1 &&
         s.dilation_w == 1 && s.group == 1;
}

constexpr double kMinMeasureMs = 40.0;

// The verdicts on disk (ops/choice_cache.h), valid for this machine and oneDNN build; bump the
// version when the measurement changes in a way that could flip them.
// 2: entries say whether the measurement was steady (below); version 1's entries were kept
// whatever the noise (one, measured while the host ran ~9x slow, had a 128-channel 28x28 3x3
// conv run direct at 2 threads and ResNet-18 take 14.9 ms instead of 11.1), so they are dropped.
constexpr int kCacheVersion = 2;
constexpr const char* kCacheWhat = "convolution algorithm";

std::string cache_signature() {
  static const std::string sig = machine_signature() + "|" + onednn::version_string() + "|conv " +
                                 std::to_string(kCacheVersion);
  return sig;
}

// The verdict stored for `key`, if any (a malformed entry warns and is ignored; an unsteady one
// is measured again, and its new measurement replaces it).
std::optional<ConvAlgorithm> cached_verdict(const std::string& path, const std::string& key) {
  const std::optional<nlohmann::json> e = load_choice(path, key, kCacheWhat);
  if (!e) return std::nullopt;
  if (e->is_object() && e->contains("steady") && (*e)["steady"].is_boolean() &&
      !(*e)["steady"].get<bool>())
    return std::nullopt;
  if (e->is_object() && e->contains("algorithm") && (*e)["algorithm"].is_string()) {
    const std::string a = (*e)["algorithm"].get<std::string>();
    if (a == "direct") return ConvAlgorithm::kDirect;
    if (a == "winograd") return ConvAlgorithm::kWinograd;
  }
  warn_choice_cache(path, kCacheWhat, "entry '" + key + "' is malformed");
  return std::nullopt;
}

// Time spent measuring in this process (ms), against the budget below.
std::atomic<double>& measured_ms() {
  static std::atomic<double> ms{0.0};
  return ms;
}

// GRAPHI_CONV_MEASURE_BUDGET_S (default 20 s): once the measurements of a process have taken
// that long, the remaining shapes use direct (a model of ~30-200 distinct 3x3 shapes fits; the
// CNN benchmark's worker, ten models at two batch sizes and two team sizes, took ~10 s with the
// confirming batches and had run out of 10 s before its last model).
double measure_budget_ms() {
  static const double ms = [] {
    const char* e = std::getenv("GRAPHI_CONV_MEASURE_BUDGET_S");
    char* end = nullptr;
    const double v = e && *e ? std::strtod(e, &end) : 20.0;
    if (e && *e && (!end || *end || !(v >= 0))) {
      std::fprintf(stderr,
                   "graphi: warning: GRAPHI_CONV_MEASURE_BUDGET_S='%s' is not a number of "
                   "seconds >= 0; using 20\n",
                   e);
      return 20e3;
    }
    return v * 1e3;
  }();
  return ms;
}

// Times primitives a and b (the best of at least 3 interleaved rounds spread over >= 40 ms: a
// short burst of other load, e.g. another process's spinning pool that made both 3x3 convs of
// inception b1 take ~8 ms instead of 0.8 / 0.3 for three rounds, does not decide) and charges
// the time to this process's measuring budget. Fewer than 2 times: not measurable here (inside
// a parallel region, an oversized team).
// `confirm`: a confirming batch (below), 2 interleaved rounds without the 40 ms floor, so that
// checking a verdict costs a fraction of measuring it (one process measuring a dozen CNNs, a
// benchmark's, stays within the budget).
std::vector<double> measure_pair(const onednn::Primitive* a, const onednn::Primitive* b,
                                 bool confirm = false) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> ms =
      onednn::best_run_ms({a, b}, confirm ? 2 : 3, confirm ? 0.0 : kMinMeasureMs, 400);
  const double add =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (double cur = measured_ms().load(); !measured_ms().compare_exchange_weak(cur, cur + add);) {
  }
  return ms;
}

// Writes a verdict to the disk cache; a cache that cannot be written warns once per process.
void store_verdict(const std::string& path, const std::string& key, nlohmann::json entry) {
  if (path.empty()) return;
  const Status st = store_choice(path, key, std::move(entry));
  static std::atomic<bool> warned{false};
  if (!st.is_ok() && !warned.exchange(true))
    std::fprintf(stderr, "graphi: warning: convolution algorithm cache not written: %s\n",
                 st.to_string().c_str());
}

}  // namespace

void forget_conv_algorithm_verdicts() {
  std::lock_guard<std::mutex> lock(memo_mutex());
  memo().clear();
}

ConvAlgorithmPolicy conv_algorithm_policy() {
  static const ConvAlgorithmPolicy p = [] {
    const char* e = std::getenv("GRAPHI_CONV_ALGORITHM");
    const std::string v = e ? e : "";
    if (v.empty() || v == "auto") return ConvAlgorithmPolicy::kAuto;
    if (v == "direct") return ConvAlgorithmPolicy::kDirect;
    if (v == "winograd") return ConvAlgorithmPolicy::kWinograd;
    std::fprintf(stderr,
                 "graphi: warning: GRAPHI_CONV_ALGORITHM='%s' is not auto, direct or winograd; "
                 "using auto\n",
                 v.c_str());
    return ConvAlgorithmPolicy::kAuto;
  }();
  return p;
}

Result<std::unique_ptr<onednn::Primitive>> make_fastest_conv(ConvSpec spec, int team_size,
                                                             bool allow_ref,
                                                             ConvPrimitiveMaker make,
                                                             const char* what) {
  spec.algorithm = ConvAlgorithm::kDirect;
  const ConvAlgorithmPolicy policy = conv_algorithm_policy();
  if (policy == ConvAlgorithmPolicy::kDirect || !winograd_shape(spec))
    return make(spec, team_size, allow_ref);
  if (spec.sum_input) {
    // oneDNN 2.6's Winograd kernels take no binary post-op: when Winograd wins for the bare
    // convolution, it is returned without the sum and the activation (sums_input() false: the
    // caller adds Z and applies the activation after it); else direct with both post-ops.
    ConvSpec bare = spec;
    bare.sum_input = false;
    bare.post = {};
    Result<std::unique_ptr<onednn::Primitive>> p =
        make_fastest_conv(bare, team_size, allow_ref, make, what);
    if (p.is_ok() && (*p)->impl_name().find("wino") != std::string::npos) return p;
    return make(spec, team_size, allow_ref);
  }
  const std::string key = shape_key(spec, team_size, what);
  {
    std::lock_guard<std::mutex> lock(memo_mutex());
    auto it = memo().find(key);
    if (it != memo().end()) {
      ConvSpec chosen = spec;
      chosen.algorithm = it->second;
      return make(chosen, team_size, allow_ref);
    }
  }
  // Measured by an earlier process on this machine.
  const std::string path = choice_cache_path("conv_algorithms.json");
  const std::string disk_key = key + "|" + cache_signature();
  if (policy == ConvAlgorithmPolicy::kAuto) {
    if (std::optional<ConvAlgorithm> a = cached_verdict(path, disk_key)) {
      ConvSpec chosen = spec;
      chosen.algorithm = *a;
      Result<std::unique_ptr<onednn::Primitive>> p = make(chosen, team_size, allow_ref);
      if (p.is_ok()) {
        std::lock_guard<std::mutex> lock(memo_mutex());
        memo()[key] = *a;
      }
      if (verbose_dispatch())
        std::fprintf(stderr, "graphi: %s: %s (cached in %s)\n", key.c_str(),
                     *a == ConvAlgorithm::kWinograd ? "winograd" : "direct", path.c_str());
      if (p.is_ok() || *a == ConvAlgorithm::kDirect) return p;
      // The cached Winograd primitive cannot be made here (e.g. GRAPHI_SIMD caps the ISA).
      return make(spec, team_size, allow_ref);
    }
  }
  // Out of measuring budget: direct, without making the Winograd primitive.
  const double spent = measured_ms().load();
  if (policy == ConvAlgorithmPolicy::kAuto && spent >= measure_budget_ms()) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      std::fprintf(stderr,
                   "graphi: the convolution algorithm measurements took %.1f s "
                   "(GRAPHI_CONV_MEASURE_BUDGET_S=%g): the remaining 3x3 shapes run direct\n",
                   spent / 1e3, measure_budget_ms() / 1e3);
    return make(spec, team_size, allow_ref);  // not remembered: a later process measures it
  }
  ConvSpec wspec = spec;
  wspec.algorithm = ConvAlgorithm::kWinograd;
  // Never oneDNN's reference Winograd: only a jit kernel can win.
  Result<std::unique_ptr<onednn::Primitive>> wino = make(wspec, team_size, false);
  auto remember = [&](ConvAlgorithm a) {
    std::lock_guard<std::mutex> lock(memo_mutex());
    memo()[key] = a;
  };
  if (!wino.is_ok()) {
    remember(ConvAlgorithm::kDirect);
    return make(spec, team_size, allow_ref);
  }
  if (policy == ConvAlgorithmPolicy::kWinograd) {
    remember(ConvAlgorithm::kWinograd);
    return wino;
  }
  Result<std::unique_ptr<onednn::Primitive>> direct = make(spec, team_size, allow_ref);
  if (!direct.is_ok()) return wino;
  // Long measurements are announced (a large training step has dozens of shapes).
  if (spent >= 1000.0) {
    static std::atomic<bool> announced{false};
    if (!announced.exchange(true))
      std::fprintf(stderr,
                   "graphi: measuring direct against Winograd per convolution shape "
                   "(GRAPHI_CONV_ALGORITHM=direct skips it)...\n");
  }
  // Batches of interleaved rounds until two in a row agree (the first one >= 40 ms, then short
  // confirming ones): the same verdict, and each candidate's best time within 25% of the batch
  // before (a host whose speed swings by several
  // times within a second, as shared VMs do, can slow one candidate's rounds more than the
  // other's even interleaved). At most 3 batches; the verdict is then the one of the best times
  // over all of them, stored as unsteady when no two agreed (a later process measures again).
  std::vector<double> ms = measure_pair(direct->get(), wino->get());
  if (ms.size() != 2) return direct;  // not measurable here: direct, not remembered
  bool steady = false;
  for (int batch = 1; batch < 3 && !steady; ++batch) {
    const std::vector<double> again = measure_pair(direct->get(), wino->get(), true);
    if (again.size() != 2) break;
    steady = (again[1] < 0.95 * again[0]) == (ms[1] < 0.95 * ms[0]);
    for (int k = 0; k < 2; ++k) {
      steady = steady && std::max(ms[k], again[k]) <= 1.25 * std::min(ms[k], again[k]);
      ms[k] = std::min(ms[k], again[k]);
    }
  }
  const bool use_wino = ms[1] < 0.95 * ms[0];
  remember(use_wino ? ConvAlgorithm::kWinograd : ConvAlgorithm::kDirect);
  store_verdict(path, disk_key,
                {{"algorithm", use_wino ? "winograd" : "direct"},
                 {"direct_ms", ms[0]},
                 {"winograd_ms", ms[1]},
                 {"steady", steady}});
  if (verbose_dispatch())
    std::fprintf(stderr, "graphi: %s: direct %.3f ms (%s), winograd %.3f ms (%s): %s%s\n",
                 key.c_str(), ms[0], (*direct)->impl_name().c_str(), ms[1],
                 (*wino)->impl_name().c_str(), use_wino ? "winograd" : "direct",
                 steady ? "" : " (unsteady: measured again by the next process)");
  return use_wino ? std::move(wino) : std::move(direct);
}

Result<std::unique_ptr<onednn::Primitive>> make_fastest_plain_conv(ConvSpec spec, int team_size,
                                                                   bool allow_ref) {
  spec.staged = false;
  Result<std::unique_ptr<onednn::Primitive>> plain =
      make_fastest_conv(spec, team_size, allow_ref, onednn::make_conv, "conv");
  if (!plain.is_ok() || spec.src_block || spec.dst_block || !spec.const_weights) return plain;
  static const bool keep_plain = [] {
    const char* e = std::getenv("GRAPHI_CONV_LAYOUT");
    return e && std::string(e) == "plain";
  }();
  // oneDNN serves NCHW with a jit kernel for some shapes (then it stays); its fallbacks are
  // im2col + GEMM and the reference code.
  const std::string& impl = (*plain)->impl_name();
  if (keep_plain || (impl.find("gemm") == std::string::npos && impl.rfind("ref", 0) != 0))
    return plain;
  ConvSpec staged = spec;
  staged.staged = true;
  staged.algorithm = ConvAlgorithm::kDirect;
  // Never oneDNN's reference kernel in its own layouts: only a jit kernel is worth the reorders.
  Result<std::unique_ptr<onednn::Primitive>> st = onednn::make_conv(staged, team_size, false);
  if (verbose_dispatch())
    std::fprintf(stderr, "graphi: %s: NCHW %s, staged %s: %s\n",
                 shape_key(spec, team_size, "conv layout").c_str(), impl.c_str(),
                 st.is_ok() ? (*st)->impl_name().c_str() : "not available",
                 st.is_ok() ? "staged" : "NCHW");
  return st.is_ok() ? std::move(st) : std::move(plain);
}

}  // namespace graphi::ops
