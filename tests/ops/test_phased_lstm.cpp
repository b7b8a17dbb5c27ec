// The PhasedLSTM op (ops/rnn/phased_lstm.h) against two independent references: the naive double
// reference of tests/support/reference_phased_lstm.h on random cases (directions, layouts,
// biases, peepholes, clip, input_forget, uneven lengths, initial states, alpha, constant and fed
// weights, teams of 1-3 threads through an engine Session), and the torch implementation of the
// paper's equations in tests/data/pytorch_rnn/gen_pytorch_rnn.py (the phased_* fixtures).
#include <omp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "ops/registry.h"
#include "ops/rnn/phased_lstm.h"
#include "tests/support/pytorch_fixtures.h"
#include "tests/support/reference_phased_lstm.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

constexpr double kTol = 1e-4;
constexpr int kInputs = 12;

// Builds a one-node PhasedLSTM graph (absent inputs -> "", constant[i] -> a constant) and runs it
// through a sequential Session of `threads` threads. Returns the outputs or the error.
Result<std::vector<Tensor>> run_phased(const graph::Attributes& attrs,
                                       const std::vector<std::optional<Tensor>>& inputs,
                                       int num_outputs, int threads,
                                       const std::vector<bool>& constant) {
  graph::GraphBuilder b("<PhasedLSTM test>");
  std::vector<std::string> names;
  engine::NamedTensors feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      names.push_back("");
      continue;
    }
    names.push_back("in" + std::to_string(i));
    if (i < constant.size() && constant[i]) {
      b.add_constant(names.back(), *inputs[i]);
    } else {
      b.add_input(names.back(), inputs[i]->desc());
      feeds.push_back({names.back(), *inputs[i]});
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) {
    outs.push_back("out" + std::to_string(i));
    b.add_output(outs.back());
  }
  b.add_node("PhasedLSTM", "plstm", names, outs, attrs);
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, b.finish(ops::Registry::get()));
  engine::SessionOptions so;
  so.threads = threads;
  so.pin = false;
  GRAPHI_ASSIGN_OR_RETURN(
      auto session, engine::Session::create(std::make_shared<graph::Graph>(std::move(g)), so));
  GRAPHI_ASSIGN_OR_RETURN(engine::NamedTensors out, session->run(feeds));
  std::vector<Tensor> result;
  for (auto& [name, t] : out) result.push_back(std::move(t));
  return result;
}

// Selects the kernel for a team of `team_size` but runs it on `threads` OpenMP threads (the
// runtime may hand a kernel a smaller team than planned), outside any engine.
Result<std::vector<Tensor>> run_kernel_directly(const graph::Attributes& attrs,
                                                const std::vector<std::optional<Tensor>>& inputs,
                                                int team_size, int threads) {
  graph::GraphBuilder b("<PhasedLSTM kernel>");
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(inputs[i] ? "in" + std::to_string(i) : "");
    if (inputs[i]) b.add_constant(names.back(), *inputs[i]);
  }
  for (const char* o : {"y", "yh", "yc"}) b.add_output(o);
  b.add_node("PhasedLSTM", "plstm", names, {"y", "yh", "yc"}, attrs);
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, b.finish(ops::Registry::get()));
  const graph::Node& node = g.node(0);
  ops::KernelContext ctx{node, {}, {}, {}, team_size, node.where()};
  std::vector<const void*> in_ptrs;
  for (graph::ValueId v : node.inputs) {
    const bool present = v != graph::kNoId;
    ctx.inputs.push_back(present ? &g.value(v).desc : nullptr);
    ctx.const_inputs.push_back(present ? g.value(v).data.get() : nullptr);
    in_ptrs.push_back(present ? g.value(v).data->data() : nullptr);
  }
  std::vector<Tensor> outs;
  for (graph::ValueId v : node.outputs) {
    ctx.outputs.push_back(&g.value(v).desc);
    Tensor t(g.value(v).desc);
    std::fill(t.data_as<float>(), t.data_as<float>() + t.numel(), 12345.0f);  // poison
    outs.push_back(std::move(t));
  }
  std::vector<void*> out_ptrs;
  for (Tensor& t : outs) out_ptrs.push_back(t.data());
  GRAPHI_ASSIGN_OR_RETURN(std::unique_ptr<ops::Kernel> kernel, ops::Registry::get().select(ctx));
  const size_t bytes = (kernel->scratch_bytes() + 63) / 64 * 64;
  void* scratch = bytes ? std::aligned_alloc(64, bytes) : nullptr;
  if (scratch) std::memset(scratch, 0xff, bytes);  // NaN garbage: nothing may be read unwritten
  ops::Buffers io{in_ptrs, out_ptrs};
