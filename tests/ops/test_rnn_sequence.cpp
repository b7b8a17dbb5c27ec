// The LSTM / GRU / RNN sequence ops (ops/rnn/rnn_sequence.cpp) through the registry against the
// naive double-precision reference (tests/support/reference_rnn.h) on random sizes, directions,
// biases, initial states, uneven sequence lengths and both layouts, on teams of 1 and 2 threads;
// the shape and attribute errors; and the ONNX backend test cases of Debian's libonnx-testdata.
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "ops/registry.h"
#include "ops/rnn/rnn_sequence.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_rnn.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

constexpr double kTol = 1e-5;

// Like test::run_single_op, but inputs may be absent (std::nullopt -> "" in the node), and the
// kernel may be initialized for a team of `team_size` and run on `threads` (the runtime may give
// a kernel fewer threads than it was planned for).
Result<test::OpRun> run_op(const std::string& op, const graph::Attributes& attrs,
                           const std::vector<std::optional<Tensor>>& inputs, int num_outputs,
                           int threads, const std::vector<bool>& constant, int team_size = 0) {
  if (team_size == 0) team_size = threads;
  graph::GraphBuilder b("<" + op + " test>");
  std::vector<std::string> in_names, out_names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      in_names.push_back("");
      continue;
    }
    in_names.push_back("in" + std::to_string(i));
    if (i < constant.size() && constant[i])
      b.add_constant(in_names.back(), *inputs[i]);
    else
      b.add_input(in_names.back(), inputs[i]->desc());
  }
  for (int i = 0; i < num_outputs; ++i) {
    out_names.push_back("out" + std::to_string(i));
    b.add_output(out_names.back());
  }
  b.add_node(op, "node", in_names, out_names, attrs);
  GRAPHI_ASSIGN_OR_RETURN(graph::Graph g, b.finish(ops::Registry::get()));
  const graph::Node& node = g.node(0);
  ops::KernelContext ctx{node, {}, {}, {}, team_size, g.source() + ": " + node.where()};
  std::vector<const void*> in_ptrs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == graph::kNoId) {
      ctx.inputs.push_back(nullptr);
      ctx.const_inputs.push_back(nullptr);
      in_ptrs.push_back(nullptr);
      continue;
    }
    const graph::Value& v = g.value(node.inputs[i]);
    ctx.inputs.push_back(&v.desc);
    ctx.const_inputs.push_back(v.kind == graph::ValueKind::kConstant ? v.data.get() : nullptr);
    in_ptrs.push_back(inputs[i]->data());
  }
  test::OpRun result;
  std::vector<void*> out_ptrs;
  for (graph::ValueId v : node.outputs) {
    ctx.outputs.push_back(&g.value(v).desc);
    Tensor t(g.value(v).desc);
    // Poison the outputs: the kernel must write every element.
    std::fill(t.data_as<float>(), t.data_as<float>() + t.numel(), 12345.0f);
    result.outputs.push_back(std::move(t));
  }
  for (Tensor& t : result.outputs) out_ptrs.push_back(t.data());
  GRAPHI_ASSIGN_OR_RETURN(std::unique_ptr<ops::Kernel> kernel, ops::Registry::get().select(ctx));
  result.kernel = kernel->name();
  const size_t bytes = kernel->scratch_bytes();
  void* scratch = bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr;
  if (scratch) std::memset(scratch, 0xff, bytes);  // NaN garbage: nothing may be read unwritten
  ops::Buffers io{in_ptrs, out_ptrs};
  if (threads == 1) {
    kernel->run(ops::TeamContext{0, 1, scratch, bytes}, io);
  } else {
#pragma omp parallel num_threads(threads)
    kernel->run(ops::TeamContext{omp_get_thread_num(), omp_get_num_threads(), scratch, bytes}, io);
  }
  std::free(scratch);
  return result;
}

struct Case {
  std::string op = "LSTM";
  int64_t T = 1, B = 1, I = 1, H = 1;
  std::string direction = "forward";
  int layout = 0;
  bool bias = false, init_h = false, init_c = false, seq_lens = false, peephole = false;
  bool seq_lens_i64 = false;
  bool lbr = false, input_forget = false;
  double clip = 0;
  std::string activation;  // RNN: "Tanh", "Relu", "Sigmoid" or "" (default)
  bool constant_weights = true;
  int outputs = 2;
  bool bf16 = false;  // graphi_rnn_weights = bf16, against the reference's bf16 operands
  bool int8 = false;  // graphi_rnn_weights = int8, against the fp32 reference (kTolInt8)

  std::string describe() const {
    char buf[400];
    std::snprintf(
        buf, sizeof buf,
        "%s T=%lld B=%lld I=%lld H=%lld %s layout=%d bias=%d init_h=%d init_c=%d "
        "seq_lens=%d%s peephole=%d lbr=%d input_forget=%d clip=%g act=%s const=%d outputs=%d "
        "bf16=%d int8=%d",
        op.c_str(), (long long)T, (long long)B, (long long)I, (long long)H, direction.c_str(),
        layout, bias, init_h, init_c, seq_lens, seq_lens_i64 ? "(i64)" : "", peephole, lbr,
        input_forget, clip, activation.c_str(), constant_weights, outputs, bf16, int8);
    return buf;
  }
};

struct Built {
  std::vector<std::optional<Tensor>> inputs;
  graph::Attributes attrs;
  test::RnnRefSpec ref;
};

