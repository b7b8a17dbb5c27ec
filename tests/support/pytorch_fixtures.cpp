#include "tests/support/pytorch_fixtures.h"

#include <sys/wait.h>

#include <cstdlib>

#include "tests/support/test_util.h"

namespace graphi::test {

PytorchFixtures pytorch_fixtures(const std::string& tag) {
  const std::filesystem::path committed =
      std::filesystem::path(GRAPHI_SOURCE_DIR) / "tests" / "data" / "pytorch_rnn";
  const char* force = std::getenv("GRAPHI_PYTORCH_FIXTURES");
  if (force && std::string(force) == "committed")
    return {committed, false, "GRAPHI_PYTORCH_FIXTURES=committed: using the committed fixtures"};
  const std::filesystem::path out = scratch_dir("pytorch_rnn_" + tag);
  const std::string cmd = "/usr/bin/python3 '" + (committed / "gen_pytorch_rnn.py").string() +
                          "' '" + out.string() + "' > '" + (out / "gen.log").string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) return {out, true, ""};
  std::string note = code == 77    ? "torch not importable"
                     : code == 127 ? "/usr/bin/python3 missing"
                                   : "gen_pytorch_rnn.py failed (exit " + std::to_string(code) +
                                         ", see " + (out / "gen.log").string() + ")";
  return {committed, false, note + ": using the committed fixtures"};
}

}  // namespace graphi::test
