// Session: option checks, input validation messages (one test per message), outputs that are
// inputs or constants, caller inputs left untouched, concurrent run() calls. Expected values
// come from naive loops written here.
#include <omp.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <thread>

#include "engine/model_loader.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;
using Catch::Matchers::Contains;

namespace {

// y = sigmoid(a @ b) + a @ b ; also outputs `a` itself and the constant `k`.
std::shared_ptr<const graph::Graph> small_graph() {
  graph::GraphBuilder b("<session test>");
  b.add_input("a", TensorDesc{DType::kF32, {2, 3}});
  b.add_input("b", TensorDesc{DType::kF32, {3, 4}});
  b.add_constant("k", test::random_tensor(TensorDesc{DType::kF32, {4}}, 99));
  b.add_node("MatMul", "mm", {"a", "b"}, {"ab"});
  b.add_node("Sigmoid", "sig", {"ab"}, {"s"});
  b.add_node("Add", "add", {"s", "ab"}, {"y"});
  b.add_output("y");
  b.add_output("a");
  b.add_output("k");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

Tensor naive_y(const Tensor& a, const Tensor& b) {
  Tensor y(TensorDesc{DType::kF32, {2, 4}});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k)
        acc += double(a.data_as<float>()[i * 3 + k]) * b.data_as<float>()[k * 4 + j];
      y.data_as<float>()[i * 4 + j] = static_cast<float>(1.0 / (1.0 + std::exp(-acc)) + acc);
    }
  return y;
}

bool same_bytes(const Tensor& x, const Tensor& y) {
  return x.desc() == y.desc() && std::memcmp(x.data(), y.data(), x.bytes()) == 0;
}

std::string run_error(Session& s, const NamedTensors& in) {
  auto r = s.run(in);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  return r.status().message();
}

}  // namespace

TEST_CASE("session: runs a small graph and returns outputs in graph order", "[session]") {
  for (int threads : {1, 2}) {
    SessionOptions opt;
    opt.threads = threads;
    auto s = value_or_throw(Session::create(small_graph(), opt));
    Tensor a = test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 1);
    Tensor b = test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 2);
    Tensor a_copy = a, b_copy = b;
    NamedTensors out = value_or_throw(s->run({{"b", b}, {"a", a}}));
    REQUIRE(out.size() == 3);
    CHECK(out[0].first == "y");
    CHECK(out[1].first == "a");
    CHECK(out[2].first == "k");
    CHECK(test::max_rel_error(out[0].second, naive_y(a, b)) < 1e-5);
    CHECK(same_bytes(out[1].second, a));  // an input as output
    CHECK(same_bytes(out[2].second,
                     *s->graph().value(*s->graph().find_value("k")).data));  // a constant
    CHECK(same_bytes(a, a_copy));  // the caller's tensors are only read
    CHECK(same_bytes(b, b_copy));
    // The output tensors are copies: a second run with other inputs does not change them.
    Tensor y_first = out[0].second;
    NamedTensors out2 = value_or_throw(s->run({{"a", test::random_tensor(a.desc(), 5)}, {"b", b}}));
    CHECK(same_bytes(out[0].second, y_first));
    CHECK_FALSE(same_bytes(out2[0].second, y_first));
  }
}

TEST_CASE("session: the caller's OpenMP thread count survives create() and run()", "[session]") {
  // An embedding framework's own setting (torch.get_num_threads() is this ICV): a graphi call on
  // its thread must not change it, whatever team the Session runs with.
  const int before = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(3);
    SessionOptions opt;
    opt.threads = threads;
    auto s = value_or_throw(Session::create(small_graph(), opt));
    CHECK(omp_get_max_threads() == 3);
    value_or_throw(s->run({{"a", test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 1)},
                           {"b", test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 2)}}));
    CHECK(omp_get_max_threads() == 3);
  }
  omp_set_num_threads(before);
}

TEST_CASE("session: missing input names the input and its desc", "[session]") {
  auto s = value_or_throw(Session::create(small_graph()));
  std::string m = run_error(*s, {{"a", Tensor(TensorDesc{DType::kF32, {2, 3}})}});
  CHECK_THAT(m, Contains("<session test>"));
  CHECK_THAT(m, Contains("missing input"));
  CHECK_THAT(m, Contains("'b' float32[3, 4]"));
}