Built build(const Case& c, uint64_t seed) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const int64_t G = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
  // Weights scaled so the pre-activations stay O(1) (saturated gates would hide errors).
  const double ws = 1.0 / std::sqrt(static_cast<double>(std::max(c.I, c.H)));
  Built b;
  const Shape xs = c.layout == 0 ? Shape{c.T, c.B, c.I} : Shape{c.B, c.T, c.I};
  const Shape ss = c.layout == 0 ? Shape{D, c.B, c.H} : Shape{c.B, D, c.H};
  b.inputs.push_back(test::random_tensor({DType::kF32, xs}, seed + 1));
  b.inputs.push_back(
      test::random_tensor({DType::kF32, {D, G * c.H, c.I}}, seed + 2, -2 * ws, 2 * ws));
  b.inputs.push_back(
      test::random_tensor({DType::kF32, {D, G * c.H, c.H}}, seed + 3, -2 * ws, 2 * ws));
  if (c.bias)
    b.inputs.push_back(test::random_tensor({DType::kF32, {D, 2 * G * c.H}}, seed + 4, -0.5, 0.5));
  else
    b.inputs.push_back(std::nullopt);
  if (c.seq_lens) {
    // Uneven lengths in [0, T], at least one full (ONNX expects max <= T).
    Tensor l(TensorDesc{c.seq_lens_i64 ? DType::kI64 : DType::kI32, {c.B}});
    std::mt19937_64 rng(seed + 5);
    for (int64_t i = 0; i < c.B; ++i) {
      const int64_t v = i == 0 ? c.T : static_cast<int64_t>(rng() % (c.T + 1));
      if (c.seq_lens_i64)
        l.data_as<int64_t>()[i] = v;
      else
        l.data_as<int32_t>()[i] = static_cast<int32_t>(v);
    }
    b.inputs.push_back(std::move(l));
  } else {
    b.inputs.push_back(std::nullopt);
  }
  if (c.init_h)
    b.inputs.push_back(test::random_tensor({DType::kF32, ss}, seed + 6));
  else
    b.inputs.push_back(std::nullopt);
  if (c.op == "LSTM") {
    if (c.init_c)
      b.inputs.push_back(test::random_tensor({DType::kF32, ss}, seed + 7));
    else
      b.inputs.push_back(std::nullopt);
    if (c.peephole)
      b.inputs.push_back(test::random_tensor({DType::kF32, {D, 3 * c.H}}, seed + 8, -0.5, 0.5));
    else
      b.inputs.push_back(std::nullopt);
  }
  while (!b.inputs.empty() && !b.inputs.back()) b.inputs.pop_back();  // trailing absents

  b.attrs.set("hidden_size", c.H);
  if (c.direction != "forward" || seed % 2) b.attrs.set("direction", c.direction);
  if (c.layout) b.attrs.set("layout", int64_t{c.layout});
  if (c.clip > 0) b.attrs.set("clip", c.clip);
  if (c.op == "GRU") b.attrs.set("linear_before_reset", int64_t{c.lbr});
  if (c.op == "LSTM" && c.input_forget) b.attrs.set("input_forget", int64_t{1});
  if (!c.activation.empty()) b.attrs.set("activations", c.activation);
  if (c.bf16) b.attrs.set(ops::kRnnWeightsAttr, std::string("bf16"));
  if (c.int8) b.attrs.set(ops::kRnnWeightsAttr, std::string("int8"));

  b.ref.op = c.op;
  b.ref.hidden = c.H;
  b.ref.direction = c.direction;
  b.ref.layout = c.layout;
  b.ref.clip = c.clip;
  b.ref.input_forget = c.input_forget;
  b.ref.linear_before_reset = c.lbr;
  if (!c.activation.empty()) b.ref.activations = {c.activation};
  b.ref.bf16_operands = c.bf16;
  return b;
}

std::vector<Tensor> reference(const Built& b) {
  auto at = [&](size_t i) -> const Tensor* {
    return i < b.inputs.size() && b.inputs[i] ? &*b.inputs[i] : nullptr;
  };
  test::RnnRefInputs in{at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)};
  return test::reference_rnn(b.ref, in);
}

std::vector<bool> constant_flags(const Case& c) {
  // W, R, B, P constant (packed at init) or all fed at run time (packed per run).
  return {false, c.constant_weights, c.constant_weights, c.constant_weights, false, false,
          false, c.constant_weights};
}

// bf16 weights against the reference's bf16 operands: the kernel rounds its fp32 h where the
// reference rounds a double h, so an element on a rounding boundary can land one bf16 step
// (2^-8 relative) apart, and that difference propagates through the following steps.
constexpr double kTolBf16 = 2e-3;
// int8 weights against the plain fp32 reference: the quantization error itself (s8 weights per
// column, u8 x and h per row and block), bounded here by 3% of the output's scale; a wrong
// scale, zero point, column sum or k block gives errors of the output's own size.
constexpr double kTolInt8 = 3e-2;

// max_rel_error within `tol`, with a readable failure.
bool max_rel_error_ok(const Tensor& a, const Tensor& b, double tol = kTol) {
  const double err = test::max_rel_error(a, b);
  if (err > tol) UNSCOPED_INFO("max relative error " << err << " > " << tol);
  return err <= tol;
}

// Runs case c on a team of `threads` (optionally planned for another team size) and checks
// every output against the reference.
void check_case(const Case& c, uint64_t seed, int threads, int team_size = 0,
                bool shuffle = false) {
  Built b = build(c, seed);
  if (shuffle) b.attrs.set(ops::kWcsShuffleAttr, int64_t{1});
  const std::vector<Tensor> want = reference(b);
  auto got = run_op(c.op, b.attrs, b.inputs, c.outputs, threads, constant_flags(c), team_size);
  INFO(c.describe() << " threads=" << threads << " team=" << team_size << " shuffle=" << shuffle
                    << " seed=" << seed);
  REQUIRE(got.is_ok());
  if (!got.is_ok()) return;
  REQUIRE(got->outputs.size() == static_cast<size_t>(c.outputs));
  for (int i = 0; i < c.outputs; ++i) {
    INFO("output " << i << " " << got->outputs[i].desc().to_string());
    CHECK(max_rel_error_ok(got->outputs[i], want[i], c.bf16 ? kTolBf16 : c.int8 ? kTolInt8 : kTol));
  }
}

}  // namespace

