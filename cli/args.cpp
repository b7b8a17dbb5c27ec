#include "cli/args.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace graphi::cli {

void Args::option(const std::string& name, const std::string& meta, const std::string& help,
                  bool repeatable) {
  opts_.push_back({name, meta, help, repeatable});
}

void Args::positional(const std::string& meta, const std::string& help, bool required) {
  pos_.push_back({meta, help, required});
}

std::optional<int> Args::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return kExitOk;
    }
    if (a.size() > 1 && a[0] == '-') {
      std::string name = a, value;
      bool inline_value = false;
      if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      const Opt* opt = nullptr;
      for (const Opt& o : opts_)
        if (o.name == name) opt = &o;
      if (!opt) return usage_error("unknown option '" + name + "'");
      if (opt->meta.empty()) {
        if (inline_value) return usage_error("option '" + name + "' takes no value");
        value = "1";
      } else if (!inline_value) {
        if (i + 1 >= argc)
          return usage_error("option '" + name + "' needs a value (" + opt->meta + ")");
        value = argv[++i];
      }
      if (!opt->repeatable && values_.count(name))
        return usage_error("option '" + name + "' given more than once");
      values_[name].push_back(value);
      continue;
    }
    positionals_.push_back(a);
  }
  size_t required = 0;
  for (const Pos& p : pos_) required += p.required ? 1 : 0;
  if (positionals_.size() < required)
    return usage_error("missing " + pos_[positionals_.size()].meta);
  if (positionals_.size() > pos_.size())
    return usage_error("unexpected argument '" + positionals_[pos_.size()] + "'");
  return std::nullopt;
}

std::string Args::get(const std::string& name, const std::string& dflt) const {
  auto it = values_.find(name);
  return it == values_.end() ? dflt : it->second.back();
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::optional<long> Args::get_int(const std::string& name, long dflt, long min, long max) const {
  if (!has(name)) return dflt;
  std::string s = get(name);
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    usage_error("option '" + name + "' must be an integer in [" + std::to_string(min) + ", " +
                std::to_string(max) + "], got '" + s + "'");
    return std::nullopt;
  }
  return v;
}

void Args::print_help() const {
  std::printf("usage: %s\n\n%s\n", usage_.c_str(), summary_.c_str());
  if (!pos_.empty()) {
    std::printf("\narguments:\n");
    for (const Pos& p : pos_) std::printf("  %-24s %s\n", p.meta.c_str(), p.help.c_str());
  }
  std::printf("\noptions:\n");
  for (const Opt& o : opts_) {
    std::string left = o.name + (o.meta.empty() ? "" : " " + o.meta);
    std::printf("  %-24s %s%s\n", left.c_str(), o.help.c_str(),
                o.repeatable ? " (repeatable)" : "");
  }
  std::printf("  %-24s %s\n", "-h, --help", "show this help");
}

int Args::usage_error(const std::string& message) const {
  std::fprintf(stderr, "error: %s\nusage: %s\n(see --help)\n", message.c_str(), usage_.c_str());
  return kExitUsage;
}

}  // namespace graphi::cli