#pragma omp parallel num_threads(threads)
  kernel->run(ops::TeamContext{omp_get_thread_num(), omp_get_num_threads(), scratch, bytes}, io);
  std::free(scratch);
  return outs;
}

struct Case {
  int64_t T = 3, B = 2, I = 3, H = 4;
  std::string direction = "forward";
  int layout = 0;
  bool bias = true, lens = false, init = false, peephole = false, input_forget = false;
  double clip = 0, alpha = 0.001;
  bool constant = true;
  int outputs = 3;
  uint64_t seed = 1;
  bool mismatch = false;  // also run the kernel on teams of another size than planned

  std::string describe() const {
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "T=%lld B=%lld I=%lld H=%lld %s layout=%d bias=%d lens=%d init=%d peep=%d "
                  "if=%d clip=%g alpha=%g const=%d outs=%d seed=%llu",
                  (long long)T, (long long)B, (long long)I, (long long)H, direction.c_str(), layout,
                  bias, lens, init, peephole, input_forget, clip, alpha, constant, outputs,
                  (unsigned long long)seed);
    return buf;
  }
};

Tensor uniform(const Shape& s, std::mt19937_64& rng, double lo, double hi) {
  Tensor t(TensorDesc{DType::kF32, s});
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(u(rng));
  return t;
}

void check_case(const Case& c, const std::vector<int>& thread_counts) {
  INFO(c.describe());
  std::mt19937_64 rng(c.seed);
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, T = c.T, B = c.B, H = c.H;
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));
  std::vector<std::optional<Tensor>> in(kInputs);
  in[0] = uniform(c.layout ? Shape{B, T, c.I} : Shape{T, B, c.I}, rng, -1, 1);
  in[1] = uniform({D, 4 * H, c.I}, rng, -bound, bound);
  in[2] = uniform({D, 4 * H, H}, rng, -bound, bound);
  if (c.bias) in[3] = uniform({D, 8 * H}, rng, -bound, bound);
  if (c.lens) {
    Tensor l(TensorDesc{DType::kI32, {B}});
    std::uniform_int_distribution<int> u(0, static_cast<int>(T));
    for (int64_t b = 0; b < B; ++b) l.data_as<int32_t>()[b] = b == 0 ? static_cast<int>(T) : u(rng);
    in[4] = std::move(l);
  }
  const Shape state = c.layout ? Shape{B, D, H} : Shape{D, B, H};
  if (c.init) {
    in[5] = uniform(state, rng, -0.5, 0.5);
    in[6] = uniform(state, rng, -0.5, 0.5);
  }
  if (c.peephole) in[7] = uniform({D, 3 * H}, rng, -0.5, 0.5);
  // Increasing irregular timestamps per batch entry.
  Tensor times(TensorDesc{DType::kF32, c.layout ? Shape{B, T} : Shape{T, B}});
  std::uniform_real_distribution<double> dt(0.1, 2.0);
  for (int64_t b = 0; b < B; ++b) {
    double t = dt(rng);
    for (int64_t s = 0; s < T; ++s, t += dt(rng))
      times.data_as<float>()[c.layout ? b * T + s : s * B + b] = static_cast<float>(t);
  }
  in[8] = std::move(times);
  Tensor tau(TensorDesc{DType::kF32, {D, H}});
  std::uniform_real_distribution<double> lt(std::log(0.5), std::log(6.0));
  for (int64_t i = 0; i < D * H; ++i)
    tau.data_as<float>()[i] = static_cast<float>(std::exp(lt(rng)));
  Tensor shift = uniform({D, H}, rng, 0, 1);
  for (int64_t i = 0; i < D * H; ++i) shift.data_as<float>()[i] *= tau.data_as<float>()[i];
  in[9] = std::move(tau);
  in[10] = std::move(shift);
  in[11] = uniform({D, H}, rng, 0.1, 0.7);

  graph::Attributes a;
  a.set("hidden_size", H);
  a.set("direction", c.direction);
  if (c.layout) a.set("layout", int64_t{1});
  if (c.clip > 0) a.set("clip", c.clip);
  if (c.input_forget) a.set("input_forget", int64_t{1});
  if (c.alpha != 0.001) a.set("alpha", c.alpha);

  test::PhasedLstmRefSpec rs;
  rs.hidden = H;
  rs.direction = c.direction;
  rs.layout = c.layout;
  rs.alpha = c.alpha;
  rs.clip = c.clip;
  rs.input_forget = c.input_forget;
  auto p = [&](int i) { return in[i] ? &*in[i] : nullptr; };
  const std::vector<Tensor> want = test::reference_phased_lstm(
      rs, {p(0), p(1), p(2), p(3), p(4), p(5), p(6), p(7), p(8), p(9), p(10), p(11)});

  const bool k = c.constant;
  const std::vector<bool> constant = {false, k, k, k, false, false, false, k, false, k, k, k};
  for (int threads : thread_counts) {
    INFO("threads " << threads);
    auto out = run_phased(a, in, c.outputs, threads, constant);
    INFO((out.is_ok() ? std::string("ok") : out.status().message()));
    REQUIRE(out.is_ok());
    REQUIRE(out->size() == static_cast<size_t>(c.outputs));
    for (int i = 0; i < c.outputs; ++i) {
      const double err = test::max_rel_error((*out)[i], want[i]);
      INFO("output " << i << " max rel error " << err);
      CHECK(err <= kTol);
    }
  }
  if (!c.mismatch) return;
  for (auto [team, threads] :
       {std::pair{3, 1}, std::pair{3, 2}, std::pair{2, 1}, std::pair{1, 2}}) {
    INFO("kernel planned for " << team << " threads, run on " << threads);
    auto out = run_kernel_directly(a, in, team, threads);
    INFO((out.is_ok() ? std::string("ok") : out.status().message()));
    REQUIRE(out.is_ok());
    for (int i = 0; i < 3; ++i) {
      const double err = test::max_rel_error((*out)[i], want[i]);
      INFO("output " << i << " max rel error " << err);
      CHECK(err <= kTol);
    }
  }
}

}  // namespace

