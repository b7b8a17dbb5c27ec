// What a new user trips over in the first hour (issue 16): the help lists every model kind,
// `graphi model` and `graphi info` agree on the parameter count, no affinity warning the user did
// not cause, compact JSON with rounded floats, --dim errors in CLI words and as usage errors,
// and the passes line says only what happened.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/json_output.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

const std::string kFixtures = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx/";

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Significant digits of a decimal number as printed ("0.1949" -> 4, "12.0" -> 2, "3" -> 1).
// Significant digits of a JSON number's text (the mantissa's: "1.235e-05" has 4).
int significant_digits(const std::string& number) {
  std::string d;
  for (char c : number.substr(0, number.find_first_of("eE")))
    if (std::isdigit(static_cast<unsigned char>(c))) d += c;
  const size_t first = d.find_first_not_of('0');
  if (first == std::string::npos) return 0;
  const size_t last = d.find_last_not_of('0');
  return static_cast<int>(last - first + 1);
}

}  // namespace

TEST_CASE("first hour: graphi --help lists every kind graphi model generates", "[cli]") {
  const fs::path dir = test::scratch_dir("first_hour_help");
  auto r = test::run_graphi(dir, {"--help"});
  REQUIRE(r.rc == 0);
  CHECK(contains(r.out, "lstm, gru, phased-lstm"));
  auto m = test::run_graphi(dir, {"model", "--help"});
  CHECK(contains(m.out, "phased-lstm"));
}

TEST_CASE("first hour: graphi model and graphi info report the same parameter count", "[cli]") {
  const fs::path dir = test::scratch_dir("first_hour_params");
  const std::string model = (dir / "lstm.graphi").string();
  // E=64 H=128 L=2: layer 0 has 4H*(E+H) weights + 4H biases, layer 1 4H*(H+H) + 4H.
  const int64_t E = 64, H = 128;
  const int64_t want = 4 * H * (E + H) + 4 * H + 4 * H * (H + H) + 4 * H;
  auto m = test::run_graphi(dir, {"model", "lstm", "--input", "64", "--hidden", "128", "--layers",
                                  "2", "--seq", "3", "-o", model});
  INFO(m.err);
  REQUIRE(m.rc == 0);
  CHECK(contains(m.out, std::to_string(want) + " parameters"));

  auto info = test::run_graphi(dir, {"info", model, "--json"});
  INFO(info.err);
  REQUIRE(info.rc == 0);
  const auto j = nlohmann::json::parse(info.out);
  CHECK(j["parameters"].get<int64_t>() == want);
  // The fused LSTM ops hold ONNX's separate recurrent bias (4H zeros per layer): labelled.
  CHECK(j["parameters_after_passes"].get<int64_t>() == want + 2 * 4 * H);

  auto text = test::run_graphi(dir, {"info", model});
  REQUIRE(text.rc == 0);
  CHECK(contains(text.out,
                 std::to_string(want) + " in the file; " + std::to_string(want + 2 * 4 * H) + " "));
  auto stored = test::run_graphi(dir, {"info", model, "--no-fuse", "--json"});
  REQUIRE(stored.rc == 0);
  const auto s = nlohmann::json::parse(stored.out);
  CHECK(s["parameters"].get<int64_t>() == want);
  CHECK_FALSE(s.contains("parameters_after_passes"));
}

TEST_CASE("first hour: the OpenMP affinity warning appears only when the user set it", "[cli]") {
  const fs::path dir = test::scratch_dir("first_hour_affinity");
  const std::string model = (dir / "lstm.graphi").string();
  REQUIRE(test::run_graphi(
              dir, {"model", "lstm", "--input", "4", "--hidden", "8", "--seq", "3", "-o", model})
              .rc == 0);
  const std::vector<std::string> run = {"run",          model, "--executors", "2",
                                        "--iterations", "1",   "--warmup",    "0"};
  const std::string clean =
      "env -u OMP_PROC_BIND -u OMP_PLACES -u GOMP_CPU_AFFINITY -u KMP_AFFINITY";
  auto quiet = test::run_graphi(dir, run, clean);
  INFO(quiet.err);
  REQUIRE(quiet.rc == 0);
  CHECK_FALSE(contains(quiet.err, "OpenMP affinity settings ignored"));

  auto set = test::run_graphi(dir, run, clean + " OMP_PROC_BIND=close");
  INFO(set.err);
  REQUIRE(set.rc == 0);
  CHECK(contains(set.err, "OpenMP affinity settings ignored (OMP_PROC_BIND=close)"));
}