TEST_CASE("session: unknown input name lists the graph's inputs", "[session]") {
  auto s = value_or_throw(Session::create(small_graph()));
  std::string m = run_error(*s, {{"a", Tensor(TensorDesc{DType::kF32, {2, 3}})},
                                 {"b", Tensor(TensorDesc{DType::kF32, {3, 4}})},
                                 {"c", Tensor(TensorDesc{DType::kF32, {1}})}});
  CHECK_THAT(m, Contains("'c' is not an input of the graph"));
  CHECK_THAT(m, Contains("a float32[2, 3], b float32[3, 4]"));
}

TEST_CASE("session: duplicate input name is rejected", "[session]") {
  auto s = value_or_throw(Session::create(small_graph()));
  std::string m = run_error(*s, {{"a", Tensor(TensorDesc{DType::kF32, {2, 3}})},
                                 {"a", Tensor(TensorDesc{DType::kF32, {2, 3}})},
                                 {"b", Tensor(TensorDesc{DType::kF32, {3, 4}})}});
  CHECK_THAT(m, Contains("input 'a' is given more than once"));
}

TEST_CASE("session: wrong dtype names the input and both descs", "[session]") {
  auto s = value_or_throw(Session::create(small_graph()));
  std::string m = run_error(*s, {{"a", Tensor(TensorDesc{DType::kI32, {2, 3}})},
                                 {"b", Tensor(TensorDesc{DType::kF32, {3, 4}})}});
  CHECK_THAT(m, Contains("input 'a': expected float32[2, 3], got int32[2, 3]"));
}

TEST_CASE("session: wrong shape names the input and both shapes", "[session]") {
  auto s = value_or_throw(Session::create(small_graph()));
  std::string m = run_error(*s, {{"a", Tensor(TensorDesc{DType::kF32, {2, 3}})},
                                 {"b", Tensor(TensorDesc{DType::kF32, {4, 3}})}});
  CHECK_THAT(m, Contains("input 'b': expected float32[3, 4], got float32[4, 3]"));
}

TEST_CASE("session: a tensor without data is rejected", "[session]") {
  // A default-constructed Tensor is a float32 scalar with no bytes behind it.
  graph::GraphBuilder b("<scalar>");
  b.add_input("x", TensorDesc{DType::kF32, {}});
  b.add_node("Sigmoid", "sig", {"x"}, {"y"});
  b.add_output("y");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
  auto s = value_or_throw(Session::create(g));
  std::string m = run_error(*s, {{"x", Tensor()}});
  CHECK_THAT(m, Contains("input 'x' has no data"));
}

TEST_CASE("session: options this executor cannot honor are rejected", "[session]") {
  auto check = [](SessionOptions o, const std::string& what) {
    auto r = Session::create(small_graph(), o);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Contains(what));
  };
  SessionOptions o;
  o.executors = 2;
  check(o, "sequential scheduler runs exactly 1 executor, got executors = 2");
  o = {};
  o.scheduler = "lifo";
  check(o, "unknown scheduler 'lifo' (available: cpf, fifo, shared-queue, sequential)");
  o = {};
  o.scheduler = "cpf";
  o.executors = 64;
  check(o, "cannot place 64 executors x 1 threads");
  o = {};
  o.threads = 0;
  check(o, "threads must be at least 1, got 0");
  o = {};
  o.ring_capacity = 0;
  check(o, "ring_capacity must be in [1, 2^20], got 0");
  auto r = Session::create(std::shared_ptr<const graph::Graph>());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("session: concurrent run() calls from 4 threads are serialized and correct",
          "[session]") {
  SessionOptions opt;
  opt.threads = 2;
  auto s = value_or_throw(Session::create(small_graph(), opt));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int it = 0; it < 25; ++it) {
        Tensor a = test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 100 * t + it);
        Tensor b = test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 1000 + 100 * t + it);
        auto out = s->run({{"a", a}, {"b", b}});
        if (!out.is_ok() || test::max_rel_error((*out)[0].second, naive_y(a, b)) >= 1e-5 ||
            !same_bytes((*out)[1].second, a))
          ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == std::vector<int>(4, 0));
}