TEST_CASE("phased lstm: registered, kernel vs naive reference on random cases", "[phased_lstm]") {
  REQUIRE(ops::Registry::get().find("PhasedLSTM") != nullptr);
  std::mt19937_64 rng(7);
  const char* dirs[] = {"forward", "reverse", "bidirectional"};
  for (int i = 0; i < 24; ++i) {
    Case c;
    c.seed = 100 + i;
    c.T = 1 + rng() % 6;
    c.B = 1 + rng() % 5;
    c.I = 1 + rng() % 7;
    c.H = (i % 4 == 3) ? 17 + rng() % 30 : 1 + rng() % 12;
    c.direction = dirs[i % 3];
    c.layout = (i / 3) % 2;
    c.bias = rng() % 4 != 0;
    c.lens = rng() % 2;
    c.init = rng() % 2;
    c.peephole = rng() % 3 == 0;
    c.input_forget = rng() % 5 == 0;
    c.clip = rng() % 4 == 0 ? 0.8 : 0.0;
    c.alpha = rng() % 3 == 0 ? 0.0 : rng() % 2 ? 0.001 : 0.05;
    c.constant = rng() % 3 != 0;
    c.outputs = 1 + static_cast<int>(rng() % 3);
    check_case(c, {1, 2});
  }
}

TEST_CASE("phased lstm: several blocks per direction, chunked hoisting, teams of 1-3",
          "[phased_lstm]") {
  Case c;
  c.T = 40;
  c.B = 32;
  c.I = 8;
  c.H = 128;  // 8 lines per direction, split over the team; 256 KiB of gates per step: 2 chunks
  c.direction = "bidirectional";
  c.lens = true;
  c.init = true;
  c.peephole = true;
  c.mismatch = true;
  check_case(c, {1, 2, 3});
  c.mismatch = false;
  c.layout = 1;
  c.constant = false;
  c.seed = 2;
  check_case(c, {2});
}