namespace {

Case random_case(const std::string& op, std::mt19937_64& rng) {
  auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + rng() % v.size()); };
  Case c;
  c.op = op;
  c.T = pick({1, 5});
  c.B = pick({1, 3, 10});
  c.I = pick({1, 7, 32, 64});
  c.H = pick({1, 7, 32, 64});
  static const char* dirs[] = {"forward", "reverse", "bidirectional"};
  c.direction = dirs[rng() % 3];
  c.layout = rng() % 4 == 0 ? 1 : 0;
  c.bias = rng() % 2;
  c.init_h = rng() % 2;
  c.init_c = op == "LSTM" && rng() % 2;
  c.seq_lens = rng() % 2;
  c.seq_lens_i64 = rng() % 2;
  c.peephole = op == "LSTM" && rng() % 3 == 0;
  c.input_forget = op == "LSTM" && rng() % 5 == 0;
  c.lbr = op == "GRU" && rng() % 2;
  c.clip = rng() % 5 == 0 ? 0.8 : 0.0;
  if (op == "RNN") {
    static const char* acts[] = {"", "Tanh", "Relu", "Sigmoid"};
    c.activation = acts[rng() % 4];
  }
  c.constant_weights = rng() % 4 != 0;
  const int max_out = op == "LSTM" ? 3 : 2;
  c.outputs = 1 + static_cast<int>(rng() % max_out);
  return c;
}

}  // namespace

TEST_CASE("rnn sequence: registered ops and kernels", "[rnn_sequence]") {
  for (const char* op : {"LSTM", "GRU", "RNN"}) REQUIRE(ops::Registry::get().find(op) != nullptr);
  Case c;
  c.op = "GRU";
  c.H = 4;
  Built b = build(c, 1);
  auto r = run_op("GRU", b.attrs, b.inputs, 2, 1, constant_flags(c));
  REQUIRE(r.is_ok());
  CHECK(r->kernel == "gru_wcs");
}

TEST_CASE("rnn sequence: LSTM vs reference on random cases, teams of 1 and 2", "[rnn_sequence]") {
  std::mt19937_64 rng(101);
  for (int i = 0; i < 40; ++i) {
    Case c = random_case("LSTM", rng);
    for (int threads : {1, 2}) check_case(c, 1000 + i, threads);
  }
}

TEST_CASE("rnn sequence: GRU (both resets) vs reference on random cases, teams of 1 and 2",
          "[rnn_sequence]") {
  std::mt19937_64 rng(202);
  for (int i = 0; i < 40; ++i) {
    Case c = random_case("GRU", rng);
    for (int threads : {1, 2}) check_case(c, 2000 + i, threads);
  }
}

TEST_CASE("rnn sequence: RNN vs reference on random cases, teams of 1 and 2", "[rnn_sequence]") {
  std::mt19937_64 rng(303);
  for (int i = 0; i < 30; ++i) {
    Case c = random_case("RNN", rng);
    for (int threads : {1, 2}) check_case(c, 3000 + i, threads);
  }
}

TEST_CASE("rnn sequence: every feature at once, all ops, 1-3 threads", "[rnn_sequence]") {
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (bool lbr : {false, true}) {
      if (lbr && std::string(op) != "GRU") continue;
      Case c;
      c.op = op;
      c.T = 5;
      c.B = 10;
      c.I = 32;
      c.H = 64;
      c.direction = "bidirectional";
      c.bias = c.init_h = c.seq_lens = true;
      c.init_c = c.peephole = std::string(op) == "LSTM";
      c.lbr = lbr;
      c.outputs = std::string(op) == "LSTM" ? 3 : 2;
      for (int threads : {1, 2, 3}) check_case(c, 77, threads);
      c.layout = 1;
      check_case(c, 78, 2);
    }
}

TEST_CASE("rnn sequence: larger hidden sizes (several blocks per thread, k tiles)",
          "[rnn_sequence]") {
  Case c;
  c.T = 3;
  c.B = 2;
  c.I = 100;
  c.H = 200;  // not a multiple of 16: a partial last block
  c.bias = c.init_h = c.init_c = c.seq_lens = true;
  c.outputs = 3;
  for (const char* op : {"LSTM", "GRU"}) {
    c.op = op;
    c.outputs = std::string(op) == "LSTM" ? 3 : 2;
    for (const char* dir : {"forward", "bidirectional"}) {
      c.direction = dir;
      for (int threads : {1, 2}) check_case(c, 500, threads);
    }
  }
  c.op = "GRU";
  c.lbr = true;
  c.B = 64;  // batch 64: row tiles
  c.H = 48;
  c.I = 300;
  check_case(c, 501, 2);
}

TEST_CASE("rnn sequence: thread-to-block shuffle (WCS off) gives the same results",
          "[rnn_sequence]") {
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (bool lbr : {false, true}) {
      if (lbr && std::string(op) != "GRU") continue;
      Case c;
      c.op = op;
      c.T = 5;
      c.B = 3;
      c.I = 32;
      c.H = 64;
      c.direction = "bidirectional";
      c.bias = c.init_h = c.seq_lens = true;
      c.init_c = std::string(op) == "LSTM";
      c.lbr = lbr;
      c.outputs = std::string(op) == "LSTM" ? 3 : 2;
      for (int threads : {1, 2, 3}) check_case(c, 90, threads, 0, /*shuffle=*/true);
    }
}

TEST_CASE("rnn sequence: a team of another size than planned runs correctly", "[rnn_sequence]") {
  Case c;
  c.T = 5;
  c.B = 3;
  c.I = 7;
  c.H = 64;
  c.direction = "bidirectional";
  c.bias = c.init_h = c.init_c = c.seq_lens = true;
  c.outputs = 3;
  for (const char* op : {"LSTM", "GRU"}) {
    c.op = op;
    c.outputs = std::string(op) == "LSTM" ? 3 : 2;
    check_case(c, 60, /*threads=*/1, /*team_size=*/2);
    check_case(c, 61, /*threads=*/2, /*team_size=*/1);
    check_case(c, 62, /*threads=*/2, /*team_size=*/3);
  }
}

