// Bounded memory (graph/memory_budget.h): a model whose file, weights or planned memory exceed
// the budget (an explicit --max-memory / max_memory, else the memory the machine has available)
// is refused before the allocation with kOutOfMemory and a message naming the file and the
// amounts; through the engine, the C++ and C APIs and the CLI.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "engine/session.h"
#include "graph/format.h"
#include "graph/graph_builder.h"
#include "graph/memory_budget.h"
#include "graphi/graphi.h"
#include "graphi/graphi.hpp"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;
namespace fs = std::filesystem;

namespace {

// An LSTM (E 64, H 128, T 4) written as .graphi; `weights` gets the bytes of its constants,
// counted here from the graph, independently of the reader.
fs::path lstm_file(const std::string& test, uint64_t* weights) {
  models::RnnSpec spec;
  spec.input = 64;
  spec.hidden = 128;
  spec.seq = 4;
  graph::Graph g = value_or_throw(models::build_lstm(spec, ops::Registry::get()));
  *weights = 0;
  for (const graph::Value& v : g.values())
    if (v.kind == graph::ValueKind::kConstant) *weights += v.desc.bytes();
  const fs::path p = test::scratch_dir(test) / "lstm.graphi";
  REQUIRE(graph::write_graphi(g, p.string()).is_ok());
  return p;
}

}  // namespace

TEST_CASE("memory budget: sizes parse with binary units and errors say the amounts", "[memory]") {
  CHECK(value_or_throw(graph::parse_memory_size("4096", "--max-memory")) == 4096);
  CHECK(value_or_throw(graph::parse_memory_size("512M", "--max-memory")) == (512ull << 20));
  CHECK(value_or_throw(graph::parse_memory_size("2g", "--max-memory")) == (2ull << 30));
  CHECK(value_or_throw(graph::parse_memory_size("1.5GiB", "--max-memory")) == (3ull << 29));
  CHECK(value_or_throw(graph::parse_memory_size("64KB", "--max-memory")) == (64ull << 10));
  for (const char* bad : {"", "abc", "0", "-5", "12Q", "1e9", "0.1"}) {
    auto r = graph::parse_memory_size(bad, "--max-memory");
    INFO(bad);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("--max-memory") != std::string::npos);
  }
  CHECK(graph::human_bytes(1536) == "1.5 KiB");
  CHECK(graph::check_memory(100, 100, "x").is_ok());
  const Status over = graph::check_memory(101, 100, "m.onnx: the weights");
  CHECK(over.code() == StatusCode::kOutOfMemory);
  CHECK(over.message() ==
        "m.onnx: the weights needs 101 bytes (101 B), more than the memory limit of 100 B "
        "(--max-memory / max_memory)");
  // Without a limit, the machine's available memory applies.
  const uint64_t avail = graph::available_memory_bytes();
  REQUIRE(avail > 0);
  const Status machine = graph::check_memory(avail + (1ull << 30), 0, "m.onnx: the arena");
  CHECK(machine.code() == StatusCode::kOutOfMemory);
  CHECK(machine.message().find("this machine has available") != std::string::npos);
}

TEST_CASE("memory budget: .graphi weights over the limit are refused before they are read",
          "[memory]") {
  uint64_t weights = 0;
  const fs::path p = lstm_file("memory_graphi", &weights);
  auto g = graph::read_graphi(p.string(), ops::Registry::get(), weights - 1);
  REQUIRE_FALSE(g.is_ok());
  CHECK(g.status().code() == StatusCode::kOutOfMemory);
  CHECK(g.status().message().find(p.string() + ": the weights needs " + std::to_string(weights) +
                                  " bytes") != std::string::npos);
  CHECK(graph::read_graphi(p.string(), ops::Registry::get(), weights).is_ok());
}

TEST_CASE("memory budget: a Session over its max_memory is refused before the arena", "[memory]") {
  uint64_t weights = 0;
  const fs::path p = lstm_file("memory_session", &weights);
  auto g = std::make_shared<const graph::Graph>(
      value_or_throw(graph::read_graphi(p.string(), ops::Registry::get())));
  engine::SessionOptions o;
  o.max_memory = weights;  // the weights fit, the arena does not
  auto s = engine::Session::create(g, o);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.status().code() == StatusCode::kOutOfMemory);
  CHECK(s.status().message().find(p.string() + ": the model (weights") != std::string::npos);
  CHECK(s.status().message().find("arena") != std::string::npos);
  o.max_memory = 64ull << 20;
  CHECK(engine::Session::create(g, o).is_ok());
}

TEST_CASE("memory budget: planned memory beyond the machine's available memory is refused",
          "[memory]") {
  // y = Expand(x f32[1], [N]) with 4 N bytes above the available memory (but below the
  // physical memory, so validation accepts the shape): the arena cannot be had.
  const uint64_t avail = graph::available_memory_bytes();
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const uint64_t phys = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  const uint64_t want = avail + avail / 8;
  if (want >= phys - phys / 64) {
    WARN("skipped: the available memory is too close to the physical memory");
    return;
  }
  const auto n = static_cast<int64_t>(want / 4);
  graph::GraphBuilder b("huge_expand.graphi");
  b.add_input("x", TensorDesc{DType::kF32, {1}});
  Tensor shape(TensorDesc{DType::kI64, {1}});
  shape.data_as<int64_t>()[0] = n;
  b.add_constant("shape", std::move(shape));
  b.add_node("Expand", "expand", {"x", "shape"}, {"y"});
  b.add_output("y");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
  auto s = engine::Session::create(g);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.status().code() == StatusCode::kOutOfMemory);
  CHECK(s.status().message().find("huge_expand.graphi: the planned memory") != std::string::npos);
  CHECK(s.status().message().find("this machine has available") != std::string::npos);
}

TEST_CASE("memory budget: the C++ and C APIs and the CLI take a limit", "[memory]") {
  uint64_t weights = 0;
  const fs::path p = lstm_file("memory_api", &weights);
  graphi::SessionOptions o;
  o.executors = o.threads = 1;
  o.scheduler = "sequential";
  o.max_memory = weights / 2;
  auto s = graphi::Session::open(p.string(), o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == StatusCode::kOutOfMemory);
  CHECK(s.error().message.find(p.string()) != std::string::npos);
  o.max_memory = 64ull << 20;
  CHECK(graphi::Session::open(p.string(), o).ok());

  graphi_options c;
  graphi_options_init(&c);
  CHECK(c.max_memory == 0);
  c.executors = c.threads = 1;
  c.max_memory = 1024;
  graphi_session* h = nullptr;
  CHECK(graphi_session_open(p.c_str(), &c, &h) == GRAPHI_OUT_OF_MEMORY);
  CHECK(h == nullptr);
  CHECK(std::string(graphi_last_error()).find(p.string()) != std::string::npos);
  CHECK(std::string(graphi_last_error()).find("memory limit of 1.0 KiB") != std::string::npos);

  const fs::path dir = p.parent_path();
  auto r = test::run_graphi(
      dir, {"run", p.string(), "--no-plan", "--iterations", "1", "--max-memory", "100K"});
  CHECK(r.rc == 1);
  CHECK(r.err.find(p.string()) != std::string::npos);
  CHECK(r.err.find("memory limit of 100.0 KiB") != std::string::npos);
  r = test::run_graphi(dir, {"run", p.string(), "--max-memory", "lots"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("'lots' is not a memory size") != std::string::npos);
  r = test::run_graphi(
      dir, {"run", p.string(), "--no-plan", "--iterations", "1", "--max-memory", "64M"});
  INFO(r.err);
  CHECK(r.rc == 0);
}
