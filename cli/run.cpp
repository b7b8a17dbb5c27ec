// graphi run: loads a model, feeds .npy inputs (or seeded random ones), runs warmup + timed
// iterations on an engine::Session, reports output shapes and latency, writes outputs as .npy.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "cli/input_binding.h"
#include "cli/json_output.h"
#include "cli/load_progress.h"
#include "engine/session.h"
#include "graph/float16.h"
#include "graph/memory_budget.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_import.h"
#include "models/weights.h"
#include "ops/rnn/rnn_sequence.h"
#include "profiler/batch_split_choice.h"
#include "profiler/chrome_trace.h"
#include "profiler/plan_choice.h"
#include "profiler/split_check.h"

namespace graphi::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Latency {
  double median = 0, min = 0, p90 = 0, mean = 0;
};

Latency summarize(std::vector<double> ms) {
  Latency l;
  if (ms.empty()) return l;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  l.min = ms.front();
  l.median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  // Nearest-rank percentile: the smallest sample with at least 90% of samples <= it.
  size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  l.p90 = ms[std::max<size_t>(rank, 1) - 1];
  double sum = 0;
  for (double v : ms) sum += v;
  l.mean = sum / static_cast<double>(n);
  return l;
}

// A value name as a file name: path separators and other awkward characters become '_'.
std::string file_stem(const std::string& name) {
  std::string s;
  for (char c : name)
    s +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

// Prints progress to stderr when a run is long: first after 2 s, then every second (in place on
// a terminal, one line every 5 s otherwise).
class Progress {
 public:
  explicit Progress(bool enabled)
      : enabled_(enabled), tty_(isatty(2)), start_(Clock::now()), last_(start_) {}
  void update(const char* phase, long done, long total) {
    if (!enabled_) return;
    auto now = Clock::now();
    const double since_start = std::chrono::duration<double>(now - start_).count();
    const double since_last = std::chrono::duration<double>(now - last_).count();
    if (since_start < 2.0 || since_last < (tty_ ? 1.0 : 5.0) || done == total) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "%sgraphi: %s %ld/%ld (%.0f s elapsed)%s", tty_ ? "\r" : "", phase, done,
                 total, since_start, tty_ ? "   " : "\n");
    std::fflush(stderr);
  }
  void finish() {
    if (shown_ && tty_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_, tty_, shown_ = false;
  Clock::time_point start_, last_;
};

}  // namespace

int run_command(int argc, char** argv) {
  Args args(
      "graphi run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--iterations N] [--warmup "
      "N] [--json [--json-indent N]]\n"
      "                  [--threads K] [--executors N] [--scheduler NAME] [--plan auto|FILE] "
      "[--no-plan]\n"
      "                  [--no-fuse] [--dim NAME=VALUE]... [--batch-split auto|off|on]",
      "Runs a .graphi or .onnx model and reports output shapes and latency. By default (--plan "
      "auto)\n"
      "it uses all allowed cores: the plan `graphi profile` cached for this model and machine, "
      "else\n"
      "a quick choice from the graph's width and the topology (stderr says which and why).\n"
      "--executors/--threads override it; --no-plan runs the 1x1 sequential reference executor.\n"
      "Inputs come from .npy files (float32/int32/int64, C order; bool or float16 for inputs\n"
      "an .onnx file declares BOOL or FLOAT16); inputs not given are\n"
      "filled with seeded random values (float32 uniform in [-1, 1)) and reported as generated.\n"
      "Outputs are written as DIR/NAME.npy with --output-dir (characters other than letters,\n"
      "digits, '-', '_' and '.' become '_'; a name that then repeats gets _2, _3, ...).\n"
      "The graph passes run first: unrolled LSTM/GRU/RNN cells become sequence ops, GEMMs sharing\n"
      "an input are merged, per-step input projections are hoisted (--no-fuse: run as stored).\n"
      "Exit codes: 0 ok, 1 runtime error (bad file, bad input data), 2 usage error. Example:\n"
      "  graphi run lstm.graphi --input x=x.npy --output-dir out --iterations 100 --json");
  args.positional("MODEL", "the model file (.graphi or .onnx)");
  args.option("--input", "NAME=FILE.npy", "feed graph input NAME from a .npy file", true);
  args.flag("--progress",
            "show the progress of a load longer than 1 s on stderr even when it is not a "
            "terminal (on a terminal it is shown anyway), with a time per stage");
  args.option("--output-dir", "DIR",
              "write every graph output as DIR/NAME.npy (created if missing)");
  args.option("--iterations", "N", "timed runs, 1..1000000 (default 10)");
  args.option("--warmup", "N", "untimed runs before them, 0..1000000 (default 1)");
  args.option("--threads", "K",
              "threads of each executor's team, 1..1024 (default: the plan's; 1 with --executors)");
  args.option("--executors", "N",
              "executors (thread teams), 1..1024 (default: the plan's; 1 with --threads)");
  args.option(
      "--plan", "auto|FILE",
      "auto (default): the cached plan of `graphi profile`, else a quick analytical choice;\n"
      "                           FILE: a plan saved by graphi profile --plan-out");
  args.flag("--no-plan", "1x1 sequential, as before plans existed (the reference executor)");
  args.option("--scheduler", "NAME",
              "sequential (default with 1 executor), cpf (critical-path first, default with\n"
              "                           more), fifo or shared-queue");
  args.flag("--no-fuse",
            "run the graph as stored (no graph passes: no RNN cell fusion, MM fusion or hoisting)");
  args.option("--dim", "NAME=VALUE",
              "value of a symbolic dim of an .onnx model's inputs (default: from the --input "
              "files' shapes)",
              true);
  args.flag("--no-pin", "do not pin threads to cores (allows oversubscribing the machine)");
  args.option("--batch-split", "auto|off|on",
              "run a batch of N samples as N one-sample slices where the model keeps them\n"
              "                           apart: auto (default, or GRAPHI_BATCH_SPLIT) measures "
              "both once per\n"
              "                           model and machine and keeps the faster (docs/CNN.md)");
  args.option("--rnn-weights", "fp32|bf16|int8",
              "storage precision of the fused LSTM/GRU/RNN weights (default fp32; bf16: bf16\n"
              "                           weights, fp32 accumulation; int8: s8 weights, u8\n"
              "                           activations, int32 accumulation; docs/RNN_KERNELS.md)");
  args.option("--max-memory", "SIZE",
              "refuse a model whose file, weights or planned memory exceed SIZE (512M, 2G;\n"
              "                           default: the memory available; docs/FUZZING.md)");
  args.option("--seed", "S", "seed of generated inputs (default 0)");
  args.flag("--json", "print one JSON object on stdout instead of text");
  args.option("--json-indent", "N", "indent --json output by N spaces (default: one line)");
  args.option("--trace", "FILE",
              "record the last timed iteration op by op and write it as Chrome Trace Event JSON\n"
              "                           (open in https://ui.perfetto.dev or chrome://tracing; "
              "docs/TRACING.md)");
  if (auto code = args.parse(argc, argv)) return *code;
  const std::string model_path = args.positionals()[0];
  auto iterations = args.get_int("--iterations", 10, 1, 1000000);
  auto warmup = args.get_int("--warmup", 1, 0, 1000000);
  auto threads = args.get_int("--threads", 1, 1, 1024);
  auto executors = args.get_int("--executors", 1, 1, 1024);
  if (args.has("--no-plan") && args.has("--plan"))
    return args.usage_error("--plan and --no-plan exclude each other");
  auto seed = args.get_int("--seed", 0, 0, 0x7fffffffffffffffL);
  auto json_indent = args.get_int("--json-indent", 0, 0, 16);
  if (!iterations || !warmup || !threads || !executors || !seed || !json_indent) return kExitUsage;
  const std::string scheduler = args.get("--scheduler");
  if (!scheduler.empty() && scheduler != "sequential" && scheduler != "cpf" &&
      scheduler != "fifo" && scheduler != "shared-queue")
    return args.usage_error("unknown scheduler '" + scheduler +
                            "' (expected sequential, cpf, fifo or shared-queue)");
  if (scheduler == "sequential" && *executors > 1)
    return args.usage_error(
        "the sequential scheduler runs one executor; use --scheduler cpf|fifo|shared-queue");
  const bool json = args.has("--json");

  // Input flags are checked for form before the model is loaded, so a typo is a usage error
  // even when the model is large.
  auto input_files = parse_input_flags(args.get_all("--input"));
  if (!input_files.is_ok()) return args.usage_error(input_files.status().message());

  auto dims = parse_dim_flags(args.get_all("--dim"));
  if (!dims.is_ok()) return args.usage_error(dims.status().message());
  if (args.has("--max-memory")) {
    auto limit = graph::parse_memory_size(args.get("--max-memory"), "--max-memory");
    if (!limit.is_ok()) return args.usage_error(limit.status().message());
    dims->max_memory = *limit;
  }
  read_input_files(*input_files);
  dims->input_shapes = input_shapes(*input_files);  // symbolic dims the files' shapes give
  // A file for an input that is also an initializer overrides it (graph/onnx/ONNX.md).
  for (const InputFile& f : *input_files) dims->override_initializers.insert(f.name);
  LoadProgressPrinter load_progress(model_path, args.has("--progress"));
  dims->progress = load_progress.callback();
  auto loaded = load_model(model_path, *dims);
  if (!loaded.is_ok() && is_dim_error(loaded.status()))
    return args.usage_error(loaded.status().message());
  if (!loaded.is_ok()) return runtime_error(loaded.status());
  std::shared_ptr<const graph::Graph> g = *loaded;
  if (!args.has("--no-fuse")) {
    load_progress.stage("passes");
    auto fused = fuse_graph(g);
    if (!fused.is_ok()) return runtime_error(fused.status());
    g = *fused;
  }

  if (auto unknown = unknown_input(*g, model_path, *input_files)) return args.usage_error(*unknown);

  // Bind inputs: files first (checked against the model's desc), then generated ones.
  auto bound = bind_inputs(*g, *input_files, static_cast<uint64_t>(*seed));
  if (!bound.is_ok()) return runtime_error(bound.status());
  engine::NamedTensors& inputs = bound->tensors;
  const std::vector<std::string>& generated = bound->generated;
  const std::map<std::string, std::string>& source = bound->source;

  // The split: explicit flags, else the plan (profiler/plan_choice.h).
  profiler::PlanRequest plan_request;
  plan_request.plan = args.has("--no-plan") ? "none" : args.get("--plan", "auto");
  if (args.has("--executors")) plan_request.executors = static_cast<int>(*executors);
  if (args.has("--threads")) plan_request.threads = static_cast<int>(*threads);
  plan_request.scheduler = scheduler;
  plan_request.pin = !args.has("--no-pin");
  auto chosen = profiler::choose_plan(*g, plan_request);
  if (!chosen.is_ok()) return runtime_error(chosen.status());
  if (!chosen->message.empty()) std::fprintf(stderr, "%s\n", chosen->message.c_str());
  if (chosen->options.scheduler == "sequential" && chosen->options.executors > 1)
    return args.usage_error(
        "the sequential scheduler runs one executor; use --scheduler cpf|fifo|shared-queue");
  engine::SessionOptions opts = chosen->options;
  opts.rnn_weights = args.get("--rnn-weights", "");
  if (auto w = ops::parse_rnn_weights(opts.rnn_weights.empty() ? "fp32" : opts.rnn_weights,
                                      "--rnn-weights");
      !w.is_ok())
    return args.usage_error(w.status().message());
  opts.max_memory = dims->max_memory;
  load_progress.stage("compile");
  auto created = engine::Session::create(g, opts);
  if (!created.is_ok()) return runtime_error(created.status());
  std::unique_ptr<engine::Session> whole = std::move(created).value();
  // A brief model: the analytical split timed against its contender (profiler/split_check.h).
  std::string said;
  profiler::check_split(g, *chosen, opts, whole, &said);
  if (!said.empty()) std::fprintf(stderr, "%s\n", said.c_str());
  // A batch of N samples may run as N slices (profiler/batch_split_choice.h).
  auto split = profiler::parse_batch_split(args.get("--batch-split", ""));
  if (!split.is_ok()) return args.usage_error("--batch-split: " + split.status().message());
  dims->progress = nullptr;
  auto sliced = profiler::batch_in_slices(model_path, *dims, !args.has("--no-fuse"), *split,
                                          *loaded, plan_request, opts, *whole, &said);
  if (!sliced.is_ok()) return runtime_error(sliced.status());
  if (!said.empty()) std::fprintf(stderr, "%s\n", said.c_str());
  std::unique_ptr<engine::BatchSlices> slices = std::move(sliced).value();
  if (slices) whole.reset();  // its arena and packed weights
  engine::Session* session = slices ? &slices->session() : whole.get();
  auto run_model = [&] { return slices ? slices->run(inputs) : session->run(inputs); };
  load_progress.done();

  Progress progress(true);
  engine::NamedTensors outputs;
  for (long i = 0; i < *warmup; ++i) {
    auto r = run_model();
    if (!r.is_ok()) return runtime_error(with_input_hint(r.status(), *bound));
    if (i + 1 == *warmup) outputs = std::move(*r);
    progress.update("warmup", i + 1, *warmup);
  }
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(*iterations));
  const std::string trace_path = args.get("--trace", "");
  for (long i = 0; i < *iterations; ++i) {
    if (!trace_path.empty() && i + 1 == *iterations) {
      if (slices)
        slices->set_tracing(true);
      else
        session->set_tracing(true);
    }
    auto t0 = Clock::now();
    auto r = run_model();
    auto t1 = Clock::now();
    if (!r.is_ok()) return runtime_error(with_input_hint(r.status(), *bound));
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (i + 1 == *iterations) outputs = std::move(*r);
    progress.update("iteration", i + 1, *iterations);
  }
  progress.finish();
  const Latency lat = summarize(ms);
  if (!trace_path.empty()) {
    // In slices: every slice's spans, one after the other.
    const engine::RunTrace trace = slices ? slices->last_trace() : session->last_trace();
    if (Status st = profiler::write_chrome_trace(trace_path, session->plan(), trace); !st.is_ok())
      return runtime_error(st.with_context("--trace"));
    std::fprintf(
        stderr, "graphi: wrote the trace of the last iteration (%zu ops, makespan %.3f ms) to %s\n",
        trace.ops.size(), static_cast<double>(trace.run_end_ns - trace.run_start_ns) * 1e-6,
        trace_path.c_str());
  }

  std::vector<std::string> written;
  if (args.has("--output-dir")) {
    const std::filesystem::path dir = args.get("--output-dir");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return runtime_error(
          Status::io_error(dir.string() + ": cannot create directory (" + ec.message() + ")"));
    std::set<std::string> stems;  // 'a/b' and 'a:b' both become a_b: the second is a_b_2
    const std::vector<std::string> bools = graph::bool_values(*g);      // ONNX BOOL: numpy bools
    const std::vector<std::string> halves = graph::float16_values(*g);  // FLOAT16: float16
    // BFLOAT16 (numpy has no such dtype): float32 files of bfloat16 values.
    const std::vector<std::string> bf16s = graph::bfloat16_values(*g);
    for (const auto& [name, t] : outputs) {
      std::string stem = file_stem(name);
      for (int k = 2; !stems.insert(stem).second; ++k)
        stem = file_stem(name) + "_" + std::to_string(k);
      const std::string path = (dir / (stem + ".npy")).string();
      const bool as_bool = std::find(bools.begin(), bools.end(), name) != bools.end();
      const bool as_half = std::find(halves.begin(), halves.end(), name) != halves.end();
      if (std::find(bf16s.begin(), bf16s.end(), name) != bf16s.end()) {
        Tensor r = t;  // a copy
        for (int64_t k = 0; k < r.numel(); ++k)
          r.data_as<float>()[k] = graph::round_to_bfloat16(r.data_as<float>()[k]);
        if (Status s = graph::write_npy(path, r); !s.is_ok()) return runtime_error(s);
      } else if (Status s = graph::write_npy(path, t, as_bool, as_half); !s.is_ok()) {
        return runtime_error(s);
      }
      written.push_back(path);
    }
  }

  const engine::SessionOptions& eff = session->options();
  const std::string summary =
      session->config_summary() + (slices ? "; batch " + std::to_string(slices->batch()) +
                                                " in slices of " + std::to_string(slices->slice())
                                          : "");
  if (json) {
    nlohmann::ordered_json j;
    j["model"] = model_path;
    j["config"] = {{"executors", eff.executors},
                   {"threads", eff.threads},
                   {"scheduler", eff.scheduler},
                   {"pinned", eff.pin},
                   {"plan", chosen->source},
                   {"summary", summary},
                   {"batch_slice", slices ? slices->slice() : 0},
                   {"rnn_weights", eff.rnn_weights.empty() ? "fp32" : eff.rnn_weights}};
    j["iterations"] = *iterations;
    j["warmup"] = *warmup;
    j["latency_ms"] = {
        {"median", lat.median}, {"min", lat.min}, {"p90", lat.p90}, {"mean", lat.mean}};
    nlohmann::ordered_json outs = nlohmann::ordered_json::object();
    for (const auto& [name, t] : outputs)
      outs[name] = {{"shape", t.shape()}, {"dtype", dtype_name(t.dtype())}};
    j["outputs"] = outs;
    j["inputs_generated"] = generated;
    if (!generated.empty()) j["input_seed"] = *seed;
    if (!written.empty()) j["output_files"] = written;
    if (!trace_path.empty()) j["trace_file"] = trace_path;
    print_json(j, *json_indent);
    return kExitOk;
  }
  std::printf("model: %s (%zu nodes)\n", model_path.c_str(), g->num_nodes());
  std::printf("config: %d executor(s) x %d thread(s), scheduler %s (%s)\n", eff.executors,
              eff.threads, eff.scheduler.c_str(), summary.c_str());
  // As the file declares them: an ONNX BOOL / FLOAT16 value is float32 inside graphi.
  auto shown = [&](const std::string& name, const Tensor& t) {
    auto v = g->find_value(name);
    return v ? declared_desc(*g, *v) : t.desc().to_string();
  };
  std::printf("inputs:\n");
  for (const auto& [name, t] : inputs) {
    auto s = source.find(name);
    std::printf("  %-12s %-24s %s\n", name.c_str(), shown(name, t).c_str(),
                s != source.end() ? ("from " + s->second).c_str()
                                  : ("generated (seed " + std::to_string(*seed) + ")").c_str());
  }
  std::printf("outputs:\n");
  for (const auto& [name, t] : outputs)
    std::printf("  %-12s %s\n", name.c_str(), shown(name, t).c_str());
  std::printf(
      "latency over %ld iterations (%ld warmup): median %.3f ms, min %.3f ms, p90 %.3f ms\n",
      *iterations, *warmup, lat.median, lat.min, lat.p90);
  for (const std::string& p : written) std::printf("wrote %s\n", p.c_str());
  return kExitOk;
}

}  // namespace graphi::cli