TEST_CASE("plan: successors, pending counts, levels and memory of a diamond", "[plan]") {
  // x -> a (Sigmoid) -> c (Tanh) -> d (Add) ; x -> b (Tanh) -> d ; a -> d (a read twice by d's
  // side through c and directly by e).
  graph::GraphBuilder bld("<diamond>");
  bld.add_input("x", TensorDesc{DType::kF32, {4, 8}});
  bld.add_node("Sigmoid", "a", {"x"}, {"va"});
  bld.add_node("Tanh", "c", {"va"}, {"vc"});
  bld.add_node("Tanh", "b", {"x"}, {"vb"});
  bld.add_node("Add", "d", {"vc", "vb"}, {"vd"});
  bld.add_node("Add", "e", {"vd", "va"}, {"ve"});
  bld.add_output("ve");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(bld.finish(ops::Registry::get())));
  Plan p = value_or_throw(compile(g, 2));
  REQUIRE(p.num_nodes() == 5);
  auto id = [&](const std::string& name) {
    for (NodeId n = 0; n < g->num_nodes(); ++n)
      if (g->node(n).name == name) return n;
    FAIL("no node " << name);
    return NodeId{0};
  };
  const NodeId a = id("a"), b = id("b"), c = id("c"), d = id("d"), e = id("e");
  auto succ = [&](NodeId n) {
    return std::vector<NodeId>(p.successors(n).begin(), p.successors(n).end());
  };
  CHECK(succ(a) == std::vector<NodeId>{std::min(c, e), std::max(c, e)});
  CHECK(succ(b) == std::vector<NodeId>{d});
  CHECK(succ(c) == std::vector<NodeId>{d});
  CHECK(succ(d) == std::vector<NodeId>{e});
  CHECK(succ(e).empty());
  CHECK(p.initial_pending()[a] == 0);
  CHECK(p.initial_pending()[b] == 0);
  CHECK(p.initial_pending()[c] == 1);
  CHECK(p.initial_pending()[d] == 2);
  CHECK(p.initial_pending()[e] == 2);
  CHECK(p.succ_offsets().size() == 6);
  CHECK(p.team_size() == 2);
  for (NodeId n = 0; n < 5; ++n) {
    CHECK(p.inputs(n).size() == g->node(n).inputs.size());
    CHECK(p.outputs(n)[0] == g->node(n).outputs[0]);
    CHECK(std::string(p.kernel_name(n)).size() > 0);
  }
  // Levels from given costs: longest path to the sink including the node itself.
  std::vector<double> cost{0, 0, 0, 0, 0};
  cost[a] = 1, cost[b] = 10, cost[c] = 2, cost[d] = 4, cost[e] = 8;
  std::vector<double> lv = compute_levels(p, cost);
  CHECK(lv[e] == 8);
  CHECK(lv[d] == 12);
  CHECK(lv[c] == 14);
  CHECK(lv[b] == 22);
  CHECK(lv[a] == 15);
  p.set_levels(lv);
  CHECK(p.level(b) == 22);
  // Default levels follow the cost hints: a source's level exceeds its successors'.
  Plan q = value_or_throw(compile(g, 1));
  CHECK(q.level(a) > q.level(c));
  CHECK(q.level(c) > q.level(d));
  // Memory: x is the caller's, ve is in the arena; 5 values of 128 bytes; va lives until e.
  const MemoryPlan& m = p.memory();
  CHECK(m.storage[*g->find_value("x")] == Storage::kCallerInput);
  CHECK(m.storage[*g->find_value("ve")] == Storage::kArena);
  CHECK(m.total_bytes == 5 * 128);
  CHECK(m.peak_bytes < m.total_bytes);
}

