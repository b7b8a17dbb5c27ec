// graphi model: generates a model graph with seeded random weights and writes it as a .graphi
// file: an unrolled LSTM or GRU, or a fused PhasedLSTM, of given sizes (models/lstm.h, gru.h,
// phased_lstm.h), or with --size one of seed 002's evaluation models (models/eval_models.h),
// optionally as its training step (--train) and with a seeded batch (--batch-npz).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "graph/format.h"
#include "graph/npz.h"
#include "graph/passes/rnn_fusion.h"
#include "graph/passes/training_graph.h"
#include "models/eval_models.h"
#include "models/gru.h"
#include "models/lstm.h"
#include "models/phased_lstm.h"
#include "ops/gradients.h"
#include "ops/registry.h"

namespace graphi::cli {

namespace {

// `graphi model NAME --size S`: the evaluation models (seed 002, section 7).
int eval_model_command(const Args& args, const std::string& kind, const std::string& out) {
  for (const char* legacy : {"--input", "--hidden", "--seq", "--layers", "--linear-before-reset"})
    if (args.has(legacy))
      return args.usage_error(std::string(legacy) + " does not apply with --size (the size " +
                              "tables of models/eval_models.h fix the dimensions)");
  auto size = models::eval_size_from_name(args.get("--size"));
  if (!size.is_ok()) return args.usage_error(size.status().message());
  auto batch = args.get_int("--batch", 0, 1, 4096);
  auto seed = args.get_int("--seed", 1, 0, 0x7fffffffffffffffL);
  if (!batch || !seed) return kExitUsage;
  models::EvalModelSpec spec{kind, *size, *batch, static_cast<uint64_t>(*seed)};
  // phased-lstm's cells cannot be chained by the fusion pass (the time gate sits between the
  // steps): --fuse-rnn builds it with PhasedLSTM sequence ops directly.
  const bool phased_sequence = kind == "phased-lstm" && args.has("--fuse-rnn");
  spec.sequence_ops = phased_sequence;
  auto g = models::build_eval_model(spec, ops::Registry::get());
  if (!g.is_ok()) {
    std::fprintf(stderr, "error: building the %s graph failed: %s\n", kind.c_str(),
                 g.status().to_string().c_str());
    return kExitRuntimeError;
  }
  int64_t params = 0;
  for (size_t v = 0; v < g->num_values(); ++v) {
    const graph::Value& val = g->value(static_cast<graph::ValueId>(v));
    if (val.kind == graph::ValueKind::kConstant && val.desc.dtype == DType::kF32 &&
        val.desc.rank() >= 1)
      params += val.desc.numel();
  }
  const graph::Graph* written = &*g;
  std::optional<graph::passes::TrainingGraph> tg;
  if (args.has("--train")) {
    graph::passes::TrainingSpec ts;  // softmax cross-entropy on "logits", labels "labels"
    char* end = nullptr;
    const std::string lr = args.get("--lr", "0.01");
    ts.optimizer.lr = std::strtod(lr.c_str(), &end);
    if (end == lr.c_str() || *end != '\0' || !(ts.optimizer.lr > 0))
      return args.usage_error("--lr expects a number > 0, got '" + lr + "'");
    if (args.has("--fuse-rnn") && !phased_sequence) {  // as `graphi train --fuse-rnn` trains it
      auto fused = graph::passes::fuse_rnn_cells_for_training(
          *g, ops::Registry::get(),
          "graphi model " + kind + " --size " + models::eval_size_name(*size) + " --fuse-rnn");
      if (!fused.is_ok()) return runtime_error(fused.status());
      *g = std::move(fused->graph);
    }
    auto built =
        graph::passes::build_training_graph(*g, ts, ops::gradient_rules(), ops::Registry::get());
    if (!built.is_ok()) return runtime_error(built.status());
    tg = std::move(*built);
    written = &tg->graph;
  } else if (args.has("--lr")) {
    return args.usage_error("--lr applies with --train only");
  } else if (args.has("--fuse-rnn") && !phased_sequence) {
    auto fused = graph::passes::fuse_rnn_cells_for_training(
        *g, ops::Registry::get(),
        "graphi model " + kind + " --size " + models::eval_size_name(*size) + " --fuse-rnn");
    if (!fused.is_ok()) return runtime_error(fused.status());
    *g = std::move(fused->graph);
  }
  if (Status s = graph::write_graphi(*written, out); !s.is_ok()) return runtime_error(s);
  std::printf("wrote %s: %s %s%s, %zu nodes, %lld parameters (%s)\n", out.c_str(), kind.c_str(),
              models::eval_size_name(*size),
              tg ? (args.has("--fuse-rnn") ? " training step (SGD, cross-entropy, fused RNN cells)"
                                           : " training step (SGD, cross-entropy)")
              : args.has("--fuse-rnn") ? " (fused RNN cells)"
                                       : "",
              written->num_nodes(), static_cast<long long>(params),
              human_bytes(static_cast<double>(params) * 4).c_str());
  if (args.has("--batch-npz")) {
    auto data = models::eval_model_batch(spec);
    if (!data.is_ok()) return runtime_error(data.status());
    if (Status s = graph::write_npz(args.get("--batch-npz"), *data); !s.is_ok())
      return runtime_error(s);
    std::printf("wrote %s: the seeded batch (", args.get("--batch-npz").c_str());
    for (size_t i = 0; i < data->size(); ++i)
      std::printf("%s%s %s", i ? ", " : "", (*data)[i].first.c_str(),
                  (*data)[i].second.desc().to_string().c_str());
    std::printf(")\n");
  }
  return kExitOk;
}

}  // namespace

int model_command(int argc, char** argv) {
  Args args(
      "graphi model lstm|gru|phased-lstm --input E --hidden H --seq T [--layers L] [--batch B] "
      "[--seed S] -o FILE\n"
      "       graphi model lstm|phased-lstm|pathnet|googlenet --size small|medium|large [--train "
      "[--lr LR]] [--batch B] [--seed S] [--batch-npz DATA.npz] -o FILE",
      "Generates an unrolled, stacked LSTM or GRU (ONNX gate order) with seeded random\n"
      "weights, uniform in [-1/sqrt(H), 1/sqrt(H)), and writes it as a .graphi file.\n"
      "Inputs: x f32[T,B,E], h0 (and c0 for LSTM) f32[L,B,H]. Outputs: y f32[T,B,H],\n"
      "h_n (and c_n) f32[L,B,H]. phased-lstm: stacked fused PhasedLSTM ops (time-gated LSTM,\n"
      "Neil et al. 2016; see models/phased_lstm.h), plus input times f32[T,B]. Example:\n"
      "  graphi model lstm --input 64 --hidden 128 --layers 2 --batch 1 --seq 20 -o lstm.graphi\n"
      "With --size: seed 002's evaluation models (docs/EVALUATION.md; models/eval_models.h):\n"
      "lstm / phased-lstm 4 layers of 20x128, 30x512, 40x1024 (steps x units, unrolled, zero\n"
      "initial state, 10-class classifier on the last h; phased-lstm's time gate is made of\n"
      "plain ops so it trains), pathnet (3 layers x 6 conv modules, image 32/48/64, filters\n"
      "16/32/48), googlenet (TensorFlow's reference GoogleNet, image 128/192/256, width 1/2/4).\n"
      "Output logits; label input 'labels' int64[B]. --train writes the training step instead\n"
      "(forward + softmax cross-entropy + backward + SGD, weights as graph inputs).\n"
      "  graphi model pathnet --size small --batch-npz batch.npz -o pathnet.graphi\n"
      "  graphi train pathnet.graphi --batch-from batch.npz --lr 0.01 --steps 20");
  args.positional("KIND", "lstm, gru or phased-lstm; with --size lstm, phased-lstm, pathnet or googlenet");
  args.option("--size", "S", "small, medium or large: an evaluation model (see above)");
  args.flag("--train", "with --size: write the training step graph (SGD, cross-entropy)");
  args.option("--lr", "LR", "with --train: SGD learning rate (default 0.01)");
  args.flag("--fuse-rnn",
            "with --size: the RNN cells as sequence ops, as graphi train --fuse-rnn fuses them "
            "(their BPTT kernels; each fused LSTM bias is trained as Wb + Rb); phased-lstm: one "
            "PhasedLSTM op per layer, trained as the unrolled cells");
  args.option("--batch-npz", "DATA.npz",
              "with --size: also write a seeded batch (inputs + labels) for graphi train");
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
  if (args.has("--size")) {
    if (args.has("-o") == args.has("--output"))
      return args.usage_error(args.has("-o") ? "give -o or --output, not both" : "missing -o FILE");
    const auto& names = models::eval_model_names();
    if (std::find(names.begin(), names.end(), kind) == names.end())
      return args.usage_error("unknown model '" + kind +
                              "' with --size (expected lstm, phased-lstm, pathnet or googlenet)");
    return eval_model_command(args, kind, args.has("-o") ? args.get("-o") : args.get("--output"));
  }
  for (const char* eval_only : {"--train", "--lr", "--fuse-rnn", "--batch-npz"})
    if (args.has(eval_only))
      return args.usage_error(std::string(eval_only) + " applies with --size only");
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