TEST_CASE("first hour: --json is one line with floats rounded, --json-indent pretty-prints",
          "[cli]") {
  const fs::path dir = test::scratch_dir("first_hour_json");
  const std::string model = (dir / "lstm.graphi").string();
  REQUIRE(test::run_graphi(
              dir, {"model", "lstm", "--input", "4", "--hidden", "8", "--seq", "3", "-o", model})
              .rc == 0);
  auto r = test::run_graphi(dir, {"run", model, "--json", "--iterations", "5"});
  INFO(r.err);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  REQUIRE(!r.out.empty());
  CHECK(r.out.find('\n') == r.out.size() - 1);  // one line
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"median", "min", "p90", "mean"}) {
    INFO(k);
    const double v = j["latency_ms"][k].get<double>();
    CHECK(v > 0);
    // The printed JSON number, found in the text after the key: at most 4 significant digits.
    const std::string key = std::string("\"") + k + "\":";
    const size_t at = r.out.find(key, r.out.find("latency_ms"));
    REQUIRE(at != std::string::npos);
    const std::string num =
        r.out.substr(at + key.size(), r.out.find_first_of(",}", at) - at - key.size());
    CHECK(significant_digits(num) <= 4);
  }
  auto info = test::run_graphi(dir, {"info", model, "--json"});
  REQUIRE(info.rc == 0);
  CHECK(info.out.find('\n') == info.out.size() - 1);

  auto pretty = test::run_graphi(dir, {"run", model, "--json", "--json-indent", "2"});
  REQUIRE(pretty.rc == 0);
  CHECK(std::count(pretty.out.begin(), pretty.out.end(), '\n') > 10);
  CHECK(nlohmann::json::parse(pretty.out)["outputs"] == j["outputs"]);
  CHECK(test::run_graphi(dir, {"run", model, "--json-indent", "x"}).rc == 2);
}

TEST_CASE("first hour: JSON floats keep 4 significant digits whatever their binary value",
          "[cli]") {
  // 0.0008854 printed by nlohmann::json itself is 0.0008854000000000001 (a run's "mean" once).
  nlohmann::json j = {{"mean", 0.00088540000000001},
                      {"tiny", 1.234567e-7},
                      {"big", 123456.789},
                      {"neg", -0.3333333333},
                      {"whole", 2.0},
                      {"count", 5},
                      {"name", "a \"quoted\" \u0001 name"},
                      {"nested", {{"list", {0.1 + 0.2, 1.5}}}}};
  const std::string text = graphi::cli::json_text(j, 0);
  INFO(text);
  CHECK(text.find("\"mean\":0.0008854,") != std::string::npos);
  CHECK(text.find("\"tiny\":1.235e-07") != std::string::npos);
  CHECK(text.find("\"big\":1.235e+05") != std::string::npos);
  CHECK(text.find("\"neg\":-0.3333") != std::string::npos);
  CHECK(text.find("\"whole\":2.0") != std::string::npos);
  CHECK(text.find("\"count\":5") != std::string::npos);
  CHECK(text.find("[0.3,1.5]") != std::string::npos);
  const nlohmann::json back = nlohmann::json::parse(text);
  CHECK(back["name"] == j["name"]);  // strings, control characters included, untouched
  CHECK(back["mean"].get<double>() == 0.0008854);
  CHECK(back["nested"]["list"][0].get<double>() == 0.3);
  // Pretty-printed: the same numbers.
  const nlohmann::json pretty = nlohmann::json::parse(graphi::cli::json_text(j, 2));
  CHECK(pretty == back);
}

TEST_CASE("first hour: --dim problems say --dim in CLI words and are usage errors (exit 2)",
          "[cli]") {
  const fs::path dir = test::scratch_dir("first_hour_dim");
  const std::string model = kFixtures + "gru_dynamic_batch.onnx";
  auto missing = test::run_graphi(dir, {"info", model});
  INFO(missing.err);
  CHECK(missing.rc == 2);
  CHECK(contains(missing.err, "give its value with --dim batch=N"));
  CHECK_FALSE(contains(missing.err, "ImportOptions"));

  auto unknown = test::run_graphi(dir, {"run", model, "--dim", "batch=2", "--dim", "other=3"});
  INFO(unknown.err);
  CHECK(unknown.rc == 2);
  CHECK(contains(unknown.err, "--dim other names no symbolic dim"));
  // The same class of mistake as an unknown --input, which is also a usage error.
  auto bad_input = test::run_graphi(dir, {"run", model, "--dim", "batch=2", "--input",
                                          "nope=" + kFixtures + "gru_dynamic_batch.in0.npy"});
  CHECK(bad_input.rc == 2);
}

TEST_CASE("first hour: the passes line says only what the passes did", "[cli]") {
  const fs::path dir = test::scratch_dir("first_hour_passes");
  const std::string model = (dir / "lstm.graphi").string();
  REQUIRE(test::run_graphi(dir, {"model", "lstm", "--input", "4", "--hidden", "8", "--layers", "2",
                                 "--seq", "3", "-o", model})
              .rc == 0);
  auto lstm = test::run_graphi(dir, {"run", model, "--iterations", "1"});
  INFO(lstm.err);
  REQUIRE(lstm.rc == 0);
  CHECK(contains(lstm.err, "graphi: fused 6 LSTM cells into 2 LSTM sequence ops"));
  CHECK_FALSE(contains(lstm.err, " 0 GRU"));
  CHECK_FALSE(contains(lstm.err, "into 0"));

  // An MLP: nothing to fuse, so no passes line at all.
  auto mlp = test::run_graphi(dir, {"run", kFixtures + "mlp.onnx", "--iterations", "1"});
  INFO(mlp.err);
  REQUIRE(mlp.rc == 0);
  CHECK_FALSE(contains(mlp.err, "graphi: fused"));
  CHECK_FALSE(contains(mlp.err, "(--no-fuse: off)"));
}
