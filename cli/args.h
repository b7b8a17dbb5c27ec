// A small declarative option parser shared by every subcommand: declared options produce the
// --help text, unknown options and missing values are usage errors (exit code 2).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace graphi::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsage = 2;

class Args {
 public:
  // usage: "graphi run MODEL [options]"; summary: one paragraph printed under it.
  Args(std::string usage, std::string summary)
      : usage_(std::move(usage)), summary_(std::move(summary)) {}

  // Declare before parse(). `meta` is the value placeholder ("N"); empty for a flag.
  void option(const std::string& name, const std::string& meta, const std::string& help,
              bool repeatable = false);
  void flag(const std::string& name, const std::string& help) { option(name, "", help); }
  void positional(const std::string& meta, const std::string& help, bool required = true);

  // Returns nullopt to continue, or an exit code: kExitOk after --help, kExitUsage after a
  // usage error (message printed to stderr with a hint to use --help).
  std::optional<int> parse(int argc, char** argv);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& dflt = "") const;
  std::vector<std::string> get_all(const std::string& name) const;
  // Integer option; on a malformed or out-of-range value prints a usage error and returns nullopt.
  std::optional<long> get_int(const std::string& name, long dflt, long min, long max) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  void print_help() const;
  int usage_error(const std::string& message) const;  // prints, returns kExitUsage

 private:
  struct Opt {
    std::string name, meta, help;
    bool repeatable;
  };
  struct Pos {
    std::string meta, help;
    bool required;
  };
  std::string usage_, summary_;
  std::vector<Opt> opts_;
  std::vector<Pos> pos_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

// Subcommands, one file each (cli/<name>.cpp).
int run_command(int argc, char** argv);       // graphi run
int info_command(int argc, char** argv);      // graphi info
int model_command(int argc, char** argv);     // graphi model
int topo_command(int argc, char** argv);      // graphi topo
int profile_command(int argc, char** argv);   // graphi profile
int simulate_command(int argc, char** argv);  // graphi simulate
int train_command(int argc, char** argv);     // graphi train

}  // namespace graphi::cli
