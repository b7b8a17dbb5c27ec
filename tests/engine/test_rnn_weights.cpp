// SessionOptions::rnn_weights (engine/rnn_weights_option.h): which nodes get bf16 weights, bad
// values, and the accuracy of bf16 weights against the fp32 run of the same Session graph on the
// repository's recurrent models (models/: the `graphi model lstm|gru` generators, fused into
// sequence ops by the default passes) over 100 steps. The documented bound (docs/RNN_KERNELS.md):
// max |y - y_fp32| <= 1e-2. The numbers are printed (run the test binary to see them).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "engine/model_loader.h"
#include "engine/rnn_weights_option.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "models/gru.h"
#include "models/lstm.h"
#include "models/weights.h"
#include "ops/registry.h"
#include "ops/rnn/rnn_sequence.h"

using namespace graphi;

namespace {

std::shared_ptr<const graph::Graph> fused(Result<graph::Graph> g) {
  REQUIRE(g.is_ok());
  auto opt = engine::optimize_graph(std::make_shared<const graph::Graph>(std::move(g).value()));
  REQUIRE(opt.is_ok());
  return opt->graph;
}

int count_rnn_nodes(const graph::Graph& g, const std::string& weights) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) {
    if (node.op != "LSTM" && node.op != "GRU" && node.op != "RNN") continue;
    const graph::Attribute* a = node.attrs.find(ops::kRnnWeightsAttr);
    const std::string w = a ? std::get<std::string>(*a) : "fp32";
    if (w == weights) ++n;
  }
  return n;
}

engine::NamedTensors model_inputs(const graph::Graph& g, uint64_t seed) {
  engine::NamedTensors in;
  models::WeightRng rng(seed);
  for (graph::ValueId v : g.inputs()) {
    const graph::Value& val = g.value(v);
    Tensor t(val.desc);
    float* p = t.data_as<float>();
    // x uniform in [-1, 1); the initial states h0 / c0 zero (the usual start).
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = val.name == "x" ? rng.uniform(-1, 1) : 0.0f;
    in.emplace_back(val.name, std::move(t));
  }
  return in;
}

struct Errors {
  double max_abs = 0, mean_abs = 0;
};
Errors errors(const Tensor& a, const Tensor& b) {
  REQUIRE(a.desc() == b.desc());
  Errors e;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::abs(double(a.data_as<float>()[i]) - double(b.data_as<float>()[i]));
    e.max_abs = std::max(e.max_abs, d);
    e.mean_abs += d;
  }
  e.mean_abs /= double(std::max<int64_t>(1, a.numel()));
  return e;
}

// Runs `g` with fp32 and `precision` weights (2 threads) and checks/prints every output's
// errors against the documented bounds (max and mean |error|).
void check_accuracy(const std::string& name, std::shared_ptr<const graph::Graph> g,
                    const std::string& precision = "bf16", double max_bound = 1e-2,
                    double mean_bound = 1e-2) {
  engine::SessionOptions o;
  o.threads = 2;
  auto f32 = engine::Session::create(g, o);
  REQUIRE(f32.is_ok());
  o.rnn_weights = precision;
  auto b16 = engine::Session::create(g, o);
  REQUIRE(b16.is_ok());
  CHECK(count_rnn_nodes((*b16)->graph(), precision) >= 1);
  CHECK(count_rnn_nodes((*b16)->graph(), "fp32") == 0);
  const engine::NamedTensors in = model_inputs(*g, 7);
  auto want = (*f32)->run(in);
  auto got = (*b16)->run(in);
  REQUIRE(want.is_ok());
  REQUIRE(got.is_ok());
  REQUIRE(want->size() == got->size());
  for (size_t i = 0; i < want->size(); ++i) {
    const Errors e = errors((*got)[i].second, (*want)[i].second);
    std::printf("%s weights vs fp32, %s, output %s: max |error| %.3g, mean |error| %.3g\n",
                precision.c_str(), name.c_str(), (*want)[i].first.c_str(), e.max_abs, e.mean_abs);
    INFO(precision << " " << name << " output " << (*want)[i].first);
    CHECK(e.max_abs > 0);           // the option took effect
    CHECK(e.max_abs <= max_bound);  // the documented bound (y, h_n; c_n too on these models)
    CHECK(e.mean_abs <= mean_bound);
  }
}

}  // namespace

