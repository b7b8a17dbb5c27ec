// What every fuzz target asserts about a loader's answer, beyond "no crash" (which ASan/UBSan and
// libFuzzer check): a refused input gets a non-empty message that names the source it was given
// (the file name the front end passes), and no exception escapes the loader. A violation aborts,
// so libFuzzer records it as a finding and the replay test (replay_main.cpp) fails on it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "graph/base.h"

namespace graphi::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// An error must say what went wrong and name `source`.
inline void check_error(const Status& s, const std::string& source, const char* stage) {
  if (s.is_ok()) return;
  if (s.message().empty()) finding(std::string(stage) + ": error with an empty message");
  if (s.message().find(source) == std::string::npos)
    finding(std::string(stage) + ": error does not name '" + source + "': " + s.message());
}

// Runs `body`; an exception escaping it is a finding (loaders return Status, never throw).
template <class F>
int guarded(const char* target, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    finding(std::string(target) + ": exception escaped: " + e.what());
  } catch (...) {
    finding(std::string(target) + ": unknown exception escaped");
  }
  return 0;
}

}  // namespace graphi::fuzz