TEST_CASE("session: Reshapes of intermediates share their bytes and give the right values",
          "[session]") {
  // ab = a @ b [2, 4]; flat = Reshape(ab) [8] (an output); s = Sigmoid(flat);
  // y = Reshape(s) [2, 4] + ab: the aliases must hold ab until Add has read it.
  graph::GraphBuilder b("<reshape alias>");
  b.add_input("a", TensorDesc{DType::kF32, {2, 3}});
  b.add_input("b", TensorDesc{DType::kF32, {3, 4}});
  Tensor flat_shape(TensorDesc{DType::kI64, {1}}), back_shape(TensorDesc{DType::kI64, {2}});
  flat_shape.data_as<int64_t>()[0] = 8;
  back_shape.data_as<int64_t>()[0] = 2, back_shape.data_as<int64_t>()[1] = 4;
  b.add_constant("flat_shape", std::move(flat_shape));
  b.add_constant("back_shape", std::move(back_shape));
  b.add_node("MatMul", "mm", {"a", "b"}, {"ab"});
  b.add_node("Reshape", "flatten", {"ab", "flat_shape"}, {"flat"});
  b.add_node("Sigmoid", "sig", {"flat"}, {"s"});
  b.add_node("Reshape", "unflatten", {"s", "back_shape"}, {"s2"});
  b.add_node("Add", "add", {"s2", "ab"}, {"y"});
  b.add_output("y");
  b.add_output("flat");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
  Tensor a = test::random_tensor(TensorDesc{DType::kF32, {2, 3}}, 1);
  Tensor bt = test::random_tensor(TensorDesc{DType::kF32, {3, 4}}, 2);
  Tensor want = naive_y(a, bt);
  for (const char* sched : {"sequential", "cpf", "shared-queue"}) {
    INFO(sched);
    SessionOptions o;
    o.scheduler = sched;
    o.executors = std::string(sched) == "sequential" ? 1 : 2;
    auto s = value_or_throw(Session::create(g, o));
    const MemoryPlan& m = s->plan().memory();
    CHECK(m.alias_of[*g->find_value("flat")] == *g->find_value("ab"));
    CHECK(m.alias_of[*g->find_value("s2")] == *g->find_value("s"));
    CHECK(m.offset[*g->find_value("s")] != m.offset[*g->find_value("ab")]);
    // The aliased Reshapes copy nothing: no cost hint for the levels and the cost model; the
    // Sigmoid and the Add keep theirs (8 floats read and written: 64 bytes, the Add 96).
    const Plan& plan = s->plan();
    auto producer = [&](const char* value) { return g->value(*g->find_value(value)).producer; };
    for (const char* value : {"flat", "s2"}) {
      const ops::CostHint c = plan.cost(producer(value));
      CHECK(c.bytes == 0);
      CHECK(c.flops == 0);
    }
    CHECK(plan.cost(producer("s")).bytes == 64);
    CHECK(plan.cost(producer("y")).bytes == 96);
    for (int rep = 0; rep < 3; ++rep) {
      NamedTensors out = value_or_throw(s->run({{"a", a}, {"b", bt}}));
      REQUIRE(out.size() == 2);
      const Tensor& y = out[0].second;
      const Tensor& flat = out[1].second;
      CHECK(flat.desc() == TensorDesc{DType::kF32, {8}});
      for (int i = 0; i < 8; ++i) {
        double acc = 0;
        for (int k = 0; k < 3; ++k)
          acc += double(a.data_as<float>()[(i / 4) * 3 + k]) * bt.data_as<float>()[k * 4 + i % 4];
        CHECK(flat.data_as<float>()[i] == Approx(acc).margin(1e-5));
        CHECK(y.data_as<float>()[i] == Approx(want.data_as<float>()[i]).margin(1e-5));
      }
    }
  }
}

TEST_CASE("session: a graph without nodes returns a copy of its input", "[session]") {
  graph::GraphBuilder e("<empty>");
  e.add_input("x", TensorDesc{DType::kF32, {4}});
  e.add_output("x");
  auto g = std::make_shared<const graph::Graph>(value_or_throw(e.finish(ops::Registry::get())));
  auto s = value_or_throw(Session::create(g));
  CHECK(s->plan().num_nodes() == 0);
  CHECK(s->plan().memory().peak_bytes == 0);
  Tensor x = test::random_tensor(TensorDesc{DType::kF32, {4}}, 3);
  NamedTensors out = value_or_throw(s->run({{"x", x}}));
  REQUIRE(out.size() == 1);
  CHECK(same_bytes(out[0].second, x));
  CHECK(out[0].second.data() != x.data());
}

TEST_CASE("session: GRAPHI_PASSES picks passes by name and an unknown name lists every pass",
          "[session]") {
  struct RestoreEnv {
    std::string old;
    bool had;
    RestoreEnv() : had(std::getenv("GRAPHI_PASSES") != nullptr) {
      if (had) old = std::getenv("GRAPHI_PASSES");
    }
    ~RestoreEnv() {
      if (had)
        setenv("GRAPHI_PASSES", old.c_str(), 1);
      else
        unsetenv("GRAPHI_PASSES");
    }
  } restore;
  setenv("GRAPHI_PASSES", "conv_dw,channel_affine", 1);
  auto picked = graphi::engine::pipeline_options_from_env();
  REQUIRE(picked.is_ok());
  CHECK(picked->conv_dw);
  CHECK(picked->channel_affine);
  CHECK_FALSE(picked->rnn_fusion);
  CHECK_FALSE(picked->conv_scale);
  setenv("GRAPHI_PASSES", "conv_dw,no_such_pass", 1);
  auto bad = graphi::engine::pipeline_options_from_env();
  REQUIRE_FALSE(bad.is_ok());
  const std::string msg = bad.status().message();
  INFO(msg);
  CHECK(msg.find("'no_such_pass'") != std::string::npos);
  for (const char* pass : {"rnn_fusion", "matmul_epilogue", "conv_scale", "channel_affine"})
    CHECK(msg.find(pass) != std::string::npos);
}
