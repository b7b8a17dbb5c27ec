// The `graphi` command: dispatches to one subcommand per file (cli/<name>.cpp).
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/args.h"
#include "cli/omp_spin_default.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

const Subcommand kSubcommands[] = {
    {"run", "run a .graphi or .onnx model on .npy inputs and report latency",
     graphi::cli::run_command},
    {"info", "print a model's ops, parameters, FLOPs, parallelism and memory",
     graphi::cli::info_command},
    {"model", "generate a model file (lstm, gru, phased-lstm) with seeded random weights",
     graphi::cli::model_command},
    {"profile", "find the fastest executors x threads split of a model and cache the plan",
     graphi::cli::profile_command},
    {"simulate", "predict a model's makespan per split and policy on a machine we do not have",
     graphi::cli::simulate_command},
    {"train", "train a model: loss, gradients and optimizer step as one graph",
     graphi::cli::train_command},
    {"topo", "print the machine (cores, tiles, cpuset) and an executors x threads placement",
     graphi::cli::topo_command},
};

void print_usage(FILE* out) {
  std::fprintf(out,
               "usage: graphi <command> [options]   (graphi <command> --help for details)\n\n"
               "graphi runs static dataflow graphs of tensor ops on manycore CPUs.\n\ncommands:\n");
  for (const Subcommand& c : kSubcommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  graphi::cli::apply_omp_spin_default(argv);
  if (argc < 2) {
    print_usage(stderr);
    return graphi::cli::kExitUsage;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_usage(stdout);
    return graphi::cli::kExitOk;
  }
  if (cmd == "--version") {
    std::printf("graphi %s\n", GRAPHI_VERSION);
    return graphi::cli::kExitOk;
  }
  for (const Subcommand& c : kSubcommands) {
    if (cmd == c.name) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return graphi::cli::kExitRuntimeError;
      }
    }
  }
  std::fprintf(stderr, "error: unknown command '%s'\n", cmd.c_str());
  print_usage(stderr);
  return graphi::cli::kExitUsage;
}