TEST_CASE(
    "rnn sequence: a team of 2 squeezed onto one core (every step waits for a preempted "
    "peer)",
    "[rnn_sequence]") {
  // Both team members pinned to one CPU: whenever a member waits for the other's step, the
  // other is not running, so each per-step wait (step counters, or the spin barrier with the
  // shuffle knob and the canonical GRU) has to give up its core (yield, futex sleep) before it
  // can return. The results must still match the reference.
  struct Job {
    Case c;
    bool shuffle;
  };
  std::vector<Job> jobs;
  Case c;
  c.T = 40;
  c.B = 1;  // batch 1: the units are split, so every step needs the peer's h
  c.I = 16;
  c.H = 64;
  c.bias = c.init_h = c.init_c = true;
  c.outputs = 3;
  jobs.push_back({c, false});  // LSTM: step counters
  jobs.push_back({c, true});   // LSTM, shuffle: spin barrier
  c.op = "GRU";
  c.outputs = 2;
  c.init_c = false;
  jobs.push_back({c, false});  // canonical GRU: barrier inside the step, counters between
  c.B = 3;
  c.lbr = true;
  jobs.push_back({c, false});
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    Built b = build(job.c, 300 + i);
    if (job.shuffle) b.attrs.set(ops::kWcsShuffleAttr, int64_t{1});
    const std::vector<Tensor> want = reference(b);
    std::optional<Result<test::OpRun>> got;
    std::atomic<int> unpinned{0};
    // A fresh thread has its own OpenMP thread pool; its members inherit its one-CPU mask.
    std::thread th([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(std::max(0, sched_getcpu()), &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) ++unpinned;
#pragma omp parallel num_threads(2)
      {
        cpu_set_t mine;
        CPU_ZERO(&mine);
        if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) != 0 ||
            CPU_COUNT(&mine) != 1)
          ++unpinned;
      }
      got = run_op(job.c.op, b.attrs, b.inputs, job.c.outputs, 2, constant_flags(job.c));
    });
    th.join();
    INFO(job.c.describe() << " shuffle=" << job.shuffle);
    if (unpinned.load() != 0) WARN("could not put both team members on one CPU (OMP_PROC_BIND?)");
    REQUIRE(got.has_value());
    REQUIRE(got->is_ok());
    REQUIRE((*got)->outputs.size() == static_cast<size_t>(job.c.outputs));
    for (int o = 0; o < job.c.outputs; ++o) {
      INFO("output " << o);
      CHECK(max_rel_error_ok((*got)->outputs[o], want[o]));
    }
  }
}

TEST_CASE("rnn sequence: batch 1..64 with one long sequence", "[rnn_sequence]") {
  for (int64_t batch : {1, 20, 64}) {
    Case c;
    c.op = "LSTM";
    c.T = 12;
    c.B = batch;
    c.I = 16;
    c.H = 32;
    c.seq_lens = true;
    c.outputs = 3;
    check_case(c, 40 + batch, 2);
  }
}

TEST_CASE("rnn sequence: stacked layers as separate nodes through a Session", "[rnn_sequence]") {
  // Layer 1: bidirectional LSTM; Transpose + Reshape turn Y [T, 2, B, H1] into X2 [T, B, 2*H1];
  // layer 2: GRU (linear_before_reset) forward. Both with the same uneven sequence lengths.
  const int64_t T = 4, B = 3, I = 8, H1 = 16, H2 = 8;
  Tensor x = test::random_tensor({DType::kF32, {T, B, I}}, 1);
  Tensor w1 = test::random_tensor({DType::kF32, {2, 4 * H1, I}}, 2, -0.4, 0.4);
  Tensor r1 = test::random_tensor({DType::kF32, {2, 4 * H1, H1}}, 3, -0.4, 0.4);
  Tensor b1 = test::random_tensor({DType::kF32, {2, 8 * H1}}, 4, -0.4, 0.4);
  Tensor w2 = test::random_tensor({DType::kF32, {1, 3 * H2, 2 * H1}}, 5, -0.4, 0.4);
  Tensor r2 = test::random_tensor({DType::kF32, {1, 3 * H2, H2}}, 6, -0.4, 0.4);
  Tensor lens(TensorDesc{DType::kI64, {B}});
  lens.data_as<int64_t>()[0] = 4;
  lens.data_as<int64_t>()[1] = 2;
  lens.data_as<int64_t>()[2] = 3;
  Tensor shape(TensorDesc{DType::kI64, {3}});
  shape.data_as<int64_t>()[0] = T;
  shape.data_as<int64_t>()[1] = B;
  shape.data_as<int64_t>()[2] = 2 * H1;

  graph::GraphBuilder gb("<stacked>");
  gb.add_input("x", x.desc());
  gb.add_input("lens", lens.desc());
  for (auto& [name, t] : std::vector<std::pair<std::string, Tensor*>>{
           {"w1", &w1}, {"r1", &r1}, {"b1", &b1}, {"w2", &w2}, {"r2", &r2}, {"shape", &shape}})
    gb.add_constant(name, *t);
  graph::Attributes a1;
  a1.set("hidden_size", H1);
  a1.set("direction", std::string("bidirectional"));
  gb.add_node("LSTM", "layer1", {"x", "w1", "r1", "b1", "lens"}, {"y1", "yh1"}, a1);
  graph::Attributes tp;
  tp.set("perm", std::vector<int64_t>{0, 2, 1, 3});
  gb.add_node("Transpose", "t1", {"y1"}, {"y1t"}, tp);
  gb.add_node("Reshape", "x2", {"y1t", "shape"}, {"x2"});
  graph::Attributes a2;
  a2.set("hidden_size", H2);
  a2.set("linear_before_reset", int64_t{1});
  gb.add_node("GRU", "layer2", {"x2", "w2", "r2", "", "lens"}, {"y2", "yh2"}, a2);
  gb.add_output("y2");
  gb.add_output("yh2");
  gb.add_output("yh1");
  auto g = gb.finish(ops::Registry::get());
  REQUIRE(g.is_ok());
  auto graph = std::make_shared<const graph::Graph>(std::move(*g));

  // Reference: layer 1, the same transpose/reshape by hand, layer 2.
  test::RnnRefSpec s1;
  s1.op = "LSTM";
  s1.hidden = H1;
  s1.direction = "bidirectional";
  std::vector<Tensor> ref1 = test::reference_rnn(s1, {&x, &w1, &r1, &b1, &lens});
  Tensor x2(TensorDesc{DType::kF32, {T, B, 2 * H1}});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H1; ++j)
          x2.data_as<float>()[(t * B + b) * 2 * H1 + d * H1 + j] =
              ref1[0].data_as<float>()[((t * 2 + d) * B + b) * H1 + j];
  test::RnnRefSpec s2;
  s2.op = "GRU";
  s2.hidden = H2;
  s2.linear_before_reset = true;
  std::vector<Tensor> ref2 = test::reference_rnn(s2, {&x2, &w2, &r2, nullptr, &lens});

  struct Config {
    int executors, threads;
    const char* scheduler;
  };
  for (Config c : {Config{1, 1, "sequential"}, Config{1, 2, "sequential"}, Config{1, 2, "cpf"},
                   Config{2, 1, "cpf"}}) {
    engine::SessionOptions opt;
    opt.executors = c.executors;
    opt.threads = c.threads;
    opt.scheduler = c.scheduler;
    opt.pin = false;
    auto session = engine::Session::create(graph, opt);
    INFO(c.executors << "x" << c.threads << " " << c.scheduler);
    REQUIRE(session.is_ok());
    for (int rep = 0; rep < 2; ++rep) {  // a second run reuses packed weights and scratch
      auto out = (*session)->run({{"x", x}, {"lens", lens}});
      REQUIRE(out.is_ok());
      REQUIRE(out->size() == 3);
      CHECK(max_rel_error_ok((*out)[0].second, ref2[0]));
      CHECK(max_rel_error_ok((*out)[1].second, ref2[1]));
      CHECK(max_rel_error_ok((*out)[2].second, ref1[1]));
    }
  }
}