TEST_CASE("rnn weights option: bf16 accuracy on the repository's recurrent models, 100 steps",
          "[rnn_weights]") {
  models::RnnSpec s;
  s.input = 256;
  s.hidden = 256;
  s.layers = 2;
  s.batch = 1;
  s.seq = 100;
  s.seed = 3;
  check_accuracy("lstm E256 H256 L2 B1 T100", fused(models::build_lstm(s, ops::Registry::get())));
  check_accuracy("gru E256 H256 L2 B1 T100", fused(models::build_gru(s, ops::Registry::get())));
  s.linear_before_reset = true;
  check_accuracy("gru-lbr E256 H256 L2 B1 T100", fused(models::build_gru(s, ops::Registry::get())));
  s.linear_before_reset = false;
  s.layers = 1;
  s.input = s.hidden = 1024;
  check_accuracy("lstm E1024 H1024 L1 B1 T100", fused(models::build_lstm(s, ops::Registry::get())));
  s.input = s.hidden = 128;
  s.batch = 10;
  check_accuracy("lstm E128 H128 L1 B10 T100", fused(models::build_lstm(s, ops::Registry::get())));
}

// int8 (docs/RNN_KERNELS.md): max |error| <= 2e-2 and mean |error| <= 2e-3 for y and h_n
// (in [-1, 1]); c_n is unbounded in principle, held to the same bound on these models.
TEST_CASE("rnn weights option: int8 accuracy on the repository's recurrent models, 100 steps",
          "[rnn_weights]") {
  models::RnnSpec s;
  s.input = 256;
  s.hidden = 256;
  s.layers = 2;
  s.batch = 1;
  s.seq = 100;
  s.seed = 3;
  const double mx = 2e-2, mean = 2e-3;
  check_accuracy("lstm E256 H256 L2 B1 T100", fused(models::build_lstm(s, ops::Registry::get())),
                 "int8", mx, mean);
  check_accuracy("gru E256 H256 L2 B1 T100", fused(models::build_gru(s, ops::Registry::get())),
                 "int8", mx, mean);
  s.linear_before_reset = true;
  check_accuracy("gru-lbr E256 H256 L2 B1 T100", fused(models::build_gru(s, ops::Registry::get())),
                 "int8", mx, mean);
  s.linear_before_reset = false;
  s.layers = 1;
  s.input = s.hidden = 1024;
  check_accuracy("lstm E1024 H1024 L1 B1 T100", fused(models::build_lstm(s, ops::Registry::get())),
                 "int8", mx, mean);
  s.input = s.hidden = 128;
  s.batch = 10;
  check_accuracy("lstm E128 H128 L1 B10 T100", fused(models::build_lstm(s, ops::Registry::get())),
                 "int8", mx, mean);
}

