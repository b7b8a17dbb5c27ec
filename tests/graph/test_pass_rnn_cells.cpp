// graph/passes/rnn_fusion.h on cells written the way PyTorch exports hand-written cells
// (torch.onnx.export of tests/data/onnx_cells/gen_onnx_cells.py): Gemm with transB and a bias
// input, MatMul by a transposed or Identity'd constant, chunk() as Slices with constant inputs
// or a Split with a sizes input, one Linear per gate, [x, h] concatenated, GRU as
// (1 - z) * n + z * h with r applied after the recurrent product (PyTorch's nn.GRU form) or
// before it. The graphs mirror the exports node for node (x[t] as Slice + Reshape). Each fused
// graph must agree with the unfused one (plain ops, no shared code with the sequence kernels) to
// 1e-5; graphs that only look like cells must be left alone.
#include <catch2/catch.hpp>

#include "graph/passes/rnn_fusion.h"
#include "tests/graph/rnn_cell_graphs.h"

using namespace graphi;
using namespace graphi::test;

TEST_CASE("RNN fusion recognizes cells as PyTorch exports them", "[graph][fusion]") {
  const CellSpec specs[] = {
      {Cell::kLstmChunk, 6, 8, 2, 3, 5},
      {Cell::kLstmChunk, 5, 4, 1, 1, 4},
      {Cell::kLstmSplit, 6, 5, 2, 2, 4},
      {Cell::kLstmPerGate, 6, 5, 2, 1, 6},
      {Cell::kLstmConcat, 4, 6, 2, 3, 4},
      {Cell::kLstmConcat, 6, 6, 1, 1, 1},
      {Cell::kLstmGemmC, 5, 6, 2, 2, 4},
      {Cell::kGruLbr, 6, 8, 2, 3, 5},
      {Cell::kGruLbr, 7, 4, 1, 1, 6},
      {Cell::kGruCanonical, 5, 6, 2, 3, 4},
      {Cell::kGruCanonical, 6, 6, 1, 2, 1},
      {Cell::kGruLbr, 5, 4, 2, 2, 3, Defect::kNone, true},
      {Cell::kGruCanonical, 5, 4, 2, 2, 3, Defect::kNone, true},
  };
  for (const CellSpec& s : specs) {
    INFO(cell_name(s.cell) << (s.swap_z ? " (z swapped)" : "") << " I=" << s.input << " H="
                           << s.hidden << " L=" << s.layers << " B=" << s.batch << " T=" << s.seq);
    auto g = build_cells(s);
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
    INFO(f.status().message());
    REQUIRE(f.is_ok());
    CHECK(f->cells == s.layers * s.seq);
    CHECK(f->sequences == s.layers);
    CHECK(test::count_op(f->graph, is_lstm(s.cell) ? "LSTM" : "GRU") ==
          static_cast<size_t>(s.layers));
    CHECK(test::count_op(f->graph, "Sigmoid") == 0);
    CHECK(test::count_op(f->graph, "Transpose") == 0);  // weight plumbing left dead is dropped
    CHECK(test::count_op(f->graph, "Identity") == 0);
    test::check_same_outputs(*g, f->graph, 1);
    test::check_same_outputs(*g, f->graph, 2);
  }
}

TEST_CASE("RNN fusion leaves look-alike cells alone", "[graph][fusion]") {
  struct Case {
    CellSpec spec;
    const char* why;
  };
  const Case cases[] = {
      {{Cell::kLstmChunk, 5, 4, 2, 2, 3, Defect::kReluCandidate}, "Relu candidate"},
      {{Cell::kLstmPerGate, 5, 4, 1, 2, 3, Defect::kReluCandidate}, "Relu candidate"},
      {{Cell::kLstmConcat, 5, 4, 1, 2, 3, Defect::kReluCandidate}, "Relu candidate"},
      {{Cell::kLstmChunk, 5, 4, 1, 2, 3, Defect::kInputWeight}, "W is a graph input"},
      {{Cell::kGruLbr, 5, 4, 2, 2, 3, Defect::kTwoMinusZ}, "(2 - z) * n"},
      {{Cell::kGruLbr, 5, 4, 1, 2, 3, Defect::kSigmoidN}, "sigmoid candidate"},
      {{Cell::kGruCanonical, 5, 4, 1, 2, 3, Defect::kSigmoidN}, "sigmoid candidate"},
  };
  for (const Case& c : cases) {
    INFO(cell_name(c.spec.cell) << ": " << c.why);
    auto g = build_cells(c.spec);
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
    REQUIRE(f.is_ok());
    CHECK(f->cells == 0);
    CHECK(f->graph.num_nodes() == g->num_nodes());
    test::check_same_outputs(*g, f->graph, 1);
  }
}