TEST_CASE("phased lstm: torch implementation of the paper's equations (fixtures)",
          "[phased_lstm]") {
  const test::PytorchFixtures fx = test::pytorch_fixtures("phased");
  if (!fx.regenerated) WARN(fx.note);
  int ran = 0;
  for (const auto& e : std::filesystem::directory_iterator(fx.dir)) {
    const std::filesystem::path dir = e.path();
    if (!e.is_directory() || !std::filesystem::exists(dir / "case.json")) continue;
    std::ifstream f(dir / "case.json");
    const nlohmann::json j = nlohmann::json::parse(f);
    if (j["kind"] != "phased_lstm") continue;
    INFO("case " << dir.filename().string());
    auto load = [&](const std::string& name) -> std::optional<Tensor> {
      const auto path = dir / (name + ".npy");
      if (!std::filesystem::exists(path)) return std::nullopt;
      auto t = graph::read_npy(path.string());
      REQUIRE(t.is_ok());
      return std::move(*t);
    };
    std::vector<std::optional<Tensor>> in = {load("X"),         load("W"),       load("R"),
                                             load("B"),         load("lengths"), load("initial_h"),
                                             load("initial_c"), std::nullopt,    load("times"),
                                             load("tau"),       load("shift"),   load("r_on")};
    graph::Attributes a;
    a.set("hidden_size", j["hidden_size"].get<int64_t>());
    a.set("direction", j["direction"].get<std::string>());
    a.set("alpha", j["alpha"].get<double>());
    const std::vector<std::optional<Tensor>> want = {load("Y"), load("Y_h"), load("Y_c")};
    for (int threads : {1, 2}) {
      for (bool constant : {true, false}) {
        INFO("threads " << threads << " constant " << constant);
        const bool k = constant;
        auto out =
            run_phased(a, in, 3, threads, {false, k, k, k, false, false, false, k, false, k, k, k});
        INFO((out.is_ok() ? std::string("ok") : out.status().message()));
        REQUIRE(out.is_ok());
        for (int i = 0; i < 3; ++i) {
          REQUIRE(want[i].has_value());
          const double err = test::max_rel_error((*out)[i], *want[i]);
          INFO("output " << i << " max rel error " << err);
          CHECK(err <= kTol);
        }
      }
    }
    ++ran;
  }
  CHECK(ran == 3);
}

TEST_CASE("phased lstm: errors name the node, input and shapes", "[phased_lstm]") {
  auto f32 = [](Shape s) { return Tensor(TensorDesc{DType::kF32, std::move(s)}); };
  auto base = [&] {
    std::vector<std::optional<Tensor>> in(kInputs);
    in[0] = f32({3, 2, 4});
    in[1] = f32({1, 8, 4});
    in[2] = f32({1, 8, 2});
    in[8] = f32({3, 2});
    in[9] = f32({1, 2});
    in[10] = f32({1, 2});
    in[11] = f32({1, 2});
    for (int i : {9, 11})
      for (int64_t k = 0; k < 2; ++k) in[i]->data_as<float>()[k] = 0.5f;
    return in;
  };
  graph::Attributes a;
  a.set("hidden_size", int64_t{2});
  const std::vector<bool> constant(kInputs, true);
  auto error_of = [&](const graph::Attributes& attrs, std::vector<std::optional<Tensor>> in) {
    std::vector<bool> k(kInputs, false);
    for (int i : {1, 2, 9, 10, 11}) k[i] = true;
    auto r = run_phased(attrs, in, 1, 1, k);
    return r.is_ok() ? std::string() : r.status().message();
  };
  CHECK(error_of(a, base()).empty());
  {
    auto in = base();
    in[8] = f32({2, 3});
    CHECK_THAT(error_of(a, in), Catch::Contains("node 'plstm' (PhasedLSTM)") &&
                                    Catch::Contains("input 8 (times) is float32[2, 3]") &&
                                    Catch::Contains("expected float32[3, 2]"));
  }
  {
    auto in = base();
    in[10] = std::nullopt;
    CHECK_THAT(error_of(a, in), Catch::Contains("input 10 (shift) is required"));
  }
  {
    auto in = base();
    in.resize(8);
    CHECK_THAT(error_of(a, in), Catch::Contains("expects 12 inputs"));
  }
  {
    auto in = base();
    in[9]->data_as<float>()[1] = 0.0f;
    CHECK_THAT(error_of(a, in),
               Catch::Contains("input 9 (tau)[0, 1]") && Catch::Contains("must be finite and > 0"));
  }
  {
    auto in = base();
    in[11]->data_as<float>()[0] = 1.5f;
    CHECK_THAT(error_of(a, in), Catch::Contains("input 11 (r_on)[0, 0]"));
  }
  {
    graph::Attributes bad = a;
    bad.set("alpha", -1.0);
    CHECK_THAT(error_of(bad, base()), Catch::Contains("attribute 'alpha'"));
  }
  {
    auto in = base();
    in[1] = f32({1, 8, 5});
    CHECK_THAT(error_of(a, in), Catch::Contains("input 1 (W)"));
  }
}
