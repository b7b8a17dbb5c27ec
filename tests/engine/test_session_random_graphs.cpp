// Random DAGs of real ops run through Session (teams of 1 and 2, every reuse mode) against a
// naive evaluation written here: it walks the graph node by node and calls the independent
// references of tests/support (no Plan, no memory plan, no kernels).
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <set>

#include "engine/plan.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/reference_basic.h"
#include "tests/support/reference_gemm_conv.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;
using graph::kNoId;

namespace {

// Builds a random graph whose "pool" values all have shape [B, H]. Each step adds one op, or a
// short group of ops that starts and ends at [B, H] (Concat+MatMul, Split+Concat,
// Transpose+MatMul+Transpose, Reshape+Reshape), so every op reads values of many ages.
class RandomGraph {
 public:
  RandomGraph(uint64_t seed, int steps)
      : rng_(seed), b_("<random graph " + std::to_string(seed) + ">") {
    B_ = uni(1, 4);
    H_ = std::vector<int64_t>{4, 8, 16, 6}[uni(0, 3)];
    for (int i = 0, n = uni(1, 3); i < n; ++i) {
      std::string name = "x" + std::to_string(i);
      b_.add_input(name, desc({B_, H_}));
      inputs_.push_back(name);
      pool_.push_back(name);
    }
    for (int s = 0; s < steps; ++s) step();
    std::set<std::string> outs{pool_.back()};
    for (const auto& v : pool_)
      if (uni(0, 9) == 0) outs.insert(v);
    for (const auto& o : outs) b_.add_output(o);
  }

  std::shared_ptr<const graph::Graph> finish() {
    auto g = b_.finish(ops::Registry::get());
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    return std::make_shared<const graph::Graph>(std::move(g).value());
  }
  const std::vector<std::string>& inputs() const { return inputs_; }
  TensorDesc input_desc() const { return desc({B_, H_}); }
  // One random value per graph input, from seeds first_seed, first_seed + 1, ...
  NamedTensors random_inputs(uint64_t first_seed, double lo = -1.0, double hi = 1.0) const {
    NamedTensors in;
    for (size_t i = 0; i < inputs_.size(); ++i)
      in.emplace_back(inputs_[i], test::random_tensor(input_desc(), first_seed + i, lo, hi));
    return in;
  }