// ---- errors ----

namespace {

std::string error_of(const std::string& op, const graph::Attributes& attrs,
                     const std::vector<std::optional<Tensor>>& inputs, int outputs = 1) {
  auto r = run_op(op, attrs, inputs, outputs, 1, {});
  if (r.is_ok()) return "";
  return r.status().message();
}

Tensor f32(Shape s) { return Tensor(TensorDesc{DType::kF32, std::move(s)}); }

}  // namespace

TEST_CASE("rnn sequence: shape errors name the input and both shapes", "[rnn_sequence]") {
  graph::Attributes a;
  a.set("hidden_size", int64_t{4});
  // W's input size (3) disagrees with X's (2).
  std::string e = error_of("LSTM", a, {f32({5, 1, 2}), f32({1, 16, 3}), f32({1, 16, 4})});
  CHECK_THAT(e, Catch::Contains("node 'node' (LSTM)"));
  CHECK_THAT(e, Catch::Contains("input 1 (W) is float32[1, 16, 3]"));
  CHECK_THAT(e, Catch::Contains("expected [1, 16, 2]"));
  CHECK_THAT(e, Catch::Contains("X float32[5, 1, 2]"));
  // R for a GRU needs 3*H rows.
  e = error_of("GRU", a, {f32({5, 1, 2}), f32({1, 12, 2}), f32({1, 16, 4})});
  CHECK_THAT(e, Catch::Contains("input 2 (R) is float32[1, 16, 4], expected [1, 12, 4]"));
  // Bidirectional needs 2 directions of weights.
  graph::Attributes bi = a;
  bi.set("direction", std::string("bidirectional"));
  e = error_of("RNN", bi, {f32({5, 1, 2}), f32({1, 4, 2}), f32({1, 4, 4})});
  CHECK_THAT(e, Catch::Contains("input 1 (W) is float32[1, 4, 2], expected [2, 4, 2]"));
  // Bias, initial_h, sequence_lens, P.
  e = error_of("RNN", a, {f32({5, 1, 2}), f32({1, 4, 2}), f32({1, 4, 4}), f32({1, 4})});
  CHECK_THAT(e, Catch::Contains("input 3 (B) is float32[1, 4], expected [1, 8]"));
  e = error_of(
      "RNN", a,
      {f32({5, 3, 2}), f32({1, 4, 2}), f32({1, 4, 4}), std::nullopt, std::nullopt, f32({1, 2, 4})});
  CHECK_THAT(e, Catch::Contains("input 5 (initial_h) is float32[1, 2, 4], expected [1, 3, 4]"));
  e = error_of("RNN", a, {f32({5, 3, 2}), f32({1, 4, 2}), f32({1, 4, 4}), std::nullopt, f32({3})});
  CHECK_THAT(e, Catch::Contains("input 4 (sequence_lens) must be int32 or int64, got float32[3]"));
  e = error_of("RNN", a,
               {f32({5, 3, 2}), f32({1, 4, 2}), f32({1, 4, 4}), std::nullopt,
                Tensor(TensorDesc{DType::kI32, {2}})});
  CHECK_THAT(e, Catch::Contains("input 4 (sequence_lens) is int32[2], expected [3]"));
  e = error_of("LSTM", a,
               {f32({5, 1, 2}), f32({1, 16, 2}), f32({1, 16, 4}), std::nullopt, std::nullopt,
                std::nullopt, std::nullopt, f32({1, 16})});
  CHECK_THAT(e, Catch::Contains("input 7 (P) is float32[1, 16], expected [1, 12]"));
  // hidden_size attribute vs R.
  graph::Attributes h5;
  h5.set("hidden_size", int64_t{5});
  e = error_of("RNN", h5, {f32({5, 1, 2}), f32({1, 4, 2}), f32({1, 4, 4})});
  CHECK_THAT(e, Catch::Contains("input 1 (W) is float32[1, 4, 2], expected [1, 5, 2]"));
  // X rank, dtype.
  e = error_of("RNN", a, {f32({5, 2}), f32({1, 4, 2}), f32({1, 4, 4})});
  CHECK_THAT(e, Catch::Contains("input 0 (X) must be 3-D"));
  e = error_of("RNN", a,
               {Tensor(TensorDesc{DType::kI32, {5, 1, 2}}), f32({1, 4, 2}), f32({1, 4, 4})});
  CHECK_THAT(e, Catch::Contains("input 0 (X) must be float32"));
  // Missing R, too many outputs.
  e = error_of("RNN", a, {f32({5, 1, 2}), f32({1, 4, 2})});
  CHECK_THAT(e, Catch::Contains("expects 3 to 6 inputs"));
  e = error_of("GRU", a, {f32({5, 1, 2}), f32({1, 12, 2}), f32({1, 12, 4})}, 3);
  CHECK_THAT(e, Catch::Contains("GRU has 1 to 2 outputs"));
}