TEST_CASE("rnn weights option: values, explicit node attributes win, graphs without RNNs",
          "[rnn_weights]") {
  models::RnnSpec s;
  s.input = 8;
  s.hidden = 16;
  s.layers = 2;
  s.seq = 3;
  auto g = fused(models::build_lstm(s, ops::Registry::get()));
  REQUIRE(count_rnn_nodes(*g, "fp32") == 2);
  // "" and fp32: the graph itself.
  for (const char* v : {"", "fp32", "FP32"}) {
    auto same = engine::apply_rnn_weights(g, v);
    REQUIRE(same.is_ok());
    CHECK(same->get() == g.get());
  }
  auto b = engine::apply_rnn_weights(g, "bf16");
  REQUIRE(b.is_ok());
  CHECK(count_rnn_nodes(**b, "bf16") == 2);
  CHECK((*b)->num_nodes() == g->num_nodes());
  auto i8 = engine::apply_rnn_weights(g, "int8");
  REQUIRE(i8.is_ok());
  CHECK(count_rnn_nodes(**i8, "int8") == 2);
  // Unknown: an error naming the option.
  auto bad = engine::apply_rnn_weights(g, "fp16");
  REQUIRE(!bad.is_ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("rnn_weights") && Catch::Contains("fp16"));
  engine::SessionOptions o;
  o.rnn_weights = "fp16";
  auto sess = engine::Session::create(g, o);
  REQUIRE(!sess.is_ok());
  CHECK_THAT(sess.status().message(), Catch::Contains("rnn_weights"));

  // A node's own attribute wins over the option.
  graph::GraphBuilder gb("<one lstm>");
  gb.add_input("X", TensorDesc{DType::kF32, {3, 1, 4}});
  gb.add_constant("W", Tensor(TensorDesc{DType::kF32, {1, 32, 4}}));
  gb.add_constant("R", Tensor(TensorDesc{DType::kF32, {1, 32, 8}}));
  graph::Attributes a;
  a.set("hidden_size", int64_t{8});
  a.set(ops::kRnnWeightsAttr, std::string("fp32"));
  gb.add_node("LSTM", "lstm", {"X", "W", "R"}, {"Y"}, a);
  gb.add_output("Y");
  auto one = gb.finish(ops::Registry::get());
  REQUIRE(one.is_ok());
  auto gp = std::make_shared<const graph::Graph>(std::move(one).value());
  auto kept = engine::apply_rnn_weights(gp, "bf16");
  REQUIRE(kept.is_ok());
  CHECK(kept->get() == gp.get());

  // The file's precision (graphi_rnn_file_weights, an imported DynamicQuantizeLSTM) is only the
  // default: every option, fp32 too, overrides it.
  graph::GraphBuilder fb("<quantized lstm>");
  fb.add_input("X", TensorDesc{DType::kF32, {3, 1, 4}});
  fb.add_constant("W", Tensor(TensorDesc{DType::kF32, {1, 32, 4}}));
  fb.add_constant("R", Tensor(TensorDesc{DType::kF32, {1, 32, 8}}));
  graph::Attributes fa;
  fa.set("hidden_size", int64_t{8});
  fa.set(ops::kRnnFileWeightsAttr, std::string("int8"));
  fb.add_node("LSTM", "lstm", {"X", "W", "R"}, {"Y"}, fa);
  fb.add_output("Y");
  auto fg = fb.finish(ops::Registry::get());
  REQUIRE(fg.is_ok());
  auto fp = std::make_shared<const graph::Graph>(std::move(fg).value());
  auto as_file = engine::apply_rnn_weights(fp, "");
  REQUIRE(as_file.is_ok());
  CHECK(as_file->get() == fp.get());
  for (const char* v : {"fp32", "bf16", "int8"}) {
    auto over = engine::apply_rnn_weights(fp, v);
    REQUIRE(over.is_ok());
    CHECK(count_rnn_nodes(**over, v == std::string("fp32") ? "fp32" : v) == 1);
    CHECK((*over)->node(0).attrs.has(ops::kRnnWeightsAttr));
  }

  // No recurrent node: unchanged.
  graph::GraphBuilder plain("<relu>");
  plain.add_input("x", TensorDesc{DType::kF32, {4}});
  plain.add_node("Relu", "r", {"x"}, {"y"});
  plain.add_output("y");
  auto pg = plain.finish(ops::Registry::get());
  REQUIRE(pg.is_ok());
  auto pp = std::make_shared<const graph::Graph>(std::move(pg).value());
  auto unchanged = engine::apply_rnn_weights(pp, "bf16");
  REQUIRE(unchanged.is_ok());
  CHECK(unchanged->get() == pp.get());
}
