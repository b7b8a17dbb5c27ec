// Helpers for the graph pass tests (tests/graph/test_*pass*.cpp): run a graph through
// engine::Session and compare a rewritten graph with the original on the same random inputs,
// and a small builder for hand-written graphs.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace graphi::test {

// kernel_shape, strides and pads of a square Conv / pool window.
inline graph::Attributes conv_window(int64_t k, int64_t stride, int64_t pad) {
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  return a;
}

inline size_t count_op(const graph::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const graph::Node& node : g.nodes()) n += node.op == op;
  return n;
}

inline engine::NamedTensors random_inputs(const graph::Graph& g, uint64_t seed) {
  engine::NamedTensors in;
  for (graph::ValueId v : g.inputs())
    in.emplace_back(g.value(v).name, random_tensor(g.value(v).desc, seed++));
  return in;
}

inline engine::NamedTensors run_graph(const graph::Graph& g, const engine::NamedTensors& in,
                                      int threads) {
  engine::SessionOptions opts;
  opts.threads = threads;
  auto s = engine::Session::create(std::make_shared<const graph::Graph>(g), opts);
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  auto out = (*s)->run(in);
  INFO(out.status().message());
  REQUIRE(out.is_ok());
  return std::move(*out);
}

// Runs both graphs on the same random inputs; same output names, values within `tol`.
inline void check_same_outputs(const graph::Graph& ref, const graph::Graph& rewritten,
                               int threads = 1, double tol = 1e-5) {
  const engine::NamedTensors in = random_inputs(ref, 7);
  const engine::NamedTensors a = run_graph(ref, in, 1), b = run_graph(rewritten, in, threads);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    CHECK(max_rel_error(b[i].second, a[i].second) < tol);
  }
}

// Builds graphs op by op with generated value names.
struct NetBuilder {
  graph::GraphBuilder b{"handmade"};
  int k = 0;
  uint64_t seed = 100;

  std::string fresh(const std::string& p) { return p + "_" + std::to_string(k++); }
  std::string node(const std::string& op, const std::vector<std::string>& ins,
                   graph::Attributes attrs = {}) {
    const std::string n = fresh(op);
    b.add_node(op, n, ins, {n}, std::move(attrs));
    return n;
  }
  std::vector<std::string> multi(const std::string& op, const std::vector<std::string>& ins,
                                 size_t outs, graph::Attributes attrs = {}) {
    const std::string n = fresh(op);
    std::vector<std::string> o;
    for (size_t i = 0; i < outs; ++i) o.push_back(n + "_out" + std::to_string(i));
    b.add_node(op, n, ins, o, std::move(attrs));
    return o;
  }
  std::string constant(Tensor t) {
    const std::string n = fresh("const");
    b.add_constant(n, std::move(t));
    return n;
  }
  std::string weight(const Shape& s, double scale = 0.5) {
    return constant(random_tensor({DType::kF32, s}, seed++, -scale, scale));
  }
  std::string ints(const std::vector<int64_t>& v) {
    Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
    for (size_t i = 0; i < v.size(); ++i) t.data_as<int64_t>()[i] = v[i];
    return constant(std::move(t));
  }
  std::string scalar(float x) {
    Tensor t(TensorDesc{DType::kF32, {1}});
    t.data_as<float>()[0] = x;
    return constant(std::move(t));
  }
  // Opset-13 style Slice: starts/ends/axes as constant inputs.
  std::string slice(const std::string& in, int64_t axis, int64_t s, int64_t e) {
    return node("Slice", {in, ints({s}), ints({e}), ints({axis})});
  }
  std::string reshape(const std::string& in, const std::vector<int64_t>& shape) {
    return node("Reshape", {in, ints(shape)});
  }
  // x[t] of a [T, B, X] tensor (what an importer makes of PyTorch's Gather).
  std::string row(const std::string& in, int64_t t, int64_t B, int64_t X) {
    return reshape(slice(in, 0, t, t + 1), {B, X});
  }
  std::string gemm(const std::string& a, const std::string& w, const std::string& bias,
                   bool trans_b) {
    graph::Attributes at;
    at.set("transB", int64_t{trans_b ? 1 : 0});
    at.set("alpha", 1.0);
    at.set("beta", 1.0);
    std::vector<std::string> ins{a, w};
    if (!bias.empty()) ins.push_back(bias);
    return node("Gemm", ins, std::move(at));
  }
  std::string concat(const std::vector<std::string>& ins, int64_t axis) {
    graph::Attributes at;
    at.set("axis", axis);
    return node("Concat", ins, std::move(at));
  }
  Result<graph::Graph> finish() { return b.finish(ops::Registry::get()); }
};

}  // namespace graphi::test
