// graphi model: generates an unrolled LSTM or GRU graph with seeded random weights and writes it
// as a .graphi file (see models/lstm.h, models/gru.h for the equations and names).
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "graph/format.h"
#include "models/gru.h"
#include "models/lstm.h"
#include "models/phased_lstm.h"
#include "ops/registry.h"

namespace graphi::cli {

int model_command(int argc, char** argv) {
  Args args(
      "graphi model lstm|gru|phased-lstm --input E --hidden H --seq T [--layers L] [--batch B] "
      "[--seed S] -o FILE",
      "Generates an unrolled, stacked LSTM or GRU (ONNX gate order) with seeded random\n"
      "weights, uniform in [-1/sqrt(H), 1/sqrt(H)), and writes it as a .graphi file.\n"
      "Inputs: x f32[T,B,E], h0 (and c0 for LSTM) f32[L,B,H]. Outputs: y f32[T,B,H],\n"
      "h_n (and c_n) f32[L,B,H]. phased-lstm: stacked fused PhasedLSTM ops (time-gated LSTM,\n"
      "Neil et al. 2016; see models/phased_lstm.h), plus input times f32[T,B]. Example:\n"
      "  graphi model lstm --input 64 --hidden 128 --layers 2 --batch 1 --seq 20 -o lstm.graphi");
  args.positional("KIND", "lstm, gru or phased-lstm");
  args.option(
      "--input", "E",
      "input features per step, 1.." + std::to_string(models::kMaxRnnFeatures) + " (required)");
  args.option("--hidden", "H",
              "hidden state size, 1.." + std::to_string(models::kMaxRnnFeatures) + " (required)");
  args.option("--seq", "T",
              "time steps (unrolled), 1.." + std::to_string(models::kMaxRnnSeq) + " (required)");
  args.option("--layers", "L",
              "stacked layers, 1.." + std::to_string(models::kMaxRnnLayers) + " (default 1)");
  args.option("--batch", "B",
              "batch size, 1.." + std::to_string(models::kMaxRnnBatch) + " (default 1)");
  args.option("--seed", "S", "seed of the random weights (default 1)");
  args.flag("--linear-before-reset",
            "GRU only: h~ = tanh(x W_h + Wb_h + r * (h R_h + Rb_h)) (ONNX flag)");
  args.option("-o", "FILE", "output .graphi file (required)");
  args.option("--output", "FILE", "same as -o");
  if (auto code = args.parse(argc, argv)) return *code;

  const std::string kind = args.positionals()[0];
  if (kind != "lstm" && kind != "gru" && kind != "phased-lstm")
    return args.usage_error("unknown model kind '" + kind +
                            "' (expected lstm, gru or phased-lstm)");
  for (const char* req : {"--input", "--hidden", "--seq"})
    if (!args.has(req)) return args.usage_error(std::string("missing ") + req);
  if (args.has("-o") == args.has("--output"))
    return args.usage_error(args.has("-o") ? "give -o or --output, not both" : "missing -o FILE");
  const std::string out = args.has("-o") ? args.get("-o") : args.get("--output");
  if (kind != "gru" && args.has("--linear-before-reset"))
    return args.usage_error("--linear-before-reset applies to gru only");

  models::RnnSpec spec;
  auto input = args.get_int("--input", 0, 1, models::kMaxRnnFeatures);
  auto hidden = args.get_int("--hidden", 0, 1, models::kMaxRnnFeatures);
  auto seq = args.get_int("--seq", 0, 1, models::kMaxRnnSeq);
  auto layers = args.get_int("--layers", 1, 1, models::kMaxRnnLayers);
  auto batch = args.get_int("--batch", 1, 1, models::kMaxRnnBatch);
  auto seed = args.get_int("--seed", 1, 0, 0x7fffffffffffffffL);
  if (!input || !hidden || !seq || !layers || !batch || !seed) return kExitUsage;
  spec.input = *input;
  spec.hidden = *hidden;
  spec.seq = *seq;
  spec.layers = *layers;
  spec.batch = *batch;
  spec.seed = static_cast<uint64_t>(*seed);
  spec.linear_before_reset = args.has("--linear-before-reset");
  const int gates = kind == "gru" ? 3 : 4;
  // Combined limits (layers * seq, weight bytes) are usage errors too: the user picked the sizes.
  if (Status s = models::validate_rnn_spec(spec, kind, gates); !s.is_ok())
    return args.usage_error(s.message());

  const auto& registry = ops::Registry::get();
  Result<graph::Graph> g = kind == "lstm"  ? models::build_lstm(spec, registry)
                           : kind == "gru" ? models::build_gru(spec, registry)
                                           : models::build_phased_lstm(spec, registry);
  if (!g.is_ok()) {
    std::fprintf(stderr, "error: building the %s graph failed: %s\n", kind.c_str(),
                 g.status().to_string().c_str());
    return kExitRuntimeError;
  }
  if (Status s = graph::write_graphi(*g, out); !s.is_ok()) {
    return runtime_error(s);
  }
  const int64_t params = kind == "phased-lstm" ? models::phased_lstm_parameter_count(spec)
                                               : models::rnn_parameter_count(spec, gates);
  std::printf("wrote %s: %s %s, %zu nodes, %lld parameters (%s)\n", out.c_str(), kind.c_str(),
              models::rnn_spec_to_string(spec).c_str(), g->num_nodes(),
              static_cast<long long>(params), human_bytes(static_cast<double>(params) * 4).c_str());
  return kExitOk;
}

}  // namespace graphi::cli
