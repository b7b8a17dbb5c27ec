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

// The convolutions NHWC is measured for (ConvAlgorithm::kChannelsLast): blocked 16-channel
// activations (AVX-512, where oneDNN has brgemm kernels), group 1, constant weights, a kernel
// larger than 1x1 (1x1 convs measured within 5% either way, before the reorders) and enough
// work to pay for the reorders: at least 2^26 (~67M) FLOPs.
bool channels_last_shape(const ConvSpec& s) {
  const double flops = 2.0 * static_cast<double>(s.n) * static_cast<double>(s.oc) *
                       static_cast<double>(s.c) * static_cast<double>(s.kh * s.kw) *
                       static_cast<double>(s.oh * s.ow);
  return s.d == 0 && s.src_block == 16 && s.dst_block == 16 && s.group == 1 &&
         s.const_weights != nullptr && !s.staged && s.dw.stride == 0 && !s.input_scale &&
         s.kh * s.kw > 1 && flops >= 67108864.0;
}

// How much faster than direct a candidate must measure to be chosen: Winograd is less accurate,
// NHWC reorders through scratch (included in its time). NHWC measured warm here gains more in a
// network whose weights come from memory (512 -> 512 3x3 at 7x7: 22% warm, 25% cold; 128 -> 256
// stride 2 at 56x56: 4% warm, 10% cold), so its margin is not larger.
constexpr double kMargin = 0.95;

const char* algorithm_name(ConvAlgorithm a) {
  switch (a) {
    case ConvAlgorithm::kWinograd:
      return "winograd";
    case ConvAlgorithm::kChannelsLast:
      return "nhwc";
    case ConvAlgorithm::kDirect:
      break;
  }
  return "direct";
}

constexpr double kMinMeasureMs = 40.0;

// The verdicts on disk (ops/choice_cache.h), valid for this machine and oneDNN build; bump the
// version when the measurement changes in a way that could flip them.
// 2: entries say whether the measurement was steady (below); version 1's entries were kept
// whatever the noise (one, measured while the host ran ~9x slow, had a 128-channel 28x28 3x3
// conv run direct at 2 threads and ResNet-18 take 14.9 ms instead of 11.1), so they are dropped.
// 3: NHWC became a candidate (session 31): version 2's verdicts never measured it.
constexpr int kCacheVersion = 3;
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
    if (a == "nhwc") return ConvAlgorithm::kChannelsLast;
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