 private:
  static TensorDesc desc(Shape s) { return TensorDesc{DType::kF32, std::move(s)}; }
  int uni(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  const std::string& pick() {  // mostly recent values, sometimes old ones
    int hi = static_cast<int>(pool_.size()) - 1;
    return pool_[uni(0, 2) ? std::max(0, hi - uni(0, 3)) : uni(0, hi)];
  }
  std::string fresh() { return "v" + std::to_string(counter_++); }
  std::string constant(Shape s, double lo, double hi) {
    std::string name = "c" + std::to_string(counter_++);
    b_.add_constant(name, test::random_tensor(desc(std::move(s)), rng_(), lo, hi));
    return name;
  }
  std::string int_constant(std::vector<int64_t> v) {
    std::string name = "shape" + std::to_string(counter_++);
    Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
    for (size_t i = 0; i < v.size(); ++i) t.data_as<int64_t>()[i] = v[i];
    b_.add_constant(name, std::move(t));
    return name;
  }
  std::string node(const std::string& op, std::vector<std::string> ins, int n_out = 1,
                   graph::Attributes attrs = {}) {
    std::vector<std::string> outs;
    for (int i = 0; i < n_out; ++i) outs.push_back(fresh());
    b_.add_node(op, "n" + std::to_string(counter_++) + "_" + op, ins, outs, std::move(attrs));
    last_outputs_ = outs;
    return outs[0];
  }
  static graph::Attributes attrs(
      std::initializer_list<std::pair<std::string, graph::Attribute>> kv) {
    graph::Attributes a;
    for (auto& [k, v] : kv) a.set(k, v);
    return a;
  }

  void step() {
    const double w = 1.0 / std::sqrt(static_cast<double>(H_));
    std::string out;
    switch (uni(0, 13)) {
      case 0:
      case 1: {  // binary op of two pool values, or with a broadcast bias
        const char* op = std::vector<const char*>{"Add", "Sub", "Mul"}[uni(0, 2)];
        std::string rhs = uni(0, 3) == 0 ? constant({H_}, -1, 1) : pick();
        out = node(op, {pick(), rhs});
        break;
      }
      case 2:
        out = node("Div", {pick(), constant({B_, H_}, 1, 2)});
        break;
      case 3:
      case 4:
        out = node(std::vector<const char*>{"Sigmoid", "Tanh", "Relu"}[uni(0, 2)], {pick()});
        break;
      case 5:
      case 6:
        out = node("MatMul", {pick(), constant({H_, H_}, -w, w)});
        break;
      case 7:  // Gemm with transB, alpha, beta and a bias row
        out = node("Gemm", {pick(), constant({H_, H_}, -w, w), constant({H_}, -1, 1)}, 1,
                   attrs({{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}}));
        break;
      case 8: {  // [B,H] ++ [B,H] -> [B,2H] -> MatMul [2H,H]
        std::string cat = node("Concat", {pick(), pick()}, 1, attrs({{"axis", int64_t{1}}}));
        out = node("MatMul", {cat, constant({2 * H_, H_}, -w, w)});
        break;
      }
      case 9: {  // split in halves, concatenate swapped
        node("Split", {pick()}, 2,
             attrs({{"axis", int64_t{1}}, {"split", std::vector<int64_t>{H_ / 2, H_ / 2}}}));
        std::vector<std::string> halves = last_outputs_;
        out = node("Concat", {halves[1], halves[0]}, 1, attrs({{"axis", int64_t{-1}}}));
        break;
      }
      case 10: {  // transpose, left-multiply, transpose back
        std::string t =
            node("Transpose", {pick()}, 1, attrs({{"perm", std::vector<int64_t>{1, 0}}}));
        std::string m = node("MatMul", {constant({H_, H_}, -w, w), t});
        out = node("Transpose", {m});
        break;
      }
      case 11: {  // small ops: Reshape to 1-D and back, Identity
        std::string flat = node("Reshape", {pick(), int_constant({-1})});
        std::string back = node("Reshape", {flat, int_constant({B_, -1})});
        out = node("Identity", {back});
        break;
      }
      case 12:
        out = node("Softmax", {pick()}, 1, attrs({{"axis", int64_t{-1}}}));
        break;
      case 13: {  // a 3-way Split with one output nobody reads, then Concat of the other two
        if (H_ % 2 != 0) {
          out = node("Tanh", {pick()});
          break;
        }
        node("Split", {pick()}, 3,
             attrs({{"axis", int64_t{1}},
                    {"split", std::vector<int64_t>{H_ / 2, H_ / 4, H_ - H_ / 2 - H_ / 4}}}));
        std::vector<std::string> parts = last_outputs_;
        std::string rest = node("Concat", {parts[1], parts[2]}, 1, attrs({{"axis", int64_t{1}}}));
        out = node("Concat", {rest, parts[0]}, 1, attrs({{"axis", int64_t{1}}}));
        break;
      }
    }
    pool_.push_back(out);
  }

  std::mt19937_64 rng_;
  graph::GraphBuilder b_;
  int64_t B_ = 1, H_ = 4;
  int counter_ = 0;
  std::vector<std::string> inputs_, pool_, last_outputs_;
};

std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.dtype() == DType::kI64 ? t.data_as<int64_t>()[i] : t.data_as<int32_t>()[i];
  return v;
}

// The oracle: every node in the graph's node order through the naive references.
std::vector<Tensor> naive_eval(const graph::Graph& g, const NamedTensors& inputs) {
  std::vector<std::optional<Tensor>> val(g.num_values());
  for (ValueId v = 0; v < g.num_values(); ++v)
    if (g.value(v).kind == graph::ValueKind::kConstant) val[v] = *g.value(v).data;
  for (const auto& [name, t] : inputs) val[*g.find_value(name)] = t;
  for (const graph::Node& n : g.nodes()) {
    auto in = [&](size_t i) -> const Tensor& { return *val[n.inputs[i]]; };
    auto int_attr = [&](const char* k, int64_t d) {
      const graph::Attribute* a = n.attrs.find(k);
      return a ? std::get<int64_t>(*a) : d;
    };
    auto float_attr = [&](const char* k, double d) {
      const graph::Attribute* a = n.attrs.find(k);
      return a ? std::get<double>(*a) : d;
    };
    std::vector<Tensor> out;
    if (n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div") {
      out.push_back(test::binary_ref(n.op, in(0), in(1)));
    } else if (n.op == "Sigmoid" || n.op == "Tanh" || n.op == "Relu") {
      out.push_back(test::unary_ref(n.op, in(0)));
    } else if (n.op == "MatMul") {
      out.push_back(test::matmul_ref(in(0), in(1)));
    } else if (n.op == "Gemm") {
      out.push_back(test::gemm_ref(in(0), in(1), n.inputs.size() > 2 ? &in(2) : nullptr,
                                   float_attr("alpha", 1), float_attr("beta", 1),
                                   int_attr("transA", 0), int_attr("transB", 0)));
    } else if (n.op == "Concat") {
      std::vector<Tensor> xs;
      for (size_t i = 0; i < n.inputs.size(); ++i) xs.push_back(in(i));
      out.push_back(test::concat_ref(xs, int_attr("axis", 0)));
    } else if (n.op == "Split") {
      out = test::split_ref(in(0), int_attr("axis", 0),
                            std::get<std::vector<int64_t>>(*n.attrs.find("split")));
    } else if (n.op == "Transpose") {
      const graph::Attribute* p = n.attrs.find("perm");
      out.push_back(test::transpose_ref(
          in(0), p ? std::get<std::vector<int64_t>>(*p) : std::vector<int64_t>{}));
    } else if (n.op == "Reshape") {
      out.push_back(test::reshape_ref(in(0), ints_of(in(1))));
    } else if (n.op == "Identity") {
      out.push_back(in(0));
    } else if (n.op == "Softmax") {
      out.push_back(test::softmax_ref(in(0), int_attr("axis", -1)));
    } else {
      FAIL("naive_eval: no reference for " << n.op);
    }
    REQUIRE(out.size() == n.outputs.size());
    for (size_t i = 0; i < out.size(); ++i) val[n.outputs[i]] = std::move(out[i]);
  }
  std::vector<Tensor> result;
  for (ValueId v : g.outputs()) result.push_back(*val[v]);
  return result;
}

bool same_bytes(const Tensor& x, const Tensor& y) {
  return x.desc() == y.desc() && std::memcmp(x.data(), y.data(), x.bytes()) == 0;
}

}  // namespace

