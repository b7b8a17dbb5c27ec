// graphi train: builds a model's training step (loss, gradients, optimizer update as one graph,
// graph/passes/training_graph.h) and runs it N times on one batch from an .npz archive, printing
// the loss and the step time of every step; optionally saves the trained model.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/args.h"
#include "cli/cli_util.h"
#include "engine/graph_stats.h"
#include "engine/omp_oversubscription.h"  // allowed_cpu_count
#include "engine/training_session.h"
#include "graph/npz.h"
#include "graph/passes/rnn_fusion.h"
#include "ops/gradients.h"
#include "ops/registry.h"

namespace graphi::cli {

int train_command(int argc, char** argv) {
  Args args(
      "graphi train MODEL --batch-from DATA.npz [--loss ce|mse|value] [--label-input NAME]\n"
      "                    [--optimizer sgd|adam] [--lr LR] [--momentum M] [--weight-decay WD] "
      "[--steps N]\n"
      "                    [--save OUT.graphi] [--save-npy DIR] [--json] [--threads K] "
      "[--executors N] [--scheduler NAME]",
      "Trains a .graphi or .onnx model: forward, loss, backward (reverse-mode differentiation of "
      "the\n"
      "graph) and the optimizer's in-place weight update run as ONE graph on graphi's scheduler.\n"
      "The batch comes from DATA.npz (np.savez, uncompressed): one array per model input plus the\n"
      "label input (int64 [N] class indices for --loss ce, the target for --loss mse). Every "
      "float32\n"
      "constant of rank >= 1 the prediction (the model's first output, or --prediction) depends on "
      "is\n"
      "trained. The graph passes are not applied, except the RNN cell fusion with --fuse-rnn.\n"
      "Prints the loss and the time of every step. Exit codes: 0 ok, 1 runtime error, 2 usage "
      "error.\n"
      "Example:\n"
      "  graphi train mlp.graphi --batch-from batch.npz --loss ce --optimizer sgd --lr 0.1 --steps "
      "100 --save out.graphi");
  args.positional("MODEL", "the model file (.graphi or .onnx)");
  args.option("--batch-from", "DATA.npz", "the batch: model inputs and the label input by name");
  args.option("--loss", "KIND",
              "ce (softmax cross-entropy, integer labels; default), mse, or value (the prediction "
              "is the loss)");
  args.option("--label-input", "NAME",
              "name of the label / target array in DATA.npz (default labels)");
  args.option("--prediction", "NAME",
              "the value the loss reads (default: the model's first output)");
  args.option("--optimizer", "NAME", "sgd (default) or adam");
  args.option("--lr", "LR", "learning rate (default 0.1 for sgd, 0.001 for adam)");
  args.option("--momentum", "M", "sgd momentum (default 0)");
  args.option("--weight-decay", "WD", "L2 weight decay added to the gradient (default 0)");
  args.option("--steps", "N", "training steps, 1..10000000 (default 10)");
  args.option("--save", "OUT.graphi", "write the trained model (forward graph, updated weights)");
  args.option("--save-npy", "DIR", "write every trained weight as DIR/NAME.npy ('/' -> '_')");
  args.option("--threads", "K",
              "threads of each executor's team, 1..1024 (default: the allowed cores with one "
              "executor; 1 with --executors)");
  args.option("--executors", "N", "executors (thread teams), 1..1024 (default 1)");
  args.option(
      "--scheduler", "NAME",
      "sequential (default with 1 executor), cpf (default with more), fifo or shared-queue");
  args.flag(
      "--fuse-rnn",
      "fuse unrolled LSTM/GRU/RNN cells into sequence ops first (their BPTT gradient "
      "kernels); a fused cell's bias becomes Wb + a zero Rb, both trained (as torch.nn.LSTM)");
  args.flag("--no-pin", "do not pin threads to cores");
  args.flag("--json", "print one JSON object on stdout instead of text");
  if (auto code = args.parse(argc, argv)) return *code;
  const std::string model_path = args.positionals()[0];
  auto steps = args.get_int("--steps", 10, 1, 10000000);
  // One team over every core this process may use, as `graphi run` does without a plan; with
  // --executors the teams are 1 thread unless --threads says otherwise.
  const int64_t default_threads =
      args.has("--executors") ? 1 : std::clamp<int64_t>(engine::allowed_cpu_count(), 1, 1024);
  auto threads = args.get_int("--threads", default_threads, 1, 1024);
  auto executors = args.get_int("--executors", 1, 1, 1024);
  if (!steps || !threads || !executors) return kExitUsage;
  if (!args.has("--batch-from")) return args.usage_error("--batch-from DATA.npz is required");

  engine::TrainingOptions o;
  auto loss = graph::passes::loss_kind_from_name(args.get("--loss", "ce"));
  if (!loss)
    return args.usage_error("unknown --loss '" + args.get("--loss") + "' (ce, mse or value)");
  o.spec.loss = *loss;
  o.spec.label_input = args.get("--label-input", "labels");
  o.spec.prediction = args.get("--prediction", "");
  o.spec.optimizer.kind = args.get("--optimizer", "sgd");
  if (o.spec.optimizer.kind != "sgd" && o.spec.optimizer.kind != "adam")
    return args.usage_error("unknown --optimizer '" + o.spec.optimizer.kind + "' (sgd or adam)");
  auto number = [&](const char* name, double dflt, double& out) {
    const std::string s = args.get(name, "");
    if (s.empty()) {
      out = dflt;
      return true;
    }
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end && *end == '\0' && std::isfinite(out) && out >= 0;
  };
  if (!number("--lr", o.spec.optimizer.kind == "adam" ? 0.001 : 0.1, o.spec.optimizer.lr))
    return args.usage_error("--lr expects a number >= 0, got '" + args.get("--lr") + "'");
  if (!number("--momentum", 0.0, o.spec.optimizer.momentum))
    return args.usage_error("--momentum expects a number >= 0, got '" + args.get("--momentum") +
                            "'");
  if (o.spec.optimizer.kind != "sgd" && o.spec.optimizer.momentum != 0)
    return args.usage_error("--momentum is an sgd option");
  if (!number("--weight-decay", 0.0, o.spec.optimizer.weight_decay))
    return args.usage_error("--weight-decay expects a number >= 0, got '" +
                            args.get("--weight-decay") + "'");
  const std::string scheduler = args.get("--scheduler", *executors > 1 ? "cpf" : "sequential");
  if (scheduler != "sequential" && scheduler != "cpf" && scheduler != "fifo" &&
      scheduler != "shared-queue")
    return args.usage_error("unknown scheduler '" + scheduler +
                            "' (expected sequential, cpf, fifo or shared-queue)");
  if (scheduler == "sequential" && *executors > 1)
    return args.usage_error(
        "the sequential scheduler runs one executor; use --scheduler cpf|fifo|shared-queue");
  o.session.executors = static_cast<int>(*executors);
  o.session.threads = static_cast<int>(*threads);
  o.session.scheduler = scheduler;
  o.session.pin = !args.has("--no-pin");
  const bool json = args.has("--json");

  auto g = load_model(model_path);
  if (!g.is_ok()) return runtime_error(g.status());
  if (args.has("--fuse-rnn")) {
    auto fused = graph::passes::fuse_rnn_cells_for_training(**g, ops::Registry::get(), model_path);
    if (!fused.is_ok()) return runtime_error(fused.status());
    if (!json)
      std::printf("fused %d unrolled cells into %d sequence ops\n", fused->cells, fused->sequences);
    g = std::shared_ptr<const graph::Graph>(
        std::make_shared<const graph::Graph>(std::move(fused->graph)));
  }
  auto batch = graph::read_npz(args.get("--batch-from"));
  if (!batch.is_ok()) return runtime_error(batch.status());
  auto ts = engine::TrainingSession::create(*g, o);
  if (!ts.is_ok()) return runtime_error(ts.status());
  engine::TrainingSession& s = **ts;
  engine::NamedTensors feed;
  for (const std::string& name : s.training_graph().data_inputs) {
    auto it =
        std::find_if(batch->begin(), batch->end(), [&](const auto& p) { return p.first == name; });
    if (it == batch->end()) {
      std::string have;
      for (const auto& [n, t] : *batch) have += (have.empty() ? "" : ", ") + n;
      return runtime_error(
          Status::invalid_argument(args.get("--batch-from") + ": no array '" + name +
                                   "' (the training step reads it); the archive holds: " +
                                   (have.empty() ? "nothing" : have)));
    }
    feed.push_back(*it);
  }

  // The inter-op parallelism the scheduler gets: the model's forward graph against the whole
  // step graph (forward + loss + backward + update; seed 002 section 6: the backward pass
  // roughly doubles the number of parallel ops).
  auto fwd_stats = engine::compute_graph_stats(**g);
  auto step_stats = engine::compute_graph_stats(s.training_graph().graph);
  if (!fwd_stats.is_ok()) return runtime_error(fwd_stats.status());
  if (!step_stats.is_ok()) return runtime_error(step_stats.status());
  if (!json) {
    std::printf("training %s: %zu weights, %s lr %g; step graph %zu nodes (%s)\n",
                model_path.c_str(), s.weights().size(), o.spec.optimizer.kind.c_str(),
                o.spec.optimizer.lr, s.training_graph().graph.num_nodes(),
                s.session().config_summary().c_str());
    std::printf(
        "parallelism: forward %zu ops, max width %zu, average %.2f; step graph %zu ops, max width "
        "%zu, average %.2f\n",
        fwd_stats->num_nodes, fwd_stats->max_width, fwd_stats->average_parallelism,
        step_stats->num_nodes, step_stats->max_width, step_stats->average_parallelism);
  }
  nlohmann::ordered_json jsteps = nlohmann::ordered_json::array();
  float last = 0;
  for (long i = 0; i < *steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto l = s.train_step(feed);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!l.is_ok()) return runtime_error(l.status());
    last = *l;
    if (json)
      jsteps.push_back({{"step", i + 1}, {"loss", *l}, {"ms", ms}});
    else
      std::printf("step %ld loss %.6f time %.3f ms\n", i + 1, static_cast<double>(*l), ms);
  }
  if (args.has("--save")) {
    Status st = s.save(args.get("--save"));
    if (!st.is_ok()) return runtime_error(st);
  }
  if (args.has("--save-npy")) {
    Status st = s.save_npy(args.get("--save-npy"));
    if (!st.is_ok()) return runtime_error(st);
  }
  if (json) {
    nlohmann::ordered_json j;
    j["model"] = model_path;
    j["optimizer"] = o.spec.optimizer.kind;
    j["lr"] = o.spec.optimizer.lr;
    j["weights"] = s.weights().size();
    j["step_graph_nodes"] = s.training_graph().graph.num_nodes();
    j["parallelism"] = {{"forward",
                         {{"ops", fwd_stats->num_nodes},
                          {"max_width", fwd_stats->max_width},
                          {"average", fwd_stats->average_parallelism}}},
                        {"step",
                         {{"ops", step_stats->num_nodes},
                          {"max_width", step_stats->max_width},
                          {"average", step_stats->average_parallelism}}}};
    j["config"] = s.session().config_summary();
    j["steps"] = jsteps;
    j["final_loss"] = last;
    if (args.has("--save")) j["saved"] = args.get("--save");
    std::printf("%s\n", j.dump(2).c_str());
  } else if (args.has("--save")) {
    std::printf("saved %s\n", args.get("--save").c_str());
  }
  return kExitOk;
}

}  // namespace graphi::cli
