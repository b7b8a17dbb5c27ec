// `graphi model phased-lstm` end to end: the generated file runs (`graphi run`, 1 and 2 threads,
// identical outputs) and `graphi info` shows the PhasedLSTM kernel. The numbers themselves are
// checked against the reference in tests/models/test_phased_lstm_model.cpp.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/npy.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

struct Run {
  int rc = -1;
  std::string out;
};

Run run_graphi(const fs::path& dir, const std::string& args) {
  const fs::path log = dir / "log.txt";
  const std::string cmd = "'" + test::cli_path() + "' " + args + " >'" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(log);
  std::ostringstream ss;
  ss << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
}

}  // namespace

TEST_CASE("cli: graphi model phased-lstm, run and info", "[cli][phased_lstm]") {
  const fs::path dir = test::scratch_dir("cli_phased_lstm");
  const std::string model = (dir / "p.graphi").string();
  Run m =
      run_graphi(dir, "model phased-lstm --input 6 --hidden 20 --layers 2 --batch 3 --seq 5 -o '" +
                          model + "'");
  INFO(m.out);
  REQUIRE(m.rc == 0);
  CHECK(m.out.find("phased-lstm E=6 H=20 L=2 B=3 T=5") != std::string::npos);
  Run info = run_graphi(dir, "info '" + model + "'");
  INFO(info.out);
  CHECK(info.rc == 0);
  CHECK(info.out.find("phased_lstm_wcs") != std::string::npos);
  std::vector<Tensor> ys;
  for (int threads : {1, 2}) {
    const fs::path out = dir / ("out" + std::to_string(threads));
    Run r = run_graphi(dir, "run '" + model + "' --no-pin --iterations 1 --threads " +
                                std::to_string(threads) + " --output-dir '" + out.string() + "'");
    INFO(r.out);
    REQUIRE(r.rc == 0);
    auto y = graph::read_npy((out / "y.npy").string());
    REQUIRE(y.is_ok());
    CHECK(y->shape() == Shape{5, 3, 20});
    ys.push_back(std::move(*y));
  }
  CHECK(test::max_rel_error(ys[0], ys[1]) <= 1e-5);
  Run bad = run_graphi(dir, "model phased-lstmx --input 1 --hidden 1 --seq 1 -o x.graphi");
  CHECK(bad.rc == 2);
  CHECK(bad.out.find("expected lstm, gru or phased-lstm") != std::string::npos);
}
