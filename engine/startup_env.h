// The OpenMP affinity variables as they were when the process started, before any library
// constructor could change them. LIBXSMM's initialisation (linked into graphi) sets
// OMP_PROC_BIND=TRUE when no affinity variable is set; libgomp has read its environment by then
// (it is initialised first, as a dependency), so that value binds nothing and must not be
// reported to the user as a setting of theirs.
#pragma once

namespace graphi::engine {

// getenv(name) as of process start for OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY and
// KMP_AFFINITY (nullptr when unset then); the current getenv(name) for any other name.
const char* startup_getenv(const char* name);

}  // namespace graphi::engine
