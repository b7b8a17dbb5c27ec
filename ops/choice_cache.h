// The on-disk cache of choices graphi measures at init (the RNN schedule search,
// ops/rnn/rnn_schedule.h; direct or Winograd per convolution, ops/conv_algorithm.h): one JSON
// file per kind, {"version": 1, "entries": {"KEY|SIGNATURE": {...}}}, under $GRAPHI_CACHE_DIR,
// else $XDG_CACHE_HOME/graphi, else $HOME/.cache/graphi. The signature names the machine and the
// code that measured, so an entry is reused only where it was measured.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "graph/base.h"

namespace graphi::ops {

// "AMD EPYC|fam 25 model 17|2 cpus|L2 1048576": the CPU model, its family and model numbers,
// the logical CPUs and the L2 size, the machine part of every signature. Computed once.
std::string machine_signature();

// The path of `file_name` in the cache directory; "" if none of the variables is set.
std::string choice_cache_path(const std::string& file_name);

// The entry for key (key and signature joined by '|'), or nullopt if the file or entry is
// missing. A corrupt file is nullopt plus a warning on stderr naming `what` (once per path).
// Never throws.
std::optional<nlohmann::json> load_choice(const std::string& path, const std::string& key,
                                          const char* what);

// Adds or replaces the entry (read-modify-write under a process-wide mutex, written to a
// temporary file and renamed, so readers never see a half-written file; a corrupt file is
// replaced). Errors (an unwritable directory) come back as Status; callers warn and go on.
Status store_choice(const std::string& path, const std::string& key, nlohmann::json entry);

// Writes `j` (dump(indent)) to a temporary file beside `path` and renames it over `path`, so
// readers never see a half-written file; creates the directory. Errors come back as Status.
Status write_json_file(const std::string& path, const nlohmann::json& j, int indent);

// Prints "graphi: warning: <what> cache PATH: MSG (ignored; recomputing)" once per path.
void warn_choice_cache(const std::string& path, const char* what, const std::string& msg);

}  // namespace graphi::ops
