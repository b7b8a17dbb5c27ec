// `graphi run/info --rnn-weights` (issue 17): bf16 weights reach the fused kernels, bad values
// are usage errors naming the option.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

TEST_CASE("cli: --rnn-weights bf16 for run and info, bad values", "[cli]") {
  const fs::path dir = test::scratch_dir("cli_rnn_weights");
  const std::string model = (dir / "lstm.graphi").string();
  auto m = test::run_graphi(
      dir, {"model", "lstm", "--input", "16", "--hidden", "32", "--seq", "6", "-o", model});
  INFO(m.out << m.err);
  REQUIRE(m.rc == 0);
  auto info = test::run_graphi(dir, {"info", model, "--threads", "2", "--rnn-weights", "bf16"});
  INFO(info.out << info.err);
  CHECK(info.rc == 0);
  CHECK(info.out.find("bf16 weights (") != std::string::npos);
  auto plain = test::run_graphi(dir, {"info", model, "--threads", "2"});
  CHECK(plain.rc == 0);
  CHECK(plain.out.find("bf16 weights") == std::string::npos);
  auto run = test::run_graphi(
      dir, {"run", model, "--no-plan", "--iterations", "1", "--json", "--rnn-weights", "bf16"});
  INFO(run.out << run.err);
  CHECK(run.rc == 0);
  CHECK(run.out.find("\"rnn_weights\":\"bf16\"") != std::string::npos);
  auto bad = test::run_graphi(dir, {"run", model, "--no-plan", "--rnn-weights", "fp16"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--rnn-weights") != std::string::npos);
  CHECK(bad.err.find("expected fp32, bf16 or int8") != std::string::npos);
  auto i8 = test::run_graphi(
      dir, {"run", model, "--no-plan", "--iterations", "1", "--json", "--rnn-weights", "int8"});
  INFO(i8.out << i8.err);
  CHECK(i8.rc == 0);
  CHECK(i8.out.find("\"rnn_weights\":\"int8\"") != std::string::npos);
  auto info8 = test::run_graphi(dir, {"info", model, "--threads", "2", "--rnn-weights", "int8"});
  CHECK(info8.rc == 0);
  CHECK(info8.out.find("int8 weights (") != std::string::npos);
  auto bad_info = test::run_graphi(dir, {"info", model, "--rnn-weights", "fp16"});
  CHECK(bad_info.rc == 2);
}
