// The CLI's OpenMP spin setting: libgomp reads GOMP_SPINCOUNT once, in its constructor, before
// main() runs, so an executable that wants another default than libgomp's must put it in its
// environment and start again (engine/omp_oversubscription.h, kGompSpinCount, says why).
#pragma once

#include <string>

namespace graphi::cli {

// Call first thing in main(). When the process started without OMP_WAIT_POLICY and
// GOMP_SPINCOUNT (and GRAPHI_OMP_SPIN is not "libgomp"), re-executes /proc/self/exe with the same
// argv and GOMP_SPINCOUNT = kGompSpinCount; returns when there is nothing to do or exec fails
// (the run then goes on with libgomp's default). The re-executed process removes the variable
// again, so the commands it starts inherit the user's environment.
void apply_omp_spin_default(char** argv);

// What the OpenMP runtime was started with and why, for `graphi topo`, e.g.
// "GOMP_SPINCOUNT=10000 (graphi's default; ...)".
const std::string& omp_spin_setting();

}  // namespace graphi::cli