TEST_CASE("session: random graphs of real ops match a naive evaluation (teams of 1 and 2)",
          "[session][random]") {
  size_t nodes = 0, peak = 0, total = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    RandomGraph rg(seed, 6 + static_cast<int>(seed % 25));
    auto g = rg.finish();
    NamedTensors inputs = rg.random_inputs(1000 * seed, -2, 2);
    const NamedTensors originals = inputs;
    std::vector<Tensor> expected = naive_eval(*g, inputs);
    nodes += g->num_nodes();

    for (int threads : {1, 2}) {
      INFO("seed " << seed << ", " << g->num_nodes() << " nodes, threads " << threads);
      SessionOptions opt;
      opt.threads = threads;
      auto s = value_or_throw(Session::create(g, opt));
      if (threads == 1) peak += s->memory().peak_bytes, total += s->memory().total_bytes;
      for (int rep = 0; rep < 2; ++rep) {  // the second run reuses the arena of the first
        NamedTensors out = value_or_throw(s->run(inputs));
        REQUIRE(out.size() == expected.size());
        for (size_t i = 0; i < out.size(); ++i) {
          INFO("output " << out[i].first);
          CHECK(out[i].first == g->value(g->outputs()[i]).name);
          CHECK(test::max_rel_error(out[i].second, expected[i]) < 1e-5);
        }
      }
      for (size_t i = 0; i < inputs.size(); ++i)
        REQUIRE(same_bytes(inputs[i].second, originals[i].second));
    }
  }
  INFO(nodes << " nodes, arena " << peak << " bytes with reuse, " << total << " without");
  CHECK(peak < total);
}

