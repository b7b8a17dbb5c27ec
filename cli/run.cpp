// graphi run (see cli/args.h)
#include "cli/args.h"
namespace graphi::cli {
int run_command(int argc, char** argv) { return kExitUsage; }
}  // namespace graphi::cli