TEST_CASE("RNN fusion keeps a cell whose pre-activation is used elsewhere", "[graph][fusion]") {
  // Step 1's gate pre-activations are also a graph output: that cell stays as plain ops, the
  // others fuse into shorter chains around it, and the outputs do not change.
  const CellSpec s{Cell::kLstmChunk, 5, 4, 1, 2, 4, Defect::kExtraUse};
  auto g = build_cells(s);
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
  INFO(f.status().message());
  REQUIRE(f.is_ok());
  CHECK(f->cells == 3);
  CHECK(f->sequences == 2);  // t0 alone, then t2..t3
  CHECK(test::count_op(f->graph, "Sigmoid") == 3);
  test::check_same_outputs(*g, f->graph, 1);
}

TEST_CASE("RNN fusion gives up early on Add trees over shared values", "[graph][fusion]") {
  // v_{k+1} = v_k + v_k: an Add tree with 2^60 paths. h = sigmoid(v) * tanh(v) looks like the
  // end of an LSTM cell, so the matcher walks v; a bounded walk returns at once.
  NetBuilder n;
  n.b.add_input("a", {DType::kF32, {2, 3}});
  std::string v = "a";
  for (int k = 0; k < 60; ++k) v = n.node("Add", {v, v});
  n.b.add_output(n.node("Mul", {n.node("Sigmoid", {v}), n.node("Tanh", {v})}));
  auto g = n.finish();
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
  REQUIRE(f.is_ok());
  CHECK(f->cells == 0);
}

TEST_CASE("RNN fusion turns a hand-written bidirectional LSTM into forward + reverse ops",
          "[graph][fusion]") {
  // The backward half reads x[T-1] .. x[0]: it becomes an LSTM with direction = reverse over x
  // as it is, and torch.stack(outs[::-1]) becomes a Reshape of its Y.
  const int64_t T = 5, B = 2, I = 3, H = 4;
  NetBuilder n;
  n.b.add_input("x", {DType::kF32, {T, B, I}});
  n.b.add_input("h0", {DType::kF32, {2, B, H}});
  n.b.add_input("c0", {DType::kF32, {2, B, H}});
  std::vector<std::string> xs;
  for (int64_t t = 0; t < T; ++t) xs.push_back(n.row("x", t, B, I));
  std::vector<std::string> stacks, last;
  for (int d = 0; d < 2; ++d) {
    const std::string W = n.weight({I, 4 * H}), R = n.weight({H, 4 * H}), b = n.weight({4 * H});
    std::string h = n.row("h0", d, B, H), c = n.row("c0", d, B, H);
    std::vector<std::string> outs(T);
    for (int64_t s = 0; s < T; ++s) {
      const int64_t t = d == 0 ? s : T - 1 - s;
      std::string a = n.node("Add", {n.node("MatMul", {xs[t], W}), b});
      a = n.node("Add", {a, n.node("MatMul", {h, R})});
      std::vector<std::string> p;
      for (int k = 0; k < 4; ++k) p.push_back(n.slice(a, 1, k * H, (k + 1) * H));
      c = n.node("Add", {n.node("Mul", {n.node("Sigmoid", {p[1]}), c}),
                         n.node("Mul", {n.node("Sigmoid", {p[0]}), n.node("Tanh", {p[2]})})});
      h = n.node("Mul", {n.node("Sigmoid", {p[3]}), n.node("Tanh", {c})});
      outs[t] = h;  // in time order
    }
    std::vector<std::string> parts;
    for (const std::string& o : outs) parts.push_back(n.reshape(o, {1, B, H}));
    stacks.push_back(n.concat(parts, 0));
    last.push_back(n.reshape(h, {1, B, H}));
  }
  n.b.add_node("Concat", "y", stacks, {"y"}, [] {
    graph::Attributes a;
    a.set("axis", int64_t{2});
    return a;
  }());
  n.b.add_output("y");
  n.b.add_node("Concat", "h_n", last, {"h_n"}, [] {
    graph::Attributes a;
    a.set("axis", int64_t{0});
    return a;
  }());
  n.b.add_output("h_n");
  auto g = n.finish();
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
  INFO(f.status().message());
  REQUIRE(f.is_ok());
  CHECK(f->lstm_sequences == 2);
  CHECK(f->lstm_cells == 2 * T);
  int reverse = 0;
  for (const graph::Node& node : f->graph.nodes())
    if (node.op == "LSTM") {
      auto dir = graph::attr_string(node.attrs, "", "direction", "forward");
      REQUIRE(dir.is_ok());
      reverse += *dir == "reverse";
    }
  CHECK(reverse == 1);
  CHECK(count_op(f->graph, "Slice") == 4);  // h0[d], c0[d] only: no per-step x or y pieces
  check_same_outputs(*g, f->graph, 1);
  check_same_outputs(*g, f->graph, 2);
}

