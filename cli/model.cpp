// graphi model (see cli/args.h)
#include "cli/args.h"
namespace graphi::cli {
int model_command(int argc, char** argv) { return kExitUsage; }
}  // namespace graphi::cli