TEST_CASE("rnn sequence: unsupported and invalid attributes are clear errors", "[rnn_sequence]") {
  const std::vector<std::optional<Tensor>> lstm_in = {f32({2, 1, 2}), f32({1, 16, 2}),
                                                      f32({1, 16, 4})};
  auto with = [](const char* name, graph::Attribute v) {
    graph::Attributes a;
    a.set("hidden_size", int64_t{4});
    a.set(name, std::move(v));
    return a;
  };
  std::string e = error_of("LSTM", with("activations", std::string("Sigmoid,Relu,Tanh")), lstm_in);
  CHECK_THAT(e, Catch::Contains("activations 'Sigmoid,Relu,Tanh' are not supported"));
  e = error_of("LSTM", with("activations", std::string("Sigmoid,Tanh")), lstm_in);
  CHECK_THAT(e, Catch::Contains("needs 3 per direction"));
  e = error_of("LSTM", with("activation_alpha", std::vector<double>{0.5}), lstm_in);
  CHECK_THAT(e, Catch::Contains("'activation_alpha' is not supported"));
  e = error_of("LSTM", with("layout", int64_t{2}), lstm_in);
  CHECK_THAT(e, Catch::Contains("'layout' must be 0 or 1, got 2"));
  e = error_of("LSTM", with("direction", std::string("sideways")), lstm_in);
  CHECK_THAT(
      e, Catch::Contains("'direction' must be forward, reverse or bidirectional, got 'sideways'"));
  e = error_of("LSTM", with("clip", -1.0), lstm_in);
  CHECK_THAT(e, Catch::Contains("'clip' must be a positive finite number"));
  e = error_of("LSTM", with("input_forget", int64_t{3}), lstm_in);
  CHECK_THAT(e, Catch::Contains("'input_forget' must be 0 or 1, got 3"));
  e = error_of("LSTM", with("linear_before_reset", int64_t{1}), lstm_in);
  CHECK_THAT(e, Catch::Contains("unknown attribute 'linear_before_reset' for LSTM"));
  e = error_of("LSTM", with("hidden_size", int64_t{0}), lstm_in);
  CHECK_THAT(e, Catch::Contains("'hidden_size' must be in [1, 2^31), got 0"));
  e = error_of("LSTM", with("hidden_size", std::numeric_limits<int64_t>::max()), lstm_in);
  CHECK_THAT(e, Catch::Contains("'hidden_size' must be in [1, 2^31), got 9223372036854775807"));
  e = error_of("RNN", with("activations", std::string("Softsign")),
               {f32({2, 1, 2}), f32({1, 4, 2}), f32({1, 4, 4})});
  CHECK_THAT(e, Catch::Contains("RNN activation 'softsign' is not supported"));
  e = error_of("GRU", with("activations", std::string("Tanh,Tanh")),
               {f32({2, 1, 2}), f32({1, 12, 2}), f32({1, 12, 4})});
  CHECK_THAT(e, Catch::Contains("only the defaults (sigmoid,tanh per direction)"));
}

// ---- ONNX backend test cases ----

namespace {

graph::Attributes attrs_from_json(const nlohmann::json& j) {
  graph::Attributes a;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const nlohmann::json& v = it.value();
    if (v.is_number_integer()) {
      a.set(it.key(), v.get<int64_t>());
    } else if (v.is_number()) {
      a.set(it.key(), v.get<double>());
    } else if (v.is_string()) {
      a.set(it.key(), v.get<std::string>());
    } else if (v.is_array()) {
      std::vector<double> f;
      for (const auto& x : v) f.push_back(x.get<double>());
      a.set(it.key(), f);
    }
  }
  return a;
}

}  // namespace

TEST_CASE("rnn sequence: ONNX backend test cases (libonnx-testdata)", "[rnn_sequence]") {
  const std::string data = "/usr/share/libonnx-testdata/data/node";
  const std::filesystem::path out = test::scratch_dir("onnx_rnn_cases");
  const std::string script = std::string(GRAPHI_SOURCE_DIR) + "/tests/ops/onnx_rnn_cases.py";
  const std::string cmd = "/usr/bin/python3 '" + script + "' '" + data + "' '" + out.string() + "'";
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 77 || code == 78 || code == 127) {
    WARN("skipped: " << (code == 78 ? "libonnx-testdata not installed"
                                    : "python3-onnx not available")
                     << " (exit " << code << " from " << cmd << ")");
    return;
  }
  REQUIRE(code == 0);
  int ran = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    const std::filesystem::path dir = entry.path();
    std::ifstream f(dir / "case.json");
    REQUIRE(f.good());
    nlohmann::json j = nlohmann::json::parse(f);
    const std::string op = j["op"];
    const graph::Attributes attrs = attrs_from_json(j["attrs"]);
    std::vector<std::optional<Tensor>> inputs;
    for (const auto& name : j["inputs"]) {
      const std::string n = name.get<std::string>();
      if (n.empty()) {
        inputs.push_back(std::nullopt);
        continue;
      }
      auto t = graph::read_npy((dir / n).string());
      REQUIRE(t.is_ok());
      inputs.push_back(std::move(*t));
    }
    while (!inputs.empty() && !inputs.back()) inputs.pop_back();
    // graphi outputs are the first N of (Y, Y_h, Y_c): declare up to the last one ONNX checks.
    const auto& outs = j["outputs"];
    int num_outputs = 0;
    for (size_t i = 0; i < outs.size(); ++i)
      if (!outs[i].is_null()) num_outputs = static_cast<int>(i) + 1;
    for (bool constant : {true, false})
      for (int threads : {1, 2}) {
        const std::vector<bool> flags = {false, constant, constant, constant,
                                         false, false,    false,    constant};
        auto r = run_op(op, attrs, inputs, num_outputs, threads, flags);
        INFO(dir.filename().string() << " constant weights=" << constant << " threads=" << threads);
        REQUIRE(r.is_ok());
        for (int i = 0; i < num_outputs; ++i) {
          if (outs[i].is_null()) continue;
          auto want = graph::read_npy((dir / outs[i].get<std::string>()).string());
          REQUIRE(want.is_ok());
          INFO("output " << i);
          CHECK(max_rel_error_ok(r->outputs[i], *want));
        }
      }
    ++ran;
  }
  CHECK(ran == 12);
}