TEST_CASE("RNN fusion recognizes vanilla RNN chains", "[graph][fusion]") {
  // h_t = act(x_t W^T + b + h_{t-1} R), x_t = x[t]; a lone step is a dense layer and stays.
  struct Case {
    const char* act;
    int64_t T;
    bool fused;
  };
  const Case cases[] = {
      {"Tanh", 5, true}, {"Relu", 4, true}, {"Sigmoid", 3, true}, {"Tanh", 1, false}};
  for (const Case& c : cases) {
    INFO(c.act << " T=" << c.T);
    const int64_t B = 2, I = 3, H = 4;
    NetBuilder n;
    n.b.add_input("x", {DType::kF32, {c.T, B, I}});
    n.b.add_input("h0", {DType::kF32, {B, H}});
    const std::string W = n.weight({H, I}), b = n.weight({H}), R = n.weight({H, H});
    std::string h = "h0";
    std::vector<std::string> parts;
    for (int64_t t = 0; t < c.T; ++t) {
      const std::string xw = n.gemm(n.row("x", t, B, I), W, b, true);
      h = n.node(c.act, {n.node("Add", {n.node("MatMul", {h, R}), xw})});
      parts.push_back(n.reshape(h, {1, B, H}));
    }
    if (c.T > 1) n.b.add_output(n.concat(parts, 0));
    n.b.add_output(h);
    auto g = n.finish();
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
    INFO(f.status().message());
    REQUIRE(f.is_ok());
    CHECK(f->rnn_sequences == (c.fused ? 1 : 0));
    CHECK(f->rnn_cells == (c.fused ? c.T : 0));
    CHECK(count_op(f->graph, "RNN") == (c.fused ? 1u : 0u));
    CHECK(count_op(f->graph, c.act) == (c.fused ? 0u : static_cast<size_t>(c.T)));
    check_same_outputs(*g, f->graph, 1);
    check_same_outputs(*g, f->graph, 2);
  }
}

TEST_CASE("RNN fusion maps peephole LSTM cells onto the LSTM op's P input", "[graph][fusion]") {
  // i = sigmoid(.. + p_i * c_prev), f = sigmoid(.. + p_f * c_prev), o = sigmoid(.. + p_o * c);
  // `mask` picks which peepholes the cell has (the others are zeros in P).
  for (int mask : {7, 5, 2}) {
    INFO("peepholes mask " << mask);
    const int64_t T = 4, B = 2, I = 3, H = 5;
    NetBuilder n;
    n.b.add_input("x", {DType::kF32, {T, B, I}});
    n.b.add_input("h0", {DType::kF32, {B, H}});
    n.b.add_input("c0", {DType::kF32, {B, H}});
    const std::string W = n.weight({I, 4 * H}), R = n.weight({H, 4 * H}), b = n.weight({4 * H});
    const std::string pi = n.weight({H}), pf = n.weight({1, H}), po = n.weight({H});
    std::string h = "h0", c = "c0";
    std::vector<std::string> parts;
    for (int64_t t = 0; t < T; ++t) {
      std::string a = n.node("Add", {n.node("MatMul", {n.row("x", t, B, I), W}), b});
      a = n.node("Add", {a, n.node("MatMul", {h, R})});
      std::vector<std::string> p;
      for (int k = 0; k < 4; ++k) p.push_back(n.slice(a, 1, k * H, (k + 1) * H));
      if (mask & 1) p[0] = n.node("Add", {p[0], n.node("Mul", {pi, c})});
      if (mask & 2) p[1] = n.node("Add", {n.node("Mul", {c, pf}), p[1]});
      const std::string i = n.node("Sigmoid", {p[0]}), f = n.node("Sigmoid", {p[1]});
      c = n.node("Add", {n.node("Mul", {f, c}), n.node("Mul", {i, n.node("Tanh", {p[2]})})});
      if (mask & 4) p[3] = n.node("Add", {p[3], n.node("Mul", {po, c})});
      h = n.node("Mul", {n.node("Sigmoid", {p[3]}), n.node("Tanh", {c})});
      parts.push_back(n.reshape(h, {1, B, H}));
    }
    n.b.add_output(n.concat(parts, 0));
    n.b.add_output(c);
    auto g = n.finish();
    INFO(g.status().message());
    REQUIRE(g.is_ok());
    auto f = graph::passes::fuse_rnn_cells(*g, ops::Registry::get());
    INFO(f.status().message());
    REQUIRE(f.is_ok());
    CHECK(f->lstm_sequences == 1);
    CHECK(f->lstm_cells == T);
    for (const graph::Node& node : f->graph.nodes())
      if (node.op == "LSTM") CHECK(node.inputs.size() == 8);
    check_same_outputs(*g, f->graph, 1);
    check_same_outputs(*g, f->graph, 2);
  }
}