// Times the primitives (the best of at least 3 interleaved rounds spread over >= 40 ms: a
// short burst of other load, e.g. another process's spinning pool that made both 3x3 convs of
// inception b1 take ~8 ms instead of 0.8 / 0.3 for three rounds, does not decide) and charges
// the time to this process's measuring budget. Fewer than 2 times: not measurable here (inside
// a parallel region, an oversized team).
// `confirm`: a confirming batch (below), 2 interleaved rounds without the 40 ms floor, so that
// checking a verdict costs a fraction of measuring it (one process measuring a dozen CNNs, a
// benchmark's, stays within the budget).
std::vector<double> measure_all(const std::vector<const onednn::Primitive*>& prims,
                                bool confirm = false) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> ms =
      onednn::best_run_ms(prims, confirm ? 2 : 3, confirm ? 0.0 : kMinMeasureMs, 400);
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
    if (v == "nhwc") return ConvAlgorithmPolicy::kChannelsLast;
    std::fprintf(stderr,
                 "graphi: warning: GRAPHI_CONV_ALGORITHM='%s' is not auto, direct, winograd or "
                 "nhwc; using auto\n",
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
  const bool wino_shape = winograd_shape(spec);
  const bool nhwc_shape = make == onednn::make_conv && channels_last_shape(spec);
  if (policy == ConvAlgorithmPolicy::kDirect || (!wino_shape && !nhwc_shape))
    return make(spec, team_size, allow_ref);
  if (spec.sum_input) {
    // oneDNN 2.6's Winograd kernels take no binary post-op: the candidates are measured on the
    // bare convolution. When Winograd wins, it is returned without the sum and the activation
    // (sums_input() false: the caller adds Z and applies the activation after it); when NHWC
    // wins, it is made with both post-ops (direct where oneDNN cannot); else direct.
    ConvSpec bare = spec;
    bare.sum_input = false;
    bare.post = {};
    Result<std::unique_ptr<onednn::Primitive>> p =
        make_fastest_conv(bare, team_size, allow_ref, make, what);
    if (p.is_ok() && (*p)->impl_name().find("wino") != std::string::npos) return p;
    if (p.is_ok() && (*p)->impl_name().find("brg") != std::string::npos) {
      ConvSpec cl = spec;
      cl.algorithm = ConvAlgorithm::kChannelsLast;
      Result<std::unique_ptr<onednn::Primitive>> q = make(cl, team_size, false);
      if (q.is_ok()) return q;
    }
    return make(spec, team_size, allow_ref);
  }
  const std::string key = shape_key(spec, team_size, what);
  auto make_as = [&](ConvAlgorithm a) {
    ConvSpec chosen = spec;
    chosen.algorithm = a;
    return make(chosen, team_size, a == ConvAlgorithm::kDirect && allow_ref);
  };
  {
    std::lock_guard<std::mutex> lock(memo_mutex());
    auto it = memo().find(key);
    if (it != memo().end()) {
      const ConvAlgorithm a = it->second;
      if (a == ConvAlgorithm::kDirect) return make(spec, team_size, allow_ref);
      Result<std::unique_ptr<onednn::Primitive>> p = make_as(a);
      if (p.is_ok()) return p;
      return make(spec, team_size, allow_ref);
    }
  }
  // Measured by an earlier process on this machine.
  const std::string path = choice_cache_path("conv_algorithms.json");
  const std::string disk_key = key + "|" + cache_signature();
  if (policy == ConvAlgorithmPolicy::kAuto) {
    if (std::optional<ConvAlgorithm> a = cached_verdict(path, disk_key)) {
      Result<std::unique_ptr<onednn::Primitive>> p =
          *a == ConvAlgorithm::kDirect ? make(spec, team_size, allow_ref) : make_as(*a);
      if (p.is_ok()) {
        std::lock_guard<std::mutex> lock(memo_mutex());
        memo()[key] = *a;
      }
      if (verbose_dispatch())
        std::fprintf(stderr, "graphi: %s: %s (cached in %s)\n", key.c_str(), algorithm_name(*a),
                     path.c_str());
      if (p.is_ok() || *a == ConvAlgorithm::kDirect) return p;
      // The cached primitive cannot be made here (e.g. GRAPHI_SIMD caps the ISA).
      return make(spec, team_size, allow_ref);
    }
  }
  // Out of measuring budget: direct, without making the other primitives.
  const double spent = measured_ms().load();
  if (policy == ConvAlgorithmPolicy::kAuto && spent >= measure_budget_ms()) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      std::fprintf(stderr,
                   "graphi: the convolution algorithm measurements took %.1f s "
                   "(GRAPHI_CONV_MEASURE_BUDGET_S=%g): the remaining shapes run direct\n",
                   spent / 1e3, measure_budget_ms() / 1e3);
    return make(spec, team_size, allow_ref);  // not remembered: a later process measures it
  }
  auto remember = [&](ConvAlgorithm a) {
    std::lock_guard<std::mutex> lock(memo_mutex());
    memo()[key] = a;
  };
  // The candidates besides direct; never oneDNN's reference code for them: only a jit kernel
  // can win.
  struct Candidate {
    ConvAlgorithm algorithm;
    std::unique_ptr<onednn::Primitive> prim;
  };
  std::vector<Candidate> cands;
  if (wino_shape && policy != ConvAlgorithmPolicy::kChannelsLast) {
    Result<std::unique_ptr<onednn::Primitive>> p = make_as(ConvAlgorithm::kWinograd);
    if (p.is_ok()) cands.push_back({ConvAlgorithm::kWinograd, std::move(*p)});
  }
  if (nhwc_shape && policy != ConvAlgorithmPolicy::kWinograd) {
    Result<std::unique_ptr<onednn::Primitive>> p = make_as(ConvAlgorithm::kChannelsLast);
    if (p.is_ok()) cands.push_back({ConvAlgorithm::kChannelsLast, std::move(*p)});
  }
  if (cands.empty()) {
    remember(ConvAlgorithm::kDirect);
    return make(spec, team_size, allow_ref);
  }
  if (policy != ConvAlgorithmPolicy::kAuto) {  // the one the policy names, wherever it exists
    remember(cands[0].algorithm);
    return std::move(cands[0].prim);
  }
  Result<std::unique_ptr<onednn::Primitive>> direct = make(spec, team_size, allow_ref);
  if (!direct.is_ok()) return std::move(cands[0].prim);
  // Long measurements are announced (a large training step has dozens of shapes).
  if (spent >= 1000.0) {
    static std::atomic<bool> announced{false};
    if (!announced.exchange(true))
      std::fprintf(stderr,
                   "graphi: measuring direct against Winograd / NHWC per convolution shape "
                   "(GRAPHI_CONV_ALGORITHM=direct skips it)...\n");
  }
  std::vector<const onednn::Primitive*> prims{direct->get()};
  for (const Candidate& c : cands) prims.push_back(c.prim.get());
  // The verdict of times ms (direct first): a candidate must beat direct (and the others) by
  // kMargin.
  auto verdict = [&](const std::vector<double>& ms) {
    size_t best = 0;
    double best_scaled = ms[0];
    for (size_t k = 1; k < ms.size(); ++k) {
      const double scaled = ms[k] / kMargin;
      if (scaled < best_scaled) best = k, best_scaled = scaled;
    }
    return best;
  };
  // Batches of interleaved rounds until two in a row agree (the first one >= 40 ms, then short
  // confirming ones): the same verdict, and each candidate's best time within 25% of the batch
  // before (a host whose speed swings by several times within a second, as shared VMs do, can
  // slow one candidate's rounds more than the other's even interleaved). At most 3 batches; the
  // verdict is then the one of the best times over all of them, stored as unsteady when no two
  // agreed (a later process measures again).
  std::vector<double> ms = measure_all(prims);
  if (ms.size() != prims.size()) return direct;  // not measurable here: direct, not remembered
  bool steady = false;
  for (int batch = 1; batch < 3 && !steady; ++batch) {
    const std::vector<double> again = measure_all(prims, true);
    if (again.size() != prims.size()) break;
    steady = verdict(again) == verdict(ms);
    for (size_t k = 0; k < ms.size(); ++k) {
      steady = steady && std::max(ms[k], again[k]) <= 1.25 * std::min(ms[k], again[k]);
      ms[k] = std::min(ms[k], again[k]);
    }
  }
  const size_t best = verdict(ms);
  const ConvAlgorithm chosen = best == 0 ? ConvAlgorithm::kDirect : cands[best - 1].algorithm;
  remember(chosen);
  nlohmann::json entry = {
      {"algorithm", algorithm_name(chosen)}, {"direct_ms", ms[0]}, {"steady", steady}};
  for (size_t k = 1; k < ms.size(); ++k)
    entry[std::string(algorithm_name(cands[k - 1].algorithm)) + "_ms"] = ms[k];
  store_verdict(path, disk_key, std::move(entry));
  if (verbose_dispatch()) {
    std::string times = "direct " + std::to_string(ms[0]) + " ms (" + (*direct)->impl_name() + ")";
    for (size_t k = 1; k < ms.size(); ++k)
      times += std::string(", ") + algorithm_name(cands[k - 1].algorithm) + " " +
               std::to_string(ms[k]) + " ms (" + cands[k - 1].prim->impl_name() + ")";
    std::fprintf(stderr, "graphi: %s: %s: %s%s\n", key.c_str(), times.c_str(),
                 algorithm_name(chosen),
                 steady ? "" : " (unsteady: measured again by the next process)");
  }
  if (best == 0) return direct;
  return std::move(cands[best - 1].prim);
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