// ---- a quick timing, not a test (hidden: run with `graphi_tests_ops "[.rnn_timing]"`; the
// environment variables RNN_TIMING_OP, RNN_TIMING_HIDDEN, RNN_TIMING_BATCH, RNN_TIMING_T change
// the shape) ----

TEST_CASE("rnn sequence: timing of LSTM I=H=256 B=1 T=100", "[.rnn_timing]") {
  Case c;
  c.op = "LSTM";
  c.T = 100;
  c.B = 1;
  c.I = 256;
  c.H = 256;
  c.bias = true;
  c.outputs = 3;
  const char* env_b = std::getenv("RNN_TIMING_BATCH");
  const char* env_h = std::getenv("RNN_TIMING_HIDDEN");
  const char* env_op = std::getenv("RNN_TIMING_OP");
  const char* env_t = std::getenv("RNN_TIMING_T");
  if (env_t) c.T = std::atoi(env_t);
  if (env_b) c.B = std::atoi(env_b);
  if (env_h) c.I = c.H = std::atoi(env_h);
  if (env_op) c.op = env_op;
  if (c.op != "LSTM") c.outputs = 2;
  for (int threads : {1, 2})
    for (bool shuffle : {false, true}) {
      if (shuffle && threads == 1) continue;
      Built b = build(c, 5);
      if (shuffle) b.attrs.set(ops::kWcsShuffleAttr, int64_t{1});
      // Build once, run many times: init (packing, JIT) outside the timed loop.
      graph::GraphBuilder gb("<timing>");
      std::vector<std::string> names;
      for (size_t i = 0; i < b.inputs.size(); ++i) {
        if (!b.inputs[i]) {
          names.push_back("");
          continue;
        }
        names.push_back("in" + std::to_string(i));
        if (i == 0)
          gb.add_input(names.back(), b.inputs[i]->desc());
        else
          gb.add_constant(names.back(), *b.inputs[i]);
      }
      std::vector<std::string> outs;
      for (int i = 0; i < c.outputs; ++i) {
        outs.push_back("o" + std::to_string(i));
        gb.add_output(outs.back());
      }
      gb.add_node(c.op, "n", names, outs, b.attrs);
      auto g = gb.finish(ops::Registry::get());
      REQUIRE(g.is_ok());
      const graph::Node& node = g->node(0);
      ops::KernelContext ctx{node, {}, {}, {}, threads, "timing"};
      std::vector<const void*> in_ptrs;
      for (graph::ValueId v : node.inputs) {
        ctx.inputs.push_back(v == graph::kNoId ? nullptr : &g->value(v).desc);
        ctx.const_inputs.push_back(v != graph::kNoId &&
                                           g->value(v).kind == graph::ValueKind::kConstant
                                       ? g->value(v).data.get()
                                       : nullptr);
      }
      for (size_t i = 0; i < b.inputs.size(); ++i)
        in_ptrs.push_back(b.inputs[i] ? b.inputs[i]->data() : nullptr);
      std::vector<Tensor> out_t;
      std::vector<void*> out_ptrs;
      for (graph::ValueId v : node.outputs) {
        ctx.outputs.push_back(&g->value(v).desc);
        out_t.emplace_back(g->value(v).desc);
      }
      for (Tensor& t : out_t) out_ptrs.push_back(t.data());
      auto k = ops::Registry::get().select(ctx);
      REQUIRE(k.is_ok());
      const size_t bytes = (*k)->scratch_bytes();
      void* scratch = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      ops::Buffers io{in_ptrs, out_ptrs};
      std::vector<double> ms;
      omp_set_num_threads(threads);
      for (int rep = 0; rep < 60; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        if (threads == 1) {
          (*k)->run(ops::TeamContext{0, 1, scratch, bytes}, io);
        } else {
#pragma omp parallel num_threads(threads)
          (*k)->run(ops::TeamContext{omp_get_thread_num(), omp_get_num_threads(), scratch, bytes},
                    io);
        }
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      std::sort(ms.begin(), ms.end());
      std::printf("%s I=H=%lld B=%lld T=%lld threads=%d shuffle=%d: median %.3f ms, min %.3f ms\n",
                  c.op.c_str(), (long long)c.H, (long long)c.B, (long long)c.T, threads, shuffle,
                  ms[ms.size() / 2], ms[0]);
      std::free(scratch);
    }
}

// ---- bf16 weights (graphi_rnn_weights = bf16) ----

TEST_CASE("rnn sequence: bf16 weights vs the reference's bf16 operands, random cases",
          "[rnn_sequence]") {
  std::mt19937_64 rng(909);
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (int i = 0; i < 15; ++i) {
      Case c = random_case(op, rng);
      c.bf16 = true;
      for (int threads : {1, 2}) check_case(c, 9000 + i, threads);
    }
}

TEST_CASE("rnn sequence: bf16 weights, every feature, odd sizes, batch 1 split, 1-3 threads",
          "[rnn_sequence]") {
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (bool lbr : {false, true}) {
      if (lbr && std::string(op) != "GRU") continue;
      Case c;
      c.op = op;
      c.T = 6;
      c.B = 3;
      c.I = 33;  // odd: the last pair of k is half padding
      c.H = 71;  // odd and not a multiple of 16
      c.direction = "bidirectional";
      c.bias = c.init_h = c.seq_lens = true;
      c.init_c = c.peephole = std::string(op) == "LSTM";
      c.lbr = lbr;
      c.bf16 = true;
      c.outputs = std::string(op) == "LSTM" ? 3 : 2;
      for (int threads : {1, 2, 3}) check_case(c, 91, threads);
      c.layout = 1;
      c.constant_weights = false;  // packed per run
      check_case(c, 92, 2);
      // Batch 1 on 2 threads: the own-units-first split of each step's pair rows.
      c.layout = 0;
      c.constant_weights = true;
      c.B = 1;
      c.H = 96;
      c.direction = "forward";
      c.T = 20;
      for (int threads : {1, 2}) check_case(c, 93, threads);
      check_case(c, 94, 2, 0, /*shuffle=*/true);
      // R in k blocks at the own units (an odd last block), packed per run too.
      c.H = 71;
      for (int threads : {2, 3}) check_case(c, 95, threads);
      c.constant_weights = false;
      check_case(c, 96, 3);
    }
}

TEST_CASE("rnn sequence: bf16 weights under every forced schedule knob", "[rnn_sequence]") {
  // Whole-slab, narrow and wide panels, zigzag, per-step and hoisted chunks, row splits.
  Case c;
  c.T = 9;
  c.B = 4;
  c.I = 40;
  c.H = 80;
  c.bias = c.init_h = true;
  c.bf16 = true;
  for (const char* op : {"LSTM", "GRU"})
    for (const char* sched :
         {"2,1,2,1,16,0", "2,1,2,4,4096,0", "2,2,1,9,64,1", "1,1,1,3,32,1", "2,1,2,9,128,1"}) {
      c.op = op;
      c.outputs = std::string(op) == "LSTM" ? 3 : 2;
      Built b = build(c, 95);
      b.attrs.set(ops::kScheduleAttr, std::string(sched));
      const std::vector<Tensor> want = reference(b);
      auto got = run_op(c.op, b.attrs, b.inputs, c.outputs, 2, constant_flags(c));
      INFO(c.describe() << " schedule " << sched);
      REQUIRE(got.is_ok());
      for (int i = 0; i < c.outputs; ++i)
        CHECK(max_rel_error_ok(got->outputs[i], want[i], kTolBf16));
    }
}

// ---- int8 weights (graphi_rnn_weights = int8) ----

TEST_CASE("rnn sequence: int8 weights vs the fp32 reference, random cases", "[rnn_sequence]") {
  std::mt19937_64 rng(808);
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (int i = 0; i < 15; ++i) {
      Case c = random_case(op, rng);
      c.int8 = true;
      for (int threads : {1, 2}) check_case(c, 8000 + i, threads);
    }
}

TEST_CASE("rnn sequence: int8 weights, every feature, odd sizes, batch 1 split, 1-3 threads",
          "[rnn_sequence]") {
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (bool lbr : {false, true}) {
      if (lbr && std::string(op) != "GRU") continue;
      Case c;
      c.op = op;
      c.T = 6;
      c.B = 3;
      c.I = 33;  // not a multiple of 4: the last quad of k is partly padding
      c.H = 71;  // odd and not a multiple of 16
      c.direction = "bidirectional";
      c.bias = c.init_h = c.seq_lens = true;
      c.init_c = c.peephole = std::string(op) == "LSTM";
      c.lbr = lbr;
      c.int8 = true;
      c.outputs = std::string(op) == "LSTM" ? 3 : 2;
      for (int threads : {1, 2, 3}) check_case(c, 81, threads);
      check_case(c, 81, 2, /*team_size=*/3);  // planned for 3, run alone (the solo plan)
      c.layout = 1;
      c.constant_weights = false;  // packed per run
      check_case(c, 82, 2);
      // Batch 1 on 2 threads: the own-block-first split of each step's k blocks.
      c.layout = 0;
      c.constant_weights = true;
      c.B = 1;
      c.H = 96;
      c.direction = "forward";
      c.T = 20;
      for (int threads : {1, 2, 3}) check_case(c, 83, threads);
      check_case(c, 84, 2, 0, /*shuffle=*/true);
    }
}

TEST_CASE("rnn sequence: int8 weights under every forced schedule knob", "[rnn_sequence]") {
  Case c;
  c.T = 9;
  c.B = 4;
  c.I = 40;
  c.H = 80;
  c.bias = c.init_h = true;
  c.int8 = true;
  for (const char* op : {"LSTM", "GRU"})
    for (const char* sched :
         {"2,1,2,1,16,0", "2,1,2,4,4096,0", "2,2,1,9,64,1", "1,1,1,3,32,1", "2,1,2,9,128,1"}) {
      c.op = op;
      c.outputs = std::string(op) == "LSTM" ? 3 : 2;
      Built b = build(c, 85);
      b.attrs.set(ops::kScheduleAttr, std::string(sched));
      const std::vector<Tensor> want = reference(b);
      auto got = run_op(c.op, b.attrs, b.inputs, c.outputs, 2, constant_flags(c));
      INFO(c.describe() << " schedule " << sched);
      REQUIRE(got.is_ok());
      for (int i = 0; i < c.outputs; ++i)
        CHECK(max_rel_error_ok(got->outputs[i], want[i], kTolInt8));
    }
}

TEST_CASE("rnn sequence: graphi_rnn_weights values", "[rnn_sequence]") {
  Case c;
  c.H = 16;
  c.I = 8;
  Built b = build(c, 1);
  b.attrs.set(ops::kRnnWeightsAttr, std::string("fp16"));
  auto bad = run_op("LSTM", b.attrs, b.inputs, 2, 1, constant_flags(c));
  REQUIRE(!bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("graphi_rnn_weights") &&
                                         Catch::Contains("fp16") &&
                                         Catch::Contains("expected fp32, bf16 or int8"));
  b.attrs.set(ops::kRnnWeightsAttr, std::string("INT8"));
  CHECK(run_op("LSTM", b.attrs, b.inputs, 2, 1, constant_flags(c)).is_ok());
  b.attrs.set(ops::kRnnWeightsAttr, std::string("FP32"));
  CHECK(run_op("LSTM", b.attrs, b.inputs, 2, 1, constant_flags(c)).is_ok());
}