TEST_CASE("session: every reuse mode gives the same outputs", "[session][random]") {
  for (uint64_t seed = 100; seed < 110; ++seed) {
    RandomGraph rg(seed, 25);
    auto g = rg.finish();
    const NamedTensors inputs = rg.random_inputs(seed * 7);
    std::vector<Tensor> expected = naive_eval(*g, inputs);
    for (ReuseMode mode : {ReuseMode::kNone, ReuseMode::kSequential, ReuseMode::kDependencySafe}) {
      INFO("seed " << seed << ", mode " << reuse_mode_name(mode));
      auto plan = std::make_shared<const Plan>(value_or_throw(compile(g, 2, mode)));
      SessionOptions opt;
      opt.threads = 2;
      auto s = value_or_throw(Session::create(plan, opt));
      CHECK(s->shared_plan() == plan);
      NamedTensors out = value_or_throw(s->run(inputs));
      for (size_t i = 0; i < out.size(); ++i)
        CHECK(test::max_rel_error(out[i].second, expected[i]) < 1e-5);
    }
  }
}

TEST_CASE(
    "session: the sequential scheduler's arena is the node-order plan, parallel ones the "
    "dependency-safe plan, both correct",
    "[session][random]") {
  size_t sequential = 0, safe = 0;
  for (uint64_t seed = 200; seed < 215; ++seed) {
    RandomGraph rg(seed, 30);
    auto g = rg.finish();
    const NamedTensors inputs = rg.random_inputs(seed * 3);
    std::vector<Tensor> expected = naive_eval(*g, inputs);
    auto plan = std::make_shared<const Plan>(value_or_throw(compile(g, 1)));
    REQUIRE(plan->memory().mode == ReuseMode::kDependencySafe);
    REQUIRE(plan->sequential_memory().mode == ReuseMode::kSequential);
    CHECK(plan->sequential_memory().peak_bytes <= plan->memory().peak_bytes);
    sequential += plan->sequential_memory().peak_bytes;
    safe += plan->memory().peak_bytes;
    SessionOptions seq;  // the default: sequential, 1 executor
    SessionOptions par;
    par.executors = 2;
    par.scheduler = "cpf";
    par.pin = false;
    for (const SessionOptions& opt : {seq, par}) {
      INFO("seed " << seed << ", scheduler " << opt.scheduler);
      auto s = value_or_throw(Session::create(plan, opt));
      const MemoryPlan& want =
          opt.scheduler == "sequential" ? plan->sequential_memory() : plan->memory();
      CHECK(&s->memory() == &want);
      for (int rep = 0; rep < 3; ++rep) {
        NamedTensors out = value_or_throw(s->run(inputs));
        REQUIRE(out.size() == expected.size());
        for (size_t i = 0; i < out.size(); ++i)
          CHECK(test::max_rel_error(out[i].second, expected[i]) < 1e-5);
      }
    }
  }
  INFO("arena peaks over the graphs: sequential " << sequential << ", dependency-safe " << safe);
  CHECK(sequential < safe);  // the node-order plan is smaller on these graphs in total
}

TEST_CASE("session: two Sessions share one Plan, a team size mismatch is refused", "[session]") {
  RandomGraph rg(7, 20);
  auto g = rg.finish();
  auto plan = std::make_shared<const Plan>(value_or_throw(compile(g, 1)));
  auto s1 = value_or_throw(Session::create(plan));
  auto s2 = value_or_throw(Session::create(plan));
  const NamedTensors inputs = rg.random_inputs(40);
  NamedTensors o1 = value_or_throw(s1->run(inputs)), o2 = value_or_throw(s2->run(inputs));
  for (size_t i = 0; i < o1.size(); ++i) CHECK(same_bytes(o1[i].second, o2[i].second));

  SessionOptions two;
  two.threads = 2;
  auto bad = Session::create(plan, two);
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Matchers::Contains("compiled for teams of 1"));
}
